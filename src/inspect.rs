//! What a person sees of the cache without a browser: `sessions`, `list <session>`, `show <session>
//! <key>`, `end <session>` and `purge`, each with `--json` for scripts.
//!
//! They open the store as a host does and act in its transactions, so they are safe beside running
//! hosts. `list` and `show` run the protocol's own `list` and `read`; looking is not a use of the
//! session, so they never refresh its last access (and never keep an orphan alive).
//!
//! Everything they print passes through [`escape_controls`]: descriptions, keys and data are a
//! client's text, which a prompt injection may have chosen to drive the person's terminal. `show`
//! prints the data as stored, from its JSON text (never parsed into values, so numbers keep their
//! digits, a lone surrogate's escape stays as written, and any depth prints); in a terminal it stops
//! after a screenful or so and says how to see the rest.

use std::io::{BufRead, BufWriter, IsTerminal, Write};
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
use crate::{cleanup, paths, store_file};

/// The most lines of data `show` prints to a terminal; a pipe or a file gets all of it.
const SCREEN_LINES: usize = 1000;

/// The most bytes of data `show` prints to a terminal (one long string is one line).
const SCREEN_BYTES: usize = 64 * 1024;

/// What to do, as the command line said it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inspect {
    /// Every session of every extension.
    Sessions,
    /// One session's items, newest first.
    List { session: String, origin: Option<String> },
    /// One item's data (or the part a pointer names).
    Show { session: String, key: String, pointer: Option<String>, origin: Option<String> },
    /// Ends a session: removes its items.
    End { session: String, origin: Option<String> },
    /// Ends every session of every extension.
    Purge { yes: bool },
}

/// One session of one extension, as `sessions` shows it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
struct SessionRow {
    origin: String,
    session_id: String,
    item_count: u64,
    total_size: u64,
    created_at: u64,
    last_accessed_at: u64,
}

/// A clock stopped at 0: with it, `list` and `read` never find a last access stale enough to refresh.
struct Stopped;

impl Clock for Stopped {
    fn now_ms(&self) -> u64 {
        0
    }
}

/// Runs `what` on this user's store; prints text (or JSON) to `out`, which is this process's
/// stdout (`show` asks whether that is a terminal). Returns whether it did what was asked (false:
/// nothing found, or the person said no).
///
/// # Errors
/// Why the store can't be used, or what was asked can't be done, with control characters escaped.
pub fn run(what: Inspect, json: bool, input: &mut dyn BufRead, out: &mut dyn Write) -> Result<bool, String> {
    inspect(what, json, input, out).map_err(|why| escape_controls(&why).into_owned())
}

