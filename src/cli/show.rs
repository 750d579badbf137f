//! `show <session> <key>`: an item's data, or the part a JSON pointer names.

use std::io::{IsTerminal, Write};

use serde_json::json;

use super::Outcome;
use super::flags::{OriginArg, Output};
use crate::inspect::{SCREEN_BYTES, SCREEN_LINES, call, origins_of, say, show_data, size, string, text_at, with_cache};
use crate::install::Failure;

/// One item's data, or the part a JSON pointer names (--pointer /emails/3/subject).
#[derive(Debug, clap::Args)]
pub struct Args {
    session: String,
    /// The item's storage key, as `list` shows it.
    key: String,
    /// An RFC 6901 pointer into the data, e.g. /emails/3/subject.
    #[arg(long)]
    pointer: Option<String>,
    #[command(flatten)]
    origin: OriginArg,
    #[command(flatten)]
    output: Output,
}

/// Prints the item through the protocol's `read`: a line about it, then its data laid out (at a
/// terminal, a screenful of it), or the whole reply as JSON.
pub fn run(args: Args, out: &mut dyn Write) -> Outcome {
    let Args { session, key, pointer, origin, output } = args;
    with_cache(output.json, out, |cache, out| {
        let origin = origins_of(&cache.store, &session, origin.origin)?.into_iter().next().unwrap_or_default();
        let mut request = json!({"op": "read", "sessionId": session, "storageKey": key});
        if let Some(pointer) = &pointer {
            request["pointer"] = json!(pointer);
        }
        let text = call(&cache.store, &origin, request)?;
        if output.json {
            say(out, text);
            return Ok(true);
        }
        let field = |name: &str| text_at(&text, &["item", name]);
        say(
            out,
            format!(
                "{} | {} | {} | {} | {}",
                key,
                size(field("dataSize").parse().unwrap_or(0)),
                string(field("shape")),
                // Where the item's text came from (section 5.13), as `list` shows it.
                string(text_at(&text, &["item", "provenance", "origin"])),
                string(field("description"))
            ),
        );
        let screen = std::io::stdout().is_terminal().then_some((SCREEN_LINES, SCREEN_BYTES));
        show_data(field("data"), screen, out).map_err(|e| format!("can't show item {key}: {e}"))?;
        Ok(true)
    })
    .map_err(Failure)
}
