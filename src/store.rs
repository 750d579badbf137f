//! The LMDB store: its databases, their record formats, and the transactions every command runs in.
//!
//! One LMDB environment under `<data dir>/store` is shared by every host process (Chrome starts one
//! per port); LMDB serialises their write transactions, so a check and the write it guards, done in
//! one transaction, hold across processes. Accessors on [`Dbs`] take the transaction as their first
//! argument and never commit: a command's whole update is one atomic transaction owned by
//! [`Store::write`], which also grows the memory map when it fills up.
//!
//! Every key starts with the calling extension's origin and a NUL byte, so one extension's items are
//! invisible to another's.

use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::RwLock;
use std::sync::atomic::{AtomicBool, Ordering};

use heed::byteorder::BigEndian;
use heed::types::{Bytes, Str, U64, Unit};
use heed::{CommitOrAbort, Database, Env, EnvOpenOptions, MdbError, RoTxn, RwTxn, WithoutTls};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::error::CacheError;
use crate::limits::{INITIAL_MAP_BYTES, MAX_MAP_BYTES};
use crate::provenance::Provenance;
use crate::store_file::FileCheck;
use crate::store_pages::MapPages;

/// The names of the LMDB databases, fixed on disk.
mod db_name {
    pub const META: &str = "item-meta";
    pub const DATA: &str = "item-data";
    pub const BY_TIME: &str = "items-by-time";
    pub const SESSIONS: &str = "sessions";
    pub const ENDING: &str = "ending-sessions";
    pub const COUNTERS: &str = "counters";
}

/// How many named databases the environment holds; feeds `max_dbs`.
const NUMBER_OF_DATABASES: u32 = 6;

/// The key in `counters` of the write sequence number.
pub(crate) const SEQ: &str = "seq";

/// The key in `counters` that says the sessions' totals count customMetadata
/// ([`ItemMeta::quota_bytes`]). A store without it was written by hosts whose totals counted only
/// data, and is brought up to date when it is next opened ([`Store::count_custom_metadata`]).
pub(crate) const TOTALS_COUNT_METADATA: &str = "totals-count-custom-metadata";

/// The key in `counters` of the store's running total: the sum of every session's
/// [`SessionRecord::total_size`], of every origin, kept equal to it in every transaction by
/// [`Dbs::put_session`], so that the store-wide quota is checked without a scan. A store without it
/// was written by hosts that kept no such total, and gets it when it is next written
/// ([`Store::count_store_total`]).
pub(crate) const STORE_TOTAL: &str = "store-total";

/// A transaction that reads (and may also be a write transaction).
pub type ReadTxn<'e> = RoTxn<'e, WithoutTls>;

/// An item's metadata record, stored apart from its data so that `list` never reads the data.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ItemMeta {
    /// The description, already cut to 300 characters.
    pub description: String,
    /// When the item was last written, in ms since the Unix epoch.
    pub timestamp: u64,
    /// Bytes of the data's compact JSON text.
    pub data_size: u64,
    /// The store-wide write number of the last write, so that a session cleanup removes exactly the
    /// items written before it was asked for (see `cleanup`).
    pub seq: u64,
    /// The client's own annotations, as the JSON text it sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_metadata: Option<Box<RawValue>>,
    /// How the data is built (`json::shape`), computed when it was written; empty in a record that
    /// carries none (hosts that computed no shapes wrote such records, and stores keep them).
    #[serde(default)]
    pub shape: String,
    /// Where the item's text came from, in canonical form; absent in records written before items
    /// carried it, which read as unknown. Not counted in the quota: it is bounded (a few KB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<Provenance>,
}

impl ItemMeta {
    /// The bytes the item takes from its session's quota: its data's and its customMetadata's compact
    /// JSON text. (customMetadata is counted so that a session's size is bounded whatever its item
    /// count: 64 KiB of it per item would otherwise fill a disk.)
    pub fn quota_bytes(&self) -> u64 {
        self.data_size + self.custom_metadata.as_ref().map_or(0, |custom| custom.get().len() as u64)
    }
}

/// A session's running totals, kept equal to the sum over its items in every transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionRecord {
    /// The sum of the session's items' [`ItemMeta::quota_bytes`]; the quota bounds it.
    pub total_size: u64,
    /// How many items the session holds.
    pub item_count: u64,
    /// When the session's first item was written.
    pub created_at: u64,
    /// The last write or read; 24 hours after it the session is an orphan.
    pub last_accessed_at: u64,
}

impl SessionRecord {
    /// A session that holds nothing yet.
    pub fn new(now: u64) -> Self {
        SessionRecord { total_size: 0, item_count: 0, created_at: now, last_accessed_at: now }
    }
}

/// Where an item lives: its extension, session and key.
#[derive(Debug, Clone, Copy)]
pub struct ItemAt<'a> {
    /// The calling extension's origin.
    pub origin: &'a str,
    /// The item's session (the first part of its key).
    pub session_id: &'a str,
    /// The item's storage key.
    pub storage_key: &'a str,
}

/// One item of a scan: its storage key and its metadata, or why the metadata can't be read.
pub type ItemEntry<'t> = Result<(&'t str, Result<ItemMeta, CacheError>), StoreError>;

/// A failure inside a transaction: LMDB's own, or a command's verdict that aborts the transaction.
#[derive(Debug)]
pub enum StoreError {
    /// LMDB failed; mapped to `StorageUnavailableError` unless the map only needs to grow.
    Heed(heed::Error),
    /// The command refused (quota, not found, ...); the transaction is aborted.
    Cache(CacheError),
}

impl From<heed::Error> for StoreError {
    fn from(error: heed::Error) -> Self {
        StoreError::Heed(error)
    }
}

impl From<CacheError> for StoreError {
    fn from(error: CacheError) -> Self {
        StoreError::Cache(error)
    }
}

impl From<StoreError> for CacheError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::Cache(error) => error,
            StoreError::Heed(error) => CacheError::storage_unavailable(error),
        }
    }
}