fn inspect(what: Inspect, json: bool, input: &mut dyn BufRead, out: &mut dyn Write) -> Result<bool, String> {
    let data_dir = paths::data_dir().map_err(|e| e.to_string())?;
    let dir = paths::store_dir(&data_dir);
    if store_file::check(&dir) == store_file::FileCheck::Missing {
        let _ = writeln!(out, "{}", if json { "[]".to_owned() } else { format!("no cache yet in {}", dir.display()) });
        return Ok(true);
    }
    let store = Arc::new(Store::open(&dir).map_err(|e| e.message.clone())?);
    let now = crate::clock::SystemClock.now_ms();
    let mut say = |line: String| {
        let _ = writeln!(out, "{}", escape_controls(&line));
    };
    match what {
        Inspect::Sessions => {
            let rows = sessions(&store).map_err(|e| e.message.clone())?;
            if json {
                say(to_json(&rows));
            } else if rows.is_empty() {
                say("no sessions".into());
            } else {
                say("origin | session | items | size | created | last access".into());
                for row in &rows {
                    say(format!(
                        "{} | {} | {} | {} | {} ago | {} ago",
                        row.origin,
                        row.session_id,
                        row.item_count,
                        size(row.total_size),
                        age(now, row.created_at),
                        age(now, row.last_accessed_at)
                    ));
                }
            }
            if !json {
                // The store-wide quota bounds every session of every extension together.
                let used = store.read(|txn, dbs| dbs.store_total(txn)).map_err(|e| e.message.clone())?;
                let quota = crate::config::load(&data_dir)
                    .map_or(crate::limits::DEFAULT_STORE_QUOTA_BYTES, |c| c.store_quota());
                say(format!("store: {}", crate::config::store_use(used, quota).0));
            }
            Ok(true)
        }
        Inspect::List { session, origin } => {
            let mut pages = Vec::new();
            // A page of metadata holds only strings and counts, so it is parsed as values.
            let list = |origin: &str, request: Value| {
                serde_json::from_str::<Value>(&call(&store, origin, request)?).map_err(|e| e.to_string())
            };
            for origin in origins_of(&store, &session, origin)? {
                let mut page = list(&origin, json!({"op": "list", "sessionId": session, "limit": 1000}))?;
                let mut cursor = page["nextCursor"].clone();
                while !cursor.is_null() {
                    let request = json!({"op": "list", "sessionId": session, "limit": 1000, "cursor": cursor});
                    let next = list(&origin, request)?;
                    let more = next["items"].as_array().cloned().unwrap_or_default();
                    page["items"].as_array_mut().expect("list returns items").extend(more);
                    cursor = next["nextCursor"].clone();
                }
                pages.push((origin, page));
            }
            if json {
                let all: Vec<Value> =
                    pages.iter().map(|(origin, page)| json!({"origin": origin, "items": page["items"]})).collect();
                say(to_json(&all));
            } else {
                for (origin, page) in &pages {
                    say(format!(
                        "{origin}: {} items, {} (key | size | age | shape | description)",
                        page["itemCount"],
                        size(page["totalSize"].as_u64().unwrap_or(0))
                    ));
                    for item in page["items"].as_array().into_iter().flatten() {
                        say(format!(
                            "{} | {} | {} | {} | {}",
                            item["storageKey"].as_str().unwrap_or_default(),
                            size(item["dataSize"].as_u64().unwrap_or(0)),
                            age(now, item["timestamp"].as_u64().unwrap_or(0)),
                            item["shape"].as_str().unwrap_or_default(),
                            item["description"].as_str().unwrap_or_default()
                        ));
                    }
                }
            }
            Ok(!pages.is_empty())
        }
        Inspect::Show { session, key, pointer, origin } => {
            let origin = origins_of(&store, &session, origin)?.into_iter().next().unwrap_or_default();
            let mut request = json!({"op": "read", "sessionId": session, "storageKey": key});
            if let Some(pointer) = &pointer {
                request["pointer"] = json!(pointer);
            }
            let text = call(&store, &origin, request)?;
            if json {
                say(text);
                return Ok(true);
            }
            let field = |name: &str| text_at(&text, &["item", name]);
            say(format!(
                "{} | {} | {} | {}",
                key,
                size(field("dataSize").parse().unwrap_or(0)),
                string(field("shape")),
                string(field("description"))
            ));
            let screen = std::io::stdout().is_terminal().then_some((SCREEN_LINES, SCREEN_BYTES));
            show_data(field("data"), screen, out).map_err(|e| format!("can't show item {key}: {e}"))?;
            Ok(true)
        }
        Inspect::End { session, origin } => {
            let mut ended = Vec::new();
            for origin in origins_of(&store, &session, origin)? {
                let removed = cleanup::end_session(&store, &origin, &session).map_err(|e| e.message.clone())?;
                ended.push(json!({"origin": origin, "sessionId": session, "deletedItems": removed.deleted_items, "freedBytes": removed.freed_bytes}));
            }
            if json {
                say(to_json(&ended));
            } else {
                for end in &ended {
                    say(format!(
                        "ended {} of {}: {} items, {}",
                        session,
                        end["origin"].as_str().unwrap_or_default(),
                        end["deletedItems"],
                        size(end["freedBytes"].as_u64().unwrap_or(0))
                    ));
                }
            }
            Ok(true)
        }
        Inspect::Purge { yes } => {
            let rows = sessions(&store).map_err(|e| e.message.clone())?;
            let items: u64 = rows.iter().map(|row| row.item_count).sum();
            let bytes: u64 = rows.iter().map(|row| row.total_size).sum();
            if !yes {
                let _ = write!(
                    out,
                    "Remove all {} sessions ({items} items, {}) from {}? [y/N] ",
                    rows.len(),
                    size(bytes),
                    dir.display()
                );
                let _ = out.flush();
                let mut answer = String::new();
                let _ = input.read_line(&mut answer);
                if !matches!(answer.trim(), "y" | "Y" | "yes") {
                    let _ = writeln!(out, "nothing removed");
                    return Ok(false);
                }
            }
            let mut removed = (0, 0);
            for row in &rows {
                let done = cleanup::end_session(&store, &row.origin, &row.session_id).map_err(|e| e.message.clone())?;
                removed = (removed.0 + done.deleted_items, removed.1 + done.freed_bytes);
            }
            // Cleanups a host left unfinished, whose sessions no longer have a record.
            cleanup::maintain(&store, 0).map_err(|e| e.message.clone())?;
            if json {
                let _ = writeln!(
                    out,
                    "{}",
                    json!({"sessions": rows.len(), "deletedItems": removed.0, "freedBytes": removed.1})
                );
            } else {
                let _ = writeln!(out, "removed {} sessions: {} items, {}", rows.len(), removed.0, size(removed.1));
            }
            Ok(true)
        }
    }
}

/// Every session record of every origin.
fn sessions(store: &Store) -> Result<Vec<SessionRow>, CacheError> {
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
fn origins_of(store: &Store, session: &str, origin: Option<String>) -> Result<Vec<String>, String> {
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
fn call(store: &Arc<Store>, origin: &str, mut request: Value) -> Result<String, String> {
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
fn text_at<'t>(text: &'t str, path: &[&str]) -> &'t str {
    let pointer: String = path.iter().map(|name| format!("/{}", name.replace('~', "~0").replace('/', "~1"))).collect();
    match pointer::find(text, &pointer) {
        Ok(Some((start, end))) => &text[start..end],
        _ => "",
    }
}

/// The JSON string `quoted` decoded, or its text as it is if it can't be.
fn string(quoted: &str) -> String {
    serde_json::from_str(quoted).unwrap_or_else(|_| quoted.to_owned())
}

/// Prints `data` (JSON text) laid out a line per entry; with `screen` (lines, bytes), only that much
/// of it, and then how much was left out and how to see it.
fn show_data(data: &str, screen: Option<(usize, usize)>, out: &mut dyn Write) -> std::io::Result<()> {
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
fn to_json(value: &impl Serialize) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// Sizes as the tool shows them: 812B, 1.2KB, 4.9MB.
fn size(bytes: u64) -> String {
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
fn age(now: u64, then: u64) -> String {
    let seconds = now.saturating_sub(then) / 1000;
    match seconds {
        0..60 => format!("{seconds}s"),
        60..3600 => format!("{}m", seconds / 60),
        3600..86_400 => format!("{}h", seconds / 3600),
        _ => format!("{}d", seconds / 86_400),
    }
}
