//! `manifest`: print the manifest `install` writes for a browser, or write every manifest a package
//! installs under its staging root, for a package to ship.

use std::io::Write;
use std::path::PathBuf;

use super::Outcome;
use super::flags::{HostArg, absolute_path, chrome_id, firefox_id};
use crate::install::Failure;
use crate::install::allowed::Allowed;
use crate::install::browsers::{Browser, Platform};
use crate::install::manifest::{DEFAULT_EXTENSION_ID, DEFAULT_FIREFOX_EXTENSION_ID, HostManifest};
use crate::install::package::write_package_manifests;

/// Print the manifest `install` writes for a browser, pointing at --path, and write nothing.
///
/// For packagers: a package that puts the binary at a fixed place (a .deb's /usr/bin/<command>)
/// ships this text as its manifest files, so they match what `install` writes, byte for byte. With
/// --root, it writes them all instead: one in every folder where a browser reads hosts registered for
/// every user (the folders `doctor` checks, `install --help` lists them), under the package's tree.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The browser whose manifest shape to print (Firefox's differs from the Chromium family's).
    #[arg(long, value_enum, value_name = "BROWSER", required_unless_present = "root", conflicts_with = "root")]
    browser: Option<Browser>,
    /// Write every browser's manifest for every user under DIR, a package's staging root (Linux and
    /// macOS), each at its system path below DIR, and print each file's path and the browsers that read
    /// it. A browser family with no id given gets no manifest.
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    /// The absolute path the browser starts the host from.
    #[arg(long, value_name = "PATH", value_parser = absolute_path)]
    path: PathBuf,
    #[arg(
        long = "extension-id",
        value_name = "ID",
        value_parser = chrome_id,
        help = format!(
            "A Chrome extension id to allow, as chrome-extension://<ID>/ in allowed_origins (repeatable) \
             [default: {DEFAULT_EXTENSION_ID}, the demo extension's; with --root, only when no id of either kind \
             is given]"
        )
    )]
    extension_ids: Vec<String>,
    // A Firefox id may start with `-` (`-x@y` is one), so the word after the flag is always its value.
    #[arg(
        long = "firefox-extension-id",
        value_name = "ID",
        value_parser = firefox_id,
        allow_hyphen_values = true,
        help = format!(
            "A Firefox add-on id to allow in allowed_extensions (repeatable) [default: \
             {DEFAULT_FIREFOX_EXTENSION_ID}, the demo add-on's; with --root, only when no id of either kind is given]"
        )
    )]
    firefox_extension_ids: Vec<String>,
    #[command(flatten)]
    host: HostArg,
}

/// Prints the manifest, or writes the package's and prints what it wrote.
pub fn run(args: Args, out: &mut dyn Write) -> Outcome {
    let platform = args.host.platform(Platform::current());
    let given = Allowed { chrome: args.extension_ids, firefox: args.firefox_extension_ids };
    let demo =
        || Allowed { chrome: vec![DEFAULT_EXTENSION_ID.into()], firefox: vec![DEFAULT_FIREFOX_EXTENSION_ID.into()] };
    let printed = match args.root {
        Some(root) => {
            let allowed = if given.chrome.is_empty() && given.firefox.is_empty() { demo() } else { given };
            let mut text = String::new();
            for (file, browsers) in write_package_manifests(&root, &args.path, &allowed, &platform)? {
                let browsers: Vec<&str> = browsers.iter().map(|browser| browser.id()).collect();
                text.push_str(&format!("{} {}\n", file.display(), browsers.join(",")));
            }
            text
        }
        None => {
            let browser = args.browser.ok_or_else(|| Failure("which browser's manifest? --browser says".into()))?;
            let demo = demo();
            let chrome = if given.chrome.is_empty() { &demo.chrome } else { &given.chrome };
            let firefox = if given.firefox.is_empty() { &demo.firefox } else { &given.firefox };
            HostManifest::new(&platform.host, browser.family(), &args.path, chrome, firefox).to_text()
        }
    };
    out.write_all(printed.as_bytes()).map_err(|e| Failure(format!("can't print the manifest: {e}")))?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::super::tests::parse;

    #[test]
    fn mistakes_are_refused() {
        for words in [
            &["manifest", "--path", "/usr/bin/llm-cache-host"][..],
            &["manifest", "--browser", "chromium"],
            &["manifest", "--browser", "chromium", "--path", "bin/llm-cache-host"],
            &["manifest", "--browser", "chromium", "--path", "/x", "--host-name", "com..x"],
            &["manifest", "--browser", "chromium", "--root", "/tmp/p", "--path", "/x"],
            &["manifest", "--root", "/tmp/p"],
        ] {
            assert!(parse(words).is_err(), "{words:?}");
        }
        // A package is staged on the system it is for (Linux, macOS), where /usr/bin/... is an absolute path.
        #[cfg(unix)]
        assert!(parse(&["manifest", "--root", "/tmp/p", "--path", "/usr/bin/llm-cache-host"]).is_ok());
    }
}
