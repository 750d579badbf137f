/**
 * `read`: one item with its data, or only the part a JSON pointer names, or a slice of that (`offset`, `limit`)
 * or the first slice that fits `maxBytes`; and with `storageKeys`, several items in one snapshot, at most
 * MAX_READ_MANY_BYTES of data and customMetadata in all. The twin of the host's `src/cmd/read.rs`.
 */

import { MAX_READ_MANY_BYTES, MAX_STORAGE_KEYS, MIN_MAX_BYTES } from "../../../protocol.js";
import { dataOf, itemRecord, READ_STORES, readSession, storedData, transact, type ItemRecord } from "../store.js";
import { elements, MALFORMED, nextOffset, slice, utf8Length, type Window } from "../json/index.js";
import { echo, optionalCount, parseFields, requiredString, Spliced, type Count, type Fields } from "../message.js";
import { Digits, HostError, quote } from "../error.js";
import { atPointer, metadataJson, pointerOf, sessionIdOf, storageKeyIn, touch, valueAt, type Context } from "./mod.js";

/** A parsed `read` of one item. */
export interface Read {
  sessionId: string;
  storageKey: string;
  pointer: string | undefined;
  /** `offset` and `limit`, when the request asks for a slice. */
  slice: { offset: Count; limit: Count | undefined } | undefined;
  /** `maxBytes`: the most bytes of data text the reply may carry. */
  maxBytes: number | undefined;
}

/** Checks the session, key, pointer, slice and budget. */
export function parseRead(fields: Fields): Read {
  const sessionId = sessionIdOf(fields);
  const storageKey = storageKeyIn(fields.storageKey, sessionId);
  const pointer = pointerOf(fields.pointer);
  const offset = optionalCount(fields.offset, "offset");
  const limit = optionalCount(fields.limit, "limit");
  if (limit?.value === 0) throw HostError.invalidField("limit", "a positive integer", 0);
  const maxBytes = maxBytesOf(fields);
  const sliced = offset !== undefined || limit !== undefined ? { offset: offset ?? { value: 0, digits: "0" }, limit } : undefined;
  return { sessionId, storageKey, pointer, slice: sliced, maxBytes };
}

/** `maxBytes`, checked: at least MIN_MAX_BYTES. */
function maxBytesOf(fields: Fields): number | undefined {
  const maxBytes = optionalCount(fields.maxBytes, "maxBytes");
  if (maxBytes !== undefined && maxBytes.value < MIN_MAX_BYTES) {
    throw HostError.invalidField("maxBytes", `an integer of at least ${MIN_MAX_BYTES}`, maxBytes.value);
  }
  return maxBytes?.value;
}

/** Reads the item, then refreshes the session's last access. */
export async function read(ctx: Context, cmd: Read): Promise<Spliced> {
  const db = await ctx.db();
  const [result, lastAccessed] = await transact(db, READ_STORES, "readonly", async (tx) => {
    // The data is asked for beside the record, in case it isn't in the record: one round trip either way.
    const [item, text, lastAccessed] = await Promise.all([itemRecord(tx, cmd.storageKey), storedData(tx, cmd.storageKey), lastAccessOf(tx, cmd.sessionId)]);
    return [readOne(cmd, item, item?.data ?? text, undefined), lastAccessed] as const;
  });
  await touch(ctx, db, cmd.sessionId, lastAccessed);
  return result;
}

/** A parsed `read` of several items: each key's read, or the error a read of that key alone would fail with. */
export interface ReadMany {
  sessionId: string;
  reads: Array<Read | { storageKey: string; error: HostError }>;
}

/**
 * Checks the session, the keys and their pointers. `offset` and `limit` slice one value, so they don't go with
 * several keys; `maxBytes` bounds each item.
 */
