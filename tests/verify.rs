//! `llm-cache-host verify [--repair]` on a store damaged the ways a disk fault or a foreign writer
//! would: each broken invariant is named, the repair puts it right, and the host then agrees.

mod common;

use std::path::Path;
use std::process::Command;

use common::{ORIGIN, Session, binary};
use heed::types::Bytes;
use heed::{CommitOrAbort, Database};
use llm_cache_host::clock::{Clock, SystemClock};
use llm_cache_host::store::{Store, item_key, session_key, time_key};
use serde_json::{Value, json};

/// Runs `verify` with these extra arguments on the data in `dir`: its exit code and stdout.
fn verify(dir: &Path, args: &[&str]) -> (i32, String) {
    let output = Command::new(binary()).arg("verify").args(args).env("LLM_CACHE_DIR", dir).output().unwrap();
    (output.status.code().unwrap(), String::from_utf8(output.stdout).unwrap())
}

/// One of the store's databases, its keys and values as bytes.
type Raw = Database<'static, Bytes, Bytes>;

/// Changes raw records, bypassing the store, as a disk error or a foreign writer would.
fn tamper(dir: &Path, change: impl FnOnce(&mut heed::RwTxn<'_>, &dyn Fn(&str) -> Raw)) {
    // SAFETY: no other handle on this environment is open in this process, and no host is running.
    let env = unsafe {
        heed::EnvOpenOptions::new().read_txn_without_tls().map_size(1 << 28).max_dbs(6).open(dir.join("store"))
    }
    .unwrap();
    let names = ["item-meta", "item-data", "items-by-time", "sessions", "counters"];
    let (a, b, c, d, e): (Raw, Raw, Raw, Raw, Raw) = env
        .open_databases_and_commit(env.read_txn().unwrap(), |opener, rtxn| -> heed::Result<_> {
            let open = |name| opener.open_database(rtxn, Some(name)).map(Option::unwrap);
            let opened = (open(names[0])?, open(names[1])?, open(names[2])?, open(names[3])?, open(names[4])?);
            Ok(CommitOrAbort::<_, ()>::Commit(opened))
        })
        .unwrap()
        .unwrap_commit();
    let dbs = [a, b, c, d, e];
    let open = |name: &str| dbs[names.iter().position(|n| *n == name).unwrap()];
    let mut wtxn = env.write_txn().unwrap();
    change(&mut wtxn, &open);
    wtxn.commit().unwrap();
}

#[test]
fn verify_names_each_broken_invariant_and_repair_puts_them_right() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    assert_eq!(
        verify(dir, &[]),
        (0, format!("store: {}\nok: there is no store yet, so nothing to check\n", dir.join("store").display()))
    );

    let mut host = Session::start(dir, ORIGIN);
    let mut keys = Vec::new();
    for (n, session) in ["conv_one", "conv_one", "conv_one", "conv_two", "conv_two", "conv_three"].iter().enumerate() {
        let item = host.ok(json!({"id": n, "op": "write", "sessionId": session, "data": {"n": n}, "description": "d"}));
        keys.push((item["storageKey"].as_str().unwrap().to_owned(), item["timestamp"].as_u64().unwrap()));
    }
    assert!(host.close().1.success());
    let (code, out) = verify(dir, &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("checked 6 items and 3 sessions\nok: every invariant holds"), "{out}");

    tamper(dir, |txn, db| {
        // Item 0's metadata overwritten; item 1's time index entry lost; session two's totals wrong;
        // data left behind without metadata.
        db("item-meta").put(txn, &item_key(ORIGIN, &keys[0].0), b"\xff not json").unwrap();
        db("items-by-time").delete(txn, &time_key(ORIGIN, "conv_one", keys[1].1, &keys[1].0)).unwrap();
        let at = keys[3].1;
        let totals = json!({"totalSize": 999, "itemCount": 7, "createdAt": at, "lastAccessedAt": at}).to_string();
        db("sessions").put(txn, &session_key(ORIGIN, "conv_two"), totals.as_bytes()).unwrap();
        db("item-data").put(txn, &item_key(ORIGIN, "conv_one_strayaaa_strayaaa"), b"1").unwrap();
    });
    // A cleanup begun and not finished: not a fault, reported apart.
    let store = Store::open(&dir.join("store")).unwrap();
    store.write(|txn, dbs| dbs.mark_ending(txn, ORIGIN, "conv_three", dbs.last_seq(txn)?)).unwrap();
    drop(store);

    let (code, out) = verify(dir, &[]);
    assert_eq!(code, 1, "{out}");
    for line in [
        format!("problem: item {} of {ORIGIN}: its metadata can't be decoded", keys[0].0),
        format!("problem: item {} of {ORIGIN}: it is missing from the time index", keys[1].0),
        format!("problem: item conv_one_strayaaa_strayaaa of {ORIGIN}: it has data but no metadata"),
        format!("problem: session conv_one of {ORIGIN}: a time index entry points at no item"),
        format!(
            "problem: session conv_two of {ORIGIN}: its totals say 7 items of 999 bytes, its items add up to 2 of 14"
        ),
        format!("pending: the cleanup of session conv_three of {ORIGIN} has begun and not finished"),
    ] {
        assert!(out.contains(&line), "missing {line:?} in:\n{out}");
    }

    let (code, out) = verify(dir, &["--repair"]);
    assert_eq!(code, 0, "{out}");
    for line in [
        format!("repaired: finished the cleanup of session conv_three of {ORIGIN}: 1 items, 7 bytes"),
        format!("repaired: dropped item {} of {ORIGIN}: its metadata can't be decoded", keys[0].0),
        format!("repaired: dropped item conv_one_strayaaa_strayaaa of {ORIGIN}: it has data but no metadata"),
        "repaired: added 1 missing time index entries".to_owned(),
        format!("repaired: session conv_two of {ORIGIN}: set its totals to 2 items of 14 bytes"),
        format!("repaired: session conv_one of {ORIGIN}: set its totals to 2 items of 14 bytes"),
        "ok: every invariant holds".to_owned(),
    ] {
        assert!(out.contains(&line), "missing {line:?} in:\n{out}");
    }
    let (code, out) = verify(dir, &[]);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("problem") && !out.contains("pending"), "{out}");

    // The host agrees: totals equal the items, and every item that could be kept reads back.
    let mut host = Session::start(dir, ORIGIN);
    assert_eq!(host.assert_totals_match_items("conv_one").len(), 2);
    assert_eq!(host.assert_totals_match_items("conv_two").len(), 2);
    assert_eq!(host.assert_totals_match_items("conv_three").len(), 0);
    let read = host.ok(json!({"id": 1, "op": "read", "sessionId": "conv_one", "storageKey": keys[1].0}));
    assert_eq!(read["item"]["data"], json!({"n": 1}));
    assert!(host.close().1.success());
}

