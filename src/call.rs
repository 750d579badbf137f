//! `llm-cache-host call`: talk to the host by hand. Each stdin line is one JSON request; `call` frames
//! it, starts the host as a browser would for the given origin, and prints each reply as one line of
//! JSON, chunks reassembled. Requests are pipelined, as an extension's port sends them.

use std::io::{BufRead, Read, Write};
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::install::manifest::DEFAULT_EXTENSION_ID;

/// The origin `call` speaks for unless told otherwise: the demo extension's.
pub fn default_origin() -> String {
    format!("chrome-extension://{DEFAULT_EXTENSION_ID}/")
}

/// Sends every line of `input` to a fresh host for `origin` and prints its replies to `out`, problems
/// with a line to `err`. Returns whether every line was a request and got its reply.
///
/// # Errors
/// When the host can't be started.
pub fn run(origin: &str, input: &mut dyn BufRead, out: &mut dyn Write, err: &mut dyn Write) -> Result<bool, String> {
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
        // Checked without building a Value, whose recursion limit (128) would refuse deep data.
        if let Err(error) = serde_json::from_str::<serde::de::IgnoredAny>(&line) {
            let _ = writeln!(err, "line {}: not JSON ({error}); skipped", number + 1);
            all_good = false;
            continue;
        }
        frames.extend_from_slice(&u32::try_from(line.len()).unwrap_or(u32::MAX).to_ne_bytes());
        frames.extend_from_slice(line.as_bytes());
        sent += 1;
    }
    let writer = std::thread::spawn(move || {
        let _ = to_host.write_all(&frames);
        // Closing stdin tells the host the port is closed once it has answered.
    });

    let mut received = 0;
    let mut chunks = String::new();
    while received < sent {
        let Some(frame) = read_frame(&mut from_host) else { break };
        let reply = match serde_json::from_str::<Value>(&frame) {
            // A chunk frame: collect its part until the last one.
            Ok(value) if value.get("ok").is_none() && value.get("part").is_some() => {
                chunks.push_str(value["part"].as_str().unwrap_or_default());
                if value["chunk"].as_u64().map(|n| n + 1) != value["chunks"].as_u64() {
                    continue;
                }
                std::mem::take(&mut chunks)
            }
            _ => frame,
        };
        let _ = writeln!(out, "{reply}");
        received += 1;
    }
    let _ = writer.join();
    let status = host.wait().map_err(|e| format!("the host: {e}"))?;
    if received < sent {
        let _ = writeln!(err, "the host answered {received} of {sent} requests and exited ({status})");
        all_good = false;
    }
    Ok(all_good)
}

/// One frame's text, or None at the end of the host's output.
fn read_frame(from: &mut impl Read) -> Option<String> {
    let mut header = [0u8; 4];
    from.read_exact(&mut header).ok()?;
    let mut body = vec![0u8; u32::from_ne_bytes(header) as usize];
    from.read_exact(&mut body).ok()?;
    String::from_utf8(body).ok()
}
