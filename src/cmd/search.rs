//! `search`: the string values in a session's data that contain every word of a query, newest item
//! first, each with its key, the pointer to the string and a snippet, so the LLM reads exactly the
//! part it needs. Items whose bytes can't hold every word are passed over without being walked.

use std::ops::Bound;

use serde::Serialize;

use super::{Context, last_access, query, session_id};
use crate::error::CacheError;
use crate::json::search::{Query, find_in};
use crate::message::{Fields, optional_count, optional_string, required_string};
use crate::provenance::Provenance;
use crate::rules::parse_storage_key;

/// Matches per page unless the request says otherwise.
const DEFAULT_SEARCH_LIMIT: u64 = 20;
/// The most matches one page may hold.
const MAX_SEARCH_LIMIT: u64 = 100;

/// A parsed `search`.
pub struct Search {
    session_id: String,
    query: Query,
    limit: usize,
    /// Where the previous page ended: an item, and how many of its matches were already returned.
    resume: Option<(u64, String, usize)>,
}

/// `search`'s result.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchResult {
    /// This page of matches: newest item first, in document order within an item.
    matches: Vec<Match>,
    /// Pass this as `cursor` for the next page; `null` when nothing more matches.
    next_cursor: Option<String>,
}

/// One string value that matched.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Match {
    storage_key: String,
    /// The RFC 6901 pointer to the string within the item's data (`""` when the data is that string),
    /// or, past 1024 bytes, its longest prefix of whole tokens that fits.
    pointer: String,
    /// Present (and true) when `pointer` was cut, so that it names an ancestor of the string.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pointer_cut: bool,
    /// At most 160 characters around the match.
    snippet: String,
    /// The matching item's provenance, as its metadata gives it.
    provenance: Provenance,
}

impl Search {
    /// Checks the session, query, limit and cursor.
    pub fn parse(fields: &Fields<'_>) -> Result<Search, CacheError> {
        let session_id = session_id(fields)?;
        let query = query(&required_string(fields.query, "query")?)?;
        let limit = match optional_count(fields.limit, "limit")? {
            None => DEFAULT_SEARCH_LIMIT,
            Some(n) if (1..=MAX_SEARCH_LIMIT).contains(&n) => n,
            Some(n) => return Err(CacheError::invalid_field("limit", "an integer from 1 to 100", n)),
        } as usize;
        let resume = optional_string(fields.cursor, "cursor")?.map(|c| decode_cursor(&c, &session_id)).transpose()?;
        Ok(Search { session_id, query, limit, resume })
    }

    /// Walks the session's items newest first until the page is full and one more match is seen.
    pub fn apply(self, ctx: &Context) -> Result<SearchResult, CacheError> {
        let origin = ctx.origin.as_str();
        let (result, last_accessed) = ctx.store()?.read(|txn, dbs| {
            let mut matches = Vec::new();
            let mut next_cursor = None;
            // From the cursor's item itself: its later matches may not have been returned yet.
            let from =
                self.resume.as_ref().map_or(Bound::Unbounded, |(ts, key, _)| Bound::Included((*ts, key.as_str())));
            for entry in dbs.keys_newest_first(txn, origin, &self.session_id, from)? {
                let (timestamp, storage_key) = entry?;
                // Only the cursor's own item (if it is still there) had matches returned already.
                let skip = match &self.resume {
                    Some((_, key, returned)) if key == storage_key => *returned,
                    _ => 0,
                };
                // An item a begun cleanup covers is gone (see Dbs::meta); one whose metadata can't be
                // read is still searched, and says nothing of where it came from.
                let provenance = match dbs.meta(txn, origin, storage_key) {
                    Ok(None) => continue,
                    Ok(Some(meta)) => meta.provenance,
                    Err(_) => None,
                };
                let Ok(data) = dbs.data(txn, origin, storage_key) else { continue };
                if !self.query.might_match(data) {
                    continue;
                }
                let room = self.limit - matches.len();
                let Some((found, more)) = find_in(data, &self.query, skip, room) else { continue };
                let returned = skip + found.len();
                matches.extend(found.into_iter().map(|f| Match {
                    storage_key: storage_key.to_owned(),
                    pointer: f.pointer,
                    pointer_cut: f.pointer_cut,
                    snippet: f.snippet,
                    provenance: provenance.clone().unwrap_or_else(Provenance::unknown),
                }));
                if more {
                    next_cursor = Some(encode_cursor(timestamp, storage_key, returned));
                    break;
                }
            }
            Ok((SearchResult { matches, next_cursor }, last_access(dbs.session(txn, origin, &self.session_id)?)))
        })?;
        ctx.touch(&self.session_id, last_accessed)?;
        Ok(result)
    }
}

/// A cursor names where a page ended: `<timestamp>:<matches returned from that item>:<storageKey>`.
fn encode_cursor(timestamp: u64, storage_key: &str, returned: usize) -> String {
    format!("{timestamp}:{returned}:{storage_key}")
}

fn decode_cursor(cursor: &str, session_id: &str) -> Result<(u64, String, usize), CacheError> {
    let invalid = || {
        CacheError::invalid_field(
            "cursor",
            "a nextCursor returned by an earlier search of this session",
            "another string",
        )
    };
    let mut parts = cursor.splitn(3, ':');
    let timestamp = parts.next().and_then(|t| t.parse::<u64>().ok()).ok_or_else(invalid)?;
    let returned = parts.next().and_then(|n| n.parse::<usize>().ok()).ok_or_else(invalid)?;
    let storage_key = parts.next().ok_or_else(invalid)?;
    if parse_storage_key(storage_key).map_err(|_| invalid())?.session_id != session_id {
        return Err(invalid());
    }
    Ok((timestamp, storage_key.to_owned(), returned))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_are_checked() {
        let key = "conv_s1_aaaaaaaa_bbbbbbbb";
        assert_eq!(decode_cursor(&encode_cursor(42, key, 3), "conv_s1").unwrap(), (42, key.to_owned(), 3));
        for bad in [
            "",
            "42:3",
            "x:1:conv_s1_aaaaaaaa_bbbbbbbb",
            "42:x:conv_s1_aaaaaaaa_bbbbbbbb",
            "42:1:conv_s2_aaaaaaaa_bbbbbbbb",
        ] {
            assert!(decode_cursor(bad, "conv_s1").is_err(), "{bad}");
        }
    }
}
