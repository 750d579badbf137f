//! Drives the real binary over pipes, as Chrome does: frames in, frames out.
//!
//! Every byte the host writes to stdout is checked to be a frame of at most 1 MiB holding JSON, and
//! chunked replies are reassembled, so tests see whole replies. Both are the host's own client
//! ([`llm_cache_host::frame::client`]), the one `call` and `doctor` read the host with.

#![allow(dead_code)] // Each test file uses a different part of this.

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::thread;

use llm_cache_host::frame::{self, client};
use serde_json::Value;

pub mod machine;
mod rng;
#[allow(unused_imports)] // as dead_code above: not every test file draws numbers
pub use rng::Rng;

/// The origin tests run as, unless they say otherwise.
pub const ORIGIN: &str = "chrome-extension://testextensionaaaaaaaaaaaaaaaaaa/";

/// The largest frame the host may send.
pub const MAX_REPLY_FRAME: usize = llm_cache_host::limits::MAX_REPLY_FRAME_BYTES;

/// The host binary under test: the one cargo built for these tests, unless `LLM_CACHE_TEST_BINARY` names
/// another build of it. `scripts/cross/linux-arm64.sh check` names the arm64 build there, which the kernel
/// starts under qemu-user, so that these tests drive it while they themselves run natively (qemu-user's
/// fork from a program with threads, as a test starting the host is, hangs now and then).
pub fn binary() -> &'static str {
    static BINARY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    BINARY.get_or_init(|| {
        std::env::var("LLM_CACHE_TEST_BINARY").unwrap_or_else(|_| env!("CARGO_BIN_EXE_llm-cache-host").to_owned())
    })
}

/// Copies the host binary to `to`, to be run from there. The copy is made by `cp`, in a process of its own:
/// had this test process opened the file for writing, a test on another thread that forks meanwhile would
/// hold that descriptor until its child execs, and running the copy in that moment fails with "Text file
/// busy" (ETXTBSY).
pub fn copy_binary(to: &std::path::Path) {
    let status = std::process::Command::new("cp").arg(binary()).arg(to).status().expect("cp runs");
    assert!(status.success(), "cp {} {}: {status}", binary(), to.display());
}

/// A script of the repository (`install.sh`, `scripts/release.sh`) run with no cargo on PATH: it checks
/// its options first, so options it accepts get as far as "cargo is missing", and one it refuses is
/// named before that. Its exit code and stderr.
pub fn script_without_cargo(script: &str, args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join(script);
    let mut command = Command::new("/bin/bash");
    command.arg(&script).args(args).env("PATH", "/usr/bin:/bin");
    for (name, value) in env {
        command.env(name, value);
    }
    let output = command.output().unwrap();
    (output.status.code(), String::from_utf8(output.stderr).unwrap())
}

/// A command that starts the host in host mode for `origin` with its data in `dir`.
pub fn host_command(dir: &Path, origin: &str) -> Command {
    host_command_with_args(dir, &[origin.to_owned()])
}