/// The typed databases of the store.
pub struct Dbs {
    /// `origin NUL storageKey` -> [`ItemMeta`] as JSON.
    pub(crate) meta: Database<'static, Bytes, Bytes>,
    /// `origin NUL storageKey` -> the data's compact JSON text.
    pub(crate) data: Database<'static, Bytes, Bytes>,
    /// `origin NUL sessionId NUL timestamp(u64 BE) storageKey` -> nothing: a session's items in time
    /// order, so `list` pages newest first without sorting.
    pub(crate) by_time: Database<'static, Bytes, Unit>,
    /// `origin NUL sessionId` -> [`SessionRecord`] as JSON.
    pub(crate) sessions: Database<'static, Bytes, Bytes>,
    /// `origin NUL sessionId` -> the write number at which its cleanup was asked for: a cleanup that
    /// has begun and not yet finished, finished by the next host to start if this one dies.
    pub(crate) ending: Database<'static, Bytes, U64<BigEndian>>,
    /// Store-wide counters: `seq`, the number of the last write; [`STORE_TOTAL`], the bytes every
    /// session holds; [`TOTALS_COUNT_METADATA`].
    pub(crate) counters: Database<'static, Str, U64<BigEndian>>,
    /// The map the records are read through, whose pages are dropped as reads pile up.
    pages: MapPages,
}

/// The opened store.
pub struct Store {
    /// The LMDB environment, shared with every other host process through its lock file.
    env: Env<WithoutTls>,
    /// The databases inside it.
    dbs: Dbs,
    /// Held shared by every transaction and exclusively while the map is resized, because LMDB
    /// allows a resize only while this process has no transaction open.
    txn_gate: RwLock<()>,
    /// The folder of the LMDB files, for messages and for checking the disk's free space.
    dir: PathBuf,
    /// Opened read-only because its files or disk can't be written: reads work, writes are refused.
    read_only: bool,
    /// Set once a write transaction of this process has seen (or made) the totals count
    /// customMetadata, so later ones needn't look ([`Store::count_custom_metadata`]).
    totals_count_metadata: AtomicBool,
    /// Set once a write transaction of this process has seen (or made) the store's running total
    /// ([`Store::count_store_total`]).
    store_total_kept: AtomicBool,
}

/// The bytes of `origin NUL rest`, the shape of every key.
fn scoped(origin: &str, rest: &[&str]) -> Vec<u8> {
    let mut key = Vec::with_capacity(origin.len() + 1 + rest.iter().map(|s| s.len()).sum::<usize>());
    key.extend_from_slice(origin.as_bytes());
    key.push(0);
    for part in rest {
        key.extend_from_slice(part.as_bytes());
    }
    key
}

/// The key of an item in `meta` and `data`.
pub fn item_key(origin: &str, storage_key: &str) -> Vec<u8> {
    scoped(origin, &[storage_key])
}

/// The key of a session in `sessions` and `ending`.
pub fn session_key(origin: &str, session_id: &str) -> Vec<u8> {
    scoped(origin, &[session_id])
}

/// The prefix, in `meta` and `data`, of every item of a session (or, with a taskId, of one task).
pub fn items_prefix(origin: &str, session_id: &str, task_id: Option<&str>) -> Vec<u8> {
    match task_id {
        Some(task_id) => scoped(origin, &[session_id, "_", task_id, "_"]),
        None => scoped(origin, &[session_id, "_"]),
    }
}

/// The prefix, in `by_time`, of a session's entries.
pub fn time_prefix(origin: &str, session_id: &str) -> Vec<u8> {
    let mut key = scoped(origin, &[session_id]);
    key.push(0);
    key
}

/// A session's entry in `by_time` for an item written at `timestamp`.
pub fn time_key(origin: &str, session_id: &str, timestamp: u64, storage_key: &str) -> Vec<u8> {
    let mut key = time_prefix(origin, session_id);
    key.extend_from_slice(&timestamp.to_be_bytes());
    key.extend_from_slice(storage_key.as_bytes());
    key
}

/// Splits a `by_time` key after its prefix into the timestamp and storage key.
pub fn split_time_key(rest: &[u8]) -> Option<(u64, &str)> {
    let (timestamp, key) = rest.split_first_chunk::<8>()?;
    Some((u64::from_be_bytes(*timestamp), std::str::from_utf8(key).ok()?))
}

/// The storage key in an item key (the part after the origin).
pub fn storage_key_of(item_key: &[u8]) -> &str {
    let after = item_key.iter().position(|&b| b == 0).map_or(0, |at| at + 1);
    std::str::from_utf8(&item_key[after..]).unwrap_or_default()
}

impl Store {
    /// Opens (creating if needed) the store in `dir`, with LMDB's default durable commits.
    ///
    /// # Errors
    /// `StorageUnavailableError` saying why the store can't be opened.
    pub fn open(dir: &Path) -> Result<Store, CacheError> {
        Store::open_with_map_size(dir, INITIAL_MAP_BYTES)
    }

    /// [`Store::open`] with a chosen first map size; tests use a small one to make the map fill up.
    ///
    /// # Errors
    /// `StorageUnavailableError` saying why the store can't be opened.
    pub fn open_with_map_size(dir: &Path, map_size: usize) -> Result<Store, CacheError> {
        let unavailable = |what: &str, e: &dyn std::fmt::Display| {
            CacheError::storage_unavailable(format!("{what} {}: {e}", dir.display()))
        };
        // A folder that exists but can't be narrowed to 0700 (a read-only disk) is still worth reading.
        if let Err(e) = crate::paths::create_private_dir(dir)
            && !dir.is_dir()
        {
            return Err(unavailable("can't create", &e));
        }
        match crate::store_file::check(dir) {
            FileCheck::Damaged(why) => {
                return Err(CacheError::new(
                    crate::error::ErrorCode::StorageUnavailableError,
                    format!("the cache store can't be used: {why}"),
                    format!(
                        "continue without the cache; to start an empty store, move the folder {} away (the next host creates a new one), or restore it from a backup",
                        dir.display()
                    ),
                ));
            }
            FileCheck::Empty => {
                tracing::warn!(dir = %dir.display(), "the store's data file is empty: it is taken as a new, empty store")
            }
            FileCheck::Missing | FileCheck::Whole => {}
        }
        #[cfg(target_os = "linux")]
        if let Err(error) = reserve_lock_file(dir)
            && matches!(error.raw_os_error(), Some(libc::ENOSPC | libc::EDQUOT))
        {
            return Err(disk_full_error(dir, &error));
        }
        let mut options = EnvOpenOptions::new().read_txn_without_tls();
        options.map_size(map_size).max_dbs(NUMBER_OF_DATABASES);
        // SAFETY: the files are only ever opened through LMDB, whose lock file coordinates every process
        // using them; we use no unsafe flags (NO_LOCK, NO_SYNC), so commits are durable.
        let opened = unsafe { options.open(dir) };
        let (env, read_only) = match opened {
            Ok(env) => (env, false),
            // The files or the disk can't be written: what was stored can still be read. (LMDB needs no
            // lock file on a read-only filesystem when opened read-only.)
            Err(heed::Error::Io(e)) if cannot_write(&e) => {
                tracing::warn!(dir = %dir.display(), error = %e, "the store can't be written; opened read-only");
                // SAFETY: as above; READ_ONLY only forbids write transactions.
                let env = unsafe { options.flags(heed::EnvFlags::READ_ONLY).open(dir) }
                    .map_err(|e| unavailable("can't open the read-only LMDB store in", &e))?;
                return Store::open_read_only(env, dir);
            }
            Err(e) => return Err(unavailable("can't open the LMDB store in", &e)),
        };
        // A host killed inside a read transaction leaves its reader slot taken; free those.
        let cleared = env.clear_stale_readers().map_err(|e| unavailable("can't check readers of", &e))?;
        if cleared > 0 {
            tracing::info!(cleared, "cleared stale reader slots");
        }
        let dbs = open_databases(&env).map_err(|e| unavailable("can't create the databases of", &e))?;
        let (meta, data, by_time, sessions, ending, counters) = dbs;
        let pages = MapPages::new(&dir.join(crate::store_file::DATA_FILE));
        let dbs = Dbs { meta, data, by_time, sessions, ending, counters, pages };
        let store = Store::new(env, dbs, dir, read_only);
        // A store with items written before totals counted customMetadata is brought up to date now,
        // so that `verify` finds it sound; should that fail (a full disk), the first write does it.
        // So is a store whose running total was not kept yet.
        let behind = store.read(|txn, dbs| {
            Ok((!dbs.meta.is_empty(txn)? && !store.metadata_counted(txn)) || !store.store_total_kept(txn))
        })?;
        if behind && let Err(error) = store.write(|_, _| Ok(())) {
            tracing::warn!(code = error.code.as_str(), message = %error.message, "the totals could not be brought up to date yet");
        }
        Ok(store)
    }

