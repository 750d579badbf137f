/**
 * Value boundaries in JSON text: where a value ends, an array's elements and an object's members, and the
 * characters of a string. The twin of the host's `src/json/scan.rs`, on a JS string instead of UTF-8 bytes:
 * every index here counts UTF-16 code units, and `utf8Length` gives the byte counts the protocol speaks in.
 *
 * Each function is one forward pass with no recursion and no copy of the text. Like the host's, they take text
 * that is valid JSON and answer `undefined` (or false) rather than throwing where it turns out not to be.
 */

import { isHighSurrogate, isLowSurrogate, SURROGATE } from "../../../protocol.js";

/** A range of the text: `[start, end)` in code units. */
export type Range = readonly [start: number, end: number];

/** What the walks answer where the text is not well-formed JSON (the host's `Malformed`). */
export const MALFORMED = "malformed";
export type Malformed = typeof MALFORMED;

export const QUOTE = 0x22;
export const BACKSLASH = 0x5c;
export const COMMA = 0x2c;
export const COLON = 0x3a;
export const OPEN_BRACE = 0x7b;
export const CLOSE_BRACE = 0x7d;
export const OPEN_BRACKET = 0x5b;
export const CLOSE_BRACKET = 0x5d;

/** JSON's white space between tokens. */
export function isSpace(unit: number): boolean {
  return unit === 0x20 || unit === 0x0a || unit === 0x0d || unit === 0x09;
}

/** The first index at or after `at` that is not white space. */
export function skipSpace(text: string, at: number): number {
  while (at < text.length && isSpace(text.charCodeAt(at))) at++;
  return at;
}

/**
 * The index just past the string whose opening quote is at `at`, or undefined if it never closes.
 *
 * Only a quote can end a string, and a quote is escaped exactly when an odd run of backslashes precedes it (each
 * backslash escapes the one unit after it). So the search jumps from quote to quote with `indexOf` and looks back
 * over the run before each one: every unit is looked at a bounded number of times, however the escapes fall.
 */
export function stringEnd(text: string, at: number): number | undefined {
  let from = at + 1;
  for (;;) {
    const quote = text.indexOf('"', from);
    if (quote < 0) return undefined;
    let run = 0;
    while (quote - run - 1 >= from && text.charCodeAt(quote - run - 1) === BACKSLASH) run++;
    if (run % 2 === 0) return quote + 1;
    from = quote + 1;
  }
}

/** The index just past the value that starts at `at` (which must not be white space), or undefined. */
export function valueEnd(text: string, at: number): number | undefined {
  if (at >= text.length) return undefined;
  const first = text.charCodeAt(at);
  if (first === QUOTE) return stringEnd(text, at);
  if (first === OPEN_BRACE || first === OPEN_BRACKET) {
    // Only the depth is counted: which bracket closes which is not checked here, as in the host.
    let depth = 0;
    let i = at;
    while (i < text.length) {
      const unit = text.charCodeAt(i);
      if (unit === QUOTE) {
        const end = stringEnd(text, i);
        if (end === undefined) return undefined;
        i = end;
        continue;
      }
      if (unit === OPEN_BRACE || unit === OPEN_BRACKET) {
        depth++;
      } else if (unit === CLOSE_BRACE || unit === CLOSE_BRACKET) {
        depth--;
        if (depth === 0) return i + 1;
      }
      i++;
    }
    return undefined;
  }
  let i = at;
  while (i < text.length) {
    const unit = text.charCodeAt(i);
    if (unit === COMMA || unit === CLOSE_BRACE || unit === CLOSE_BRACKET || isSpace(unit)) return i;
    i++;
  }
  return text.length;
}

/**
 * Visits the elements of the array whose `[` is at `at`, in order, with their ranges; `visit` returning false
 * stops the walk. False when the text is not a well-formed array (after visiting the elements before the fault,
 * but not the one the fault follows), true otherwise.
 */
