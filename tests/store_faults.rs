//! The store's file and disk misbehaving: a truncated or overwritten data file is reported, never
//! fatal (`hello` always answers); a host started while another grows the map still gets a store; a
//! full disk fails writes with a clear error, loses nothing, and writing works again once space is back.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;

use common::{ORIGIN, Session};
use serde_json::{Value, json};

fn write(id: u64, session: &str, data: Value) -> Value {
    json!({"id": id, "op": "write", "sessionId": session, "data": data, "description": format!("item {id}")})
}

fn data_file(dir: &Path) -> PathBuf {
    dir.join("store").join("data.mdb")
}

/// A store with a few items, its host stopped; returns the keys.
fn store_with_items(dir: &Path) -> Vec<String> {
    let mut host = Session::start(dir, ORIGIN);
    let keys = (1..=20)
        .map(|n| host.ok(write(n, "conv_f", json!("x".repeat(3000))))["storageKey"].as_str().unwrap().to_owned())
        .collect();
    assert!(host.close().1.success());
    keys
}

/// Starts a host, says hello and reads `key`: the reply to the read.
fn hello_then_read(dir: &Path, key: &str) -> Value {
    let mut host = Session::start(dir, ORIGIN);
    assert_eq!(host.ok(json!({"id": 1, "op": "hello"}))["protocolVersion"], 1, "hello answers whatever the store");
    let read = host.call(json!({"id": 2, "op": "read", "sessionId": "conv_f", "storageKey": key}));
    let (rest, status) = host.close();
    assert!(rest.is_empty() && status.success(), "the host ended badly: {status}");
    read
}

#[test]
fn a_truncated_data_file_is_reported_and_hello_still_answers() {
    for cut in [8192, -1] {
        let tmp = tempfile::tempdir().unwrap();
        let keys = store_with_items(tmp.path());
        let file = data_file(tmp.path());
        let len = std::fs::metadata(&file).unwrap().len();
        let size = if cut < 0 { len / 2 } else { cut as u64 };
        std::fs::OpenOptions::new().write(true).open(&file).unwrap().set_len(size).unwrap();

        let read = hello_then_read(tmp.path(), &keys[19]);
        assert_eq!(read["error"]["code"], "StorageUnavailableError", "cut to {size}: {read}");
        let message = read["error"]["message"].as_str().unwrap();
        assert!(message.contains(&format!("is truncated: it has {size} bytes")), "{message}");
        assert!(read["error"]["suggestion"].as_str().unwrap().contains("move the folder"), "{read}");
    }
}

#[test]
fn an_empty_data_file_is_a_new_store_and_the_log_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let keys = store_with_items(tmp.path());
    std::fs::OpenOptions::new().write(true).open(data_file(tmp.path())).unwrap().set_len(0).unwrap();
    let read = hello_then_read(tmp.path(), &keys[0]);
    assert_eq!(read["error"]["code"], "ItemNotFoundError", "{read}");
    let logs = common::logs(tmp.path());
    assert!(logs.contains("the store's data file is empty: it is taken as a new, empty store"), "{logs}");
}

#[test]
fn an_overwritten_meta_page_or_a_missing_data_file_is_reported_not_fatal() {
    let tmp = tempfile::tempdir().unwrap();
    let keys = store_with_items(tmp.path());
    let file = data_file(tmp.path());
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[..4096].fill(0xAB);
    std::fs::write(&file, &bytes).unwrap();
    let read = hello_then_read(tmp.path(), &keys[0]);
    assert_eq!(read["error"]["code"], "StorageUnavailableError", "{read}");
    assert!(read["error"]["message"].as_str().unwrap().contains("doesn't start with an LMDB meta page"), "{read}");

    // The data file removed while the lock file stays: a new, empty store.
    std::fs::remove_file(&file).unwrap();
    assert_eq!(hello_then_read(tmp.path(), &keys[0])["error"]["code"], "ItemNotFoundError");
}