    /// The store over an opened environment and its databases.
    fn new(env: Env<WithoutTls>, dbs: Dbs, dir: &Path, read_only: bool) -> Store {
        let txn_gate = RwLock::new(());
        let (totals_count_metadata, store_total_kept) = (AtomicBool::new(false), AtomicBool::new(false));
        Store { env, dbs, txn_gate, dir: dir.to_owned(), read_only, totals_count_metadata, store_total_kept }
    }

    /// Whether the store keeps its running total already (see [`STORE_TOTAL`]).
    fn store_total_kept(&self, txn: &ReadTxn<'_>) -> bool {
        self.store_total_kept.load(Ordering::Relaxed)
            || self.dbs.counters.get(txn, STORE_TOTAL).ok().flatten().is_some()
    }

    /// Gives a store written before hosts kept its running total one, in the write transaction `txn`,
    /// before anything else is written in it: the sum of its sessions' totals, read once. From then on
    /// every change of a session's total moves it too ([`Dbs::put_session`]). It runs before
    /// [`Store::count_custom_metadata`], whose changes to the sessions' totals then reach it.
    fn count_store_total(&self, txn: &mut RwTxn<'_>) -> Result<(), StoreError> {
        if self.store_total_kept(txn) {
            return Ok(());
        }
        let total = self.dbs.sum_of_sessions(txn)?;
        self.dbs.counters.put(txn, STORE_TOTAL, &total)?;
        tracing::info!(total, "the store now keeps a running total of its sessions' bytes");
        Ok(())
    }

    /// Brings a store written by older hosts up to date, first thing in a write transaction.
    fn bring_up_to_date(&self, txn: &mut RwTxn<'_>) -> Result<(), StoreError> {
        self.count_store_total(txn)?;
        self.count_custom_metadata(txn)
    }

    /// Notes, after a committed write transaction, that the store is up to date.
    fn up_to_date(&self) {
        self.totals_count_metadata.store(true, Ordering::Relaxed);
        self.store_total_kept.store(true, Ordering::Relaxed);
    }

    /// Whether the store's totals count customMetadata already (see [`TOTALS_COUNT_METADATA`]).
    fn metadata_counted(&self, txn: &ReadTxn<'_>) -> bool {
        self.totals_count_metadata.load(Ordering::Relaxed)
            || self.dbs.counters.get(txn, TOTALS_COUNT_METADATA).ok().flatten().is_some()
    }

    /// Brings the totals of a store written before they counted customMetadata up to date, in the
    /// write transaction `txn`, before anything else is written in it: each session's total gains its
    /// items' customMetadata bytes, and [`TOTALS_COUNT_METADATA`] records that it was done. It happens
    /// once per store, whichever host writes first.
    fn count_custom_metadata(&self, txn: &mut RwTxn<'_>) -> Result<(), StoreError> {
        let dbs = &self.dbs;
        if self.metadata_counted(txn) {
            return Ok(());
        }
        let mut added: std::collections::BTreeMap<(String, String), u64> = Default::default();
        for entry in dbs.meta.iter(txn)? {
            let (key, bytes) = entry?;
            let (origin, storage_key) = split_scoped(key);
            let Ok(meta) = decode_meta(&storage_key, bytes) else { continue };
            let size = meta.quota_bytes() - meta.data_size;
            if size > 0 && !dbs.covered(txn, &origin, &storage_key, Some(&meta))? {
                *added.entry((origin, crate::rules::session_of(&storage_key).to_owned())).or_default() += size;
            }
        }
        for ((origin, session_id), size) in &added {
            if let Some(mut record) = dbs.session(txn, origin, session_id)? {
                record.total_size += size;
                dbs.put_session(txn, origin, session_id, &record)?;
            }
        }
        dbs.counters.put(txn, TOTALS_COUNT_METADATA, &1)?;
        if !added.is_empty() {
            tracing::info!(sessions = added.len(), "the sessions' totals now count their customMetadata");
        }
        Ok(())
    }