#[test]
fn totals_written_before_they_counted_custom_metadata_are_brought_up_to_date() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut host = Session::start(dir, ORIGIN);
    let write = |host: &mut Session, session: &str, turn: &str, data: Value, custom: Value| {
        let request = json!({"id": turn, "op": "write", "sessionId": session, "taskId": "task0001", "turnId": turn,
            "data": data, "description": "d", "customMetadata": custom});
        host.ok(request)["storageKey"].as_str().unwrap().to_owned()
    };
    let annotated = write(&mut host, "conv_old", "turn0001", json!({"n": 1}), json!({"k": "vvvv"}));
    write(&mut host, "conv_old", "turn0002", json!(2), Value::Null);
    write(&mut host, "conv_plain", "turn0001", json!(3), Value::Null);
    host.close();
    // As a host from before totals counted customMetadata left them: 7 + 1 bytes of data, no record
    // that they count customMetadata, and no running total of the store.
    tamper(dir, |txn, db| {
        let key = session_key(ORIGIN, "conv_old");
        let mut record: Value = serde_json::from_slice(db("sessions").get(txn, &key).unwrap().unwrap()).unwrap();
        assert_eq!(record["totalSize"], 7 + 1 + 12, "this host counts the 12 bytes of customMetadata");
        record["totalSize"] = json!(7 + 1);
        db("sessions").put(txn, &key, &serde_json::to_vec(&record).unwrap()).unwrap();
        assert!(db("counters").delete(txn, b"totals-count-custom-metadata").unwrap());
        // Such hosts kept no running total of the store either.
        assert!(db("counters").delete(txn, b"store-total").unwrap());
    });
    // The next host to open the store counts them in, once; verify and the quota then agree.
    let mut host = Session::start(dir, ORIGIN);
    let stats = |host: &mut Session, session: &str| host.ok(json!({"id": 1, "op": "stats", "sessionId": session}));
    assert_eq!(stats(&mut host, "conv_old")["totalSize"], 7 + 1 + 12);
    assert_eq!(stats(&mut host, "conv_plain")["totalSize"], 1);
    assert_eq!(stats(&mut host, "conv_plain")["storeTotalSize"], 7 + 1 + 12 + 1);
    let deleted = host.ok(json!({"id": 2, "op": "delete", "sessionId": "conv_old", "storageKey": annotated}));
    assert_eq!(deleted["freedBytes"], 7 + 12);
    assert_eq!(stats(&mut host, "conv_old")["totalSize"], 1);
    host.close();
    let (code, out) = verify(dir, &[]);
    assert_eq!(code, 0, "{out}");
    assert!(Session::start(dir, ORIGIN).close().1.success());
    assert_eq!(verify(dir, &[]).0, 0, "a store brought up to date is left alone");
}

