//! The bench's side of the pipes: a host process driven as a browser drives it.

use std::io::{BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// A running host with its pipes.
pub struct Host {
    child: Child,
    pub stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    pub next_id: u64,
    /// How many frames carried the last reply read.
    pub last_reply_frames: usize,
}

impl Host {
    /// Starts `command` (a host) with its store in `dir`.
    pub fn start(mut command: Command, dir: &Path) -> Host {
        let mut child = command
            .env("LLM_CACHE_DIR", dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn the host");
        let stdin = child.stdin.take();
        let stdout = BufReader::with_capacity(1 << 20, child.stdout.take().expect("stdout"));
        Host { child, stdin, stdout, next_id: 1, last_reply_frames: 0 }
    }

    /// Sends the request `build` makes for the next id and reads its reply; times only the exchange.
    /// Sending before reading can't deadlock: the host reads a whole request before it writes a byte.
    pub fn round_trip(&mut self, build: impl FnOnce(u64) -> String) -> (Duration, Value) {
        let id = self.next_id;
        self.next_id += 1;
        let bytes = frame(&build(id));
        let stdin = self.stdin.as_mut().expect("stdin open");
        let start = Instant::now();
        stdin.write_all(&bytes).expect("send a request");
        stdin.flush().expect("flush");
        let text = self.read_reply_text();
        let elapsed = start.elapsed();
        let reply: Value = serde_json::from_str(&text).expect("the reply is JSON");
        assert_eq!(reply["id"].as_u64(), Some(id), "reply to request {id}");
        (elapsed, reply)
    }

    pub fn read_reply(&mut self) -> Value {
        serde_json::from_str(&self.read_reply_text()).expect("the reply is JSON")
    }

    /// The next reply's JSON text: one frame, or the concatenated parts of its chunk frames.
    fn read_reply_text(&mut self) -> String {
        let first = self.read_frame();
        // Every frame is parsed (as a browser does), but only as far as telling a chunk from a reply.
        let mut frame: Frame = serde_json::from_str(&first).expect("a JSON frame");
        let Some(chunks) = frame.chunks else {
            self.last_reply_frames = 1;
            return first;
        };
        self.last_reply_frames = chunks;
        let id = frame.id.clone();
        let mut text = String::with_capacity(chunks << 20);
        for expected in 0..chunks {
            assert_eq!((frame.chunk, frame.chunks, &frame.id), (Some(expected), Some(chunks), &id), "chunk order");
            text.push_str(frame.part.as_deref().expect("a chunk's part"));
            if expected + 1 < chunks {
                frame = serde_json::from_str(&self.read_frame()).expect("a JSON frame");
            }
        }
        text
    }

    fn read_frame(&mut self) -> String {
        let mut header = [0u8; 4];
        self.stdout.read_exact(&mut header).expect("a frame header (did the host exit?)");
        let length = u32::from_ne_bytes(header) as usize;
        assert!(length <= 1 << 20, "a reply frame of {length} bytes is over Chrome's 1 MiB");
        let mut body = vec![0u8; length];
        self.stdout.read_exact(&mut body).expect("a frame body");
        String::from_utf8(body).expect("frames are UTF-8")
    }

    /// The host's memory now, from /proc (Linux only; zeros elsewhere).
    pub fn memory(&self) -> Memory {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap_or_default();
        let field = |name: &str| {
            status
                .lines()
                .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
                .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
                .unwrap_or(0)
        };
        Memory {
            hwm_kib: field("VmHWM"),
            rss_kib: field("VmRSS"),
            anon_kib: field("RssAnon"),
            file_kib: field("RssFile"),
        }
    }

    /// CPU time the host has used so far, all its threads together (Linux's schedstat, in ns).
    pub fn cpu(&self) -> Duration {
        let tasks = std::fs::read_dir(format!("/proc/{}/task", self.child.id())).into_iter().flatten().flatten();
        let ns: u64 = tasks
            .filter_map(|task| std::fs::read_to_string(task.path().join("schedstat")).ok())
            .filter_map(|stat| stat.split_whitespace().next()?.parse::<u64>().ok())
            .sum();
        Duration::from_nanos(ns)
    }

    /// Closes stdin and waits for the host to exit on its own.
    pub fn close(mut self) {
        drop(self.stdin.take());
        let status = self.child.wait().expect("wait for the host");
        assert!(status.success(), "the host exited with {status}");
    }
}

/// A reply frame's top level: a chunk has `chunk`, `chunks` and `part`; a whole reply has none of them
/// (its other fields are skipped here and parsed after the clock stops).
#[derive(serde::Deserialize)]
struct Frame {
    id: Value,
    chunk: Option<usize>,
    chunks: Option<usize>,
    part: Option<String>,
}

#[derive(Clone, Copy)]
pub struct Memory {
    pub hwm_kib: u64,
    pub rss_kib: u64,
    pub anon_kib: u64,
    pub file_kib: u64,
}

impl Memory {
    pub fn describe(&self) -> String {
        format!(
            "VmRSS then: {} ({} anon, {} file-backed incl. LMDB map)",
            kib(self.rss_kib),
            kib(self.anon_kib),
            kib(self.file_kib)
        )
    }
}

/// A length-prefixed frame.
pub fn frame(json: &str) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(json.len() + 4);
    bytes.extend_from_slice(&u32::try_from(json.len()).expect("frame under 4 GiB").to_ne_bytes());
    bytes.extend_from_slice(json.as_bytes());
    bytes
}

/// A `write` request; `task` and `turn` must be 8 of [a-z0-9].
pub fn write_request(id: u64, session: &str, task: &str, turn: &str, data: &str) -> String {
    format!(
        r#"{{"id":{id},"op":"write","sessionId":"{session}","taskId":"{task}","turnId":"{turn}","description":"bench item {task}/{turn}","data":{data}}}"#
    )
}

pub fn kib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}
pub fn assert_ok(reply: &Value) -> &Value {
    assert_eq!(reply["ok"], Value::Bool(true), "request failed: {reply}");
    &reply["result"]
}
