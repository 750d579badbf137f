//! `llm-cache-host verify [--repair]`: checks every invariant of the store, and puts right what can be.
//!
//! The invariants, each of which a crash at any point must leave holding:
//! - every metadata record decodes, has its data, and its `dataSize` is the data's length;
//! - every item's data is UTF-8 JSON;
//! - every item has its entry in the time index, and every index entry points at an item written
//!   at that time; no data lies without its metadata;
//! - every session's totals equal the sum over its items (those no begun cleanup covers), counting
//!   each item's data and customMetadata, as the quota does;
//! - the write counter is at least every item's write number;
//! - the store's running total equals the sum of its sessions' totals (what the store-wide quota
//!   is checked against).
//!
//! A cleanup that has begun and not finished is not a fault (readers already don't see its items;
//! the next host to start finishes it) and is reported apart. `--repair` finishes such cleanups,
//! drops the items whose records don't decode (naming each), and rebuilds the time index, the
//! sessions' totals and the store's running total from the items.

use std::collections::{BTreeMap, BTreeSet};

use heed::RwTxn;
use serde::de::IgnoredAny;

use crate::cleanup;
use crate::clock::{Clock, SystemClock};
use crate::error::CacheError;
use crate::rules::session_of;
use crate::store::{
    Dbs, ItemMeta, ReadTxn, SEQ, STORE_TOTAL, SessionRecord, Store, StoreError, decode_meta, item_key, session_key,
    split_scoped, split_time_key, time_key,
};

/// What a check found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Report {
    /// Items (metadata records) looked at.
    pub items: u64,
    /// Sessions with a totals record.
    pub sessions: u64,
    /// Broken invariants, one line each.
    pub problems: Vec<String>,
    /// Work in progress that is not a fault: unfinished cleanups.
    pub pending: Vec<String>,
}

/// An extension's session: `(origin, sessionId)`.
type SessionAt = (String, String);

/// Checks the store, in one read transaction (a consistent snapshot, whatever other hosts do).
///
/// # Errors
/// `StorageUnavailableError` when the store can't be read.
pub fn check(store: &Store) -> Result<Report, CacheError> {
    store.read(|txn, dbs| {
        let mut report = Report::default();
        let ending = cleanups(txn, dbs)?;
        for (origin, session_id) in ending.keys() {
            report.pending.push(format!("the cleanup of session {session_id} of {origin} has begun and not finished"));
        }
        let mut totals: BTreeMap<SessionAt, (u64, u64)> = BTreeMap::new();
        let mut max_seq = 0;
        for entry in dbs.meta.iter(txn)? {
            let (key, bytes) = entry?;
            report.items += 1;
            let (origin, storage_key) = split_scoped(key);
            let session_id = session_of(&storage_key).to_owned();
            let who = format!("item {storage_key} of {origin}");
            let Ok(meta) = decode_meta(&storage_key, bytes) else {
                report.problems.push(format!("{who}: its metadata can't be decoded"));
                continue;
            };
            max_seq = max_seq.max(meta.seq);
            if let Some(fault) = data_fault(dbs.data.get(txn, key)?, &meta) {
                report.problems.push(format!("{who}: {fault}"));
            }
            if dbs.by_time.get(txn, &time_key(&origin, &session_id, meta.timestamp, &storage_key))?.is_none() {
                report.problems.push(format!("{who}: it is missing from the time index"));
            }
            let at = (origin, session_id);
            if ending.get(&at).is_none_or(|&covers| meta.seq > covers) {
                let total = totals.entry(at).or_default();
                *total = (total.0 + 1, total.1 + meta.quota_bytes());
            }
        }
        for entry in dbs.data.iter(txn)? {
            let (key, _) = entry?;
            if dbs.meta.get(txn, key)?.is_none() {
                let (origin, storage_key) = split_scoped(key);
                report.problems.push(format!("item {storage_key} of {origin}: it has data but no metadata"));
            }
        }
        for entry in dbs.by_time.iter(txn)? {
            let (key, ()) = entry?;
            if !time_entry_is_live(txn, dbs, key)? {
                let (origin, rest) = split_scoped(key);
                let session_id = rest.split('\0').next().unwrap_or_default();
                report.problems.push(format!("session {session_id} of {origin}: a time index entry points at no item"));
            }
        }
        for entry in dbs.sessions.iter(txn)? {
            let (key, bytes) = entry?;
            report.sessions += 1;
            let at = split_scoped(key);
            let Ok(record) = serde_json::from_slice::<SessionRecord>(bytes) else {
                report.problems.push(format!("session {} of {}: its totals record can't be decoded", at.1, at.0));
                continue;
            };
            let (count, size) = totals.remove(&at).unwrap_or_default();
            if (record.item_count, record.total_size) != (count, size) {
                report.problems.push(format!(
                    "session {} of {}: its totals say {} items of {} bytes, its items add up to {count} of {size}",
                    at.1, at.0, record.item_count, record.total_size
                ));
            }
        }
        for ((origin, session_id), (count, size)) in totals {
            report
                .problems
                .push(format!("session {session_id} of {origin}: {count} items of {size} bytes but no totals record"));
        }
        let seq = dbs.last_seq(txn)?;
        if seq < max_seq {
            report.problems.push(format!("the write counter is at {seq}, below item write number {max_seq}"));
        }
        // A store that keeps no running total yet (older hosts wrote it, and it is read-only) has
        // nothing to compare; opening a writable one starts it.
        let sum = dbs.sum_of_sessions(txn)?;
        if let Some(kept) = dbs.counters.get(txn, STORE_TOTAL)?
            && kept != sum
        {
            report
                .problems
                .push(format!("the store's running total says {kept} bytes, its sessions' totals add up to {sum}"));
        }
        Ok(report)
    })
}

