/**
 * The protocol's operations, one file each (cmd/hello.ts to cmd/sessions.ts, named as the host's `src/cmd/` files
 * are), and what they share: the ops' names, the context they run against, the readers of fields that several ops
 * take, the quota checks, the replacing of an item, and items' metadata as replies show it. The twin of the host's
 * `src/cmd/mod.rs`.
 */

import {
  MAX_CUSTOM_METADATA_BYTES,
  MAX_ITEM_BYTES,
  MAX_QUERY_BYTES,
  MAX_QUERY_WORDS,
  SESSION_QUOTA_BYTES,
  TOUCH_GRANULARITY_MS,
} from "../../../protocol.js";
import {
  ITEM_STORES,
  newSession,
  putItem,
  quotaOf,
  request,
  SESSIONS,
  Totals,
  transact,
  type Durability,
  type ItemRecord,
  type KnownTotals,
  type SessionRecord,
  type SessionTotals,
} from "../store.js";
import {
  checkPointer,
  checkSessionId,
  compactJson,
  find,
  isRuleError,
  MALFORMED,
  parseStorageKey,
  Query,
  truncateDescription,
  utf8Length,
  type Range,
} from "../json/index.js";
import { echo, optionalCount, optionalString, requiredString, type Fields } from "../message.js";
import { HostError, jsonTypeName, quote } from "../error.js";
import { provenanceJson } from "../provenance.js";

/** Every op's name, in the order of PROTOCOL.md section 4. */
export const OPS = ["hello", "write", "read", "list", "update", "delete", "endSession", "stats", "append", "search", "sessions", "endorse"] as const;

/** What every op runs against. */
export interface Context {
  /** The database, or the StorageUnavailableError saying why it can't be opened. */
  db(): Promise<IDBDatabase>;
  /** Now, in ms since the Unix epoch. */
  now(): number;
  /** Fills a buffer with random bytes, for generated ids. */
  random(bytes: Uint8Array): void;
  /**
   * The store-wide quota in force. Ops await it before their transaction begins: a transaction whose body awaits
   * anything but its own requests commits early.
   */
  storeQuota(): Promise<number>;
  /** How every read-write transaction commits (store.ts `Durability`). */
  durability: Durability;
  /** Runs a change of the totals holding the writer lease (writer.ts), with what it knows of them in `db`. */
  writing<T>(db: IDBDatabase, run: (known: KnownTotals | undefined) => Promise<T>): Promise<T>;
}

/**
 * Runs `body` in one read-write transaction over ITEM_STORES, under the writer lease, with the totals as this
 * context's earlier changes left them (`totals`); once it has committed, they are kept for the next change.
 */
export function changeTotals<T>(ctx: Context, db: IDBDatabase, body: (tx: IDBTransaction, totals: Totals) => Promise<T>): Promise<T> {
  return ctx.writing(db, async (known) => {
    let totals: Totals | undefined;
    const result = await transact(db, ITEM_STORES, "readwrite", (tx) => body(tx, (totals = new Totals(tx, known))), ctx.durability);
    totals?.keep();
    return result;
  });
}

/**
 * What the changes sharing one read-write transaction over ITEM_STORES share (host.ts batches them): the
 * transaction, the store-wide quota in force, the totals as the changes before have left them, and whether this
 * is the careful run after a transaction failed.
 */
export interface Batch {
  tx: IDBTransaction;
  limit: number;
  totals: Totals;
  /**
   * A write with a generated id first assumes its key is free and adds the item (IndexedDB's `add`, which fails on
   * a key that is taken: with 8 random characters, all but never), saving a round trip to the database per write. A
   * taken key fails the transaction, and host.ts then runs its changes again, each alone and careful: the write then
   * checks that the key is free, as the host does, and draws another if not.
   */
  careful: boolean;
}

/**
 * An op that changes items (`write`, `update`, `append`, `delete`); its reply's result is what it resolves with. It
 * may share its transaction with the changes queued behind it (host.ts commits them together), so it must throw
 * every refusal before its first write: a refused change then leaves the transaction as it found it.
 */
export type Change = (batch: Batch) => Promise<string>;

