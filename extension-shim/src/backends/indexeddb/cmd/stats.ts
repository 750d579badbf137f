/**
 * `stats`: a session's totals, timestamps and remaining quota, and the store's use of its store-wide quota. The twin
 * of the host's `src/cmd/stats.rs`.
 */

import { SESSION_QUOTA_BYTES } from "../../../protocol.js";
import { COUNTERS, ITEMS, readSession, readStoreTotal, SESSIONS, transact } from "../store.js";
import { numberOrNull, quote } from "../error.js";
import type { Context } from "./mod.js";

/**
 * A session's totals, timestamps and remaining quota, and the store's use of its store-wide quota; a session that
 * holds nothing has zeros and nulls.
 */
export async function stats(ctx: Context, sessionId: string): Promise<string> {
  const db = await ctx.db();
  const limit = await ctx.storeQuota();
  const [now, { total: store }] = await transact(db, [ITEMS, SESSIONS, COUNTERS], "readonly", (tx) => Promise.all([readSession(tx, sessionId), readStoreTotal(tx)]));
  const record = now?.record;
  const totalSize = record?.totalSize ?? 0;
  return (
    `{"sessionId":${quote(sessionId)},"totalSize":${totalSize},"itemCount":${record?.itemCount ?? 0},` +
    `"createdAt":${numberOrNull(record?.createdAt)},"lastAccessedAt":${numberOrNull(record?.lastAccessedAt)},` +
    `"quotaBytes":${SESSION_QUOTA_BYTES},"remainingBytes":${Math.max(SESSION_QUOTA_BYTES - totalSize, 0)},` +
    `"storeTotalSize":${store},"storeQuotaBytes":${limit},"storeRemainingBytes":${Math.max(limit - store, 0)}}`
  );
}