/// A command that starts the host with these arguments (a browser's launch line), data in `dir`.
pub fn host_command_with_args(dir: &Path, args: &[impl AsRef<OsStr>]) -> Command {
    let mut command = Command::new(binary());
    command
        .args(args)
        .env("LLM_CACHE_DIR", dir)
        .env_remove("LLM_CACHE_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// One frame: a native-endian u32 length and the bytes.
pub fn frame(body: &[u8]) -> Vec<u8> {
    frame::framed(body).expect("a frame under 4 GiB")
}

/// A request as a frame.
pub fn request_frame(request: &Value) -> Vec<u8> {
    frame(request.to_string().as_bytes())
}

/// What a host run wrote and how it ended.
pub struct Output {
    /// The replies, with chunked ones reassembled, in the order they came.
    pub replies: Vec<Value>,
    /// How many frames carried them.
    pub frames: usize,
    /// The host's exit status.
    pub status: ExitStatus,
    /// Whatever the host wrote to stderr.
    pub stderr: String,
}

/// Runs the host with `input` on stdin (written from its own thread, so a full pipe can't deadlock),
/// closes stdin, and collects everything it writes.
pub fn run_host(dir: &Path, origin: &str, input: Vec<u8>) -> Output {
    let mut child = host_command(dir, origin).spawn().expect("start the host");
    let mut stdin = child.stdin.take().unwrap();
    let feeder = thread::spawn(move || {
        // The host may exit before reading everything (it stops at a cut frame); that is not a failure here.
        let _ = stdin.write_all(&input);
    });
    let mut stdout = Vec::new();
    child.stdout.take().unwrap().read_to_end(&mut stdout).unwrap();
    let mut stderr = String::new();
    child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    let status = child.wait().unwrap();
    feeder.join().unwrap();
    let frames = split_frames(&stdout);
    let count = frames.len();
    Output { replies: reassemble(frames), frames: count, status, stderr }
}

/// Splits stdout into frames, failing the test on anything that is not a whole frame of at most
/// 1 MiB holding one JSON object.
pub fn split_frames(mut bytes: &[u8]) -> Vec<Value> {
    let mut frames = Vec::new();
    while let Some(body) = client::read_frame(&mut bytes).unwrap_or_else(|e| panic!("stdout is not whole frames: {e}"))
    {
        let value: Value = serde_json::from_slice(&body).expect("every frame is JSON");
        assert!(value.is_object(), "every frame is a JSON object: {value}");
        frames.push(value);
    }
    frames
}

/// Joins chunk frames into the replies they carry (in order, with their reply's id); other frames are
/// replies already.
pub fn reassemble(frames: Vec<Value>) -> Vec<Value> {
    let mut replies = Vec::new();
    let mut joiner = client::Joiner::default();
    for frame in frames {
        let joined = joiner.take(frame.to_string().into_bytes()).unwrap_or_else(|e| panic!("{e}"));
        replies
            .extend(joined.map(|reply| serde_json::from_str::<Value>(&reply).expect("the parts make one JSON reply")));
    }
    assert!(!joiner.inside_reply(), "a chunked reply was left unfinished");
    replies
}

/// A host kept running for a conversation of requests and replies.
pub struct Session {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: ChildStdout,
}

impl Session {
    /// Starts a host for `origin` over `dir`.
    pub fn start(dir: &Path, origin: &str) -> Session {
        Session::start_with_args(dir, &[origin.to_owned()])
    }

    /// Starts a host with these arguments (a browser's launch line) over `dir`.
    pub fn start_with_args(dir: &Path, args: &[impl AsRef<OsStr>]) -> Session {
        let mut child = host_command_with_args(dir, args).stderr(Stdio::null()).spawn().expect("start the host");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        Session { child, stdin, stdout }
    }

    /// Sends bytes as they are.
    pub fn send_bytes(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    /// Takes the host's stdin, for a thread that feeds it (so that a full pipe can't deadlock); drop
    /// it to close the host's input.
    pub fn take_stdin(&mut self) -> ChildStdin {
        self.stdin.take().expect("stdin is open")
    }

    /// Sends a request.
    pub fn send(&mut self, request: &Value) {
        self.send_bytes(&request_frame(request));
    }

    /// Reads one frame, checked as [`split_frames`] does.
    pub fn read_frame(&mut self) -> Value {
        serde_json::from_slice(&self.read_frame_bytes()).expect("every frame is JSON")
    }

    /// Reads one frame's body, as it came, checking its size.
    pub fn read_frame_bytes(&mut self) -> Vec<u8> {
        let frame = client::read_frame(&mut self.stdout).unwrap_or_else(|e| panic!("a reply frame: {e}"));
        frame.expect("a reply, not the end of the host's output")
    }

    /// Reads one whole reply as JSON text, reassembling chunks, without making a [`Value`] of it: a
    /// reply nested deeper than serde_json's recursion limit (128) can't be one. Read its parts with
    /// [`member`].
    pub fn read_reply_text(&mut self) -> String {
        let reply = client::read_reply(&mut self.stdout).unwrap_or_else(|e| panic!("a reply: {e}"));
        reply.expect("a reply, not the end of the host's output")
    }

    /// Sends a request given as JSON text (which may nest deeper than a [`Value`] can) and returns
    /// its reply as text.
    pub fn call_text(&mut self, request: &str) -> String {
        self.send_bytes(&frame(request.as_bytes()));
        self.read_reply_text()
    }

    /// Reads one whole reply, reassembling chunks.
    pub fn read_reply(&mut self) -> Value {
        serde_json::from_str(&self.read_reply_text()).expect("every reply is JSON")
    }

    /// Sends a request and returns its reply.
    pub fn call(&mut self, request: Value) -> Value {
        self.send(&request);
        self.read_reply()
    }

    /// A request that must succeed; returns its `result`.
    pub fn ok(&mut self, request: Value) -> Value {
        let reply = self.call(request.clone());
        assert_eq!(reply["ok"], true, "request {request} failed: {reply}");
        reply["result"].clone()
    }

    /// Closes stdin and waits for the host to exit; returns what it wrote after that.
    pub fn close(mut self) -> (Vec<u8>, ExitStatus) {
        drop(self.stdin.take());
        let mut rest = Vec::new();
        self.stdout.read_to_end(&mut rest).unwrap();
        (rest, self.child.wait().unwrap())
    }

    /// Kills the host at once, as a crash or Chrome's kill would.
    pub fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    /// The host's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

/// The text of the member `name` of the JSON object `json`, as written; `None` if it has none. The
/// members' values are captured as text (serde skips them without recursion), so this works at any
/// depth: follow a path with one call per name.
pub fn member<'a>(json: &'a str, name: &str) -> Option<&'a str> {
    let members: std::collections::HashMap<String, &serde_json::value::RawValue> =
        serde_json::from_str(json).expect("a JSON object");
    members.get(name).map(|raw| raw.get())
}

/// Checks that `actual` matches `expected`, where the string `"*"` in `expected` matches any value.
/// Objects must have the same keys and arrays the same length. Returns the path of the first
/// difference.
pub fn json_match(expected: &Value, actual: &Value) -> Result<(), String> {
    fn walk(expected: &Value, actual: &Value, path: &str) -> Result<(), String> {
        match (expected, actual) {
            (Value::String(s), _) if s == "*" => Ok(()),
            (Value::Object(e), Value::Object(a)) => {
                for key in e.keys().chain(a.keys()) {
                    match (e.get(key), a.get(key)) {
                        (Some(ev), Some(av)) => walk(ev, av, &format!("{path}/{key}"))?,
                        (Some(_), None) => return Err(format!("{path}/{key} is missing")),
                        (None, Some(av)) => return Err(format!("{path}/{key} is unexpected: {av}")),
                        (None, None) => unreachable!(),
                    }
                }
                Ok(())
            }
            (Value::Array(e), Value::Array(a)) if e.len() == a.len() => {
                e.iter().zip(a).enumerate().try_for_each(|(i, (ev, av))| walk(ev, av, &format!("{path}/{i}")))
            }
            _ if expected == actual => Ok(()),
            _ => Err(format!("{path}: expected {expected}, got {actual}")),
        }
    }
    walk(expected, actual, "")
}

impl Session {
    /// Every item of a session, newest first, paging through `list` 1000 at a time with its cursor.
    pub fn list_all(&mut self, session_id: &str) -> Vec<Value> {
        let mut items = Vec::new();
        let mut cursor = Value::Null;
        loop {
            let mut request =
                serde_json::json!({"id": "list-all", "op": "list", "sessionId": session_id, "limit": 1000});
            if !cursor.is_null() {
                request["cursor"] = cursor;
            }
            let page = self.ok(request);
            items.extend(page["items"].as_array().expect("list returns items").iter().cloned());
            cursor = page["nextCursor"].clone();
            if cursor.is_null() {
                return items;
            }
        }
    }

    /// Checks that a session's `stats` (and `list`'s totals) equal the sum over its listed items, and
    /// returns the items.
    pub fn assert_totals_match_items(&mut self, session_id: &str) -> Vec<Value> {
        let items = self.list_all(session_id);
        let sum: u64 = items.iter().map(|item| item["dataSize"].as_u64().expect("dataSize")).sum();
        let stats = self.ok(serde_json::json!({"id": "stats", "op": "stats", "sessionId": session_id}));
        assert_eq!(stats["totalSize"], sum, "stats totalSize vs the sum over list for {session_id}: {stats}");
        assert_eq!(stats["itemCount"], items.len(), "stats itemCount vs list for {session_id}: {stats}");
        let first = self.ok(serde_json::json!({"id": "list", "op": "list", "sessionId": session_id, "limit": 1}));
        assert_eq!((&first["totalSize"], &first["itemCount"]), (&stats["totalSize"], &stats["itemCount"]));
        let mut keys: Vec<&str> = items.iter().map(|item| item["storageKey"].as_str().unwrap()).collect();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), items.len(), "list pages repeat an item");
        items
    }
}