/** Reads and checks the request's `sessionId`. */
export function sessionIdOf(fields: Fields): string {
  const sessionId = requiredString(fields.sessionId, "sessionId");
  const wrong = checkSessionId("sessionId", sessionId);
  if (wrong) throw HostError.from(wrong);
  return sessionId;
}

/**
 * Reads the `storageKey` and checks it belongs to `sessionId`. A key of another session is `ItemNotFoundError`,
 * exactly as a key that was never written, so nothing leaks across sessions.
 */
export function storageKeyIn(raw: string | undefined, sessionId: string): string {
  const storageKey = requiredString(raw, "storageKey");
  const parts = parseStorageKey(storageKey);
  if (isRuleError(parts)) throw HostError.from(parts);
  if (parts.sessionId !== sessionId) throw HostError.itemNotFound(storageKey);
  return storageKey;
}

/** Reads a `pointer`: an RFC 6901 JSON pointer (empty, or starting with `/`). */
export function pointerOf(raw: string | undefined): string | undefined {
  const pointer = optionalString(raw, "pointer");
  if (pointer === undefined) return undefined;
  const wrong = checkPointer(pointer);
  if (wrong === undefined) return pointer;
  const actual = wrong === "noLeadingSlash" ? "a string not starting with /" : "a ~ not followed by 0 (for ~) or 1 (for /)";
  throw HostError.invalidField("pointer", "an RFC 6901 JSON pointer such as /emails/3/subject", actual);
}

/**
 * Where the part of the item text `text` that `pointer` names lies. A pointer to nothing is `ItemNotFoundError`
 * whose message names the key and pointer; `expected` and `suggestion` say what the calling op needed there.
 */
export function valueAt(storageKey: string, text: string, pointer: string, expected: string, suggestion: string): Range {
  const found = find(text, pointer);
  if (found === MALFORMED) throw HostError.corrupted(storageKey, "its data is not well-formed JSON");
  if (found === null) {
    throw new HostError("ItemNotFoundError", `item ${storageKey} has nothing at pointer ${echoed(pointer)}`, suggestion)
      .expected(expected)
      .actual(echoed(pointer));
  }
  return found;
}

/** Where a pointer points, for messages: "the top of the item" or "pointer /a/b". */
export function atPointer(pointer: string | undefined): string {
  return pointer === undefined || pointer === "" ? "the top of the item" : `pointer ${echoed(pointer)}`;
}

/**
 * A pointer as an error message shows it: whole up to 256 bytes, else its start and its length, so that an error
 * about a pointer of megabytes stays a few hundred bytes.
 */
export function echoed(pointer: string): string {
  const MAX_ECHO = 256;
  const bytes = utf8Length(pointer);
  if (bytes <= MAX_ECHO) return pointer;
  // The longest start of whole characters within MAX_ECHO bytes.
  let cut = 0;
  let used = 0;
  while (cut < pointer.length) {
    const unit = pointer.charCodeAt(cut);
    const width = unit >= 0xd800 && unit <= 0xdbff ? 2 : 1;
    const size = utf8Length(pointer, cut, cut + width);
    if (used + size > MAX_ECHO) break;
    used += size;
    cut += width;
  }
  return `${pointer.slice(0, cut)}… (${bytes} bytes)`;
}

/** Reads a `query`: one to 32 words, at most 512 bytes. */
export function queryOf(text: string): Query {
  const parsed = Query.parse(text);
  if (parsed instanceof Query) return parsed;
  const tooBig = (what: string, limit: number, actual: number) =>
    new HostError(
      "InvalidRequestError",
      `\`query\` has ${actual} ${what}; a query has at most ${limit}`,
      "search for the few words that best tell the wanted text apart, then read what matches",
    )
      .expected(`at most ${limit} ${what}`)
      .actual(`${actual} ${what}`);
  if (parsed.error === "noWords") throw HostError.invalidField("query", "one or more words to look for", "no words");
  throw parsed.error === "tooManyWords" ? tooBig("words", MAX_QUERY_WORDS, parsed.count) : tooBig("bytes", MAX_QUERY_BYTES, parsed.count);
}

/** Reads a description: a string that is not only white space, cut to 300 characters. */
export function descriptionOf(raw: string | undefined): string {
  const description = requiredString(raw, "description");
  // Rust's trim: Unicode's White_Space, which is not quite JS's.
  if (/^\p{White_Space}*$/u.test(description)) {
    throw HostError.invalidField(
      "description",
      "a non-empty string saying what the data is (at most 300 characters)",
      "an empty string",
    );
  }
  return truncateDescription(description);
}

