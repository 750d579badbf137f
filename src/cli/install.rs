//! `install`: copy this binary to a stable place and register it with browsers
//! ([`crate::install::install`]), and record the store quota asked for.

use std::io::Write;

use super::Outcome;
use super::flags::Flags;
use crate::host_name::HostName;
use crate::install::browsers::{Folders, MANIFEST_FOLDERS, Platform, Reads};
use crate::install::install::{install, set_store_quota};
use crate::paths::Os;

/// Copy this binary to a stable place and register it with browsers.
///
/// A user install copies the binary to <data dir>/bin (the data directory is below) and writes
/// each browser's manifest where that browser looks for the current user's hosts (Windows: a manifest file in the data
/// directory and an HKCU registry key). It reads back what it wrote and records it in
/// <data dir>/install.json for `uninstall`. Without --browser or --user-data-dir it registers with
/// every browser it finds installed, or with all six when it finds none.
#[derive(Debug, clap::Args)]
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

/// Where `host`'s copy and manifests go, for `install --help`: its data directory on each OS, then
/// [`MANIFEST_FOLDERS`], a line per browser on each OS.
pub(super) fn locations(host: &HostName) -> String {
    let (folder, binary) = (host.folder(), host.binary_file(Os::Linux));
    let mut text = format!(
        "The data directory, where the copy goes as <data dir>/bin/{binary} ({binary}.exe on Windows):
  Linux    ~/.local/share/{folder}
  macOS    ~/Library/Application Support/{folder}
  Windows  %LOCALAPPDATA%\\{folder}
  (LLM_CACHE_DIR overrides it)

"
    );
    text.push_str(
        "Where browsers look for the manifest (user level; for every user in brackets, where install \
                    --system writes the first):\n",
    );
    for (os, name) in [(Os::Linux, "Linux"), (Os::MacOs, "macOS"), (Os::Windows, "Windows")] {
        let rows: Vec<&Folders> = MANIFEST_FOLDERS.iter().filter(|row| row.os == os).collect();
        let user = |row: &Folders| match row.reads {
            Reads::Files { user: (base, folder), .. } => format!("{}/{folder}", base.shown()),
            Reads::Registry { vendor_key } => format!("HKCU [HKLM] \\{vendor_key}\\NativeMessagingHosts\\{host}"),
        };
        let width = rows.iter().map(|row| user(row).len()).max().unwrap_or(0);
        for (i, row) in rows.iter().enumerate() {
            let system = match row.reads {
                Reads::Files { system, .. } => format!("  [{}]", system.join(", ")),
                Reads::Registry { .. } => String::new(),
            };
            let os = if i == 0 { name } else { "" };
            let line = format!("  {os:<8} {:<9} {:<width$}{system}", row.browser.name(), user(row));
            text.push_str(line.trim_end());
            text.push('\n');
        }
    }
    text.push_str(&format!(
        "  (~/.config is $XDG_CONFIG_HOME when set; a registry key's default value is the manifest file's path)
The manifest's file name (and the key's last part) is the host name: {host}.json for this binary,
<NAME>.json with --host-name NAME.

Snap and Flatpak browsers can't start native hosts; install says so when it finds only those.
"
    ));
    text
}

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
