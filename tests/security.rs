//! Nobody reads what isn't theirs, and nobody writes what isn't the host's: owner-only files whatever
//! umask the browser had, logs that hold no data or descriptions and can't be forged, and launch
//! arguments or environments that would mix origins refused with a message on stderr.

#![cfg(unix)]

mod common;

use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};

use common::{ORIGIN, Session, binary, frame, logs, request_frame, split_frames};
use serde_json::{Value, json};

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn files_are_owner_only_even_under_umask_000() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    // A browser started with umask 000 would pass it on.
    let mut child = Command::new("sh")
        .args(["-c", "umask 000; exec \"$0\" \"$@\"", binary(), ORIGIN])
        .env("LLM_CACHE_DIR", &dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let write = json!({"id": 1, "op": "write", "sessionId": "conv_perm", "data": 1, "description": "d"});
    let mut input = child.stdin.take().unwrap();
    std::io::Write::write_all(&mut input, &request_frame(&write)).unwrap();
    drop(input);
    let mut out = Vec::new();
    child.stdout.take().unwrap().read_to_end(&mut out).unwrap();
    assert!(child.wait().unwrap().success());
    assert_eq!(split_frames(&out)[0]["ok"], true);

    let mut files = vec![dir.join("store/data.mdb"), dir.join("store/lock.mdb")];
    files.extend(std::fs::read_dir(dir.join("logs")).unwrap().map(|e| e.unwrap().path()));
    assert_eq!(files.len(), 3, "{files:?}");
    for file in files {
        assert_eq!(mode(&file), 0o600, "{}", file.display());
    }
    for folder in [dir.clone(), dir.join("store"), dir.join("logs")] {
        assert_eq!(mode(&folder), 0o700, "{}", folder.display());
    }
}

#[test]
fn logs_hold_no_data_or_descriptions_and_escape_what_clients_send() {
    let tmp = tempfile::tempdir().unwrap();
    let mut host = Session::start(tmp.path(), ORIGIN);
    let secret_data = "SECRET-EMAIL-BODY-7f3a";
    let secret_description = "SECRET-DESCRIPTION-9c1e";
    host.ok(json!({"id": 1, "op": "write", "sessionId": "conv_logs", "data": {"body": secret_data},
        "description": secret_description, "customMetadata": {"note": secret_data}}));
    host.ok(json!({"id": 2, "op": "list", "sessionId": "conv_logs", "query": secret_description}));
    host.ok(json!({"id": 3, "op": "search", "sessionId": "conv_logs", "query": secret_data}));
    // A session id that would start a forged log line, with a NUL in it; refused, and logged escaped.
    let forged =
        host.call(json!({"id": 4, "op": "stats", "sessionId": "conv_x\n2026-01-01T00:00:00Z  INFO FORGED\u{0}"}));
    assert_eq!(forged["error"]["code"], "InvalidKeyFormatError");
    let (_, status) = host.close();
    assert!(status.success());

    let text = logs(tmp.path());
    assert!(text.contains("op=write") && text.contains("op=search"), "{text}");
    assert!(!text.contains("SECRET"), "cached data or a description reached the log:\n{text}");
    assert!(!text.lines().any(|line| line.starts_with("2026-01-01T00:00:00Z")), "a client forged a log line:\n{text}");
    assert!(text.contains(r"conv_x\n2026-01-01T00:00:00Z  INFO FORGED\0"), "{text}");
    assert!(!text.contains('\0'));
}

/// Starts the host with raw arguments; returns its exit code, stdout and stderr.
fn launch(args: &[&OsStr], env: &[(&str, &OsStr)]) -> (Option<i32>, Vec<u8>, String) {
    let mut command = Command::new(binary());
    command.args(args).env_remove("LLM_CACHE_DIR").env_remove("HOME").env_remove("XDG_DATA_HOME");
    for (name, value) in env {
        command.env(name, value);
    }
    let hello = frame(br#"{"id":1,"op":"hello"}"#);
    let write = frame(br#"{"id":2,"op":"write","sessionId":"conv_a","data":1,"description":"d"}"#);
    let mut child = command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut input = child.stdin.take().unwrap();
    // A host that refused its arguments has exited: writing to it may fail, which is fine.
    let _ = std::io::Write::write_all(&mut input, &[hello, write].concat());
    drop(input);
    let output = child.wait_with_output().unwrap();
    (output.status.code(), output.stdout, String::from_utf8_lossy(&output.stderr).into_owned())
}

#[test]
fn arguments_that_would_mix_origins_are_refused() {
    let manifest = OsStr::new("/home/u/.mozilla/native-messaging-hosts/com.browserx.llm_cache.json");
    let long = "a".repeat(300) + "@example.org";
    for addon in
        [OsStr::from_bytes(b"\xff@x"), OsStr::from_bytes(b"\xfe@x"), OsStr::new("\u{fffd}@x"), OsStr::new(&long)]
    {
        let (code, stdout, stderr) = launch(&[manifest, addon], &[]);
        assert_eq!(code, Some(2), "{addon:?}");
        assert!(stdout.is_empty(), "{addon:?}: nothing on stdout");
        assert!(
            stderr.contains("not valid UTF-8") || stderr.contains("not a Firefox add-on id"),
            "{addon:?}: {stderr}"
        );
    }
}

#[test]
fn a_missing_or_relative_data_directory_is_said_on_stderr_and_hello_still_answers() {
    let tmp = tempfile::tempdir().unwrap();
    let relative = OsStr::new("relative/data");
    for (env, said) in [
        (vec![], "no data directory: set LLM_CACHE_DIR or HOME"),
        (vec![("LLM_CACHE_DIR", relative)], "LLM_CACHE_DIR is relative/data, a relative path"),
    ] {
        let (code, stdout, stderr) = {
            let mut env = env.clone();
            env.push(("PWD", tmp.path().as_os_str()));
            launch(&[OsStr::new(ORIGIN)], &env)
        };
        assert_eq!(code, Some(0));
        assert!(stderr.contains(said), "{stderr}");
        let replies: Vec<Value> = split_frames(&stdout);
        assert_eq!(replies[0]["ok"], true, "hello answers without a store");
        assert_eq!(replies[1]["error"]["code"], "StorageUnavailableError", "{}", replies[1]);
        assert!(replies[1]["error"]["message"].as_str().unwrap().contains(said), "{}", replies[1]);
    }
    assert!(!Path::new("relative").exists(), "nothing was created relative to the working directory");
}
