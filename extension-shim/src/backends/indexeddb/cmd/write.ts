/**
 * `write`: stores an item under `{sessionId}_{taskId}_{turnId}` (a new item, or one replacing another under the same
 * key) and answers with its metadata only. The twin of the host's `src/cmd/write.rs`.
 *
 * One read-write transaction over the item, its data, its session's totals and the store's checks the item limit,
 * the session quota and the store-wide quota and then writes, or throws and so changes nothing.
 */

import { itemRecord, newSession, putItem, quotaOf, type ItemRecord } from "../store.js";
import { checkShortId, generateId, shape, storageKey } from "../json/index.js";
import { optionalString, type Fields } from "../message.js";
import { HostError } from "../error.js";
import type { ProvenanceInput } from "../../../protocol.js";
import { provenanceOf } from "../provenance.js";
import {
  checkQuota,
  checkStoreQuota,
  customMetadataOf,
  dataOf,
  descriptionOf,
  metadataJson,
  sessionIdOf,
  type Change,
  type Data,
  type Context,
} from "./mod.js";

/** A parsed `write`. */
export interface Write {
  sessionId: string;
  taskId: string | undefined;
  turnId: string | undefined;
  data: Data;
  description: string;
  customMetadata: string | undefined;
  /** Where the data came from; left out, the item reads as unknown. */
  provenance: ProvenanceInput | undefined;
}

/** Checks every field of a `write` before the store is touched; `asciiRequest` as for `dataOf`. */
export function parseWrite(fields: Fields, asciiRequest = false): Write {
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
    data: dataOf(fields.data, asciiRequest),
    description: descriptionOf(fields.description),
    customMetadata: customMetadataOf(fields.customMetadata),
    provenance: provenanceOf(fields.provenance, sessionId),
  };
}

/** Stores the item; its metadata (never its data) is the result. */
export function write(ctx: Context, cmd: Write): Change {
  return async ({ tx, limit, totals, careful }) => {
    const now = ctx.now();
    // A generated key is assumed free (see Batch.careful), and the item added rather than put.
    const fresh = !careful && (cmd.taskId === undefined || cmd.turnId === undefined);
    const lookup = (key: string) => (fresh ? Promise.resolve(undefined) : itemRecord(tx, key));
    const [[key, previous], [stored, total]] = await Promise.all([chooseKey(ctx, cmd, lookup), totals.of(cmd.sessionId)]);
    const record = stored ?? newSession(cmd.sessionId, now);
    const item: ItemRecord = {
      sessionId: cmd.sessionId,
      storageKey: key,
      description: cmd.description,
      timestamp: now,
      dataSize: cmd.data.bytes,
      shape: shape(cmd.data.text),
    };
    if (cmd.customMetadata !== undefined) item.customMetadata = cmd.customMetadata;
    // A replaced item's provenance goes with it, endorsement and all: the new text is what it describes.
    if (cmd.provenance !== undefined) item.provenance = cmd.provenance;
    const freed = previous === undefined ? 0 : quotaOf(previous);
    record.totalSize = checkQuota(record.totalSize, freed, quotaOf(item));
    checkStoreQuota(total, freed, quotaOf(item), limit);
    record.itemCount += previous === undefined ? 1 : 0;
    record.lastAccessedAt = now;
    totals.putSession(record, item);
    putItem(tx, item, cmd.data.text, previous, fresh);
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
