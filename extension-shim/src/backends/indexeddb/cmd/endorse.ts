/**
 * `endorse`: the extension's code vouches for an item, which then reads as trusted until untrusted text is added to
 * it (PROTOCOL.md section 5.13). The twin of the host's `src/cmd/endorse.rs`.
 *
 * Only the provenance changes: the data, description, customMetadata, timestamp and place in `list` stay, so an
 * endorsement is a note on the item, not a new version of it; the session's last access moves, as any change's does.
 */

import { MAX_ENDORSE_REASON_CHARS } from "../../../protocol.js";
import { ITEMS, itemRecord, type ItemRecord } from "../store.js";
import { requiredString, type Fields } from "../message.js";
import { HostError } from "../error.js";
import { unknownProvenance } from "../provenance.js";
import { metadataJson, sessionIdOf, storageKeyIn, type Change, type Context } from "./mod.js";

/** A parsed `endorse`. */
export interface Endorse {
  sessionId: string;
  storageKey: string;
  /** Why, in 1 to MAX_ENDORSE_REASON_CHARS characters. */
  reason: string;
}

/** Checks the session, key and reason; a reason too long is refused, not cut, since it is the extension's own. */
export function parseEndorse(fields: Fields): Endorse {
  const sessionId = sessionIdOf(fields);
  const storageKey = storageKeyIn(fields.storageKey, sessionId);
  const reason = requiredString(fields.reason, "reason");
  const expected = `1 to ${MAX_ENDORSE_REASON_CHARS} characters saying why the extension vouches for the item`;
  const chars = Array.from(reason).length;
  if (chars > MAX_ENDORSE_REASON_CHARS) throw HostError.invalidField("reason", expected, `a string of ${chars} characters`);
  // Rust's trim: Unicode's White_Space.
  if (/^\p{White_Space}*$/u.test(reason)) throw HostError.invalidField("reason", expected, chars === 0 ? "an empty string" : "only white space");
  return { sessionId, storageKey, reason };
}

/** Sets the item's endorsement, replacing any earlier one; its metadata is the result. */
export function endorse(ctx: Context, cmd: Endorse): Change {
  return async ({ tx, totals }) => {
    const items = tx.objectStore(ITEMS);
    const [previous, [record]] = await Promise.all([itemRecord(tx, cmd.storageKey), totals.of(cmd.sessionId)]);
    if (previous === undefined) throw HostError.itemNotFound(cmd.storageKey);
    const now = ctx.now();
    const provenance = { ...(previous.provenance ?? unknownProvenance()), endorsed: { at: now, reason: cmd.reason } };
    const item: ItemRecord = { ...previous, provenance };
    items.put(item);
    if (record !== undefined) {
      record.lastAccessedAt = now;
      totals.putSession(record);
    }
    return metadataJson(item);
  };
}
