//! Stdio replay tests: the transcripts in tests/transcripts, run through the real binary over pipes.
//!
//! A transcript is a list of lines:
//! - `> {json}`: a request. Requests are sent when the next `<` line needs a reply, so several `>`
//!   lines in a row are pipelined.
//! - `< {json}`: the next reply must match: `"*"` matches any value; `"$name"` captures a value the
//!   first time and must equal it after; in requests, `"$name"` is replaced by what it captured.
//!   `{"$repeat": [text, n, end]}` stands for `text` repeated n times and then `end` (optional), in
//!   requests and replies alike.
//! - `>raw text`: a frame holding `text` exactly as written (for JSON with odd spacing, or no JSON).
//! - `>hex 7b ff ...`: a frame holding these bytes (none: an empty frame).
//! - `>oversize n [text]`: a frame announcing n bytes, followed by n bytes: `text`, then spaces.
//! - `>cut n text`: a frame header announcing n bytes, then only `text`, then the end of input.
//! - `!restart arg...`: end this host (it must exit 0 having written nothing more) and start another
//!   on the same data with these arguments (the origin, or a Firefox-style launch).
//! - `!unavailable`: the host's data directory lies below a regular file, so its store can't open.
//! - `!store-quota n`: the store's owner set its store-wide quota to n bytes: the data directory's
//!   settings file says so, which hosts started from here on read (before the first request, or
//!   after a `!restart`).
//! - `#`: a comment.
//!
//! At the end the host's stdin is closed and it must exit 0 with nothing left on stdout.

mod common;

use std::collections::HashMap;
use std::path::Path;

use common::{Session, frame, json_match, request_frame, split_frames};
use llm_cache_host::frame::header;
use serde_json::Value;

/// Runs one transcript and panics with a readable account of the first mismatch.
fn replay(name: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/transcripts").join(format!("{name}.txt"));
    let text = std::fs::read_to_string(&path).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let mut data_dir = tmp.path().join("data");
    let mut vars = HashMap::new();
    let mut pending: Vec<Vec<u8>> = Vec::new();
    let mut host: Option<Session> = None;
    let mut args = vec![common::ORIGIN.to_owned()];

    for (number, line) in text.lines().enumerate() {
        let at = format!("{}:{}", path.display(), number + 1);
        let line = line.trim_end();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if line == "!unavailable" {
            std::fs::write(tmp.path().join("file"), b"not a folder").unwrap();
            data_dir = tmp.path().join("file").join("data");
            continue;
        }
        if let Some(bytes) = line.strip_prefix("!store-quota ") {
            assert!(host.is_none(), "{at}: !store-quota comes before the host starts: first, or after !restart");
            std::fs::create_dir_all(&data_dir).unwrap();
            let settings = serde_json::json!({"storeQuotaBytes": bytes.trim().parse::<u64>().unwrap()});
            std::fs::write(data_dir.join("config.json"), settings.to_string()).unwrap();
            continue;
        }
        if let Some(rest) = line.strip_prefix("!restart") {
            if let Some(session) = host.take() {
                finish(session, &at);
            }
            args = rest.split_whitespace().map(str::to_owned).collect();
            continue;
        }
        let session = host.get_or_insert_with(|| Session::start_with_args(&data_dir, &args));
        if let Some(body) = line.strip_prefix(">raw ") {
            pending.push(frame(body.as_bytes()));
        } else if let Some(hex) = line.strip_prefix(">hex") {
            let bytes: Vec<u8> = hex.split_whitespace().map(|b| u8::from_str_radix(b, 16).unwrap()).collect();
            pending.push(frame(&bytes));
        } else if let Some(rest) = line.strip_prefix(">oversize ") {
            let (n, text) = rest.split_once(' ').unwrap_or((rest, ""));
            let n: usize = n.parse().unwrap();
            let mut bytes = header(n).unwrap().to_vec();
            bytes.extend_from_slice(text.as_bytes());
            bytes.resize(4 + n, b' ');
            pending.push(bytes);
        } else if let Some(rest) = line.strip_prefix(">cut ") {
            let (n, body) = rest.split_once(' ').unwrap();
            let mut bytes = header(n.parse().unwrap()).unwrap().to_vec();
            bytes.extend_from_slice(body.as_bytes());
            pending.push(bytes);
        } else if let Some(json) = line.strip_prefix("> ") {
            let request = substitute(expand(parse(json, &at)), &vars, &at);
            pending.push(request_frame(&request));
        } else if let Some(json) = line.strip_prefix("< ") {
            for bytes in pending.drain(..) {
                session.send_bytes(&bytes);
            }
            let expected = expand(parse(json, &at));
            let actual = session.read_reply();
            if let Err(why) = json_match(&bind(&expected, &actual, &mut vars), &actual) {
                panic!(
                    "{at}: the reply does not match ({why})\n--- expected\n{}\n--- actual\n{}",
                    shorten(&expected),
                    shorten(&actual)
                );
            }
        } else {
            panic!("{at}: a line this runner does not understand: {line}");
        }
    }
    let mut session = host.unwrap_or_else(|| Session::start_with_args(&data_dir, &args));
    for bytes in pending.drain(..) {
        session.send_bytes(&bytes);
    }
    finish(session, &format!("{}: end", path.display()));
}