/// The text of every log file the hosts wrote under the data directory `dir`.
pub fn logs(dir: &Path) -> String {
    std::fs::read_dir(dir.join("logs"))
        .unwrap()
        .map(|entry| std::fs::read_to_string(entry.unwrap().path()).unwrap())
        .collect()
}

/// The most resident memory a host may ever take, whatever sequence of requests within the
/// protocol's limits it is sent: its peak RSS (`VmHWM`), heap and mapped files together.
pub const MAX_HOST_RSS_BYTES: u64 = 64 * 1024 * 1024;

/// A running process's memory, from `/proc/<pid>/status`, in bytes.
#[derive(Debug, Clone, Copy)]
pub struct Memory {
    /// The peak resident set since the process started (`VmHWM`).
    pub peak: u64,
    /// The resident anonymous memory now (`RssAnon`): the heap, stacks.
    pub anon: u64,
    /// The resident file-backed memory now (`RssFile`): the binary's pages and the LMDB map's.
    pub file: u64,
}

impl std::fmt::Display for Memory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mib = |bytes: u64| bytes as f64 / (1024.0 * 1024.0);
        write!(f, "peak {:.1} MiB (now {:.1} MiB anon, {:.1} MiB file)", mib(self.peak), mib(self.anon), mib(self.file))
    }
}

/// The memory of the running process `pid` (Linux only).
pub fn memory_of(pid: u32) -> Memory {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("the process is running");
    let field = |name: &str| -> u64 {
        let line = status.lines().find(|line| line.starts_with(name)).unwrap_or_else(|| panic!("{name} in status"));
        let kib: u64 = line[name.len()..].trim().trim_end_matches("kB").trim().parse().expect("a size in kB");
        kib * 1024
    };
    Memory { peak: field("VmHWM:"), anon: field("RssAnon:"), file: field("RssFile:") }
}
