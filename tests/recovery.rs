//! What happens around the requests: crashes, cleanups cut short, orphans, corrupted records, a store
//! that can't open, other extensions, a closed port, a full memory map and the hourly maintenance.
//!
//! Most tests drive the real binary over pipes; some reach into the store in-process to set up what a
//! crash or a disk error would leave behind. heed opens an environment only once per process, so every
//! in-process handle is dropped before the next one is opened.

mod common;

use std::io::Write;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::{ORIGIN, Session, host_command, request_frame};
use heed::CommitOrAbort;
use heed::types::Bytes;
use llm_cache_host::clock::ManualClock;
use llm_cache_host::cmd::Context;
use llm_cache_host::store::{Store, item_key};
use llm_cache_host::{cleanup, host};
use serde_json::{Value, json};

/// Another Chrome extension.
const OTHER_ORIGIN: &str = "chrome-extension://otherextensionbbbbbbbbbbbbbbbbb/";

/// How Firefox starts a host: the manifest's path and the add-on's id.
const FIREFOX_LAUNCH: [&str; 2] =
    ["/home/u/.mozilla/native-messaging-hosts/com.browserx.llm_cache.json", "cache@example.org"];

const HOUR_MS: u64 = 60 * 60 * 1000;

/// A `write` request with explicit ids.
fn write_request(id: impl Into<Value>, session: &str, task: &str, turn: &str, data: &Value) -> Value {
    json!({"id": id.into(), "op": "write", "sessionId": session, "taskId": task, "turnId": turn, "data": data,
           "description": format!("item {task}/{turn}")})
}

/// Writes an item and returns its storage key.
fn write(host: &mut Session, session: &str, task: &str, turn: &str, data: &Value) -> String {
    let result = host.ok(write_request(0, session, task, turn, data));
    assert_eq!(result["dataSize"], data.to_string().len(), "{result}");
    result["storageKey"].as_str().unwrap().to_owned()
}

/// A request naming a session (and an item, if `key` is not empty); returns the whole reply.
fn call(host: &mut Session, op: &str, session: &str, key: &str) -> Value {
    let mut request = json!({"id": op, "op": op, "sessionId": session});
    if !key.is_empty() {
        request["storageKey"] = json!(key);
    }
    host.call(request)
}

/// The data of an item, which must be readable.
fn read_data(host: &mut Session, session: &str, key: &str) -> Value {
    let reply = call(host, "read", session, key);
    assert_eq!(reply["ok"], true, "reading {key}: {reply}");
    reply["result"]["item"]["data"].clone()
}

/// The error code of a reply, which must be an error.
fn error_code(reply: &Value) -> &str {
    assert_eq!(reply["ok"], false, "expected an error: {reply}");
    reply["error"]["code"].as_str().unwrap()
}

/// Asserts that a session holds nothing, as `stats` and `list` see it.
fn assert_empty(host: &mut Session, session: &str) {
    let stats = host.ok(json!({"id": 0, "op": "stats", "sessionId": session}));
    assert_eq!((&stats["totalSize"], &stats["itemCount"]), (&json!(0), &json!(0)), "{stats}");
    let list = host.ok(json!({"id": 0, "op": "list", "sessionId": session}));
    assert_eq!((&list["items"], &list["itemCount"], &list["totalSize"]), (&json!([]), &json!(0), &json!(0)));
}

/// Starts a host and ends its input at once: it runs its start-up maintenance and exits.
fn start_and_stop_host(dir: &Path) {
    let (rest, status) = Session::start(dir, ORIGIN).close();
    assert!(rest.is_empty() && status.success(), "{status}");
}

/// Opens the store in-process, as the host does.
fn open_store(dir: &Path) -> Store {
    Store::open(&dir.join("store")).expect("the store opens")
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64
}

