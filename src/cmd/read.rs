//! `read`: one item with its data, or with only the part of it a JSON pointer names, or a slice of
//! that (`offset`, `limit`): elements of an array, members of an object, characters of a string.

use serde::Serialize;
use serde_json::value::RawValue;

use super::pointer as pointer_of;
use super::{CacheMetadata, Context, at_pointer, last_access, session_id, storage_key_in, value_at};
use crate::error::{CacheError, ErrorCode};
use crate::json::slice::{SliceError, Sliced, Window, slice};
use crate::limits::MAX_READ_MANY_BYTES;
use crate::message::{Fields, optional_count, required_string};
use crate::store::{Dbs, ReadTxn, StoreError};

/// A parsed `read`.
pub struct Read {
    session_id: String,
    storage_key: String,
    pointer: Option<String>,
    /// `offset` and `limit`, when the request asks for a slice.
    slice: Option<(u64, Option<u64>)>,
    /// `maxBytes`: the most bytes of data text the reply may carry.
    max_bytes: Option<usize>,
}

/// The smallest `maxBytes`: room for any one character of a string, even an escaped surrogate pair.
const MIN_MAX_BYTES: u64 = 16;

/// `read`'s result.
#[derive(Debug, Serialize)]
pub struct ReadResult {
    /// The item.
    item: CachedItem,
    /// Where the slice lies in the whole, when a slice was asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    slice: Option<SliceInfo>,
}

impl ReadResult {
    /// The data (or the part of it read).
    pub fn data(&self) -> &RawValue {
        &self.item.data
    }

    /// The data, taken out of the result.
    pub fn into_data(self) -> Box<RawValue> {
        self.item.data
    }
}

/// An item with its data.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct CachedItem {
    #[serde(flatten)]
    meta: CacheMetadata,
    /// The data, or the part of it the pointer names, or a slice of that.
    data: Box<RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    custom_metadata: Option<Box<RawValue>>,
}

/// `slice` in `read`'s result.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct SliceInfo {
    /// The first element, member or character returned.
    offset: u64,
    /// How many were returned.
    count: u64,
    /// How many the value holds.
    total: u64,
    /// The `offset` of the next slice; `null` when this one reaches the end.
    next_offset: Option<u64>,
}

/// A parsed `read` of several items (`storageKeys`): each is read as a `read` of one would be, all in
/// one read transaction, so they are one consistent snapshot.
pub struct ReadMany {
    session_id: String,
    /// Each key's read, or (for a key of another session) the ItemNotFoundError a never-written key
    /// gets, so that nothing tells the two apart.
    reads: Vec<Result<Read, (String, CacheError)>>,
}

/// One entry of `read`'s `items` (with `storageKeys`): the item, or why there is none.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum ManyEntry {
    /// As a `read` of that key alone answers; boxed, since an item's metadata (its provenance above
    /// all) is many times the size of a missing key's entry.
    Found(Box<ReadResult>),
    /// The key names nothing (or another session), or its data can't be read.
    Missing {
        #[serde(rename = "storageKey")]
        storage_key: String,
        error: CacheError,
    },
}

/// `read`'s result with `storageKeys`.
#[derive(Debug, Serialize)]
pub struct ManyResult {
    /// One entry per key, in the order asked.
    items: Vec<ManyEntry>,
}

impl ManyResult {
    /// The data of each item found, in the order asked.
    pub fn data(&self) -> Vec<&RawValue> {
        self.items
            .iter()
            .filter_map(|entry| if let ManyEntry::Found(found) = entry { Some(found.data()) } else { None })
            .collect()
    }

    /// The data of each item found, in the order asked, taken out of the result.
    pub fn into_data(self) -> Vec<Box<RawValue>> {
        self.items
            .into_iter()
            .filter_map(|entry| if let ManyEntry::Found(found) = entry { Some((*found).into_data()) } else { None })
            .collect()
    }
}

/// The most keys one `read` takes.
pub const MAX_STORAGE_KEYS: usize = 100;

/// What is left of a multi-item read's [`MAX_READ_MANY_BYTES`] as its entries are read.
struct Budget {
    /// Bytes of data and customMetadata the rest of the reply may carry.
    left: u64,
    /// Bytes the entries read so far carry.
    used: u64,
    /// How many entries the request has.
    entries: usize,
    /// How many of them have been reached.
    done: usize,
    /// Set when an entry did not fit: the read is refused.
    spent: bool,
}

