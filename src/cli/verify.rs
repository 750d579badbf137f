//! `verify [--repair]`: check the store's invariants, and put right what can be ([`crate::verify`]).

use std::io::Write;

use super::Outcome;
use crate::install::Failure;

/// Check the store's invariants (--repair: put right what can be); exit 1 if anything is wrong.
///
/// Checks that every record decodes, every item has its data (UTF-8 JSON of the size its
/// metadata says) and its time index entry, every index entry points at an item, every session's
/// totals equal the sum over its items, and the data file is as long as LMDB's header says. Safe
/// while browsers use the cache: it reads one consistent snapshot.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Also put right what can be: finish unfinished cleanups, drop items whose records can't be
    /// read (naming each), rebuild the time index and the totals from the items.
    #[arg(long)]
    repair: bool,
}

/// Checks this user's store, and repairs it when asked.
pub fn run(args: Args, mut out: &mut dyn Write) -> Outcome {
    crate::verify::run(args.repair, &mut out).map_err(Failure)
}
