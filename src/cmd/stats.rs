//! `stats`: a session's totals, timestamps and remaining quota, and the store's use of its store-wide quota.

use serde::Serialize;

use super::{Context, session_id};
use crate::error::CacheError;
use crate::limits::SESSION_QUOTA_BYTES;
use crate::message::Fields;

/// A parsed `stats`.
pub struct Stats {
    session_id: String,
}

/// `stats`' result. A session that holds nothing has zero totals and `null` timestamps. `totalSize`
/// is what the quota counts: its items' data and customMetadata. `storeTotalSize` is the same count over
/// every session in the store, of every extension, which the store-wide quota bounds.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StatsResult {
    session_id: String,
    total_size: u64,
    item_count: u64,
    created_at: Option<u64>,
    last_accessed_at: Option<u64>,
    quota_bytes: u64,
    remaining_bytes: u64,
    store_total_size: u64,
    store_quota_bytes: u64,
    store_remaining_bytes: u64,
}

impl Stats {
    /// Checks the session id.
    pub fn parse(fields: &Fields<'_>) -> Result<Stats, CacheError> {
        Ok(Stats { session_id: session_id(fields)? })
    }

    /// Reads the session's record.
    pub fn apply(self, ctx: &Context) -> Result<StatsResult, CacheError> {
        let (record, store_total) = ctx
            .store()?
            .read(|txn, dbs| Ok((dbs.session(txn, &ctx.origin, &self.session_id)?, dbs.store_total(txn)?)))?;
        let total_size = record.map_or(0, |r| r.total_size);
        Ok(StatsResult {
            session_id: self.session_id,
            total_size,
            item_count: record.map_or(0, |r| r.item_count),
            created_at: record.map(|r| r.created_at),
            last_accessed_at: record.map(|r| r.last_accessed_at),
            quota_bytes: SESSION_QUOTA_BYTES,
            remaining_bytes: SESSION_QUOTA_BYTES.saturating_sub(total_size),
            store_total_size: store_total,
            store_quota_bytes: ctx.store_quota,
            store_remaining_bytes: ctx.store_quota.saturating_sub(store_total),
        })
    }
}