/** An item's data as the store keeps it: its compact JSON text, and that text's size in bytes (UTF-8). */
export interface Data {
  text: string;
  bytes: number;
}

/**
 * Reads `data`: any JSON value but `null`, as its compact text of at most 5 MiB, measured once here, or not at all
 * when the whole request was found to be ASCII (`asciiRequest`, see host.ts `#prepare`): its size is then its length.
 */
export function dataOf(raw: string | undefined, asciiRequest = false): Data {
  if (raw === undefined) throw HostError.missingField("data", "any JSON value other than null");
  const compact = compactJson(raw);
  const size = asciiRequest ? compact.length : utf8Length(compact);
  if (size > MAX_ITEM_BYTES) {
    throw new HostError(
      "DataTooLargeError",
      `data is ${size} bytes; one item holds at most ${MAX_ITEM_BYTES}`,
      "split the data into chunks of at most 5 MB, write each as its own item, and say in each description which part it is",
    )
      .expected(MAX_ITEM_BYTES)
      .actual(size);
  }
  return { text: compact, bytes: size };
}

/** Reads `customMetadata`: a JSON object of at most 64 KiB, as its compact text. */
export function customMetadataOf(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  const expected = "a JSON object of at most 65536 bytes";
  const type = jsonTypeName(raw);
  if (type !== "an object") throw HostError.invalidField("customMetadata", expected, type);
  const compact = compactJson(raw);
  const size = utf8Length(compact);
  if (size > MAX_CUSTOM_METADATA_BYTES) throw HostError.invalidField("customMetadata", expected, `an object of ${size} bytes`);
  return compact;
}

/**
 * The session total after replacing `freed` bytes by `requested` bytes, if it is within the quota.
 *
 * @throws HostError `QuotaExceededError` with the current total, the request and the limit.
 */
export function checkQuota(total: number, freed: number, requested: number): number {
  const current = Math.max(total - freed, 0);
  const newTotal = current + requested;
  if (newTotal <= SESSION_QUOTA_BYTES) return newTotal;
  throw quotaExceeded(
    `the session holds ${current} bytes; ${requested} more (data and customMetadata) would pass its quota of ${SESSION_QUOTA_BYTES}`,
    "delete items the task no longer needs (list shows their sizes) or store a smaller summary, then try again",
    ["session", current, requested, SESSION_QUOTA_BYTES],
  );
}

/**
 * What to do about a full store, in this backend's terms: the host's suggestion names its command line (`sessions`,
 * `end`, `config --store-quota`), which a person without the host doesn't have. Here a person ends sessions in the
 * extension's cache viewer, and the limit follows the browser's grant (see host.ts `storeQuotaFrom`). PROTOCOL.md
 * section 5.7 lets the two differ.
 */
export const STORE_QUOTA_SUGGESTION =
  "end the sessions whose tasks are done (endSession; a person can see every session in the extension's cache viewer and end one there), or delete items no longer needed, then try again; the limit is the one the extension set, or else half of the disk space the browser grants the extension (2 GiB at most)";

/**
 * Whether the store may hold `requested` bytes in place of `freed` ones (an item's data and customMetadata), when it
 * holds `total` in all and may hold `limit`; only growth is refused, so a store over a lowered limit may shrink.
 *
 * @throws HostError `QuotaExceededError` naming the store-wide limit, with the store's total, the request and the limit.
 */
export function checkStoreQuota(total: number, freed: number, requested: number, limit: number): void {
  const current = Math.max(total - freed, 0);
  if (current + requested <= limit || requested <= freed) return;
  throw quotaExceeded(
    `the cache store holds ${current} bytes in all its sessions; ${requested} more (data and customMetadata) would pass its store-wide limit of ${limit}`,
    STORE_QUOTA_SUGGESTION,
    ["store", current, requested, limit],
  );
}

/**
 * `QuotaExceededError` with its message and suggestion, and the fields every quota's refusal has: what the `whose`
 * total may be, and `current + requested` against `limit`.
 */