export function elements(text: string, visit: (start: number, end: number) => boolean | void, at = 0): boolean {
  let start = 0;
  let end = 0;
  const read = (at: number) => {
    start = at;
    const found = valueEnd(text, at);
    if (found !== undefined) end = found;
    return found;
  };
  return entries(text, at, OPEN_BRACKET, CLOSE_BRACKET, read, () => visit(start, end));
}

/**
 * Visits the members of the object whose `{` is at `at`, in stored order, with the range of each name (with its
 * quotes) and of each value; as `elements` otherwise.
 */
export function members(
  text: string,
  visit: (nameStart: number, nameEnd: number, valueStart: number, valueEnd: number) => boolean | void,
  at = 0,
): boolean {
  let nameStart = 0;
  let nameEnd = 0;
  let start = 0;
  let end = 0;
  const read = (at: number) => {
    if (text.charCodeAt(at) !== QUOTE) return undefined;
    const name = stringEnd(text, at);
    if (name === undefined) return undefined;
    const colon = skipSpace(text, name);
    if (text.charCodeAt(colon) !== COLON) return undefined;
    [nameStart, nameEnd, start] = [at, name, skipSpace(text, colon + 1)];
    const found = valueEnd(text, start);
    if (found !== undefined) end = found;
    return found;
  };
  return entries(text, at, OPEN_BRACE, CLOSE_BRACE, read, () => visit(nameStart, nameEnd, start, end));
}

/**
 * The entries of a container that `open` starts and `close` ends, separated by commas: `read` reads one at an
 * index and returns where it ends (undefined if it is malformed), and `visit` visits the one read last. An entry
 * is visited only once the separator after it is known to be good, as the host's iterator yields it.
 */
function entries(
  text: string,
  at: number,
  open: number,
  close: number,
  read: (at: number) => number | undefined,
  visit: () => boolean | void,
): boolean {
  if (text.charCodeAt(at) !== open) return false;
  let i = skipSpace(text, at + 1);
  if (text.charCodeAt(i) === close) return true;
  for (;;) {
    const end = read(i);
    if (end === undefined) return false;
    i = skipSpace(text, end);
    const after = text.charCodeAt(i);
    if (after === COMMA) {
      i = skipSpace(text, i + 1);
    } else if (after !== close) {
      return false;
    }
    if (visit() === false || after === close) return true;
  }
}

/**
 * The index just past the character (Unicode scalar value) that starts at `at` in a JSON string's raw contents,
 * which end at `end`: an escape (`\n`, `\u00e9`, or an escaped surrogate pair, which is one character), or a
 * character as written (a surrogate pair is one). A lone escaped surrogate is one character, as in the host.
 */
export function charEnd(text: string, at: number, end: number): number {
  const unit = text.charCodeAt(at);
  if (unit === BACKSLASH) {
    if (at + 1 >= end || text.charCodeAt(at + 1) !== 0x75) return at + 2;
    const high = hex4(text, at + 2, end);
    const pair =
      high >= 0xd800 &&
      high <= 0xdbff &&
      at + 8 <= end &&
      text.charCodeAt(at + 6) === BACKSLASH &&
      text.charCodeAt(at + 7) === 0x75 &&
      isLowSurrogate(hex4(text, at + 8, end));
    return at + (pair ? 12 : 6);
  }
  if (isHighSurrogate(unit) && at + 1 < end && isLowSurrogate(text.charCodeAt(at + 1))) return at + 2;
  return at + 1;
}

/**
 * Where each character of the raw string contents `text[from..to)` starts, in order (see `charEnd`). For tests
 * and short texts; long walks step with `charEnd` themselves.
 */
export function* charStarts(text: string, from = 0, to = text.length): Generator<number> {
  for (let at = from; at < to; at = charEnd(text, at, to)) yield at;
}

/** Below this many units, `charCount` walks the text without first asking whether it must. */
const CHAR_COUNT_BY_HAND_UNITS = 256;

