//! Seeing and clearing the cache without a browser (`sessions`, `list`, `show`, `end`, `purge`, each
//! with `--json`), and talking to the host by hand (`call`), through the real binary.

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use common::{ORIGIN, Session, binary, frame};
use llm_cache_host::store::Store;
use serde_json::{Value, json};

const OTHER: &str = "chrome-extension://otherextensionaaaaaaaaaaaaaaaaaa/";

/// Runs the binary with `args` (and `stdin`) on the data in `dir`: exit code, stdout, stderr.
fn run(dir: &Path, args: &[&str], stdin: &str) -> (i32, String, String) {
    let mut child = Command::new(binary())
        .args(args)
        .env("LLM_CACHE_DIR", dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    let text = |bytes: Vec<u8>| String::from_utf8(bytes).unwrap();
    (output.status.code().unwrap(), text(output.stdout), text(output.stderr))
}

fn json_of(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// Two extensions' sessions: conv_mail (two items) in ours, conv_mail (one) in the other's.
fn cache_with_items(dir: &Path) -> Vec<String> {
    let mut host = Session::start(dir, ORIGIN);
    let keys = [("Summary of email 1", json!({"emails": [{"subject": "Q3"}]})), ("Summary of email 2", json!("text"))]
        .iter()
        .enumerate()
        .map(|(n, (description, data))| {
            let item = host.ok(
                json!({"id": n, "op": "write", "sessionId": "conv_mail", "data": data, "description": description}),
            );
            item["storageKey"].as_str().unwrap().to_owned()
        })
        .collect();
    assert!(host.close().1.success());
    let mut other = Session::start(dir, OTHER);
    other.ok(json!({"id": 1, "op": "write", "sessionId": "conv_mail", "data": 7, "description": "theirs"}));
    assert!(other.close().1.success());
    keys
}

#[test]
fn sessions_list_show_end_purge_as_text_and_json() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    assert_eq!(run(dir, &["sessions"], "").1, format!("no cache yet in {}\n", dir.join("store").display()));
    let keys = cache_with_items(dir);

    let (code, out, _) = run(dir, &["sessions"], "");
    assert_eq!(code, 0);
    assert!(out.starts_with("origin | session | items | size | created | last access\n"), "{out}");
    assert!(out.contains(&format!("{ORIGIN} | conv_mail | 2 | 35B | ")), "{out}");
    assert!(out.contains(&format!("{OTHER} | conv_mail | 1 | 1B | ")), "{out}");
    let rows = json_of(&run(dir, &["sessions", "--json"], "").1);
    assert_eq!(rows.as_array().unwrap().len(), 2);
    assert_eq!(rows[1]["itemCount"], 2, "{rows}");

    let (_, out, _) = run(dir, &["list", "conv_mail", "--origin", ORIGIN], "");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], format!("{ORIGIN}: 2 items, 35B (key | size | age | shape | description)"));
    assert!(
        lines[1].starts_with(&format!("{} | 6B | ", keys[1]))
            && lines[1].ends_with(" | string(4) | Summary of email 2"),
        "{out}"
    );
    assert!(lines[2].ends_with(" | object{emails} | Summary of email 1"), "{out}");
    let both = json_of(&run(dir, &["list", "conv_mail", "--json"], "").1);
    assert_eq!(both.as_array().unwrap().len(), 2, "both extensions' sessions: {both}");

    let (code, out, _) =
        run(dir, &["show", "conv_mail", &keys[0], "--pointer", "/emails/0/subject", "--origin", ORIGIN], "");
    assert_eq!(code, 0, "{out}");
    assert_eq!(out.lines().nth(1), Some("\"Q3\""), "{out}");
    let shown = json_of(&run(dir, &["show", "conv_mail", &keys[0], "--json", "--origin", ORIGIN], "").1);
    assert_eq!(shown["item"]["data"], json!({"emails": [{"subject": "Q3"}]}));
    let (code, out, _) = run(dir, &["show", "conv_none", "k"], "");
    assert_eq!(code, 1);
    assert!(out.contains("no extension has a session conv_none: `llm-cache-host sessions` lists them"), "{out}");

    let (code, out, _) = run(dir, &["end", "conv_mail", "--origin", OTHER], "");
    assert_eq!((code, out.as_str()), (0, format!("ended conv_mail of {OTHER}: 1 items, 1B\n").as_str()));

    // purge asks, and does nothing without a yes.
    let (code, out, _) = run(dir, &["purge"], "n\n");
    assert_eq!(code, 1);
    assert!(out.contains("Remove all 1 sessions (2 items, 35B) from ") && out.ends_with("nothing removed\n"), "{out}");
    let (code, out, _) = run(dir, &["purge", "--yes", "--json"], "");
    assert_eq!(code, 0);
    assert_eq!(json_of(&out), json!({"sessions": 1, "deletedItems": 2, "freedBytes": 35}));
    assert_eq!(json_of(&run(dir, &["sessions", "--json"], "").1), json!([]));
}

