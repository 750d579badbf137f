//! The set-up subcommands' command line.
//!
//! clap parses the words a person types (`install`, `manifest`, `uninstall`, `doctor`, the cache
//! commands, `call`, `purge`, `verify`): their repeatable, validated flags and per-command `--help`
//! would otherwise be a hand-written parser of their own. Host mode never reaches clap:
//! [`crate::launch::parse`] sends only those words here, so Chrome's positional
//! `chrome-extension://<id>/` argument and Firefox's two arguments go to host mode as before.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use super::allowed::Allowed;
use super::browsers::{Browser, Platform, Scope};
use super::doctor::{DoctorOptions, doctor};
use super::install::{install, set_store_quota};
use super::manifest::{
    DEFAULT_EXTENSION_ID, DEFAULT_FIREFOX_EXTENSION_ID, FIREFOX_ID_RULE, HostManifest, is_chrome_extension_id,
    is_firefox_extension_id,
};
use super::uninstall::uninstall;
use super::{Selection, say};
use crate::host_name::HostName;
use crate::inspect::Inspect;

/// Exit code when a command ran and found or hit a problem.
const FAILED: u8 = 1;

#[derive(Debug, Parser)]
#[command(
    name = "llm-cache-host",
    version,
    about = "Registers llm-cache-host with browsers, removes it, and checks it works.",
    after_help = "Browsers start the host themselves with `llm-cache-host chrome-extension://<id>/` (or Firefox's \
                  two arguments); run `llm-cache-host --help` for that."
)]
struct Cli {
    #[command(subcommand)]
    command: SetupCommand,
}