/// Hosts opened while another host grows the map (past 256 MiB) each get a store, and none answers
/// every request with MDB_MAP_RESIZED.
#[test]
fn hosts_started_while_the_map_grows_all_get_a_store() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_owned();
    let done = Arc::new(AtomicBool::new(false));
    let writer = {
        let (dir, done) = (dir.clone(), done.clone());
        thread::spawn(move || {
            let mut host = Session::start(&dir, ORIGIN);
            let block = json!("w".repeat(5 * 1024 * 1024 - 2));
            // 64 blocks of 5 MB: 320 MB, in sessions of 45 MB; the map doubles on the way.
            for n in 0..64u64 {
                host.ok(write(n, &format!("conv_big{}", n / 9), block.clone()));
            }
            done.store(true, Ordering::SeqCst);
            assert!(host.close().1.success());
        })
    };
    let mut started = 0;
    while !done.load(Ordering::SeqCst) {
        started += 1;
        let mut host = Session::start(&dir, ORIGIN);
        for (n, request) in [
            json!({"id": 1, "op": "stats", "sessionId": "conv_small"}),
            write(2, "conv_small", json!(started)),
            json!({"id": 3, "op": "list", "sessionId": "conv_big0", "limit": 1}),
        ]
        .into_iter()
        .enumerate()
        {
            let reply = host.call(request);
            assert_eq!(reply["ok"], true, "host {started}, request {n}: {reply}");
        }
        assert!(host.close().1.success());
    }
    writer.join().unwrap();
    assert!(started >= 10, "only {started} hosts started while the map grew");
    let mut host = Session::start(&dir, ORIGIN);
    assert_eq!(host.ok(json!({"id": 1, "op": "stats", "sessionId": "conv_small"}))["itemCount"], started);
    assert!(host.close().1.success());
}

/// A tmpfs of a few MB, unmounted when dropped; None where this process may not mount one.
struct SmallDisk {
    path: PathBuf,
    _tmp: tempfile::TempDir,
}

impl SmallDisk {
    fn mount(megabytes: u32) -> Option<SmallDisk> {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("disk");
        std::fs::create_dir(&path).unwrap();
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={megabytes}m,mode=0700"), "tmpfs"])
            .arg(&path)
            .stderr(std::process::Stdio::null())
            .status();
        status.is_ok_and(|s| s.success()).then_some(SmallDisk { path, _tmp: tmp })
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.path).status();
    }
}

#[test]
fn a_full_disk_fails_writes_clearly_loses_nothing_and_recovers() {
    let Some(disk) = SmallDisk::mount(24) else {
        eprintln!("skipped: this process can't mount a tmpfs (the map-full path is tested in recovery.rs)");
        return;
    };
    // Room for the space the test frees later, taken now.
    let filler = disk.path.join("filler");
    std::fs::write(&filler, vec![0u8; 6 * 1024 * 1024]).unwrap();
    let dir = disk.path.join("data");
    let mut host = Session::start(&dir, ORIGIN);
    let block = |n: u64| json!(format!("{n:04}").repeat(256 * 1024));
    let mut stored = Vec::new();
    let failure = loop {
        let n = stored.len() as u64 + 1;
        let reply = host.call(write(n, "conv_full", block(n)));
        if reply["ok"] != true {
            break reply;
        }
        stored.push((n, reply["result"]["storageKey"].as_str().unwrap().to_owned()));
        assert!(n < 40, "a 24 MB disk took 40 MB");
    };
    assert!(stored.len() >= 2, "{failure}");
    assert_eq!(failure["error"]["code"], "StorageUnavailableError", "{failure}");
    let message = failure["error"]["message"].as_str().unwrap();
    assert!(message.contains("is full"), "the error should say the disk is full: {message}");

    // Everything acknowledged reads back, in this host and in a fresh one.
    let check = |host: &mut Session, stored: &[(u64, String)]| {
        for (n, key) in stored {
            let item = host.ok(json!({"id": 100 + n, "op": "read", "sessionId": "conv_full", "storageKey": key}));
            assert_eq!(item["item"]["data"], block(*n), "item {n}");
        }
        let stats = host.ok(json!({"id": 99, "op": "stats", "sessionId": "conv_full"}));
        assert_eq!(stats["itemCount"], stored.len());
    };
    check(&mut host, &stored);
    assert!(host.close().1.success());
    let mut host = Session::start(&dir, ORIGIN);
    check(&mut host, &stored);

    // Space back: writing works again.
    std::fs::remove_file(&filler).unwrap();
    let n = stored.len() as u64 + 1;
    let reply = host.call(write(n, "conv_full", block(n)));
    assert_eq!(reply["ok"], true, "{reply}");
    stored.push((n, reply["result"]["storageKey"].as_str().unwrap().to_owned()));
    check(&mut host, &stored);
    assert!(host.close().1.success());
}

