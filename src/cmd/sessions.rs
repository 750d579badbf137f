//! `sessions`: the calling extension's sessions that hold items, with their totals, in sessionId order,
//! a page at a time. For extension pages (a cache viewer), not for the LLM; every other origin's
//! sessions stay invisible, as their items do.

use serde::Serialize;

use super::Context;
use crate::error::CacheError;
use crate::limits::{DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT};
use crate::message::{Fields, optional_count, optional_string};
use crate::rules::check_session_id;

/// A parsed `sessions`.
pub struct Sessions {
    limit: usize,
    /// The last session of the previous page: this page starts just after it.
    after: Option<String>,
}

/// One session as `sessions` lists it: its record's totals and times.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionSummary {
    session_id: String,
    /// How many items it holds (at least one: a session without items has no record).
    item_count: u64,
    /// What its items take from its quota: their data and customMetadata bytes.
    total_size: u64,
    /// When its first item was written, ms since the Unix epoch.
    created_at: u64,
    /// Its last write or read, which the 24-hour orphan rule counts from.
    last_accessed_at: u64,
}

/// `sessions`' result.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionsResult {
    /// This page, in sessionId order.
    sessions: Vec<SessionSummary>,
    /// Pass this as `cursor` for the next page; `null` on the last page.
    next_cursor: Option<String>,
}

impl Sessions {
    /// Checks the limit and the cursor.
    pub fn parse(fields: &Fields<'_>) -> Result<Sessions, CacheError> {
        let limit = match optional_count(fields.limit, "limit")? {
            None => DEFAULT_LIST_LIMIT,
            Some(n) if (1..=MAX_LIST_LIMIT as u64).contains(&n) => n as usize,
            Some(n) => return Err(CacheError::invalid_field("limit", "an integer from 1 to 1000", n)),
        };
        let after = optional_string(fields.cursor, "cursor")?.map(|cursor| decode_cursor(&cursor)).transpose()?;
        Ok(Sessions { limit, after })
    }

    /// Reads at most `limit + 1` session records in one read transaction: the page, and one more to
    /// know whether another page follows. Listing is no access, so `lastAccessedAt` stays as it was.
    pub fn apply(self, ctx: &Context) -> Result<SessionsResult, CacheError> {
        let origin = ctx.origin.as_str();
        ctx.store()?.read(|txn, dbs| {
            let mut sessions = Vec::with_capacity(self.limit.min(64));
            let mut next_cursor = None;
            let mut last_walked: Option<&str> = None;
            for (walked, entry) in dbs.sessions_of(txn, origin, self.after.as_deref())?.enumerate() {
                let (session_id, record) = entry?;
                if walked == self.limit {
                    next_cursor = last_walked.map(encode_cursor);
                    break;
                }
                last_walked = Some(session_id);
                // A record that can't be decoded is passed over (`verify` reports it), but it still
                // counts as walked, so that a page costs at most `limit + 1` records however many
                // such records there are.
                let Some(record) = record else { continue };
                sessions.push(SessionSummary {
                    session_id: session_id.to_owned(),
                    item_count: record.item_count,
                    total_size: record.total_size,
                    created_at: record.created_at,
                    last_accessed_at: record.last_accessed_at,
                });
            }
            Ok(SessionsResult { sessions, next_cursor })
        })
    }
}

/// A cursor is the sessionId of the last session a page walked; the next page starts after it.
/// Clients treat it as opaque.
fn encode_cursor(session_id: &str) -> String {
    session_id.to_owned()
}

fn decode_cursor(cursor: &str) -> Result<String, CacheError> {
    check_session_id("cursor", cursor).map_err(|_| {
        CacheError::invalid_field("cursor", "a nextCursor returned by an earlier sessions", "another string")
    })?;
    Ok(cursor.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_are_checked() {
        assert_eq!(decode_cursor(&encode_cursor("conv_s1")).unwrap(), "conv_s1");
        for bad in ["", "conv_", "s1", "conv_a_b", "conv_s1\u{0}"] {
            let err = decode_cursor(bad).unwrap_err();
            assert_eq!(err.code, crate::error::ErrorCode::InvalidRequestError, "{bad}");
        }
    }
}
