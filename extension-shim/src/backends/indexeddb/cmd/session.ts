/**
 * The ops that remove data or report on a session: `delete` (one item), `endSession` (a whole session, at once),
 * `stats` (a session's totals), and the sweep of orphaned sessions. The twins of the host's
 * `src/cmd/{delete,end_session,stats}.rs` and `src/cleanup.rs`.
 *
 * The host ends a session in batches, behind a durable record that a crashed host's successor finishes. Here a
 * session ends in one transaction, which IndexedDB applies whole or not at all, so there is nothing to finish.
 */

import { ORPHAN_AFTER_MS, SESSION_QUOTA_BYTES } from "../../../protocol.js";
import {
  BY_LAST_ACCESS,
  COUNTERS,
  DATA,
  each,
  ITEM_STORES,
  ITEMS,
  keysOf,
  Totals,
  request,
  SESSIONS,
  storeTotal,
  transact,
  type ItemRecord,
  type SessionRecord,
} from "../store.js";
import type { Fields } from "../message.js";
import { HostError, numberOrNull, quote } from "../error.js";
import { quotaOf, sessionIdOf, storageKeyIn, type Change, type Context } from "./mod.js";

/** A parsed `delete`. */
export interface Delete {
  sessionId: string;
  storageKey: string;
}

/** Checks the session and key. */
export function parseDelete(fields: Fields): Delete {
  const sessionId = sessionIdOf(fields);
  return { sessionId, storageKey: storageKeyIn(fields.storageKey, sessionId) };
}

/** Deletes the item and updates the session's totals in one transaction. */
export function deleteItem(ctx: Context, cmd: Delete): Change {
  return async ({ tx, totals }) => {
    const items = tx.objectStore(ITEMS);
    const [item, [record, total]] = await Promise.all([
      request(items.get(cmd.storageKey)) as Promise<ItemRecord | undefined>,
      totals.of(cmd.sessionId),
    ]);
    if (item === undefined) throw HostError.itemNotFound(cmd.storageKey);
    const freed = quotaOf(item);
    items.delete(cmd.storageKey);
    tx.objectStore(DATA).delete(cmd.storageKey);
    if (record !== undefined) {
      const before = record.totalSize;
      record.totalSize = Math.max(record.totalSize - freed, 0);
      record.itemCount = Math.max(record.itemCount - 1, 0);
      // A record left with no item is removed, and counts nothing, as in the host's `put_session`.
      totals.moveStore(total, (record.itemCount === 0 ? 0 : record.totalSize) - before);
      record.lastAccessedAt = ctx.now();
      totals.putSession(record);
    }
    return `{"storageKey":${quote(cmd.storageKey)},"deleted":true,"freedBytes":${freed}}`;
  };
}

/** Checks the session id of `endSession` or `stats`. */
export function parseSessionOp(fields: Fields): string {
  return sessionIdOf(fields);
}

/** Removes every item of the session and its record; ending a session that holds nothing is no error. */
export async function endSession(ctx: Context, sessionId: string): Promise<string> {
  const db = await ctx.db();
  const removed = await transact(db, ITEM_STORES, "readwrite", (tx) => removeSession(tx, sessionId));
  return `{"sessionId":${quote(sessionId)},"deletedItems":${removed.items},"freedBytes":${removed.bytes}}`;
}

/**
 * A session's totals, timestamps and remaining quota, and the store's use of its store-wide quota; a session that
 * holds nothing has zeros and nulls.
 */
export async function stats(ctx: Context, sessionId: string): Promise<string> {
  const db = await ctx.db();
  const limit = await ctx.storeQuota();
  const [record, store] = await transact(db, [SESSIONS, COUNTERS], "readonly", async (tx) => {
    return [(await request(tx.objectStore(SESSIONS).get(sessionId))) as SessionRecord | undefined, await storeTotal(tx)] as const;
  });
  const totalSize = record?.totalSize ?? 0;
  return (
    `{"sessionId":${quote(sessionId)},"totalSize":${totalSize},"itemCount":${record?.itemCount ?? 0},` +
    `"createdAt":${numberOrNull(record?.createdAt)},"lastAccessedAt":${numberOrNull(record?.lastAccessedAt)},` +
    `"quotaBytes":${SESSION_QUOTA_BYTES},"remainingBytes":${Math.max(SESSION_QUOTA_BYTES - totalSize, 0)},` +
    `"storeTotalSize":${store},"storeQuotaBytes":${limit},"storeRemainingBytes":${Math.max(limit - store, 0)}}`
  );
}

/**
 * Removes the sessions nobody touched for 24 hours: items and record. Each session is looked at again inside the
 * transaction that removes it, so one used in the meantime (by another context of the extension) survives.
 * Returns how many sessions it removed.
 */
export async function removeOrphans(ctx: Context): Promise<number> {
  const db = await ctx.db();
  const cutoff = ctx.now() - ORPHAN_AFTER_MS;
  const idle: string[] = [];
  await transact(db, [SESSIONS], "readonly", (tx) =>
    each(tx.objectStore(SESSIONS).index(BY_LAST_ACCESS).openKeyCursor(IDBKeyRange.upperBound(cutoff)), (cursor) => {
      idle.push(String(cursor.primaryKey));
    }),
  );
  let removed = 0;
  for (const sessionId of idle) {
    const gone = await transact(db, ITEM_STORES, "readwrite", async (tx) => {
      const record = (await request(tx.objectStore(SESSIONS).get(sessionId))) as SessionRecord | undefined;
      if (record === undefined || record.lastAccessedAt > cutoff) return false;
      await removeSession(tx, sessionId);
      return true;
    });
    if (gone) removed++;
  }
  return removed;
}

/** How many items' metadata `removeSession` reads in one request: a round trip per page, and at most 100 customMetadata of 64 KiB held. */
const REMOVE_PAGE_ITEMS = 100;

/**
 * Deletes a session's items, their data and its record in the transaction `tx`, and takes the record's total from the
 * store's; what it removed. The items' metadata is read a page at a time, for their count and sizes; the deletes
 * are one request per store, by the session's key range.
 */
async function removeSession(tx: IDBTransaction, sessionId: string): Promise<{ items: number; bytes: number }> {
  const [items, sessions] = [tx.objectStore(ITEMS), tx.objectStore(SESSIONS)];
  const totals = new Totals(tx);
  const [record, total] = await totals.of(sessionId);
  if (record !== undefined) totals.moveStore(total, -record.totalSize);
  let [count, bytes] = [0, 0];
  const range = keysOf(sessionId);
  for (let page = range; ; ) {
    const found = (await request(items.getAll(page, REMOVE_PAGE_ITEMS))) as ItemRecord[];
    for (const item of found) bytes += quotaOf(item);
    count += found.length;
    const last = found.at(-1);
    if (found.length < REMOVE_PAGE_ITEMS || last === undefined) break;
    page = IDBKeyRange.bound(last.storageKey, range.upper, true, false);
  }
  items.delete(range);
  tx.objectStore(DATA).delete(range);
  sessions.delete(sessionId);
  return { items: count, bytes };
}