/// Overwrites one record of an item in the LMDB database `db` with `bytes`, bypassing the store, as a
/// disk error or a foreign writer would.
fn overwrite_record(dir: &Path, db: &str, storage_key: &str, bytes: &[u8]) {
    // SAFETY: no other handle on this environment is open in this process, and no host is running.
    let env = unsafe {
        heed::EnvOpenOptions::new().read_txn_without_tls().map_size(1 << 28).max_dbs(6).open(dir.join("store"))
    }
    .unwrap();
    let records = env
        .open_databases_and_commit(env.read_txn().unwrap(), |opener, rtxn| -> heed::Result<_> {
            let records = opener.open_database::<Bytes, Bytes>(rtxn, Some(db))?.expect("the database exists");
            Ok(CommitOrAbort::<_, ()>::Commit(records))
        })
        .unwrap()
        .unwrap_commit();
    let mut wtxn = env.write_txn().unwrap();
    let key = item_key(ORIGIN, storage_key);
    assert!(records.get(&wtxn, &key).unwrap().is_some(), "no {db} record for {storage_key}");
    records.put(&mut wtxn, &key, bytes).unwrap();
    wtxn.commit().unwrap();
}

/// Writes pipelined and a host killed after half of them were acknowledged: every acknowledged write
/// survives with its data and provenance, nothing is half-written, and the session's totals equal its
/// items.
#[test]
fn acknowledged_writes_survive_a_kill() {
    const SESSION: &str = "conv_crash";
    let tmp = tempfile::tempdir().unwrap();
    let data = |n: usize| json!({"n": n, "text": format!("note number {n}")});
    let provenance = |n: usize| json!({"origin": "web", "source": {"url": format!("https://example.com/{n}")}});
    let mut host = Session::start(tmp.path(), ORIGIN);
    for n in 0..200 {
        let mut request = write_request(n, SESSION, "crash000", &format!("t{n:07}"), &data(n));
        request["provenance"] = provenance(n);
        host.send(&request);
    }
    let acks: Vec<(usize, String)> = (0..100)
        .map(|_| {
            let reply = host.read_reply();
            assert_eq!(reply["ok"], true, "{reply}");
            (reply["id"].as_u64().unwrap() as usize, reply["result"]["storageKey"].as_str().unwrap().to_owned())
        })
        .collect();
    host.kill();

    let mut host = Session::start(tmp.path(), ORIGIN);
    for (n, key) in &acks {
        assert_eq!(read_data(&mut host, SESSION, key), data(*n), "{key}");
    }
    let items = host.assert_totals_match_items(SESSION);
    assert!(items.len() >= acks.len(), "{} items for {} acknowledged writes", items.len(), acks.len());
    for item in &items {
        let n: usize = item["turnId"].as_str().unwrap()[1..].parse().unwrap();
        assert_eq!(item["dataSize"], data(n).to_string().len(), "{item}");
        assert_eq!(item["provenance"], provenance(n), "{item}");
    }
    assert!(host.close().1.success());
}

/// A session cleanup that began (its record is committed) but never finished, as a host killed inside
/// `endSession` leaves it, is finished by the next host to start: the session is empty, no unfinished
/// cleanup is left, and another session's items are untouched.
#[test]
fn an_interrupted_end_session_finishes_at_the_next_start() {
    const ENDING: &str = "conv_ending";
    const BYSTANDER: &str = "conv_bystander";
    let tmp = tempfile::tempdir().unwrap();
    let mut host = Session::start(tmp.path(), ORIGIN);
    for n in 0..3 {
        write(&mut host, ENDING, "task0000", &format!("turn000{n}"), &json!({"ending": n}));
    }
    let kept: Vec<String> =
        (0..2).map(|n| write(&mut host, BYSTANDER, "task0000", &format!("turn000{n}"), &json!({"kept": n}))).collect();
    assert!(host.close().1.success());

    let store = open_store(tmp.path());
    store
        .write(|txn, dbs| {
            let seq = dbs.last_seq(txn)?;
            dbs.mark_ending(txn, ORIGIN, ENDING, seq)
        })
        .unwrap();
    drop(store);

    start_and_stop_host(tmp.path());

    let store = open_store(tmp.path());
    assert_eq!(store.read(|txn, dbs| dbs.unfinished_cleanups(txn)).unwrap(), vec![]);
    drop(store);
    let mut host = Session::start(tmp.path(), ORIGIN);
    assert_empty(&mut host, ENDING);
    assert_eq!(host.assert_totals_match_items(BYSTANDER).len(), 2);
    for (n, key) in kept.iter().enumerate() {
        assert_eq!(read_data(&mut host, BYSTANDER, key), json!({"kept": n}));
    }
    assert!(host.close().1.success());
}

