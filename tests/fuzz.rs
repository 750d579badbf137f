//! Hostile input gets an answer, never a crash: seeded fuzzing of request parsing and dispatch
//! (in-process, against a temporary store) and of the frame decoder (a whole host loop over
//! in-memory pipes), on stable Rust.
//!
//! The corpus is every request in tests/transcripts and the nasty seeds in tests/fuzz/seeds.txt;
//! each case is a seed mutated a few times (bytes flipped, inserted, cut, spliced from another seed,
//! values swapped for odd ones). A case that ever fails here becomes a line of a transcript.
//! LLM_CACHE_FUZZ_CASES sets the number of cases (default 20000), LLM_CACHE_FUZZ_SEED the seed.

mod common;

use std::path::Path;
use std::sync::Arc;

use common::{MAX_REPLY_FRAME, Rng, frame};
use llm_cache_host::clock::ManualClock;
use llm_cache_host::cmd::Context;
use llm_cache_host::frame::client;
use llm_cache_host::host;
use llm_cache_host::store::Store;
use serde::Deserialize;
use serde_json::value::RawValue;

/// The error codes of protocol v1.
const CODES: [&str; 7] = [
    "QuotaExceededError",
    "ItemNotFoundError",
    "StorageUnavailableError",
    "InvalidKeyFormatError",
    "DataTooLargeError",
    "CorruptedDataError",
    "InvalidRequestError",
];

/// Values swapped into requests: each once made some parser unhappy somewhere.
const ODD_VALUES: [&str; 16] = [
    "-0",
    "1e999",
    "18446744073709551616",
    "-1",
    "0.5",
    "null",
    "true",
    "\"\"",
    "\"\\ud800\"",
    "\"/~\"",
    "\"/~2/0\"",
    "\"conv_\\u0000\"",
    "[]",
    "{}",
    "\"conv_a_bbbbbbbb_cccccccc\"",
    "\"\\n\\u0000\\t\"",
];

fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Every request of the transcripts, and the seeds.
fn corpus() -> Vec<Vec<u8>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut seeds: Vec<Vec<u8>> = std::fs::read_to_string(root.join("fuzz/seeds.txt"))
        .unwrap()
        .lines()
        .map(|line| line.as_bytes().to_vec())
        .collect();
    for entry in std::fs::read_dir(root.join("transcripts")).unwrap() {
        for line in std::fs::read_to_string(entry.unwrap().path()).unwrap().lines() {
            if let Some(request) = line.strip_prefix("> ").or_else(|| line.strip_prefix(">raw ")) {
                // `$repeat` and `$name` are the replay runner's; the host sees them as odd values, which is fine.
                seeds.push(request.as_bytes().to_vec());
            }
        }
    }
    assert!(seeds.len() > 150, "the corpus has {} requests", seeds.len());
    seeds
}

/// A seed changed one to four times.
fn mutate(rng: &mut Rng, corpus: &[Vec<u8>]) -> Vec<u8> {
    let mut bytes = corpus[rng.below(corpus.len())].clone();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(bytes.len() + 1);
        match rng.below(7) {
            0 if at < bytes.len() => bytes[at] ^= 1 << rng.below(8),
            1 => bytes.insert(at, rng.next() as u8),
            2 => bytes.truncate(at),
            3 => {
                let end = (at + rng.below(16)).min(bytes.len());
                bytes.drain(at..end);
            }
            4 => {
                let other = &corpus[rng.below(corpus.len())];
                let from = rng.below(other.len());
                bytes.splice(at..at, other[from..].iter().copied().take(rng.below(64)));
            }
            5 => {
                // A value after a colon swapped for an odd one.
                let colons: Vec<usize> =
                    bytes.iter().enumerate().filter(|(_, b)| **b == b':').map(|(i, _)| i).collect();
                if let Some(&colon) = colons.get(rng.below(colons.len())) {
                    let end = bytes[colon + 1..]
                        .iter()
                        .position(|b| matches!(b, b',' | b'}'))
                        .map_or(bytes.len(), |n| colon + 1 + n);
                    bytes.splice(colon + 1..end, ODD_VALUES[rng.below(ODD_VALUES.len())].bytes());
                }
            }
            _ => bytes = [bytes.clone(), bytes].concat(),
        }
    }
    bytes
}

/// A frame as far as the checks need it. Values are kept as raw JSON: stored data comes back with
/// its escapes as stored, lone surrogates included (PROTOCOL.md section 4.3), which is well-formed
/// JSON that serde_json's `Value` refuses.
#[derive(Deserialize)]
struct Frame<'a> {
    ok: Option<bool>,
    #[serde(borrow)]
    result: Option<&'a RawValue>,
    error: Option<ErrorShape>,
    chunk: Option<usize>,
    chunks: Option<usize>,
    part: Option<String>,
}