    /// Sums the store's running total again when it no longer equals the sum of its sessions'
    /// totals, as when a host that keeps no running total (an older version still serving after an
    /// upgrade, or one run after a downgrade) changed sessions' totals without moving it: the
    /// store-wide quota would otherwise be checked against a wrong total for good. A host does this
    /// when it starts and at every later maintenance run (hourly). The check is one read of the
    /// session records; the write happens only when they differ, and looks again inside its
    /// transaction. Returns the total that was kept and the sum that replaced it, when they differed.
    ///
    /// # Errors
    /// `StorageUnavailableError`.
    pub fn sum_total_again_if_drifted(&self) -> Result<Option<(u64, u64)>, CacheError> {
        // A store that keeps no total yet gets one at its first write; a read-only one can't be put right.
        let drifted = |txn: &ReadTxn<'_>, dbs: &Dbs| -> Result<Option<(u64, u64)>, StoreError> {
            let Some(kept) = dbs.counters.get(txn, STORE_TOTAL)? else { return Ok(None) };
            let sum = dbs.sum_of_sessions(txn)?;
            Ok((kept != sum).then_some((kept, sum)))
        };
        if self.read_only || self.read(drifted)?.is_none() {
            return Ok(None);
        }
        let summed = self.write(|txn, dbs| {
            let found = drifted(txn, dbs)?;
            if let Some((_, sum)) = found {
                dbs.counters.put(txn, STORE_TOTAL, &sum)?;
            }
            Ok(found)
        })?;
        if let Some((kept, sum)) = summed {
            tracing::warn!(
                kept,
                sum,
                "the store's running total no longer equaled its sessions' totals (a host that keeps no running total wrote to the store); summed them again"
            );
        }
        Ok(summed)
    }

    /// The store of a read-only environment: its databases must exist already.
    fn open_read_only(env: Env<WithoutTls>, dir: &Path) -> Result<Store, CacheError> {
        let missing =
            || CacheError::storage_unavailable(format!("the read-only store in {} is incomplete", dir.display()));
        let (meta, data, by_time, sessions, ending, counters) =
            existing_databases(&env).map_err(CacheError::storage_unavailable)?.ok_or_else(missing)?;
        let pages = MapPages::new(&dir.join(crate::store_file::DATA_FILE));
        let dbs = Dbs { meta, data, by_time, sessions, ending, counters, pages };
        Ok(Store::new(env, dbs, dir, true))
    }

    /// Whether the store was opened read-only (its files or disk can't be written).
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// Runs `f` in a read transaction.
    ///
    /// # Errors
    /// What `f` returns, or `StorageUnavailableError`.
    pub fn read<T>(&self, mut f: impl FnMut(&ReadTxn<'_>, &Dbs) -> Result<T, StoreError>) -> Result<T, CacheError> {
        self.retrying(|store| {
            let _gate = store.txn_gate.read().unwrap_or_else(|e| e.into_inner());
            let value = f(&store.env.read_txn()?, &store.dbs);
            store.after_transaction();
            value
        })
    }

    /// Counts the B-tree pages the transaction that just ended read, and finds where the map lies
    /// (once per map size), so that its pages are dropped as reads pile up (see
    /// [`crate::store_pages`]). The caller holds the transaction gate.
    fn after_transaction(&self) {
        self.dbs.pages.locate(self.env.info().map_size);
        self.dbs.pages.transaction();
    }

    /// Runs `f` in a write transaction and commits it if `f` succeeds; aborts it otherwise.
    ///
    /// If the memory map fills up, the transaction is aborted, the map doubled and `f` run again, so
    /// `f` must not have effects outside the transaction.
    ///
    /// # Errors
    /// What `f` returns, or `StorageUnavailableError` (the disk is full, the map can't grow, ...).
    pub fn write<T>(&self, mut f: impl FnMut(&mut RwTxn<'_>, &Dbs) -> Result<T, StoreError>) -> Result<T, CacheError> {
        if self.read_only {
            return Err(CacheError::new(
                crate::error::ErrorCode::StorageUnavailableError,
                format!(
                    "the cache store in {} is read-only: its files or its disk can't be written",
                    self.dir.display()
                ),
                "items already cached can still be read; continue without caching new data, or make the store's folder writable again",
            ));
        }
        self.retrying(|store| {
            let _gate = store.txn_gate.read().unwrap_or_else(|e| e.into_inner());
            let mut wtxn = store.env.write_txn()?;
            store.bring_up_to_date(&mut wtxn)?;
            let value = f(&mut wtxn, &store.dbs);
            let value = value.and_then(|value| Ok(wtxn.commit().map(|()| value)?));
            store.after_transaction();
            if value.is_ok() {
                store.up_to_date();
            }
            value
        })
    }

    /// Why a write to a read-only store fails.
    fn read_only_error(&self) -> CacheError {
        CacheError::new(
            crate::error::ErrorCode::StorageUnavailableError,
            format!("the cache store in {} is read-only: its files or its disk can't be written", self.dir.display()),
            "items already cached can still be read; continue without caching new data, or make the store's folder writable again",
        )
    }

    /// Group commit: runs `f` for each of `items` in one write transaction, each in a nested
    /// transaction of its own, and commits them together with one disk sync. An item whose `f` fails
    /// with a command's verdict (a quota, a missing key) leaves no trace and gets its error; the others
    /// are unaffected. Nothing is committed, and no result is returned, unless all of them are.
    ///
    /// # Errors
    /// `StorageUnavailableError` when the transaction itself fails; as [`Store::write`], a full map
    /// is grown and the whole group run again, so `f` must not have effects outside the transaction.
    pub fn write_each<I, T>(
        &self,
        items: &[I],
        mut f: impl FnMut(&mut RwTxn<'_>, &Dbs, &I) -> Result<T, StoreError>,
    ) -> Result<Vec<Result<T, CacheError>>, CacheError> {
        if self.read_only {
            return Err(self.read_only_error());
        }
        self.retrying(|store| {
            let _gate = store.txn_gate.read().unwrap_or_else(|e| e.into_inner());
            let mut parent = store.env.write_txn()?;
            store.bring_up_to_date(&mut parent)?;
            let mut results = Vec::with_capacity(items.len());
            for item in items {
                let mut nested = store.env.nested_write_txn(&mut parent)?;
                store.dbs.pages.transaction();
                match f(&mut nested, &store.dbs, item) {
                    Ok(value) => {
                        nested.commit()?;
                        results.push(Ok(value));
                    }
                    // Dropping the nested transaction aborts it: this item leaves no trace.
                    Err(StoreError::Cache(error)) => results.push(Err(error)),
                    Err(error) => return Err(error),
                }
            }
            parent.commit()?;
            store.after_transaction();
            store.up_to_date();
            Ok(results)
        })
    }

    /// Runs a transaction, growing the map when it is full and adopting the size another process gave
    /// it when it was resized, then trying again.
    fn retrying<T>(&self, mut attempt: impl FnMut(&Store) -> Result<T, StoreError>) -> Result<T, CacheError> {
        const MAX_ATTEMPTS: usize = 16;
        for _ in 0..MAX_ATTEMPTS {
            match attempt(self) {
                Err(StoreError::Heed(heed::Error::Mdb(MdbError::MapFull))) => self.grow_map()?,
                Err(StoreError::Heed(heed::Error::Mdb(MdbError::MapResized))) => self.resize_map(0)?,
                Err(StoreError::Heed(error)) => return Err(self.unavailable(error)),
                Err(StoreError::Cache(error)) => return Err(error),
                Ok(value) => return Ok(value),
            }
        }
        Err(CacheError::storage_unavailable("the store's memory map could not be grown"))
    }

    /// `StorageUnavailableError` for an LMDB failure, saying plainly when the disk is full: a write
    /// the disk had no room for fails with ENOSPC, or with EIO when LMDB's write was cut short.
    fn unavailable(&self, error: heed::Error) -> CacheError {
        if !disk_full(&error, &self.dir) {
            return CacheError::storage_unavailable(error);
        }
        disk_full_error(&self.dir, &error)
    }

    /// Doubles the memory map (LMDB grows the file only as data is written).
    fn grow_map(&self) -> Result<(), CacheError> {
        let current = self.env.info().map_size;
        if current >= MAX_MAP_BYTES {
            return Err(CacheError::storage_unavailable(format!("the store is full at {current} bytes")));
        }
        let new_size = (current * 2).min(MAX_MAP_BYTES);
        tracing::info!(from = current, to = new_size, "growing the LMDB map");
        self.resize_map(new_size)
    }

    /// Sets the map size (0: the size another process last committed), with no transaction open.
    fn resize_map(&self, new_size: usize) -> Result<(), CacheError> {
        let _gate = self.txn_gate.write().unwrap_or_else(|e| e.into_inner());
        self.dbs.pages.forget();
        // SAFETY: holding the gate exclusively means no transaction of this process is open.
        unsafe { self.env.resize(new_size) }.map_err(CacheError::storage_unavailable)
    }
}

/// The six databases' handles, in the order of [`db_name`].
type Handles = (
    Database<'static, Bytes, Bytes>,
    Database<'static, Bytes, Bytes>,
    Database<'static, Bytes, Unit>,
    Database<'static, Bytes, Bytes>,
    Database<'static, Bytes, U64<BigEndian>>,
    Database<'static, Str, U64<BigEndian>>,
);

/// The six databases, created if they don't exist yet. Existing ones are opened in a read
/// transaction, so an ordinary start costs no write and no disk sync. Another host may have grown the
/// map since this one mapped the file (LMDB's MDB_MAP_RESIZED): then the map is adopted at its new
/// size and the transaction tried again.
fn open_databases(env: &Env<WithoutTls>) -> heed::Result<Handles> {
    let mut attempts = 0;
    loop {
        let opened = existing_databases(env).and_then(|existing| match existing {
            Some(handles) => Ok(handles),
            None => env.write_txn().and_then(|wtxn| {
                env.create_databases_and_commit(wtxn, |opener, wtxn| -> heed::Result<_> {
                    Ok(CommitOrAbort::<_, ()>::Commit((
                        opener.create_database(wtxn, Some(db_name::META))?,
                        opener.create_database(wtxn, Some(db_name::DATA))?,
                        opener.create_database(wtxn, Some(db_name::BY_TIME))?,
                        opener.create_database(wtxn, Some(db_name::SESSIONS))?,
                        opener.create_database(wtxn, Some(db_name::ENDING))?,
                        opener.create_database(wtxn, Some(db_name::COUNTERS))?,
                    )))
                })
                .map(CommitOrAbort::unwrap_commit)
            }),
        });
        match opened {
            Err(heed::Error::Mdb(MdbError::MapResized)) if attempts < 16 => {
                attempts += 1;
                // SAFETY: no transaction of this environment is open while the store is being opened.
                unsafe { env.resize(0) }?;
            }
            other => return other,
        }
    }
}

/// The six databases if they all exist already, opened in a read transaction.
fn existing_databases(env: &Env<WithoutTls>) -> heed::Result<Option<Handles>> {
    let rtxn = env.read_txn()?;
    let opened = env
        .open_databases_and_commit(rtxn, |opener, rtxn| -> heed::Result<_> {
            Ok(CommitOrAbort::<_, ()>::Commit((
                opener.open_database(rtxn, Some(db_name::META))?,
                opener.open_database(rtxn, Some(db_name::DATA))?,
                opener.open_database(rtxn, Some(db_name::BY_TIME))?,
                opener.open_database(rtxn, Some(db_name::SESSIONS))?,
                opener.open_database(rtxn, Some(db_name::ENDING))?,
                opener.open_database(rtxn, Some(db_name::COUNTERS))?,
            )))
        })?
        .unwrap_commit();
    Ok(match opened {
        (Some(meta), Some(data), Some(by_time), Some(sessions), Some(ending), Some(counters)) => {
            Some((meta, data, by_time, sessions, ending, counters))
        }
        _ => None,
    })
}

/// `StorageUnavailableError` saying that the disk under the store's folder `dir` is full.
fn disk_full_error(dir: &Path, error: &dyn std::fmt::Display) -> CacheError {
    CacheError::new(
        crate::error::ErrorCode::StorageUnavailableError,
        format!("the disk that holds the cache store ({}) is full: {error}", dir.display()),
        "free space on that disk, or delete items or sessions you no longer need, then try again; items already cached can still be read",
    )
}

/// LMDB's lock file's name in the store's folder.
#[cfg(target_os = "linux")]
const LOCK_FILE: &str = "lock.mdb";

/// The disk space reserved for LMDB's lock file: more than LMDB's own size for its default 126
/// readers (a header of 192 bytes on x86-64, 256 on arm64, and a 64-byte slot per reader after the
/// first: 8192 or 8256 bytes). The space is reserved without changing the file's size, so LMDB still
/// sizes the file itself and its reader count stays its default.
#[cfg(target_os = "linux")]
const LOCK_FILE_RESERVE_BYTES: libc::off_t = 16 * 1024;

/// Creates LMDB's lock file if need be and gives it its disk space before LMDB maps it. LMDB only
/// extends the file (leaving it sparse) and then writes through the map, and a page that a full
/// disk has no room for kills the process with SIGBUS at that write, before any reply. Reserved
/// here, the lack of room is an error instead. A lock file that already has its size and its space
/// (any store a host has opened before) is left alone, so that a full disk still lets a host open
/// an existing store and read it.
///
/// # Errors
/// Whatever creating or reserving returns (ENOSPC or EDQUOT for a full disk; EOPNOTSUPP where the
/// filesystem can't reserve space, and LMDB's own open then goes on as it would).
#[cfg(target_os = "linux")]
fn reserve_lock_file(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    use std::os::unix::io::AsRawFd;
    /// The smallest lock file LMDB makes (its size on x86-64).
    const LMDB_LOCK_FILE_BYTES: u64 = 8192;
    // Other hosts may be using the file: it is never truncated, only given space it lacks.
    let file =
        std::fs::OpenOptions::new().write(true).create(true).truncate(false).mode(0o600).open(dir.join(LOCK_FILE))?;
    let found = file.metadata()?;
    if found.len() >= LMDB_LOCK_FILE_BYTES && found.blocks() * 512 >= found.len() {
        return Ok(());
    }
    // SAFETY: the descriptor is open for writing for the whole call.
    let reserved = unsafe { libc::fallocate(file.as_raw_fd(), libc::FALLOC_FL_KEEP_SIZE, 0, LOCK_FILE_RESERVE_BYTES) };
    if reserved == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) }
}