/// An interrupted cleanup covers exactly the writes made before it began: an item written afterwards
/// (here by the very host that finishes the cleanup) survives it, and the totals count only that item.
#[test]
fn an_interrupted_cleanup_spares_later_writes() {
    const SESSION: &str = "conv_rewritten";
    let tmp = tempfile::tempdir().unwrap();
    let mut host = Session::start(tmp.path(), ORIGIN);
    let old: Vec<String> =
        (0..3).map(|n| write(&mut host, SESSION, "task0000", &format!("old0000{n}"), &json!({"old": n}))).collect();
    assert!(host.close().1.success());

    let store = open_store(tmp.path());
    store.write(|txn, dbs| dbs.mark_ending(txn, ORIGIN, SESSION, dbs.last_seq(txn)?)).unwrap();
    drop(store);

    let mut host = Session::start(tmp.path(), ORIGIN);
    let new = write(&mut host, SESSION, "task0000", "new00000", &json!("written after the cleanup began"));
    assert!(host.close().1.success());

    let mut host = Session::start(tmp.path(), ORIGIN);
    let items = host.assert_totals_match_items(SESSION);
    assert_eq!(items.iter().map(|item| &item["storageKey"]).collect::<Vec<_>>(), [&json!(new)]);
    for key in &old {
        assert_eq!(error_code(&call(&mut host, "read", SESSION, key)), "ItemNotFoundError");
    }
    assert!(host.close().1.success());
}

/// From the commit that records a cleanup, the items it covers are gone for every
/// reader, before any of them is deleted: read, list (page and totals, with and without a filter),
/// stats, search, update, append and delete agree. A write meanwhile (even under a covered key) is
/// seen alone, and survives the cleanup with totals equal to it.
#[test]
fn a_session_being_ended_is_never_seen_half_ended() {
    const SESSION: &str = "conv_halfended";
    let tmp = tempfile::tempdir().unwrap();
    let mut host = Session::start(tmp.path(), ORIGIN);
    let old: Vec<String> = (0..5)
        .map(|n| {
            write(&mut host, SESSION, "task0000", &format!("old0000{n}"), &json!({"text": format!("invoice {n}")}))
        })
        .collect();
    assert!(host.close().1.success());

    let clock = Arc::new(ManualClock::new(now_ms()));
    let ctx = context(open_store(tmp.path()), &clock);
    let store = ctx.store().unwrap();
    assert!(cleanup::begin(store, ORIGIN, SESSION).unwrap());

    let gone = |ctx: &Context| {
        let list = handle(ctx, json!({"id": 1, "op": "list", "sessionId": SESSION}));
        assert_eq!(list["result"], json!({"items": [], "nextCursor": null, "itemCount": 0, "totalSize": 0}), "{list}");
        let filtered =
            handle(ctx, json!({"id": 2, "op": "list", "sessionId": SESSION, "taskId": "task0000", "query": "invoice"}));
        assert_eq!(filtered["result"]["itemCount"], 0, "{filtered}");
        let stats = handle(ctx, json!({"id": 3, "op": "stats", "sessionId": SESSION}));
        assert_eq!((stats["result"]["itemCount"].clone(), stats["result"]["totalSize"].clone()), (json!(0), json!(0)));
        let search = handle(ctx, json!({"id": 4, "op": "search", "sessionId": SESSION, "query": "invoice"}));
        assert_eq!(search["result"]["matches"], json!([]), "{search}");
        for op in ["read", "delete"] {
            let reply = handle(ctx, json!({"id": 5, "op": op, "sessionId": SESSION, "storageKey": old[0]}));
            assert_eq!(error_code(&reply), "ItemNotFoundError", "{op}: {reply}");
        }
        let update = handle(
            ctx,
            json!({"id": 6, "op": "update", "sessionId": SESSION, "storageKey": old[1], "description": "x"}),
        );
        assert_eq!(error_code(&update), "ItemNotFoundError");
        let append =
            handle(ctx, json!({"id": 7, "op": "append", "sessionId": SESSION, "storageKey": old[1], "data": "x"}));
        assert_eq!(error_code(&append), "ItemNotFoundError");
    };
    gone(&ctx);

    // Written while the cleanup is pending: a new key, and one that a covered item has.
    let fresh = handle(&ctx, write_request(8, SESSION, "task0000", "fresh000", &json!("after")));
    assert_eq!(fresh["ok"], true, "{fresh}");
    let reused = handle(&ctx, write_request(9, SESSION, "task0000", "old00002", &json!("again")));
    assert_eq!(reused["ok"], true, "{reused}");
    let list = handle(&ctx, json!({"id": 10, "op": "list", "sessionId": SESSION}));
    let keys: Vec<&str> =
        list["result"]["items"].as_array().unwrap().iter().map(|i| i["storageKey"].as_str().unwrap()).collect();
    assert_eq!(keys, [old[2].as_str(), fresh["result"]["storageKey"].as_str().unwrap()], "{list}");
    assert_eq!(list["result"]["itemCount"], 2);

    cleanup::finish(store, ORIGIN, SESSION).unwrap();
    drop(ctx);
    let mut host = Session::start(tmp.path(), ORIGIN);
    let items = host.assert_totals_match_items(SESSION);
    assert_eq!(items.len(), 2);
    assert_eq!(read_data(&mut host, SESSION, &old[2]), json!("again"));
    assert!(host.close().1.success());
}