/// Finishes unfinished cleanups, then drops what can't be read and rebuilds the time index and the
/// totals from the items, in one write transaction. Returns what it did, one line each.
///
/// # Errors
/// `StorageUnavailableError` when the store can't be written.
pub fn repair(store: &Store) -> Result<Vec<String>, CacheError> {
    let mut done = Vec::new();
    for (origin, session_id) in store.read(|txn, dbs| dbs.unfinished_cleanups(txn))? {
        let removed = cleanup::finish(store, &origin, &session_id)?;
        done.push(format!(
            "finished the cleanup of session {session_id} of {origin}: {} items, {} bytes",
            removed.deleted_items, removed.freed_bytes
        ));
    }
    let now = SystemClock.now_ms();
    done.extend(store.write(|txn, dbs| rebuild(txn, dbs, now))?);
    Ok(done)
}

/// The rebuilding part of [`repair`], inside one write transaction.
fn rebuild(txn: &mut RwTxn<'_>, dbs: &Dbs, now: u64) -> Result<Vec<String>, StoreError> {
    let mut done = Vec::new();
    let mut items: Vec<(Vec<u8>, ItemMeta)> = Vec::new();
    let mut dropped: Vec<(Vec<u8>, String)> = Vec::new();
    for entry in dbs.meta.iter(txn)? {
        let (key, bytes) = entry?;
        let (_, storage_key) = split_scoped(key);
        match decode_meta(&storage_key, bytes) {
            Err(_) => dropped.push((key.to_vec(), "its metadata can't be decoded".into())),
            Ok(meta) => match data_fault(dbs.data.get(txn, key)?, &meta) {
                Some(fault) if !fault.starts_with("its dataSize") => dropped.push((key.to_vec(), fault)),
                _ => items.push((key.to_vec(), meta)),
            },
        }
    }
    for entry in dbs.data.iter(txn)? {
        let (key, _) = entry?;
        if dbs.meta.get(txn, key)?.is_none() {
            dropped.push((key.to_vec(), "it has data but no metadata".into()));
        }
    }
    for (key, why) in &dropped {
        let (origin, storage_key) = split_scoped(key);
        dbs.meta.delete(txn, key)?;
        dbs.data.delete(txn, key)?;
        done.push(format!("dropped item {storage_key} of {origin}: {why}"));
    }

    // The time index and the totals, from the items that remain.
    let mut index = BTreeSet::new();
    let mut totals: BTreeMap<SessionAt, (u64, u64)> = BTreeMap::new();
    let mut max_seq = 0;
    for (key, meta) in &mut items {
        let (origin, storage_key) = split_scoped(key);
        let session_id = session_of(&storage_key).to_owned();
        let size = dbs.data.get(txn, key)?.map_or(0, |data| data.len() as u64);
        if meta.data_size != size {
            done.push(format!("item {storage_key} of {origin}: set its dataSize from {} to {size}", meta.data_size));
            meta.data_size = size;
            let encoded = serde_json::to_vec(&*meta).map_err(|e| heed::Error::Encoding(Box::new(e)))?;
            dbs.meta.put(txn, key, &encoded)?;
        }
        index.insert(time_key(&origin, &session_id, meta.timestamp, &storage_key));
        max_seq = max_seq.max(meta.seq);
        let total = totals.entry((origin, session_id)).or_default();
        *total = (total.0 + 1, total.1 + meta.quota_bytes());
    }
    let stale: Vec<Vec<u8>> = dbs
        .by_time
        .iter(txn)?
        .filter_map(|e| e.ok().map(|(k, ())| k.to_vec()))
        .filter(|k| !index.contains(k))
        .collect();
    for key in &stale {
        dbs.by_time.delete(txn, key)?;
    }
    if !stale.is_empty() {
        done.push(format!("removed {} time index entries that pointed at no item", stale.len()));
    }
    let mut added = 0;
    for key in &index {
        if dbs.by_time.get(txn, key)?.is_none() {
            dbs.by_time.put(txn, key, &())?;
            added += 1;
        }
    }
    if added > 0 {
        done.push(format!("added {added} missing time index entries"));
    }

    let records: Vec<(Vec<u8>, Option<SessionRecord>)> = dbs
        .sessions
        .iter(txn)?
        .filter_map(|e| e.ok().map(|(k, v)| (k.to_vec(), serde_json::from_slice(v).ok())))
        .collect();
    for (key, record) in &records {
        let at = split_scoped(key);
        if !totals.contains_key(&at) {
            dbs.sessions.delete(txn, key)?;
            done.push(format!("session {} of {}: removed its totals, as it holds no item", at.1, at.0));
        } else if record.is_none() {
            dbs.sessions.delete(txn, key)?;
        }
    }
    for ((origin, session_id), (count, size)) in &totals {
        let old = dbs.session(txn, origin, session_id).ok().flatten();
        let mut record = old.unwrap_or(SessionRecord::new(now));
        if (record.item_count, record.total_size) != (*count, *size) || old.is_none() {
            done.push(format!("session {session_id} of {origin}: set its totals to {count} items of {size} bytes"));
        }
        (record.item_count, record.total_size) = (*count, *size);
        dbs.sessions.put(txn, &session_key(origin, session_id), &serde_json::to_vec(&record).unwrap_or_default())?;
    }
    if dbs.last_seq(txn)? < max_seq {
        dbs.counters.put(txn, SEQ, &max_seq)?;
        done.push(format!("set the write counter to {max_seq}"));
    }
    // The sessions' totals were written above without going through `put_session`: the store's
    // running total is set from them.
    let sum = dbs.sum_of_sessions(txn)?;
    if dbs.counters.get(txn, STORE_TOTAL)? != Some(sum) {
        dbs.counters.put(txn, STORE_TOTAL, &sum)?;
        done.push(format!("set the store's running total to {sum} bytes"));
    }
    Ok(done)
}