/// Looking is not using: `list` and `show` leave a session's last access as it was, so an idle
/// session still becomes an orphan.
#[test]
fn inspecting_never_refreshes_a_session() {
    let tmp = tempfile::tempdir().unwrap();
    let keys = cache_with_items(tmp.path());
    let store = Store::open(&tmp.path().join("store")).unwrap();
    let age = |store: &Store| {
        store.read(|txn, dbs| Ok(dbs.session(txn, ORIGIN, "conv_mail")?.unwrap().last_accessed_at)).unwrap()
    };
    store
        .write(|txn, dbs| {
            let mut record = dbs.session(txn, ORIGIN, "conv_mail")?.unwrap();
            record.last_accessed_at = 1_000;
            dbs.put_session(txn, ORIGIN, "conv_mail", &record)
        })
        .unwrap();
    drop(store);
    assert_eq!(run(tmp.path(), &["list", "conv_mail"], "").0, 0);
    assert_eq!(run(tmp.path(), &["show", "conv_mail", &keys[0], "--origin", ORIGIN], "").0, 0);
    assert_eq!(age(&Store::open(&tmp.path().join("store")).unwrap()), 1_000);
}

#[test]
fn call_frames_each_line_and_prints_each_reply_on_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let big = "x".repeat(3 * 1024 * 1024);
    let input = format!(
        "{}\n\n{}\nnot json\n{}\n",
        json!({"id": 1, "op": "hello"}),
        json!({"id": 2, "op": "write", "sessionId": "conv_call", "taskId": "aaaaaaaa", "turnId": "bbbbbbbb", "data": big, "description": "3 MB"}),
        json!({"id": 3, "op": "read", "sessionId": "conv_call", "storageKey": "conv_call_aaaaaaaa_bbbbbbbb"}),
    );
    let (code, out, err) = run(tmp.path(), &["call"], &input);
    assert_eq!(code, 1, "a line wasn't JSON: {err}");
    assert_eq!(err, "line 4: not JSON (expected ident at line 1 column 2); skipped\n");
    let replies: Vec<Value> = out.lines().map(json_of).collect();
    assert_eq!(replies.len(), 3);
    assert_eq!(replies[0]["result"]["protocolVersion"], 1);
    assert_eq!(replies[1]["result"]["dataSize"], big.len() + 2);
    // A 3 MB reply comes in chunk frames; call prints it whole, on one line.
    assert_eq!(replies[2]["result"]["item"]["data"], json!(big));
    let (code, out, _) = run(
        tmp.path(),
        &["call", "--origin", "moz-extension:cache@example.org"],
        "{\"id\":1,\"op\":\"stats\",\"sessionId\":\"conv_call\"}\n",
    );
    assert_eq!(code, 0);
    assert_eq!(json_of(&out)["result"]["itemCount"], 0, "another extension sees nothing: {out}");
}

/// JSON typed straight into the host (no frame headers) gets a hint on stderr and an error frame,
/// not a silent exit.
#[test]
fn unframed_json_gets_a_hint() {
    let tmp = tempfile::tempdir().unwrap();
    let (code, out, err) = run(tmp.path(), &[ORIGIN], "{\"id\": 1, \"op\": \"hello\"}\n");
    assert_eq!(code, 0);
    assert!(
        err.contains("the input starts with text ({\"id), not a 4-byte frame length")
            && err.contains("llm-cache-host call"),
        "{err}"
    );
    let replies = common::split_frames(out.as_bytes());
    assert_eq!(replies[0]["error"]["actual"], "JSON text", "{replies:?}");
    // A real frame is unaffected. (Its reply's length header need not be UTF-8, so it is read as bytes.)
    let output = common::run_host(tmp.path(), ORIGIN, frame(br#"{"id":1,"op":"hello"}"#));
    assert_eq!(output.replies[0]["ok"], true);
}