/// A session idle for 25 hours is removed when a host starts; a session used just now is kept whole.
#[test]
fn orphaned_sessions_are_removed_at_start() {
    const OLD: &str = "conv_orphan";
    const FRESH: &str = "conv_fresh";
    let tmp = tempfile::tempdir().unwrap();
    let mut host = Session::start(tmp.path(), ORIGIN);
    let orphaned = write(&mut host, OLD, "task0000", "turn0000", &json!("old"));
    write(&mut host, OLD, "task0000", "turn0001", &json!("old too"));
    let fresh = write(&mut host, FRESH, "task0000", "turn0000", &json!("fresh"));
    assert!(host.close().1.success());

    let store = open_store(tmp.path());
    store
        .write(|txn, dbs| {
            let mut record = dbs.session(txn, ORIGIN, OLD)?.expect("the old session's record");
            record.last_accessed_at = now_ms() - 25 * HOUR_MS;
            dbs.put_session(txn, ORIGIN, OLD, &record)
        })
        .unwrap();
    drop(store);

    start_and_stop_host(tmp.path());

    let mut host = Session::start(tmp.path(), ORIGIN);
    assert_empty(&mut host, OLD);
    assert_eq!(error_code(&call(&mut host, "read", OLD, &orphaned)), "ItemNotFoundError");
    assert_eq!(host.assert_totals_match_items(FRESH).len(), 1);
    assert_eq!(read_data(&mut host, FRESH, &fresh), json!("fresh"));
    assert!(host.close().1.success());
}

