//! Several host processes on one store at once, as Chrome runs them (one per port): the quota holds
//! across processes and every session's totals stay equal to the sum over its items.

mod common;

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Barrier};
use std::thread;

use common::{ORIGIN, Session};
use serde_json::{Value, json};

/// The session quota of protocol v1.
const QUOTA: u64 = 52_428_800;

/// How many requests each process keeps in flight.
const WINDOW: usize = 4;

/// A `write` request with explicit ids.
fn write_request(id: usize, session: &str, task: &str, turn: &str, data: &Value) -> Value {
    json!({"id": id, "op": "write", "sessionId": session, "taskId": task, "turnId": turn, "data": data,
           "description": format!("item {task}/{turn}")})
}

/// Bytes of a value's compact JSON text: its `dataSize`.
fn size_of(data: &Value) -> u64 {
    data.to_string().len() as u64
}

/// Starts `processes` hosts on `dir`, then runs `work` for each on its own thread, all released at once.
fn run_at_once<T: Send + 'static>(
    dir: &Path,
    processes: usize,
    work: impl Fn(usize, &mut Session) -> T + Send + Sync + 'static,
) -> Vec<T> {
    let work = Arc::new(work);
    let barrier = Arc::new(Barrier::new(processes));
    let threads: Vec<_> = (0..processes)
        .map(|p| {
            let (dir, work, barrier) = (dir.to_owned(), work.clone(), barrier.clone());
            thread::spawn(move || {
                let mut host = Session::start(&dir, ORIGIN);
                barrier.wait();
                let result = work(p, &mut host);
                let (rest, status) = host.close();
                assert!(rest.is_empty() && status.success(), "host {p} ended badly: {status}");
                result
            })
        })
        .collect();
    threads.into_iter().map(|t| t.join().expect("a writer thread failed")).collect()
}

/// Sends the requests `next` yields (given each request's index, which is also its id), keeping up to
/// [`WINDOW`] in flight, and hands each reply with its id to `on_reply`, which returns false to stop.
fn pipeline(
    host: &mut Session,
    mut next: impl FnMut(usize) -> Option<Value>,
    mut on_reply: impl FnMut(usize, Value) -> bool,
) {
    let (mut sent, mut received, mut sending) = (0, 0, true);
    let mut answered = HashSet::new();
    while sending || received < sent {
        if sending && sent - received < WINDOW {
            match next(sent) {
                Some(request) => {
                    host.send(&request);
                    sent += 1;
                }
                None => sending = false,
            }
            continue;
        }
        let reply = host.read_reply();
        let n = reply["id"].as_u64().expect("every reply carries its request's id") as usize;
        assert!(n < sent && answered.insert(n), "a reply to no outstanding request: {reply}");
        sending &= on_reply(n, reply);
        received += 1;
    }
}

/// An acknowledged write: its key, size and tag.
struct Ack {
    key: String,
    size: u64,
    tag: String,
}

