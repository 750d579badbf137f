/**
 * Removing sessions: on `endSession`, and for sessions nobody touched for 24 hours (the orphan sweep). The twin of
 * the host's `src/cleanup.rs`.
 *
 * The host ends a session in batches, behind a durable record that a crashed host's successor finishes. Here a
 * session ends in one transaction, which IndexedDB applies whole or not at all, so there is nothing to finish.
 */

import { ORPHAN_AFTER_MS } from "../../protocol.js";
import { BY_LAST_ACCESS, DATA, each, ITEMS, keysOf, quotaOf, readSession, request, SESSIONS, transact, type ItemRecord, type Totals } from "./store.js";
import { changeTotals, type Context } from "./cmd/mod.js";

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
    const gone = await changeTotals(ctx, db, async (tx, totals) => {
      // Read from the database, not from what the writer lease knows: a read in another context refreshes
      // lastAccessedAt without the lease (touch), and a session so used must survive.
      const record = (await readSession(tx, sessionId))?.record;
      if (record === undefined || record.lastAccessedAt > cutoff) return false;
      await removeSession(tx, totals, sessionId);
      return true;
    });
    if (gone) removed++;
  }
  return removed;
}

/**
 * How many items' records `removeSession` reads in one request: a round trip per page, and at most 100
 * customMetadata of 64 KiB and 100 small items' data (MAX_INLINE_DATA_BYTES) held.
 */
const REMOVE_PAGE_ITEMS = 100;

/**
 * Deletes a session's items, their data and its record in the transaction `tx`, and takes the record's total from the
 * store's; what it removed. The items' metadata is read a page at a time, for their count and sizes; the deletes
 * are one request per store, by the session's key range.
 */
export async function removeSession(tx: IDBTransaction, totals: Totals, sessionId: string): Promise<{ items: number; bytes: number }> {
  const items = tx.objectStore(ITEMS);
  const [record] = await totals.of(sessionId);
  // A record left with no item goes, and its total from the store's.
  if (record !== undefined) totals.putSession({ ...record, totalSize: 0, itemCount: 0 });
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
  return { items: count, bytes };
}
