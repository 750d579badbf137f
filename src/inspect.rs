//! The cache seen without a browser, for the commands `sessions`, `list <session>`, `show <session>
//! <key>`, `end <session>` and `purge` ([`crate::cli`]): this user's store opened as a host opens it,
//! its sessions, a protocol request answered in-process, and sizes and ages as people read them.
//!
//! The commands act in the store's transactions, so they are safe beside running hosts. `list` and `show` run the protocol's own `list` and `read`; looking is not a use of the
//! session, so they never refresh its last access (and never keep an orphan alive).
//!
//! Everything they print passes through [`escape_controls`]: descriptions, keys and data are a
//! client's text, which a prompt injection may have chosen to drive the person's terminal. `show`
//! prints the data as stored, from its JSON text (never parsed into values, so numbers keep their
//! digits, a lone surrogate's escape stays as written, and any depth prints); in a terminal it stops
//! after a screenful or so and says how to see the rest.

use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Value, json};

use crate::clock::Clock;
use crate::cmd::{Command, Context};
use crate::error::CacheError;
use crate::json::pointer;
use crate::json::pretty::write_pretty;
use crate::message::Fields;
use crate::store::{SessionRecord, Store, split_scoped};
use crate::terminal::{Head, escape_controls};
use crate::{paths, store_file};

/// The most lines of data `show` prints to a terminal; a pipe or a file gets all of it.
pub const SCREEN_LINES: usize = 1000;

/// The most bytes of data `show` prints to a terminal (one long string is one line).
pub const SCREEN_BYTES: usize = 64 * 1024;

/// One session of one extension, as `sessions` shows it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionRow {
    /// The extension's origin.
    pub origin: String,
    /// The session's id.
    pub session_id: String,
    /// How many items it holds.
    pub item_count: u64,
    /// What its items take of its quota, in bytes.
    pub total_size: u64,
    /// When it was made, in ms since the epoch.
    pub created_at: u64,
    /// When an extension last used it, in ms since the epoch.
    pub last_accessed_at: u64,
}

/// A clock stopped at 0: with it, `list` and `read` never find a last access stale enough to refresh.
struct Stopped;

impl Clock for Stopped {
    fn now_ms(&self) -> u64 {
        0
    }
}

/// This user's store, opened as a host opens it, and what the commands that look at it need beside.
pub struct Cache {
    /// The store.
    pub store: Arc<Store>,
    /// The data directory, whose settings file holds the store quota.
    pub data_dir: PathBuf,
    /// The store's folder, for messages.
    pub dir: PathBuf,
    /// The time now, in ms since the epoch, for the ages shown.
    pub now: u64,
}

/// Runs `command` on this user's store, printing to `out` (this process's stdout: `show` asks whether
/// it is a terminal), and returns whether it did what was asked (false: nothing found, or the person
/// said no). With no store yet, it says so (`[]` with `json`) and succeeds.
///
/// # Errors
/// Why the store can't be used, or what was asked can't be done, with control characters escaped.
pub fn with_cache(
    json: bool,
    out: &mut dyn Write,
    command: impl FnOnce(&Cache, &mut dyn Write) -> Result<bool, String>,
) -> Result<bool, String> {
    let run = || -> Result<bool, String> {
        let data_dir = paths::data_dir().map_err(|e| e.to_string())?;
        let dir = paths::store_dir(&data_dir);
        if store_file::check(&dir) == store_file::FileCheck::Missing {
            say(out, if json { "[]".to_owned() } else { format!("no cache yet in {}", dir.display()) });
            return Ok(true);
        }
        let store = Arc::new(Store::open(&dir).map_err(|e| e.message.clone())?);
        command(&Cache { store, data_dir, dir, now: crate::clock::SystemClock.now_ms() }, out)
    };
    run().map_err(|why| escape_controls(&why).into_owned())
}

/// Prints a line of text that may hold a client's words, its control characters escaped.
pub fn say(out: &mut dyn Write, line: String) {
    let _ = writeln!(out, "{}", escape_controls(&line));
}

/// Every session record of every origin.
///
/// # Errors
/// When the store can't be read.
pub fn sessions(store: &Store) -> Result<Vec<SessionRow>, CacheError> {
    store.read(|txn, dbs| {
        let mut rows = Vec::new();
        for entry in dbs.sessions.iter(txn)? {
            let (key, bytes) = entry?;
            let (origin, session_id) = split_scoped(key);
            let Ok(record) = serde_json::from_slice::<SessionRecord>(bytes) else { continue };
            rows.push(SessionRow {
                origin,
                session_id,
                item_count: record.item_count,
                total_size: record.total_size,
                created_at: record.created_at,
                last_accessed_at: record.last_accessed_at,
            });
        }
        Ok(rows)
    })
}

