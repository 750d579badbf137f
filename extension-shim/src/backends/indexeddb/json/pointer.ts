/**
 * RFC 6901 JSON pointers, resolved in one forward pass over the text: the twin of the host's
 * `src/json/pointer.rs`.
 *
 * Only the containers on the pointer's path are entered; everything else is skipped with `valueEnd`, so each unit
 * of text is looked at a bounded number of times whatever the nesting depth. If a name appears twice in an object,
 * the pointer names the last one, as a JSON parser that keeps the last duplicate would.
 *
 * The pointer itself is never split up front: its tokens are found as the walk reaches their depth and compared
 * where they lie in the pointer. Memory is a few bytes per level the walk enters, so a pointer of millions of
 * tokens into a shallow item costs nothing, and every comparison of a token with a name or an index stops within
 * the name's length (or 21 digits), however long the token.
 */

import { CLOSE_BRACE, CLOSE_BRACKET, COLON, COMMA, OPEN_BRACE, OPEN_BRACKET, QUOTE } from "./scan.js";
import { decodeString, FlagStack, MALFORMED, skipSpace, stringEnd, valueEnd } from "./scan.js";
import type { Malformed, Range } from "./scan.js";

/** Why a pointer is not a valid RFC 6901 pointer: it is neither empty nor starts with `/`, or has a `~` not followed by `0` or `1`. */
export type PointerError = "noLeadingSlash" | "badEscape";

/** Checks that `pointer` is an RFC 6901 pointer, in one pass: undefined when it is, else why not. */
export function checkPointer(pointer: string): PointerError | undefined {
  if (pointer !== "" && !pointer.startsWith("/")) return "noLeadingSlash";
  for (let at = pointer.indexOf("~"); at >= 0; at = pointer.indexOf("~", at + 1)) {
    const next = pointer.charCodeAt(at + 1);
    if (next !== 0x30 && next !== 0x31) return "badEscape";
  }
  return undefined;
}

/** The tokens of a pointer, found as the walk goes deeper: each slash is looked for once. */
class Tokens {
  readonly #pointer: string;
  /** Where the slashes that start the tokens found so far are. */
  readonly #slashes: number[] = [];
  /** Whether every slash has been found. */
  #allFound: boolean;

  constructor(pointer: string) {
    this.#pointer = pointer;
    this.#allFound = pointer === "";
  }