/// Four processes fill one session with ~1 MB items at once until each is refused. The acknowledged
/// bytes never pass the quota, the session was really filled, `stats` equals the sum over `list`, the
/// stored items are exactly the acknowledged ones, and each reads back with its own data.
#[test]
fn four_processes_filling_one_session_never_pass_the_quota() {
    const SESSION: &str = "conv_concurrent-fill";
    const MAX_WRITES_PER_PROCESS: usize = 60; // 60 MB each: far past the quota if it doesn't hold
    let tmp = tempfile::tempdir().unwrap();
    let blob = "x".repeat(1_000_000);

    // Every item has the same size: its tag is as wide as its turnId.
    let data = move |p: usize, n: usize| json!({"tag": format!("p{p}n{n:05}"), "blob": blob});
    let item_size = size_of(&data(0, 0));

    let results = run_at_once(tmp.path(), 4, move |p, host| {
        let (mut acks, mut refusals) = (Vec::new(), Vec::new());
        pipeline(
            host,
            |n| {
                (n < MAX_WRITES_PER_PROCESS)
                    .then(|| write_request(n, SESSION, "fill0000", &format!("p{p}n{n:05}"), &data(p, n)))
            },
            |n, reply| {
                if reply["ok"] == true {
                    assert_eq!(reply["result"]["dataSize"], item_size, "{reply}");
                    let key = reply["result"]["storageKey"].as_str().unwrap().to_owned();
                    acks.push(Ack { key, size: item_size, tag: format!("p{p}n{n:05}") });
                    true
                } else {
                    assert_eq!(reply["error"]["code"], "QuotaExceededError", "{reply}");
                    refusals.push(reply["error"].clone());
                    false
                }
            },
        );
        (acks, refusals)
    });

    for (p, (_, refusals)) in results.iter().enumerate() {
        assert!(!refusals.is_empty(), "process {p} was never refused");
        for error in refusals {
            let (current, requested) = (error["current"].as_u64().unwrap(), error["requested"].as_u64().unwrap());
            assert_eq!((requested, error["limit"].as_u64()), (item_size, Some(QUOTA)), "{error}");
            assert!(current <= QUOTA && current + requested > QUOTA, "a refusal within the quota: {error}");
        }
    }
    let acks: Vec<&Ack> = results.iter().flat_map(|(acks, _)| acks).collect();
    let acknowledged: u64 = acks.iter().map(|ack| ack.size).sum();
    assert!(acknowledged <= QUOTA, "{acknowledged} bytes acknowledged, over the quota of {QUOTA}");
    assert!(acknowledged + item_size > QUOTA, "refused with room left: {acknowledged} bytes stored");

    let mut host = Session::start(tmp.path(), ORIGIN);
    let items = host.assert_totals_match_items(SESSION);
    let stored: HashSet<&str> = items.iter().map(|item| item["storageKey"].as_str().unwrap()).collect();
    let acked: HashSet<&str> = acks.iter().map(|ack| ack.key.as_str()).collect();
    assert_eq!(stored, acked, "the stored items are exactly the acknowledged writes");
    for ack in &acks {
        let item =
            host.ok(json!({"id": 0, "op": "read", "sessionId": SESSION, "storageKey": ack.key, "pointer": "/tag"}));
        assert_eq!((&item["item"]["data"], &item["item"]["dataSize"]), (&json!(ack.tag), &json!(ack.size)));
    }
    assert!(host.close().1.success());
}

/// Two processes overwrite one key again and again at once (and each its own key now and then). Last
/// write wins: the shared key holds one process's final write, whole; each own key its last write; and
/// the session's totals equal the sum over its three items, so replacing never leaks or double-counts.
#[test]
fn two_processes_overwriting_one_key_keep_totals_right() {
    const SESSION: &str = "conv_last-write-wins";
    const WRITES: usize = 40;
    let tmp = tempfile::tempdir().unwrap();

    // What process p writes at step n: the shared key, or every 5th step its own key; sizes vary.
    let plan = |p: usize, n: usize| -> (String, Value) {
        let turn = if n % 5 == 4 { format!("own0000{p}") } else { "shared00".to_owned() };
        let data = json!({"tag": format!("p{p}n{n}"), "pad": "y".repeat((p * 7919 + n * 3571) % 20_000)});
        (turn, data)
    };
    let results = run_at_once(tmp.path(), 2, move |p, host| {
        pipeline(
            host,
            |n| {
                (n < WRITES).then(|| plan(p, n)).map(|(turn, data)| write_request(n, SESSION, "lastwins", &turn, &data))
            },
            |n, reply| {
                assert_eq!(reply["ok"], true, "write {n} of process {p}: {reply}");
                assert_eq!(reply["result"]["dataSize"], size_of(&plan(p, n).1));
                true
            },
        );
    });
    assert_eq!(results.len(), 2);

    // The last write of each process to each key.
    let mut last: HashMap<(usize, String), Value> = HashMap::new();
    for p in 0..2 {
        for n in 0..WRITES {
            let (turn, data) = plan(p, n);
            last.insert((p, turn), data);
        }
    }

    let mut host = Session::start(tmp.path(), ORIGIN);
    let items = host.assert_totals_match_items(SESSION);
    assert_eq!(items.len(), 3, "one shared key and two own keys: {items:?}");
    let mut read = |turn: &str| {
        let key = format!("{SESSION}_lastwins_{turn}");
        host.ok(json!({"id": 0, "op": "read", "sessionId": SESSION, "storageKey": key}))["item"].clone()
    };
    let shared = read("shared00");
    let finals = [&last[&(0, "shared00".to_owned())], &last[&(1, "shared00".to_owned())]];
    assert!(
        finals.contains(&&shared["data"]),
        "the shared key holds neither process's last write: {}",
        shared["data"]["tag"]
    );
    assert_eq!(shared["dataSize"], size_of(&shared["data"]));
    for p in 0..2 {
        let own = read(&format!("own0000{p}"));
        assert_eq!(own["data"], last[&(p, format!("own0000{p}"))]);
    }
    assert!(host.close().1.success());
}

