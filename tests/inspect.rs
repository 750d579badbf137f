//! Seeing and clearing the cache without a browser (`sessions`, `list`, `show`, `end`, `purge`, each
//! with `--json`), and talking to the host by hand (`call`), through the real binary.

mod common;

use std::io::{BufRead, Write};
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
    // Two writes may land in the same millisecond, and then `list` orders them by key, newest key first: the
    // ids are chosen so that either way email 2 comes first.
    // The first says where its text came from, and `list` shows it; the second says nothing.
    let items = [
        ("Summary of email 1", json!({"emails": [{"subject": "Q3"}]}), "task0001", json!({"origin": "email"})),
        ("Summary of email 2", json!("text"), "task0002", Value::Null),
    ];
    let keys = items
        .iter()
        .enumerate()
        .map(|(n, (description, data, task, provenance))| {
            let item = host.ok(json!({"id": n, "op": "write", "sessionId": "conv_mail", "taskId": task,
                "turnId": "turn0001", "data": data, "description": description, "provenance": provenance}));
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
    assert_eq!(lines[0], format!("{ORIGIN}: 2 items, 35B (key | size | age | shape | origin | description)"));
    assert!(
        lines[1].starts_with(&format!("{} | 6B | ", keys[1]))
            && lines[1].ends_with(" | string(4) | unknown | Summary of email 2"),
        "{out}"
    );
    assert!(lines[2].ends_with(" | object{emails} | email | Summary of email 1"), "{out}");
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

/// Whether a terminal could act on `c` or it reorders or hides text: what no output of the CLI may
/// hold raw. Written out here rather than taken from the crate, so the test checks the crate.
fn acts_on_a_terminal(c: char) -> bool {
    matches!(c, '\0'..='\u{9}' | '\u{b}'..='\u{1f}' | '\u{7f}'..='\u{9f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

fn assert_terminal_safe(command: &str, out: &str) {
    let raw: Vec<char> = out.chars().filter(|&c| acts_on_a_terminal(c)).collect();
    assert!(raw.is_empty(), "`{command}` printed {raw:?} raw:\n{}", out.escape_debug());
}

/// A description, keys of customMetadata and data, and data itself can each carry an escape sequence
/// (here: retitle the window, clear the screen, and C1's CSI, which some terminals take as ESC [),
/// DEL and bidi overrides. Every command prints them escaped, and its JSON means what was stored.
#[test]
fn client_text_reaches_the_terminal_escaped() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let hostile = "\u{1b}]0;PWNED\u{7}\u{1b}[2J\u{9b}31m\u{85}\u{7f} \u{202e}fdp.exe\u{2066}";
    let shown = r"\u001b]0;PWNED\u0007\u001b[2J\u009b31m\u0085\u007f \u202efdp.exe\u2066";
    let mut host = Session::start(dir, ORIGIN);
    let key = host.ok(json!({"id": 1, "op": "write", "sessionId": "conv_evil", "description": hostile,
        "data": {hostile: [hostile, "\u{1b}c"]}, "customMetadata": {"from": hostile}}))["storageKey"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(host.close().1.success());
    // Origins and session ids are checked on the way in; a store written otherwise is shown safely too.
    let store = Store::open(&dir.join("store")).unwrap();
    let record = llm_cache_host::store::SessionRecord { item_count: 1, ..llm_cache_host::store::SessionRecord::new(0) };
    let origin = "chrome-extension://\u{1b}]0;x\u{7}/";
    store.write(|txn, dbs| dbs.put_session(txn, origin, "conv_\u{9b}2J", &record)).unwrap();
    drop(store);

    let (_, out, _) = run(dir, &["sessions"], "");
    assert!(out.contains(r"chrome-extension://\u001b]0;x\u0007/ | conv_\u009b2J | 1 | 0B"), "{out}");
    // `verify` names the planted session, whose count has no items behind it, escaped too.
    let (code, out, _) = run(dir, &["verify"], "");
    assert_eq!(code, 1, "{out}");
    assert_terminal_safe("verify", &out);
    assert!(out.contains(r"conv_\u009b2J"), "{out}");

    // `end` last, as it removes that session.
    let commands: [&[&str]; 9] = [
        &["sessions"],
        &["sessions", "--json"],
        &["list", "conv_evil"],
        &["list", "conv_evil", "--json"],
        &["show", "conv_evil", &key],
        &["show", "conv_evil", &key, "--json"],
        &["show", "conv_evil", &key, "--pointer", &format!("/{hostile}/0")],
        &["show", "conv_evil", &key, "--pointer", &format!("/{hostile}"), "--json"],
        &["end", "conv_\u{9b}2J", "--origin", origin],
    ];
    for args in commands {
        let (code, out, err) = run(dir, args, "");
        let command = args.join(" ");
        assert_eq!(code, 0, "`{command}`: {out}{err}");
        assert_terminal_safe(&command, &out);
        if args.contains(&"--json") {
            // Escaped or not, the JSON holds the same strings.
            let expected = if args[0] == "sessions" { json!("conv_\u{9b}2J") } else { json!(hostile) };
            assert!(json_of(&out).to_string().contains(&expected.to_string()), "{command}: {out}");
        }
    }
    let (_, out, _) = run(dir, &["list", "conv_evil"], "");
    assert!(out.lines().nth(1).unwrap().ends_with(&format!(" | object{{{shown}}} | unknown | {shown}")), "{out}");
    let (_, out, _) = run(dir, &["show", "conv_evil", &key], "");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        format!("{key} | {} | object{{{shown}}} | unknown | {shown}", lines[0].split(" | ").nth(1).unwrap())
    );
    assert_eq!(
        lines[1..],
        ["{", &format!("  \"{shown}\": ["), &format!("    \"{shown}\","), "    \"\\u001bc\"", "  ]", "}"]
    );

    // `call` prints the host's replies as they came, the characters JSON leaves raw escaped.
    let request = json!({"id": 1, "op": "read", "sessionId": "conv_evil", "storageKey": key});
    let (code, out, _) = run(dir, &["call", "--origin", ORIGIN], &format!("{request}\n"));
    assert_eq!(code, 0);
    assert_terminal_safe("call", &out);
    let reply = json_of(&out);
    assert_eq!(reply["result"]["item"]["description"], hostile);
    assert_eq!(reply["result"]["item"]["customMetadata"]["from"], hostile);
    assert!(out.contains(&format!("\"description\":\"{shown}\"")), "{out}");
}

/// Writes `data` (JSON text, which serde_json may not be able to parse) as an item of conv_raw and
/// returns its key.
fn write_raw(dir: &Path, turn: &str, data: &str) -> String {
    let mut host = Session::start(dir, ORIGIN);
    let request = format!(
        r#"{{"id":1,"op":"write","sessionId":"conv_raw","taskId":"aaaaaaaa","turnId":"{turn}","description":"raw","data":{data}}}"#
    );
    host.send_bytes(&frame(request.as_bytes()));
    let reply = host.read_reply();
    assert_eq!(reply["ok"], true, "{reply}");
    assert!(host.close().1.success());
    reply["result"]["storageKey"].as_str().unwrap().to_owned()
}

/// `show` prints what the protocol stored, as stored: a lone surrogate's escape, a number longer
/// than a double holds, and nesting of any depth, with and without `--json` and `--pointer`.
#[test]
fn show_prints_data_exactly_as_stored() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let stored = r#"{"s":"\ud800","n":123456789012345678901234567890,"f":1.50e+3,"a":["\udc00x",-0.0]}"#;
    let key = write_raw(dir, "bbbbbbbb", stored);
    let show = |args: &[&str]| {
        let args: Vec<&str> = ["show", "conv_raw", &key].iter().copied().chain(args.iter().copied()).collect();
        let (code, out, err) = run(dir, &args, "");
        assert_eq!(code, 0, "{args:?}: {out}{err}");
        out
    };
    let out = show(&[]);
    assert_eq!(
        out.lines().skip(1).collect::<Vec<_>>(),
        [
            "{",
            r#"  "s": "\ud800","#,
            r#"  "n": 123456789012345678901234567890,"#,
            r#"  "f": 1.50e+3,"#,
            r#"  "a": ["#,
            r#"    "\udc00x","#,
            "    -0.0",
            "  ]",
            "}"
        ]
    );
    assert!(show(&["--json"]).contains(&format!(r#""data":{stored}}}"#)));
    assert_eq!(show(&["--pointer", "/n"]).lines().nth(1), Some("123456789012345678901234567890"));
    assert!(show(&["--pointer", "/n", "--json"]).contains(r#""data":123456789012345678901234567890}"#));
    assert_eq!(show(&["--pointer", "/s"]).lines().nth(1), Some(r#""\ud800""#));
    assert!(show(&["--pointer", "/a", "--json"]).contains(r#""data":["\udc00x",-0.0]}"#));

    // A million levels deep. The text layout indents no further than 20 levels, so it stays in
    // proportion to the data (two lines per level); it is read as it comes, not held.
    let depth = 1_000_000;
    let deep = format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
    let key = write_raw(dir, "cccccccc", &deep);
    let (code, out, _) = run(dir, &["show", "conv_raw", &key, "--json"], "");
    assert_eq!(code, 0);
    assert!(out.contains(&format!(r#""data":{deep}}}"#)));
    let mut child = Command::new(binary())
        .args(["show", "conv_raw", &key])
        .env("LLM_CACHE_DIR", dir)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines().map(Result::unwrap);
    assert!(lines.next().unwrap().starts_with(&format!("{key} | 1.9MB | ")));
    let mut count = 0;
    for (n, line) in lines.enumerate() {
        let indent = 2 * n.min(2 * depth - n).min(20);
        let token = match n.cmp(&depth) {
            std::cmp::Ordering::Less => "[",
            std::cmp::Ordering::Equal => "1",
            std::cmp::Ordering::Greater => "]",
        };
        assert!(line.len() == indent + 1 && line.ends_with(token), "line {n}: {line:?}");
        count += 1;
    }
    assert!(child.wait().unwrap().success());
    assert_eq!(count, 2 * depth + 1);
    // A pointer 60,000 levels down (a longer one would not fit in one command-line argument).
    let pointer = "/0".repeat(60_000);
    let part = &deep[60_000..deep.len() - 60_000];
    let (code, out, _) = run(dir, &["show", "conv_raw", &key, "--pointer", &pointer, "--json"], "");
    assert_eq!(code, 0);
    assert!(out.contains(&format!(r#""data":{part}}}"#)));
    let (code, out, _) = run(dir, &["show", "conv_raw", &key, "--pointer", &pointer], "");
    assert_eq!((code, out.lines().count()), (0, 1 + 2 * (depth - 60_000) + 1));
}

/// In a terminal `show` prints a screenful or so of a large item and says how to see the rest; a
/// pipe gets all of it.
#[test]
#[cfg(target_os = "linux")]
fn show_in_a_terminal_stops_after_a_screenful() {
    use std::io::Read;
    use std::os::fd::{FromRawFd, OwnedFd};

    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut host = Session::start(dir, ORIGIN);
    let data: Vec<String> = (0..5000).map(|n| format!("line {n}")).collect();
    let key = host.ok(json!({"id": 1, "op": "write", "sessionId": "conv_big", "description": "5000 lines", "data": data}))
        ["storageKey"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(host.close().1.success());
    assert_eq!(run(dir, &["show", "conv_big", &key], "").1.lines().count(), 1 + 5002);

    let (mut leader, mut follower) = (0, 0);
    // SAFETY: openpty writes two new file descriptors into the two integers, which are then owned here.
    let opened =
        unsafe { libc::openpty(&mut leader, &mut follower, std::ptr::null_mut(), std::ptr::null(), std::ptr::null()) };
    assert_eq!(opened, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both are open descriptors that nothing else owns.
    let (leader, follower) = unsafe { (std::fs::File::from_raw_fd(leader), OwnedFd::from_raw_fd(follower)) };
    // The Command, and with it the only other copy of the terminal's follower side, ends with the statement.
    let mut child = Command::new(binary())
        .args(["show", "conv_big", &key])
        .env("LLM_CACHE_DIR", dir)
        .stdout(Stdio::from(follower))
        .spawn()
        .unwrap();
    let mut bytes = Vec::new();
    // Linux answers EIO once the child has exited and the terminal has no other user.
    let _ = (&leader).read_to_end(&mut bytes);
    assert!(child.wait().unwrap().success());
    let out = String::from_utf8(bytes).unwrap().replace("\r\n", "\n");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 1 + 1000 + 1, "{out}");
    assert_eq!(lines[1000], "  \"line 998\",");
    assert_eq!(
        lines[1001],
        "… 4002 more lines (58.6KB) not shown: pipe `show` to `less` or a file for all of it, or show a part with --pointer"
    );
}

/// `call` passes requests and replies through as written: data of any depth, lone surrogates and
/// long numbers go in and come back out the same.
#[test]
fn call_passes_any_stored_data_through() {
    let tmp = tempfile::tempdir().unwrap();
    let depth = 100_000;
    let data = format!(
        r#"{{"s":"\ud800","n":123456789012345678901234567890,"d":{}0{}}}"#,
        "[".repeat(depth),
        "]".repeat(depth)
    );
    let write = format!(
        r#"{{"id":1,"op":"write","sessionId":"conv_call","taskId":"aaaaaaaa","turnId":"bbbbbbbb","description":"x","data":{data}}}"#
    );
    let read = r#"{"id":2,"op":"read","sessionId":"conv_call","storageKey":"conv_call_aaaaaaaa_bbbbbbbb"}"#;
    let (code, out, err) = run(tmp.path(), &["call"], &format!("{write}\n{read}\n"));
    assert_eq!(code, 0, "{err}");
    let replies: Vec<&str> = out.lines().collect();
    assert_eq!(replies.len(), 2, "{err}");
    assert!(replies[0].contains(r#""ok":true"#), "{}", replies[0]);
    assert!(replies[1].ends_with(&format!(r#""data":{data}}}}}}}"#)), "{}", &replies[1][..200]);
}
