//! The protocol's operations, one file each.
//!
//! Each command is parsed from a request's [`Fields`] (every rule about its input is checked there,
//! before the store is touched) and then applied to a [`Context`], returning a value. Commands never
//! see the wire: the request loop serialises what they return.

mod append;
mod delete;
mod end_session;
mod endorse;
mod hello;
mod list;
mod read;
mod search;
mod sessions;
mod stats;
mod update;
mod write;

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

pub use hello::PROTOCOL_VERSION;

use serde::Serialize;
use serde_json::value::RawValue;

use crate::clock::Clock;
use crate::error::{CacheError, ErrorCode, json_type_name};
use crate::json::search::{Query, QueryError};
use crate::json::{self, pointer::PointerError};
use crate::limits::{
    DEFAULT_STORE_QUOTA_BYTES, MAX_CUSTOM_METADATA_BYTES, MAX_ITEM_BYTES, MAX_QUERY_BYTES, MAX_QUERY_WORDS,
    SESSION_QUOTA_BYTES, TOUCH_GRANULARITY_MS,
};
use crate::message::{Fields, required_string};
use crate::provenance::Provenance;
use crate::rules::{check_session_id, compact_json, compact_json_and_shape, parse_storage_key, truncate_description};
use crate::store::{Dbs, ItemAt, ItemMeta, SessionRecord, Store, StoreError};
use heed::RwTxn;

/// What every command runs against.
pub struct Context {
    /// The store, or why it could not be opened (every op but `hello` then answers with that).
    pub store: Result<Arc<Store>, CacheError>,
    /// The calling extension's origin; its items are apart from every other origin's.
    pub origin: String,
    /// The time source for timestamps and the orphan rule.
    pub clock: Arc<dyn Clock>,
    /// The most the whole store may hold ([`crate::config`]); writes past it are refused.
    pub store_quota: u64,
    /// Set by a `hello` that lists `gzip` among its `encodings`: large replies are then compressed.
    gzip_replies: AtomicBool,
}

impl Context {
    /// A context for `origin`, replying uncompressed until a `hello` asks otherwise, with the default
    /// store quota (see [`Context::with_store_quota`]).
    pub fn new(store: Result<Arc<Store>, CacheError>, origin: String, clock: Arc<dyn Clock>) -> Context {
        let store_quota = DEFAULT_STORE_QUOTA_BYTES;
        Context { store, origin, clock, store_quota, gzip_replies: AtomicBool::new(false) }
    }

    /// The context with the store quota its owner configured.
    pub fn with_store_quota(self, store_quota: u64) -> Context {
        Context { store_quota, ..self }
    }

    /// Whether the client said in `hello` that it decodes gzip replies (section 3.5).
    pub fn gzip_replies(&self) -> bool {
        self.gzip_replies.load(Ordering::Relaxed)
    }

    /// The store, or `StorageUnavailableError` saying why it couldn't be opened.
    ///
    /// # Errors
    /// The error the store failed to open with.
    pub fn store(&self) -> Result<&Store, CacheError> {
        self.store.as_deref().map_err(Clone::clone)
    }

    /// Now, in ms since the Unix epoch.
    pub fn now(&self) -> u64 {
        self.clock.now_ms()
    }

    /// Refreshes a session's `lastAccessedAt` after a read, if it is stale by a minute or more;
    /// finer refreshes would cost a disk sync per read for nothing the 24-hour rule can see.
    fn touch(&self, session_id: &str, last_accessed_at: Option<u64>) -> Result<(), CacheError> {
        let now = self.now();
        if last_accessed_at.is_none_or(|last| now.saturating_sub(last) < TOUCH_GRANULARITY_MS) {
            return Ok(());
        }
        let store = self.store()?;
        // A read-only store can't record the access; the read itself is what was asked for.
        if store.is_read_only() {
            return Ok(());
        }
        store.write(|txn, dbs| {
            if let Some(mut record) = dbs.session(txn, &self.origin, session_id)? {
                record.last_accessed_at = record.last_accessed_at.max(now);
                dbs.put_session(txn, &self.origin, session_id, &record)?;
            }
            Ok(())
        })
    }
}