#[derive(Debug, Subcommand)]
enum SetupCommand {
    /// Copy this binary to a stable place and register it with browsers.
    ///
    /// A user install copies the binary to <data dir>/bin/llm-cache-host (Linux:
    /// ~/.local/share/llm-cache-host, macOS: ~/Library/Application Support/llm-cache-host, Windows:
    /// %LOCALAPPDATA%\llm-cache-host; LLM_CACHE_DIR overrides) and writes each browser's manifest
    /// where that browser looks for the current user's hosts (Windows: a manifest file in the data
    /// directory and an HKCU registry key). It reads back what it wrote and records it in
    /// <data dir>/install.json for `uninstall`. Without --browser or --user-data-dir it registers with
    /// every browser it finds installed, or with all six when it finds none.
    #[command(after_help = LOCATIONS)]
    Install {
        #[command(flatten)]
        flags: Flags,
        /// The most the whole cache store may hold, summed over every session of every extension
        /// (default 2GiB): bytes, or a number with KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB,
        /// TiB, e.g. 4GB or 500MB. Recorded in <data dir>/config.json, which hosts read when they
        /// start; an install without it keeps the recorded one. Not with --system: it is a setting of
        /// one user's store.
        #[arg(long, value_name = "SIZE", value_parser = crate::config::parse_size, conflicts_with = "system")]
        store_quota: Option<u64>,
    },
    /// Print the manifest `install` writes for a browser, pointing at --path, and write nothing.
    ///
    /// For packagers: a package that puts the binary at a fixed place (a .deb's /usr/bin/llm-cache-host)
    /// ships this text as its manifest files, so they match what `install` writes, byte for byte.
    Manifest {
        /// The browser whose manifest shape to print (Firefox's differs from the Chromium family's).
        #[arg(long, value_enum, value_name = "BROWSER")]
        browser: Browser,
        /// The absolute path the browser starts the host from.
        #[arg(long, value_name = "PATH", value_parser = absolute_path)]
        path: PathBuf,
        /// A Chrome extension id to allow, as chrome-extension://<ID>/ in allowed_origins (repeatable).
        #[arg(long = "extension-id", value_name = "ID", default_value = DEFAULT_EXTENSION_ID, value_parser = chrome_id)]
        extension_ids: Vec<String>,
        /// A Firefox add-on id to allow in allowed_extensions (repeatable).
        // A Firefox id may start with `-` (`-x@y` is one), so the word after the flag is always its value.
        #[arg(long = "firefox-extension-id", value_name = "ID", default_value = DEFAULT_FIREFOX_EXTENSION_ID, value_parser = firefox_id, allow_hyphen_values = true)]
        firefox_extension_ids: Vec<String>,
        #[command(flatten)]
        host: HostArg,
    },
    /// Remove exactly what `install` wrote (its record lists it); cached data stays unless --purge.
    ///
    /// With --extension-id or --firefox-extension-id, remove only those extensions: the manifests are
    /// written again without them, a browser family left with none loses its manifests, and the
    /// install goes whole when no extension is left.
    Uninstall {
        #[command(flatten)]
        host: HostArg,
        /// Undo a `--system` install.
        #[arg(long)]
        system: bool,
        /// Also remove the cached data and logs (this user's `store/` and `logs/`).
        #[arg(long, conflicts_with_all = ["extension_ids", "firefox_extension_ids"])]
        purge: bool,
        /// A Chrome extension id to stop allowing (repeatable).
        #[arg(long = "extension-id", value_name = "ID", value_parser = chrome_id)]
        extension_ids: Vec<String>,
        /// A Firefox add-on id to stop allowing (repeatable).
        #[arg(long = "firefox-extension-id", value_name = "ID", value_parser = firefox_id, allow_hyphen_values = true)]
        firefox_extension_ids: Vec<String>,
    },
    /// Check every step a browser takes to start the host; exit 1 if any would fail.
    ///
    /// Checks what is installed (or the browsers given): every manifest it finds, this user's and the
    /// system-wide ones, the install records, and each browser it finds installed. For each: the
    /// manifest exists and parses, its name matches the file name, its path is absolute and
    /// executable, it allows the extensions installed (or the ids given), the binary answers `hello`
    /// with protocol 1, no enterprise policy blocks the host. It warns when this user's manifest hides
    /// a system-wide one, and proves the store: the host writes, reads and deletes an item in a
    /// session of doctor's own, then ends it. With --system, only the system-wide install.
    ///
    /// A browser whose checks all pass gets one line ("OK   chromium: host <version> registered for 1
    /// extension (<id>), answers hello (protocol 1)"); a browser with a failing check gets every line,
    /// each failure with the command that fixes it; browsers with neither a build nor a manifest here
    /// share one line ("FAIL not found: edge, brave: ..."). --verbose prints every check's line.
    Doctor {
        #[command(flatten)]
        flags: Flags,
        /// Print one line per check for every browser, also for those whose checks all pass.
        #[arg(long, short)]
        verbose: bool,
        /// Read Linux policy files under DIR instead of / (for tests, or a mounted system image).
        #[arg(long, value_name = "DIR", default_value = "/")]
        policy_root: PathBuf,
    },
    /// Every session of every extension: origin, items, size, created, last access.
    Sessions {
        #[command(flatten)]
        output: Output,
    },
    /// One session's items, newest first, one line each (key | size | age | shape | description).
    List {
        /// The session id, e.g. conv_a3f8e2b4-…
        session: String,
        #[command(flatten)]
        origin: OriginArg,
        #[command(flatten)]
        output: Output,
    },
    /// One item's data, or the part a JSON pointer names.
    Show {
        session: String,
        /// The item's storage key, as `list` shows it.
        key: String,
        /// An RFC 6901 pointer into the data, e.g. /emails/3/subject.
        #[arg(long)]
        pointer: Option<String>,
        #[command(flatten)]
        origin: OriginArg,
        #[command(flatten)]
        output: Output,
    },
    /// End a session: remove its items, as the extension's endSession does.
    End {
        session: String,
        #[command(flatten)]
        origin: OriginArg,
        #[command(flatten)]
        output: Output,
    },
    /// Talk to the host by hand: one JSON request per stdin line, one reply per stdout line.
    ///
    /// Starts the host as a browser does for the origin (a fresh process; the data directory is the
    /// usual one, or LLM_CACHE_DIR), frames each line, and prints each reply on one line with its
    /// chunks reassembled. Example: echo '{"id": 1, "op": "hello"}' | llm-cache-host call
    Call {
        /// The extension to speak for: chrome-extension://<id>/ or moz-extension:<add-on id>.
        #[arg(long, default_value_t = crate::call::default_origin())]
        origin: String,
    },
    /// Remove every session of every extension (asks first unless --yes).
    Purge {
        /// Don't ask.
        #[arg(long)]
        yes: bool,
        #[command(flatten)]
        output: Output,
    },
    /// Check the store's invariants and print what is wrong; exit 1 if anything is.
    ///
    /// Checks that every record decodes, every item has its data (UTF-8 JSON of the size its
    /// metadata says) and its time index entry, every index entry points at an item, every session's
    /// totals equal the sum over its items, and the data file is as long as LMDB's header says. Safe
    /// while browsers use the cache: it reads one consistent snapshot.
    Verify {
        /// Also put right what can be: finish unfinished cleanups, drop items whose records can't be
        /// read (naming each), rebuild the time index and the totals from the items.
        #[arg(long)]
        repair: bool,
    },
}

