//! Compressed replies (PROTOCOL.md section 3.5): only for a client that asks in `hello`, only for
//! replies over 32 KB that gzip makes shorter, and decoding to exactly the reply it stands for.

mod common;

use std::io::Read;

use base64::Engine;
use common::{ORIGIN, Session};
use serde_json::{Value, json};

/// Text that compresses as prose does: words, not one repeated character.
fn prose(bytes: usize) -> String {
    let words = ["budget", "quarter", "meeting", "invoice", "numbers", "Friday", "please", "review", "team", "offsite"];
    let mut text = String::new();
    let mut n = 7usize;
    while text.len() < bytes {
        n = n.wrapping_mul(2_654_435_761).wrapping_add(12_345) % 1_000_003;
        text.push_str(words[n % words.len()]);
        text.push(if n.is_multiple_of(11) { '.' } else { ' ' });
    }
    text.truncate(bytes);
    text
}

/// The reply an encoded reply stands for.
fn decoded(reply: &Value) -> Value {
    let payload = base64::engine::general_purpose::STANDARD.decode(reply["payload"].as_str().unwrap()).unwrap();
    let mut text = String::new();
    flate2::read::GzDecoder::new(payload.as_slice()).read_to_string(&mut text).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn write(host: &mut Session, turn: &str, data: &Value) -> String {
    let reply = host.ok(json!({"id": turn, "op": "write", "sessionId": "conv_z", "taskId": "task0001", "turnId": turn,
        "data": data, "description": "d"}));
    reply["storageKey"].as_str().unwrap().to_owned()
}

#[test]
fn large_replies_come_gzipped_only_to_a_client_that_asks() {
    let tmp = tempfile::tempdir().unwrap();
    let mut plain = Session::start(tmp.path(), ORIGIN);
    assert!(plain.ok(json!({"id": 1, "op": "hello"})).get("encoding").is_none());
    let text = prose(5 * 1024 * 1024 - 2);
    let big = write(&mut plain, "big00001", &json!(text));
    let small = write(&mut plain, "small001", &json!("a few words"));
    let random =
        write(&mut plain, "random01", &json!(base64::engine::general_purpose::STANDARD.encode(common_random(60_000))));
    let read = |host: &mut Session, key: &str| {
        host.call(json!({"id": key, "op": "read", "sessionId": "conv_z", "storageKey": key}))
    };
    let uncompressed = read(&mut plain, &big);
    assert_eq!(uncompressed["result"]["item"]["data"], json!(text), "no encoding unless asked");

    let mut asking = Session::start(tmp.path(), ORIGIN);
    let hello = asking.ok(json!({"id": 1, "op": "hello", "encodings": ["br", "gzip"]}));
    assert_eq!(hello["encoding"], "gzip");
    // 5 MB of prose: one gzip envelope (under 1 MiB, so one frame), decoding to the very same reply.
    let encoded = read(&mut asking, &big);
    assert_eq!(
        (encoded["encoding"].as_str(), &encoded["ok"], &encoded["id"]),
        (Some("gzip"), &json!(true), &json!(big))
    );
    assert!(encoded.get("result").is_none());
    assert_eq!(decoded(&encoded), uncompressed);
    assert!(encoded["payload"].as_str().unwrap().len() < text.len() / 2, "prose comes back in under half the bytes");
    // Small replies, and data gzip can't shrink, come as they are.
    assert_eq!(read(&mut asking, &small)["result"]["item"]["data"], "a few words");
    assert!(read(&mut asking, &random)["result"]["item"]["data"].is_string(), "incompressible data is sent plain");
    assert!(plain.close().1.success() && asking.close().1.success());
}

#[test]
fn a_reply_is_compressed_whenever_gzip_shortens_it_whatever_its_start() {
    let tmp = tempfile::tempdir().unwrap();
    let mut host = Session::start(tmp.path(), ORIGIN);
    host.ok(json!({"id": 1, "op": "hello", "encodings": ["gzip"]}));
    let base64 = |n: usize| base64::engine::general_purpose::STANDARD.encode(common_random(n));
    // 4 MB whose first 128 KB are random: the whole still shrinks to a small fraction.
    let random_head = format!("{}{}", base64(96 * 1024), prose(4_000_000 - 128 * 1024));
    // 4 MB whose first 64 KB are prose and the rest random: gzip can't make it shorter.
    let random_rest = format!("{}{}", prose(64 * 1024), base64(3_000_000));
    let keys = [write(&mut host, "head0001", &json!(random_head)), write(&mut host, "rest0001", &json!(random_rest))];
    let read = |host: &mut Session, key: &str| {
        host.call(json!({"id": key, "op": "read", "sessionId": "conv_z", "storageKey": key}))
    };
    let encoded = read(&mut host, &keys[0]);
    assert_eq!(encoded["encoding"], "gzip", "a random head doesn't keep the rest from being compressed");
    assert!(encoded["payload"].as_str().unwrap().len() < random_head.len() / 2);
    assert_eq!(decoded(&encoded)["result"]["item"]["data"], json!(random_head));
    let plain = read(&mut host, &keys[1]);
    assert!(plain.get("encoding").is_none(), "gzip doesn't shorten it, so it comes plain");
    assert_eq!(plain["result"]["item"]["data"], json!(random_rest));
    assert!(host.close().1.success());
}

/// Bytes no compressor can shrink, from a fixed seed.
fn common_random(n: usize) -> Vec<u8> {
    let mut rng = common::Rng(0x5EED);
    (0..n).map(|_| rng.next() as u8).collect()
}
