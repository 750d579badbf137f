//! The host's benchmark: the real `llm-cache-host` binary driven over its stdin and stdout, as a browser
//! drives it, against a floor measured in the same run.
//!
//! Run it with `cargo bench --bench host` (`./bench.sh` runs it and the Chromium benchmark). It prints
//! markdown tables. With `LLM_CACHE_BENCH_PLOTS=DIR` it also writes the growth plots there as SVG.
//! `LLM_CACHE_BENCH_RUNS` sets the runs per figure (default 20). The stores live in a temporary
//! directory under `$LLM_CACHE_BENCH_DIR` if set, else under the system's temp directory; every write
//! is a durable LMDB commit, so figures depend on that disk. `LLM_CACHE_BENCH_NO_GROWTH=1` stops after
//! the table against the floor.
//!
//! - **Against the floor** (`minimal.rs`): a minimal host doing the same LMDB work with nothing else,
//!   started by this same executable. Each pair of measurements is interleaved run by run (ours, then
//!   the floor, then the floor, then ours, ...) so the machine's noise falls on both alike; the ratio
//!   is the median of the per-run ratios.
//! - **Growth**: point operations, a list page and `endSession` as one session grows (100, 1,000,
//!   10,000 items) and as the store holds more sessions (1, 100, 1,000).
//!
//! Latencies are full round trips seen by the client: from the first byte of the request written to
//! the last byte of the reply read (chunk frames parsed and their parts joined). Requests are built
//! before the clock starts and replies are checked after it stops. CPU is the process's own, from
//! Linux's schedstat.

#[path = "host/client.rs"]
mod client;
#[path = "host/data.rs"]
mod data;
#[path = "host/minimal.rs"]
mod minimal;
#[path = "host/plot.rs"]
mod plot;

use std::path::Path;
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use client::{Host, assert_ok, frame, kib, write_request};
use data::Kind;
use serde_json::Value;

const BINARY: &str = env!("CARGO_BIN_EXE_llm-cache-host");
const ORIGIN_ARG: &str = "chrome-extension://benchext/";
/// Set in the environment of the copy of this executable that runs the minimal host.
const ROLE: &str = "LLM_CACHE_BENCH_ROLE";

/// Round trips timed together in rows whose single round trip is too short to time alone (a `hello`, a
/// 3 KB read): the figure is the batch's time over its size.
const BATCH: usize = 50;
/// Item sizes against the floor (decimal units; 5 MB is under the 5 MiB item limit).
const SIZES: [(&str, usize); 3] = [("3 KB", 3_000), ("1 MB", 1_000_000), ("5 MB", 5_000_000)];
/// Keep a session this far under its 50 MiB quota when spreading big writes over sessions.
const SESSION_BUDGET: usize = 45_000_000;
/// Items of 5 MB in the session `search` looks through (45 MB of data).
const SEARCH_ITEMS: usize = 9;
/// Small writes sent back to back for the throughput measurement.
const PIPELINED_WRITES: usize = 1_000;
/// Reads of the 5 MB item a fresh process writes, for its memory.
const MEMORY_READS: usize = 20;
/// Session sizes and store sizes (in sessions) for the growth curves.
const SESSION_ITEMS: [usize; 3] = [100, 1_000, 10_000];
const STORE_SESSIONS: [usize; 3] = [1, 100, 1_000];
/// Items of each session in the store-growth curve, and the size of every growth item.
const ITEMS_PER_SESSION: usize = 10;
const GROWTH_ITEM: usize = 1_000;
/// Sessions ended per point of the growth curves (each is filled first).
const END_ROUNDS: usize = 5;