/// `--json`, for the inspecting commands.
#[derive(Debug, Args)]
struct Output {
    /// Print JSON (one document) instead of lines, for scripts.
    #[arg(long)]
    json: bool,
}

/// `--origin`, for the commands that name a session.
#[derive(Debug, Args)]
struct OriginArg {
    /// Only this extension's session (chrome-extension://<id>/ or moz-extension:<add-on id>); by default
    /// every extension that has a session of that id.
    #[arg(long)]
    origin: Option<String>,
}

/// `--host-name`, for the commands that set a host up or check it.
#[derive(Debug, Args)]
struct HostArg {
    /// The host name extensions pass to connectNative, e.g. com.example.mail_cache: its manifests,
    /// registry keys, installed copy (<data dir>/bin/<host name>), command (mail-cache) and data
    /// directory (~/.local/share/<host name>) are its own [default: this binary's, com.browserx.llm_cache
    /// unless it was built or installed for another].
    #[arg(long = "host-name", value_name = "NAME", value_parser = HostName::parse)]
    host_name: Option<HostName>,
}

impl HostArg {
    /// The platform for the host named, or this binary's own.
    fn platform(self, platform: Platform) -> Platform {
        match self.host_name {
            Some(host) => platform.with_host(host),
            None => platform,
        }
    }
}

/// The flags `install` and `doctor` share.
#[derive(Debug, Args)]
struct Flags {
    #[command(flatten)]
    host: HostArg,
    /// A browser to register with or check (repeatable) [default: those found installed].
    #[arg(long = "browser", value_enum, value_name = "BROWSER")]
    browsers: Vec<Browser>,
    /// A Chrome extension id to allow, as chrome-extension://<ID>/ in allowed_origins (repeatable);
    /// install adds it to those allowed already [default: the demo extension's, when none is]; doctor
    /// checks it [default: the ones installed].
    #[arg(long = "extension-id", value_name = "ID", value_parser = chrome_id)]
    extension_ids: Vec<String>,
    /// A Firefox add-on id to allow in allowed_extensions (repeatable), as --extension-id.
    // A Firefox id may start with `-` (`-x@y` is one), so the word after the flag is always its value.
    #[arg(long = "firefox-extension-id", value_name = "ID", value_parser = firefox_id, allow_hyphen_values = true)]
    firefox_extension_ids: Vec<String>,
    /// For every user: system folders (HKLM on Windows); needs root or an administrator.
    #[arg(long)]
    system: bool,
    /// A Chromium profile started with --user-data-dir=DIR: the manifest goes in DIR/NativeMessagingHosts
    /// (repeatable; Linux and macOS).
    #[arg(long = "user-data-dir", value_name = "DIR")]
    user_data_dirs: Vec<PathBuf>,
}

impl Flags {
    /// The selection, and the platform for the host named.
    fn split(self, platform: Platform) -> (Selection, Platform) {
        let platform = self.host.platform(platform);
        let selection = Selection {
            browsers: self.browsers,
            user_data_dirs: self.user_data_dirs,
            extension_ids: self.extension_ids,
            firefox_extension_ids: self.firefox_extension_ids,
            scope: if self.system { Scope::System } else { Scope::User },
        };
        (selection, platform)
    }
}

fn chrome_id(id: &str) -> Result<String, String> {
    if is_chrome_extension_id(id) {
        Ok(id.to_owned())
    } else {
        Err("a Chrome extension id is 32 letters from a to p, as chrome://extensions shows it".into())
    }
}

fn firefox_id(id: &str) -> Result<String, String> {
    if is_firefox_extension_id(id) { Ok(id.to_owned()) } else { Err(FIREFOX_ID_RULE.into()) }
}

fn absolute_path(path: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(path);
    if path.is_absolute() {
        Ok(path)
    } else {
        Err("browsers start the host without a shell or PATH, so the path must be absolute, e.g. /usr/bin/llm-cache-host"
            .into())
    }
}