/// Whether opening failed because the store's files or disk can't be written.
fn cannot_write(error: &std::io::Error) -> bool {
    #[cfg(unix)]
    let codes = [libc::EROFS, libc::EACCES, libc::EPERM];
    #[cfg(not(unix))]
    let codes = [5]; // ERROR_ACCESS_DENIED
    error.raw_os_error().is_some_and(|code| codes.contains(&code))
}

/// Whether `error` means the disk under `dir` has no room left.
#[cfg(unix)]
fn disk_full(error: &heed::Error, dir: &Path) -> bool {
    /// Under this much free space, a write cut short (EIO) is taken to be the disk filling up.
    const LOW_SPACE: u64 = 8 * 1024 * 1024;
    let heed::Error::Io(io) = error else { return false };
    match io.raw_os_error() {
        Some(libc::ENOSPC | libc::EDQUOT) => true,
        Some(libc::EIO) => free_bytes(dir).is_some_and(|free| free < LOW_SPACE),
        _ => false,
    }
}

#[cfg(not(unix))]
fn disk_full(error: &heed::Error, _dir: &Path) -> bool {
    /// Windows' ERROR_DISK_FULL and ERROR_HANDLE_DISK_FULL.
    const DISK_FULL: [i32; 2] = [112, 39];
    matches!(error, heed::Error::Io(io) if io.raw_os_error().is_some_and(|code| DISK_FULL.contains(&code)))
}

