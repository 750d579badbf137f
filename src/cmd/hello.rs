//! `hello`: the handshake. Clients check `protocolVersion` and read the limits from here.

use serde::Serialize;

use crate::error::CacheError;
use crate::message::Fields;

use crate::limits::{
    MAX_DERIVED_FROM, MAX_DESCRIPTION_CHARS, MAX_ITEM_BYTES, MAX_QUERY_BYTES, MAX_QUERY_WORDS, MAX_READ_MANY_BYTES,
    MAX_REPLY_FRAME_BYTES, MAX_REQUEST_FRAME_BYTES, MAX_SEARCH_POINTER_BYTES, MAX_SOURCE_TOOL_CHARS,
    MAX_SOURCE_URL_CHARS, SESSION_QUOTA_BYTES,
};

/// The protocol this host speaks; a client built for another must refuse it.
pub const PROTOCOL_VERSION: u32 = 1;

/// `hello`'s result.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HelloResult {
    /// Bumped only by incompatible changes to the protocol.
    protocol_version: u32,
    /// This binary's version, for bug reports.
    host_version: &'static str,
    /// The ops this host serves, so that clients can tell which features they may use.
    ops: &'static [&'static str],
    /// The limits the host enforces.
    limits: Limits,
    /// `"gzip"` when the client listed it in `encodings`: large replies will come compressed.
    #[serde(skip_serializing_if = "Option::is_none")]
    encoding: Option<&'static str>,
}

/// A parsed `hello`.
pub struct Hello {
    /// Whether the client decodes gzip replies.
    pub gzip: bool,
}

impl Hello {
    /// Reads `encodings`: the reply encodings the client decodes, e.g. `["gzip"]`; others are ignored.
    pub fn parse(fields: &Fields<'_>) -> Result<Hello, CacheError> {
        let encodings: Vec<String> = fields
            .encodings
            .map(|raw| serde_json::from_str(raw.get()))
            .transpose()
            .map_err(|_| {
                CacheError::invalid_field("encodings", "an array of strings such as [\"gzip\"]", "something else")
            })?
            .unwrap_or_default();
        Ok(Hello { gzip: encodings.iter().any(|encoding| encoding == "gzip") })
    }
}

/// The limits, named as clients know them.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Limits {
    max_item_bytes: u64,
    session_quota_bytes: u64,
    /// The store-wide quota: what every session of every extension may hold together.
    store_quota_bytes: u64,
    max_description_chars: usize,
    max_reply_frame_bytes: usize,
    max_request_frame_bytes: u32,
    max_read_many_bytes: u64,
    max_query_words: usize,
    max_query_bytes: usize,
    max_search_pointer_bytes: usize,
    /// The bounds of an item's `provenance`: its source's URL and tool, and the keys it was derived from.
    max_source_url_chars: usize,
    max_source_tool_chars: usize,
    max_derived_from: usize,
}

/// Answers `hello`, with the store quota in force; needs no store, so it works even when the store
/// can't be opened.
pub fn hello(gzip: bool, store_quota: u64) -> HelloResult {
    HelloResult {
        protocol_version: PROTOCOL_VERSION,
        host_version: env!("CARGO_PKG_VERSION"),
        ops: &super::OPS,
        limits: Limits {
            max_item_bytes: MAX_ITEM_BYTES,
            session_quota_bytes: SESSION_QUOTA_BYTES,
            store_quota_bytes: store_quota,
            max_description_chars: MAX_DESCRIPTION_CHARS,
            max_reply_frame_bytes: MAX_REPLY_FRAME_BYTES,
            max_request_frame_bytes: MAX_REQUEST_FRAME_BYTES,
            max_read_many_bytes: MAX_READ_MANY_BYTES,
            max_query_words: MAX_QUERY_WORDS,
            max_query_bytes: MAX_QUERY_BYTES,
            max_search_pointer_bytes: MAX_SEARCH_POINTER_BYTES,
            max_source_url_chars: MAX_SOURCE_URL_CHARS,
            max_source_tool_chars: MAX_SOURCE_TOOL_CHARS,
            max_derived_from: MAX_DERIVED_FROM,
        },
        encoding: gzip.then_some("gzip"),
    }
}