/// Closes the host's input and checks it exits 0 having written nothing more but whole frames.
fn finish(session: Session, at: &str) {
    let (rest, status) = session.close();
    let extra = split_frames(&rest);
    assert!(extra.is_empty(), "{at}: replies nobody expected: {extra:?}");
    assert!(status.success(), "{at}: the host exited with {status}");
}

fn parse(json: &str, at: &str) -> Value {
    serde_json::from_str(json).unwrap_or_else(|e| panic!("{at}: bad JSON in the transcript: {e}"))
}

/// Replaces every `{"$repeat": [text, n]}` by the repeated text.
fn expand(value: Value) -> Value {
    match value {
        Value::Object(map) if map.len() == 1 && map.contains_key("$repeat") => {
            let args = &map["$repeat"];
            let repeated = args[0].as_str().unwrap().repeat(args[1].as_u64().unwrap() as usize);
            Value::String(repeated + args.get(2).and_then(Value::as_str).unwrap_or_default())
        }
        Value::Object(map) => Value::Object(map.into_iter().map(|(k, v)| (k, expand(v))).collect()),
        Value::Array(items) => Value::Array(items.into_iter().map(expand).collect()),
        other => other,
    }
}

/// Replaces `"$name"` strings in a request by the values they captured.
fn substitute(value: Value, vars: &HashMap<String, Value>, at: &str) -> Value {
    match value {
        Value::String(s) if s.starts_with('$') => {
            vars.get(&s).cloned().unwrap_or_else(|| panic!("{at}: {s} was never captured"))
        }
        Value::Object(map) => Value::Object(map.into_iter().map(|(k, v)| (k, substitute(v, vars, at))).collect()),
        Value::Array(items) => Value::Array(items.into_iter().map(|v| substitute(v, vars, at)).collect()),
        other => other,
    }
}

/// Captures the values `"$name"` stands for in `expected`, and returns `expected` with captured
/// names replaced by their values (so a second use must match the first).
fn bind(expected: &Value, actual: &Value, vars: &mut HashMap<String, Value>) -> Value {
    match (expected, actual) {
        (Value::String(s), _) if s.starts_with('$') => vars.entry(s.clone()).or_insert_with(|| actual.clone()).clone(),
        (Value::Object(e), Value::Object(a)) => Value::Object(
            e.iter().map(|(k, v)| (k.clone(), a.get(k).map_or_else(|| v.clone(), |av| bind(v, av, vars)))).collect(),
        ),
        (Value::Array(e), Value::Array(a)) => Value::Array(
            e.iter().enumerate().map(|(i, v)| a.get(i).map_or_else(|| v.clone(), |av| bind(v, av, vars))).collect(),
        ),
        _ => expected.clone(),
    }
}

/// A value for a failure message, with long strings cut so a 5 MB reply stays readable.
fn shorten(value: &Value) -> String {
    let text = serde_json::to_string_pretty(value).unwrap();
    if text.len() > 4000 {
        let end = (0..=4000).rev().find(|&at| text.is_char_boundary(at)).unwrap_or(0);
        format!("{}… ({} bytes in all)", &text[..end], text.len())
    } else {
        text
    }
}

macro_rules! transcripts {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                replay(stringify!($name));
            }
        )*

        /// Every transcript file has a test, so none is silently skipped.
        #[test]
        fn every_transcript_is_run() {
            let mut listed = vec![$(stringify!($name)),*];
            listed.sort();
            let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/transcripts");
            let mut files: Vec<String> = std::fs::read_dir(dir)
                .unwrap()
                .map(|entry| entry.unwrap().path().file_stem().unwrap().to_string_lossy().into_owned())
                .collect();
            files.sort();
            assert_eq!(files, listed);
        }
    };
}

transcripts!(
    hello,
    store_quota,
    write_and_read,
    list,
    update,
    delete,
    end_session,
    stats,
    errors,
    quota,
    framing,
    chunked_reply,
    isolation,
    unavailable,
    slices,
    append,
    search,
    hostile_input,
    read_many,
    group_commit,
    sessions,
    provenance
);