/// The bytes an unprivileged process may still write on the filesystem holding `dir`.
#[cfg(unix)]
fn free_bytes(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    let mut stats = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `path` is NUL-terminated and `stats` is a valid place for statvfs to fill in.
    if unsafe { libc::statvfs(path.as_ptr(), stats.as_mut_ptr()) } != 0 {
        return None;
    }
    // SAFETY: statvfs returned 0, so it filled `stats` in.
    let stats = unsafe { stats.assume_init() };
    #[allow(clippy::unnecessary_cast)] // the field types differ between Unix flavours
    Some(stats.f_bavail as u64 * stats.f_frsize as u64)
}

impl Dbs {
    /// An item's metadata, or `None` if there is no item under `storage_key`, or if a cleanup of
    /// its session has begun and covers it: from that moment the item is gone for every reader,
    /// though it is deleted only later (see `cleanup`).
    ///
    /// # Errors
    /// `CorruptedDataError` if the record can't be decoded (and no cleanup covers it).
    pub fn meta(&self, txn: &ReadTxn<'_>, origin: &str, storage_key: &str) -> Result<Option<ItemMeta>, StoreError> {
        let Some(bytes) = self.meta.get(txn, &item_key(origin, storage_key))? else {
            return Ok(None);
        };
        self.pages.read(bytes.len());
        let meta = decode_meta(storage_key, bytes);
        if self.covered(txn, origin, storage_key, meta.as_ref().ok())? {
            return Ok(None);
        }
        meta.map(Some)
    }

    /// The item's metadata, as [`Dbs::meta`] reads it; `ItemNotFoundError` when there is none: for
    /// the ops that act on one named item.
    pub fn existing_meta(&self, txn: &ReadTxn<'_>, origin: &str, storage_key: &str) -> Result<ItemMeta, StoreError> {
        self.meta(txn, origin, storage_key)?.ok_or_else(|| CacheError::item_not_found(storage_key).into())
    }

    /// An item's metadata as stored, whether or not a begun cleanup covers it; `None` when there is
    /// none or it can't be decoded.
    pub fn stored_meta(
        &self,
        txn: &ReadTxn<'_>,
        origin: &str,
        storage_key: &str,
    ) -> Result<Option<ItemMeta>, StoreError> {
        let Some(bytes) = self.meta.get(txn, &item_key(origin, storage_key))? else {
            return Ok(None);
        };
        self.pages.read(bytes.len());
        Ok(decode_meta(storage_key, bytes).ok())
    }

    /// Whether anything (metadata or data, readable or not) is stored under `storage_key` that no
    /// begun cleanup covers.
    pub fn contains(&self, txn: &ReadTxn<'_>, origin: &str, storage_key: &str) -> Result<bool, StoreError> {
        let key = item_key(origin, storage_key);
        let Some(bytes) = self.meta.get(txn, &key)? else {
            return Ok(self.data.get(txn, &key)?.is_some());
        };
        let meta = decode_meta(storage_key, bytes).ok();
        Ok(!self.covered(txn, origin, storage_key, meta.as_ref())?)
    }

    /// Whether a begun cleanup of the item's session covers the item: it was written no later than
    /// the cleanup began (an item whose metadata can't be read is covered by any cleanup).
    fn covered(
        &self,
        txn: &ReadTxn<'_>,
        origin: &str,
        storage_key: &str,
        meta: Option<&ItemMeta>,
    ) -> Result<bool, StoreError> {
        let session_id = crate::rules::session_of(storage_key);
        let Some(covers) = self.ending_seq(txn, origin, session_id)? else {
            return Ok(false);
        };
        Ok(meta.is_none_or(|meta| meta.seq <= covers))
    }

    /// An item's data, as the compact JSON text that was written.
    ///
    /// # Errors
    /// `CorruptedDataError` if the metadata exists but the data does not or is not UTF-8.
    pub fn data<'t>(&self, txn: &'t ReadTxn<'_>, origin: &str, storage_key: &str) -> Result<&'t str, StoreError> {
        let bytes = self
            .data
            .get(txn, &item_key(origin, storage_key))?
            .ok_or_else(|| CacheError::corrupted(storage_key, "its data is missing"))?;
        self.pages.read(bytes.len());
        std::str::from_utf8(bytes).map_err(|_| CacheError::corrupted(storage_key, "its data is not UTF-8").into())
    }

