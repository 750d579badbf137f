//! `list`: a session's items' metadata, newest first, a page at a time; never their data. With a
//! `query`, only the items whose description or customMetadata string values hold every word.

use std::ops::Bound;

use serde::Serialize;

use super::{CacheMetadata, Context, last_access, query, session_id};
use crate::error::CacheError;
use crate::json::search::Query;
use crate::limits::{DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT};
use crate::message::{Fields, optional_count, optional_string};
use crate::rules::{check_short_id, parse_storage_key};

/// A parsed `list`.
pub struct List {
    session_id: String,
    task_id: Option<String>,
    /// Only items whose description or customMetadata strings hold every word.
    query: Option<Query>,
    limit: usize,
    /// Where the previous page ended: its last item's timestamp and key.
    after: Option<(u64, String)>,
}

/// `list`'s result.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListResult {
    /// This page, newest first.
    items: Vec<CacheMetadata>,
    /// Pass this as `cursor` for the next page; `null` on the last page.
    next_cursor: Option<String>,
    /// How many items the session (or the task, when filtered) holds in all.
    item_count: u64,
    /// What they take from the quota: their data and customMetadata bytes.
    total_size: u64,
}

/// The description shown for an item whose metadata can't be read, so the LLM can still delete it.
const CORRUPTED_DESCRIPTION: &str = "[corrupted item: its metadata can't be read; delete it]";

impl List {
    /// Checks the session, task filter, limit and cursor.
    pub fn parse(fields: &Fields<'_>) -> Result<List, CacheError> {
        let session_id = session_id(fields)?;
        let task_id = optional_string(fields.task_id, "taskId")?;
        if let Some(id) = &task_id {
            check_short_id("taskId", id)?;
        }
        let limit = match optional_count(fields.limit, "limit")? {
            None => DEFAULT_LIST_LIMIT,
            Some(n) if (1..=MAX_LIST_LIMIT as u64).contains(&n) => n as usize,
            Some(n) => return Err(CacheError::invalid_field("limit", "an integer from 1 to 1000", n)),
        };
        let after =
            optional_string(fields.cursor, "cursor")?.map(|cursor| decode_cursor(&cursor, &session_id)).transpose()?;
        let query = optional_string(fields.query, "query")?.map(|text| query(&text)).transpose()?;
        Ok(List { session_id, task_id, query, limit, after })
    }

    /// Reads one page and the totals in one read transaction, then refreshes the last access.
    pub fn apply(self, ctx: &Context) -> Result<ListResult, CacheError> {
        let origin = ctx.origin.as_str();
        let (result, last_accessed) = ctx.store()?.read(|txn, dbs| {
            let record = dbs.session(txn, origin, &self.session_id)?;
            // Items a begun cleanup covers are gone (see Dbs::meta).
            let covers = dbs.ending_seq(txn, origin, &self.session_id)?;
            let visible = |meta: &crate::store::ItemMeta| covers.is_none_or(|covers| meta.seq > covers);
            let (item_count, total_size) = match (&self.task_id, &self.query) {
                (None, None) => record.map_or((0, 0), |r| (r.item_count, r.total_size)),
                (task_id, _) => dbs.items(txn, origin, &self.session_id, task_id.as_deref())?.try_fold(
                    (0, 0),
                    |(n, size), entry| {
                        let (_, meta) = entry?;
                        let counts = meta.as_ref().is_ok_and(|m| visible(m) && self.wanted(m));
                        let size = size + if counts { meta.map_or(0, |m| m.quota_bytes()) } else { 0 };
                        Ok::<_, crate::store::StoreError>((n + u64::from(counts), size))
                    },
                )?,
            };

            let after = self.after.as_ref().map(|(ts, key)| (*ts, key.as_str()));
            let mut items = Vec::with_capacity(self.limit.min(64));
            let mut next_cursor = None;
            let from = after.map_or(Bound::Unbounded, Bound::Excluded);
            for entry in dbs.keys_newest_first(txn, origin, &self.session_id, from)? {
                let (timestamp, storage_key) = entry?;
                let in_task = |task: &String| parse_storage_key(storage_key).is_ok_and(|k| k.task_id == task);
                if !self.task_id.as_ref().is_none_or(in_task) {
                    continue;
                }
                let meta = dbs.meta(txn, origin, storage_key);
                if let Ok(Some(meta)) = &meta
                    && !self.wanted(meta)
                {
                    continue;
                }
                if items.len() == self.limit {
                    next_cursor =
                        items.last().map(|last: &CacheMetadata| encode_cursor(last.timestamp, &last.storage_key));
                    break;
                }
                items.push(match meta {
                    Ok(Some(meta)) => CacheMetadata::new(storage_key, &meta),
                    Ok(None) => continue,
                    Err(_) if self.query.is_some() => continue,
                    Err(_) => corrupted_entry(storage_key, timestamp),
                });
            }
            Ok((ListResult { items, next_cursor, item_count, total_size }, last_access(record)))
        })?;
        ctx.touch(&self.session_id, last_accessed)?;
        Ok(result)
    }
}

impl List {
    /// Whether an item passes the query: every word in its description or customMetadata strings,
    /// which are read in one pass however deep they nest.
    fn wanted(&self, meta: &crate::store::ItemMeta) -> bool {
        let Some(query) = &self.query else { return true };
        let mut together = query.together();
        together.add(&meta.description);
        if let Some(custom) = &meta.custom_metadata {
            together.add_strings(custom.get());
        }
        together.all()
    }
}

/// The listing of an item whose metadata is unreadable.
fn corrupted_entry(storage_key: &str, timestamp: u64) -> CacheMetadata {
    let placeholder = crate::store::ItemMeta {
        description: CORRUPTED_DESCRIPTION.to_owned(),
        timestamp,
        data_size: 0,
        seq: 0,
        custom_metadata: None,
        shape: String::new(),
        provenance: None,
    };
    CacheMetadata::new(storage_key, &placeholder)
}

/// A cursor names the last item of a page: `<timestamp>:<storageKey>`. Clients treat it as opaque.
fn encode_cursor(timestamp: u64, storage_key: &str) -> String {
    format!("{timestamp}:{storage_key}")
}

fn decode_cursor(cursor: &str, session_id: &str) -> Result<(u64, String), CacheError> {
    let invalid = || {
        CacheError::invalid_field(
            "cursor",
            "a nextCursor returned by an earlier list of this session",
            "another string",
        )
    };
    let (timestamp, storage_key) = cursor.split_once(':').ok_or_else(invalid)?;
    let timestamp = timestamp.parse::<u64>().map_err(|_| invalid())?;
    let key = parse_storage_key(storage_key).map_err(|_| invalid())?;
    if key.session_id != session_id {
        return Err(invalid());
    }
    Ok((timestamp, storage_key.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_are_checked() {
        let key = "conv_s1_aaaaaaaa_bbbbbbbb";
        assert_eq!(decode_cursor(&encode_cursor(42, key), "conv_s1").unwrap(), (42, key.to_owned()));
        for bad in ["", "42", "x:conv_s1_aaaaaaaa_bbbbbbbb", "42:nope", "42:conv_s2_aaaaaaaa_bbbbbbbb"] {
            assert!(decode_cursor(bad, "conv_s1").is_err(), "{bad}");
        }
    }
}
