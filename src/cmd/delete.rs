//! `delete`: removes one item, corrupted or not, and frees its bytes from the session's quota.

use serde::Serialize;

use super::{Context, session_id, storage_key_in};
use crate::error::CacheError;
use crate::message::Fields;
use crate::store::{Dbs, ItemAt, StoreError};
use heed::RwTxn;

/// A parsed `delete`.
pub struct Delete {
    session_id: String,
    storage_key: String,
}

/// `delete`'s result.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeleteResult {
    storage_key: String,
    /// Always true: a missing item is `ItemNotFoundError` instead.
    deleted: bool,
    /// The bytes of the item's data and customMetadata, now free in the session's quota.
    freed_bytes: u64,
}

impl Delete {
    /// Checks the session and key.
    pub fn parse(fields: &Fields<'_>) -> Result<Delete, CacheError> {
        let session_id = session_id(fields)?;
        let storage_key = storage_key_in(fields, &session_id)?;
        Ok(Delete { session_id, storage_key })
    }

    /// Deletes the item and updates the session's totals in one transaction.
    pub fn apply(self, ctx: &Context) -> Result<DeleteResult, CacheError> {
        ctx.store()?.write(|txn, dbs| self.run(txn, dbs, ctx))
    }

    /// The delete, in the caller's write transaction (its own, or a group commit's).
    pub fn run(&self, txn: &mut RwTxn<'_>, dbs: &Dbs, ctx: &Context) -> Result<DeleteResult, StoreError> {
        let now = ctx.now();
        let origin = ctx.origin.as_str();
        if !dbs.contains(txn, origin, &self.storage_key)? {
            return Err(CacheError::item_not_found(&self.storage_key).into());
        }
        // An item whose metadata is unreadable can still be deleted: that is the way out of
        // CorruptedDataError.
        let meta = dbs.meta(txn, origin, &self.storage_key).ok().flatten();
        let at = ItemAt { origin, session_id: &self.session_id, storage_key: &self.storage_key };
        let freed_bytes = dbs.delete_item(txn, at, meta.as_ref())?;
        if let Some(mut record) = dbs.session(txn, origin, &self.session_id)? {
            record.total_size = record.total_size.saturating_sub(freed_bytes);
            record.item_count = record.item_count.saturating_sub(1);
            record.last_accessed_at = now;
            dbs.put_session(txn, origin, &self.session_id, &record)?;
        }
        Ok(DeleteResult { storage_key: self.storage_key.clone(), deleted: true, freed_bytes })
    }
}