    /// Stores an item, replacing `previous` (its old metadata) if there was one.
    pub fn put_item(
        &self,
        txn: &mut RwTxn<'_>,
        at: ItemAt<'_>,
        meta: &ItemMeta,
        data: Option<&str>,
        previous: Option<&ItemMeta>,
    ) -> Result<(), StoreError> {
        let ItemAt { origin, session_id, storage_key } = at;
        let key = item_key(origin, storage_key);
        // A new item may take the key of one that a begun cleanup covers (and so no reader sees):
        // that one's time index entry goes, or it would list the new item twice.
        if previous.is_none()
            && let Some(bytes) = self.meta.get(txn, &key)?
        {
            match decode_meta(storage_key, bytes) {
                Ok(old) => {
                    self.by_time.delete(txn, &time_key(origin, session_id, old.timestamp, storage_key)).map(drop)?
                }
                Err(_) => self.delete_time_entries_of(txn, origin, session_id, storage_key)?,
            }
        }
        let encoded = serde_json::to_vec(meta).map_err(|e| heed::Error::Encoding(Box::new(e)))?;
        self.meta.put(txn, &key, &encoded)?;
        if let Some(data) = data {
            self.data.put(txn, &key, data.as_bytes())?;
        }
        if let Some(previous) = previous {
            self.by_time.delete(txn, &time_key(origin, session_id, previous.timestamp, storage_key))?;
        }
        self.by_time.put(txn, &time_key(origin, session_id, meta.timestamp, storage_key), &())?;
        Ok(())
    }

    /// Removes an item whose metadata is `meta` (or whose metadata could not be decoded, `None`) and
    /// returns the bytes it freed from the session's total: its [`ItemMeta::quota_bytes`], or, with its
    /// metadata unreadable, the length of its data (all that can still be known of what it counted).
    pub fn delete_item(&self, txn: &mut RwTxn<'_>, at: ItemAt<'_>, meta: Option<&ItemMeta>) -> Result<u64, StoreError> {
        let ItemAt { origin, session_id, storage_key } = at;
        let key = item_key(origin, storage_key);
        let stored = self.data.get(txn, &key)?.map_or(0, |data| data.len() as u64);
        let freed = meta.map_or(stored, ItemMeta::quota_bytes);
        // Freeing a long record reads the first page of its pages in the map, and the kernel maps
        // the pages around it with it: count them as read.
        self.pages.read((stored + freed) as usize);
        self.meta.delete(txn, &key)?;
        self.data.delete(txn, &key)?;
        match meta {
            Some(meta) => {
                self.by_time.delete(txn, &time_key(origin, session_id, meta.timestamp, storage_key))?;
            }
            None => self.delete_time_entries_of(txn, origin, session_id, storage_key)?,
        }
        Ok(freed)
    }

    /// Removes the `by_time` entries of one item when its timestamp is unknown (a corrupted record).
    fn delete_time_entries_of(
        &self,
        txn: &mut RwTxn<'_>,
        origin: &str,
        session_id: &str,
        storage_key: &str,
    ) -> Result<(), StoreError> {
        let prefix = time_prefix(origin, session_id);
        let stale: Vec<Vec<u8>> = self
            .by_time
            .prefix_iter(txn, &prefix)?
            .filter_map(|entry| entry.ok().map(|(key, ())| key))
            .filter(|key| split_time_key(&key[prefix.len()..]).is_some_and(|(_, k)| k == storage_key))
            .map(<[u8]>::to_vec)
            .collect();
        for key in stale {
            self.by_time.delete(txn, &key)?;
        }
        Ok(())
    }

