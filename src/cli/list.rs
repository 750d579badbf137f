//! `list <session>`: a session's items, newest first, one line each.

use std::io::Write;

use serde_json::{Value, json};

use super::Outcome;
use super::flags::{OriginArg, Output};
use crate::inspect::{age, call, origins_of, say, size, to_json, with_cache};
use crate::install::Failure;

/// One session's items, newest first, one line each (key | size | age | shape | origin | description).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session id, e.g. conv_a3f8e2b4-…
    session: String,
    #[command(flatten)]
    origin: OriginArg,
    #[command(flatten)]
    output: Output,
}

/// Prints every item of the session, of each extension that has it, through the protocol's `list`.
pub fn run(args: Args, out: &mut dyn Write) -> Outcome {
    let Args { session, origin, output } = args;
    with_cache(output.json, out, |cache, out| {
        let mut pages = Vec::new();
        // A page of metadata holds only strings and counts, so it is parsed as values.
        let list = |origin: &str, request: Value| {
            serde_json::from_str::<Value>(&call(&cache.store, origin, request)?).map_err(|e| e.to_string())
        };
        for origin in origins_of(&cache.store, &session, origin.origin)? {
            let mut page = list(&origin, json!({"op": "list", "sessionId": session, "limit": 1000}))?;
            let mut cursor = page["nextCursor"].clone();
            while !cursor.is_null() {
                let request = json!({"op": "list", "sessionId": session, "limit": 1000, "cursor": cursor});
                let next = list(&origin, request)?;
                let more = next["items"].as_array().cloned().unwrap_or_default();
                page["items"].as_array_mut().expect("list returns items").extend(more);
                cursor = next["nextCursor"].clone();
            }
            pages.push((origin, page));
        }
        if output.json {
            let all: Vec<Value> =
                pages.iter().map(|(origin, page)| json!({"origin": origin, "items": page["items"]})).collect();
            say(out, to_json(&all));
        } else {
            for (origin, page) in &pages {
                say(
                    out,
                    format!(
                        "{origin}: {} items, {} (key | size | age | shape | origin | description)",
                        page["itemCount"],
                        size(page["totalSize"].as_u64().unwrap_or(0))
                    ),
                );
                for item in page["items"].as_array().into_iter().flatten() {
                    say(
                        out,
                        format!(
                            "{} | {} | {} | {} | {} | {}",
                            item["storageKey"].as_str().unwrap_or_default(),
                            size(item["dataSize"].as_u64().unwrap_or(0)),
                            age(cache.now, item["timestamp"].as_u64().unwrap_or(0)),
                            item["shape"].as_str().unwrap_or_default(),
                            // Where the item's text came from (section 5.13), so that a person sees
                            // which items hold other people's text.
                            item["provenance"]["origin"].as_str().unwrap_or("unknown"),
                            item["description"].as_str().unwrap_or_default()
                        ),
                    );
                }
            }
        }
        Ok(!pages.is_empty())
    })
    .map_err(Failure)
}
