//! `uninstall`: remove exactly what `install` wrote ([`crate::install::uninstall`]), or only some
//! extensions.

use std::io::Write;

use super::Outcome;
use super::flags::{HostArg, chrome_id, firefox_id, scope};
use crate::install::allowed::Allowed;
use crate::install::browsers::Platform;
use crate::install::uninstall::uninstall;

/// Remove exactly what `install` wrote (its record lists it); cached data stays unless --purge.
///
/// With --extension-id or --firefox-extension-id, remove only those extensions: the manifests are
/// written again without them, a browser family left with none loses its manifests, and the
/// install goes whole when no extension is left.
#[derive(Debug, clap::Args)]
pub struct Args {
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
}

/// Uninstalls what the record of the scope asked for lists.
pub fn run(args: Args, out: &mut dyn Write) -> Outcome {
    let only = Allowed { chrome: args.extension_ids, firefox: args.firefox_extension_ids };
    uninstall(scope(args.system), args.purge, &only, &args.host.platform(Platform::current()), out)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::super::tests::parse;

    #[test]
    fn mistakes_are_refused() {
        for words in [
            &["uninstall", "--browser", "chrome"][..],
            &["uninstall", "--host-name", "com.example."],
            &["uninstall", "--purge", "--extension-id", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"],
        ] {
            assert!(parse(words).is_err(), "{words:?}");
        }
    }
}