    /// The items of a session (or of one of its tasks) in key order, as `(storageKey, metadata)`;
    /// an undecodable record comes as `Err` with its key.
    pub fn items<'t>(
        &'t self,
        txn: &'t ReadTxn<'_>,
        origin: &str,
        session_id: &str,
        task_id: Option<&str>,
    ) -> Result<impl Iterator<Item = ItemEntry<'t>> + 't, StoreError> {
        let prefix = items_prefix(origin, session_id, task_id);
        let iter = self.meta.prefix_iter(txn, &prefix)?;
        let pages = &self.pages;
        Ok(iter.map(move |entry| {
            let (key, bytes) = entry?;
            pages.read(bytes.len());
            let storage_key = storage_key_of(key);
            let meta = decode_meta(storage_key, bytes).map_err(CacheError::from);
            Ok((storage_key, meta))
        }))
    }

    /// The storage keys of a session, newest first, from `from` (a timestamp and key: `Excluded` to
    /// start just after an earlier page's last item, `Included` to start at it) or from the newest.
    pub fn keys_newest_first<'t>(
        &self,
        txn: &'t ReadTxn<'_>,
        origin: &str,
        session_id: &str,
        from: Bound<(u64, &str)>,
    ) -> Result<impl Iterator<Item = Result<(u64, &'t str), StoreError>> + 't, StoreError> {
        let prefix = time_prefix(origin, session_id);
        let start = prefix.len();
        // Every key of the session lies between its prefix (`... NUL`) and the same bytes ending in 1.
        let upper = match from {
            Bound::Included((timestamp, key)) | Bound::Excluded((timestamp, key)) => {
                time_key(origin, session_id, timestamp, key)
            }
            Bound::Unbounded => {
                let mut end = session_key(origin, session_id);
                end.push(1);
                end
            }
        };
        let upper = match from {
            Bound::Included(_) => Bound::Included(upper.as_slice()),
            _ => Bound::Excluded(upper.as_slice()),
        };
        let range = (Bound::Included(prefix.as_slice()), upper);
        let iter = self.by_time.rev_range(txn, &range)?;
        Ok(iter.map(move |entry| {
            let (key, ()) = entry?;
            split_time_key(&key[start..]).ok_or_else(|| heed::Error::Decoding("bad time index key".into()).into())
        }))
    }

    /// A session's totals, or `None` if it holds nothing.
    pub fn session(
        &self,
        txn: &ReadTxn<'_>,
        origin: &str,
        session_id: &str,
    ) -> Result<Option<SessionRecord>, StoreError> {
        let Some(bytes) = self.sessions.get(txn, &session_key(origin, session_id))? else {
            return Ok(None);
        };
        serde_json::from_slice(bytes).map(Some).map_err(|e| heed::Error::Decoding(Box::new(e)).into())
    }

    /// Saves a session's totals, or removes the record when the session holds no item; the store's
    /// running total moves by as much as the session's did, in the same transaction.
    pub fn put_session(
        &self,
        txn: &mut RwTxn<'_>,
        origin: &str,
        session_id: &str,
        record: &SessionRecord,
    ) -> Result<(), StoreError> {
        let key = session_key(origin, session_id);
        let before = self.session(txn, origin, session_id).ok().flatten().map_or(0, |old| old.total_size);
        let after = if record.item_count == 0 { 0 } else { record.total_size };
        if before != after {
            let total = self.store_total(txn)?;
            self.counters.put(txn, STORE_TOTAL, &(total.saturating_sub(before).saturating_add(after)))?;
        }
        if record.item_count == 0 {
            self.sessions.delete(txn, &key)?;
        } else {
            let encoded = serde_json::to_vec(record).map_err(|e| heed::Error::Encoding(Box::new(e)))?;
            self.sessions.put(txn, &key, &encoded)?;
        }
        Ok(())
    }

    /// An origin's session records in sessionId order (bytes), from just after `after` or from the
    /// first; each as its sessionId and its totals, or `None` when the record can't be decoded. Only
    /// the records walked are read: a caller that stops after n of them has read n (and one page
    /// of the B-tree's interior to find the first).
    pub fn sessions_of<'t>(
        &'t self,
        txn: &'t ReadTxn<'_>,
        origin: &str,
        after: Option<&str>,
    ) -> Result<impl Iterator<Item = Result<(&'t str, Option<SessionRecord>), StoreError>> + 't, StoreError> {
        // Every key of the origin lies between `origin NUL` and `origin \x01`.
        let lower = match after {
            Some(session_id) => Bound::Excluded(session_key(origin, session_id)),
            None => Bound::Included(session_key(origin, "")),
        };
        let mut upper = origin.as_bytes().to_vec();
        upper.push(1);
        let range = (lower.as_ref().map(Vec::as_slice), Bound::Excluded(upper.as_slice()));
        let iter = self.sessions.range(txn, &range)?;
        let pages = &self.pages;
        let prefix = origin.len() + 1;
        Ok(iter.map(move |entry| {
            let (key, bytes) = entry?;
            pages.read(bytes.len());
            let session_id = std::str::from_utf8(&key[prefix..]).unwrap_or_default();
            Ok((session_id, serde_json::from_slice::<SessionRecord>(bytes).ok()))
        }))
    }

    /// Every session of every origin whose last access is at or before `cutoff`, as `(origin, sessionId)`.
    pub fn sessions_idle_since(&self, txn: &ReadTxn<'_>, cutoff: u64) -> Result<Vec<(String, String)>, StoreError> {
        let mut idle = Vec::new();
        for entry in self.sessions.iter(txn)? {
            let (key, bytes) = entry?;
            let Ok(record) = serde_json::from_slice::<SessionRecord>(bytes) else {
                continue;
            };
            if record.last_accessed_at <= cutoff {
                idle.push(split_scoped(key));
            }
        }
        Ok(idle)
    }

    /// The store's running total: the bytes (data and customMetadata) every session of every origin
    /// holds. A store that keeps none yet (one written by older hosts, opened read-only) has it summed.
    pub fn store_total(&self, txn: &ReadTxn<'_>) -> Result<u64, StoreError> {
        match self.counters.get(txn, STORE_TOTAL)? {
            Some(total) => Ok(total),
            None => self.sum_of_sessions(txn),
        }
    }

    /// The sum of every session's total, read record by record (the running total's check and start).
    pub fn sum_of_sessions(&self, txn: &ReadTxn<'_>) -> Result<u64, StoreError> {
        let mut total = 0u64;
        for entry in self.sessions.iter(txn)? {
            let (_, bytes) = entry?;
            if let Ok(record) = serde_json::from_slice::<SessionRecord>(bytes) {
                total = total.saturating_add(record.total_size);
            }
        }
        Ok(total)
    }

    /// The write number of the store's last write.
    pub fn last_seq(&self, txn: &ReadTxn<'_>) -> Result<u64, StoreError> {
        Ok(self.counters.get(txn, SEQ)?.unwrap_or(0))
    }

    /// Takes the next write number.
    pub fn next_seq(&self, txn: &mut RwTxn<'_>) -> Result<u64, StoreError> {
        let next = self.last_seq(txn)? + 1;
        self.counters.put(txn, SEQ, &next)?;
        Ok(next)
    }

    /// Records that a session's cleanup has begun, covering writes up to `seq`.
    pub fn mark_ending(&self, txn: &mut RwTxn<'_>, origin: &str, session_id: &str, seq: u64) -> Result<(), StoreError> {
        let key = session_key(origin, session_id);
        let seq = self.ending.get(txn, &key)?.map_or(seq, |earlier| earlier.max(seq));
        self.ending.put(txn, &key, &seq)?;
        Ok(())
    }

    /// The write number a session's unfinished cleanup covers, if one has begun.
    pub fn ending_seq(&self, txn: &ReadTxn<'_>, origin: &str, session_id: &str) -> Result<Option<u64>, StoreError> {
        Ok(self.ending.get(txn, &session_key(origin, session_id))?)
    }

    /// Records that a session's cleanup has finished.
    pub fn unmark_ending(&self, txn: &mut RwTxn<'_>, origin: &str, session_id: &str) -> Result<(), StoreError> {
        self.ending.delete(txn, &session_key(origin, session_id))?;
        Ok(())
    }

    /// Every cleanup that has begun and not finished, as `(origin, sessionId)`.
    pub fn unfinished_cleanups(&self, txn: &ReadTxn<'_>) -> Result<Vec<(String, String)>, StoreError> {
        let mut pending = Vec::new();
        for entry in self.ending.iter(txn)? {
            let (key, _) = entry?;
            pending.push(split_scoped(key));
        }
        Ok(pending)
    }
}

/// Splits `origin NUL rest` into its two strings.
pub(crate) fn split_scoped(key: &[u8]) -> (String, String) {
    let at = key.iter().position(|&b| b == 0).unwrap_or(key.len());
    let rest = key.get(at + 1..).unwrap_or_default();
    (String::from_utf8_lossy(&key[..at]).into_owned(), String::from_utf8_lossy(rest).into_owned())
}

pub(crate) fn decode_meta(storage_key: &str, bytes: &[u8]) -> Result<ItemMeta, StoreError> {
    serde_json::from_slice(bytes)
        .map_err(|e| CacheError::corrupted(storage_key, format!("its metadata can't be read ({e})")).into())
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// LMDB sizes the lock file itself (so its reader count stays its default), within the space
    /// reserved for it, and no page of it is left sparse.
    #[test]
    fn the_lock_file_has_lmdb_size_and_all_its_space() {
        use std::os::unix::fs::MetadataExt;
        let tmp = tempfile::tempdir().unwrap();
        let store = Store::open_with_map_size(tmp.path(), 1 << 20).unwrap();
        let lock = std::fs::metadata(tmp.path().join(LOCK_FILE)).unwrap();
        assert!((8192..=LOCK_FILE_RESERVE_BYTES as u64).contains(&lock.len()), "{} bytes", lock.len());
        assert!(lock.blocks() * 512 >= lock.len(), "the lock file is sparse: {} blocks", lock.blocks());
        drop(store);
    }
}