fn main() {
    if let Some(role) = std::env::var_os(ROLE) {
        return minimal::serve(role == "memcpy");
    }
    // `cargo bench` passes `--bench`; `cargo test --benches` (or `--all-targets`) does not, and must not
    // spend minutes here.
    if !std::env::args().any(|arg| arg == "--bench") {
        println!("host benchmark: run it with `cargo bench --bench host`");
        return;
    }
    let runs: usize = std::env::var("LLM_CACHE_BENCH_RUNS").ok().and_then(|n| n.parse().ok()).unwrap_or(20);
    let base = std::env::var_os("LLM_CACHE_BENCH_DIR").map(std::path::PathBuf::from).unwrap_or_else(std::env::temp_dir);
    let dir = tempfile::Builder::new().prefix("llm-cache-bench-").tempdir_in(&base).expect("temp dir");
    let started = Instant::now();
    let stores =
        Stores { ours: dir.path().join("ours"), floor: dir.path().join("floor"), memcpy: dir.path().join("memcpy") };

    let mut table = Table::default();
    spawn_to_first_reply(&stores, runs, &mut table);
    {
        let (mut ours, mut floor) = (stores.ours(), stores.floor());
        let ack = pair(runs, &mut ours, &mut floor, |host, _| hellos(host, BATCH));
        table.pair(
            "round trip of a `hello` / a bare ack",
            &ack,
            &format!("the pipe round trip alone; {BATCH} per run, time / {BATCH}"),
        );
        for (label, size) in SIZES {
            for kind in [Kind::Text, Kind::Records] {
                writes_and_reads(&mut ours, &mut floor, label, size, kind, runs, &mut table);
            }
        }
        one_field(&mut ours, &mut floor, runs, &mut table);
        gzip_reads(&stores, &mut ours, runs, &mut table);
        let search = search_full_session(&mut ours, runs);
        let note = "every byte screened; the floor is one memchr pass over the same bytes in the bench's process";
        table.pair(&format!("search a session of {SEARCH_ITEMS} × 5 MB, no match"), &search, note);
        pipelined(&mut ours, &mut floor, &mut table);
        floor_is_plausible(&stores, &mut floor, runs, &mut table);
        ours.close();
        floor.close();
    }
    memory(&stores, &mut table);
    table.print(&format!("Against the floor: {runs} interleaved runs each"));
    if std::env::var_os("LLM_CACHE_BENCH_NO_GROWTH").is_some() {
        return;
    }

    let by_items = session_growth(&stores.ours, runs);
    let by_sessions = store_growth(&dir.path().join("growth"), runs);
    print_growth("items in the session", &SESSION_ITEMS, &by_items);
    print_growth("sessions in the store", &STORE_SESSIONS, &by_sessions);
    if let Some(plots) = std::env::var_os("LLM_CACHE_BENCH_PLOTS") {
        let plots = Path::new(&plots);
        std::fs::create_dir_all(plots).expect("plot dir");
        let lines = |curves: &[(String, Vec<Vec<Duration>>)], xs: &[usize]| -> Vec<plot::Line> {
            let points = |times: &Vec<Vec<Duration>>| {
                xs.iter().zip(times).map(|(&x, t)| (x as f64, median(t).as_secs_f64() * 1e3)).collect()
            };
            curves.iter().map(|(name, times)| plot::Line { name: name.clone(), points: points(times) }).collect()
        };
        let title = "Median latency as one session grows (1 KB items, list pages of 50)";
        let svg = plot::svg(title, "items in the session", &lines(&by_items, &SESSION_ITEMS));
        std::fs::write(plots.join("growth-session.svg"), svg).expect("write plot");
        let title = format!("Median latency as the store grows (sessions of {ITEMS_PER_SESSION} items of 1 KB)");
        let svg = plot::svg(&title, "sessions in the store", &lines(&by_sessions, &STORE_SESSIONS));
        std::fs::write(plots.join("growth-store.svg"), svg).expect("write plot");
        println!("\nplots written to {}", plots.display());
    }

    println!();
    println!("binary: {BINARY}");
    println!("stores: temporary directories under {}, removed afterwards", base.display());
    println!("machine: {} CPUs, {}", thread::available_parallelism().map_or(0, |n| n.get()), cpu_model());
    println!("bench took {:.0} s", started.elapsed().as_secs_f64());
}

/// Where the two hosts keep their stores, and how each is started.
struct Stores {
    ours: std::path::PathBuf,
    floor: std::path::PathBuf,
    memcpy: std::path::PathBuf,
}