/// A parsed request, ready to apply.
pub enum Command<'f> {
    /// `hello`: protocol version and limits.
    Hello(hello::Hello),
    /// `write`: store an item.
    Write(write::Write<'f>),
    /// `read`: one item with its data, or part of it.
    Read(read::Read),
    /// `read` with `storageKeys`: several items in one round trip.
    ReadMany(read::ReadMany),
    /// `list`: a page of a session's items' metadata.
    List(list::List),
    /// `update`: change an item's data, description or custom metadata.
    Update(update::Update),
    /// `delete`: remove one item.
    Delete(delete::Delete),
    /// `endSession`: remove a session and everything in it.
    EndSession(end_session::EndSession),
    /// `stats`: a session's totals and quota.
    Stats(stats::Stats),
    /// `append`: add elements to an array, or text to a string, inside an item.
    Append(append::Append),
    /// `search`: string values in a session's data that contain every word of a query.
    Search(search::Search),
    /// `sessions`: a page of the calling extension's sessions, with their totals.
    Sessions(sessions::Sessions),
    /// `endorse`: the extension vouches for an item.
    Endorse(endorse::Endorse),
}

/// Every op's name, as clients send it.
pub const OPS: [&str; 12] = [
    "hello",
    "write",
    "read",
    "list",
    "update",
    "delete",
    "endSession",
    "stats",
    "append",
    "search",
    "sessions",
    "endorse",
];

/// What a successful command returns; serialised as the reply's `result`.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum Success {
    /// `hello`'s answer.
    Hello(hello::HelloResult),
    /// `write`'s and `update`'s answer: the item's metadata, never its data.
    Metadata(CacheMetadata),
    /// `read`'s answer.
    Read(read::ReadResult),
    /// `read`'s answer with `storageKeys`.
    ReadMany(read::ManyResult),
    /// `list`'s answer.
    List(list::ListResult),
    /// `delete`'s answer.
    Deleted(delete::DeleteResult),
    /// `endSession`'s answer.
    Ended(end_session::EndResult),
    /// `stats`' answer.
    Stats(stats::StatsResult),
    /// `search`'s answer.
    Search(search::SearchResult),
    /// `sessions`' answer.
    Sessions(sessions::SessionsResult),
}

impl Success {
    /// The stored data the result carries (a read's), in the order its JSON text holds them.
    pub fn data(&self) -> Vec<&RawValue> {
        match self {
            Success::Read(result) => vec![result.data()],
            Success::ReadMany(result) => result.data(),
            _ => Vec::new(),
        }
    }

    /// The result's stored data, as [`Success::data`] lists them, taken out of it.
    pub fn into_data(self) -> Vec<Box<RawValue>> {
        match self {
            Success::Read(result) => vec![result.into_data()],
            Success::ReadMany(result) => result.into_data(),
            _ => Vec::new(),
        }
    }
}

