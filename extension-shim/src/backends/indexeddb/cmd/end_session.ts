/**
 * `endSession`: removes every item of a session and its record, at once. Idempotent. The twin of the host's
 * `src/cmd/end_session.rs`; the removal itself is cleanup.ts's, as the host's is cleanup.rs's.
 */

import { ITEMS, keysOf, request, SESSIONS, transact } from "../store.js";
import { removeSession } from "../cleanup.js";
import { quote } from "../error.js";
import { changeTotals, type Context } from "./mod.js";

/**
 * Removes every item of the session and its record; ending a session that holds nothing is no error. A session
 * this backend doesn't hold (one the router keeps on the host, told here in case an older shim left items) is
 * found so in a read-only transaction, which commits nothing, so that telling it costs no write. The host does
 * the same (cleanup.rs's `begin` changes nothing then). Items written between that look and the answer came
 * after this end, so they stay, as they would after a removal.
 */
export async function endSession(ctx: Context, sessionId: string): Promise<string> {
  const db = await ctx.db();
  const holds = await transact(db, [ITEMS, SESSIONS], "readonly", async (tx) => {
    const record = await request(tx.objectStore(SESSIONS).getKey(sessionId));
    return record !== undefined || (await request(tx.objectStore(ITEMS).getKey(keysOf(sessionId)))) !== undefined;
  });
  const removed = holds ? await changeTotals(ctx, db, (tx, totals) => removeSession(tx, totals, sessionId)) : { items: 0, bytes: 0 };
  return `{"sessionId":${quote(sessionId)},"deletedItems":${removed.items},"freedBytes":${removed.bytes}}`;
}
