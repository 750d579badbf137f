/**
 * The ops that store data: `write` (a new item, or one replacing another under the same key), `update` (an item's
 * data, description or customMetadata) and `append` (elements to an array, or text to a string, inside an item).
 * The twins of the host's `src/cmd/{write,update,append}.rs`.
 *
 * Each is one read-write transaction over the item, its data, its session's totals and the store's, which checks the
 * item limit, the session quota and the store-wide quota and then writes, or throws and so changes nothing.
 */

import { MAX_ITEM_BYTES } from "../../../protocol.js";
import {
  DATA,
  ITEMS,
  newSession,
  request,
  type ItemRecord,
  type SessionTotals,
} from "../store.js";
import { checkShortId, generateId, shape, storageKey, utf8Length } from "../json/index.js";
import { jsonTypeName, optionalString, type Fields } from "../message.js";
import { HostError } from "../error.js";
import {
  atPointer,
  checkQuota,
  checkStoreQuota,
  customMetadataOf,
  dataOf,
  descriptionOf,
  metadataJson,
  pointerOf,
  quotaOf,
  sessionIdOf,
  storageKeyIn,
  valueAt,
  type Batch,
  type Change,
  type Context,
} from "./mod.js";

/** A parsed `write`. */
export interface Write {
  sessionId: string;
  taskId: string | undefined;
  turnId: string | undefined;
  data: string;
  description: string;
  customMetadata: string | undefined;
}

/** Checks every field of a `write` before the store is touched. */
export function parseWrite(fields: Fields): Write {
  const sessionId = sessionIdOf(fields);
  const taskId = optionalString(fields.taskId, "taskId");
  const turnId = optionalString(fields.turnId, "turnId");
  const wrongTask = taskId === undefined ? undefined : checkShortId("taskId", taskId);
  if (wrongTask) throw HostError.from(wrongTask);
  const wrongTurn = turnId === undefined ? undefined : checkShortId("turnId", turnId);
  if (wrongTurn) throw HostError.from(wrongTurn);
  return {
    sessionId,
    taskId,
    turnId,
    data: dataOf(fields.data),
    description: descriptionOf(fields.description),
    customMetadata: customMetadataOf(fields.customMetadata),
  };
}

/** Stores the item; its metadata (never its data) is the result. */
export function write(ctx: Context, cmd: Write): Change {
  return async ({ tx, limit, totals, alone }) => {
    const [items, data] = [tx.objectStore(ITEMS), tx.objectStore(DATA)];
    const now = ctx.now();
    // A generated key in a batch is assumed free (see Batch.alone), and the item added rather than put.
    const fresh = !alone && (cmd.taskId === undefined || cmd.turnId === undefined);
    const lookup = (key: string) => (fresh ? Promise.resolve(undefined) : (request(items.get(key)) as Promise<ItemRecord | undefined>));
    const [[key, previous], [stored, total]] = await Promise.all([chooseKey(ctx, cmd, lookup), totals.of(cmd.sessionId)]);
    const record = stored ?? newSession(cmd.sessionId, now);
    const item: ItemRecord = {
      sessionId: cmd.sessionId,
      storageKey: key,
      description: cmd.description,
      timestamp: now,
      dataSize: utf8Length(cmd.data),
      shape: shape(cmd.data),
    };
    if (cmd.customMetadata !== undefined) item.customMetadata = cmd.customMetadata;
    const [before, freed] = [record.totalSize, previous === undefined ? 0 : quotaOf(previous)];
    record.totalSize = checkQuota(record.totalSize, freed, quotaOf(item));
    checkStoreQuota(total, freed, quotaOf(item), limit);
    totals.moveStore(total, record.totalSize - before);
    record.itemCount += previous === undefined ? 1 : 0;
    record.lastAccessedAt = now;
    if (fresh) items.add(item);
    else items.put(item);
    data.put(cmd.data, key);
    totals.putSession(record);
    return metadataJson(item);
  };
}

/**
 * The item's key, and the item it names now (which the write replaces): the given ids, with a fresh random id for
 * each one left out. A generated key that is already taken is drawn again (16 times at most), so a write without
 * ids never replaces an item.
 */
async function chooseKey(
  ctx: Context,
  cmd: Write,
  lookup: (key: string) => Promise<ItemRecord | undefined>,
): Promise<[string, ItemRecord | undefined]> {
  const MAX_DRAWS = 16;
  const generates = cmd.taskId === undefined || cmd.turnId === undefined;
  const random = () => {
    try {
      return generateId((bytes) => ctx.random(bytes));
    } catch (error) {
      throw HostError.storageUnavailable(`the random source failed: ${String(error)}`);
    }
  };
  for (let draw = 0; draw < MAX_DRAWS; draw++) {
    const key = storageKey(cmd.sessionId, cmd.taskId ?? random(), cmd.turnId ?? random());
    const found = await lookup(key);
    if (!generates || found === undefined) return [key, found];
  }
  throw HostError.storageUnavailable("no free storage key could be generated");
}

/** A parsed `update`: at least one of the three changes. */
export interface Update {
  sessionId: string;
  storageKey: string;
  data: string | undefined;
  description: string | undefined;
  customMetadata: string | undefined;
}

/** Checks the key and whichever changes are given. */
export function parseUpdate(fields: Fields): Update {
  const sessionId = sessionIdOf(fields);
  const key = storageKeyIn(fields.storageKey, sessionId);
  if (fields.data === undefined && fields.description === undefined && fields.customMetadata === undefined) {
    throw new HostError("InvalidRequestError", "update changes nothing", "send at least one of `data`, `description` and `customMetadata`")
      .expected("at least one of data, description, customMetadata")
      .actual("none of them");
  }
  return {
    sessionId,
    storageKey: key,
    data: fields.data === undefined ? undefined : dataOf(fields.data),
    description: fields.description === undefined ? undefined : descriptionOf(fields.description),
    customMetadata: customMetadataOf(fields.customMetadata),
  };
}