impl Stores {
    fn ours(&self) -> Host {
        ours_at(&self.ours)
    }

    fn floor(&self) -> Host {
        let mut command = Command::new(std::env::current_exe().expect("this executable"));
        command.env(ROLE, "minimal");
        Host::start(command, &self.floor)
    }

    /// The floor that keeps each read's frames and resends them: the pipe alone (see `minimal.rs`).
    fn memcpy(&self) -> Host {
        let mut command = Command::new(std::env::current_exe().expect("this executable"));
        command.env(ROLE, "memcpy");
        Host::start(command, &self.memcpy)
    }
}

fn ours_at(dir: &Path) -> Host {
    let mut command = Command::new(BINARY);
    command.arg(ORIGIN_ARG);
    Host::start(command, dir)
}

/// Times `op` on both hosts, `runs` times each, alternating which goes first. `op` gets the run's
/// index and returns the round trip's time.
fn pair(runs: usize, ours: &mut Host, floor: &mut Host, mut op: impl FnMut(&mut Host, usize) -> Duration) -> Pair {
    let cpu = (ours.cpu(), floor.cpu());
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for run in 0..runs {
        if run % 2 == 0 {
            a.push(op(ours, run));
            b.push(op(floor, run));
        } else {
            b.push(op(floor, run));
            a.push(op(ours, run));
        }
    }
    let cpu = ((ours.cpu() - cpu.0) / runs as u32, (floor.cpu() - cpu.1) / runs as u32);
    Pair { ours: a, floor: b, cpu }
}

/// One measurement of both hosts.
struct Pair {
    ours: Vec<Duration>,
    floor: Vec<Duration>,
    /// CPU per run, ours and the floor's.
    cpu: (Duration, Duration),
}

fn hello(host: &mut Host) -> Duration {
    hellos(host, 1)
}