export function parseReadMany(fields: Fields): ReadMany {
  const sessionId = sessionIdOf(fields);
  if (fields.storageKey !== undefined || fields.offset !== undefined || fields.limit !== undefined || fields.pointer !== undefined) {
    throw new HostError(
      "InvalidRequestError",
      "`storageKeys` reads whole items (or a pointer each); it doesn't go with `storageKey`, `pointer`, `offset` or `limit`",
      'send the keys in `storageKeys` alone, each as a key or {"storageKey", "pointer"}, or read one item with `storageKey`',
    );
  }
  const expected = `an array of 1 to ${MAX_STORAGE_KEYS} keys, each a string or {"storageKey": …, "pointer": …}`;
  const raw = fields.storageKeys ?? "[]";
  if (!raw.startsWith("[")) throw HostError.invalidField("storageKeys", expected, "not an array");
  // Every entry is counted, for the error; only the first MAX_STORAGE_KEYS are kept.
  const entries: string[] = [];
  let count = 0;
  elements(raw, (start, end) => {
    if (count++ < MAX_STORAGE_KEYS) entries.push(raw.slice(start, end));
  });
  if (count === 0 || count > MAX_STORAGE_KEYS) throw HostError.invalidField("storageKeys", expected, count);
  const maxBytes = maxBytesOf(fields);
  const reads = entries.map((entry) => {
    let key: string | undefined = entry;
    let pointerRaw: string | undefined;
    if (entry.startsWith("{")) {
      const target = parseFields(entry);
      [key, pointerRaw] = [target.storageKey, target.pointer];
    }
    const pointer = pointerOf(pointerRaw);
    try {
      return { sessionId, storageKey: storageKeyIn(key, sessionId), pointer, slice: undefined, maxBytes };
    } catch (error) {
      if (error instanceof HostError && error.code === "ItemNotFoundError") return { storageKey: requiredString(key, "storageKey"), error };
      throw error;
    }
  });
  return { sessionId, reads };
}

/**
 * What is left of a multi-item read's MAX_READ_MANY_BYTES as its entries are read: `spend` refuses the whole
 * read once the entries' data and customMetadata pass it.
 */
class Budget {
  left = MAX_READ_MANY_BYTES;
  used = 0;
  /** How many entries have been reached. */
  done = 0;
  /** Set when an entry did not fit: the read is refused. */
  spent = false;

  constructor(readonly entries: number) {}

  spend(size: number): void {
    if (size <= this.left) {
      this.left -= size;
      this.used += size;
      return;
    }
    this.spent = true;
    const total = this.used + size;
    throw new HostError(
      "InvalidRequestError",
      `a read of several items returns at most ${MAX_READ_MANY_BYTES} bytes of data and customMetadata in all ` +
        `(a key named twice counts twice); the first ${this.done} of these ${this.entries} entries already come to ${total}`,
      "read fewer keys at a time, or only the part of each item you need with a pointer, or pass maxBytes " +
        "to get the first slice of each item that fits; read a long item alone, a page at a time, with offset and limit",
    )
      .expected(`at most ${MAX_READ_MANY_BYTES} bytes of data and customMetadata`)
      .actual(`${total} bytes in the first ${this.done} of ${this.entries} entries`);
  }
}

/**
 * Reads every item in one transaction, then refreshes the session's last access once. Every entry's record (at
 * most MAX_STORAGE_KEYS, a small item's data with it) is asked for at once, then the data of as many larger
 * entries at a time as MAX_READ_MANY_BYTES of stored data allow (one at least): a round trip or two to the
 * browser's IndexedDB rather than one per entry, while the data held at once stays within the read's own bound,
 * one item, and the records. Each entry is then read into the reply in order, as the host reads them.
 */
export async function readMany(ctx: Context, cmd: ReadMany): Promise<string> {
  const db = await ctx.db();
  const [entries, lastAccessed] = await transact(db, READ_STORES, "readonly", async (tx) => {
    const lastAccessed = lastAccessOf(tx, cmd.sessionId);
    const keys = cmd.reads.map((read) => ("error" in read ? undefined : read.storageKey));
    const items = await Promise.all(keys.map((key) => (key === undefined ? undefined : itemRecord(tx, key))));
    const texts: Array<Promise<string | undefined> | undefined> = [];
    // How many entries' data has been asked for, and the bytes of it not yet read into the reply.
    let [asked, held] = [0, 0];
    const budget = new Budget(cmd.reads.length);
    const entries: string[] = [];
    for (const [at, read] of cmd.reads.entries()) {
      budget.done++;
      if ("error" in read) {
        entries.push(missingJson(read.storageKey, read.error));
        continue;
      }
      // This entry's data, and the next entries' while what is held stays within the bound.
      while (asked <= at || (asked < keys.length && held + sizeOf(items[asked]) <= MAX_READ_MANY_BYTES)) {
        const [key, item] = [keys[asked], items[asked]];
        if (key !== undefined && item !== undefined) {
          held += sizeOf(item);
          const text = dataOf(tx, item);
          // A read refused before it gets to this entry aborts the transaction, and so this request: nobody waits.
          text.catch(() => undefined);
          texts[asked] = text;
        }
        asked++;
      }
      const text = await texts[at];
      [texts[at], held] = [undefined, held - sizeOf(items[at])];
      try {
        entries.push(String(readOne(read, items[at], text, budget)));
      } catch (error) {
        // Past the budget, the whole read is refused; any other refusal is this entry's.
        if (!(error instanceof HostError) || budget.spent) throw error;
        entries.push(missingJson(read.storageKey, error));
      }
    }
    return [entries, await lastAccessed] as const;
  });
  await touch(ctx, db, cmd.sessionId, lastAccessed);
  return `{"items":[${entries.join(",")}]}`;
}

