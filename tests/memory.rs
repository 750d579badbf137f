//! The host's memory stays bounded whatever it is sent: its peak resident set, read from
//! `/proc/<pid>/status` while it still runs, stays under [`MAX_HOST_RSS_BYTES`] through the worst
//! sequences of requests the protocol allows: hundreds of pipelined 5 MB reads, a read naming one
//! 5 MB item a hundred times, a full 50 MB session read, listed, searched and read by pointers, a
//! session filled with the largest customMetadata and ended, a client that asks for gzip, pipelined
//! 5 MB writes, and request frames at and over the limit.
//!
//! The bound counts everything resident, the LMDB map's file-backed pages included: the host drops
//! those as it reads, so they need no allowance of their own. Each sequence runs in a fresh host, so
//! each peak is that sequence's own. Run with `--nocapture` to see the figures.

#![cfg(target_os = "linux")]

mod common;

use std::io::Write;

use common::{MAX_HOST_RSS_BYTES, Memory, ORIGIN, Session, memory_of, request_frame};
use serde_json::{Value, json};

const SESSION: &str = "conv_memory";

/// The largest item: a string whose compact JSON text is exactly 5 MiB.
const ITEM_BYTES: usize = 5 * 1024 * 1024;

/// Text that compresses as prose does.
fn prose(bytes: usize, seed: u64) -> String {
    let words = ["budget", "quarter", "meeting", "invoice", "numbers", "Friday", "please", "review", "team", "offsite"];
    let mut rng = common::Rng(seed);
    let mut text = String::with_capacity(bytes + 16);
    while text.len() < bytes {
        text.push_str(words[rng.next() as usize % words.len()]);
        text.push(' ');
    }
    text.truncate(bytes);
    text
}

/// Text gzip can't shrink by the third that base64 adds back: random letters and digits.
fn random_text(bytes: usize, seed: u64) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut rng = common::Rng(seed);
    (0..bytes).map(|_| char::from(ALPHABET[rng.next() as usize % ALPHABET.len()])).collect()
}

fn write_request(id: &str, session: &str, turn: &str, data: &Value) -> Value {
    json!({"id": id, "op": "write", "sessionId": session, "taskId": "task0001", "turnId": turn, "data": data,
        "description": "a large item"})
}

/// Writes a string item of exactly `ITEM_BYTES` and returns its key.
fn write_item(host: &mut Session, session: &str, turn: &str, text: &str) -> String {
    assert_eq!(text.len() + 2, ITEM_BYTES);
    let result = host.ok(write_request(turn, session, turn, &json!(text)));
    assert_eq!(result["dataSize"], ITEM_BYTES);
    result["storageKey"].as_str().unwrap().to_owned()
}

fn read_request(id: usize, key: &str) -> Value {
    json!({"id": id, "op": "read", "sessionId": session_of(key), "storageKey": key})
}

fn session_of(key: &str) -> &str {
    &key[..key.len() - 18]
}

/// What a reply says, read without decoding its data: its id, and whether it is a success (`ok`), an
/// error or a gzip envelope (`gzip`).
#[derive(Debug, PartialEq)]
struct Seen {
    id: Value,
    kind: &'static str,
}

/// Reads one reply's frames and says what the reply was. A chunk frame's 1 MiB part is not decoded
/// (this test is a debug build too): its envelope is read from the text before `"part"`, and a
/// reply's start from the start of its first part, escaped.
fn next_reply(host: &mut Session) -> Seen {
    const PART: &[u8] = br#","part":""#;
    let first = host.read_frame_bytes();
    let Some(at) = first.windows(PART.len()).position(|window| window == PART) else {
        let reply: Value = serde_json::from_slice(&first).unwrap();
        let kind = match (&reply["ok"], &reply["encoding"]) {
            (_, Value::String(encoding)) if encoding == "gzip" => "gzip",
            (Value::Bool(true), _) => "ok",
            _ => "error",
        };
        return Seen { id: reply["id"].clone(), kind };
    };
    let envelope: Value = serde_json::from_slice(&[&first[..at], b"}"].concat()).unwrap();
    for _ in 1..envelope["chunks"].as_u64().unwrap() {
        host.read_frame_bytes();
    }
    let start = String::from_utf8_lossy(&first[at + PART.len()..(at + PART.len() + 300).min(first.len())]);
    let kind = if start.contains(r#"\"encoding\":\"gzip\""#) {
        "gzip"
    } else if start.contains(r#"\"ok\":true"#) {
        "ok"
    } else {
        "error"
    };
    Seen { id: envelope["id"].clone(), kind }
}

/// Sends `requests` in one write, as a pipelining client does, and returns what came back.
fn pipeline(host: &mut Session, requests: &[Value]) -> Vec<Seen> {
    let bytes: Vec<u8> = requests.iter().flat_map(request_frame).collect();
    host.send_bytes(&bytes);
    requests.iter().map(|_| next_reply(host)).collect()
}