#[test]
fn verify_reports_a_truncated_store_file_it_cannot_open() {
    let tmp = tempfile::tempdir().unwrap();
    let mut host = Session::start(tmp.path(), ORIGIN);
    host.ok(json!({"id": 1, "op": "write", "sessionId": "conv_t", "data": "x".repeat(100_000), "description": "d"}));
    assert!(host.close().1.success());
    let file = tmp.path().join("store/data.mdb");
    std::fs::OpenOptions::new().write(true).open(&file).unwrap().set_len(8192).unwrap();
    let (code, out) = verify(tmp.path(), &["--repair"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("problem: the store file") && out.contains("is truncated: it has 8192 bytes"), "{out}");
    assert!(out.contains("restore it from a backup"), "{out}");
}

#[test]
fn sessions_passes_over_a_session_record_it_cannot_read_and_counts_it_toward_the_page() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut host = Session::start(dir, ORIGIN);
    for (n, session) in ["conv_a", "conv_b", "conv_c"].iter().enumerate() {
        host.ok(json!({"id": n, "op": "write", "sessionId": session, "data": n, "description": "d"}));
    }
    assert!(host.close().1.success());
    tamper(dir, |txn, db| db("sessions").put(txn, &session_key(ORIGIN, "conv_b"), b"not json").unwrap());

    let ids = |page: &Value| -> Vec<String> {
        page["sessions"].as_array().unwrap().iter().map(|s| s["sessionId"].as_str().unwrap().to_owned()).collect()
    };
    let mut host = Session::start(dir, ORIGIN);
    // A page of two walks conv_a and conv_b, whose record can't be read: it holds conv_a alone, so
    // that a page never reads more than limit + 1 records, and its cursor leads on past conv_b.
    let page = host.ok(json!({"id": 1, "op": "sessions", "limit": 2}));
    assert_eq!(ids(&page), ["conv_a"]);
    let rest = host.ok(json!({"id": 2, "op": "sessions", "limit": 2, "cursor": page["nextCursor"]}));
    assert_eq!(ids(&rest), ["conv_c"]);
    assert_eq!(rest["nextCursor"], Value::Null);
    assert!(host.close().1.success());
}

