//! `end <session>`: remove a session's items, as the extension's `endSession` does.

use std::io::Write;

use serde_json::json;

use super::Outcome;
use super::flags::{OriginArg, Output};
use crate::cleanup;
use crate::inspect::{origins_of, say, size, to_json, with_cache};
use crate::install::Failure;

/// End a session: remove its items, as the extension's endSession does.
#[derive(Debug, clap::Args)]
pub struct Args {
    session: String,
    #[command(flatten)]
    origin: OriginArg,
    #[command(flatten)]
    output: Output,
}

/// Ends the session of each extension that has it (or of the one asked for), and says what went.
pub fn run(args: Args, out: &mut dyn Write) -> Outcome {
    let Args { session, origin, output } = args;
    with_cache(output.json, out, |cache, out| {
        let mut ended = Vec::new();
        for origin in origins_of(&cache.store, &session, origin.origin)? {
            let removed = cleanup::end_session(&cache.store, &origin, &session).map_err(|e| e.message.clone())?;
            ended.push(json!({"origin": origin, "sessionId": session, "deletedItems": removed.deleted_items, "freedBytes": removed.freed_bytes}));
        }
        if output.json {
            say(out, to_json(&ended));
        } else {
            for end in &ended {
                say(
                    out,
                    format!(
                        "ended {} of {}: {} items, {}",
                        session,
                        end["origin"].as_str().unwrap_or_default(),
                        end["deletedItems"],
                        size(end["freedBytes"].as_u64().unwrap_or(0))
                    ),
                );
            }
        }
        Ok(true)
    })
    .map_err(Failure)
}
