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
        while let Some((header, body)) = rest.split_first_chunk::<4>() {
            let length = u32::from_ne_bytes(*header) as usize;
            let text = std::str::from_utf8(&body[..length]).expect("UTF-8");
            check_reply(&[text.to_owned()], b"a random stream");
            replies += 1;
            rest = &body[length..];
        }
        assert_eq!(replies, complete, "one reply per complete frame, in step");
    }
}