/// The origins to act on for `session`: the one given, or every origin that holds the session.
///
/// # Errors
/// When the store can't be read, or no origin holds the session.
pub fn origins_of(store: &Store, session: &str, origin: Option<String>) -> Result<Vec<String>, String> {
    if let Some(origin) = origin {
        return Ok(vec![origin]);
    }
    let origins: Vec<String> = sessions(store)
        .map_err(|e| e.message.clone())?
        .into_iter()
        .filter(|row| row.session_id == session)
        .map(|row| row.origin)
        .collect();
    if origins.is_empty() {
        return Err(format!("no extension has a session {session}: `llm-cache-host sessions` lists them"));
    }
    Ok(origins)
}

/// Runs one protocol request for `origin` and returns its result's JSON text, exactly as a host
/// would send it: a read's data is the stored text, whatever its numbers, escapes or depth.
///
/// # Errors
/// The request's error, as `<code>: <message>`.
pub fn call(store: &Arc<Store>, origin: &str, mut request: Value) -> Result<String, String> {
    request["id"] = json!(1);
    let ctx = Context::new(Ok(store.clone()), origin.to_owned(), Arc::new(Stopped));
    let text = request.to_string();
    let fields = Fields::parse(text.as_bytes()).map_err(|e| e.message.clone())?;
    let success = Command::parse(&fields)
        .and_then(|command| command.apply(&ctx))
        .map_err(|e| format!("{}: {}", e.code.as_str(), e.message))?;
    serde_json::to_string(&success).map_err(|e| e.to_string())
}

/// The text of the value that `path` names in the JSON text `text`; empty when there is none.
pub fn text_at<'t>(text: &'t str, path: &[&str]) -> &'t str {
    let pointer: String = path.iter().map(|name| format!("/{}", name.replace('~', "~0").replace('/', "~1"))).collect();
    match pointer::find(text, &pointer) {
        Ok(Some((start, end))) => &text[start..end],
        _ => "",
    }
}

/// The JSON string `quoted` decoded, or its text as it is if it can't be.
pub fn string(quoted: &str) -> String {
    serde_json::from_str(quoted).unwrap_or_else(|_| quoted.to_owned())
}

/// Prints `data` (JSON text) laid out a line per entry; with `screen` (lines, bytes), only that much
/// of it, and then how much was left out and how to see it.
pub fn show_data(data: &str, screen: Option<(usize, usize)>, out: &mut dyn Write) -> std::io::Result<()> {
    let (lines, bytes) = screen.unwrap_or((usize::MAX, usize::MAX));
    let mut buffered = BufWriter::with_capacity(1 << 16, Head::new(out, lines, bytes));
    let shown = write_pretty(data, &mut buffered).and_then(|()| buffered.write_all(b"\n")).and_then(|()| {
        let mut head = buffered.into_inner().map_err(|e| e.into_error())?;
        let (held_lines, held_bytes) = head.held_back();
        let line_end = if head.at_line_start() { "" } else { "\n" };
        let out = head.get_mut();
        if held_bytes > 0 {
            writeln!(
                out,
                "{line_end}… {held_lines} more lines ({}) not shown: pipe `show` to `less` or a file for all of it, or show a part with --pointer",
                size(held_bytes)
            )?;
        }
        out.flush()
    });
    match shown {
        // `show | head` closes the pipe early: the person has seen what they wanted.
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        shown => shown,
    }
}

/// `value` as JSON text (`say` escapes what JSON leaves raw).
pub fn to_json(value: &impl Serialize) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// Sizes as the tool shows them: 812B, 1.2KB, 4.9MB.
pub fn size(bytes: u64) -> String {
    const KB: f64 = 1024.0;
    let b = bytes as f64;
    if b < KB {
        format!("{bytes}B")
    } else if b < KB * KB {
        format!("{:.1}KB", b / KB)
    } else {
        format!("{:.1}MB", b / (KB * KB))
    }
}

/// How long ago, in the largest whole unit: 45s, 12m, 3h, 2d.
pub fn age(now: u64, then: u64) -> String {
    let seconds = now.saturating_sub(then) / 1000;
    match seconds {
        0..60 => format!("{seconds}s"),
        60..3600 => format!("{}m", seconds / 60),
        3600..86_400 => format!("{}h", seconds / 3600),
        _ => format!("{}d", seconds / 86_400),
    }
}
