/**
 * `search`: the string values in a session's data that contain every word of a query, newest item first, each with
 * its key, the pointer to the string and a snippet, so the LLM reads exactly the part it needs. Items whose text
 * can't hold every word are passed over without being walked. The twin of the host's `src/cmd/search.rs`, cursor
 * and all.
 */

import { MAX_SEARCH_LIMIT, SEARCH_DEFAULT_LIMIT } from "../../../protocol.js";
import { BY_SESSION_TIME, DATA, dataOf, each, ITEMS, readSession, SESSIONS, sessionItems, transact, type ItemRecord } from "../store.js";
import { findIn, type Query } from "../json/index.js";
import { optionalString, requiredString, type Fields } from "../message.js";
import { HostError, quote, quoteOrNull } from "../error.js";
import { provenanceJson } from "../provenance.js";
import { inSession, limitOf, queryOf, rustU64, sessionIdOf, touch, type Context } from "./mod.js";

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
    const matches: string[] = [];
    let nextCursor: string | undefined;
    // From the cursor's item itself: its later matches may not have been returned yet.
    const from = cmd.resume === undefined ? undefined : ([cmd.resume.timestamp, cmd.resume.storageKey] as const);
    const newestFirst = tx.objectStore(ITEMS).index(BY_SESSION_TIME).openCursor(sessionItems(cmd.sessionId, from, true), "prev");
    await each(newestFirst, async (cursor) => {
      const item = cursor.value as ItemRecord;
      // Only the cursor's own item (if it is still there) had matches returned already.
      const skip = cmd.resume?.storageKey === item.storageKey ? cmd.resume.returned : 0;
      const text = await dataOf(tx, item);
      if (text === undefined || !cmd.query.mightMatch(text)) return true;
      const found = findIn(text, cmd.query, skip, cmd.limit - matches.length);
      if (found === undefined) return true;
      const provenance = provenanceJson(item.provenance);
      for (const match of found.found) {
        const cut = match.pointerCut ? `,"pointerCut":true` : "";
        matches.push(
          `{"storageKey":${quote(item.storageKey)},"pointer":${quote(match.pointer)}${cut},"snippet":${quote(match.snippet)},"provenance":${provenance}}`,
        );
      }
      if (!found.more) return true;
      nextCursor = `${item.timestamp}:${skip + found.found.length}:${item.storageKey}`;
      return false;
    });
    const record = (await readSession(tx, cmd.sessionId))?.record;
    return [`{"matches":[${matches.join(",")}],"nextCursor":${quoteOrNull(nextCursor)}}`, record?.lastAccessedAt] as const;
  });
  await touch(ctx, db, cmd.sessionId, lastAccessed);
  return result;
}