/// Where manifests go, for `install --help`.
const LOCATIONS: &str = "\
Where browsers look for the manifest (user level; --system in brackets):
  Linux    Chrome    ~/.config/google-chrome/NativeMessagingHosts  [/etc/opt/chrome/native-messaging-hosts]
           Chromium  ~/.config/chromium/NativeMessagingHosts       [/etc/chromium/native-messaging-hosts]
           Edge      ~/.config/microsoft-edge/NativeMessagingHosts [/etc/opt/edge/native-messaging-hosts]
           Brave     ~/.config/BraveSoftware/Brave-Browser/NativeMessagingHosts  [/etc/chromium/...]
           Vivaldi   ~/.config/vivaldi/NativeMessagingHosts        [/etc/chromium/...]
           Firefox   ~/.mozilla/native-messaging-hosts             [/usr/lib/mozilla/native-messaging-hosts]
           (~/.config is $XDG_CONFIG_HOME when set)
  macOS    ~/Library/Application Support/{Google/Chrome, Chromium, Microsoft Edge,
           BraveSoftware/Brave-Browser, Vivaldi, Mozilla}/NativeMessagingHosts
           [/Library/Google/Chrome/..., /Library/Microsoft/Edge/..., /Library/Application Support/{Chromium,Mozilla}/...]
  Windows  HKCU [HKLM] \\Software\\{Google\\Chrome (also Brave, Vivaldi), Chromium, Microsoft\\Edge, Mozilla}
           \\NativeMessagingHosts\\com.browserx.llm_cache = the manifest file's path
The manifest's file name (and the key's last part) is the host name: com.browserx.llm_cache.json by default,
<NAME>.json with --host-name NAME.

Snap and Flatpak browsers can't start native hosts; install says so when it finds only those.
";

/// Runs an inspecting command, reading a confirmation from stdin if it asks for one.
fn inspect(what: Inspect, output: Output, out: &mut dyn std::io::Write) -> Result<bool, super::Failure> {
    crate::inspect::run(what, output.json, &mut std::io::stdin().lock(), out).map_err(super::Failure)
}

