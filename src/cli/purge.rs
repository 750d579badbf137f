//! `purge`: remove every session of every extension, after asking.

use std::io::{BufRead, Write};

use serde_json::json;

use super::Outcome;
use super::flags::Output;
use crate::cleanup;
use crate::inspect::{sessions, size, with_cache};
use crate::install::Failure;

/// Remove every session of every extension (asks first unless --yes).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Don't ask.
    #[arg(long)]
    yes: bool,
    #[command(flatten)]
    output: Output,
}

/// Asks on `out` and reads the answer from `input` (unless --yes), then ends every session and
/// finishes the cleanups hosts left unfinished.
pub fn run(args: Args, input: &mut dyn BufRead, out: &mut dyn Write) -> Outcome {
    let json = args.output.json;
    with_cache(json, out, |cache, out| {
        let rows = sessions(&cache.store).map_err(|e| e.message.clone())?;
        let items: u64 = rows.iter().map(|row| row.item_count).sum();
        let bytes: u64 = rows.iter().map(|row| row.total_size).sum();
        if !args.yes {
            let _ = write!(
                out,
                "Remove all {} sessions ({items} items, {}) from {}? [y/N] ",
                rows.len(),
                size(bytes),
                cache.dir.display()
            );
            let _ = out.flush();
            let mut answer = String::new();
            let _ = input.read_line(&mut answer);
            if !matches!(answer.trim(), "y" | "Y" | "yes") {
                let _ = writeln!(out, "nothing removed");
                return Ok(false);
            }
        }
        let mut removed = (0, 0);
        for row in &rows {
            let done =
                cleanup::end_session(&cache.store, &row.origin, &row.session_id).map_err(|e| e.message.clone())?;
            removed = (removed.0 + done.deleted_items, removed.1 + done.freed_bytes);
        }
        // Cleanups a host left unfinished, whose sessions no longer have a record.
        cleanup::maintain(&cache.store, 0).map_err(|e| e.message.clone())?;
        if json {
            let _ = writeln!(
                out,
                "{}",
                json!({"sessions": rows.len(), "deletedItems": removed.0, "freedBytes": removed.1})
            );
        } else {
            let _ = writeln!(out, "removed {} sessions: {} items, {}", rows.len(), removed.0, size(removed.1));
        }
        Ok(true)
    })
    .map_err(Failure)
}