/// What is wrong with an item's data, if anything.
fn data_fault(data: Option<&[u8]>, meta: &ItemMeta) -> Option<String> {
    let Some(data) = data else { return Some("its data is missing".into()) };
    if serde_json::from_slice::<IgnoredAny>(data).is_err() {
        return Some("its data is not UTF-8 JSON".into());
    }
    (data.len() as u64 != meta.data_size)
        .then(|| format!("its dataSize says {} bytes, its data has {}", meta.data_size, data.len()))
}

/// Whether a time index entry points at an item written at that time.
fn time_entry_is_live(txn: &ReadTxn<'_>, dbs: &Dbs, key: &[u8]) -> Result<bool, StoreError> {
    let (origin, _) = split_scoped(key);
    let rest = &key[origin.len() + 1..];
    let Some(at) = rest.iter().position(|&b| b == 0) else { return Ok(false) };
    let Some((timestamp, storage_key)) = split_time_key(&rest[at + 1..]) else { return Ok(false) };
    let Some(bytes) = dbs.meta.get(txn, &item_key(&origin, storage_key))? else { return Ok(false) };
    Ok(decode_meta(storage_key, bytes).is_ok_and(|meta| meta.timestamp == timestamp))
}

/// The unfinished cleanups and the write number each covers.
fn cleanups(txn: &ReadTxn<'_>, dbs: &Dbs) -> Result<BTreeMap<SessionAt, u64>, StoreError> {
    let mut ending = BTreeMap::new();
    for (origin, session_id) in dbs.unfinished_cleanups(txn)? {
        let covers = dbs.ending_seq(txn, &origin, &session_id)?.unwrap_or(0);
        ending.insert((origin, session_id), covers);
    }
    Ok(ending)
}

