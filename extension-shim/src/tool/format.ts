/**
 * The compact text the StorageTool gives the LLM. Every byte here is spent from the LLM's context window, so
 * an item is one line, `key | size | age | from | shape | description`, and nothing is said twice.
 *
 * The fixed columns come first and hold nothing an item's content chooses; `from` says where the item's text
 * came from (provenance.ts). An untrusted item's shape and description are JSON string literals, a trusted
 * item's are plain text with no line terminator or `|`, so no item's text can end its line or shift a column.
 */

import { fence, freeText, fromLabel, isTrusted, provenanceOf, type ReplyPart } from "../provenance.js";
import { isHighSurrogate, type CacheMetadata, type JsonValue, type Slice } from "../protocol.js";
import { shortKey } from "./keys.js";

/** Named once at the top of a list so that the lines themselves need no labels. */
export const ITEM_COLUMNS = "key | size | age | from | shape | description";

/**
 * Sizes as a person writes them: 812B, 1.2KB, 4.9MB (powers of 1024, as the 5 MB and 50 MB limits are), to the
 * nearest tenth. Free space is rounded `"down"`, so that what is left never reads as more than can be written:
 * a session with 7 bytes in it has 49.9MB free, not 50MB.
 */
export function formatSize(bytes: number, rounding: "nearest" | "down" = "nearest"): string {
  const tenths = rounding === "down" ? Math.floor : Math.round;
  const oneDecimal = (value: number) => (tenths(value * 10) / 10).toString();
  if (bytes < 1024) return `${bytes}B`;
  if (bytes < 1024 * 1024) return `${oneDecimal(bytes / 1024)}KB`;
  return `${oneDecimal(bytes / (1024 * 1024))}MB`;
}

/** "1 item", "2 items": a count of items, singular or plural as it needs. */
export function itemCount(count: number): string {
  return count === 1 ? "1 item" : `${count} items`;
}

/** How long ago, in the largest whole unit: 45s, 12m, 3h, 2d. */
export function formatAge(milliseconds: number): string {
  const seconds = Math.max(0, Math.floor(milliseconds / 1000));
  if (seconds < 60) return `${seconds}s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)}h`;
  return `${Math.floor(seconds / 86_400)}d`;
}

/**
 * One item as one line. The shape ("array[50] of {from,subject,summary}") lets the LLM aim a pointer without
 * reading; an item written by a host older than shapes shows "?".
 */
export function itemLine(item: CacheMetadata, now: number): string {
  const provenance = provenanceOf(item);
  const trusted = isTrusted(provenance);
  const shape = item.shape ? freeText(item.shape, trusted) : "?";
  const age = formatAge(now - item.timestamp);
  const key = shortKey(item.storageKey, item.sessionId);
  return `${key} | ${formatSize(item.dataSize)} | ${age} | ${fromLabel(provenance)} | ${shape} | ${freeText(item.description, trusted)}`;
}

/** Text the model wrote (a query, a bad value) on one line: every line terminator becomes a space. */
export function oneLine(text: string): string {
  return text.replace(/[\r\n\v\f\u0085\u2028\u2029]+/g, " ");
}

/**
 * What the LLM wrote (a query, a bad value), shown back on one line and at most `max` characters: an answer
 * never echoes a long argument whole. Never splits a surrogate pair.
 */
export function echo(text: string, max = 80): string {
  if (text.length <= max) return oneLine(text);
  const end = isHighSurrogate(text.charCodeAt(max - 2)) ? max - 2 : max - 1;
  return `${oneLine(text.slice(0, end))}…`;
}

/**
 * The line that introduces one page of a read: which part of the value it is and where the next page starts.
 * `where` is " at <pointer>" or "". A page that is empty because its first element alone is over the budget
 * says how to read inside that element instead.
 */
export function pageLine(page: JsonValue, slice: Slice, pointer: string, maxBytes: number): string {
  const where = pointer ? ` at ${pointer}` : "";
  const unit = Array.isArray(page) ? "elements" : typeof page === "string" ? "characters" : "members";
  const { offset, count, total, nextOffset } = slice;
  if (count === 0 && nextOffset !== null) {
    const one = unit.slice(0, -1);
    const inside =
      unit === "elements"
        ? `read inside it with pointer "${pointer}/${offset}"`
        : "read it by name with a longer pointer (list or the item's shape shows the names)";
    return `${one} ${offset} of ${total}${where} alone is over the ${formatSize(maxBytes)} one read returns: ${inside}`;
  }
  if (count === 0) return `data${where}: nothing from offset ${offset}; it has ${total} ${unit}`;
  const next = nextOffset === null ? "the end" : `next page: offset ${nextOffset}`;
  return `data${where}, ${unit} ${offset}-${offset + count - 1} of ${total} (${next})`;
}

/**
 * What to say about a value too big to return: what it is, and how to read it in parts. `pointer` is where the
 * value sits in its item, so that the example pointer can be used as it is. The keys of an untrusted item's
 * object are its content, so they are fenced, and the example names no key.
 */
export function describeShape(value: unknown, pointer: string, trusted = true): ReplyPart[] {
  if (Array.isArray(value)) {
    return [`It is an array of ${value.length} elements: read them a few at a time with pointers such as "${pointer}/0".`];
  }
  if (typeof value === "object" && value !== null) {
    const keys = Object.keys(value);
    const more = keys.length > 20 ? ` (the first 20 of ${keys.length})` : "";
    if (!trusted) {
      return [`It is an object with the keys${more} `, fence(keys.slice(0, 20)), `: read one with a pointer "${pointer}/" and the key.`];
    }
    const shown = keys.slice(0, 20).join(", ");
    const example = `${pointer}/${pointerToken(keys[0] ?? "")}`;
    return [`It is an object with the keys ${shown}${keys.length > 20 ? `, … (${keys.length} keys)` : ""}: read one with a pointer such as "${example}".`];
  }
  if (typeof value === "string") {
    return [`It is one string of ${value.length} characters, and a pointer can't read part of a string: store text this long as several smaller items.`];
  }
  return [`It is a ${typeof value}.`];
}

/** One name as a JSON pointer segment (RFC 6901): "~" becomes "~0" and "/" becomes "~1". */
function pointerToken(name: string): string {
  return name.replace(/~/g, "~0").replace(/\//g, "~1");
}
