/**
 * `sessions`: the extension's sessions that hold items, with their totals, in sessionId order, a page at a time.
 * For extension pages (a cache viewer), not for the LLM. The twin of the host's `src/cmd/sessions.rs`, cursor and
 * all. The database is the extension's own, so every session in it is the calling origin's.
 */

import { LIST_DEFAULT_LIMIT, MAX_LIST_LIMIT } from "../../../protocol.js";
import { carriedRecord, each, ITEMS, newer, SESSIONS, transact, type SessionRecord } from "../store.js";
import { checkSessionId } from "../json/index.js";
import { optionalString, type Fields } from "../message.js";
import { HostError, quote, quoteOrNull } from "../error.js";
import { limitOf, type Context } from "./mod.js";

/** A parsed `sessions`. */
export interface Sessions {
  limit: number;
  /** The last session of the previous page: this page starts just after it. */
  after: string | undefined;
}

/** Checks the limit and the cursor, in the host's order. */
export function parseSessions(fields: Fields): Sessions {
  const limit = limitOf(fields, LIST_DEFAULT_LIMIT, MAX_LIST_LIMIT);
  const after = optionalString(fields.cursor, "cursor");
  // A cursor is the sessionId of the last session a page walked, as the host makes it.
  if (after !== undefined && checkSessionId("cursor", after) !== undefined) {
    throw HostError.invalidField("cursor", "a nextCursor returned by an earlier sessions", "another string");
  }
  return { limit, after };
}

/**
 * Reads at most `limit + 1` session records in one transaction: the page, and one more to know whether another
 * page follows. Listing is no access, so `lastAccessedAt` stays as it was. Session ids are ASCII (checked on
 * write), so IndexedDB's order of keys is the host's order of bytes.
 */
export async function sessions(ctx: Context, cmd: Sessions): Promise<string> {
  const db = await ctx.db();
  return transact(db, [ITEMS, SESSIONS], "readonly", async (tx) => {
    const page: SessionRecord[] = [];
    let nextCursor: string | undefined;
    const range = cmd.after === undefined ? null : IDBKeyRange.lowerBound(cmd.after, true);
    await each(tx.objectStore(SESSIONS).openCursor(range), (cursor) => {
      const last = page[page.length - 1];
      if (page.length === cmd.limit && last !== undefined) {
        nextCursor = last.sessionId;
        return false;
      }
      page.push(cursor.value as SessionRecord);
      return true;
    });
    // Each as its newest item may carry it (store.ts), asked for all at once.
    const records = await Promise.all(page.map(async (stored) => newer(stored, await carriedRecord(tx, stored.sessionId))));
    return `{"sessions":[${records.map(summaryJson).join(",")}],"nextCursor":${quoteOrNull(nextCursor)}}`;
  });
}

/** One session as `sessions` lists it, its fields in the host's order. */
function summaryJson(record: SessionRecord): string {
  return (
    `{"sessionId":${quote(record.sessionId)},"itemCount":${record.itemCount},"totalSize":${record.totalSize},` +
    `"createdAt":${record.createdAt},"lastAccessedAt":${record.lastAccessedAt}}`
  );
}
