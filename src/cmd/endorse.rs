//! `endorse`: the extension's code vouches for an item, which then reads as trusted until untrusted
//! text is added to it (PROTOCOL.md section 5.13).
//!
//! Only the provenance changes: the data, description, customMetadata, timestamp and write number
//! stay, so an endorsement is a note on the item, not a new version of it (a cleanup begun before it
//! still covers the item); the session's last access moves, as any change's does.

use super::{CacheMetadata, Context, session_id, storage_key_in};
use crate::error::CacheError;
use crate::limits::MAX_ENDORSE_REASON_CHARS;
use crate::message::{Fields, required_string};
use crate::provenance::{Endorsement, Provenance};
use crate::store::{Dbs, ItemAt, StoreError};
use heed::RwTxn;

/// A parsed `endorse`.
pub struct Endorse {
    session_id: String,
    storage_key: String,
    /// Why, in 1 to [`MAX_ENDORSE_REASON_CHARS`] characters.
    reason: String,
}

impl Endorse {
    /// Checks the session, key and reason. A reason too long is refused, not cut: it is the
    /// extension's own text, and a cut one could say something else.
    pub fn parse(fields: &Fields<'_>) -> Result<Endorse, CacheError> {
        let session_id = session_id(fields)?;
        let storage_key = storage_key_in(fields, &session_id)?;
        let reason = required_string(fields.reason, "reason")?;
        let expected =
            format!("1 to {MAX_ENDORSE_REASON_CHARS} characters saying why the extension vouches for the item");
        let chars = reason.chars().count();
        if chars > MAX_ENDORSE_REASON_CHARS {
            return Err(CacheError::invalid_field("reason", &expected, format!("a string of {chars} characters")));
        }
        if reason.trim().is_empty() {
            let actual = if chars == 0 { "an empty string" } else { "only white space" };
            return Err(CacheError::invalid_field("reason", &expected, actual));
        }
        Ok(Endorse { session_id, storage_key, reason })
    }

    /// Sets the item's endorsement, replacing any earlier one.
    pub fn apply(self, ctx: &Context) -> Result<CacheMetadata, CacheError> {
        ctx.store()?.write(|txn, dbs| self.run(txn, dbs, ctx))
    }

    /// The endorsement, in the caller's write transaction (its own, or a group commit's).
    pub fn run(&self, txn: &mut RwTxn<'_>, dbs: &Dbs, ctx: &Context) -> Result<CacheMetadata, StoreError> {
        let now = ctx.now();
        let origin = ctx.origin.as_str();
        let previous = dbs.existing_meta(txn, origin, &self.storage_key)?;
        let mut meta = previous.clone();
        let mut provenance = meta.provenance.take().unwrap_or_else(Provenance::unknown);
        provenance.endorsed = Some(Endorsement { at: now, reason: self.reason.clone() });
        meta.provenance = Some(provenance);
        let at = ItemAt { origin, session_id: &self.session_id, storage_key: &self.storage_key };
        dbs.put_item(txn, at, &meta, None, Some(&previous))?;
        if let Some(mut record) = dbs.session(txn, origin, &self.session_id)? {
            record.last_accessed_at = now;
            dbs.put_session(txn, origin, &self.session_id, &record)?;
        }
        Ok(CacheMetadata::new(&self.storage_key, &meta))
    }
}
