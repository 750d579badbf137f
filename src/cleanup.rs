//! Removing sessions: on `endSession`, for sessions idle 24 hours, and for cleanups a dead host left
//! unfinished.
//!
//! A cleanup first records, in its own committed transaction, that it has begun and which writes it
//! covers (every write numbered up to the store's last write number), and drops the session's totals
//! in that same transaction, whether `endSession` or the orphan sweep began it. It then deletes those
//! items in batches, one transaction each, and finally drops the record. A host that dies part-way leaves the record behind, and the next host to start
//! finishes the job. Items written after the cleanup began (by another host process, say) carry a
//! higher number and survive it.

use serde::Serialize;

use crate::error::CacheError;
use crate::limits::{CLEANUP_BATCH_ITEMS, ORPHAN_AFTER_MS};
use crate::store::{Dbs, ItemAt, SessionRecord, Store, StoreError};

/// What a cleanup removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Removed {
    /// How many items were deleted.
    pub deleted_items: u64,
    /// The bytes they took from the quota: data and customMetadata.
    pub freed_bytes: u64,
}

impl Removed {
    fn add(&mut self, other: Removed) {
        self.deleted_items += other.deleted_items;
        self.freed_bytes += other.freed_bytes;
    }
}

/// Removes every item of a session and its record. Ending a session that holds nothing is no error.
///
/// # Errors
/// `StorageUnavailableError`; a cleanup cut short by one is finished by the next host to start.
pub fn end_session(store: &Store, origin: &str, session_id: &str) -> Result<Removed, CacheError> {
    if !begin(store, origin, session_id)? {
        return Ok(Removed::default());
    }
    finish(store, origin, session_id)
}

/// Records that a session's cleanup has begun, covering every write so far, and drops the session's
/// totals with it: from this commit on, the covered items are gone for every reader (`read`, `list`,
/// `stats`, `search` skip them; see `Dbs::meta`), whoever deletes them and however long that takes.
/// Returns false when the session holds nothing to clean up.
///
/// # Errors
/// `StorageUnavailableError`.
pub fn begin(store: &Store, origin: &str, session_id: &str) -> Result<bool, CacheError> {
    store.write(|txn, dbs| {
        let holds_items = dbs.session(txn, origin, session_id)?.is_some()
            || dbs.items(txn, origin, session_id, None)?.next().is_some();
        if !holds_items && dbs.ending_seq(txn, origin, session_id)?.is_none() {
            return Ok(false);
        }
        mark_begun(txn, dbs, origin, session_id)?;
        Ok(true)
    })
}

/// Begins the cleanup of a session nobody has used since `cutoff`, as [`begin`] does, looking again
/// inside the transaction that marks it: another host may have used the session since the sweep's
/// scan. Returns false when the session is no longer idle (or holds nothing).
///
/// # Errors
/// `StorageUnavailableError`.
pub fn begin_if_idle(store: &Store, origin: &str, session_id: &str, cutoff: u64) -> Result<bool, CacheError> {
    store.write(|txn, dbs| {
        if dbs.session(txn, origin, session_id)?.is_none_or(|record| record.last_accessed_at > cutoff) {
            return Ok(false);
        }
        mark_begun(txn, dbs, origin, session_id)?;
        Ok(true)
    })
}

/// Records in `txn` that a session's cleanup has begun, covering every write so far, and drops the
/// session's totals (and with them its share of the store's running total) in the same
/// transaction. A host killed before the cleanup's last batch then leaves totals that already
/// equal what readers see, and the next host finishes the deleting.
fn mark_begun(txn: &mut heed::RwTxn<'_>, dbs: &Dbs, origin: &str, session_id: &str) -> Result<(), StoreError> {
    let last = dbs.last_seq(txn)?;
    dbs.mark_ending(txn, origin, session_id, last)?;
    dbs.put_session(txn, origin, session_id, &SessionRecord::new(0))
}

/// Deletes, batch by batch, the items a begun cleanup covers, then drops its record.
///
/// # Errors
/// `StorageUnavailableError`.
pub fn finish(store: &Store, origin: &str, session_id: &str) -> Result<Removed, CacheError> {
    let mut removed = Removed::default();
    loop {
        let (batch, done) = store.write(|txn, dbs| {
            let Some(covers) = dbs.ending_seq(txn, origin, session_id)? else {
                return Ok((Removed::default(), true));
            };
            // Deleted items are gone from the next scan, so each batch starts from the session's
            // first key and passes over only the items too new for this cleanup.
            let mut victims = Vec::new();
            let mut more = false;
            for entry in dbs.items(txn, origin, session_id, None)? {
                let (storage_key, meta) = entry?;
                match meta {
                    Ok(meta) if meta.seq > covers => continue,
                    _ if victims.len() == CLEANUP_BATCH_ITEMS => {
                        more = true;
                        break;
                    }
                    _ => victims.push(storage_key.to_owned()),
                }
            }
            let mut batch = Removed::default();
            for storage_key in &victims {
                // Each item's metadata is read again as it is deleted, so that a batch's
                // customMetadata (up to 64 KiB each) is never held all at once.
                let meta = dbs.stored_meta(txn, origin, storage_key)?;
                let at = ItemAt { origin, session_id, storage_key };
                batch.freed_bytes += dbs.delete_item(txn, at, meta.as_ref())?;
                batch.deleted_items += 1;
            }
            // The totals left the covered items when the cleanup began; only what was written since
            // remains. Counting it again also puts right a cleanup begun by an older host, which
            // subtracted batch by batch instead.
            if !more {
                dbs.unmark_ending(txn, origin, session_id)?;
                recount(txn, dbs, origin, session_id)?;
            }
            Ok((batch, !more))
        })?;
        removed.add(batch);
        if done {
            return Ok(removed);
        }
    }
}

/// Sets a session's totals to the sum over the items it holds.
fn recount(txn: &mut heed::RwTxn<'_>, dbs: &Dbs, origin: &str, session_id: &str) -> Result<(), StoreError> {
    let (mut count, mut size) = (0, 0);
    for entry in dbs.items(txn, origin, session_id, None)? {
        let (_, meta) = entry?;
        count += 1;
        size += meta.map_or(0, |meta| meta.quota_bytes());
    }
    let Some(mut record) = dbs.session(txn, origin, session_id)? else {
        return Ok(());
    };
    (record.item_count, record.total_size) = (count, size);
    dbs.put_session(txn, origin, session_id, &record)
}

/// Finishes every cleanup a host left unfinished, then removes the sessions nobody touched for 24
/// hours. Returns how many sessions it removed.
///
/// # Errors
/// `StorageUnavailableError`.
pub fn maintain(store: &Store, now_ms: u64) -> Result<usize, CacheError> {
    let unfinished = store.read(|txn, dbs| dbs.unfinished_cleanups(txn))?;
    for (origin, session_id) in &unfinished {
        let removed = finish(store, origin, session_id)?;
        tracing::info!(origin = %origin.escape_debug(), session_id, removed.deleted_items, removed.freed_bytes, "finished an interrupted cleanup");
    }
    let cutoff = now_ms.saturating_sub(ORPHAN_AFTER_MS);
    let idle = store.read(|txn, dbs| dbs.sessions_idle_since(txn, cutoff))?;
    let mut orphans = 0;
    for (origin, session_id) in &idle {
        if begin_if_idle(store, origin, session_id, cutoff)? {
            let removed = finish(store, origin, session_id)?;
            tracing::info!(origin = %origin.escape_debug(), session_id, removed.deleted_items, removed.freed_bytes, "removed an orphaned session");
            orphans += 1;
        }
    }
    Ok(orphans + unfinished.len())
}
