//! Seeded SIGKILLs in the middle of pipelined writes, updates, appends, deletes and endSessions, as
//! Chrome kills a host two seconds after its port closes, whatever the host is doing.
//!
//! The host serves one port's requests in order and acknowledges them in order, so after a kill the
//! store must equal the state after exactly the first m requests, for one m between the number
//! acknowledged and the number sent: every acknowledged write is there, an interrupted one is
//! either whole or absent, no session is half-cleaned, and nothing else changed. After every kill
//! `llm-cache-host verify` must find every invariant holding, and a fresh host must agree with the
//! model, totals included (the sessions' and the store's running total).
//!
//! LLM_CACHE_CRASH_ROUNDS sets the number of kills (default 150) and LLM_CACHE_CRASH_SEED the seed.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use common::{ORIGIN, Rng, Session, binary};
use serde_json::{Value, json};

/// The store as the model sees it: each item's key and its data (an array of numbers).
type State = BTreeMap<String, Vec<u64>>;

const SESSIONS: [&str; 3] = ["conv_crash-a", "conv_crash-b", "conv_crash-c"];

/// One request, and what it does to the model's state.
enum Op {
    Write { key: String, data: Vec<u64> },
    Update { key: String, data: Vec<u64> },
    Append { key: String, more: Vec<u64> },
    Delete { key: String },
    End { session: &'static str },
}

impl Op {
    fn request(&self, id: usize) -> Value {
        let session = |key: &str| key.rsplitn(3, '_').nth(2).unwrap().to_owned();
        match self {
            Op::Write { key, data } => {
                let parts: Vec<&str> = key.rsplitn(3, '_').collect();
                json!({"id": id, "op": "write", "sessionId": parts[2], "taskId": parts[1], "turnId": parts[0],
                       "data": padded(data), "description": "crash test item"})
            }
            Op::Update { key, data } => {
                json!({"id": id, "op": "update", "sessionId": session(key), "storageKey": key, "data": padded(data)})
            }
            Op::Append { key, more } => {
                json!({"id": id, "op": "append", "sessionId": session(key), "storageKey": key, "pointer": "/items", "data": more})
            }
            Op::Delete { key } => json!({"id": id, "op": "delete", "sessionId": session(key), "storageKey": key}),
            Op::End { session } => json!({"id": id, "op": "endSession", "sessionId": session}),
        }
    }

    fn apply(&self, state: &mut State) {
        match self {
            Op::Write { key, data } | Op::Update { key, data } => {
                state.insert(key.clone(), data.clone());
            }
            Op::Append { key, more } => state.get_mut(key).unwrap().extend(more),
            Op::Delete { key } => {
                state.remove(key);
            }
            Op::End { session } => state.retain(|key, _| !key.starts_with(&format!("{session}_"))),
        }
    }
}

/// An item's data: the numbers, and padding that makes some writes long enough to take a while.
fn padded(numbers: &[u64]) -> Value {
    let pad = if numbers.first().is_some_and(|n| n % 4 == 0) { 200_000 } else { 16 };
    json!({"items": numbers, "pad": "p".repeat(pad)})
}

/// A random request that makes sense for `state` (updates, appends and deletes name live items).
fn random_op(rng: &mut Rng, state: &State, counter: &mut u64) -> Op {
    let mut fresh = || {
        *counter += 1;
        *counter
    };
    let live: Vec<&String> = state.keys().collect();
    let pick = rng.below(100);
    if live.is_empty() || pick < 40 {
        let session = SESSIONS[rng.below(SESSIONS.len())];
        let n = fresh();
        return Op::Write { key: format!("{session}_{n:08}_{:08}", rng.below(1000)), data: vec![n] };
    }
    let key = live[rng.below(live.len())].clone();
    match pick {
        40..=59 => Op::Update { key, data: vec![fresh()] },
        60..=84 => Op::Append { key, more: vec![fresh(), fresh()] },
        85..=95 => Op::Delete { key },
        _ => Op::End { session: SESSIONS[rng.below(SESSIONS.len())] },
    }
}

/// What the store holds now, read through a fresh host, which also checks the totals.
fn stored(dir: &Path) -> State {
    let mut host = Session::start(dir, ORIGIN);
    let mut state = State::new();
    // The store's running total, kept in the transactions the kill cut, is the sum of the sessions'.
    let mut sum = 0;
    let mut store_total = 0;
    for session in SESSIONS {
        let stats = host.ok(json!({"id": 1, "op": "stats", "sessionId": session}));
        sum += stats["totalSize"].as_u64().unwrap();
        store_total = stats["storeTotalSize"].as_u64().expect("stats reports storeTotalSize");
    }
    assert_eq!(store_total, sum, "the store's running total after a kill");
    for session in SESSIONS {
        for item in host.assert_totals_match_items(session) {
            let key = item["storageKey"].as_str().unwrap().to_owned();
            let read =
                host.ok(json!({"id": 1, "op": "read", "sessionId": session, "storageKey": key, "pointer": "/items"}));
            let numbers = read["item"]["data"].as_array().unwrap().iter().map(|n| n.as_u64().unwrap()).collect();
            state.insert(key, numbers);
        }
    }
    let (rest, status) = host.close();
    assert!(rest.is_empty() && status.success());
    state
}

fn verify_is_clean(dir: &Path, round: usize) {
    let output = Command::new(binary()).arg("verify").env("LLM_CACHE_DIR", dir).output().unwrap();
    let out = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success() && !out.contains("problem"), "round {round}: verify after the kill:\n{out}");
}

#[test]
fn a_kill_at_any_moment_leaves_a_prefix_of_the_requests_applied() {
    let rounds: usize = std::env::var("LLM_CACHE_CRASH_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(150);
    let seed: u64 = std::env::var("LLM_CACHE_CRASH_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(0x5EED_CAFE);
    let mut rng = Rng(seed);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut state = State::new();
    let mut counter = 0;
    let mut applied_in_flight = 0;

    for round in 0..rounds {
        // Requests, all sent at once; the kill comes after a random number of replies.
        let mut model = state.clone();
        let ops: Vec<Op> = (0..1 + rng.below(24))
            .map(|_| {
                let op = random_op(&mut rng, &model, &mut counter);
                op.apply(&mut model);
                op
            })
            .collect();
        let kill_after = rng.below(ops.len() + 1);
        let mut host = Session::start(dir, ORIGIN);
        let frames: Vec<u8> =
            ops.iter().enumerate().flat_map(|(id, op)| common::request_frame(&op.request(id))).collect();
        host.send_bytes(&frames);
        for (id, op) in ops.iter().enumerate().take(kill_after) {
            let reply = host.read_reply();
            assert_eq!(reply["id"], id, "round {round}");
            assert_eq!(reply["ok"], true, "round {round}, request {id}: {reply}");
            op.apply(&mut state);
        }
        host.kill();

        verify_is_clean(dir, round);
        let found = stored(dir);
        // The state after the acknowledged requests, then after each further one in turn.
        let mut candidate = state.clone();
        let mut matched = candidate == found;
        for op in &ops[kill_after..] {
            if matched {
                break;
            }
            op.apply(&mut candidate);
            applied_in_flight += 1;
            matched = candidate == found;
        }
        assert!(
            matched,
            "round {round} (seed {seed:#x}): the store is no prefix of the requests:\nfound {found:?}\nacknowledged {state:?}"
        );
        state = found;
    }
    eprintln!("{rounds} kills; {applied_in_flight} unacknowledged requests had been applied when a kill came");
}
