//! `manifest`: print the manifest `install` writes for a browser, for a package to ship, and write
//! nothing.

use std::io::Write;
use std::path::PathBuf;

use super::Outcome;
use super::flags::{HostArg, absolute_path, chrome_id, firefox_id};
use crate::install::Failure;
use crate::install::browsers::{Browser, Platform};
use crate::install::manifest::{DEFAULT_EXTENSION_ID, DEFAULT_FIREFOX_EXTENSION_ID, HostManifest};

/// Print the manifest `install` writes for a browser, pointing at --path, and write nothing.
///
/// For packagers: a package that puts the binary at a fixed place (a .deb's /usr/bin/llm-cache-host)
/// ships this text as its manifest files, so they match what `install` writes, byte for byte.
#[derive(Debug, clap::Args)]
pub struct Args {
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
}

/// Prints the manifest.
pub fn run(args: Args, out: &mut dyn Write) -> Outcome {
    let host = args.host.platform(Platform::current()).host;
    let manifest =
        HostManifest::new(&host, args.browser.family(), &args.path, &args.extension_ids, &args.firefox_extension_ids);
    out.write_all(manifest.to_text().as_bytes()).map_err(|e| Failure(format!("can't print the manifest: {e}")))?;
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
        ] {
            assert!(parse(words).is_err(), "{words:?}");
        }
    }
}