#[test]
fn a_full_disk_with_no_store_yet_answers_hello_then_says_the_disk_is_full() {
    let Some(disk) = SmallDisk::mount(1) else {
        eprintln!("skipped: this process can't mount a tmpfs");
        return;
    };
    // Every byte of the disk taken; the write that finds no more room fails, as it should.
    let _ = std::fs::write(disk.path.join("filler"), vec![0u8; 2 * 1024 * 1024]);
    let dir = disk.path.join("data");
    let input = [json!({"id": 1, "op": "hello"}), write(2, "conv_full", json!("x"))]
        .iter()
        .flat_map(common::request_frame)
        .collect();
    let output = common::run_host(&dir, ORIGIN, input);
    assert!(output.status.success(), "the host died: {} ({})", output.status, output.stderr);
    assert_eq!(output.replies.len(), 2, "{:?}", output.replies);
    assert_eq!(output.replies[0]["result"]["protocolVersion"], 1, "{}", output.replies[0]);
    let error = &output.replies[1]["error"];
    assert_eq!(error["code"], "StorageUnavailableError", "{error}");
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("is full"), "the error should say the disk is full: {message}");
}

#[test]
fn a_read_only_store_still_reads_refuses_writes_clearly_and_writes_again_once_writable() {
    let Some(disk) = SmallDisk::mount(16) else {
        eprintln!("skipped: this process can't mount a tmpfs");
        return;
    };
    let dir = disk.path.join("data");
    let mut host = Session::start(&dir, ORIGIN);
    let keys: Vec<String> = (1..=3)
        .map(|n| host.ok(write(n, "conv_ro", json!({"n": n})))["storageKey"].as_str().unwrap().to_owned())
        .collect();
    assert!(host.close().1.success());
    let remount = |mode: &str| {
        let status = Command::new("mount").args(["-o", &format!("remount,{mode}")]).arg(&disk.path).status().unwrap();
        assert!(status.success(), "remount {mode}");
    };

    remount("ro");
    let mut host = Session::start(&dir, ORIGIN);
    assert_eq!(host.ok(json!({"id": 1, "op": "hello"}))["protocolVersion"], 1);
    for (n, key) in keys.iter().enumerate() {
        let item = host.ok(json!({"id": 2, "op": "read", "sessionId": "conv_ro", "storageKey": key}));
        assert_eq!(item["item"]["data"], json!({"n": n + 1}));
    }
    assert_eq!(host.ok(json!({"id": 3, "op": "stats", "sessionId": "conv_ro"}))["itemCount"], 3);
    assert_eq!(host.ok(json!({"id": 4, "op": "list", "sessionId": "conv_ro"}))["items"].as_array().unwrap().len(), 3);
    let refused = host.call(write(5, "conv_ro", json!("new")));
    assert_eq!(refused["error"]["code"], "StorageUnavailableError", "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("is read-only"), "{refused}");
    assert!(refused["error"]["suggestion"].as_str().unwrap().contains("can still be read"), "{refused}");
    assert!(host.close().1.success());

    remount("rw");
    let mut host = Session::start(&dir, ORIGIN);
    host.ok(write(6, "conv_ro", json!("new")));
    assert_eq!(host.assert_totals_match_items("conv_ro").len(), 4);
    assert!(host.close().1.success());
}
