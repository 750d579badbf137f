/**
 * The ops that page through a session newest first: `list` (items' metadata, never their data; a task filter and
 * a query on descriptions and customMetadata) and `search` (string values in the items' data that hold every word
 * of a query). The twins of the host's `src/cmd/list.rs` and `src/cmd/search.rs`, cursors and all.
 */

import { LIST_DEFAULT_LIMIT, SEARCH_DEFAULT_LIMIT, MAX_LIST_LIMIT, MAX_SEARCH_LIMIT } from "../../../protocol.js";
import { BY_SESSION_TIME, DATA, each, ITEMS, keysOf, request, SESSIONS, sessionItems, transact, type ItemRecord, type SessionRecord } from "../store.js";
import { checkShortId, findIn, isRuleError, parseStorageKey, Query } from "../json/index.js";
import { echo, optionalCount, optionalString, requiredString, type Fields } from "../message.js";
import { HostError, quote, quoteOrNull } from "../error.js";
import { metadataJson, queryOf, quotaOf, sessionIdOf, touch, type Context } from "./mod.js";

/** A parsed `list`. */
export interface List {
  sessionId: string;
  taskId: string | undefined;
  /** Only items whose description or customMetadata strings hold every word. */
  query: Query | undefined;
  limit: number;
  /** Where the previous page ended: its last item's timestamp and key. */
  after: readonly [number, string] | undefined;
}

/** Checks the session, task filter, limit, cursor and query, in the host's order. */
export function parseList(fields: Fields): List {
  const sessionId = sessionIdOf(fields);
  const taskId = optionalString(fields.taskId, "taskId");
  const wrongTask = taskId === undefined ? undefined : checkShortId("taskId", taskId);
  if (wrongTask) throw HostError.from(wrongTask);
  const limit = limitOf(fields, LIST_DEFAULT_LIMIT, MAX_LIST_LIMIT);
  const cursor = optionalString(fields.cursor, "cursor");
  let after: readonly [number, string] | undefined;
  if (cursor !== undefined) {
    const invalid = () => HostError.invalidField("cursor", "a nextCursor returned by an earlier list of this session", "another string");
    const colon = cursor.indexOf(":");
    const timestamp = colon < 0 ? undefined : rustU64(cursor.slice(0, colon));
    if (timestamp === undefined || !inSession(cursor.slice(colon + 1), sessionId)) throw invalid();
    after = [timestamp, cursor.slice(colon + 1)];
  }
  const text = optionalString(fields.query, "query");
  return { sessionId, taskId, query: text === undefined ? undefined : queryOf(text), limit, after };
}

/** A page size: `fallback` when absent, else 1 to `max` (`list`'s, `search`'s and `sessions`'). */
export function limitOf(fields: Fields, fallback: number, max: number): number {
  const limit = optionalCount(fields.limit, "limit");
  if (limit === undefined) return fallback;
  if (limit.value >= 1 && limit.value <= max) return limit.value;
  throw HostError.invalidField("limit", `an integer from 1 to ${max}`, echo(limit));
}

/** Whether an item passes the list's query: every word in its description or customMetadata strings. */
function wanted(cmd: List, item: ItemRecord): boolean {
  if (cmd.query === undefined) return true;
  const together = cmd.query.together();
  together.add(item.description);
  if (item.customMetadata !== undefined) together.addStrings(item.customMetadata);
  return together.all();
}

/** Reads one page and the totals in one transaction, then refreshes the last access. */
export async function list(ctx: Context, cmd: List): Promise<string> {
  const db = await ctx.db();
  const [result, lastAccessed] = await transact(db, [ITEMS, SESSIONS], "readonly", async (tx) => {
    const record = (await request(tx.objectStore(SESSIONS).get(cmd.sessionId))) as SessionRecord | undefined;
    let [itemCount, totalSize] = [record?.itemCount ?? 0, record?.totalSize ?? 0];
    if (cmd.taskId !== undefined || cmd.query !== undefined) {
      [itemCount, totalSize] = [0, 0];
      await each(tx.objectStore(ITEMS).openCursor(keysOf(cmd.sessionId, cmd.taskId)), (cursor) => {
        const item = cursor.value as ItemRecord;
        if (wanted(cmd, item)) [itemCount, totalSize] = [itemCount + 1, totalSize + quotaOf(item)];
      });
    }
    const items: ItemRecord[] = [];
    let nextCursor: string | undefined;
    const newestFirst = tx.objectStore(ITEMS).index(BY_SESSION_TIME).openCursor(sessionItems(cmd.sessionId, cmd.after), "prev");
    await each(newestFirst, (cursor) => {
      const item = cursor.value as ItemRecord;
      if (cmd.taskId !== undefined && taskOf(item.storageKey) !== cmd.taskId) return true;
      if (!wanted(cmd, item)) return true;
      const last = items[items.length - 1];
      if (items.length === cmd.limit && last !== undefined) {
        nextCursor = `${last.timestamp}:${last.storageKey}`;
        return false;
      }
      items.push(item);
      return true;
    });
    const page = `{"items":[${items.map(metadataJson).join(",")}],"nextCursor":${quoteOrNull(nextCursor)},"itemCount":${itemCount},"totalSize":${totalSize}}`;
    return [page, record?.lastAccessedAt] as const;
  });
  await touch(ctx, db, cmd.sessionId, lastAccessed);
  return result;
}