impl<'f> Command<'f> {
    /// Parses the request's op and fields.
    ///
    /// # Errors
    /// `InvalidRequestError` or `InvalidKeyFormatError` (or `DataTooLargeError`) saying what is wrong.
    pub fn parse(fields: &Fields<'f>) -> Result<Command<'f>, CacheError> {
        let op = required_string(fields.op, "op")?;
        Ok(match op.as_str() {
            "hello" => Command::Hello(hello::Hello::parse(fields)?),
            "write" => Command::Write(write::Write::parse(fields)?),
            "read" if fields.storage_keys.is_some() => Command::ReadMany(read::ReadMany::parse(fields)?),
            "read" => Command::Read(read::Read::parse(fields)?),
            "list" => Command::List(list::List::parse(fields)?),
            "update" => Command::Update(update::Update::parse(fields)?),
            "delete" => Command::Delete(delete::Delete::parse(fields)?),
            "endSession" => Command::EndSession(end_session::EndSession::parse(fields)?),
            "stats" => Command::Stats(stats::Stats::parse(fields)?),
            "append" => Command::Append(append::Append::parse(fields)?),
            "search" => Command::Search(search::Search::parse(fields)?),
            "sessions" => Command::Sessions(sessions::Sessions::parse(fields)?),
            "endorse" => Command::Endorse(endorse::Endorse::parse(fields)?),
            _ => {
                return Err(CacheError::new(
                    ErrorCode::InvalidRequestError,
                    format!("unknown op `{}`", op.chars().take(40).collect::<String>()),
                    format!("use one of: {}", OPS.join(", ")),
                )
                .expected(OPS.join(" | "))
                .actual(op.chars().take(40).collect::<String>()));
            }
        })
    }

    /// Whether the command only writes (`write`, `update`, `append`, `delete`, `endorse`), so that it
    /// can share a group commit with the write commands next to it.
    pub fn only_writes(&self) -> bool {
        matches!(
            self,
            Command::Write(_) | Command::Update(_) | Command::Append(_) | Command::Delete(_) | Command::Endorse(_)
        )
    }

    /// Runs a command that [`Command::only_writes`] inside the caller's write transaction.
    ///
    /// # Errors
    /// The command's verdict, or the store's failure. Any other command is a bug of the caller.
    pub fn run_in(&self, txn: &mut RwTxn<'_>, dbs: &Dbs, ctx: &Context) -> Result<Success, StoreError> {
        match self {
            Command::Write(cmd) => cmd.run(txn, dbs, ctx).map(Success::Metadata),
            Command::Update(cmd) => cmd.run(txn, dbs, ctx).map(Success::Metadata),
            Command::Append(cmd) => cmd.run(txn, dbs, ctx).map(Success::Metadata),
            Command::Delete(cmd) => cmd.run(txn, dbs, ctx).map(Success::Deleted),
            Command::Endorse(cmd) => cmd.run(txn, dbs, ctx).map(Success::Metadata),
            _ => Err(CacheError::storage_unavailable("a command that reads was put in a group commit").into()),
        }
    }

    /// Runs the command.
    ///
    /// # Errors
    /// The error reply the command ends in.
    pub fn apply(self, ctx: &Context) -> Result<Success, CacheError> {
        match self {
            Command::Hello(cmd) => {
                if cmd.gzip {
                    ctx.gzip_replies.store(true, Ordering::Relaxed);
                }
                Ok(Success::Hello(hello::hello(cmd.gzip, ctx.store_quota)))
            }
            Command::Write(cmd) => cmd.apply(ctx).map(Success::Metadata),
            Command::Read(cmd) => cmd.apply(ctx).map(Success::Read),
            Command::ReadMany(cmd) => cmd.apply(ctx).map(Success::ReadMany),
            Command::List(cmd) => cmd.apply(ctx).map(Success::List),
            Command::Update(cmd) => cmd.apply(ctx).map(Success::Metadata),
            Command::Delete(cmd) => cmd.apply(ctx).map(Success::Deleted),
            Command::EndSession(cmd) => cmd.apply(ctx).map(Success::Ended),
            Command::Stats(cmd) => cmd.apply(ctx).map(Success::Stats),
            Command::Append(cmd) => cmd.apply(ctx).map(Success::Metadata),
            Command::Search(cmd) => cmd.apply(ctx).map(Success::Search),
            Command::Sessions(cmd) => cmd.apply(ctx).map(Success::Sessions),
            Command::Endorse(cmd) => cmd.apply(ctx).map(Success::Metadata),
        }
    }
}

/// An item's metadata as clients see it: what the LLM reads instead of the data.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CacheMetadata {
    /// `{sessionId}_{taskId}_{turnId}`.
    pub storage_key: String,
    /// At most 300 characters.
    pub description: String,
    /// When the item was last written, ms since the Unix epoch.
    pub timestamp: u64,
    /// Bytes of the data's compact JSON text.
    pub data_size: u64,
    /// How the data is built, e.g. `array[50] of {from,subject,summary}`; at most 120 characters.
    pub shape: String,
    /// The owning session.
    pub session_id: String,
    /// The item's task.
    pub task_id: String,
    /// The turn that wrote it.
    pub turn_id: String,
    /// Where the item came from; unknown for items stored without provenance.
    pub provenance: Provenance,
}