/// The store's running total (`stats`' storeTotalSize) as a host reports it, and the sum of every
/// session's totalSize as `stats` reports each.
fn store_total_and_sum(host: &mut Session, sessions: &[&str]) -> (u64, u64) {
    let mut sum = 0;
    let mut reported = None;
    for session in sessions {
        let stats = host.ok(json!({"id": 1, "op": "stats", "sessionId": session}));
        sum += stats["totalSize"].as_u64().unwrap();
        reported = Some(stats["storeTotalSize"].as_u64().expect("stats reports storeTotalSize"));
    }
    (reported.unwrap(), sum)
}

#[test]
fn the_store_running_total_stays_the_sum_of_the_sessions_and_verify_repairs_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let sessions = ["conv_t1", "conv_t2", "conv_t3"];
    let mut host = Session::start(dir, ORIGIN);
    let mut keys = Vec::new();
    for (n, session) in sessions.iter().cycle().take(9).enumerate() {
        let request = json!({"id": n, "op": "write", "sessionId": session, "data": {"n": "x".repeat(n * 10)},
            "description": "d", "customMetadata": {"k": n}});
        keys.push((session, host.ok(request)["storageKey"].as_str().unwrap().to_owned()));
    }
    host.ok(json!({"id": 20, "op": "update", "sessionId": "conv_t1", "storageKey": keys[0].1, "data": [1, 2, 3]}));
    host.ok(json!({"id": 21, "op": "append", "sessionId": "conv_t2", "storageKey": keys[1].1, "pointer": "/n", "data": "yyy"}));
    host.ok(json!({"id": 22, "op": "delete", "sessionId": "conv_t3", "storageKey": keys[2].1}));
    host.ok(json!({"id": 23, "op": "endSession", "sessionId": "conv_t2"}));
    // Another extension's sessions count in the same store.
    assert!(host.close().1.success());
    let other = "chrome-extension://otherextensionbbbbbbbbbbbbbbbbbb/";
    let mut host = Session::start(dir, other);
    host.ok(json!({"id": 1, "op": "write", "sessionId": "conv_t1", "data": "other's", "description": "d"}));
    let (total, other_sum) = store_total_and_sum(&mut host, &["conv_t1"]);
    assert!(host.close().1.success());
    let mut host = Session::start(dir, ORIGIN);
    let (same_total, sum) = store_total_and_sum(&mut host, &sessions);
    assert!(host.close().1.success());
    assert_eq!((total, same_total), (sum + other_sum, sum + other_sum));
    assert!(sum > 0 && other_sum == 9);
    let (code, out) = verify(dir, &[]);
    assert_eq!(code, 0, "{out}");

    // A wrong running total is named, and repaired from the sessions' totals.
    tamper(dir, |txn, db| db("counters").put(txn, b"store-total", &7u64.to_be_bytes()).unwrap());
    let (code, out) = verify(dir, &[]);
    assert_eq!(code, 1, "{out}");
    let problem = format!("problem: the store's running total says 7 bytes, its sessions' totals add up to {total}");
    assert!(out.contains(&problem), "{out}");
    let (code, out) = verify(dir, &["--repair"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains(&format!("repaired: set the store's running total to {total} bytes")), "{out}");

    // A store written before hosts kept the total gets it when a host next opens it, summed once.
    tamper(dir, |txn, db| assert!(db("counters").delete(txn, b"store-total").unwrap()));
    let mut host = Session::start(dir, ORIGIN);
    assert_eq!(store_total_and_sum(&mut host, &sessions).0, total);
    assert!(host.close().1.success());
    assert_eq!(verify(dir, &[]).0, 0);

    // Sessions removed as orphans take their bytes out of it too.
    let store = Store::open(&dir.join("store")).unwrap();
    let later = SystemClock.now_ms() + llm_cache_host::limits::ORPHAN_AFTER_MS + 60_000;
    assert_eq!(llm_cache_host::cleanup::maintain(&store, later).unwrap(), 3);
    assert_eq!(store.read(|txn, dbs| dbs.store_total(txn)).unwrap(), 0);
    drop(store);
    assert_eq!(verify(dir, &[]).0, 0);
}

