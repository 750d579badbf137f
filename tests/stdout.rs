//! Everything the host writes to stdout is frames: whole, JSON, at most 1 MiB each, even with the most
//! verbose logging and the worst input; large replies come in chunks.

mod common;

use std::io::{Read, Write};
use std::process::Stdio;

use common::{frame, host_command, reassemble, request_frame, split_frames};
use llm_cache_host::frame::client;
use serde_json::{Value, json};

#[test]
fn stdout_is_only_frames_even_at_trace_level() {
    let tmp = tempfile::tempdir().unwrap();
    let five_mb_of_quotes = "\"".repeat(2_621_439);
    let mut input = Vec::new();
    let requests = [
        json!({"id": 1, "op": "hello"}),
        json!({"id": 2, "op": "write", "sessionId": "conv_o1", "taskId": "task0001", "turnId": "turn0001",
               "data": five_mb_of_quotes, "description": "5 MB of quotes"}),
        json!({"id": 3, "op": "read", "sessionId": "conv_o1", "storageKey": "conv_o1_task0001_turn0001"}),
        json!({"id": 4, "op": "list", "sessionId": "conv_o1"}),
        json!({"id": 5, "op": "read", "sessionId": "conv_o1", "storageKey": "conv_o1_task0001_nothere0"}),
        json!({"id": 6, "op": "endSession", "sessionId": "conv_o1"}),
    ];
    for request in &requests {
        input.extend(request_frame(request));
    }
    input.extend(frame(b"{not json"));
    input.extend(frame(&[0xff, 0xfe]));

    let mut child =
        host_command(tmp.path(), common::ORIGIN).env("LLM_CACHE_LOG", "trace").stderr(Stdio::null()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let feeder = std::thread::spawn(move || stdin.write_all(&input).unwrap());
    let mut stdout = Vec::new();
    child.stdout.take().unwrap().read_to_end(&mut stdout).unwrap();
    assert!(child.wait().unwrap().success());
    feeder.join().unwrap();

    let frames = split_frames(&stdout);
    let chunk_frames = frames.iter().filter(|f| f.get("chunk").is_some()).count();
    assert!(chunk_frames >= 10, "5 MB of quotes escapes to 10 MB of parts: {chunk_frames} chunks");
    let replies = reassemble(frames);
    let ids: Vec<&Value> = replies.iter().map(|r| &r["id"]).collect();
    assert_eq!(ids, [&json!(1), &json!(2), &json!(3), &json!(4), &json!(5), &json!(6), &Value::Null, &Value::Null]);
    assert_eq!(replies[2]["result"]["item"]["data"].as_str().unwrap().len(), 2_621_439);
    assert_eq!(replies[4]["error"]["code"], "ItemNotFoundError");
    assert_eq!(replies[5]["result"]["freedBytes"], 5_242_880);

    // The trace-level log went to the log file, and it holds no cached data or descriptions.
    let log = common::logs(tmp.path());
    assert!(log.contains("op=write session=conv_o1"), "the log records ops and sessions: {log}");
    assert!(!log.contains("5 MB of quotes"), "the log must not hold descriptions");
    assert!(!log.contains("\"\"\"\""), "the log must not hold data");
}

#[test]
fn the_log_never_holds_data_or_descriptions() {
    let tmp = tempfile::tempdir().unwrap();
    let secret = "Dear Ann, the merger closes Friday";
    let mut input = Vec::new();
    for (id, op) in [(1, "write"), (2, "update")] {
        input.extend(request_frame(&json!({"id": id, "op": op, "sessionId": "conv_p1", "taskId": "task0001",
            "turnId": "turn0001", "storageKey": "conv_p1_task0001_turn0001", "data": {"body": secret},
            "description": format!("{secret} (summary)"), "customMetadata": {"subject": secret}})));
    }
    input.extend(request_frame(
        &json!({"id": 3, "op": "read", "sessionId": "conv_p1", "storageKey": "conv_p1_task0001_turn0001"}),
    ));
    let output = common::run_host(tmp.path(), common::ORIGIN, input);
    assert!(output.status.success());
    assert_eq!(output.replies[2]["result"]["item"]["data"]["body"], secret);
    let log = common::logs(tmp.path());
    assert!(log.contains("conv_p1_task0001_turn0001"), "the log records keys");
    assert!(!log.contains("merger"), "the log must not hold data, descriptions or custom metadata:\n{log}");
}

/// The frames of `stdout` as text, unparsed: a reply may hold JSON that a strict parser refuses.
fn raw_frames(mut stdout: &[u8]) -> Vec<String> {
    let mut frames = Vec::new();
    while let Some(body) = client::read_frame(&mut stdout).expect("whole frames") {
        frames.push(String::from_utf8(body).unwrap());
    }
    frames
}

#[test]
fn reads_return_the_stored_text_exactly() {
    let tmp = tempfile::tempdir().unwrap();
    let data = r#"{"z":{"b":1.50,"a":12345678901234567890123},"s":"\ud800\u00e9","e":1E+2}"#;
    let write = format!(
        r#"{{"id":1,"op":"write","sessionId":"conv_x1","taskId":"task0001","turnId":"turn0001","data":{data},"description":"d"}}"#
    );
    let mut input = frame(write.as_bytes());
    for (id, pointer) in [(2, None), (3, Some("/z")), (4, Some("/s")), (5, Some("/e"))] {
        let mut read =
            json!({"id": id, "op": "read", "sessionId": "conv_x1", "storageKey": "conv_x1_task0001_turn0001"});
        if let Some(pointer) = pointer {
            read["pointer"] = json!(pointer);
        }
        input.extend(request_frame(&read));
    }
    let mut child = host_command(tmp.path(), common::ORIGIN).stderr(Stdio::null()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(&input).unwrap();
    let mut stdout = Vec::new();
    child.stdout.take().unwrap().read_to_end(&mut stdout).unwrap();
    assert!(child.wait().unwrap().success());
    let frames = raw_frames(&stdout);
    assert!(frames[0].contains(r#""ok":true"#), "{}", frames[0]);
    assert!(frames[1].contains(&format!(r#""data":{data}"#)), "{}", frames[1]);
    assert!(frames[2].contains(r#""data":{"b":1.50,"a":12345678901234567890123}"#), "{}", frames[2]);
    assert!(frames[3].contains(r#""data":"\ud800\u00e9""#), "{}", frames[3]);
    assert!(frames[4].contains(r#""data":1E+2"#), "{}", frames[4]);
}

/// A browser gives the host pipes, which it polls itself; files (a script's redirections, `/dev/null`)
/// can't be polled, and the host serves them through tokio's own stdin and stdout instead, with the
/// same frames.
#[test]
fn files_as_stdin_and_stdout_get_the_same_replies_as_pipes() {
    let tmp = tempfile::tempdir().unwrap();
    let requests = [
        json!({"id": 1, "op": "write", "sessionId": "conv_f1", "taskId": "task0001", "turnId": "turn0001",
               "data": "é\"".repeat(600_000), "description": "long"}),
        json!({"id": 2, "op": "read", "sessionId": "conv_f1", "storageKey": "conv_f1_task0001_turn0001"}),
        json!({"id": 3, "op": "list", "sessionId": "conv_f1"}),
    ];
    let input: Vec<u8> = requests.iter().flat_map(request_frame).collect();
    let input_file = tmp.path().join("input");
    std::fs::write(&input_file, &input).unwrap();
    let output_file = tmp.path().join("output");

    let through_files = host_command(&tmp.path().join("files"), common::ORIGIN)
        .stdin(std::fs::File::open(&input_file).unwrap())
        .stdout(std::fs::File::create(&output_file).unwrap())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(through_files.success());
    let from_files = std::fs::read(&output_file).unwrap();
    let through_pipes = common::run_host(&tmp.path().join("pipes"), common::ORIGIN, input);
    assert!(through_pipes.status.success());

    let from_files = reassemble(split_frames(&from_files));
    assert_eq!(from_files.len(), 3);
    assert!(through_pipes.frames >= 3, "the 1.8 MB read is chunked");
    // Timestamps differ between the two runs; everything else must not.
    fn without_times(value: &mut Value) {
        match value {
            Value::Object(members) => {
                members.remove("timestamp");
                members.values_mut().for_each(without_times);
            }
            Value::Array(elements) => elements.iter_mut().for_each(without_times),
            _ => {}
        }
    }
    let (mut from_files, mut from_pipes) = (Value::from(from_files), Value::from(through_pipes.replies));
    without_times(&mut from_files);
    without_times(&mut from_pipes);
    assert!(from_files == from_pipes, "the replies through files and through pipes differ");
    assert_eq!(from_files[1]["result"]["item"]["data"].as_str().unwrap().len(), 3 * 600_000);
}

/// Over pipes the host reads and writes on its own thread: besides it there is only the log writer and
/// the blocking-pool thread that ran the start-up maintenance (tokio's stdin would add a reader thread
/// and hand it every read).
///
/// Under qemu-user (`scripts/cross/linux-arm64.sh check` runs these tests against the arm64 build, started
/// through binfmt_misc), the process also holds the emulator's own thread: qemu starts it before the host's
/// first instruction, so it carries the process's first name, and the host never sees it. That thread
/// alone is left out, and only when the process's executable is not the host binary but the emulator.
#[cfg(target_os = "linux")]
#[test]
fn pipes_are_served_without_a_reader_thread() {
    let tmp = tempfile::tempdir().unwrap();
    let mut host = common::Session::start(tmp.path(), common::ORIGIN);
    host.ok(json!({"id": 1, "op": "hello"}));
    let data = "x".repeat(3 * 1024 * 1024);
    host.ok(json!({"id": 2, "op": "write", "sessionId": "conv_t1", "taskId": "task0001", "turnId": "turn0001",
                   "data": data, "description": "3 MB"}));
    let read =
        host.ok(json!({"id": 3, "op": "read", "sessionId": "conv_t1", "storageKey": "conv_t1_task0001_turn0001"}));
    assert_eq!(read["item"]["data"].as_str().map(str::len), Some(data.len()));
    let pid = host.pid();
    let mut threads: Vec<(u32, String)> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .map(|task| {
            let path = task.unwrap().path();
            let id = path.file_name().unwrap().to_str().unwrap().parse().unwrap();
            (id, std::fs::read_to_string(path.join("comm")).unwrap().trim().to_owned())
        })
        .collect();
    let executable = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap();
    if executable != std::fs::canonicalize(common::binary()).unwrap() {
        let first_name = threads.iter().find(|(id, _)| *id == pid).unwrap().1.clone();
        let emulator = threads.iter().position(|(id, name)| *id != pid && *name == first_name);
        let emulator = emulator.unwrap_or_else(|| panic!("{executable:?} runs the host, without a thread of its own"));
        threads.remove(emulator);
    }
    let names: Vec<&str> = threads.iter().map(|(_, name)| name.as_str()).collect();
    assert!(names.len() <= 3, "threads: {names:?}");
    host.close();
}