impl CacheMetadata {
    /// The metadata of the item stored under `storage_key` (a key already checked) with `meta`.
    pub fn new(storage_key: &str, meta: &ItemMeta) -> Self {
        // Stored keys were checked on write; an unreadable one lists with empty parts.
        let parts = parse_storage_key(storage_key).unwrap_or(crate::rules::StorageKey {
            session_id: "",
            task_id: "",
            turn_id: "",
        });
        CacheMetadata {
            storage_key: storage_key.to_owned(),
            description: meta.description.clone(),
            timestamp: meta.timestamp,
            data_size: meta.data_size,
            shape: meta.shape.clone(),
            session_id: parts.session_id.to_owned(),
            task_id: parts.task_id.to_owned(),
            turn_id: parts.turn_id.to_owned(),
            provenance: meta.provenance.clone().unwrap_or_else(Provenance::unknown),
        }
    }
}

/// Reads and checks the request's `sessionId`.
fn session_id(fields: &Fields<'_>) -> Result<String, CacheError> {
    let session_id = required_string(fields.session_id, "sessionId")?;
    check_session_id("sessionId", &session_id)?;
    Ok(session_id)
}

/// Reads the request's `storageKey` and checks it belongs to `session_id`. A key of another session
/// is `ItemNotFoundError`, exactly as a key that was never written, so nothing leaks across sessions.
fn storage_key_in(fields: &Fields<'_>, session_id: &str) -> Result<String, CacheError> {
    let storage_key = required_string(fields.storage_key, "storageKey")?;
    if parse_storage_key(&storage_key)?.session_id != session_id {
        return Err(CacheError::item_not_found(&storage_key));
    }
    Ok(storage_key)
}

/// Reads the request's `pointer`: an RFC 6901 JSON pointer (empty, or starting with `/`).
fn pointer(fields: &Fields<'_>) -> Result<Option<String>, CacheError> {
    let pointer = crate::message::optional_string(fields.pointer, "pointer")?;
    if let Some(pointer) = &pointer {
        let wrong = match json::pointer::check(pointer) {
            Ok(()) => return Ok(Some(pointer.clone())),
            Err(PointerError::NoLeadingSlash) => "a string not starting with /",
            Err(PointerError::BadEscape) => "a ~ not followed by 0 (for ~) or 1 (for /)",
        };
        return Err(CacheError::invalid_field("pointer", "an RFC 6901 JSON pointer such as /emails/3/subject", wrong));
    }
    Ok(pointer)
}

/// The part of the item text `text` that `pointer` names, as stored. A pointer to nothing is
/// `ItemNotFoundError` whose message names the key and pointer; `expected` and `suggestion` say what the
/// calling op needed there.
fn value_at<'t>(
    storage_key: &str,
    text: &'t str,
    pointer: &str,
    expected: &str,
    suggestion: &str,
) -> Result<&'t str, CacheError> {
    json::pointer::check(pointer)
        .map_err(|_| CacheError::invalid_field("pointer", "an RFC 6901 JSON pointer", "an invalid pointer"))?;
    let found = json::pointer::find(text, pointer)
        .map_err(|_| CacheError::corrupted(storage_key, "its data is not well-formed JSON"))?;
    let (start, end) = found.ok_or_else(|| {
        CacheError::new(
            ErrorCode::ItemNotFoundError,
            format!("item {storage_key} has nothing at pointer {}", echoed(pointer)),
            suggestion,
        )
        .expected(expected)
        .actual(echoed(pointer))
    })?;
    Ok(&text[start..end])
}

/// Where a pointer points, for messages: "the top of the item" or "pointer /a/b".
fn at_pointer(pointer: Option<&str>) -> String {
    match pointer {
        None | Some("") => "the top of the item".to_owned(),
        Some(pointer) => format!("pointer {}", echoed(pointer)),
    }
}

