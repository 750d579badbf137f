//! `sessions`: every session of every extension, and what the store holds of its quota.

use std::io::Write;

use super::Outcome;
use super::flags::Output;
use crate::inspect::{age, say, sessions, size, to_json, with_cache};
use crate::install::Failure;

/// Every session of every extension: origin, items, size, created, last access.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    output: Output,
}

/// Prints the sessions: a line each and the store's use of its quota, or one JSON array.
pub fn run(args: Args, out: &mut dyn Write) -> Outcome {
    let json = args.output.json;
    with_cache(json, out, |cache, out| {
        let rows = sessions(&cache.store).map_err(|e| e.message.clone())?;
        if json {
            say(out, to_json(&rows));
            return Ok(true);
        }
        if rows.is_empty() {
            say(out, "no sessions".into());
        } else {
            say(out, "origin | session | items | size | created | last access".into());
            for row in &rows {
                say(
                    out,
                    format!(
                        "{} | {} | {} | {} | {} ago | {} ago",
                        row.origin,
                        row.session_id,
                        row.item_count,
                        size(row.total_size),
                        age(cache.now, row.created_at),
                        age(cache.now, row.last_accessed_at)
                    ),
                );
            }
        }
        // The store-wide quota bounds every session of every extension together.
        let used = cache.store.read(|txn, dbs| dbs.store_total(txn)).map_err(|e| e.message.clone())?;
        let quota =
            crate::config::load(&cache.data_dir).map_or(crate::limits::DEFAULT_STORE_QUOTA_BYTES, |c| c.store_quota());
        say(out, format!("store: {}", crate::config::store_use(used, quota).0));
        Ok(true)
    })
    .map_err(Failure)
}