/// `llm-cache-host verify [--repair]` on this user's store: prints what it finds (and, with `repair`,
/// what it did) and returns whether the store is sound at the end.
///
/// # Errors
/// Why the store can't be checked at all.
pub fn run(repair_too: bool, out: &mut impl std::io::Write) -> Result<bool, String> {
    let data_dir = crate::paths::data_dir().map_err(|e| e.to_string())?;
    let dir = crate::paths::store_dir(&data_dir);
    // Keys, session ids and origins come from clients (or from a damaged store): printed escaped.
    let mut say = |line: String| {
        let _ = writeln!(out, "{}", crate::terminal::escape_controls(&line));
    };
    say(format!("store: {}", dir.display()));
    match crate::store_file::check(&dir) {
        crate::store_file::FileCheck::Missing => {
            say("ok: there is no store yet, so nothing to check".into());
            return Ok(true);
        }
        crate::store_file::FileCheck::Damaged(why) => {
            say(format!("problem: {why}"));
            say("The store can't be opened, so it can't be repaired: move the folder away (the next host starts an empty store) or restore it from a backup.".into());
            return Ok(false);
        }
        crate::store_file::FileCheck::Empty | crate::store_file::FileCheck::Whole => {}
    }
    let store = Store::open(&dir).map_err(|e| e.message.clone())?;
    let report = check(&store).map_err(|e| e.message.clone())?;
    say(format!("checked {} items and {} sessions", report.items, report.sessions));
    for line in report.pending.iter() {
        say(format!("pending: {line}"));
    }
    for line in report.problems.iter() {
        say(format!("problem: {line}"));
    }
    if !repair_too || (report.problems.is_empty() && report.pending.is_empty()) {
        if report.problems.is_empty() {
            say("ok: every invariant holds".into());
        } else {
            say(format!("{} problems; `llm-cache-host verify --repair` puts right what it can", report.problems.len()));
        }
        return Ok(report.problems.is_empty());
    }
    for line in repair(&store).map_err(|e| e.message.clone())? {
        say(format!("repaired: {line}"));
    }
    let after = check(&store).map_err(|e| e.message.clone())?;
    for line in after.problems.iter() {
        say(format!("still a problem: {line}"));
    }
    if after.problems.is_empty() {
        say("ok: every invariant holds".into());
    }
    Ok(after.problems.is_empty())
}