/// Checks a host's peak so far against the bound, after `what`.
fn assert_bounded(host: &Session, what: &str) -> Memory {
    let memory = memory_of(host.pid());
    eprintln!("{what}: {memory}");
    assert!(memory.peak < MAX_HOST_RSS_BYTES, "{what}: {memory}, over the bound of {MAX_HOST_RSS_BYTES} bytes");
    memory
}

#[test]
fn pipelined_reads_of_5_mb_go_out_one_at_a_time() {
    let tmp = tempfile::tempdir().unwrap();
    let mut writer = Session::start(tmp.path(), ORIGIN);
    let key = write_item(&mut writer, SESSION, "big00001", &prose(ITEM_BYTES - 2, 1));
    writer.close();
    for count in [100, 256] {
        let mut host = Session::start(tmp.path(), ORIGIN);
        let requests: Vec<Value> = (0..count).map(|id| read_request(id, &key)).collect();
        let seen = pipeline(&mut host, &requests);
        let expected: Vec<Seen> = (0..count).map(|id| Seen { id: json!(id), kind: "ok" }).collect();
        assert_eq!(seen, expected);
        assert_bounded(&host, &format!("{count} pipelined reads of 5 MB"));
        host.close();
    }
}

#[test]
fn a_read_naming_one_5_mb_item_100_times_is_refused_in_bounded_memory() {
    let tmp = tempfile::tempdir().unwrap();
    let mut host = Session::start(tmp.path(), ORIGIN);
    let key = write_item(&mut host, SESSION, "big00001", &prose(ITEM_BYTES - 2, 2));
    let keys = vec![key.clone(); 100];
    let reply = host.call(json!({"id": "many", "op": "read", "sessionId": SESSION, "storageKeys": keys}));
    assert_eq!(reply["error"]["code"], "InvalidRequestError", "{}", reply.get("error").unwrap_or(&reply["ok"]));
    let message = reply["error"]["message"].as_str().unwrap();
    assert!(message.contains("5308416"), "the message names the bound: {message}");
    // Eight such requests pipelined.
    let requests: Vec<Value> = (0..8)
        .map(|id| json!({"id": id, "op": "read", "sessionId": SESSION, "storageKeys": vec![key.clone(); 100]}))
        .collect();
    assert!(pipeline(&mut host, &requests).iter().all(|seen| seen.kind == "error"));
    assert_bounded(&host, "9 reads of 100 keys to one 5 MB item");
    host.close();
}

#[test]
fn a_full_session_read_listed_and_searched_stays_bounded() {
    let tmp = tempfile::tempdir().unwrap();
    let mut writer = Session::start(tmp.path(), ORIGIN);
    let keys: Vec<String> = (0..10)
        .map(|n| write_item(&mut writer, SESSION, &format!("item{n:04}"), &prose(ITEM_BYTES - 2, 10 + n)))
        .collect();
    let stats = writer.ok(json!({"id": "stats", "op": "stats", "sessionId": SESSION}));
    assert_eq!(stats["remainingBytes"], 0, "the session is full: {stats}");
    writer.close();

    let mut host = Session::start(tmp.path(), ORIGIN);
    let requests: Vec<Value> = keys.iter().enumerate().map(|(id, key)| read_request(id, key)).collect();
    assert!(pipeline(&mut host, &requests).iter().all(|seen| seen.kind == "ok"));
    assert_bounded(&host, "every item of a 50 MB session read, pipelined");
    let list = host.ok(json!({"id": "list", "op": "list", "sessionId": SESSION}));
    assert_eq!(list["items"].as_array().unwrap().len(), 10);
    let found = host.ok(json!({"id": "list", "op": "list", "sessionId": SESSION, "query": "large item"}));
    assert_eq!(found["items"].as_array().unwrap().len(), 10);
    assert_bounded(&host, "and listed");
    let search = host.call(json!({"id": "search", "op": "search", "sessionId": SESSION, "query": "zebra"}));
    assert_eq!(search["ok"], true, "{}", search["error"]);
    assert_bounded(&host, "and searched");
    // One pointer into each item, in one request: every item's bytes are scanned.
    let targets: Vec<Value> = keys.iter().map(|key| json!({"storageKey": key, "pointer": ""})).collect();
    let reply = host.call(json!({"id": "pointers", "op": "read", "sessionId": SESSION, "storageKeys": targets,
        "maxBytes": 1000}));
    assert_eq!(reply["result"]["items"].as_array().map(Vec::len), Some(10), "{}", reply["error"]);
    assert_bounded(&host, "and read by a pointer into each item at once");
    host.close();
}

#[test]
fn ending_a_full_session_of_items_with_the_largest_custom_metadata_stays_bounded() {
    let tmp = tempfile::tempdir().unwrap();
    let mut host = Session::start(tmp.path(), ORIGIN);
    // 64 KiB of customMetadata and one byte of data each: 806 items fill the quota.
    let custom = json!({"note": "c".repeat(65_000)});
    let requests: Vec<Value> = (0..820)
        .map(|n| {
            json!({"id": n, "op": "write", "sessionId": SESSION, "taskId": "task0001", "turnId": format!("t{n:07}"),
                "data": 1, "description": "d", "customMetadata": custom})
        })
        .collect();
    let stdin = feed(&mut host, requests.iter().flat_map(request_frame).collect());
    let seen: Vec<Seen> = requests.iter().map(|_| next_reply(&mut host)).collect();
    let stdin = stdin.join().unwrap();
    assert_eq!(seen.iter().filter(|seen| seen.kind == "ok").count(), 806, "the quota counts customMetadata");
    assert_bounded(&host, "806 writes of 64 KiB of customMetadata");
    drop(stdin);
    host.close();

    let mut host = Session::start(tmp.path(), ORIGIN);
    let ended = host.ok(json!({"id": "end", "op": "endSession", "sessionId": SESSION}));
    assert_eq!(ended["deletedItems"], 806);
    assert_bounded(&host, "and the session ended");
    host.close();
}

