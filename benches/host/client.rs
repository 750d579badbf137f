//! The bench's side of the pipes: a host process driven as a browser drives it.

use std::io::{BufReader, Read, Write};
use std::ops::Range;
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
    /// How many frames carried the last reply read, and their bytes (headers included).
    pub last_reply_frames: usize,
    pub last_reply_bytes: usize,
    /// Frames received and not yet parsed, end to end; kept at its largest size so that receiving never
    /// allocates or clears memory once it has grown.
    arena: Vec<u8>,
    /// The bytes of `arena` in use.
    used: usize,
    /// Where each frame received lies in `arena`.
    frames: Vec<Range<usize>>,
    /// Which of `frames` carry each reply received, in order.
    replies: Vec<Range<usize>>,
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
        let stdout = BufReader::with_capacity(64 * 1024, child.stdout.take().expect("stdout"));
        Host {
            child,
            stdin,
            stdout,
            next_id: 1,
            last_reply_frames: 0,
            last_reply_bytes: 0,
            arena: Vec::new(),
            used: 0,
            frames: Vec::with_capacity(1024),
            replies: Vec::with_capacity(1024),
        }
    }

    /// Sends the request `build` makes for the next id and reads its reply; times only the exchange.
    /// Sending before reading can't deadlock: the host reads a whole request before it writes a byte.
    pub fn round_trip(&mut self, build: impl FnOnce(u64) -> String) -> (Duration, Value) {
        let mut build = Some(build);
        let (elapsed, mut replies) = self.round_trips(1, |id, _| build.take().expect("one request")(id));
        (elapsed, replies.pop().expect("one reply"))
    }

    /// Sends `n` requests one after another, each when the reply before it has come, and returns the
    /// time per round trip and the replies. On the clock, the client only writes requests, reads
    /// frames and counts their bytes; the replies are parsed and checked after it stops.
    pub fn round_trips(&mut self, n: usize, mut build: impl FnMut(u64, usize) -> String) -> (Duration, Vec<Value>) {
        let first = self.next_id;
        let requests: Vec<Vec<u8>> = (0..n).map(|i| frame(&build(first + i as u64, i))).collect();
        self.next_id += n as u64;
        self.forget();
        let stdin = self.stdin.as_mut().expect("stdin open");
        let start = Instant::now();
        for (i, request) in requests.iter().enumerate() {
            stdin.write_all(request).expect("send a request");
            stdin.flush().expect("flush");
            Self::receive(
                &mut self.stdout,
                &mut self.arena,
                &mut self.used,
                &mut self.frames,
                &mut self.replies,
                first + i as u64,
            );
        }
        let elapsed = start.elapsed() / n as u32;
        let replies: Vec<Value> = (0..n).map(|i| self.parse(i)).collect();
        for (i, reply) in replies.iter().enumerate() {
            assert_eq!(reply["id"].as_u64(), Some(first + i as u64), "reply to request {}", first + i as u64);
        }
        (elapsed, replies)
    }

    /// Reads the next reply and parses it (no clock).
    pub fn read_reply(&mut self) -> Value {
        self.forget();
        Self::receive(&mut self.stdout, &mut self.arena, &mut self.used, &mut self.frames, &mut self.replies, u64::MAX);
        self.parse(0)
    }

    /// Reads `n` replies as they come, then parses them; returns when the last one had come.
    pub fn read_replies(&mut self, n: usize, first_id: u64) -> (Instant, Vec<Value>) {
        self.forget();
        for i in 0..n {
            Self::receive(
                &mut self.stdout,
                &mut self.arena,
                &mut self.used,
                &mut self.frames,
                &mut self.replies,
                first_id + i as u64,
            );
        }
        let end = Instant::now();
        (end, (0..n).map(|i| self.parse(i)).collect())
    }

    /// Drops the frames received before.
    fn forget(&mut self) {
        self.used = 0;
        self.frames.clear();
        self.replies.clear();
    }

    /// Reads the frames of one reply into `arena`. The only look inside them: whether the first
    /// starts as a chunk of the reply to `id` does (`{"id":<id>,"chunk":`), and if so how many chunks
    /// it announces, read from the digits after `"chunks":`. (`id` is `u64::MAX` when unknown: then a
    /// chunk frame is told by `,"chunk":` alone.)
    fn receive(
        stdout: &mut BufReader<ChildStdout>,
        arena: &mut Vec<u8>,
        used: &mut usize,
        frames: &mut Vec<Range<usize>>,
        replies: &mut Vec<Range<usize>>,
        id: u64,
    ) {
        let first_frame = frames.len();
        let mut read_frame = |arena: &mut Vec<u8>, frames: &mut Vec<Range<usize>>| {
            let mut header = [0u8; 4];
            stdout.read_exact(&mut header).expect("a frame header (did the host exit?)");
            let length = u32::from_ne_bytes(header) as usize;
            assert!(length <= 1 << 20, "a reply frame of {length} bytes is over Chrome's 1 MiB");
            if arena.len() < *used + length {
                arena.resize(*used + length, 0);
            }
            stdout.read_exact(&mut arena[*used..*used + length]).expect("a frame body");
            frames.push(*used..*used + length);
            *used += length;
        };
        read_frame(arena, frames);
        if let Some(chunks) = announced_chunks(&arena[frames[first_frame].clone()], id) {
            for _ in 1..chunks {
                read_frame(arena, frames);
            }
        }
        replies.push(first_frame..frames.len());
    }

    /// Reply `index` of those received, parsed; chunk frames are checked and their parts joined.
    fn parse(&mut self, index: usize) -> Value {
        let frames = &self.frames[self.replies[index].clone()];
        self.last_reply_frames = frames.len();
        self.last_reply_bytes = frames.iter().map(|frame| frame.len() + 4).sum();
        let body = |frame: &Range<usize>| std::str::from_utf8(&self.arena[frame.clone()]).expect("frames are UTF-8");
        if frames.len() == 1 && !body(&frames[0]).contains(",\"chunk\":") {
            return serde_json::from_str(body(&frames[0])).expect("the reply is JSON");
        }
        let mut text = String::new();
        let mut id = None;
        for (expected, frame) in frames.iter().enumerate() {
            let chunk: Chunk = serde_json::from_str(body(frame)).expect("a JSON chunk frame");
            let id = id.get_or_insert_with(|| chunk.id.clone());
            assert_eq!((chunk.chunk, chunk.chunks, &chunk.id), (expected, frames.len(), &*id), "chunk order");
            text.push_str(&chunk.part);
        }
        serde_json::from_str(&text).expect("the joined reply is JSON")
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

/// A chunk frame (PROTOCOL.md section 2.2), parsed after the clock stops.
#[derive(serde::Deserialize)]
struct Chunk {
    id: Value,
    chunk: usize,
    chunks: usize,
    part: String,
}

/// The chunk count a frame announces when it starts as a chunk frame of the reply to `id`.
fn announced_chunks(frame: &[u8], id: u64) -> Option<usize> {
    let head = &frame[..frame.len().min(96)];
    let rest = if id == u64::MAX {
        let at = memchr::memmem::find(head, b",\"chunk\":")?;
        &head[at..]
    } else {
        let prefix = format!("{{\"id\":{id},\"chunk\":");
        head.strip_prefix(prefix.as_bytes())?
    };
    let at = memchr::memmem::find(rest, b"\"chunks\":")? + 9;
    let digits = rest[at..].iter().take_while(|b| b.is_ascii_digit()).count();
    std::str::from_utf8(&rest[at..at + digits]).ok()?.parse().ok()
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
