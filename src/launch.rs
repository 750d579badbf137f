//! What the command line asks for: host mode (how a browser starts us) or a word for a person.
//!
//! Chrome and Chromium-based browsers start a host as `llm-cache-host chrome-extension://<id>/`
//! (on Windows followed by `--parent-window=<n>`); Firefox as `llm-cache-host <manifest path>
//! <addon id>`. Any of these means host mode, and the caller's origin namespaces its data.
//!
//! A person sets the host up with `install`, `uninstall` and `doctor`, and looks at the cache with
//! `sessions`, `list`, `show` and the rest; those words never start a
//! browser's launch line (an origin or a `.json` path does), so they are told apart by the first
//! argument alone, and their flags are parsed by [`crate::install::cli`]. No arguments at all is
//! a person too (someone who downloaded the binary and ran it): [`crate::install::welcome`].

use crate::install::manifest::{FIREFOX_ID_RULE, MAX_ADDON_ID_BYTES, is_firefox_extension_id};

/// What to do.
#[derive(Debug, PartialEq, Eq)]
pub enum Launch {
    /// Speak the protocol on stdin/stdout for the extension with this origin.
    Host {
        /// `chrome-extension://<id>/` or `moz-extension:<addon id>`; keys of the store start with it.
        origin: String,
    },
    /// No arguments: a person started the binary (a browser always passes some), so explain it and
    /// offer to install it.
    Introduce,
    /// A word a person types (`install`, `doctor`, `list`, ...): the arguments, starting with that word.
    Setup(Vec<String>),
    /// Print the usage.
    Help,
    /// Print the version.
    Version,
    /// The arguments make no sense; the text says why.
    Invalid(String),
}

/// The scheme Chromium-based browsers use for extension origins.
const CHROME_SCHEME: &str = "chrome-extension://";

/// How Firefox add-ons' data is namespaced (Firefox passes an add-on id, not an origin).
const FIREFOX_PREFIX: &str = "moz-extension:";

/// The usage text for `--help` and for wrong arguments.
pub const USAGE: &str = "\
llm-cache-host: the native messaging host behind the llm_cache StorageTool.

Browsers start it themselves:
  llm-cache-host chrome-extension://<extension id>/ [--parent-window=<n>]   (Chrome, Chromium, Edge, Brave, Vivaldi)
  llm-cache-host <manifest path> <addon id>                                  (Firefox)

Setting it up (run `llm-cache-host <command> --help` for the flags):
  llm-cache-host install      copy this binary to a stable place and register it with your browsers
  llm-cache-host uninstall    remove exactly what install wrote
  llm-cache-host doctor       check every step a browser takes to start the host
  llm-cache-host manifest     print the manifest install writes, for a package to ship (writes nothing)
  llm-cache-host verify       check the store's invariants (--repair: put right what can be)