impl Budget {
    /// Takes `size` bytes for the entry being read.
    ///
    /// # Errors
    /// `InvalidRequestError` saying how to read less, when they are more than what is left.
    fn spend(&mut self, size: usize) -> Result<(), CacheError> {
        let size = size as u64;
        if size > self.left {
            self.spent = true;
            let total = self.used + size;
            return Err(CacheError::new(
                ErrorCode::InvalidRequestError,
                format!(
                    "a read of several items returns at most {MAX_READ_MANY_BYTES} bytes of data and customMetadata in all \
                     (a key named twice counts twice); the first {} of these {} entries already come to {total}",
                    self.done, self.entries
                ),
                "read fewer keys at a time, or only the part of each item you need with a pointer, or pass maxBytes \
                 to get the first slice of each item that fits; read a long item alone, a page at a time, with offset and limit",
            )
            .expected(format!("at most {MAX_READ_MANY_BYTES} bytes of data and customMetadata"))
            .actual(format!("{total} bytes in the first {} of {} entries", self.done, self.entries)));
        }
        self.left -= size;
        self.used += size;
        Ok(())
    }
}

impl ReadMany {
    /// Checks the session, the keys and their pointers. `offset` and `limit` slice one value, so they
    /// don't go with several keys; `maxBytes` bounds each item.
    pub fn parse(fields: &Fields<'_>) -> Result<ReadMany, CacheError> {
        let session_id = session_id(fields)?;
        if fields.storage_key.is_some() || fields.offset.is_some() || fields.limit.is_some() || fields.pointer.is_some()
        {
            return Err(CacheError::new(
                ErrorCode::InvalidRequestError,
                "`storageKeys` reads whole items (or a pointer each); it doesn't go with `storageKey`, `pointer`, `offset` or `limit`",
                "send the keys in `storageKeys` alone, each as a key or {\"storageKey\", \"pointer\"}, or read one item with `storageKey`",
            ));
        }
        let expected =
            format!("an array of 1 to {MAX_STORAGE_KEYS} keys, each a string or {{\"storageKey\": …, \"pointer\": …}}");
        let raw: Vec<&RawValue> = fields
            .storage_keys
            .map(|raw| serde_json::from_str(raw.get()))
            .transpose()
            .map_err(|_| CacheError::invalid_field("storageKeys", &expected, "not an array"))?
            .unwrap_or_default();
        if raw.is_empty() || raw.len() > MAX_STORAGE_KEYS {
            return Err(CacheError::invalid_field("storageKeys", &expected, raw.len()));
        }
        let max_bytes = Read::parse_max_bytes(fields)?;
        let reads = raw
            .into_iter()
            .map(|entry| {
                let (key, pointer) = match entry.get().as_bytes().first() {
                    Some(b'{') => {
                        let target = Fields::parse(entry.get().as_bytes())?;
                        (target.storage_key, target.pointer)
                    }
                    _ => (Some(entry), None),
                };
                let target = Fields { session_id: fields.session_id, storage_key: key, pointer, ..Fields::default() };
                let pointer = pointer_of(&target)?;
                match storage_key_in(&target, &session_id) {
                    Ok(storage_key) => {
                        Ok(Ok(Read { session_id: session_id.clone(), storage_key, pointer, slice: None, max_bytes }))
                    }
                    Err(error) if error.code == ErrorCode::ItemNotFoundError => {
                        Ok(Err((required_string(key, "storageKey")?, error)))
                    }
                    Err(error) => Err(error),
                }
            })
            .collect::<Result<_, CacheError>>()?;
        Ok(ReadMany { session_id, reads })
    }

    /// Reads every item in one transaction, then refreshes the session's last access once. The
    /// items' data and customMetadata may come to at most [`MAX_READ_MANY_BYTES`] in all.
    pub fn apply(self, ctx: &Context) -> Result<ManyResult, CacheError> {
        let origin = ctx.origin.as_str();
        let (items, last_accessed) = ctx.store()?.read(|txn, dbs| {
            let mut items = Vec::with_capacity(self.reads.len());
            let mut budget =
                Budget { left: MAX_READ_MANY_BYTES, used: 0, entries: self.reads.len(), done: 0, spent: false };
            for read in &self.reads {
                budget.done += 1;
                let read = match read {
                    Ok(read) => read,
                    Err((storage_key, error)) => {
                        items.push(ManyEntry::Missing { storage_key: storage_key.clone(), error: error.clone() });
                        continue;
                    }
                };
                items.push(match read.one(txn, dbs, origin, Some(&mut budget)) {
                    Ok(found) => ManyEntry::Found(Box::new(found)),
                    // Past the budget, the whole read is refused; any other failure is this entry's.
                    Err(StoreError::Cache(error)) if !budget.spent => {
                        ManyEntry::Missing { storage_key: read.storage_key.clone(), error }
                    }
                    Err(other) => return Err(other),
                });
            }
            Ok((items, last_access(dbs.session(txn, origin, &self.session_id)?)))
        })?;
        ctx.touch(&self.session_id, last_accessed)?;
        Ok(ManyResult { items })
    }
}

impl Read {
    /// `maxBytes`, checked: at least 16.
    fn parse_max_bytes(fields: &Fields<'_>) -> Result<Option<usize>, CacheError> {
        let max_bytes = optional_count(fields.max_bytes, "maxBytes")?;
        if let Some(max_bytes) = max_bytes.filter(|&n| n < MIN_MAX_BYTES) {
            return Err(CacheError::invalid_field(
                "maxBytes",
                &format!("an integer of at least {MIN_MAX_BYTES}"),
                max_bytes,
            ));
        }
        Ok(max_bytes.map(|n| usize::try_from(n).unwrap_or(usize::MAX)))
    }