/// A pointer as an error message shows it: whole up to 256 bytes, else its start and its length, so
/// that an error about a pointer of megabytes stays a few hundred bytes.
fn echoed(pointer: &str) -> String {
    const MAX_ECHO: usize = 256;
    if pointer.len() <= MAX_ECHO {
        return pointer.to_owned();
    }
    let cut = (0..=MAX_ECHO).rev().find(|&at| pointer.is_char_boundary(at)).unwrap_or(0);
    format!("{}… ({} bytes)", &pointer[..cut], pointer.len())
}

/// Reads a `query`: one to 32 words, at most 512 bytes.
fn query(text: &str) -> Result<Query, CacheError> {
    let too_big = |what: &str, limit: usize, actual: usize| {
        CacheError::new(
            ErrorCode::InvalidRequestError,
            format!("`query` has {actual} {what}; a query has at most {limit}"),
            "search for the few words that best tell the wanted text apart, then read what matches",
        )
        .expected(format!("at most {limit} {what}"))
        .actual(format!("{actual} {what}"))
    };
    Query::parse(text).map_err(|e| match e {
        QueryError::NoWords => CacheError::invalid_field("query", "one or more words to look for", "no words"),
        QueryError::TooManyWords(n) => too_big("words", MAX_QUERY_WORDS, n),
        QueryError::TooLong(n) => too_big("bytes", MAX_QUERY_BYTES, n),
    })
}

/// Replaces the existing item at `at`, whose metadata was `previous`, by `meta` (and `data`, when the
/// data changes), in the caller's write transaction: the quota is checked against the session's total
/// without the old item, the session's totals and last access move with it, and the item gets the next
/// write number.
fn replace_item(
    txn: &mut RwTxn<'_>,
    dbs: &Dbs,
    ctx: &Context,
    at: ItemAt<'_>,
    previous: &ItemMeta,
    mut meta: ItemMeta,
    data: Option<&str>,
) -> Result<CacheMetadata, StoreError> {
    let mut record = dbs.session(txn, at.origin, at.session_id)?.unwrap_or(SessionRecord::new(meta.timestamp));
    record.total_size = check_quota(record.total_size, previous.quota_bytes(), meta.quota_bytes())?;
    check_store_quota(dbs.store_total(txn)?, previous.quota_bytes(), meta.quota_bytes(), ctx.store_quota)?;
    record.last_accessed_at = meta.timestamp;
    meta.seq = dbs.next_seq(txn)?;
    dbs.put_item(txn, at, &meta, data, Some(previous))?;
    dbs.put_session(txn, at.origin, at.session_id, &record)?;
    Ok(CacheMetadata::new(at.storage_key, &meta))
}

/// Reads a description: a non-blank string, cut to 300 characters.
fn description(raw: Option<&RawValue>) -> Result<String, CacheError> {
    let description = required_string(raw, "description")?;
    if description.trim().is_empty() {
        return Err(CacheError::invalid_field(
            "description",
            "a non-empty string saying what the data is (at most 300 characters)",
            "an empty string",
        ));
    }
    Ok(truncate_description(&description).into_owned())
}

/// Reads `data`: any JSON value but `null`, as compact text of at most 5 MiB: the request's own text
/// when it is compact already, else a compacted copy.
fn data<'f>(raw: Option<&'f RawValue>) -> Result<Cow<'f, str>, CacheError> {
    let raw = raw.ok_or_else(|| CacheError::missing_field("data", "any JSON value other than null"))?;
    within_item_limit(compact_json(raw.get()))
}

/// [`data`] with its shape, found in the same pass when the data is compact already.
fn data_and_shape<'f>(raw: Option<&'f RawValue>) -> Result<(Cow<'f, str>, String), CacheError> {
    let raw = raw.ok_or_else(|| CacheError::missing_field("data", "any JSON value other than null"))?;
    let (compact, shape) = compact_json_and_shape(raw.get());
    Ok((within_item_limit(compact)?, shape))
}

