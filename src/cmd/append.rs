//! `append`: adds the elements of an array to the array at `pointer`, or a string to the string at
//! `pointer`, so a running result grows by one batch without being read back and sent again.
//!
//! The new text is spliced from the stored text and the appended part, in one write transaction that
//! also checks the item's size and the session's quota.

use super::{
    CacheMetadata, Context, at_pointer, description, owned_data, pointer, replace_item, session_id, storage_key_in,
    value_at,
};
use crate::error::{CacheError, ErrorCode, json_type_name};
use crate::json::shape::shape;
use crate::limits::MAX_ITEM_BYTES;
use crate::message::Fields;
use crate::provenance::Provenance;
use crate::store::{Dbs, ItemAt, ItemMeta, StoreError};
use heed::RwTxn;

/// A parsed `append`.
pub struct Append {
    session_id: String,
    storage_key: String,
    pointer: Option<String>,
    /// An array whose elements are appended, or a string, as compact JSON text.
    data: String,
    description: Option<String>,
    /// Where the added text came from, merged into the item's; left out, it counts as unknown.
    provenance: Option<Provenance>,
}

impl Append {
    /// Checks the key, the pointer and that `data` is an array or a string.
    pub fn parse(fields: &Fields<'_>) -> Result<Append, CacheError> {
        let session_id = session_id(fields)?;
        let storage_key = storage_key_in(fields, &session_id)?;
        let pointer = pointer(fields)?;
        let data = owned_data(fields.data)?;
        if !matches!(data.as_bytes().first(), Some(b'[' | b'"')) {
            return Err(CacheError::invalid_field(
                "data",
                "an array (its elements are appended to an array) or a string (appended to a string)",
                json_type_name(&data),
            ));
        }
        let description = fields.description.map(|raw| description(Some(raw))).transpose()?;
        let provenance = Provenance::parse(fields.provenance, &session_id)?;
        Ok(Append { session_id, storage_key, pointer, data, description, provenance })
    }

    /// Splices the data in and stores the result with a new timestamp and shape.
    pub fn apply(self, ctx: &Context) -> Result<CacheMetadata, CacheError> {
        ctx.store()?.write(|txn, dbs| self.run(txn, dbs, ctx))
    }

    /// The append, in the caller's write transaction (its own, or a group commit's).
    pub fn run(&self, txn: &mut RwTxn<'_>, dbs: &Dbs, ctx: &Context) -> Result<CacheMetadata, StoreError> {
        let now = ctx.now();
        let origin = ctx.origin.as_str();
        let previous = dbs.existing_meta(txn, origin, &self.storage_key)?;
        let text = self.spliced(dbs.data(txn, origin, &self.storage_key)?)?;
        let size = text.len() as u64;
        if size > MAX_ITEM_BYTES {
            return Err(CacheError::new(
                ErrorCode::DataTooLargeError,
                format!("after the append the item would be {size} bytes; one item holds at most {MAX_ITEM_BYTES}"),
                "append the rest to a new item (write it, then append to that), and say in each description which part it is",
            )
            .expected(MAX_ITEM_BYTES)
            .actual(size)
            .into());
        }
        let meta = ItemMeta {
            description: self.description.clone().unwrap_or_else(|| previous.description.clone()),
            timestamp: now,
            data_size: size,
            seq: 0,
            custom_metadata: previous.custom_metadata.clone(),
            shape: shape(&text),
            provenance: Some(Provenance::merged(previous.provenance.as_ref(), self.provenance.as_ref())),
        };
        let at = ItemAt { origin, session_id: &self.session_id, storage_key: &self.storage_key };
        replace_item(txn, dbs, ctx, at, &previous, meta, Some(&text))
    }

    /// The stored text with the data appended to the value at the pointer.
    fn spliced(&self, text: &str) -> Result<String, CacheError> {
        let pointer = self.pointer.as_deref().unwrap_or("");
        let target = value_at(
            &self.storage_key,
            text,
            pointer,
            "a pointer to an existing array or string in the item's data",
            "append at an existing array or string: read the item to see its structure",
        )?;
        // The target is a part of `text` itself, so its position follows from the two addresses.
        let start = target.as_ptr() as usize - text.as_ptr() as usize;
        let end = start + target.len();
        let (found, added) = (target.as_bytes()[0], self.data.as_bytes()[0]);
        if found != added {
            let kind = json_type_name(target);
            let wanted = match found {
                b'[' => "an array of the elements to add",
                b'"' => "a string to add",
                _ => "nothing: only arrays and strings can be appended to",
            };
            return Err(CacheError::new(
                ErrorCode::InvalidRequestError,
                format!("the value at {} is {kind}, so append's data must be {wanted}", at_pointer(Some(pointer))),
                "send data of the target's type, or use update to replace the value",
            )
            .expected(wanted)
            .actual(format!("{} at the target, {} in data", kind, json_type_name(&self.data))));
        }
        let inner = &self.data[1..self.data.len() - 1];
        let comma = found == b'[' && end - start > 2 && !inner.is_empty();
        let mut out = String::with_capacity(text.len() + inner.len() + 1);
        out.push_str(&text[..end - 1]);
        if comma {
            out.push(',');
        }
        out.push_str(inner);
        out.push_str(&text[end - 1..]);
        Ok(out)
    }
}