    /// Checks the session, key and pointer.
    pub fn parse(fields: &Fields<'_>) -> Result<Read, CacheError> {
        let session_id = session_id(fields)?;
        let storage_key = storage_key_in(fields, &session_id)?;
        let pointer = pointer_of(fields)?;
        let offset = optional_count(fields.offset, "offset")?;
        let limit = optional_count(fields.limit, "limit")?;
        if limit == Some(0) {
            return Err(CacheError::invalid_field("limit", "a positive integer", 0));
        }
        let max_bytes = Read::parse_max_bytes(fields)?;
        let slice = (offset.is_some() || limit.is_some()).then(|| (offset.unwrap_or(0), limit));
        Ok(Read { session_id, storage_key, pointer, slice, max_bytes })
    }

    /// Reads the item, then refreshes the session's last access.
    pub fn apply(self, ctx: &Context) -> Result<ReadResult, CacheError> {
        let origin = ctx.origin.as_str();
        let (item, last_accessed) = ctx.store()?.read(|txn, dbs| {
            let item = self.one(txn, dbs, origin, None)?;
            Ok((item, last_access(dbs.session(txn, origin, &self.session_id)?)))
        })?;
        ctx.touch(&self.session_id, last_accessed)?;
        Ok(item)
    }

    /// The item in the read transaction `txn`; its data and customMetadata are taken from `budget`,
    /// when there is one, before they are copied out of the store.
    fn one(
        &self,
        txn: &ReadTxn<'_>,
        dbs: &Dbs,
        origin: &str,
        mut budget: Option<&mut Budget>,
    ) -> Result<ReadResult, StoreError> {
        let meta = dbs.existing_meta(txn, origin, &self.storage_key)?;
        let text = dbs.data(txn, origin, &self.storage_key)?;
        let corrupted = |e: serde_json::Error| CacheError::corrupted(&self.storage_key, e);
        let value = match &self.pointer {
            Some(pointer) => self.part(text, pointer)?,
            None => text,
        };
        let custom_size = meta.custom_metadata.as_ref().map_or(0, |custom| custom.get().len());
        let mut spend = |size: usize| budget.as_deref_mut().map_or(Ok(()), |budget| budget.spend(size + custom_size));
        let (data, slice) = match self.window(value) {
            None => {
                spend(value.len())?;
                (RawValue::from_string(crate::frame::copy_of(value)).map_err(corrupted)?, None)
            }
            Some(window) => {
                let sliced = self.cut(value, window)?;
                spend(sliced.text.len())?;
                let info = SliceInfo {
                    offset: window.offset,
                    count: sliced.count,
                    total: sliced.total,
                    next_offset: sliced.next_offset(),
                };
                (RawValue::from_string(sliced.text).map_err(corrupted)?, Some(info))
            }
        };
        let item = CachedItem {
            meta: CacheMetadata::new(&self.storage_key, &meta),
            data,
            custom_metadata: meta.custom_metadata,
        };
        Ok(ReadResult { item, slice })
    }

    /// The part of `value` to return, when it is not all of it: the slice asked for, or, when
    /// `value` is longer than `maxBytes` and can be sliced, the first slice that fits. A number,
    /// boolean or null is returned whole whatever its length.
    fn window(&self, value: &str) -> Option<Window> {
        let max_bytes = self.max_bytes;
        match self.slice {
            Some((offset, limit)) => Some(Window { offset, limit, max_bytes }),
            None => max_bytes
                .filter(|&max| value.len() > max && matches!(value.as_bytes().first(), Some(b'[' | b'{' | b'"')))
                .map(|_| Window { offset: 0, limit: None, max_bytes }),
        }
    }

    /// The slice of `value` that `window` names.
    fn cut(&self, value: &str, window: Window) -> Result<Sliced, CacheError> {
        slice(value, window).map_err(|e| match e {
            SliceError::NotSliceable(kind) => CacheError::new(
                ErrorCode::InvalidRequestError,
                format!(
                    "`offset` and `limit` slice an array, an object or a string; the value at {} is {kind}",
                    at_pointer(self.pointer.as_deref())
                ),
                "read it without offset and limit",
            )
            .expected("an array, an object or a string")
            .actual(kind),
            SliceError::Malformed => CacheError::corrupted(&self.storage_key, "its data is not well-formed JSON"),
        })
    }

    /// The part of `text` at `pointer`, as it was stored.
    fn part<'t>(&self, text: &'t str, pointer: &str) -> Result<&'t str, CacheError> {
        value_at(
            &self.storage_key,
            text,
            pointer,
            "a pointer to an existing part of the item's data",
            "read the item without a pointer, or a shorter pointer, to see its structure; array indexes start at 0",
        )
    }
}