/// Compact data, if it is within the item limit.
fn within_item_limit(compact: Cow<'_, str>) -> Result<Cow<'_, str>, CacheError> {
    let size = compact.len() as u64;
    if size > MAX_ITEM_BYTES {
        return Err(CacheError::new(
            ErrorCode::DataTooLargeError,
            format!("data is {size} bytes; one item holds at most {MAX_ITEM_BYTES}"),
            "split the data into chunks of at most 5 MB, write each as its own item, and say in each description which part it is",
        )
        .expected(MAX_ITEM_BYTES)
        .actual(size));
    }
    Ok(compact)
}

/// [`data`] in a string of its own, for the commands that keep it apart from their request: copied
/// into memory a reply gave back, when there is some (see `frame::copy_of`).
fn owned_data(raw: Option<&RawValue>) -> Result<String, CacheError> {
    Ok(match data(raw)? {
        Cow::Borrowed(text) => crate::frame::copy_of(text),
        Cow::Owned(text) => text,
    })
}

/// Reads `customMetadata`: a JSON object of at most 64 KiB.
fn custom_metadata(raw: Option<&RawValue>) -> Result<Option<Box<RawValue>>, CacheError> {
    let Some(raw) = raw else { return Ok(None) };
    let expected = "a JSON object of at most 65536 bytes";
    if json_type_name(raw.get()) != "an object" {
        return Err(CacheError::invalid_field("customMetadata", expected, json_type_name(raw.get())));
    }
    let compact = compact_json(raw.get()).into_owned();
    if compact.len() > MAX_CUSTOM_METADATA_BYTES {
        return Err(CacheError::invalid_field(
            "customMetadata",
            expected,
            format!("an object of {} bytes", compact.len()),
        ));
    }
    RawValue::from_string(compact)
        .map(Some)
        .map_err(|_| CacheError::invalid_field("customMetadata", expected, "invalid JSON"))
}

/// The session total after replacing `freed` bytes by `requested` bytes (an item's data and
/// customMetadata, [`ItemMeta::quota_bytes`]), if it is within the quota.
///
/// # Errors
/// `QuotaExceededError` with the current total, the request and the limit.
pub fn check_quota(total: u64, freed: u64, requested: u64) -> Result<u64, CacheError> {
    let current = total.saturating_sub(freed);
    let new_total = current.saturating_add(requested);
    if new_total <= SESSION_QUOTA_BYTES {
        return Ok(new_total);
    }
    Err(quota_exceeded(
        format!(
            "the session holds {current} bytes; {requested} more (data and customMetadata) would pass its quota of {SESSION_QUOTA_BYTES}"
        ),
        "delete items the task no longer needs (list shows their sizes) or store a smaller summary, then try again",
        ("session", current, requested, SESSION_QUOTA_BYTES),
    ))
}

/// Whether the store may hold `requested` bytes in place of `freed` ones (an item's data and
/// customMetadata, [`ItemMeta::quota_bytes`]), when it holds `total` in all and may hold `limit`.
/// Only growth is refused: a store over its limit (one whose limit was lowered) may still shrink.
///
/// # Errors
/// `QuotaExceededError` naming the store-wide limit, with the store's total, the request and the limit.
pub fn check_store_quota(total: u64, freed: u64, requested: u64, limit: u64) -> Result<(), CacheError> {
    let current = total.saturating_sub(freed);
    if current.saturating_add(requested) <= limit || requested <= freed {
        return Ok(());
    }
    Err(quota_exceeded(
        format!(
            "the cache store holds {current} bytes in all its sessions; {requested} more (data and customMetadata) would pass its store-wide limit of {limit}"
        ),
        "end the sessions whose tasks are done (endSession; a person can see every session with `llm-cache-host sessions` and remove one with `llm-cache-host end <session>`), or delete items no longer needed, then try again; the limit itself is raised with `llm-cache-host config --store-quota <size>`",
        ("store", current, requested, limit),
    ))
}

/// `QuotaExceededError` with its message and suggestion, and the fields every quota's refusal has:
/// what the `whose` total may be, and `current + requested` against `limit`.
fn quota_exceeded(
    message: String,
    suggestion: &str,
    (whose, current, requested, limit): (&str, u64, u64, u64),
) -> CacheError {
    CacheError::new(ErrorCode::QuotaExceededError, message, suggestion)
        .expected(format!("a {whose} total of at most {limit} bytes"))
        .actual(format!("{current} + {requested} = {} bytes", current.saturating_add(requested)))
        .detail("current", current)
        .detail("requested", requested)
        .detail("limit", limit)
}

/// A session record's `lastAccessedAt`, for [`Context::touch`].
fn last_access(record: Option<SessionRecord>) -> Option<u64> {
    record.map(|r| r.last_accessed_at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quota_arithmetic() {
        assert_eq!(check_quota(0, 0, SESSION_QUOTA_BYTES), Ok(SESSION_QUOTA_BYTES));
        assert_eq!(check_quota(SESSION_QUOTA_BYTES, 10, 10), Ok(SESSION_QUOTA_BYTES));
        assert_eq!(check_quota(100, 100, 5), Ok(5));
        let err = check_quota(SESSION_QUOTA_BYTES - 5, 0, 6).unwrap_err();
        assert_eq!(err.code, ErrorCode::QuotaExceededError);
        assert_eq!(err.details["current"], SESSION_QUOTA_BYTES - 5);
        assert_eq!(err.details["requested"], 6);
        assert_eq!(err.details["limit"], SESSION_QUOTA_BYTES);
        assert!(check_quota(u64::MAX, 0, u64::MAX).is_err());
    }

    #[test]
    fn store_quota_arithmetic() {
        assert_eq!(check_store_quota(90, 0, 10, 100), Ok(()));
        assert_eq!(check_store_quota(100, 10, 10, 100), Ok(()));
        // A store over a lowered limit may still shrink, or keep an item's size.
        assert_eq!(check_store_quota(150, 10, 5, 100), Ok(()));
        assert_eq!(check_store_quota(150, 10, 10, 100), Ok(()));
        let err = check_store_quota(95, 0, 6, 100).unwrap_err();
        assert_eq!(err.code, ErrorCode::QuotaExceededError);
        assert!(err.message.contains("store-wide limit of 100"), "{}", err.message);
        assert!(err.suggestion.contains("llm-cache-host sessions") && err.suggestion.contains("--store-quota"));
        assert_eq!((err.details["current"].clone(), err.details["requested"].clone()), (95.into(), 6.into()));
        assert!(check_store_quota(u64::MAX, 0, u64::MAX, u64::MAX - 1).is_err());
    }

    fn raw(json: &str) -> Box<RawValue> {
        RawValue::from_string(json.to_owned()).unwrap()
    }

    #[test]
    fn data_is_compacted_and_bounded() {
        assert_eq!(data(Some(&raw("{ \"a\" : 1 }"))).unwrap(), r#"{"a":1}"#);
        let exact = format!("\"{}\"", "x".repeat(MAX_ITEM_BYTES as usize - 2));
        assert_eq!(data(Some(&raw(&exact))).unwrap().len() as u64, MAX_ITEM_BYTES);
        let over = format!("\"{}\"", "x".repeat(MAX_ITEM_BYTES as usize - 1));
        let err = data(Some(&raw(&over))).unwrap_err();
        assert_eq!((err.code, err.actual.clone()), (ErrorCode::DataTooLargeError, Some((MAX_ITEM_BYTES + 1).into())));
        assert_eq!(data(None).unwrap_err().code, ErrorCode::InvalidRequestError);
    }

    #[test]
    fn custom_metadata_must_be_a_small_object() {
        assert_eq!(custom_metadata(Some(&raw("{ \"k\": 1 }"))).unwrap().unwrap().get(), r#"{"k":1}"#);
        assert!(custom_metadata(Some(&raw("[1]"))).is_err());
        let big = format!(r#"{{"k":"{}"}}"#, "x".repeat(MAX_CUSTOM_METADATA_BYTES));
        assert!(custom_metadata(Some(&raw(&big))).is_err());
    }

    #[test]
    fn descriptions_must_say_something() {
        assert!(description(Some(&raw("\"  \""))).is_err());
        assert_eq!(description(Some(&raw(&format!("\"{}\"", "d".repeat(400))))).unwrap().chars().count(), 300);
    }
}
