//! What the command line asks for: host mode (how a browser starts us) or a word for a person.
//!
//! Chrome and Chromium-based browsers start a host as `llm-cache-host chrome-extension://<id>/`
//! (on Windows followed by `--parent-window=<n>`); Firefox as `llm-cache-host <manifest path>
//! <addon id>`. Any of these means host mode, and the caller's origin namespaces its data.
//!
//! A person sets the host up with `install`, `uninstall` and `doctor`, and looks at the cache with
//! `sessions`, `list`, `show` and the rest; those words never start a browser's launch line (an
//! origin or a `.json` path does), so they are told apart by the first argument alone. Host mode is
//! decided first, from the launch line's own shape, and only then is a word looked up among the
//! commands [`crate::cli`] defines, which parses their flags. No arguments at all is a person too
//! (someone who downloaded the binary and ran it): [`crate::cli::welcome`].

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
    /// A command a person types (`install`, `doctor`, `list`, ...): the arguments, starting with it.
    Command(Vec<String>),
    /// Print the help.
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
        (manifest, Some(addon)) if manifest.ends_with(".json") && !addon.is_empty() && !addon.starts_with('-') => {
            if !is_firefox_extension_id(addon) {
                return Launch::Invalid(format!(
                    "{:?} is not a Firefox add-on id: {FIREFOX_ID_RULE}, at most {MAX_ADDON_ID_BYTES} characters",
                    addon.chars().take(80).collect::<String>()
                ));
            }
            Launch::Host { origin: format!("{FIREFOX_PREFIX}{addon}") }
        }
        ("-h" | "--help" | "help", _) => Launch::Help,
        ("-V" | "--version", _) => Launch::Version,
        (word, _) if crate::cli::is_command(word) => Launch::Command(args.to_vec()),
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
    fn every_command_is_told_apart_from_a_launch_line_by_its_first_word() {
        for command in crate::cli::command(&crate::host_name::HostName::default_host()).get_subcommands() {
            let word = command.get_name();
            for second in ["cache@browserx.dev", "x.json", "chrome-extension://abcdefghijklmnopabcdefghijklmnop/"] {
                assert_eq!(parse_words(&[word, second]), Launch::Command(vec![word.into(), second.into()]), "{word}");
            }
            // A manifest named like a command is still Firefox's launch line.
            let manifest = format!("/usr/lib/mozilla/native-messaging-hosts/{word}.json");
            assert_eq!(
                parse_words(&[&manifest, "cache@browserx.dev"]),
                Launch::Host { origin: "moz-extension:cache@browserx.dev".into() }
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
            Launch::Command(vec!["install".into(), "--browser".into(), "chromium".into()])
        );
        assert_eq!(parse_words(&["doctor"]), Launch::Command(vec!["doctor".into()]));
        assert_eq!(parse_words(&["help"]), Launch::Help);
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