#[derive(Deserialize)]
struct ErrorShape {
    code: String,
    message: String,
    suggestion: String,
}

/// Checks one reply: frames of at most 1 MiB, each well-formed JSON, making one reply (whole or in
/// chunks) with `ok` and, on failure, a known code with a message and a suggestion.
fn check_reply(frames: &[String], case: &[u8]) {
    let what = || format!("case {:?}: {frames:?}", String::from_utf8_lossy(case));
    for frame in frames {
        assert!(frame.len() <= MAX_REPLY_FRAME, "a reply frame of {} bytes", frame.len());
    }
    let first: Frame<'_> = serde_json::from_str(&frames[0]).unwrap_or_else(|e| panic!("{e}: {}", what()));
    let text;
    let reply = if let Some(chunks) = first.chunks {
        assert_eq!(frames.len(), chunks, "{}", what());
        let mut whole = String::new();
        for (n, frame) in frames.iter().enumerate() {
            let chunk: Frame<'_> = serde_json::from_str(frame).unwrap_or_else(|e| panic!("{e}: {}", what()));
            assert_eq!(chunk.chunk, Some(n), "{}", what());
            whole.push_str(&chunk.part.unwrap_or_else(|| panic!("a chunk without part: {}", what())));
        }
        text = whole;
        serde_json::from_str::<Frame<'_>>(&text).unwrap_or_else(|e| panic!("{e}: {}", what()))
    } else {
        assert_eq!(frames.len(), 1, "{}", what());
        first
    };
    match (reply.ok, reply.result, reply.error) {
        (Some(true), Some(_), None) => {}
        (Some(false), None, Some(error)) => {
            assert!(CODES.contains(&error.code.as_str()), "{}", what());
            assert!(!error.message.is_empty() && !error.suggestion.is_empty(), "{}", what());
        }
        _ => panic!("a reply that is neither a result nor an error: {}", what()),
    }
}

#[test]
fn every_mutated_request_gets_one_well_formed_reply() {
    let cases = setting("LLM_CACHE_FUZZ_CASES", 20000);
    let mut rng = Rng(setting("LLM_CACHE_FUZZ_SEED", 0xF022));
    let corpus = corpus();
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::open(&tmp.path().join("store")).unwrap();
    let clock = Arc::new(ManualClock::new(1_795_300_000_000));
    let ctx = Context::new(Ok(Arc::new(store)), common::ORIGIN.to_owned(), clock);
    for _ in 0..cases {
        let case = mutate(&mut rng, &corpus);
        check_reply(&host::handle(&ctx, &case), &case);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_complete_frame_of_a_random_stream_is_answered_in_step() {
    let streams = setting("LLM_CACHE_FUZZ_CASES", 20000) / 40;
    let mut rng = Rng(setting("LLM_CACHE_FUZZ_SEED", 0xF022) ^ 0xF4A3E);
    let corpus = corpus();
    let tmp = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(&tmp.path().join("store")).unwrap());
    for _ in 0..streams {
        // Complete frames (mutated requests, empty ones, random bytes), then maybe a cut-off one.
        let mut input = Vec::new();
        let complete = rng.below(20);
        for _ in 0..complete {
            let body = match rng.below(4) {
                0 => Vec::new(),
                1 => (0..rng.below(300)).map(|_| rng.next() as u8).collect(),
                _ => mutate(&mut rng, &corpus),
            };
            input.extend(frame(&body));
        }
        match rng.below(3) {
            0 => input.extend(&(rng.next() as u32).to_ne_bytes()[..1 + rng.below(3)]),
            1 => {
                let body = [mutate(&mut rng, &corpus), b"x".to_vec()].concat();
                input.extend(&frame(&body)[..4 + rng.below(body.len())]);
            }
            _ => {}
        }
        let clock = Arc::new(ManualClock::new(1_795_300_000_000));
        let ctx = Arc::new(Context::new(Ok(store.clone()), common::ORIGIN.to_owned(), clock));
        let mut output = Vec::new();
        host::serve(input.as_slice(), &mut output, ctx).await.expect("the loop ends cleanly");
        // Every reply here is small: a frame each, read as raw JSON (see Frame).
        let mut rest = output.as_slice();
        let mut replies = 0;
        while let Some(body) = client::read_frame(&mut rest).expect("whole frames") {
            let text = String::from_utf8(body).expect("UTF-8");
            check_reply(&[text], b"a random stream");
            replies += 1;
        }
        assert_eq!(replies, complete, "one reply per complete frame, in step");
    }
}

/// A reply as far as the hostile-sequence checks need it, read from its raw text.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow)]
    id: &'a RawValue,
    ok: bool,
    #[serde(borrow)]
    result: Option<&'a RawValue>,
    error: Option<ErrorShape>,
}