/** Rewrites the item with a new timestamp, checking the quota in the same transaction. */
export function update(ctx: Context, cmd: Update): Change {
  return async (batch) => {
    const now = ctx.now();
    const [previous, totals] = await Promise.all([
      request(batch.tx.objectStore(ITEMS).get(cmd.storageKey)) as Promise<ItemRecord | undefined>,
      batch.totals.of(cmd.sessionId),
    ]);
    if (previous === undefined) throw HostError.itemNotFound(cmd.storageKey);
    const item: ItemRecord = {
      ...previous,
      description: cmd.description ?? previous.description,
      timestamp: now,
      dataSize: cmd.data === undefined ? previous.dataSize : utf8Length(cmd.data),
      shape: cmd.data === undefined ? previous.shape : shape(cmd.data),
    };
    if (cmd.customMetadata !== undefined) item.customMetadata = cmd.customMetadata;
    return replaceItem(batch, previous, item, cmd.data, totals);
  };
}

/** A parsed `append`. */
export interface Append {
  sessionId: string;
  storageKey: string;
  pointer: string | undefined;
  /** An array whose elements are appended, or a string, as compact JSON text. */
  data: string;
  description: string | undefined;
}

/** Checks the key, the pointer and that `data` is an array or a string. */
export function parseAppend(fields: Fields): Append {
  const sessionId = sessionIdOf(fields);
  const key = storageKeyIn(fields.storageKey, sessionId);
  const pointer = pointerOf(fields.pointer);
  const data = dataOf(fields.data);
  if (!data.startsWith("[") && !data.startsWith('"')) {
    throw HostError.invalidField(
      "data",
      "an array (its elements are appended to an array) or a string (appended to a string)",
      jsonTypeName(data),
    );
  }
  const description = fields.description === undefined ? undefined : descriptionOf(fields.description);
  return { sessionId, storageKey: key, pointer, data, description };
}

/** Splices the data in and stores the result with a new timestamp and shape. */
export function append(ctx: Context, cmd: Append): Change {
  return async (batch) => {
    const now = ctx.now();
    const [previous, stored, totals] = await Promise.all([
      request(batch.tx.objectStore(ITEMS).get(cmd.storageKey)) as Promise<ItemRecord | undefined>,
      request(batch.tx.objectStore(DATA).get(cmd.storageKey)) as Promise<string | undefined>,
      batch.totals.of(cmd.sessionId),
    ]);
    if (previous === undefined) throw HostError.itemNotFound(cmd.storageKey);
    if (stored === undefined) throw HostError.corrupted(cmd.storageKey, "its data is missing");
    const text = spliced(cmd, stored);
    const size = utf8Length(text);
    if (size > MAX_ITEM_BYTES) {
      throw new HostError(
        "DataTooLargeError",
        `after the append the item would be ${size} bytes; one item holds at most ${MAX_ITEM_BYTES}`,
        "append the rest to a new item (write it, then append to that), and say in each description which part it is",
      )
        .expected(MAX_ITEM_BYTES)
        .actual(size);
    }
    const item: ItemRecord = {
      ...previous,
      description: cmd.description ?? previous.description,
      timestamp: now,
      dataSize: size,
      shape: shape(text),
    };
    return replaceItem(batch, previous, item, text, totals);
  };
}

/** The stored text with the data appended to the value at the pointer. */
function spliced(cmd: Append, text: string): string {
  const pointer = cmd.pointer ?? "";
  const [start, end] = valueAt(
    cmd.storageKey,
    text,
    pointer,
    "a pointer to an existing array or string in the item's data",
    "append at an existing array or string: read the item to see its structure",
  );
  const found = text.charAt(start);
  const added = cmd.data.charAt(0);
  if (found !== added) {
    const kind = jsonTypeName(text.slice(start, end));
    const wanted =
      found === "[" ? "an array of the elements to add" : found === '"' ? "a string to add" : "nothing: only arrays and strings can be appended to";
    throw new HostError(
      "InvalidRequestError",
      `the value at ${atPointer(pointer)} is ${kind}, so append's data must be ${wanted}`,
      "send data of the target's type, or use update to replace the value",
    )
      .expected(wanted)
      .actual(`${kind} at the target, ${jsonTypeName(cmd.data)} in data`);
  }
  const inner = cmd.data.slice(1, -1);
  const comma = found === "[" && end - start > 2 && inner !== "";
  return `${text.slice(0, end - 1)}${comma ? "," : ""}${inner}${text.slice(end - 1)}`;
}

/**
 * Replaces the existing item `previous` by `item` (and its data, when the data changes) in the batch's transaction,
 * whose session and store held `totals`: the quotas (the session's, and the store-wide limit) are checked against
 * the totals without the old item, and the session's totals, the store's and the last access move with it.
 */
function replaceItem(batch: Batch, previous: ItemRecord, item: ItemRecord, data: string | undefined, totals: SessionTotals): string {
  const [stored, total] = totals;
  const record = stored ?? newSession(item.sessionId, item.timestamp);
  const before = record.totalSize;
  record.totalSize = checkQuota(record.totalSize, quotaOf(previous), quotaOf(item));
  checkStoreQuota(total, quotaOf(previous), quotaOf(item), batch.limit);
  batch.totals.moveStore(total, record.totalSize - before);
  record.lastAccessedAt = item.timestamp;
  batch.tx.objectStore(ITEMS).put(item);
  if (data !== undefined) batch.tx.objectStore(DATA).put(data, item.storageKey);
  batch.totals.putSession(record);
  return metadataJson(item);
}