/**
 * The bytes of data to ask `data` for an item, for the reads asked for at once: none for data the record holds
 * (read with it already), or for a key that names nothing.
 */
function sizeOf(item: ItemRecord | undefined): number {
  return item === undefined || item.data !== undefined ? 0 : item.dataSize;
}

/** An entry of `items` for a key that names nothing, or whose item can't be read. */
function missingJson(storageKey: string, error: HostError): string {
  return `{"storageKey":${quote(storageKey)},"error":${error.toJson()}}`;
}

/** The session's `lastAccessedAt`, for `touch`. */
async function lastAccessOf(tx: IDBTransaction, sessionId: string): Promise<number | undefined> {
  return (await readSession(tx, sessionId))?.record.lastAccessedAt;
}

/**
 * One item's `{"item", "slice"?}`, from its metadata and data as read; its data and customMetadata are taken from
 * `budget`, when there is one.
 */
function readOne(cmd: Read, item: ItemRecord | undefined, text: string | undefined, budget: Budget | undefined): Spliced {
  if (item === undefined) throw HostError.itemNotFound(cmd.storageKey);
  if (text === undefined) throw HostError.corrupted(cmd.storageKey, "its data is missing");
  const value =
    cmd.pointer === undefined
      ? text
      : text.slice(
          ...valueAt(
            cmd.storageKey,
            text,
            cmd.pointer,
            "a pointer to an existing part of the item's data",
            "read the item without a pointer, or a shorter pointer, to see its structure; array indexes start at 0",
          ),
        );
  const customSize = item.customMetadata === undefined ? 0 : utf8Length(item.customMetadata);
  const window = windowOf(cmd, value);
  let data = value;
  let sliceJson = "";
  if (window === undefined) {
    budget?.spend(utf8Length(value) + customSize);
  } else {
    const sliced = slice(value, window);
    if (sliced === MALFORMED) throw HostError.corrupted(cmd.storageKey, "its data is not well-formed JSON");
    if ("notSliceable" in sliced) {
      const kind = sliced.notSliceable;
      throw new HostError(
        "InvalidRequestError",
        `\`offset\` and \`limit\` slice an array, an object or a string; the value at ${atPointer(cmd.pointer)} is ${kind}`,
        "read it without offset and limit",
      )
        .expected("an array, an object or a string")
        .actual(kind);
    }
    budget?.spend(utf8Length(sliced.text) + customSize);
    data = sliced.text;
    const offset = cmd.slice === undefined ? 0 : echo(cmd.slice.offset);
    const next = nextOffset(sliced);
    sliceJson = `,"slice":{"offset":${offset instanceof Digits ? offset.text : offset},"count":${sliced.count},"total":${sliced.total},"nextOffset":${next ?? "null"}}`;
  }
  const meta = metadataJson(item);
  const custom = item.customMetadata === undefined ? "" : `,"customMetadata":${item.customMetadata}`;
  return new Spliced(`{"item":${meta.slice(0, -1)},"data":`, ["item", "data"], data, `${custom}}${sliceJson}}`);
}

/**
 * The part of `value` to return, when it is not all of it: the slice asked for, or, when `value` is longer than
 * `maxBytes` and can be sliced, the first slice that fits. A number, boolean or null is returned whole whatever
 * its length.
 */
function windowOf(cmd: Read, value: string): Window | undefined {
  if (cmd.slice !== undefined) return { offset: cmd.slice.offset.value, limit: cmd.slice.limit?.value, maxBytes: cmd.maxBytes };
  if (cmd.maxBytes === undefined || utf8Length(value) <= cmd.maxBytes) return undefined;
  return /^[[{"]/.test(value) ? { offset: 0, maxBytes: cmd.maxBytes } : undefined;
}