/// Characters that a terminal, a log or a naive parser might act on.
const CONTROL_CHARS: [char; 12] =
    ['\u{0}', '\u{7}', '\u{8}', '\u{1b}', '\u{7f}', '\u{85}', '\u{9b}', '\u{202e}', '\u{2066}', '\u{feff}', '\n', '\r'];

/// Non-ASCII letters whose case folding changes their length or is otherwise odd.
const ODD_LETTERS: [&str; 8] = ["é", "ß", "İ", "ǅ", "Σ", "ﬃ", "😀", "ᾳ"];

/// A random word: ASCII, non-ASCII or a mix, of 1 to `max` characters.
fn word(rng: &mut Rng, max: usize) -> String {
    (0..1 + rng.below(max))
        .map(|_| match rng.below(3) {
            0 => ODD_LETTERS[rng.below(ODD_LETTERS.len())].to_owned(),
            _ => char::from(b'a' + rng.below(26) as u8).to_string(),
        })
        .collect()
}

/// A value nested `depth` deep (arrays, objects, or both by turns) around `inner`.
fn nested(rng: &mut Rng, depth: usize, inner: &str) -> String {
    let kind = rng.below(3);
    let mut open = String::with_capacity(depth * 5);
    let mut close = String::with_capacity(depth);
    for level in 0..depth {
        if kind == 0 || (kind == 2 && level % 2 == 0) {
            open.push('[');
            close.push(']');
        } else {
            open.push_str("{\"k\":");
            close.push('}');
        }
    }
    close = close.chars().rev().collect();
    format!("{open}{inner}{close}")
}