Seeing and clearing the cache (each takes --json):
  llm-cache-host sessions                     every session of every extension
  llm-cache-host list <session>               its items, one line each
  llm-cache-host show <session> <key>         an item's data (--pointer /a/0 for one part)
  llm-cache-host end <session>                remove a session's items
  llm-cache-host purge                        remove everything (asks first; --yes doesn't)

Talking to the host by hand:
  llm-cache-host call [--origin O]            one JSON request per stdin line; one reply per stdout line

Other uses:
  llm-cache-host --help       this text
  llm-cache-host --version    the host's version
  llm-cache-host              what this is and how to install it; in a terminal, offers to install it now
                              (with no terminal it prints that to stderr and exits 2)

Environment:
  LLM_CACHE_DIR   data directory (default: the OS's per-user data dir + /llm-cache-host; for a host
                  installed under another name with install --host-name NAME, + /NAME)
  LLM_CACHE_LOG   log level or filter for <data dir>/logs (default: info)
";

/// Reads the arguments after the program name.
pub fn parse(args: &[String]) -> Launch {
    let Some(first) = args.first() else {
        return Launch::Introduce;
    };
    if let Some(id) = first.strip_prefix(CHROME_SCHEME) {
        let id = id.strip_suffix('/').unwrap_or(id);
        let valid = !id.is_empty()
            && id.len() <= 128
            && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !valid {
            return Launch::Invalid(format!("{first:?} is not a chrome-extension:// origin"));
        }
        return Launch::Host { origin: format!("{CHROME_SCHEME}{id}/") };
    }
    match (first.as_str(), args.get(1)) {
        (
            "install" | "uninstall" | "doctor" | "manifest" | "verify" | "sessions" | "list" | "show" | "end" | "purge"
            | "call",
            _,
        ) => Launch::Setup(args.to_vec()),
        ("-h" | "--help" | "help", _) => Launch::Help,
        ("-V" | "--version", _) => Launch::Version,
        (manifest, Some(addon)) if manifest.ends_with(".json") && !addon.is_empty() && !addon.starts_with('-') => {
            if !is_firefox_extension_id(addon) {
                return Launch::Invalid(format!(
                    "{:?} is not a Firefox add-on id: {FIREFOX_ID_RULE}, at most {MAX_ADDON_ID_BYTES} characters",
                    addon.chars().take(80).collect::<String>()
                ));
            }
            Launch::Host { origin: format!("{FIREFOX_PREFIX}{addon}") }
        }
        _ => Launch::Invalid(format!("unknown arguments: {}", args.join(" "))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_words(words: &[&str]) -> Launch {
        parse(&words.iter().map(|w| w.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn browser_launches_are_host_mode() {
        let chrome = Launch::Host { origin: "chrome-extension://abcdefghijklmnopabcdefghijklmnop/".into() };
        assert_eq!(parse_words(&["chrome-extension://abcdefghijklmnopabcdefghijklmnop/"]), chrome);
        assert_eq!(
            parse_words(&["chrome-extension://abcdefghijklmnopabcdefghijklmnop/", "--parent-window=6752"]),
            chrome
        );
        assert_eq!(parse_words(&["chrome-extension://abcdefghijklmnopabcdefghijklmnop"]), chrome);
        assert_eq!(
            parse_words(&["/home/u/.mozilla/native-messaging-hosts/com.browserx.llm_cache.json", "cache@browserx.dev"]),
            Launch::Host { origin: "moz-extension:cache@browserx.dev".into() }
        );
        // Every id Firefox's rule allows, the name before `@` optional, starts the host.
        for addon in ["@addon-example", "{4c2b7a4e-1d5e-4e8f-9a3b-2f1c0d9e8b7a}", "a.b-c_d@x.y"] {
            assert_eq!(
                parse_words(&["/usr/lib/mozilla/native-messaging-hosts/com.browserx.llm_cache.json", addon]),
                Launch::Host { origin: format!("moz-extension:{addon}") }
            );
        }
    }

    #[test]
    fn other_words() {
        assert_eq!(parse_words(&[]), Launch::Introduce);
        assert_eq!(parse_words(&["--help"]), Launch::Help);
        assert_eq!(parse_words(&["--version"]), Launch::Version);
        assert_eq!(
            parse_words(&["install", "--browser", "chromium"]),
            Launch::Setup(vec!["install".into(), "--browser".into(), "chromium".into()])
        );
        assert_eq!(parse_words(&["doctor"]), Launch::Setup(vec!["doctor".into()]));
        let long = "a".repeat(MAX_ADDON_ID_BYTES + 1);
        for bad in [
            &["chrome-extension://"][..],
            &["chrome-extension://a/b/"],
            &["serve"],
            &["x.json"],
            &["m.json", &long],
            &["m.json", "a\u{fffd}@x"],
            &["m.json", "a\nb@x"],
            &["m.json", "a b@x"],
            &["m.json", "{not-a-guid}"],
            &["m.json", "name@"],
        ] {
            assert!(matches!(parse_words(bad), Launch::Invalid(_)), "{bad:?}");
        }
    }
}
