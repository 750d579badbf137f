//! `doctor`: checks every step a browser takes to start the host, and fails when any step would
//! fail. It answers "Specified native messaging host not found" and its cousins: which manifest is
//! missing, wrong or blocked, and why. It also warns, without failing, about folders on the way to
//! the manifests and the binary that others could write ([`crate::install::owner`]).
//!
//! It checks what is installed, with the ids installed: this user's manifests and the system-wide
//! ones (a package's, or `install --system`'s), and the install records, each manifest against the
//! extensions its install allows; the demo extension only when nothing is installed. Its remedies
//! keep every extension already allowed, and `--system` for a system-wide install. It proves the
//! store, not just the host: the host, started as a browser starts it, writes, reads and deletes an
//! item in a session of doctor's own, which it then ends.
//!
//! Every browser looks for a host's manifest in the current user's folder first, and uses the
//! system-wide one only when there is none there (Chromium's `native_process_launcher_posix.cc` and
//! `_win.cc`, `FindManifest`: the user-level directory or HKCU, then the system one or HKLM; Firefox's
//! `NativeManifests.sys.mjs` tries the user directory before the system ones). So a per-user manifest
//! hides a system-wide one, whatever the two allow: doctor warns, and says how to remove it.
//!
//! # Layout
//! - [`checks`]: each step checked, returning what it found ([`report::Finding`]s), never printing;
//! - [`report`]: the findings rendered as lines, by one pure function, and the exit code;
//! - [`probe`]: the host started as a browser starts it and spoken to over real pipes, with the one
//!   frame client;
//! - [`remedy`]: the commands that put a failure right.

use std::io::Write;
use std::path::PathBuf;

use crate::install::browsers::Platform;
use crate::install::{Failure, Selection, say};

pub mod checks;
pub mod probe;
pub mod remedy;
pub mod report;

/// What `doctor` checks.
#[derive(Debug, Clone)]
pub struct DoctorOptions {
    /// The browsers, profiles, extensions and scope to check.
    pub selection: Selection,
    /// Where policy files are read from on Linux: `/` except in tests and for mounted images.
    pub policy_root: PathBuf,
    /// Print every check's line, also for browsers whose checks all pass.
    pub verbose: bool,
}

/// Runs every check and prints the report; tells whether all passed.
///
/// # Errors
/// Only when there is nothing to check against (no HOME, an unreadable install record).
pub fn doctor(options: &DoctorOptions, platform: &Platform, out: &mut dyn Write) -> Result<bool, Failure> {
    let findings = checks::run(options, platform)?;
    let report = report::render(&findings, options.verbose);
    for line in &report.lines {
        say(out, line);
    }
    Ok(report.passed)
}