/// Hostile requests built to a shape rather than mutated: deep nesting, long and non-ASCII queries,
/// repeated keys, large pipelined groups of reads and control characters, sent to the real binary.
/// Each case is a run of requests sent at once; every one must get its reply, in order (the stream
/// stays in step: a `hello` sent after them is answered next), each a result or a known error, and
/// the host's peak memory stays under the bound.
#[test]
fn hostile_shapes_are_answered_in_step_within_the_memory_bound() {
    let cases = setting("LLM_CACHE_FUZZ_CASES", 20000) / 500;
    let mut rng = Rng(setting("LLM_CACHE_FUZZ_SEED", 0xF022) ^ 0x5AFE);
    let tmp = tempfile::tempdir().unwrap();
    let mut host = common::Session::start(tmp.path(), common::ORIGIN);
    let session = "conv_hostile";

    // One item as large as an item may be, which reads, repeated keys and pipelined groups aim at.
    let element = format!("\"{}\"", "lorem ipsum dolor sit amet ".repeat(37));
    let count = (llm_cache_host::limits::MAX_ITEM_BYTES as usize - 2) / (element.len() + 1);
    let big = format!("[{}]", vec![element.as_str(); count].join(","));
    let write = |data: &str, description: &str, custom: &str| {
        format!(
            r#"{{"id":"w","op":"write","sessionId":"{session}","data":{data},"description":{description}{custom}}}"#
        )
    };
    host.send_bytes(&frame(write(&big, "\"big\"", "").as_bytes()));
    let reply = host.read_reply_text();
    let written: Envelope<'_> = serde_json::from_str(&reply).unwrap();
    assert!(written.ok, "{reply:.300}");
    let big_key: serde_json::Value = serde_json::from_str(written.result.unwrap().get()).unwrap();
    let big_key = big_key["storageKey"].as_str().unwrap().to_owned();
    drop(big);

    for case in 0..cases {
        let mut requests: Vec<String> = Vec::new();
        let what = rng.below(5);
        match what {
            // Deep nesting, then every op that walks data.
            0 => {
                let depth = [1, 1000, 100_000, 1_000_000][rng.below(4)];
                let needle = word(&mut rng, 6);
                let data = nested(&mut rng, depth, &format!("[\"x {needle} y\"]"));
                let turn = format!("{case:08}");
                let key = format!("{session}_deepdeep_{turn}");
                requests.push(format!(
                    r#"{{"id":"w","op":"write","sessionId":"{session}","taskId":"deepdeep","turnId":"{turn}","data":{data},"description":"deep"}}"#
                ));
                let pointer: String = "/0".repeat(rng.below(depth.min(50)));
                requests.push(format!(r#"{{"id":"r","op":"read","sessionId":"{session}","storageKey":"{key}"}}"#));
                requests.push(format!(
                    r#"{{"id":"p","op":"read","sessionId":"{session}","storageKey":"{key}","pointer":"{pointer}","offset":{},"limit":{},"maxBytes":{}}}"#,
                    rng.below(3),
                    rng.below(5),
                    16 + rng.below(1000)
                ));
                requests.push(format!(r#"{{"id":"s","op":"search","sessionId":"{session}","query":"{needle}"}}"#));
                requests.push(format!(
                    r#"{{"id":"a","op":"append","sessionId":"{session}","storageKey":"{key}","pointer":"{pointer}","data":[1]}}"#
                ));
                requests.push(format!(r#"{{"id":"l","op":"list","sessionId":"{session}","query":"{needle}"}}"#));
                requests.push(format!(r#"{{"id":"d","op":"delete","sessionId":"{session}","storageKey":"{key}"}}"#));
            }
            // Long and non-ASCII queries over strings that hold odd letters.
            1 => {
                let text: Vec<String> = (0..rng.below(2000)).map(|_| word(&mut rng, 3)).collect();
                requests.push(write(&serde_json::to_string(&text).unwrap(), "\"words\"", ""));
                let words: Vec<String> = (0..1 + rng.below(120))
                    .map(|_| {
                        let length = 1 + rng.below(40);
                        word(&mut rng, length)
                    })
                    .collect();
                let query = serde_json::to_string(&words.join(" ")).unwrap();
                requests.push(format!(r#"{{"id":"s","op":"search","sessionId":"{session}","query":{query}}}"#));
                requests.push(format!(r#"{{"id":"l","op":"list","sessionId":"{session}","query":{query}}}"#));
            }
            // One key, many times over, in one read.
            2 => {
                let keys = vec![format!("\"{big_key}\""); 1 + rng.below(100)].join(",");
                requests.push(format!(r#"{{"id":"m","op":"read","sessionId":"{session}","storageKeys":[{keys}]}}"#));
            }
            // A large pipelined group of reads of the largest item.
            3 => {
                for n in 0..1 + rng.below(64) {
                    requests
                        .push(format!(r#"{{"id":{n},"op":"read","sessionId":"{session}","storageKey":"{big_key}"}}"#));
                }
            }
            // Control characters in every string a client sends.
            _ => {
                let odd = |rng: &mut Rng| -> String {
                    (0..1 + rng.below(40)).map(|_| CONTROL_CHARS[rng.below(CONTROL_CHARS.len())]).collect()
                };
                let description = serde_json::to_string(&format!("note {}", odd(&mut rng))).unwrap();
                let custom = format!(r#","customMetadata":{{"k":{}}}"#, serde_json::to_string(&odd(&mut rng)).unwrap());
                let data = serde_json::to_string(&odd(&mut rng)).unwrap();
                requests.push(write(&data, &description, &custom));
                let session_id = serde_json::to_string(&format!("conv_{}", odd(&mut rng))).unwrap();
                requests.push(format!(r#"{{"id":"c","op":"list","sessionId":{session_id}}}"#));
                requests.push(format!(r#"{{"id":"l","op":"list","sessionId":"{session}","query":"note"}}"#));
            }
        }
        requests.push(format!(r#"{{"id":"step{case}","op":"hello"}}"#));
        let input: Vec<u8> = requests.iter().flat_map(|request| frame(request.as_bytes())).collect();
        host.send_bytes(&input);
        for request in &requests {
            let text = host.read_reply_text();
            let reply: Envelope<'_> = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("case {case} ({what}): {e} in a reply of {} bytes", text.len()));
            let sent = format!("{{\"ok\":true,{}", &request[1..]);
            let sent: Envelope<'_> = serde_json::from_str(&sent).unwrap();
            assert_eq!(reply.id.get(), sent.id.get(), "case {case} ({what}): the replies are out of step");
            match (reply.ok, reply.result, &reply.error) {
                (true, Some(_), None) => {}
                (false, None, Some(error)) => {
                    assert!(CODES.contains(&error.code.as_str()), "case {case} ({what}): {}", error.code);
                    assert!(!error.message.is_empty() && !error.suggestion.is_empty(), "case {case} ({what})");
                }
                _ => panic!("case {case} ({what}): neither a result nor an error: {text:.300}"),
            }
        }
        let memory = common::memory_of(host.pid());
        assert!(memory.peak < common::MAX_HOST_RSS_BYTES, "case {case} ({what}): {memory}");
    }
    let (rest, status) = host.close();
    assert!(rest.is_empty() && status.success());
}