/** A parsed `search`. */
export interface Search {
  sessionId: string;
  query: Query;
  limit: number;
  /** Where the previous page ended: an item, and how many of its matches were already returned. */
  resume: { timestamp: number; storageKey: string; returned: number } | undefined;
}

/** Checks the session, query, limit and cursor. */
export function parseSearch(fields: Fields): Search {
  const sessionId = sessionIdOf(fields);
  const query = queryOf(requiredString(fields.query, "query"));
  const limit = limitOf(fields, SEARCH_DEFAULT_LIMIT, MAX_SEARCH_LIMIT);
  const cursor = optionalString(fields.cursor, "cursor");
  let resume: Search["resume"];
  if (cursor !== undefined) {
    const invalid = () => HostError.invalidField("cursor", "a nextCursor returned by an earlier search of this session", "another string");
    // `<timestamp>:<matches returned from that item>:<storageKey>`.
    const first = cursor.indexOf(":");
    const second = first < 0 ? -1 : cursor.indexOf(":", first + 1);
    const timestamp = first < 0 ? undefined : rustU64(cursor.slice(0, first));
    const returned = second < 0 ? undefined : rustU64(cursor.slice(first + 1, second));
    if (timestamp === undefined || returned === undefined || !inSession(cursor.slice(second + 1), sessionId)) throw invalid();
    resume = { timestamp, storageKey: cursor.slice(second + 1), returned };
  }
  return { sessionId, query, limit, resume };
}

/** Walks the session's items newest first until the page is full and one more match is seen. */
export async function search(ctx: Context, cmd: Search): Promise<string> {
  const db = await ctx.db();
  const [result, lastAccessed] = await transact(db, [ITEMS, DATA, SESSIONS], "readonly", async (tx) => {
    const data = tx.objectStore(DATA);
    const matches: string[] = [];
    let nextCursor: string | undefined;
    // From the cursor's item itself: its later matches may not have been returned yet.
    const from = cmd.resume === undefined ? undefined : ([cmd.resume.timestamp, cmd.resume.storageKey] as const);
    const newestFirst = tx.objectStore(ITEMS).index(BY_SESSION_TIME).openCursor(sessionItems(cmd.sessionId, from, true), "prev");
    await each(newestFirst, async (cursor) => {
      const item = cursor.value as ItemRecord;
      // Only the cursor's own item (if it is still there) had matches returned already.
      const skip = cmd.resume?.storageKey === item.storageKey ? cmd.resume.returned : 0;
      const text = (await request(data.get(item.storageKey))) as string | undefined;
      if (text === undefined || !cmd.query.mightMatch(text)) return true;
      const found = findIn(text, cmd.query, skip, cmd.limit - matches.length);
      if (found === undefined) return true;
      for (const match of found.found) {
        const cut = match.pointerCut ? `,"pointerCut":true` : "";
        matches.push(`{"storageKey":${quote(item.storageKey)},"pointer":${quote(match.pointer)}${cut},"snippet":${quote(match.snippet)}}`);
      }
      if (!found.more) return true;
      nextCursor = `${item.timestamp}:${skip + found.found.length}:${item.storageKey}`;
      return false;
    });
    const record = (await request(tx.objectStore(SESSIONS).get(cmd.sessionId))) as SessionRecord | undefined;
    return [`{"matches":[${matches.join(",")}],"nextCursor":${quoteOrNull(nextCursor)}}`, record?.lastAccessedAt] as const;
  });
  await touch(ctx, db, cmd.sessionId, lastAccessed);
  return result;
}

/** The task part of a stored key. */
function taskOf(storageKey: string): string {
  const parts = parseStorageKey(storageKey);
  return isRuleError(parts) ? "" : parts.taskId;
}

/** Whether a cursor's key is a storage key of `sessionId`. */
function inSession(storageKey: string, sessionId: string): boolean {
  const parts = parseStorageKey(storageKey);
  return !isRuleError(parts) && parts.sessionId === sessionId;
}

/**
 * A number as Rust's `str::parse::<u64>` reads it (an optional `+`, then decimal digits, at most 2^64 - 1), or
 * undefined. Values past 2^53 are rounded, which no timestamp or match count comes near.
 */
function rustU64(text: string): number | undefined {
  if (!/^\+?[0-9]+$/.test(text)) return undefined;
  const value = BigInt(text);
  return value < 2n ** 64n ? Number(value) : undefined;
}