/// A read that races updates of the same item, from another process, sees one version whole: never a
/// mix of two writes, never a size that disagrees with the data.
#[test]
fn reads_racing_updates_see_whole_versions() {
    let tmp = tempfile::tempdir().unwrap();
    let key = "conv_race_task0001_turn0001";
    let versions = [json!("x".repeat(1_000_000)), json!("y".repeat(2_000_000))];
    let mut setup = Session::start(tmp.path(), ORIGIN);
    setup.ok(write_request(0, "conv_race", "task0001", "turn0001", &versions[0]));
    setup.close();

    let versions = Arc::new(versions);
    run_at_once(tmp.path(), 2, move |process, host| {
        for round in 0..40 {
            if process == 0 {
                let data = &versions[(round + 1) % 2];
                host.ok(
                    json!({"id": round, "op": "update", "sessionId": "conv_race", "storageKey": key, "data": data}),
                );
            } else {
                let item =
                    host.ok(json!({"id": round, "op": "read", "sessionId": "conv_race", "storageKey": key}))["item"]
                        .clone();
                let which = versions.iter().position(|v| *v == item["data"]);
                let which = which.unwrap_or_else(|| panic!("read {round} saw neither version whole"));
                assert_eq!(item["dataSize"], size_of(&versions[which]), "dataSize matches the data read");
            }
        }
    });
}

/// Pipelined writes that arrive together are committed together: the log records groups of more than
/// one request, and a write refused inside a group (over the quota) is refused alone while the writes
/// around it are stored, with totals exact.
#[test]
fn pipelined_writes_share_group_commits_and_fail_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let mut host = Session::start(tmp.path(), ORIGIN);
    let big = json!("b".repeat(5 * 1024 * 1024 - 2));
    let small = json!("s");
    // 9 items of 5 MB fill 45 MB of the 50 MB quota; then small writes, a 5 MB one that can't fit, and more small ones.
    for n in 0..9 {
        host.ok(write_request(n, "conv_group", "bigitems", &format!("big{n:05}"), &big));
    }
    let mut frames = Vec::new();
    let mut expected = Vec::new();
    for n in 0..60usize {
        let data = if n == 30 { &big } else { &small };
        frames.extend(common::request_frame(&write_request(
            100 + n,
            "conv_group",
            "smallone",
            &format!("s{n:07}"),
            data,
        )));
        expected.push(n != 30);
    }
    host.send_bytes(&frames);
    for (n, ok) in expected.iter().enumerate() {
        let reply = host.read_reply();
        assert_eq!(reply["id"], 100 + n);
        assert_eq!(reply["ok"], *ok, "write {n}: {reply}");
        if !ok {
            assert_eq!(reply["error"]["code"], "QuotaExceededError");
        }
    }
    let items = host.assert_totals_match_items("conv_group");
    assert_eq!(items.len(), 9 + 59);
    assert!(host.close().1.success());

    let logs = common::logs(tmp.path());
    let largest = logs
        .lines()
        .filter_map(|line| line.split(" batch=").nth(1)?.split_whitespace().next()?.parse::<usize>().ok())
        .max()
        .unwrap_or(0);
    assert!(largest > 1, "no request was handled in a group:\n{logs}");
}
