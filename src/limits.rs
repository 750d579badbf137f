//! Every limit of protocol v1, defined once.
//!
//! The host enforces these where data enters (request parsing) and reports them in the `hello` reply,
//! so clients never have to hard-code them.

/// The largest `data`, in bytes of its compact JSON text (the spec's 5 MB per item).
pub const MAX_ITEM_BYTES: u64 = 5 * 1024 * 1024;

/// The most one session may hold, summed over its items' `dataSize` (the spec's 50 MB per session).
pub const SESSION_QUOTA_BYTES: u64 = 50 * 1024 * 1024;

/// The most the whole store may hold unless its owner chose otherwise at install: the sum over every
/// session of every extension of what the session quota counts (data and customMetadata). 2 GiB
/// keeps a laptop's disk safe from a cache that nobody empties (LMDB's file takes somewhat more than
/// the data: pages, indexes, metadata), yet holds forty full sessions. It is the order of browserx's
/// own IndexedDB design (5 GB), smaller because this is a cache of what can be fetched again.
pub const DEFAULT_STORE_QUOTA_BYTES: u64 = 2 * 1024 * 1024 * 1024;

/// The largest store quota that may be configured: what the LMDB map can ever hold.
pub const MAX_STORE_QUOTA_BYTES: u64 = MAX_MAP_BYTES as u64;

/// `doctor` warns when the store holds this share of its store quota, in percent, or more.
pub const STORE_NEARLY_FULL_PERCENT: u64 = 90;

/// The longest description, in Unicode scalar values; longer ones are cut and end in `…`.
pub const MAX_DESCRIPTION_CHARS: usize = 300;

/// The largest `customMetadata` object, in bytes of its compact JSON text.
pub const MAX_CUSTOM_METADATA_BYTES: usize = 64 * 1024;

/// The most bytes of data and customMetadata one `read` of several items (`storageKeys`) returns, a
/// key named twice counting twice: what one item can hold, so that no read carries more than a read
/// of the largest item does.
pub const MAX_READ_MANY_BYTES: u64 = MAX_ITEM_BYTES + MAX_CUSTOM_METADATA_BYTES as u64;

/// Chrome closes the port when a host sends a frame larger than this.
pub const MAX_REPLY_FRAME_BYTES: usize = 1024 * 1024;

/// The longest request frame read. A valid request needs at most an item's data (5 MiB compact)
/// and customMetadata (64 KiB) and a few short fields; the rest leaves room for white space, a
/// long description (it is cut to 300 characters) and a client's own fields. Chrome would send up
/// to 64 MiB, but a host that held that much for one request could not stay within its memory.
pub const MAX_REQUEST_FRAME_BYTES: u32 = 8 * 1024 * 1024;

/// Of a longer frame, only this many first bytes are kept, to find the request's id in them, so the
/// error reply reaches its caller; the rest is read and dropped.
pub const OVERSIZED_HEAD_BYTES: usize = 4096;

/// How many items `list` (or sessions `sessions`) returns when the request names no `limit`.
pub const DEFAULT_LIST_LIMIT: usize = 100;

/// The most items one `list` page (or sessions one `sessions` page) may hold; a `sessions` page reads
/// at most this many session records, and one more.
pub const MAX_LIST_LIMIT: usize = 1000;

/// The most words a `list` or `search` query may have, so that matching costs a bounded amount per
/// byte searched.
pub const MAX_QUERY_WORDS: usize = 32;

/// The most bytes (UTF-8) a `list` or `search` query may have.
pub const MAX_QUERY_BYTES: usize = 512;

/// The longest pointer a `search` match carries: a longer one is cut to its longest prefix of whole
/// tokens that fits (and marked `pointerCut`), so a page of matches a million levels deep stays small.
pub const MAX_SEARCH_POINTER_BYTES: usize = 1024;

/// The longest `provenance.source.url`, in Unicode scalar values.
pub const MAX_SOURCE_URL_CHARS: usize = 2048;

/// The longest `provenance.source.tool`, in Unicode scalar values.
pub const MAX_SOURCE_TOOL_CHARS: usize = 64;

/// The most keys `provenance.derivedFrom` holds: a request sends at most this many, and a merge keeps
/// the newest this many, so that an item's provenance stays a few KB however often it changes.
pub const MAX_DERIVED_FROM: usize = 16;

/// The longest `endorse` reason, in Unicode scalar values.
pub const MAX_ENDORSE_REASON_CHARS: usize = 120;

/// A request id given as a string may be at most this long, so every error reply stays small.
pub const MAX_ID_BYTES: usize = 256;

/// A session nobody touched for this long is an orphan and is removed.
pub const ORPHAN_AFTER_MS: u64 = 24 * 60 * 60 * 1000;

/// How often a running host looks for orphaned sessions.
pub const ORPHAN_SWEEP_EVERY_MS: u64 = 60 * 60 * 1000;

/// Reads refresh a session's `lastAccessedAt` only when it is older than this, so that a read does not
/// cost a synchronous disk write; the 24-hour orphan rule needs nothing finer.
pub const TOUCH_GRANULARITY_MS: u64 = 60 * 1000;

/// Cleanup deletes at most this many items per write transaction, so that other hosts' writes wait
/// for one batch at most.
pub const CLEANUP_BATCH_ITEMS: usize = 1000;

/// The LMDB map starts at this size and doubles whenever it fills up.
pub const INITIAL_MAP_BYTES: usize = 256 * 1024 * 1024;

/// The map never grows past this (it is address space, not disk: the file grows with the data).
pub const MAX_MAP_BYTES: usize = 1 << 40;