function quotaExceeded(message: string, suggestion: string, [whose, current, requested, limit]: [string, number, number, number]): HostError {
  return new HostError("QuotaExceededError", message, suggestion)
    .expected(`a ${whose} total of at most ${limit} bytes`)
    .actual(`${current} + ${requested} = ${current + requested} bytes`)
    .detail("current", current)
    .detail("requested", requested)
    .detail("limit", limit);
}

/** An item's metadata as replies show it (CacheMetadata, PROTOCOL.md section 4.0): never its data. */
export function metadataJson(item: ItemRecord): string {
  const parts = parseStorageKey(item.storageKey);
  // Stored keys were checked on write; an unreadable one shows empty parts, as in the host.
  const [sessionId, taskId, turnId] = isRuleError(parts) ? ["", "", ""] : [parts.sessionId, parts.taskId, parts.turnId];
  return (
    `{"storageKey":${quote(item.storageKey)},"description":${quote(item.description)},"timestamp":${item.timestamp},` +
    `"dataSize":${item.dataSize},"shape":${quote(item.shape)},"sessionId":${quote(sessionId)},"taskId":${quote(taskId)},` +
    `"turnId":${quote(turnId)},"provenance":${provenanceJson(item.provenance)}}`
  );
}

/**
 * Refreshes a session's `lastAccessedAt` after a read, if it is stale by a minute or more; finer refreshes would
 * cost a durable write per read for nothing the 24-hour rule can see.
 */
export async function touch(ctx: Context, db: IDBDatabase, sessionId: string, lastAccessedAt: number | undefined): Promise<void> {
  const now = ctx.now();
  if (lastAccessedAt === undefined || now - lastAccessedAt < TOUCH_GRANULARITY_MS) return;
  await transact(
    db,
    [SESSIONS],
    "readwrite",
    async (tx) => {
      const sessions = tx.objectStore(SESSIONS);
      const record = (await request(sessions.get(sessionId))) as SessionRecord | undefined;
      if (record === undefined) return;
      record.lastAccessedAt = Math.max(record.lastAccessedAt, now);
      await request(sessions.put(record));
    },
    ctx.durability,
  );
}

/**
 * Replaces the existing item `previous` by `item` (and its data, when the data changes) in the batch's transaction,
 * whose session and store held `totals`: the quotas (the session's, and the store-wide limit) are checked against
 * the totals without the old item, and the session's totals, the store's and the last access move with it.
 */
export function replaceItem(batch: Batch, previous: ItemRecord, item: ItemRecord, data: string | undefined, totals: SessionTotals): string {
  const [stored, total] = totals;
  const record = stored ?? newSession(item.sessionId, item.timestamp);
  record.totalSize = checkQuota(record.totalSize, quotaOf(previous), quotaOf(item));
  checkStoreQuota(total, quotaOf(previous), quotaOf(item), batch.limit);
  record.lastAccessedAt = item.timestamp;
  batch.totals.putSession(record, item);
  putItem(batch.tx, item, data, previous);
  return metadataJson(item);
}

/** A page size: `fallback` when absent, else 1 to `max` (`list`'s, `search`'s and `sessions`'). */
export function limitOf(fields: Fields, fallback: number, max: number): number {
  const limit = optionalCount(fields.limit, "limit");
  if (limit === undefined) return fallback;
  if (limit.value >= 1 && limit.value <= max) return limit.value;
  throw HostError.invalidField("limit", `an integer from 1 to ${max}`, echo(limit));
}

/** Whether a cursor's key is a storage key of `sessionId`. */
export function inSession(storageKey: string, sessionId: string): boolean {
  const parts = parseStorageKey(storageKey);
  return !isRuleError(parts) && parts.sessionId === sessionId;
}

/**
 * A number as Rust's `str::parse::<u64>` reads it (an optional `+`, then decimal digits, at most 2^64 - 1), or
 * undefined. Values past 2^53 are rounded, which no timestamp or match count comes near.
 */
export function rustU64(text: string): number | undefined {
  if (!/^\+?[0-9]+$/.test(text)) return undefined;
  const value = BigInt(text);
  return value < 2n ** 64n ? Number(value) : undefined;
}

/** Checks the session id of `endSession` or `stats`. */
export function parseSessionOp(fields: Fields): string {
  return sessionIdOf(fields);
}
