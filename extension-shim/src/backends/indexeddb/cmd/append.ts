/**
 * `append`: adds the elements of an array to the array at `pointer`, or a string to the string at `pointer`, so a
 * running result grows by one batch without being read back and sent again. The twin of the host's
 * `src/cmd/append.rs`.
 *
 * The new text is spliced from the stored text and the appended part, in one read-write transaction that also checks
 * the item's size, the session's quota and the store-wide quota, or throws and so changes nothing.
 */

import { MAX_ITEM_BYTES, type ProvenanceInput } from "../../../protocol.js";
import { merged, provenanceOf } from "../provenance.js";
import { itemRecord, storedData, type ItemRecord } from "../store.js";
import { shape, utf8Length } from "../json/index.js";
import type { Fields } from "../message.js";
import { HostError, jsonTypeName } from "../error.js";
import { atPointer, dataOf, descriptionOf, pointerOf, replaceItem, sessionIdOf, storageKeyIn, valueAt, type Change, type Context } from "./mod.js";

/** A parsed `append`. */
export interface Append {
  sessionId: string;
  storageKey: string;
  pointer: string | undefined;
  /** An array whose elements are appended, or a string, as compact JSON text. */
  data: string;
  description: string | undefined;
  /** Where the added text came from, merged into the item's; left out, it counts as unknown. */
  provenance: ProvenanceInput | undefined;
}

/** Checks the key, the pointer and that `data` is an array or a string; `asciiRequest` as for `dataOf`. */
export function parseAppend(fields: Fields, asciiRequest = false): Append {
  const sessionId = sessionIdOf(fields);
  const key = storageKeyIn(fields.storageKey, sessionId);
  const pointer = pointerOf(fields.pointer);
  const data = dataOf(fields.data, asciiRequest).text;
  if (!data.startsWith("[") && !data.startsWith('"')) {
    throw HostError.invalidField(
      "data",
      "an array (its elements are appended to an array) or a string (appended to a string)",
      jsonTypeName(data),
    );
  }
  const description = fields.description === undefined ? undefined : descriptionOf(fields.description);
  return { sessionId, storageKey: key, pointer, data, description, provenance: provenanceOf(fields.provenance, sessionId) };
}

/** Splices the data in and stores the result with a new timestamp and shape. */
export function append(ctx: Context, cmd: Append): Change {
  return async (batch) => {
    const now = ctx.now();
    const [previous, stored, totals] = await Promise.all([
      itemRecord(batch.tx, cmd.storageKey),
      storedData(batch.tx, cmd.storageKey),
      batch.totals.of(cmd.sessionId),
    ]);
    if (previous === undefined) throw HostError.itemNotFound(cmd.storageKey);
    const kept = previous.data ?? stored;
    if (kept === undefined) throw HostError.corrupted(cmd.storageKey, "its data is missing");
    const text = spliced(cmd, kept);
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
      provenance: merged(previous.provenance, cmd.provenance),
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