/// A host that keeps no running total (an older version still serving after an upgrade) ends a
/// session: its items and totals go, the store's total stays. The next host to start sums the total
/// again, so a write the store-wide quota allows is accepted and `stats` shows the true total.
#[test]
fn a_running_total_an_older_host_left_wrong_is_summed_again_when_a_host_starts() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("config.json"), r#"{"storeQuotaBytes": 1000}"#).unwrap();
    let write = |id: u64, session: &str, bytes: usize| json!({"id": id, "op": "write", "sessionId": session, "data": "x".repeat(bytes - 2), "description": "d"});
    let mut host = Session::start(dir, ORIGIN);
    host.ok(write(1, "conv_kept", 400));
    host.ok(write(2, "conv_gone", 500));
    assert!(host.close().1.success());

    // The older host's endSession: every record of the session goes, and the running total with
    // it is left as it was.
    tamper(dir, |txn, db| {
        let mut prefix = session_key(ORIGIN, "conv_gone");
        prefix.push(b'_');
        let time_prefix = [session_key(ORIGIN, "conv_gone"), vec![0]].concat();
        for name in ["item-meta", "item-data", "items-by-time", "sessions"] {
            let keys: Vec<Vec<u8>> = db(name)
                .iter(txn)
                .unwrap()
                .map(|entry| entry.unwrap().0.to_vec())
                .filter(|key| {
                    key.starts_with(&prefix)
                        || key.starts_with(&time_prefix)
                        || *key == session_key(ORIGIN, "conv_gone")
                })
                .collect();
            assert!(!keys.is_empty(), "{name} holds the session");
            for key in keys {
                db(name).delete(txn, &key).unwrap();
            }
        }
    });

    let mut host = Session::start(dir, ORIGIN);
    let reply = host.call(write(3, "conv_kept", 400));
    assert_eq!(reply["ok"], true, "400 + 400 bytes fit a quota of 1000: {reply}");
    let stats = host.ok(json!({"id": 4, "op": "stats", "sessionId": "conv_kept"}));
    assert_eq!((&stats["totalSize"], &stats["storeTotalSize"]), (&json!(800), &json!(800)), "{stats}");
    assert!(host.close().1.success());
    assert!(common::logs(dir).contains("summed them again"));
    let (code, out) = verify(dir, &[]);
    assert_eq!(code, 0, "{out}");
}

/// A host sums the store's total again before its first request (main.rs), so the maintenance it
/// starts beside its requests leaves that to it and sums again only on its later, hourly runs: a
/// total an older host left wrong while this one serves is put right within the hour, and a start
/// reads every session record once, not twice.
#[tokio::test(start_paused = true)]
async fn maintenance_sums_the_total_again_on_its_hourly_runs_not_at_start() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut host = Session::start(dir, ORIGIN);
    host.ok(json!({"id": 1, "op": "write", "sessionId": "conv_kept", "data": "x".repeat(98), "description": "d"}));
    assert!(host.close().1.success());
    tamper(dir, |txn, db| db("counters").put(txn, b"store-total", &7u64.to_be_bytes()).unwrap());

    let store = std::sync::Arc::new(Store::open(&dir.join("store")).unwrap());
    let clock = std::sync::Arc::new(llm_cache_host::clock::ManualClock::new(SystemClock.now_ms()));
    let ctx = std::sync::Arc::new(llm_cache_host::cmd::Context::new(Ok(store.clone()), ORIGIN.to_owned(), clock));
    let total = || store.read(|txn, dbs| dbs.store_total(txn)).unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel();
    let (report, mut reports) = tokio::sync::mpsc::unbounded_channel();
    let period = std::time::Duration::from_secs(3600);
    let maintenance = tokio::spawn(llm_cache_host::host::maintain_every(ctx, period, stopped, Some(report)));
    assert_eq!(reports.recv().await, Some(0));
    assert_eq!(total(), 7, "the run at start leaves the total to the host's own check before it");
    tokio::time::advance(period).await;
    assert_eq!(reports.recv().await, Some(0));
    assert_eq!(total(), 100, "the hourly run sums it again");
    stop.send(()).unwrap();
    maintenance.await.unwrap();
}