/** How many characters the raw string contents `text[from..to)` hold: as many as `charStarts` visits. */
export function charCount(text: string, from = 0, to = text.length): number {
  if (to - from >= CHAR_COUNT_BY_HAND_UNITS) {
    // Text with no escape and no surrogate, as most is, has one character per unit: two native searches say so.
    const contents = text.slice(from, to);
    if (!contents.includes("\\") && !SURROGATE.test(contents)) return to - from;
  }
  let count = 0;
  for (let at = from; at < to; count++) {
    const unit = text.charCodeAt(at);
    // Most characters are one unit: only an escape or a surrogate needs a closer look.
    at = unit !== BACKSLASH && !isHighSurrogate(unit) ? at + 1 : charEnd(text, at, to);
  }
  return count;
}

/**
 * How many bytes `text[from..to)` takes as UTF-8: the unit the protocol counts sizes in. A lone surrogate counts
 * 3 bytes, as the U+FFFD it would be encoded as; text the host can receive has none. The client's own count
 * (protocol.ts), which the browser's encoder does.
 */
export { utf8Length } from "../../../protocol.js";

/**
 * The value of the JSON string whose raw contents (between its quotes, escapes as written) are `raw`, or
 * undefined when it holds an unpaired surrogate, which the host (whose strings are Rust strings) can't hold
 * either: it then treats the string as it does here, wherever that matters.
 */
export function decodeString(raw: string): string | undefined {
  if (!raw.includes("\\")) return raw;
  let value: unknown;
  try {
    value = JSON.parse(`"${raw}"`);
  } catch {
    return undefined;
  }
  return typeof value === "string" && isWellFormed(value) ? value : undefined;
}

/** Whether `text` has no unpaired surrogate. */
export function isWellFormed(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (isHighSurrogate(unit)) {
      if (!isLowSurrogate(text.charCodeAt(i + 1))) return false;
      i++;
    } else if (isLowSurrogate(unit)) {
      return false;
    }
  }
  return true;
}

/** How many Unicode scalar values the plain (unescaped) text `text` holds, a surrogate pair counting one. */
export function scalarCount(text: string): number {
  let count = text.length;
  for (let i = 0; i + 1 < text.length; i++) {
    if (isHighSurrogate(text.charCodeAt(i)) && isLowSurrogate(text.charCodeAt(i + 1))) {
      count--;
      i++;
    }
  }
  return count;
}

export { isHighSurrogate, isLowSurrogate };

/**
 * The value of the four hex digits at `at` (all before `end`), or -1. Like the host's `u32::from_str_radix`, a
 * leading `+` is taken as a sign; valid JSON never has one there.
 */
function hex4(text: string, at: number, end: number): number {
  if (at + 4 > end) return -1;
  let value = 0;
  for (let i = at; i < at + 4; i++) {
    const unit = text.charCodeAt(i);
    const digit =
      unit >= 0x30 && unit <= 0x39 ? unit - 0x30 : unit >= 0x61 && unit <= 0x66 ? unit - 0x57 : unit >= 0x41 && unit <= 0x46 ? unit - 0x37 : -1;
    if (digit < 0 && !(unit === 0x2b && i === at)) return -1;
    if (digit >= 0) value = value * 16 + digit;
  }
  return value;
}

/**
 * A stack of booleans (whether each open container is an object), a byte per level, for the walks that keep
 * one: a million levels cost a megabyte, not the eight a JS array of them would.
 */
export class FlagStack {
  #flags = new Uint8Array(16);
  #length = 0;

  get length(): number {
    return this.#length;
  }

  push(flag: boolean): void {
    if (this.#length === this.#flags.length) {
      const grown = new Uint8Array(this.#flags.length * 2);
      grown.set(this.#flags);
      this.#flags = grown;
    }
    this.#flags[this.#length++] = flag ? 1 : 0;
  }

  pop(): void {
    if (this.#length > 0) this.#length--;
  }

  /** The flag at `depth` (0 for the outermost); false past the top. */
  at(depth: number): boolean {
    return depth < this.#length && this.#flags[depth] === 1;
  }

  /** The innermost flag; false when empty. */
  last(): boolean {
    return this.at(this.#length - 1);
  }
}