/// Runs a set-up command; `args` are the arguments after the program name, starting with the command.
pub fn run(args: &[String]) -> ExitCode {
    let cli = match Cli::try_parse_from(std::iter::once("llm-cache-host".to_owned()).chain(args.iter().cloned())) {
        Ok(cli) => cli,
        Err(error) => {
            // --help and --version print to stdout and succeed; mistakes print to stderr and exit 2.
            let _ = error.print();
            return ExitCode::from(error.exit_code() as u8);
        }
    };
    let platform = Platform::current();
    let mut stdout = std::io::stdout().lock();
    let result = match cli.command {
        SetupCommand::Install { flags, store_quota } => {
            let (selection, platform) = flags.split(platform);
            install(&selection, &platform, &mut stdout)
                .and_then(|()| store_quota.map_or(Ok(()), |bytes| set_store_quota(bytes, &platform, &mut stdout)))
                .map(|()| true)
        }
        SetupCommand::Manifest { browser, path, extension_ids, firefox_extension_ids, host } => {
            let host = host.platform(platform).host;
            let manifest = HostManifest::new(&host, browser.family(), &path, &extension_ids, &firefox_extension_ids);
            std::io::Write::write_all(&mut stdout, manifest.to_text().as_bytes())
                .map(|()| true)
                .map_err(|e| super::Failure(format!("can't print the manifest: {e}")))
        }
        SetupCommand::Uninstall { host, system, purge, extension_ids, firefox_extension_ids } => {
            let scope = if system { Scope::System } else { Scope::User };
            let only = Allowed { chrome: extension_ids, firefox: firefox_extension_ids };
            uninstall(scope, purge, &only, &host.platform(platform), &mut stdout).map(|()| true)
        }
        SetupCommand::Doctor { flags, verbose, policy_root } => {
            let (selection, platform) = flags.split(platform);
            doctor(&DoctorOptions { selection, policy_root, verbose }, &platform, &mut stdout)
        }
        SetupCommand::Verify { repair } => crate::verify::run(repair, &mut stdout).map_err(super::Failure),
        SetupCommand::Sessions { output } => inspect(Inspect::Sessions, output, &mut stdout),
        SetupCommand::List { session, origin, output } => {
            inspect(Inspect::List { session, origin: origin.origin }, output, &mut stdout)
        }
        SetupCommand::Show { session, key, pointer, origin, output } => {
            inspect(Inspect::Show { session, key, pointer, origin: origin.origin }, output, &mut stdout)
        }
        SetupCommand::End { session, origin, output } => {
            inspect(Inspect::End { session, origin: origin.origin }, output, &mut stdout)
        }
        SetupCommand::Purge { yes, output } => inspect(Inspect::Purge { yes }, output, &mut stdout),
        SetupCommand::Call { origin } => {
            crate::call::run(&origin, &mut std::io::stdin().lock(), &mut stdout, &mut std::io::stderr())
                .map_err(super::Failure)
        }
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(FAILED),
        Err(failure) => {
            say(&mut stdout, format!("FAIL {failure}"));
            ExitCode::from(FAILED)
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    fn parse(words: &[&str]) -> Result<SetupCommand, clap::Error> {
        Cli::try_parse_from(std::iter::once("llm-cache-host").chain(words.iter().copied())).map(|cli| cli.command)
    }

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn install_flags() {
        let linux = Platform::new(crate::paths::Os::Linux, &[]);
        let SetupCommand::Install { flags, store_quota: None } = parse(&["install"]).unwrap() else { panic!() };
        let (selection, platform) = flags.split(linux.clone());
        assert!(platform.host.is_default());
        // No id typed: install keeps what is allowed already (the demo's when nothing is), doctor checks it.
        assert!(selection.extension_ids.is_empty() && selection.firefox_extension_ids.is_empty());
        assert_eq!((selection.scope, selection.browsers.len()), (Scope::User, 0));

        let words = [
            "install",
            "--browser",
            "chrome",
            "--browser=firefox",
            "--extension-id",
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "--extension-id",
            DEFAULT_EXTENSION_ID,
            "--firefox-extension-id",
            "x@y.z",
            "--system",
            "--user-data-dir",
            "/tmp/p",
            "--host-name",
            "com.example.mail_cache",
        ];
        let SetupCommand::Install { flags, .. } = parse(&words).unwrap() else { panic!() };
        let (selection, platform) = flags.split(linux);
        assert_eq!(platform.host.as_str(), "com.example.mail_cache");
        assert_eq!(selection.browsers, [Browser::Chrome, Browser::Firefox]);
        assert_eq!(selection.extension_ids, ["aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", DEFAULT_EXTENSION_ID]);
        assert_eq!(selection.firefox_extension_ids, ["x@y.z"]);
        assert_eq!(selection.scope, Scope::System);
        assert_eq!(selection.user_data_dirs, [PathBuf::from("/tmp/p")]);
    }

    #[test]
    fn store_quota_flag() {
        let SetupCommand::Install { store_quota, .. } = parse(&["install", "--store-quota", "4GB"]).unwrap() else {
            panic!()
        };
        assert_eq!(store_quota, Some(4_000_000_000));
        for words in [
            &["install", "--store-quota", "lots"][..],
            &["install", "--store-quota", "0"],
            &["install", "--store-quota", "1GB", "--system"],
        ] {
            assert!(parse(words).is_err(), "{words:?}");
        }
        let error = parse(&["install", "--store-quota", "4 parsecs"]).unwrap_err().to_string();
        assert!(error.contains("is not a size") && error.contains("4GB"), "{error}");
    }

    #[test]
    fn mistakes_are_refused() {
        for words in [
            &["install", "--browser", "safari"][..],
            &["install", "--extension-id", "not-an-id"],
            &["install", "--firefox-extension-id", "plain"],
            &["uninstall", "--browser", "chrome"],
            &["doctor", "extra"],
            &["manifest", "--path", "/usr/bin/llm-cache-host"],
            &["manifest", "--browser", "chromium"],
            &["manifest", "--browser", "chromium", "--path", "bin/llm-cache-host"],
            &["install", "--host-name", "Com.Example"],
            &["doctor", "--host-name", "mail_cache"],
            &["uninstall", "--host-name", "com.example."],
            &["manifest", "--browser", "chromium", "--path", "/x", "--host-name", "com..x"],
        ] {
            assert!(parse(words).is_err(), "{words:?}");
        }
        let SetupCommand::Doctor { policy_root, .. } = parse(&["doctor"]).unwrap() else { panic!() };
        assert_eq!(policy_root, PathBuf::from("/"));
    }
}
