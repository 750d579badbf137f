/**
 * A slice of a value: elements of an array, members of an object (in stored order) or Unicode scalar values of a
 * string, `offset..offset + limit`, cut shorter when a byte budget is given. The twin of the host's
 * `src/json/slice.rs`. Only the slice is copied; the rest of the value is scanned to count it, never parsed.
 */

import { BACKSLASH, charCount, charEnd, elements, members, MALFORMED, QUOTE, utf8Length, type Malformed } from "./scan.js";

/** A slice and where it lies in the whole. */
export interface Sliced {
  /** The slice as JSON text of the same type as the whole. */
  text: string;
  /** Where it starts, as asked. */
  offset: number;
  /** How many elements, members or characters it holds. */
  count: number;
  /** How many the whole holds. */
  total: number;
}

/** How much of a value to take. */
export interface Window {
  /** The first element, member or character. */
  offset: number;
  /** How many at most; undefined means to the end. */
  limit?: number | undefined;
  /**
   * The most UTF-8 bytes the slice's JSON text may have; the slice ends before the first element, member or
   * character that would not fit. Undefined means no such bound.
   */
  maxBytes?: number | undefined;
}

/** Why a value can't be sliced: it is a number, a boolean or null (named as "a number"), or the text is broken. */
export type SliceError = { notSliceable: "a number" | "a boolean" | "null" } | Malformed;

/** The offset of the next slice, or null when this one reaches the end. */
export function nextOffset(sliced: Sliced): number | null {
  const end = sliced.offset + sliced.count;
  return end < sliced.total ? end : null;
}

/**
 * Slices the JSON value `text` (the value's text exactly, as a pointer found it). Offsets and limits beyond 2^53
 * are past the end of any text, so numbers serve for the host's u64s.
 */
export function slice(text: string, window: Window): Sliced | SliceError {
  const { offset } = window;
  const maxBytes = window.maxBytes ?? Infinity;
  const end = window.limit === undefined ? Infinity : offset + window.limit;
  const first = text.charCodeAt(0);
  if (first === 0x5b || first === 0x7b) {
    const parts: string[] = [];
    // The bytes of the slice's text so far: its brackets and separators included.
    let bytes = 1;
    let total = 0;
    // Once one entry doesn't fit, none after it is taken: a slice is contiguous.
    let full = false;
    const take = (start: number, stop: number) => {
      if (total >= offset && total < end && !full) {
        // The separator, the entry and the closing bracket must all fit.
        const comma = parts.length > 0 ? 1 : 0;
        const size = utf8Length(text, start, stop);
        if (bytes + comma + size + 1 > maxBytes) {
          full = true;
        } else {
          parts.push(text.slice(start, stop));
          bytes += comma + size;
        }
      }
      total++;
    };
    const wellFormed =
      first === 0x5b
        ? elements(text, (start, stop) => take(start, stop))
        : members(text, (nameStart, _nameEnd, _valueStart, valueEnd) => take(nameStart, valueEnd));
    if (!wellFormed) return MALFORMED;
    const [open, close] = first === 0x5b ? ["[", "]"] : ["{", "}"];
    return { text: `${open}${parts.join(",")}${close}`, offset, count: parts.length, total };
  }
  if (first === QUOTE && text.length >= 2 && text.charCodeAt(text.length - 1) === QUOTE) {
    return sliceString(text, offset, end, maxBytes);
  }
  if (first === 0x74 || first === 0x66) return { notSliceable: "a boolean" };
  if (first === 0x6e) return { notSliceable: "null" };
  if (first === 0x2d || (first >= 0x30 && first <= 0x39)) return { notSliceable: "a number" };
  return MALFORMED;
}

/**
 * Characters `offset..end` of the string `text` (with its quotes), as a string: the slice ends at the last
 * character boundary that is within `end` and leaves the slice's text, with its two quotes, within the budget.
 * Three stretches of one walk: up to the slice (counted), the slice (counted and measured), the rest (counted).
 */
function sliceString(text: string, offset: number, end: number, maxBytes: number): Sliced {
  const contentsEnd = text.length - 1;
  const room = Math.max(maxBytes - 2, 0);
  let at = 1;
  let index = 0;
  while (index < offset && at < contentsEnd) {
    at = charEnd(text, at, contentsEnd);
    index++;
  }
  if (index < offset || at > contentsEnd) {
    // The slice starts at or past the end.
    return { text: '""', offset, count: 0, total: index };
  }
  const from = at;
  let bytes = 0;
  while (at < contentsEnd && index < end) {
    const next = Math.min(charEnd(text, at, contentsEnd), contentsEnd);
    // An escape is ASCII, so its bytes are its units; anything else is measured.
    const size = text.charCodeAt(at) === BACKSLASH ? next - at : utf8Length(text, at, next);
    if (bytes + size > room) break;
    bytes += size;
    at = next;
    index++;
  }
  const total = index + charCount(text, at, contentsEnd);
  return { text: `"${text.slice(from, at)}"`, offset, count: index - offset, total };
}
