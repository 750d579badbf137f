//! `update`: changes an existing item's data, description or custom metadata, keeping its key.

use serde_json::value::RawValue;

use super::{
    CacheMetadata, Context, custom_metadata, description, owned_data, replace_item, session_id, storage_key_in,
};
use crate::error::{CacheError, ErrorCode};
use crate::json::shape::shape;
use crate::message::Fields;
use crate::provenance::Provenance;
use crate::store::{Dbs, ItemAt, ItemMeta, StoreError};
use heed::RwTxn;

/// A parsed `update`: at least one of the three changes.
pub struct Update {
    session_id: String,
    storage_key: String,
    data: Option<String>,
    description: Option<String>,
    custom_metadata: Option<Box<RawValue>>,
    /// Where the new text came from, merged into the item's; left out, it counts as unknown.
    provenance: Option<Provenance>,
}

impl Update {
    /// Checks the key and whichever changes are given.
    pub fn parse(fields: &Fields<'_>) -> Result<Update, CacheError> {
        let session_id = session_id(fields)?;
        let storage_key = storage_key_in(fields, &session_id)?;
        if fields.data.is_none() && fields.description.is_none() && fields.custom_metadata.is_none() {
            return Err(CacheError::new(
                ErrorCode::InvalidRequestError,
                "update changes nothing",
                "send at least one of `data`, `description` and `customMetadata`",
            )
            .expected("at least one of data, description, customMetadata")
            .actual("none of them"));
        }
        Ok(Update {
            storage_key,
            data: fields.data.map(|raw| owned_data(Some(raw))).transpose()?,
            description: fields.description.map(|raw| description(Some(raw))).transpose()?,
            custom_metadata: custom_metadata(fields.custom_metadata)?,
            provenance: Provenance::parse(fields.provenance, &session_id)?,
            session_id,
        })
    }

    /// Rewrites the item with a new timestamp, checking the quota in the same transaction.
    pub fn apply(self, ctx: &Context) -> Result<CacheMetadata, CacheError> {
        ctx.store()?.write(|txn, dbs| self.run(txn, dbs, ctx))
    }

    /// The update, in the caller's write transaction (its own, or a group commit's).
    pub fn run(&self, txn: &mut RwTxn<'_>, dbs: &Dbs, ctx: &Context) -> Result<CacheMetadata, StoreError> {
        let now = ctx.now();
        let origin = ctx.origin.as_str();
        let previous = dbs.existing_meta(txn, origin, &self.storage_key)?;
        let meta = ItemMeta {
            description: self.description.clone().unwrap_or_else(|| previous.description.clone()),
            timestamp: now,
            data_size: self.data.as_ref().map_or(previous.data_size, |data| data.len() as u64),
            seq: 0,
            custom_metadata: self.custom_metadata.clone().or_else(|| previous.custom_metadata.clone()),
            shape: self.data.as_deref().map_or_else(|| previous.shape.clone(), shape),
            provenance: Some(Provenance::merged(previous.provenance.as_ref(), self.provenance.as_ref())),
        };
        let at = ItemAt { origin, session_id: &self.session_id, storage_key: &self.storage_key };
        replace_item(txn, dbs, ctx, at, &previous, meta, self.data.as_deref())
    }
}