#[test]
fn a_client_that_asks_for_gzip_stays_bounded() {
    let tmp = tempfile::tempdir().unwrap();
    let mut host = Session::start(tmp.path(), ORIGIN);
    assert_eq!(host.ok(json!({"id": "hello", "op": "hello", "encodings": ["gzip"]}))["encoding"], "gzip");
    let compressible = write_item(&mut host, SESSION, "prose001", &prose(ITEM_BYTES - 2, 3));
    let incompressible = write_item(&mut host, SESSION, "random01", &random_text(ITEM_BYTES - 2, 4));
    // Gzip is slow in a debug build: 16 replies of 5 MB are enough to pass the bound if held together.
    let requests: Vec<Value> =
        (0..16).map(|id| read_request(id, if id % 2 == 0 { &compressible } else { &incompressible })).collect();
    let seen = pipeline(&mut host, &requests);
    let expected: Vec<Seen> =
        (0..16).map(|id| Seen { id: json!(id), kind: if id % 2 == 0 { "gzip" } else { "ok" } }).collect();
    assert_eq!(seen, expected);
    assert_bounded(&host, "16 pipelined reads of 5 MB by a client that asks for gzip");
    host.close();
}

#[test]
fn pipelined_writes_of_5_mb_stay_bounded() {
    let tmp = tempfile::tempdir().unwrap();
    let mut host = Session::start(tmp.path(), ORIGIN);
    // Ten sessions filled with one item each, then each item replaced: 100 MB sent in one go.
    let requests: Vec<Value> = (0..20)
        .map(|n| {
            let session = format!("conv_w{}", n % 10);
            write_request(&format!("w{n}"), &session, "item0001", &json!(prose(ITEM_BYTES - 2, n)))
        })
        .collect();
    let bytes: Vec<u8> = requests.iter().flat_map(request_frame).collect();
    let stdin = feed(&mut host, bytes);
    let seen: Vec<Seen> = requests.iter().map(|_| next_reply(&mut host)).collect();
    let stdin = stdin.join().unwrap();
    assert!(seen.iter().all(|seen| seen.kind == "ok"), "{seen:?}");
    assert_bounded(&host, "20 pipelined writes of 5 MB");
    drop(stdin);
    host.close();
}

/// Writes `bytes` to the host's stdin from a thread of its own (so that a full pipe can't deadlock),
/// which hands stdin back, still open, when it is done.
fn feed(host: &mut Session, bytes: Vec<u8>) -> std::thread::JoinHandle<std::process::ChildStdin> {
    let mut stdin = host.take_stdin();
    std::thread::spawn(move || {
        stdin.write_all(&bytes).unwrap();
        stdin
    })
}

#[test]
fn the_largest_request_frames_stay_bounded() {
    let tmp = tempfile::tempdir().unwrap();
    let mut host = Session::start(tmp.path(), ORIGIN);
    let hello = host.ok(json!({"id": 1, "op": "hello"}));
    let limit = hello["limits"]["maxRequestFrameBytes"].as_u64().unwrap() as usize;
    // A write at exactly the limit: 5 MiB of data after white space that compacting removes.
    let data = prose(ITEM_BYTES - 2, 5);
    let head = format!(r#"{{"id":"at-limit","op":"write","sessionId":"{SESSION}","description":"d","data":"#);
    let tail = format!("{}\"{data}\"}}", " ".repeat(limit - head.len() - data.len() - 3));
    let at_limit = format!("{head}{tail}");
    assert_eq!(at_limit.len(), limit);
    // And one a few bytes over it.
    let over = at_limit.replacen(r#""id":"at-limit""#, r#""id":"over-the-limit""#, 1);
    assert_eq!(over.len(), limit + 6);
    let stdin = feed(&mut host, [common::frame(at_limit.as_bytes()), common::frame(over.as_bytes())].concat());
    let replies = [host.read_reply(), host.read_reply()];
    let stdin = stdin.join().unwrap();
    assert_eq!((&replies[0]["id"], &replies[0]["ok"]), (&json!("at-limit"), &json!(true)), "{}", replies[0]["error"]);
    assert_eq!(replies[1]["error"]["code"], "InvalidRequestError", "{}", replies[1]);
    assert_eq!(replies[1]["id"], "over-the-limit", "the id at the frame's start is recovered: {}", replies[1]);
    assert_bounded(&host, "a request frame at the limit and one over it");
    drop(stdin);
    host.close();
}
