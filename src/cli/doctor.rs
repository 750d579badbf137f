//! `doctor`: check every step a browser takes to start the host ([`crate::doctor`]).

use std::io::Write;
use std::path::PathBuf;

use super::Outcome;
use super::flags::Flags;
use crate::doctor::{DoctorOptions, doctor};
use crate::install::browsers::Platform;

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
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    flags: Flags,
    /// Print one line per check for every browser, also for those whose checks all pass.
    #[arg(long, short)]
    verbose: bool,
    /// Read Linux policy files under DIR instead of / (for tests, or a mounted system image).
    #[arg(long, value_name = "DIR", default_value = "/")]
    policy_root: PathBuf,
}

/// Runs the checks and prints the report; the outcome says whether all passed.
pub fn run(args: Args, out: &mut dyn Write) -> Outcome {
    let (selection, platform) = args.flags.split(Platform::current());
    doctor(&DoctorOptions { selection, policy_root: args.policy_root, verbose: args.verbose }, &platform, out)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::super::Command;
    use super::super::tests::parse;

    #[test]
    fn flags_and_mistakes() {
        let Ok(Command::Doctor(args)) = parse(&["doctor"]) else { panic!() };
        assert_eq!(args.policy_root, PathBuf::from("/"));
        for words in [&["doctor", "extra"][..], &["doctor", "--host-name", "mail_cache"], &["doctor", "--nope"]] {
            assert!(parse(words).is_err(), "{words:?}");
        }
    }
}
