//! End-to-end benchmark of the real `llm-cache-host` binary: speed and memory over its stdin/stdout pipes,
//! exactly as a browser drives it.
//!
//! Run with `cargo bench --bench host`. It prints a markdown table. The store lives in a temporary
//! directory under `$LLM_CACHE_BENCH_DIR` if set (to bench another file system), else under the system's
//! temp directory. Every write is a durable LMDB commit, so the numbers depend on that disk's fsync.
//!
//! Latencies are full round trips seen by the client: from the first byte of the request frame written to
//! the last byte of the reply read (chunk frames decoded and their parts concatenated). Requests are built
//! before the clock starts and replies are checked after it stops.

use std::io::{BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

const BINARY: &str = env!("CARGO_BIN_EXE_llm-cache-host");
const ORIGIN_ARG: &str = "chrome-extension://benchext/";

/// The item sizes measured, in bytes of compact JSON (decimal units; 5 MB is under the 5 MiB item limit).
const SIZES: [(&str, usize, usize); 4] =
    [("1 KB", 1_000, 500), ("100 KB", 100_000, 200), ("1 MB", 1_000_000, 60), ("5 MB", 5_000_000, 30)];
/// Spawns for the start-up measurement.
const SPAWNS: usize = 20;
/// Items in the session that `list` pages over.
const LIST_ITEMS: usize = 50;
/// `list` round trips measured.
const LIST_ROUNDS: usize = 200;
/// Small writes sent back to back for the throughput measurement.
const PIPELINED_WRITES: usize = 1_000;
/// Items of 5 MB making the ~50 MB session that `endSession` removes, and how many times that is measured.
const END_SESSION_ITEMS: usize = 10;
const END_SESSION_ROUNDS: usize = 5;
/// The fresh process measured for peak RSS reads this many distinct 5 MB items, this many times each.
const RSS_ITEMS: usize = 5;
const RSS_PASSES: usize = 4;
/// Items of 5 MB in the session `search` looks through (45 MB of data), and rounds measured.
const SEARCH_ITEMS: usize = 9;
const SEARCH_ROUNDS: usize = 10;
/// Keep a session this far under its 50 MiB quota when spreading big writes over sessions.
const SESSION_BUDGET: usize = 45_000_000;

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` (or `--all-targets`) does not, and must not
    // spend minutes here.
    if !std::env::args().any(|arg| arg == "--bench") {
        println!("host benchmark: run it with `cargo bench --bench host`");
        return;
    }
    let base = std::env::var_os("LLM_CACHE_BENCH_DIR").map(std::path::PathBuf::from).unwrap_or_else(std::env::temp_dir);
    let dir = tempfile::Builder::new().prefix("llm-cache-bench-").tempdir_in(&base).expect("temp dir");
    let started = Instant::now();
    let mut table = Table::default();

    startup(dir.path(), &mut table);

    let mut host = Host::spawn(dir.path());
    let hello = host.round_trip(|id| format!(r#"{{"id":{id},"op":"hello"}}"#)).1;
    assert_ok(&hello);
    let idle = host.memory();

    let mut keys_by_size = Vec::new();
    for &(label, size, count) in &SIZES {
        let (keys, times) = sequential_writes(&mut host, label, size, count);
        table.latency(&format!("write {label}"), &times, "sequential round trips, one durable commit each");
        keys_by_size.push(keys);
    }
    for (&(label, size, count), keys) in SIZES.iter().zip(&keys_by_size) {
        let (times, frames) = sequential_reads(&mut host, keys, size, count);
        let note = match frames {
            1 => "one reply frame".to_owned(),
            n => format!("reply reassembled from {n} chunk frames"),
        };
        table.latency(&format!("read {label}"), &times, &note);
    }

    let times = list_latency(&mut host);
    table.latency(&format!("list {LIST_ITEMS} items"), &times, "limit 50, metadata only");

    let (total, per_op) = pipelined_writes(&mut host);
    table.row(
        &format!("{PIPELINED_WRITES} pipelined small writes"),
        &format!("{} total", ms(total)),
        &format!("{:.0} writes/s", PIPELINED_WRITES as f64 / total.as_secs_f64()),
        &format!("{} per write; sent by a separate thread while replies are read", ms(per_op)),
    );

    let (search, no_match, scan) = search_full_session(&mut host);
    table.latency(
        &format!("search a {SEARCH_ITEMS} × 5 MB session, one match"),
        &search,
        &format!(
            "{SEARCH_ROUNDS} rounds; floor: one memchr pass over the same bytes in-process, {}",
            ms(median(&scan))
        ),
    );
    table.latency(
        "search the same session, no match",
        &no_match,
        &format!("ratio to that floor: {:.1}×", median(&no_match).as_secs_f64() / median(&scan).as_secs_f64()),
    );
    let times = list_query(&mut host);
    table.latency(&format!("list {LIST_ITEMS} items with a query"), &times, "descriptions and customMetadata only");

    let times = end_session(&mut host);
    table.latency(
        "endSession of ~50 MB",
        &times,
        &format!("{END_SESSION_ITEMS} items of 5 MB; {END_SESSION_ROUNDS} rounds"),
    );

    let whole_run = host.memory();
    host.close();

    // A fresh process that only reads the 5 MB items, so its high-water mark is the reads' alone.
    // LMDB's map pages count in RSS as file-backed memory, so the distinct items read are fixed here.
    let (_, size, _) = SIZES[3];
    let mut reader = Host::spawn(dir.path());
    let (times, _) = sequential_reads(&mut reader, &keys_by_size[3][..RSS_ITEMS], size, RSS_ITEMS * RSS_PASSES);
    let reads = reader.memory();
    reader.close();

    table.row("peak RSS, idle after hello", &kib(idle.hwm_kib), "", &idle.describe());
    table.row(
        "peak RSS, 5 MB reads",
        &kib(reads.hwm_kib),
        "",
        &format!(
            "fresh process, {RSS_ITEMS} items read {RSS_PASSES} times each (median {}); {}",
            ms(median(&times)),
            reads.describe()
        ),
    );
    table.row("peak RSS, whole run above", &kib(whole_run.hwm_kib), "", &whole_run.describe());

    table.print();
    println!();
    println!("binary: {BINARY}");
    println!("store: temporary directory under {}, removed afterwards", base.display());
    println!("machine: {} CPUs, {}", thread::available_parallelism().map_or(0, |n| n.get()), cpu_model());
    println!("bench took {:.1} s", started.elapsed().as_secs_f64());
}

/// Start-up to the first `hello` reply, and exit once stdin closes, over `SPAWNS` fresh processes.
fn startup(dir: &Path, table: &mut Table) {
    let mut first_hello = Vec::new();
    let mut exits = Vec::new();
    for _ in 0..SPAWNS {
        let start = Instant::now();
        let mut host = Host::spawn(dir);
        let reply = host.round_trip(|id| format!(r#"{{"id":{id},"op":"hello"}}"#)).1;
        first_hello.push(start.elapsed());
        assert_ok(&reply);
        let closing = Instant::now();
        host.close();
        exits.push(closing.elapsed());
    }
    table.latency(
        "start-up to first hello",
        &first_hello,
        &format!("spawn to reply, {SPAWNS} spawns (the first creates the store)"),
    );
    table.latency("exit after stdin closes", &exits, "close stdin to process reaped");
}

/// Writes `count` items of `size` bytes one at a time, spreading them over sessions so none passes its quota.
fn sequential_writes(
    host: &mut Host,
    label: &str,
    size: usize,
    count: usize,
) -> (Vec<(String, String)>, Vec<Duration>) {
    let per_session = (SESSION_BUDGET / size).clamp(1, 1_000);
    let tag: String = label.chars().filter(char::is_ascii_alphanumeric).collect();
    let mut keys = Vec::new();
    let mut times = Vec::new();
    for i in 0..count {
        let session = format!("conv_w{tag}-{}", i / per_session);
        let data = json_data(size, i);
        let (elapsed, reply) =
            host.round_trip(|id| write_request(id, &session, &format!("t{i:07}"), "n0000000", &data));
        let result = assert_ok(&reply);
        assert_eq!(result["dataSize"].as_u64(), Some(size as u64), "dataSize of a {label} write");
        keys.push((session, result["storageKey"].as_str().expect("storageKey").to_owned()));
        times.push(elapsed);
    }
    (keys, times)
}

/// Reads `count` items (cycling through `keys`) and checks each came back whole.
/// Returns the round trips and how many frames the last reply came in.
fn sequential_reads(host: &mut Host, keys: &[(String, String)], size: usize, count: usize) -> (Vec<Duration>, usize) {
    let mut times = Vec::new();
    for i in 0..count {
        let (session, key) = &keys[i % keys.len()];
        let (elapsed, reply) =
            host.round_trip(|id| format!(r#"{{"id":{id},"op":"read","sessionId":"{session}","storageKey":"{key}"}}"#));
        let item = &assert_ok(&reply)["item"];
        assert_eq!(item["dataSize"].as_u64(), Some(size as u64));
        assert_eq!(serde_json::to_string(&item["data"]).expect("data").len(), size, "data of {key}");
        times.push(elapsed);
    }
    (times, host.last_reply_frames)
}

/// Fills a session with `LIST_ITEMS` small items, then lists it `LIST_ROUNDS` times.
fn list_latency(host: &mut Host) -> Vec<Duration> {
    let session = "conv_list";
    for i in 0..LIST_ITEMS {
        let data = json_data(500, i);
        let reply = host.round_trip(|id| write_request(id, session, "tlist000", &format!("n{i:07}"), &data)).1;
        assert_ok(&reply);
    }
    (0..LIST_ROUNDS)
        .map(|_| {
            let (elapsed, reply) =
                host.round_trip(|id| format!(r#"{{"id":{id},"op":"list","sessionId":"{session}","limit":50}}"#));
            let result = assert_ok(&reply);
            assert_eq!(result["items"].as_array().map(Vec::len), Some(LIST_ITEMS));
            elapsed
        })
        .collect()
}

/// Fills a session with `SEARCH_ITEMS` items of 5 MB and times `search` for a word in one record of one
/// item, and for a word in none; the floor is one memchr pass over the same bytes in this process.
fn search_full_session(host: &mut Host) -> (Vec<Duration>, Vec<Duration>, Vec<Duration>) {
    let session = "conv_search";
    let mut all = Vec::new();
    for i in 0..SEARCH_ITEMS {
        let data = json_data(5_000_000, 100 + i);
        let reply = host.round_trip(|id| write_request(id, session, "tsearch0", &format!("n{i:07}"), &data)).1;
        assert_ok(&reply);
        all.push(data);
    }
    let query =
        |id: u64, words: &str| format!(r#"{{"id":{id},"op":"search","sessionId":"{session}","query":"{words}"}}"#);
    let timed = |host: &mut Host, words: &str, expected: usize| -> Vec<Duration> {
        (0..SEARCH_ROUNDS)
            .map(|_| {
                let (elapsed, reply) = host.round_trip(|id| query(id, words));
                let matches = assert_ok(&reply)["matches"].as_array().map_or(0, Vec::len);
                assert_eq!(matches, expected, "{words}");
                elapsed
            })
            .collect()
    };
    let one = timed(host, "résumé 104-1234.", 1);
    let none = timed(host, "zebra", 0);
    let scan = (0..SEARCH_ROUNDS)
        .map(|_| {
            let start = Instant::now();
            let hits: usize = all.iter().map(|d| memchr::memchr_iter(b'Z', d.as_bytes()).count()).sum();
            let elapsed = start.elapsed();
            assert_eq!(hits, 0);
            elapsed
        })
        .collect();
    (one, none, scan)
}

/// `list` with a query over the `list_latency` session.
fn list_query(host: &mut Host) -> Vec<Duration> {
    (0..LIST_ROUNDS)
        .map(|_| {
            let (elapsed, reply) = host.round_trip(|id| {
                format!(r#"{{"id":{id},"op":"list","sessionId":"conv_list","query":"bench n0000007"}}"#)
            });
            assert_eq!(assert_ok(&reply)["itemCount"].as_u64(), Some(1));
            elapsed
        })
        .collect()
}

/// Sends `PIPELINED_WRITES` small writes from another thread while this one reads the replies.
/// Returns the time from the first byte sent to the last reply, and that time per write.
fn pipelined_writes(host: &mut Host) -> (Duration, Duration) {
    let first_id = host.next_id;
    let frames: Vec<Vec<u8>> = (0..PIPELINED_WRITES)
        .map(|i| {
            frame(&write_request(
                first_id + i as u64,
                "conv_pipelined",
                "tpipe000",
                &format!("n{i:07}"),
                &json_data(200, i),
            ))
        })
        .collect();
    host.next_id += PIPELINED_WRITES as u64;
    let mut stdin = host.stdin.take().expect("stdin open");
    let start = Instant::now();
    let sender = thread::spawn(move || {
        for frame in &frames {
            stdin.write_all(frame).expect("send a pipelined write");
        }
        stdin.flush().expect("flush");
        stdin
    });
    let replies: Vec<Value> = (0..PIPELINED_WRITES).map(|_| host.read_reply()).collect();
    let total = start.elapsed();
    host.stdin = Some(sender.join().expect("sender thread"));
    for (i, reply) in replies.iter().enumerate() {
        assert_eq!(reply["id"].as_u64(), Some(first_id + i as u64), "replies come in request order");
        assert_ok(reply);
    }
    (total, total / PIPELINED_WRITES as u32)
}

/// Fills a session with ~50 MB and ends it, `END_SESSION_ROUNDS` times.
fn end_session(host: &mut Host) -> Vec<Duration> {
    let data = json_data(5_000_000, 7);
    (0..END_SESSION_ROUNDS)
        .map(|round| {
            let session = format!("conv_end-{round}");
            for i in 0..END_SESSION_ITEMS {
                let reply = host.round_trip(|id| write_request(id, &session, "tend0000", &format!("n{i:07}"), &data)).1;
                assert_ok(&reply);
            }
            let (elapsed, reply) =
                host.round_trip(|id| format!(r#"{{"id":{id},"op":"endSession","sessionId":"{session}"}}"#));
            let result = assert_ok(&reply);
            assert_eq!(result["deletedItems"].as_u64(), Some(END_SESSION_ITEMS as u64));
            assert_eq!(result["freedBytes"].as_u64(), Some((END_SESSION_ITEMS * 5_000_000) as u64));
            elapsed
        })
        .collect()
}

/// A running host with its pipes.
struct Host {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
    /// How many frames carried the last reply read.
    last_reply_frames: usize,
}

impl Host {
    fn spawn(dir: &Path) -> Host {
        let mut child = Command::new(BINARY)
            .arg(ORIGIN_ARG)
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
    fn round_trip(&mut self, build: impl FnOnce(u64) -> String) -> (Duration, Value) {
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

    fn read_reply(&mut self) -> Value {
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
    fn memory(&self) -> Memory {
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

    /// Closes stdin and waits for the host to exit on its own.
    fn close(mut self) {
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
struct Memory {
    hwm_kib: u64,
    rss_kib: u64,
    anon_kib: u64,
    file_kib: u64,
}

impl Memory {
    fn describe(&self) -> String {
        format!(
            "VmRSS then: {} ({} anon, {} file-backed incl. LMDB map)",
            kib(self.rss_kib),
            kib(self.anon_kib),
            kib(self.file_kib)
        )
    }
}

/// A length-prefixed frame.
fn frame(json: &str) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(json.len() + 4);
    bytes.extend_from_slice(&u32::try_from(json.len()).expect("frame under 4 GiB").to_ne_bytes());
    bytes.extend_from_slice(json.as_bytes());
    bytes
}

/// A `write` request; `task` and `turn` must be 8 of [a-z0-9].
fn write_request(id: u64, session: &str, task: &str, turn: &str, data: &str) -> String {
    format!(
        r#"{{"id":{id},"op":"write","sessionId":"{session}","taskId":"{task}","turnId":"{turn}","description":"bench item {task}/{turn}","data":{data}}}"#
    )
}

/// Compact JSON of exactly `size` bytes shaped like an agent's cached result: an array of email-like
/// records (with some escapes and non-ASCII text), padded to the size. `seed` varies the content.
fn json_data(size: usize, seed: usize) -> String {
    assert!(size >= 64);
    let mut out = String::with_capacity(size);
    out.push_str(r#"{"emails":["#);
    let tail = r#"],"pad":""}"#;
    let mut n = 0;
    loop {
        let record = format!(
            r#"{{"n":{n},"from":"user{seed}@example.com","subject":"Re: quarterly report #{n} \"draft\"","body":"Hello — see the numbers below.\nLine one\tof the body; naïve café résumé {seed}-{n}. Lorem ipsum dolor sit amet, consectetur adipiscing elit."}}"#
        );
        let comma = usize::from(n > 0);
        if out.len() + comma + record.len() + tail.len() > size {
            break;
        }
        if n > 0 {
            out.push(',');
        }
        out.push_str(&record);
        n += 1;
    }
    out.push_str(r#"],"pad":""#);
    let pad = size - out.len() - 2;
    out.extend(std::iter::repeat_n('x', pad));
    out.push_str(r#""}"#);
    assert_eq!(out.len(), size);
    out
}

fn assert_ok(reply: &Value) -> &Value {
    assert_eq!(reply["ok"], Value::Bool(true), "request failed: {reply}");
    &reply["result"]
}

#[derive(Default)]
struct Table {
    rows: Vec<[String; 4]>,
}

impl Table {
    fn latency(&mut self, what: &str, times: &[Duration], note: &str) {
        let note = format!("n={}, min {}, max {}; {note}", times.len(), ms(min(times)), ms(max(times)));
        self.row(what, &ms(median(times)), &ms(p95(times)), &note);
    }

    fn row(&mut self, what: &str, median: &str, p95: &str, note: &str) {
        self.rows.push([what.to_owned(), median.to_owned(), p95.to_owned(), note.to_owned()]);
    }

    fn print(&self) {
        println!();
        println!("| measurement | median (or value) | p95 (or rate) | notes |");
        println!("|---|---:|---:|---|");
        for [what, median, p95, note] in &self.rows {
            println!("| {what} | {median} | {p95} | {note} |");
        }
    }
}

fn sorted(times: &[Duration]) -> Vec<Duration> {
    let mut sorted = times.to_vec();
    sorted.sort();
    sorted
}

fn median(times: &[Duration]) -> Duration {
    let sorted = sorted(times);
    let n = sorted.len();
    if n % 2 == 1 { sorted[n / 2] } else { (sorted[n / 2 - 1] + sorted[n / 2]) / 2 }
}

/// Nearest-rank 95th percentile.
fn p95(times: &[Duration]) -> Duration {
    let sorted = sorted(times);
    sorted[(sorted.len() * 95).div_ceil(100) - 1]
}

fn min(times: &[Duration]) -> Duration {
    times.iter().copied().min().unwrap_or_default()
}

fn max(times: &[Duration]) -> Duration {
    times.iter().copied().max().unwrap_or_default()
}

fn ms(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1e3;
    if ms < 10.0 { format!("{ms:.2} ms") } else { format!("{ms:.1} ms") }
}

fn kib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find_map(|line| line.strip_prefix("model name")?.split_once(':').map(|(_, m)| m.trim().to_owned()))
        })
        .unwrap_or_else(|| "unknown CPU".to_owned())
}
