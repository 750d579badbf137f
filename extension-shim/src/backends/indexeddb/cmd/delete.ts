/**
 * `delete`: removes one item, and frees its bytes from the session's quota and the store's. The twin of the host's
 * `src/cmd/delete.rs`.
 */

import { DATA, ITEMS, itemRecord, quotaOf } from "../store.js";
import type { Fields } from "../message.js";
import { HostError, quote } from "../error.js";
import { sessionIdOf, storageKeyIn, type Change, type Context } from "./mod.js";

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
    const [item, [record]] = await Promise.all([itemRecord(tx, cmd.storageKey), totals.of(cmd.sessionId)]);
    if (item === undefined) throw HostError.itemNotFound(cmd.storageKey);
    const freed = quotaOf(item);
    items.delete(cmd.storageKey);
    tx.objectStore(DATA).delete(cmd.storageKey);
    if (record !== undefined) {
      record.totalSize = Math.max(record.totalSize - freed, 0);
      // A record left with no item is removed, and counts nothing, as in the host's `put_session`.
      record.itemCount = Math.max(record.itemCount - 1, 0);
      record.lastAccessedAt = ctx.now();
      totals.putSession(record);
    }
    return `{"storageKey":${quote(cmd.storageKey)},"deleted":true,"freedBytes":${freed}}`;
  };
}
