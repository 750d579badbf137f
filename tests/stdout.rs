//! Everything the host writes to stdout is frames: whole, JSON, at most 1 MiB each, even with the most
//! verbose logging and the worst input; large replies come in chunks.

mod common;

use std::io::{Read, Write};
use std::process::Stdio;

use common::{frame, host_command, reassemble, request_frame, split_frames};
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
    while stdout.len() >= 4 {
        let length = u32::from_ne_bytes(stdout[..4].try_into().unwrap()) as usize;
        frames.push(String::from_utf8(stdout[4..4 + length].to_vec()).unwrap());
        stdout = &stdout[4 + length..];
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