/// An orphan sweep stopped right after the transaction that begins a session's removal (the host was
/// killed before its first batch) leaves a sound store: `verify` passes, naming the cleanup as pending,
/// `sessions` lists nothing, and the store's total holds none of the session's bytes.
#[test]
fn an_orphan_sweep_stopped_after_it_began_leaves_no_problem() {
    const OLD: &str = "conv_swept";
    let tmp = tempfile::tempdir().unwrap();
    let mut host = Session::start(tmp.path(), ORIGIN);
    for n in 0..3 {
        write(&mut host, OLD, "task0000", &format!("turn000{n}"), &json!({"old": n}));
    }
    assert!(host.close().1.success());

    let store = open_store(tmp.path());
    let idle_since = now_ms() - 25 * HOUR_MS;
    store
        .write(|txn, dbs| {
            let mut record = dbs.session(txn, ORIGIN, OLD)?.expect("the old session's record");
            record.last_accessed_at = idle_since;
            dbs.put_session(txn, ORIGIN, OLD, &record)
        })
        .unwrap();
    // The sweep's first transaction, and nothing after it.
    assert!(cleanup::begin_if_idle(&store, ORIGIN, OLD, idle_since).unwrap());
    assert_eq!(store.read(|txn, dbs| dbs.store_total(txn)).unwrap(), 0);
    drop(store);

    let run = |args: &[&str]| {
        let output = std::process::Command::new(common::binary())
            .args(args)
            .env("LLM_CACHE_DIR", tmp.path())
            .env_remove("LLM_CACHE_LOG")
            .output()
            .unwrap();
        (output.status.code(), String::from_utf8(output.stdout).unwrap())
    };
    let (code, out) = run(&["verify"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        !out.contains("problem") && out.contains(&format!("the cleanup of session {OLD} of {ORIGIN} has begun")),
        "{out}"
    );
    let (code, out) = run(&["sessions"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.starts_with("no sessions\n"), "{out}");
}

/// An item whose metadata record is garbage: `read` says CorruptedDataError and what to do, `list`
/// still shows it (with a placeholder description) so it can be deleted, and deleting it frees its
/// bytes so the totals match the items again.
#[test]
fn an_item_with_corrupted_metadata_can_be_seen_and_deleted() {
    const SESSION: &str = "conv_corrupted-meta";
    let tmp = tempfile::tempdir().unwrap();
    let mut host = Session::start(tmp.path(), ORIGIN);
    let broken = write(&mut host, SESSION, "task0000", "broken00", &json!({"emails": ["a", "b"]}));
    let healthy = write(&mut host, SESSION, "task0000", "healthy0", &json!({"fine": true}));
    assert!(host.close().1.success());

    overwrite_record(tmp.path(), "item-meta", &broken, b"\x00not json{{");

    let mut host = Session::start(tmp.path(), ORIGIN);
    let reply = call(&mut host, "read", SESSION, &broken);
    assert_eq!(error_code(&reply), "CorruptedDataError");
    assert!(!reply["error"]["suggestion"].as_str().unwrap().is_empty(), "{reply}");

    let items = host.list_all(SESSION);
    let listed = items.iter().find(|item| item["storageKey"] == broken.as_str()).expect("the corrupted item is listed");
    assert!(listed["description"].as_str().unwrap().contains("corrupted"), "{listed}");
    assert_eq!((&listed["sessionId"], &listed["turnId"]), (&json!(SESSION), &json!("broken00")));

    let deleted = host.ok(json!({"id": 0, "op": "delete", "sessionId": SESSION, "storageKey": broken}));
    assert_eq!(deleted["freedBytes"], json!({"emails": ["a", "b"]}).to_string().len(), "{deleted}");
    let items = host.assert_totals_match_items(SESSION);
    assert_eq!(items.iter().map(|item| &item["storageKey"]).collect::<Vec<_>>(), [&json!(healthy)]);
    assert_eq!(error_code(&call(&mut host, "read", SESSION, &broken)), "ItemNotFoundError");
    assert!(host.close().1.success());
}

/// An item whose metadata record was written before items carried provenance (nor a shape) reads as
/// unknown on every path, and an update or an endorse then gives it one.
#[test]
fn an_item_stored_without_provenance_reads_as_unknown() {
    const SESSION: &str = "conv_older";
    let tmp = tempfile::tempdir().unwrap();
    let mut host = Session::start(tmp.path(), ORIGIN);
    let key = write(&mut host, SESSION, "task0000", "older000", &json!(["an older note"]));
    let written = host.list_all(SESSION)[0].clone();
    assert!(host.close().1.success());

    // The record as hosts before provenance (and before shapes) wrote it.
    let older = json!({"description": "an older note", "timestamp": written["timestamp"], "dataSize": 17, "seq": 1});
    overwrite_record(tmp.path(), "item-meta", &key, older.to_string().as_bytes());

    let mut host = Session::start(tmp.path(), ORIGIN);
    let unknown = json!({"origin": "unknown"});
    let read = call(&mut host, "read", SESSION, &key);
    assert_eq!((&read["result"]["item"]["provenance"], &read["result"]["item"]["shape"]), (&unknown, &json!("")));
    assert_eq!(host.list_all(SESSION)[0]["provenance"], unknown);
    let found = host.ok(json!({"id": 0, "op": "search", "sessionId": SESSION, "query": "older"}));
    assert_eq!(found["matches"][0]["provenance"], unknown, "{found}");
    let updated = host.ok(json!({"id": 0, "op": "update", "sessionId": SESSION, "storageKey": key,
        "description": "an older note, from a page", "provenance": {"origin": "web"}}));
    assert_eq!(updated["provenance"], json!({"origin": "unknown", "upstream": ["web"]}));
    let endorsed =
        host.ok(json!({"id": 0, "op": "endorse", "sessionId": SESSION, "storageKey": key, "reason": "read it"}));
    assert_eq!(endorsed["provenance"]["endorsed"]["reason"], "read it", "{endorsed}");
    assert_eq!(endorsed["timestamp"], updated["timestamp"], "an endorsement is no new version");
    host.assert_totals_match_items(SESSION);
    assert!(host.close().1.success());
}

/// Items whose data record is not UTF-8, or not JSON (cut short), read as CorruptedDataError; the rest
/// of the session reads fine; deleting them frees their recorded dataSize, so the totals match again.
#[test]
fn items_with_corrupted_data_read_as_corrupted_and_can_be_deleted() {
    const SESSION: &str = "conv_corrupted-data";
    let tmp = tempfile::tempdir().unwrap();
    let mut host = Session::start(tmp.path(), ORIGIN);
    let data = json!({"summary": "a long enough summary of an email thread"});
    let not_utf8 = write(&mut host, SESSION, "task0000", "notutf80", &data);
    let cut_short = write(&mut host, SESSION, "task0000", "cutshort", &data);
    let healthy = write(&mut host, SESSION, "task0000", "healthy0", &json!([1, 2, 3]));
    assert!(host.close().1.success());

    let text = data.to_string();
    overwrite_record(tmp.path(), "item-data", &not_utf8, &[0xff, 0xfe, 0xfd]);
    overwrite_record(tmp.path(), "item-data", &cut_short, &text.as_bytes()[..text.len() / 2]);

    let mut host = Session::start(tmp.path(), ORIGIN);
    for key in [&not_utf8, &cut_short] {
        let reply = call(&mut host, "read", SESSION, key);
        assert_eq!(error_code(&reply), "CorruptedDataError", "{key}");
        assert!(!reply["error"]["suggestion"].as_str().unwrap().is_empty(), "{reply}");
    }
    assert_eq!(read_data(&mut host, SESSION, &healthy), json!([1, 2, 3]));
    assert_eq!(host.assert_totals_match_items(SESSION).len(), 3);

    for key in [&not_utf8, &cut_short] {
        let deleted = host.ok(json!({"id": 0, "op": "delete", "sessionId": SESSION, "storageKey": key}));
        assert_eq!(deleted["freedBytes"], text.len(), "freedBytes is the item's dataSize: {deleted}");
    }
    assert_eq!(host.assert_totals_match_items(SESSION).len(), 1);
    assert!(host.close().1.success());
}

/// A data directory that can't be created (below a regular file; this holds for root too): `hello`
/// still answers, every store op answers StorageUnavailableError saying why, and the host exits 0 at
/// the end of its input.
#[test]
fn an_unusable_data_dir_gives_storage_unavailable() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("a-file");
    std::fs::write(&file, "not a directory").unwrap();
    let data_dir = file.join("data");
    let why = std::fs::create_dir(&data_dir).unwrap_err().to_string();

    let mut host = Session::start(&data_dir, ORIGIN);
    let hello = host.ok(json!({"id": 1, "op": "hello"}));
    assert_eq!(hello["protocolVersion"], 1);
    let key = "conv_nostore_task0000_turn0000";
    let requests = [
        write_request(2, "conv_nostore", "task0000", "turn0000", &json!("x")),
        json!({"id": 3, "op": "read", "sessionId": "conv_nostore", "storageKey": key}),
        json!({"id": 4, "op": "list", "sessionId": "conv_nostore"}),
        json!({"id": 5, "op": "stats", "sessionId": "conv_nostore"}),
    ];
    for request in requests {
        let reply = host.call(request.clone());
        assert_eq!(reply["id"], request["id"]);
        assert_eq!(error_code(&reply), "StorageUnavailableError", "{reply}");
        let message = reply["error"]["message"].as_str().unwrap();
        assert!(message.contains(&why) && message.contains(&*data_dir.to_string_lossy()), "{message}");
        assert!(!reply["error"]["suggestion"].as_str().unwrap().is_empty(), "{reply}");
    }
    let (rest, status) = host.close();
    assert!(rest.is_empty());
    assert_eq!(status.code(), Some(0));
}

/// Another extension (Chrome, or Firefox's `<manifest> <addon id>` launch) using the same sessionId
/// sees nothing of the first one's item: not found (exactly as a key never written), an empty list,
/// zero stats; its own item under the same key and its endSession leave the first one's item alone.
#[test]
fn origins_never_see_each_others_items() {
    const SESSION: &str = "conv_shared-name";
    let tmp = tempfile::tempdir().unwrap();
    let mut owner = Session::start(tmp.path(), ORIGIN);
    let key = write(&mut owner, SESSION, "task0000", "turn0000", &json!("the owner's email"));
    let never_written = format!("{SESSION}_task0000_never000");

    let others = [Session::start(tmp.path(), OTHER_ORIGIN), Session::start_with_args(tmp.path(), &FIREFOX_LAUNCH)];
    for (n, mut other) in others.into_iter().enumerate() {
        let reply = call(&mut other, "read", SESSION, &key);
        assert_eq!(error_code(&reply), "ItemNotFoundError");
        let unknown = call(&mut other, "read", SESSION, &never_written);
        assert_eq!(reply["error"].to_string(), unknown["error"].to_string().replace(&never_written, &key));
        assert_eq!(error_code(&call(&mut other, "delete", SESSION, &key)), "ItemNotFoundError");
        assert_empty(&mut other, SESSION);

        let data = json!(format!("other extension {n}"));
        assert_eq!(write(&mut other, SESSION, "task0000", "turn0000", &data), key);
        assert_eq!(read_data(&mut other, SESSION, &key), data);
        let ended = other.ok(json!({"id": 0, "op": "endSession", "sessionId": SESSION}));
        assert_eq!(ended["deletedItems"], 1, "{ended}");
        assert!(other.close().1.success());

        assert_eq!(read_data(&mut owner, SESSION, &key), json!("the owner's email"));
        assert_eq!(owner.assert_totals_match_items(SESSION).len(), 1);
    }
    assert!(owner.close().1.success());
}

/// Chrome closes a port by closing both pipes; a host whose reply hits the closed stdout exits 0.
#[test]
fn a_closed_stdout_ends_the_host_cleanly() {
    let tmp = tempfile::tempdir().unwrap();
    let mut child = host_command(tmp.path(), ORIGIN).stderr(Stdio::null()).spawn().expect("start the host");
    drop(child.stdout.take());
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&request_frame(&json!({"id": 1, "op": "hello"}))).unwrap();
    drop(stdin);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{status}");
}