  /** The range in the pointer of the token at `depth` (0 for the first), escapes as written; undefined past the last. */
  at(depth: number): Range | undefined {
    // A token ends where the next one's slash is, so that one is found too.
    while (this.#slashes.length <= depth + 1 && !this.#allFound) {
      const last = this.#slashes[this.#slashes.length - 1];
      const slash = this.#pointer.indexOf("/", last === undefined ? 0 : last + 1);
      if (slash < 0) this.#allFound = true;
      else this.#slashes.push(slash);
    }
    const slash = this.#slashes[depth];
    if (slash === undefined) return undefined;
    return [slash + 1, this.#slashes[depth + 1] ?? this.#pointer.length];
  }
}

/**
 * Where the value that `pointer` (a valid RFC 6901 pointer, see `checkPointer`) names lies in `text`, or null
 * when nothing is there; MALFORMED if the text breaks off or is not JSON along the way.
 */
export function find(text: string, pointer: string): Range | null | Malformed {
  const start = skipSpace(text, 0);
  const tokens = new Tokens(pointer);
  if (tokens.at(0) === undefined) {
    const end = valueEnd(text, start);
    return end === undefined ? MALFORMED : [start, end];
  }
  // The open containers on the path, outermost first: whether each is an object. Each but the innermost is at
  // the entry the path goes through.
  const path = new FlagStack();
  // How many entries the innermost open container has had.
  let entries = 0;
  let found: Range | null = null;
  let at = start;
  // Whether the value at `at` is the entry the path continues through (true for the root).
  let onPath = true;

  /** Closes the innermost container and sets `entries` to the count of the one around it (see the host's `leave`). */
  const leave = () => {
    path.pop();
    const depth = path.length - 1;
    const token = depth >= 0 && !path.at(depth) ? tokens.at(depth) : undefined;
    const index = token === undefined ? undefined : arrayIndex(pointer, token[0], token[1]);
    entries = index === undefined ? 0 : index + 1;
  };

  /**
   * Reads the start of an entry of the innermost container at `at` (an object member's name and colon; nothing
   * for an array element), leaves `at` at its value, counts it, and says whether the path continues through it.
   */
  const entry = (): boolean | Malformed => {
    const depth = path.length - 1;
    const token = tokens.at(depth) ?? [0, 0];
    let matches: boolean;
    if (path.at(depth)) {
      if (text.charCodeAt(at) !== QUOTE) return MALFORMED;
      const nameEnd = stringEnd(text, at);
      if (nameEnd === undefined) return MALFORMED;
      const nameStart = at;
      at = skipSpace(text, nameEnd);
      if (text.charCodeAt(at) !== COLON) return MALFORMED;
      at = skipSpace(text, at + 1);
      matches = nameIs(text, nameStart, nameEnd, pointer, token);
    } else {
      matches = arrayIndex(pointer, token[0], token[1]) === entries;
    }
    entries++;
    return matches;
  };

  for (;;) {
    const depth = path.length;
    const first = text.charCodeAt(at);
    if (onPath && tokens.at(depth) === undefined) {
      const end = valueEnd(text, at);
      if (end === undefined) return MALFORMED;
      found = [at, end];
      at = end;
    } else if (onPath && (first === OPEN_BRACE || first === OPEN_BRACKET)) {
      path.push(first === OPEN_BRACE);
      entries = 0;
      at = skipSpace(text, at + 1);
      const next = text.charCodeAt(at);
      if (next === CLOSE_BRACE || next === CLOSE_BRACKET) {
        leave();
        at++;
      } else {
        const through = entry();
        if (through === MALFORMED) return MALFORMED;
        onPath = through;
        if (onPath) found = null;
        continue;
      }
    } else {
      const end = valueEnd(text, at);
      if (end === undefined) return MALFORMED;
      at = end;
    }
    // After a value: the next entry of the innermost open container, or its end.
    for (;;) {
      if (path.length === 0) return found;
      const object = path.last();
      at = skipSpace(text, at);
      const next = text.charCodeAt(at);
      if (next === COMMA) {
        at = skipSpace(text, at + 1);
        const through = entry();
        if (through === MALFORMED) return MALFORMED;
        onPath = through;
        // A later entry of the same name replaces what an earlier one led to.
        if (onPath) found = null;
        break;
      } else if ((next === CLOSE_BRACE && object) || (next === CLOSE_BRACKET && !object)) {
        leave();
        at++;
      } else {
        return MALFORMED;
      }
    }
  }
}

/**
 * Whether the JSON string `text[nameStart..nameEnd)` (with its quotes) is the name that the pointer token
 * `pointer[token]` spells (escapes as written). A name with a lone escaped surrogate is valid JSON that no
 * pointer can name, as in the host (whose pointers are Rust strings): it is simply not a match.
 */
function nameIs(text: string, nameStart: number, nameEnd: number, pointer: string, token: Range): boolean {
  const contents = text.slice(nameStart + 1, nameEnd - 1);
  if (!contents.includes("\\")) return tokenIs(pointer, token, contents);
  const name = decodeString(contents);
  return name !== undefined && tokenIs(pointer, token, name);
}

/**
 * Whether the pointer token `pointer[token]` (with `~0` and `~1` escapes) spells `name`. Stops at the first
 * difference, so a long token costs no more than the name it is compared with.
 */
function tokenIs(pointer: string, [start, end]: Range, name: string): boolean {
  let at = start;
  for (let i = 0; i < name.length; i++) {
    if (at >= end) return false;
    let unit = pointer.charCodeAt(at);
    let length = 1;
    if (unit === 0x7e && at + 1 < end) {
      const next = pointer.charCodeAt(at + 1);
      if (next === 0x30 || next === 0x31) {
        unit = next === 0x30 ? 0x7e : 0x2f;
        length = 2;
      }
    }
    if (unit !== name.charCodeAt(i)) return false;
    at += length;
  }
  return at === end;
}

/** The largest array index: the host's indexes are u64. */
const MAX_INDEX = "18446744073709551615";

/**
 * The array index that `text[start..end)` names: decimal, without leading zeros, at most the host's largest
 * (u64) index; undefined otherwise. Longer than any index, it names none, so a long token is turned down at
 * once. Indexes beyond 2^53 come back rounded, which no array reaches.
 */
export function arrayIndex(text: string, start = 0, end = text.length): number | undefined {
  const length = end - start;
  if (length === 0 || length > MAX_INDEX.length) return undefined;
  if (length > 1 && text.charCodeAt(start) === 0x30) return undefined;
  for (let i = start; i < end; i++) {
    const unit = text.charCodeAt(i);
    if (unit < 0x30 || unit > 0x39) return undefined;
  }
  const digits = text.slice(start, end);
  if (length === MAX_INDEX.length && digits > MAX_INDEX) return undefined;
  return Number(digits);
}
