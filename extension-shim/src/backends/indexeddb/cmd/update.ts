/**
 * `update`: changes an existing item's data, description or custom metadata, keeping its key. The twin of the
 * host's `src/cmd/update.rs`.
 *
 * One read-write transaction over the item, its data, its session's totals and the store's checks the session quota
 * and the store-wide quota against the totals without the old item, and then writes, or throws and so changes nothing.
 */

import { itemRecord, type ItemRecord } from "../store.js";
import { shape } from "../json/index.js";
import type { Fields } from "../message.js";
import { HostError } from "../error.js";
import type { ProvenanceInput } from "../../../protocol.js";
import { merged, provenanceOf } from "../provenance.js";
import { customMetadataOf, dataOf, descriptionOf, replaceItem, sessionIdOf, storageKeyIn, type Change, type Context, type Data } from "./mod.js";

/** A parsed `update`: at least one of the three changes. */
export interface Update {
  sessionId: string;
  storageKey: string;
  data: Data | undefined;
  description: string | undefined;
  customMetadata: string | undefined;
  /** Where the new text came from, merged into the item's; left out, it counts as unknown. */
  provenance: ProvenanceInput | undefined;
}

/** Checks the key and whichever changes are given; `asciiRequest` as for `dataOf`. */
export function parseUpdate(fields: Fields, asciiRequest = false): Update {
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
    data: fields.data === undefined ? undefined : dataOf(fields.data, asciiRequest),
    description: fields.description === undefined ? undefined : descriptionOf(fields.description),
    customMetadata: customMetadataOf(fields.customMetadata),
    provenance: provenanceOf(fields.provenance, sessionId),
  };
}

/** Rewrites the item with a new timestamp, checking the quota in the same transaction. */
export function update(ctx: Context, cmd: Update): Change {
  return async (batch) => {
    const now = ctx.now();
    const [previous, totals] = await Promise.all([itemRecord(batch.tx, cmd.storageKey), batch.totals.of(cmd.sessionId)]);
    if (previous === undefined) throw HostError.itemNotFound(cmd.storageKey);
    const item: ItemRecord = {
      ...previous,
      description: cmd.description ?? previous.description,
      timestamp: now,
      dataSize: cmd.data === undefined ? previous.dataSize : cmd.data.bytes,
      shape: cmd.data === undefined ? previous.shape : shape(cmd.data.text),
      provenance: merged(previous.provenance, cmd.provenance),
    };
    if (cmd.customMetadata !== undefined) item.customMetadata = cmd.customMetadata;
    return replaceItem(batch, previous, item, cmd.data?.text, totals);
  };
}