/// Sends one request to an in-process host and returns its reply, reassembled from its frames.
fn handle(ctx: &Context, request: Value) -> Value {
    let frames: Vec<Value> = host::handle(ctx, request.to_string().as_bytes())
        .iter()
        .map(|frame| {
            assert!(frame.len() <= common::MAX_REPLY_FRAME);
            serde_json::from_str(frame).unwrap()
        })
        .collect();
    let mut replies = common::reassemble(frames);
    assert_eq!(replies.len(), 1);
    replies.pop().unwrap()
}

/// A context over `store` for [`ORIGIN`] at a time the test sets.
fn context(store: Store, clock: &Arc<ManualClock>) -> Arc<Context> {
    Arc::new(Context::new(Ok(Arc::new(store)), ORIGIN.to_owned(), clock.clone()))
}

/// A store opened with a 1 MiB map takes 8 MB of items: the map grows as it fills, every write
/// succeeds and every item reads back whole.
#[test]
fn the_map_grows_when_full() {
    const SESSION: &str = "conv_growing";
    let tmp = tempfile::tempdir().unwrap();
    let store_dir = tmp.path().join("store");
    let store = Store::open_with_map_size(&store_dir, 1 << 20).unwrap();
    let ctx = context(store, &Arc::new(ManualClock::new(1_700_000_000_000)));
    let data = |n: usize| json!(format!("{n}:{}", "m".repeat(1_000_000)));
    for n in 0..8 {
        let reply = handle(&ctx, write_request(n, SESSION, "grow0000", &format!("turn000{n}"), &data(n)));
        assert_eq!(reply["ok"], true, "write {n}: {}", reply["error"]);
    }
    for n in 0..8 {
        let key = format!("{SESSION}_grow0000_turn000{n}");
        let reply = handle(&ctx, json!({"id": n, "op": "read", "sessionId": SESSION, "storageKey": key}));
        assert_eq!(reply["ok"], true, "read {n}: {}", reply["error"]);
        assert!(reply["result"]["item"]["data"] == data(n), "item {n} reads back different");
    }
    let stats = handle(&ctx, json!({"id": 0, "op": "stats", "sessionId": SESSION}));
    assert_eq!(stats["result"]["itemCount"], 8);
    assert!(std::fs::metadata(store_dir.join("data.mdb")).unwrap().len() > 8_000_000);
}

