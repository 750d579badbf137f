/**
 * `endSession`: removes every item of a session and its record, at once. Idempotent. The twin of the host's
 * `src/cmd/end_session.rs`; the removal itself is cleanup.ts's, as the host's is cleanup.rs's.
 */

import { ITEM_STORES, transact } from "../store.js";
import { removeSession } from "../cleanup.js";
import { quote } from "../error.js";
import type { Context } from "./mod.js";

/** Removes every item of the session and its record; ending a session that holds nothing is no error. */
export async function endSession(ctx: Context, sessionId: string): Promise<string> {
  const db = await ctx.db();
  const removed = await transact(db, ITEM_STORES, "readwrite", (tx) => removeSession(tx, sessionId), ctx.durability);
  return `{"sessionId":${quote(sessionId)},"deletedItems":${removed.items},"freedBytes":${removed.bytes}}`;
}
