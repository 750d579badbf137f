//! `install`: copy this binary to a stable place and register it with browsers
//! ([`crate::install::install`]), and record the store quota asked for.

use std::io::Write;

use super::Outcome;
use super::flags::Flags;
use crate::install::browsers::Platform;
use crate::install::install::{install, set_store_quota};

/// Copy this binary to a stable place and register it with browsers.
///
/// A user install copies the binary to <data dir>/bin/llm-cache-host (Linux:
/// ~/.local/share/llm-cache-host, macOS: ~/Library/Application Support/llm-cache-host, Windows:
/// %LOCALAPPDATA%\llm-cache-host; LLM_CACHE_DIR overrides) and writes each browser's manifest
/// where that browser looks for the current user's hosts (Windows: a manifest file in the data
/// directory and an HKCU registry key). It reads back what it wrote and records it in
/// <data dir>/install.json for `uninstall`. Without --browser or --user-data-dir it registers with
/// every browser it finds installed, or with all six when it finds none.
#[derive(Debug, clap::Args)]
#[command(after_help = LOCATIONS)]
pub struct Args {
    #[command(flatten)]
    flags: Flags,
    /// The most the whole cache store may hold, summed over every session of every extension
    /// (default 2GiB): bytes, or a number with KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB,
    /// TiB, e.g. 4GB or 500MB. Recorded in <data dir>/config.json, which hosts read when they
    /// start; an install without it keeps the recorded one. Not with --system: it is a setting of
    /// one user's store.
    #[arg(long, value_name = "SIZE", value_parser = crate::config::parse_size, conflicts_with = "system")]
    store_quota: Option<u64>,
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

/// Installs, then records the store quota when one is given.
pub fn run(args: Args, out: &mut dyn Write) -> Outcome {
    let (selection, platform) = args.flags.split(Platform::current());
    install(&selection, &platform, out)?;
    if let Some(bytes) = args.store_quota {
        set_store_quota(bytes, &platform, out)?;
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::super::Command;
    use super::super::tests::parse;
    use crate::install::browsers::{Browser, Scope};
    use crate::install::manifest::DEFAULT_EXTENSION_ID;
    use crate::paths::Os;

    use super::*;

    fn install_args(words: &[&str]) -> Args {
        match parse(words).unwrap() {
            Command::Install(args) => args,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn install_flags() {
        let linux = Platform::new(Os::Linux, &[]);
        let Args { flags, store_quota: None } = install_args(&["install"]) else { panic!() };
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
        let (selection, platform) = install_args(&words).flags.split(linux);
        assert_eq!(platform.host.as_str(), "com.example.mail_cache");
        assert_eq!(selection.browsers, [Browser::Chrome, Browser::Firefox]);
        assert_eq!(selection.extension_ids, ["aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", DEFAULT_EXTENSION_ID]);
        assert_eq!(selection.firefox_extension_ids, ["x@y.z"]);
        assert_eq!(selection.scope, Scope::System);
        assert_eq!(selection.user_data_dirs, [PathBuf::from("/tmp/p")]);
    }

    #[test]
    fn store_quota_flag() {
        assert_eq!(install_args(&["install", "--store-quota", "4GB"]).store_quota, Some(4_000_000_000));
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
            &["install", "--host-name", "Com.Example"],
        ] {
            assert!(parse(words).is_err(), "{words:?}");
        }
    }
}