/// `n` `hello`s one after another: the time per round trip.
fn hellos(host: &mut Host, n: usize) -> Duration {
    let (elapsed, replies) = host.round_trips(n, |id, _| format!(r#"{{"id":{id},"op":"hello"}}"#));
    replies.iter().for_each(|reply| _ = assert_ok(reply));
    elapsed
}

/// Spawn to the first reply, and exit once stdin closes, for fresh processes of each host.
fn spawn_to_first_reply(stores: &Stores, runs: usize, table: &mut Table) {
    let mut first = Pair { ours: Vec::new(), floor: Vec::new(), cpu: Default::default() };
    for run in 0..runs {
        let time = |start: &dyn Fn() -> Host, into: &mut Vec<Duration>| {
            let clock = Instant::now();
            let mut host = start();
            hello(&mut host);
            into.push(clock.elapsed());
            host.close();
        };
        if run % 2 == 0 {
            time(&|| stores.ours(), &mut first.ours);
            time(&|| stores.floor(), &mut first.floor);
        } else {
            time(&|| stores.floor(), &mut first.floor);
            time(&|| stores.ours(), &mut first.ours);
        }
    }
    table.pair("spawn → first reply", &first, "a fresh process each run; the first creates the store");
}

/// Writes of `size` bytes of `kind`, then reads of what was written, on both hosts.
fn writes_and_reads(
    ours: &mut Host,
    floor: &mut Host,
    label: &str,
    size: usize,
    kind: Kind,
    runs: usize,
    table: &mut Table,
) {
    let items: Vec<String> = (0..runs).map(|run| data::json(kind, size, run as u64)).collect();
    let per_session = (SESSION_BUDGET / size).clamp(1, 1_000);
    let tag = format!("{}{}", kind.name(), size);
    let key = |run: usize| (format!("conv_{tag}-{}", run / per_session), format!("t{run:07}"));
    let writes = pair(runs, ours, floor, |host, run| {
        let (session, task) = key(run);
        let (elapsed, reply) = host.round_trip(|id| write_request(id, &session, &task, "n0000000", &items[run]));
        assert_eq!(assert_ok(&reply)["dataSize"].as_u64(), Some(size as u64));
        elapsed
    });
    let note = "one durable commit each";
    table.pair(&format!("write {label} of {}", kind.name()), &writes, note);
    let mut frames = 0;
    // Small reads are timed in batches: the same item read `batch` times in a row.
    let batch = if size < 100_000 { BATCH } else { 1 };
    let reads = pair(runs, ours, floor, |host, run| {
        let (session, task) = key(run);
        let (elapsed, replies) = host.round_trips(batch, |id, _| {
            format!(r#"{{"id":{id},"op":"read","sessionId":"{session}","storageKey":"{session}_{task}_n0000000"}}"#)
        });
        for reply in &replies {
            let data = &assert_ok(reply)["item"]["data"];
            assert_eq!(serde_json::to_string(data).expect("data").len(), size, "the item came back whole");
        }
        frames = host.last_reply_frames;
        elapsed
    });
    let mut note = if frames > 1 { format!("{frames} chunk frames") } else { "one frame".to_owned() };
    if batch > 1 {
        note.push_str(&format!("; {batch} per run, time / {batch}"));
    }
    table.pair(&format!("read {label} of {}", kind.name()), &reads, &note);
}

/// Reads of 1 MB of text by a client that asked for gzip in `hello`, against the same reads sent
/// plain by another host on the same store: what compressing costs the host. (Chrome's transport then
/// carries the smaller reply; the Chromium benchmark measures that.)
fn gzip_reads(stores: &Stores, plain: &mut Host, runs: usize, table: &mut Table) {
    let mut gzip = stores.ours();
    let hello = gzip.round_trip(|id| format!(r#"{{"id":{id},"op":"hello","encodings":["gzip"]}}"#)).1;
    assert_eq!(assert_ok(&hello)["encoding"], "gzip");
    let data = data::json(Kind::Text, 1_000_000, 77);
    assert_ok(&gzip.round_trip(|id| write_request(id, "conv_gzip", "tgzip000", "n0000000", &data)).1);
    let mut wire = 0;
    let reads = pair(runs, &mut gzip, plain, |host, _| {
        let (elapsed, reply) = host.round_trip(|id| {
            format!(r#"{{"id":{id},"op":"read","sessionId":"conv_gzip","storageKey":"conv_gzip_tgzip000_n0000000"}}"#)
        });
        assert_eq!(reply["ok"], Value::Bool(true));
        if reply["payload"].is_string() {
            wire = host.last_reply_bytes;
        }
        elapsed
    });
    gzip.close();
    assert!(wire > 0, "the reply to the client that asked came gzipped");
    let note =
        format!("the floor is the same read sent plain; the reply is {} bytes instead of 1,000,000 and more", wire);
    table.pair("read 1 MB of text, gzipped", &reads, &note);
}

/// A pointer read of one field near the end of a 5 MB item of records: ours finds it in one pass over
/// the stored bytes; the floor parses the item whole and picks.
fn one_field(ours: &mut Host, floor: &mut Host, runs: usize, table: &mut Table) {
    let data = data::json(Kind::Records, 5_000_000, 42);
    let records = serde_json::from_str::<Value>(&data).expect("records")["emails"].as_array().map_or(0, Vec::len);
    let last = records - 1;
    for host in [&mut *ours, &mut *floor] {
        assert_ok(&host.round_trip(|id| write_request(id, "conv_field", "tfield00", "n0000000", &data)).1);
    }
    let pair = pair(runs, ours, floor, |host, _| {
        let (elapsed, reply) = host.round_trip(|id| {
            format!(
                r#"{{"id":{id},"op":"read","sessionId":"conv_field","storageKey":"conv_field_tfield00_n0000000","pointer":"/emails/{last}/subject"}}"#
            )
        });
        assert_eq!(assert_ok(&reply)["item"]["data"].as_str().map(|s| s.is_empty()), Some(false));
        elapsed
    });
    table.pair(
        &format!("one field of a 5 MB item (`/emails/{last}/subject`)"),
        &pair,
        "the floor parses the whole item, then picks",
    );
}

/// Fills a session with `SEARCH_ITEMS` items of 5 MB of records and times a `search` for a word that
/// no item holds: every byte is screened. The floor is one memchr pass over the same bytes in this
/// process (for a byte no item holds).
fn search_full_session(host: &mut Host, runs: usize) -> Pair {
    let session = "conv_search";
    let mut all = Vec::new();
    for i in 0..SEARCH_ITEMS {
        let data = data::json(Kind::Records, 5_000_000, 100 + i as u64);
        let reply = host.round_trip(|id| write_request(id, session, "tsearch0", &format!("n{i:07}"), &data)).1;
        assert_ok(&reply);
        all.push(data);
    }
    // No item holds a word with a digit in it.
    let none = (0..runs)
        .map(|_| {
            let (elapsed, reply) = host
                .round_trip(|id| format!(r#"{{"id":{id},"op":"search","sessionId":"{session}","query":"zebra42"}}"#));
            assert_eq!(assert_ok(&reply)["matches"].as_array().map(Vec::len), Some(0));
            elapsed
        })
        .collect();
    let scan = (0..runs)
        .map(|_| {
            let start = Instant::now();
            let hits: usize = all.iter().map(|d| memchr::memchr_iter(b'#', d.as_bytes()).count()).sum();
            let elapsed = start.elapsed();
            assert_eq!(hits, 0);
            elapsed
        })
        .collect();
    Pair { ours: none, floor: scan, cpu: Default::default() }
}

/// `PIPELINED_WRITES` writes of 1 KB sent back to back by another thread while this one reads the
/// replies; the time from the first byte sent to the last reply.
fn pipelined(ours: &mut Host, floor: &mut Host, table: &mut Table) {
    let mut rates = Vec::new();
    for host in [ours, floor] {
        let first_id = host.next_id;
        let frames: Vec<Vec<u8>> = (0..PIPELINED_WRITES)
            .map(|i| {
                let data = data::json(Kind::Records, 1_000, i as u64);
                frame(&write_request(first_id + i as u64, "conv_pipelined", "tpipe000", &format!("n{i:07}"), &data))
            })
            .collect();
        host.next_id += PIPELINED_WRITES as u64;
        let mut stdin = host.stdin.take().expect("stdin open");
        let start = Instant::now();
        let sender = thread::spawn(move || {
            use std::io::Write;
            for frame in &frames {
                stdin.write_all(frame).expect("send a pipelined write");
            }
            stdin.flush().expect("flush");
            stdin
        });
        let (end, replies) = host.read_replies(PIPELINED_WRITES, first_id);
        let total = end - start;
        host.stdin = Some(sender.join().expect("sender thread"));
        for (i, reply) in replies.iter().enumerate() {
            assert_eq!(reply["id"].as_u64(), Some(first_id + i as u64), "replies come in request order");
            assert_ok(reply);
        }
        rates.push(PIPELINED_WRITES as f64 / total.as_secs_f64());
    }
    table.row([
        format!("{PIPELINED_WRITES} pipelined writes of 1 KB"),
        format!("{:.0}/s", rates[0]),
        String::new(),
        format!("{:.0}/s", rates[1]),
        String::new(),
        format!("{:.1}× the floor's rate", rates[0] / rates[1]),
        String::new(),
        "ours commits the writes waiting together (group commit); the floor commits each".to_owned(),
    ]);
}

/// A fresh process of each host writes a 5 MB item and reads it back `MEMORY_READS` times: its RSS idle,
/// its peak RSS, and its heap (anonymous memory) after the first read and after the last.
fn memory(stores: &Stores, table: &mut Table) {
    let mut cells = Vec::new();
    for (n, start) in [Stores::ours, Stores::floor].into_iter().enumerate() {
        let data = data::json(Kind::Text, 5_000_000, 99);
        let mut host = start(stores);
        hello(&mut host);
        let idle = host.memory();
        let task = format!("tmem{n:04}");
        let reply = host.round_trip(|id| write_request(id, "conv_memory", &task, "n0000000", &data)).1;
        assert_ok(&reply);
        drop(data);
        let read = |host: &mut Host| {
            let reply = host.round_trip(|id| {
                format!(
                    r#"{{"id":{id},"op":"read","sessionId":"conv_memory","storageKey":"conv_memory_{task}_n0000000"}}"#
                )
            });
            assert_eq!(assert_ok(&reply.1)["item"]["dataSize"].as_u64(), Some(5_000_000));
        };
        read(&mut host);
        let first = host.memory();
        for _ in 1..MEMORY_READS {
            read(&mut host);
        }
        let last = host.memory();
        host.close();
        cells.push((idle, first, last));
    }
    let [(ours_idle, ours_first, ours_last), (floor_idle, floor_first, floor_last)] = cells[..] else { unreachable!() };
    table.row([
        "RSS idle after `hello`".to_owned(),
        kib(ours_idle.rss_kib),
        format!("heap {}", kib(ours_idle.anon_kib)),
        kib(floor_idle.rss_kib),
        format!("heap {}", kib(floor_idle.anon_kib)),
        format!("{:.2}×", ours_idle.rss_kib as f64 / floor_idle.rss_kib.max(1) as f64),
        String::new(),
        "heap = anonymous memory; the rest is the binary and the LMDB map".to_owned(),
    ]);
    table.row([
        format!("peak RSS: write 5 MB, read it {MEMORY_READS} times"),
        kib(ours_last.hwm_kib),
        format!("heap {} after 1 read, {} after {MEMORY_READS}", kib(ours_first.anon_kib), kib(ours_last.anon_kib)),
        kib(floor_last.hwm_kib),
        format!("heap {} after 1 read, {} after {MEMORY_READS}", kib(floor_first.anon_kib), kib(floor_last.anon_kib)),
        format!("{:.2}×", ours_last.hwm_kib as f64 / floor_last.hwm_kib.max(1) as f64),
        String::new(),
        format!("a fresh process each; of ours: {}", ours_last.describe()),
    ]);
}

/// The floor against the pipe alone: 5 MB of text read from the floor, and from the same host keeping
/// the read's frames and resending them (`memcpy`). Were the floor far above this row's, it would be
/// doing work a host need not do.
fn floor_is_plausible(stores: &Stores, floor: &mut Host, runs: usize, table: &mut Table) {
    let data = data::json(Kind::Text, 5_000_000, 55);
    let mut memcpy = stores.memcpy();
    let request = |id: u64| {
        format!(r#"{{"id":{id},"op":"read","sessionId":"conv_plain","storageKey":"conv_plain_tplain00_n0000000"}}"#)
    };
    for host in [&mut *floor, &mut memcpy] {
        assert_ok(&host.round_trip(|id| write_request(id, "conv_plain", "tplain00", "n0000000", &data)).1);
        assert_ok(&host.round_trip(request).1);
    }
    let reads = pair(runs, floor, &mut memcpy, |host, _| {
        let (elapsed, reply) = host.round_trip(request);
        assert_eq!(assert_ok(&reply)["item"]["dataSize"].as_u64(), Some(5_000_000));
        elapsed
    });
    memcpy.close();
    let note = "here \"ours\" is the floor, and the floor a host that resends the frames it kept: the pipe alone";
    table.pair("read 5 MB of text: the floor / the pipe alone", &reads, note);
}

/// The growth curves' operations, each a list of runs per point.
type Curves = Vec<(String, Vec<Vec<Duration>>)>;

/// Point operations, a list page and `endSession` on sessions of each size in `SESSION_ITEMS`.
fn session_growth(store: &Path, runs: usize) -> Curves {
    let mut host = ours_at(store);
    let mut curves = new_curves();
    for (point, &items) in SESSION_ITEMS.iter().enumerate() {
        let session = format!("conv_grow{items}");
        fill(&mut host, &session, items);
        measure_point(&mut host, &session, items, runs, &mut curves, point);
        curves[4].1.push(end_rounds(&mut host, &format!("conv_end{items}"), items));
    }
    host.close();
    curves
}

/// The same operations on one session of `ITEMS_PER_SESSION` items, as the store holds each number of
/// sessions in `STORE_SESSIONS`.
fn store_growth(store: &Path, runs: usize) -> Curves {
    let mut host = ours_at(store);
    let mut curves = new_curves();
    let mut sessions = 0;
    for (point, &wanted) in STORE_SESSIONS.iter().enumerate() {
        while sessions < wanted {
            fill(&mut host, &format!("conv_store{sessions}"), ITEMS_PER_SESSION);
            sessions += 1;
        }
        let session = format!("conv_store{}", sessions / 2);
        measure_point(&mut host, &session, ITEMS_PER_SESSION, runs, &mut curves, point);
        curves[4].1.push(end_rounds(&mut host, &format!("conv_storeend{point}"), ITEMS_PER_SESSION));
    }
    host.close();
    curves
}

fn new_curves() -> Curves {
    ["write 1 KB", "read 1 KB", "list: first page", "list: middle page", "endSession"]
        .into_iter()
        .map(|name| (name.to_owned(), Vec::new()))
        .collect()
}

/// Writes, reads and list pages on `session` (which holds `items` items), `runs` times each.
fn measure_point(host: &mut Host, session: &str, items: usize, runs: usize, curves: &mut Curves, point: usize) {
    let mut rng = data::rng(point as u64);
    let data = data::json(Kind::Records, GROWTH_ITEM, 7);
    let writes = (0..runs)
        .map(|run| {
            let (elapsed, reply) =
                host.round_trip(|id| write_request(id, session, &format!("x{point:03}{run:04}"), "n0000000", &data));
            assert_ok(&reply);
            elapsed
        })
        .collect();
    let reads = (0..runs)
        .map(|_| {
            let n = rng.below(items);
            let (elapsed, reply) = host.round_trip(|id| {
                format!(
                    r#"{{"id":{id},"op":"read","sessionId":"{session}","storageKey":"{session}_tfill000_n{n:07}"}}"#
                )
            });
            assert_eq!(assert_ok(&reply)["item"]["dataSize"].as_u64(), Some(GROWTH_ITEM as u64));
            elapsed
        })
        .collect();
    let first_page = list_pages(host, session, runs, None);
    // A page from the middle: the cursor the pages before it would have handed back.
    let mut cursor = None;
    for _ in 0..(items / 2) / 50 {
        let reply = host.round_trip(|id| list_request(id, session, cursor.as_deref())).1;
        cursor = assert_ok(&reply)["nextCursor"].as_str().map(str::to_owned);
    }
    let middle = list_pages(host, session, runs, cursor.as_deref());
    for (curve, times) in curves.iter_mut().zip([writes, reads, first_page, middle]) {
        curve.1.push(times);
    }
}

fn list_request(id: u64, session: &str, cursor: Option<&str>) -> String {
    match cursor {
        Some(cursor) => format!(r#"{{"id":{id},"op":"list","sessionId":"{session}","limit":50,"cursor":"{cursor}"}}"#),
        None => format!(r#"{{"id":{id},"op":"list","sessionId":"{session}","limit":50}}"#),
    }
}

fn list_pages(host: &mut Host, session: &str, runs: usize, cursor: Option<&str>) -> Vec<Duration> {
    (0..runs)
        .map(|_| {
            let (elapsed, reply) = host.round_trip(|id| list_request(id, session, cursor));
            let listed = assert_ok(&reply)["items"].as_array().map_or(0, Vec::len);
            assert!(listed >= 10, "a page of items, got {listed}");
            elapsed
        })
        .collect()
}

/// Fills `session` with `items` items of 1 KB, pipelined so the host commits them in groups.
fn fill(host: &mut Host, session: &str, items: usize) {
    let data = data::json(Kind::Records, GROWTH_ITEM, 3);
    let first_id = host.next_id;
    let mut stdin = host.stdin.take().expect("stdin open");
    let requests: Vec<Vec<u8>> = (0..items)
        .map(|n| frame(&write_request(first_id + n as u64, session, "tfill000", &format!("n{n:07}"), &data)))
        .collect();
    host.next_id += items as u64;
    let sender = thread::spawn(move || {
        use std::io::Write;
        for request in &requests {
            stdin.write_all(request).expect("send");
        }
        stdin
    });
    for _ in 0..items {
        assert_ok(&host.read_reply());
    }
    host.stdin = Some(sender.join().expect("sender"));
}

/// `END_ROUNDS` sessions named `prefix-N`, each filled with `items` items and then ended: the ends' times.
fn end_rounds(host: &mut Host, prefix: &str, items: usize) -> Vec<Duration> {
    (0..END_ROUNDS)
        .map(|round| {
            let doomed = format!("{prefix}-{round}");
            fill(host, &doomed, items);
            end(host, &doomed, items)
        })
        .collect()
}

fn end(host: &mut Host, session: &str, items: usize) -> Duration {
    let (elapsed, reply) = host.round_trip(|id| format!(r#"{{"id":{id},"op":"endSession","sessionId":"{session}"}}"#));
    assert_eq!(assert_ok(&reply)["deletedItems"].as_u64(), Some(items as u64));
    elapsed
}

fn print_growth(x_label: &str, xs: &[usize], curves: &Curves) {
    println!();
    println!("Growth by {x_label}: median (min–max) in ms");
    println!();
    let header: Vec<String> = xs.iter().map(usize::to_string).collect();
    println!("| {x_label}: | {} |", header.join(" | "));
    println!("|---|{}", "---:|".repeat(xs.len()));
    for (name, points) in curves {
        let cells: Vec<String> = points.iter().map(|times| spread(times)).collect();
        println!("| {name} | {} |", cells.join(" | "));
    }
}

/// "1.23 (0.98–2.10)" in ms.
fn spread(times: &[Duration]) -> String {
    format!("{} ({}–{})", ms(median(times)), ms(min(times)), ms(max(times)))
}

#[derive(Default)]
struct Table {
    rows: Vec<[String; 8]>,
}

impl Table {
    fn pair(&mut self, what: &str, pair: &Pair, note: &str) {
        let ratios: Vec<f64> =
            pair.ours.iter().zip(&pair.floor).map(|(a, b)| a.as_secs_f64() / b.as_secs_f64()).collect();
        let cpu = match pair.cpu {
            (ours, floor) if !floor.is_zero() => {
                format!("{} / {} ({:.1}×)", ms(ours), ms(floor), ours.as_secs_f64() / floor.as_secs_f64())
            }
            _ => String::new(),
        };
        self.row([
            what.to_owned(),
            ms(median(&pair.ours)),
            format!("{}–{}", ms(min(&pair.ours)), ms(max(&pair.ours))),
            ms(median(&pair.floor)),
            format!("{}–{}", ms(min(&pair.floor)), ms(max(&pair.floor))),
            format!("{:.2}×", median_f64(&ratios)),
            cpu,
            note.to_owned(),
        ]);
    }

    fn row(&mut self, row: [String; 8]) {
        self.rows.push(row);
    }

    fn print(&self, title: &str) {
        println!();
        println!("{title}");
        println!();
        println!(
            "| measurement | ours: median | min–max | floor: median | min–max | ratio | CPU per op, ours / floor | notes |"
        );
        println!("|---|---:|---:|---:|---:|---:|---:|---|");
        for row in &self.rows {
            println!("| {} |", row.join(" | "));
        }
    }
}

fn median(times: &[Duration]) -> Duration {
    let mut sorted = times.to_vec();
    sorted.sort();
    let n = sorted.len();
    if n % 2 == 1 { sorted[n / 2] } else { (sorted[n / 2 - 1] + sorted[n / 2]) / 2 }
}

fn median_f64(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    if n % 2 == 1 { sorted[n / 2] } else { (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0 }
}

fn min(times: &[Duration]) -> Duration {
    times.iter().copied().min().unwrap_or_default()
}

fn max(times: &[Duration]) -> Duration {
    times.iter().copied().max().unwrap_or_default()
}

fn ms(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1e3;
    if ms < 1.0 {
        format!("{:.1} µs", ms * 1e3)
    } else if ms < 10.0 {
        format!("{ms:.2} ms")
    } else {
        format!("{ms:.1} ms")
    }
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
