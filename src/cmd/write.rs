//! `write`: stores an item under `{sessionId}_{taskId}_{turnId}` and returns its metadata only.
//!
//! Missing taskId/turnId are generated. Writing an existing key replaces the item (last write wins).
//! The quota checks (the session's and the store-wide one) and the write happen in one LMDB write
//! transaction, so the quotas hold however many host processes write at once.

use std::borrow::Cow;

use serde_json::value::RawValue;

use super::{
    CacheMetadata, Context, check_quota, check_store_quota, custom_metadata, data_and_shape, description, session_id,
};
use crate::error::CacheError;
use crate::message::{Fields, optional_string};
use crate::provenance::Provenance;
use crate::rules::{check_short_id, generate_id, storage_key};
use crate::store::{Dbs, ItemAt, ItemMeta, SessionRecord, StoreError};
use heed::RwTxn;

/// A parsed `write`. Its data borrows the request frame's bytes when the client sent it compact (as
/// `JSON.stringify` does), so a 5 MB write holds the data once, in the frame, not again in a copy.
pub struct Write<'f> {
    session_id: String,
    task_id: Option<String>,
    turn_id: Option<String>,
    data: Cow<'f, str>,
    /// The data's shape, found while its text was checked.
    shape: String,
    description: String,
    custom_metadata: Option<Box<RawValue>>,
    /// Where the data came from; left out, the item reads as unknown.
    provenance: Option<Provenance>,
}

impl<'f> Write<'f> {
    /// Checks every field before the store is touched.
    pub fn parse(fields: &Fields<'f>) -> Result<Write<'f>, CacheError> {
        let session_id = session_id(fields)?;
        let task_id = optional_string(fields.task_id, "taskId")?;
        let turn_id = optional_string(fields.turn_id, "turnId")?;
        if let Some(id) = &task_id {
            check_short_id("taskId", id)?;
        }
        if let Some(id) = &turn_id {
            check_short_id("turnId", id)?;
        }
        let (data, shape) = data_and_shape(fields.data)?;
        Ok(Write {
            task_id,
            turn_id,
            data,
            shape,
            description: description(fields.description)?,
            custom_metadata: custom_metadata(fields.custom_metadata)?,
            provenance: Provenance::parse(fields.provenance, &session_id)?,
            session_id,
        })
    }

    /// Stores the item.
    pub fn apply(self, ctx: &Context) -> Result<CacheMetadata, CacheError> {
        let written = ctx.store()?.write(|txn, dbs| self.run(txn, dbs, ctx));
        // Data compacted into memory of its own: that memory serves the next long copy (see
        // `frame::copy_of`). Borrowed data is the frame's, which the request loop keeps.
        if let Cow::Owned(data) = self.data {
            crate::frame::give_back(data);
        }
        written
    }

    /// The write, in the caller's write transaction (its own, or a group commit's).
    pub fn run(&self, txn: &mut RwTxn<'_>, dbs: &Dbs, ctx: &Context) -> Result<CacheMetadata, StoreError> {
        let now = ctx.now();
        let origin = ctx.origin.as_str();
        let key = self.choose_key(|key| dbs.contains(txn, origin, key))?;
        let mut record = dbs.session(txn, origin, &self.session_id)?.unwrap_or(SessionRecord::new(now));
        let at = ItemAt { origin, session_id: &self.session_id, storage_key: &key };
        let replaced = if dbs.contains(txn, origin, &key)? {
            let previous = dbs.meta(txn, origin, &key).ok().flatten();
            Some(dbs.delete_item(txn, at, previous.as_ref())?)
        } else {
            None
        };
        let meta = ItemMeta {
            description: self.description.clone(),
            timestamp: now,
            data_size: self.data.len() as u64,
            seq: 0,
            custom_metadata: self.custom_metadata.clone(),
            shape: self.shape.clone(),
            // A replaced item's provenance goes with it, endorsement and all: the new text is what it
            // describes.
            provenance: self.provenance.clone(),
        };
        record.total_size = check_quota(record.total_size, replaced.unwrap_or(0), meta.quota_bytes())?;
        // The replaced item's bytes are still in the store's total: the session's comes from its record.
        check_store_quota(dbs.store_total(txn)?, replaced.unwrap_or(0), meta.quota_bytes(), ctx.store_quota)?;
        record.item_count += u64::from(replaced.is_none());
        record.last_accessed_at = now;
        let meta = ItemMeta { seq: dbs.next_seq(txn)?, ..meta };
        dbs.put_item(txn, at, &meta, Some(&self.data), None)?;
        dbs.put_session(txn, origin, &self.session_id, &record)?;
        Ok(CacheMetadata::new(&key, &meta))
    }

    /// The item's key: the given ids, with a fresh random id for each one left out. A generated key
    /// that is already taken is drawn again, so a write without ids never replaces an item.
    fn choose_key(&self, taken: impl Fn(&str) -> Result<bool, StoreError>) -> Result<String, StoreError> {
        const MAX_DRAWS: usize = 16;
        let generates = self.task_id.is_none() || self.turn_id.is_none();
        for _ in 0..MAX_DRAWS {
            let task_id = self.task_id.clone().map_or_else(random_id, Ok)?;
            let turn_id = self.turn_id.clone().map_or_else(random_id, Ok)?;
            let key = storage_key(&self.session_id, &task_id, &turn_id);
            if !generates || !taken(&key)? {
                return Ok(key);
            }
        }
        Err(CacheError::storage_unavailable("no free storage key could be generated").into())
    }
}

/// A fresh id from the OS's secure random source.
fn random_id() -> Result<String, StoreError> {
    use rand::TryRng;
    generate_id(|buf| rand::rngs::SysRng.try_fill_bytes(buf))
        .map_err(|e| CacheError::storage_unavailable(format!("the OS random source failed: {e}")).into())
}
