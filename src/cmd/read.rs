//! `read`: one item with its data, or with only the part of it a JSON pointer names.

use serde::Serialize;
use serde_json::value::RawValue;

use super::{CacheMetadata, Context, last_access, session_id, storage_key_in};
use crate::error::{CacheError, ErrorCode};
use crate::message::{Fields, optional_string};
use crate::rules::resolve_pointer;

/// A parsed `read`.
pub struct Read {
    session_id: String,
    storage_key: String,
    pointer: Option<String>,
}

/// `read`'s result.
#[derive(Debug, Serialize)]
pub struct ReadResult {
    /// The item.
    item: CachedItem,
}

/// An item with its data.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct CachedItem {
    storage_key: String,
    description: String,
    timestamp: u64,
    data_size: u64,
    session_id: String,
    task_id: String,
    turn_id: String,
    /// The data, or the part of it the pointer names.
    data: Box<RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    custom_metadata: Option<Box<RawValue>>,
}

impl Read {
    /// Checks the session, key and pointer.
    pub fn parse(fields: &Fields<'_>) -> Result<Read, CacheError> {
        let session_id = session_id(fields)?;
        let storage_key = storage_key_in(fields, &session_id)?;
        let pointer = optional_string(fields.pointer, "pointer")?;
        if let Some(pointer) = &pointer
            && !pointer.is_empty()
            && !pointer.starts_with('/')
        {
            return Err(CacheError::invalid_field(
                "pointer",
                "an RFC 6901 JSON pointer such as /emails/3/subject",
                "a string not starting with /",
            ));
        }
        Ok(Read { session_id, storage_key, pointer })
    }

    /// Reads the item, then refreshes the session's last access.
    pub fn apply(self, ctx: &Context) -> Result<ReadResult, CacheError> {
        let origin = ctx.origin.as_str();
        let (item, last_accessed) = ctx.store()?.read(|txn, dbs| {
            let meta = dbs
                .meta(txn, origin, &self.storage_key)?
                .ok_or_else(|| CacheError::item_not_found(&self.storage_key))?;
            let text = dbs.data(txn, origin, &self.storage_key)?;
            let data = match &self.pointer {
                Some(pointer) => self.part(text, pointer)?,
                None => {
                    RawValue::from_string(text.to_owned()).map_err(|e| CacheError::corrupted(&self.storage_key, e))?
                }
            };
            let CacheMetadata { storage_key, description, timestamp, data_size, session_id, task_id, turn_id } =
                CacheMetadata::new(&self.storage_key, &meta);
            let item = CachedItem {
                storage_key,
                description,
                timestamp,
                data_size,
                session_id,
                task_id,
                turn_id,
                data,
                custom_metadata: meta.custom_metadata,
            };
            Ok((item, last_access(dbs.session(txn, origin, &self.session_id)?)))
        })?;
        ctx.touch(&self.session_id, last_accessed)?;
        Ok(ReadResult { item })
    }

    /// The part of `text` at `pointer`, as it was stored.
    fn part(&self, text: &str, pointer: &str) -> Result<Box<RawValue>, CacheError> {
        let corrupted = |e: serde_json::Error| CacheError::corrupted(&self.storage_key, e);
        let whole: &RawValue = serde_json::from_str(text).map_err(corrupted)?;
        let part = resolve_pointer(whole, pointer).map_err(corrupted)?.ok_or_else(|| {
            CacheError::new(
                ErrorCode::ItemNotFoundError,
                format!("item {} has nothing at pointer {pointer}", self.storage_key),
                "read the item without a pointer, or a shorter pointer, to see its structure; array indexes start at 0",
            )
            .expected("a pointer to an existing part of the item's data")
            .actual(pointer)
        })?;
        Ok(part.to_owned())
    }
}
