//! `llm-cache-host call`: talk to the host by hand. Each stdin line is one JSON request; `call` frames
//! it, starts the host as a browser would for the given origin, and prints each reply as one line of
//! JSON, chunks reassembled. Requests are pipelined, as an extension's port sends them.
//!
//! Requests and replies pass through as text, never parsed into values: what the protocol stores
//! (any depth, lone surrogate escapes, numbers of any length) goes in and comes back out as written.
//! The replies are printed with [`escape_controls`], which leaves them the same JSON but shows the
//! characters JSON allows raw and a terminal acts on (C1 controls, DEL, bidi controls) as escapes.

use std::io::{BufRead, Write};
use std::process::{Command, Stdio};

use serde_json::value::RawValue;

use super::Outcome;
use crate::frame::client;
use crate::install::Failure;
use crate::install::manifest::DEFAULT_EXTENSION_ID;
use crate::terminal::escape_controls;

/// Talk to the host by hand: one JSON request per stdin line, one reply per stdout line.
///
/// Starts the host as a browser does for the origin (a fresh process; the data directory is the
/// usual one, or LLM_CACHE_DIR), frames each line, and prints each reply on one line with its
/// chunks reassembled.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The extension to speak for: chrome-extension://<id>/ or moz-extension:<add-on id>.
    #[arg(long, default_value_t = default_origin())]
    origin: String,
}

/// The example after `call --help`, run by the program called `name`.
pub(super) fn example(name: &str) -> String {
    format!("Example: echo '{{\"id\": 1, \"op\": \"hello\"}}' | {name} call")
}

/// The origin `call` speaks for unless told otherwise: the demo extension's.
pub fn default_origin() -> String {
    format!("chrome-extension://{DEFAULT_EXTENSION_ID}/")
}

/// Sends every line of `input` to a fresh host for the origin asked for and prints its replies to
/// `out`, problems with a line to `err`. The outcome says whether every line was a request and got its
/// reply.
pub fn run(args: Args, input: &mut dyn BufRead, out: &mut dyn Write, err: &mut dyn Write) -> Outcome {
    converse(&args.origin, input, out, err).map_err(Failure)
}

/// [`run`]'s conversation with the host for `origin`.
///
/// # Errors
/// When the host can't be started.
fn converse(origin: &str, input: &mut dyn BufRead, out: &mut dyn Write, err: &mut dyn Write) -> Result<bool, String> {
    let args: Vec<String> = match origin.strip_prefix("moz-extension:") {
        // Firefox starts a host with its manifest's path and the add-on id.
        Some(addon) => vec!["com.browserx.llm_cache.json".into(), addon.into()],
        None => vec![origin.into()],
    };
    let exe = std::env::current_exe().map_err(|e| format!("can't find this binary: {e}"))?;
    let mut host = Command::new(exe)
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("can't start the host: {e}"))?;
    let mut to_host = host.stdin.take().expect("piped");
    let mut from_host = host.stdout.take().expect("piped");

    // Frame every line first (the host answers in order, one reply per request).
    let mut sent = 0;
    let mut all_good = true;
    let mut frames = Vec::new();
    for (number, line) in input.lines().enumerate() {
        let line = line.map_err(|e| format!("can't read stdin: {e}"))?;
        if line.trim().is_empty() {
            continue;
        }
        if let Err(error) = serde_json::from_str::<&RawValue>(&line) {
            let _ = writeln!(err, "line {}: not JSON ({error}); skipped", number + 1);
            all_good = false;
            continue;
        }
        client::write_frame(&mut frames, line.as_bytes()).map_err(|e| format!("line {}: {e}", number + 1))?;
        sent += 1;
    }
    let writer = std::thread::spawn(move || {
        let _ = to_host.write_all(&frames);
        // Closing stdin tells the host the port is closed once it has answered.
    });

    let mut received = 0;
    while received < sent {
        let reply = match client::read_reply(&mut from_host) {
            Ok(Some(reply)) => reply,
            Ok(None) => break,
            Err(error) => {
                let _ = writeln!(err, "can't read the host's reply: {error}");
                break;
            }
        };
        let _ = writeln!(out, "{}", escape_controls(&reply));
        received += 1;
    }
    // A host still writing after a reply that couldn't be read gets a broken pipe, not a wait.
    drop(from_host);
    let _ = writer.join();
    let status = host.wait().map_err(|e| format!("the host: {e}"))?;
    if received < sent {
        let _ = writeln!(err, "the host answered {received} of {sent} requests and exited ({status})");
        all_good = false;
    }
    Ok(all_good)
}
