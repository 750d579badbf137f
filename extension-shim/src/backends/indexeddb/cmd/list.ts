/**
 * `list`: a session's items' metadata, newest first, a page at a time; never their data. With `taskId`, only that
 * task's items; with a `query`, only the items whose description or customMetadata string values hold every word.
 * The twin of the host's `src/cmd/list.rs`, cursor and all.
 */

import { LIST_DEFAULT_LIMIT, MAX_LIST_LIMIT } from "../../../protocol.js";
import { BY_SESSION_TIME, each, ITEMS, keysOf, quotaOf, readSession, request, SESSIONS, sessionItems, transact, type ItemRecord } from "../store.js";
import { checkShortId, isRuleError, parseStorageKey, type Query } from "../json/index.js";
import { optionalString, type Fields } from "../message.js";
import { HostError, quoteOrNull } from "../error.js";
import { inSession, limitOf, metadataJson, queryOf, rustU64, sessionIdOf, touch, type Context } from "./mod.js";

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
    // Asked for with the walks below, not before them: the requests of a transaction go together.
    const session = readSession(tx, cmd.sessionId).then((now) => now?.record);
    const filtered = cmd.taskId !== undefined || cmd.query !== undefined;
    let [itemCount, totalSize] = [0, 0];
    if (filtered) {
      await each(tx.objectStore(ITEMS).openCursor(keysOf(cmd.sessionId, cmd.taskId)), (cursor) => {
        const item = cursor.value as ItemRecord;
        if (wanted(cmd, item)) [itemCount, totalSize] = [itemCount + 1, totalSize + quotaOf(item)];
      });
    }
    const [items, nextCursor] = await page(tx, cmd);
    const record = await session;
    if (!filtered) [itemCount, totalSize] = [record?.itemCount ?? 0, record?.totalSize ?? 0];
    const text = `{"items":[${items.map(metadataJson).join(",")}],"nextCursor":${quoteOrNull(nextCursor)},"itemCount":${itemCount},"totalSize":${totalSize}}`;
    return [text, record?.lastAccessedAt] as const;
  });
  await touch(ctx, db, cmd.sessionId, lastAccessed);
  return result;
}

/** What `getAll` takes where the browser reads newest first in one request (IndexedDB's IDBGetAllOptions). */
interface GetAllOptions {
  query: IDBKeyRange;
  count: number;
  direction: IDBCursorDirection;
}

/**
 * The page's items, newest first, and the cursor past them when more are left. A page of every item of the session
 * (no task, no query) is one request where the browser can read an index backwards in one (`getAll` with a
 * direction, which comes with `getAllRecords`: Chrome 141 and later); else, and when items are skipped, a walk.
 */
async function page(tx: IDBTransaction, cmd: List): Promise<[ItemRecord[], string | undefined]> {
  const index = tx.objectStore(ITEMS).index(BY_SESSION_TIME);
  const range = sessionItems(cmd.sessionId, cmd.after);
  const cursorAfter = (item: ItemRecord | undefined) => (item === undefined ? undefined : `${item.timestamp}:${item.storageKey}`);
  if (cmd.taskId === undefined && cmd.query === undefined && "getAllRecords" in index) {
    const getAll = index.getAll as unknown as (options: GetAllOptions) => IDBRequest<ItemRecord[]>;
    const found = await request(getAll.call(index, { query: range, count: cmd.limit + 1, direction: "prev" }));
    const more = found.length > cmd.limit;
    if (more) found.length = cmd.limit;
    return [found, more ? cursorAfter(found[found.length - 1]) : undefined];
  }
  const items: ItemRecord[] = [];
  let nextCursor: string | undefined;
  await each(index.openCursor(range, "prev"), (cursor) => {
    const item = cursor.value as ItemRecord;
    if (cmd.taskId !== undefined && taskOf(item.storageKey) !== cmd.taskId) return true;
    if (!wanted(cmd, item)) return true;
    if (items.length === cmd.limit) {
      nextCursor = cursorAfter(items[items.length - 1]);
      return false;
    }
    items.push(item);
    return true;
  });
  return [items, nextCursor];
}

/** The task part of a stored key. */
function taskOf(storageKey: string): string {
  const parts = parseStorageKey(storageKey);
  return isRuleError(parts) ? "" : parts.taskId;
}