/// The maintenance a host runs beside its requests: once at start (nothing is 24 hours idle yet), then
/// every hour; an hour later, with the clock 25 hours on, it removes the idle session. Stop ends it.
#[tokio::test(start_paused = true)]
async fn maintenance_runs_at_start_and_every_hour() {
    const SESSION: &str = "conv_hourly";
    let tmp = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let ctx = context(Store::open(&tmp.path().join("store")).unwrap(), &clock);
    let written = handle(&ctx, write_request(1, SESSION, "task0000", "turn0000", &json!("idle soon")));
    assert_eq!(written["ok"], true, "{written}");

    let (stop, stopped) = tokio::sync::oneshot::channel();
    let (report, mut reports) = tokio::sync::mpsc::unbounded_channel();
    let maintenance = tokio::spawn(host::maintain_every(ctx.clone(), Duration::from_secs(3600), stopped, Some(report)));
    assert_eq!(reports.recv().await, Some(0), "the start-up run removes nothing");
    let stats = handle(&ctx, json!({"id": 2, "op": "stats", "sessionId": SESSION}));
    assert_eq!(stats["result"]["itemCount"], 1, "{stats}");

    clock.advance(25 * HOUR_MS);
    tokio::time::advance(Duration::from_secs(3600)).await;
    assert_eq!(reports.recv().await, Some(1), "the hourly run removes the idle session");
    let stats = handle(&ctx, json!({"id": 3, "op": "stats", "sessionId": SESSION}));
    assert_eq!((&stats["result"]["itemCount"], &stats["result"]["totalSize"]), (&json!(0), &json!(0)), "{stats}");

    stop.send(()).unwrap();
    maintenance.await.unwrap();
    assert!(reports.try_recv().is_err(), "no run after the stop");
}
