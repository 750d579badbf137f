/**
 * Every string value of a JSON text, in document order, each with the RFC 6901 pointer that names it: the twin
 * of the host's `src/json/strings.rs`. One forward pass with an explicit stack of open containers, never
 * recursion, so an item nested a million deep costs what its text costs and a byte per level of memory.
 *
 * The pointer is kept as the walk goes (a token is added when an entry starts and removed when it ends), but only
 * up to a budget of UTF-8 bytes: a pointer that would be longer keeps its longest prefix of whole tokens that
 * fits and is marked cut. It then names an ancestor of the string. A member name that no pointer can spell (one
 * with an unpaired surrogate escape) cuts the pointer there too.
 */

import { CLOSE_BRACE, CLOSE_BRACKET, COLON, COMMA, OPEN_BRACE, OPEN_BRACKET, QUOTE } from "./scan.js";
import { decodeString, FlagStack, MALFORMED, skipSpace, stringEnd, utf8Length, valueEnd } from "./scan.js";
import type { Malformed, Range } from "./scan.js";

/** The pointer of a string value, as `Strings.pointer` gives it. */
export interface At {
  /** The pointer, or its longest prefix of whole tokens within the budget. */
  pointer: string;
  /** Whether tokens were left off, so that `pointer` names an ancestor of the string. */
  cut: boolean;
}

/** The string values of a JSON text; see the module's documentation. */
export class Strings {
  readonly #text: string;
  /** Where the walk is: the next value, or just past the last one. */
  #at = 0;
  /** Whether `#at` is just past a value (rather than at one that is still to be read). */
  #after = false;
  /** The open containers, outermost first: whether each is an object. */
  readonly #open = new FlagStack();
  /** The pointer's tokens (escaped), one for each of the `kept` outermost open containers' current entries. */
  readonly #tokens: string[] = [];
  /** How many UTF-8 bytes the pointer the tokens spell holds, slashes included. */
  #bytes = 0;
  /** The most bytes the pointer may hold. */
  readonly #budget: number;
  /** How many times the walk has stepped from one token to the next, for the tests' count of work. */
  #steps = 0;

  /** A walk over `text` that keeps pointers of at most `budget` UTF-8 bytes (0 keeps none, Infinity all). */
  constructor(text: string, budget: number) {
    this.#text = text;
    this.#budget = budget;
  }

  /**
   * The next string value: the range of its raw contents (between its quotes, escapes as written), null at the
   * end of the text, or MALFORMED where the text turns out not to be JSON (the walk should not go on after it).
   */
  nextString(): Range | null | Malformed {
    const text = this.#text;
    for (;;) {
      this.#steps++;
      if (this.#after) {
        if (this.#open.length === 0) return null;
        const object = this.#open.last();
        this.#at = skipSpace(text, this.#at);
        const next = text.charCodeAt(this.#at);
        if (next === COMMA) {
          this.#at = skipSpace(text, this.#at + 1);
          if (this.#entry(false) === MALFORMED) return MALFORMED;
          this.#after = false;
        } else if ((next === CLOSE_BRACE && object) || (next === CLOSE_BRACKET && !object)) {
          this.#close();
          this.#at++;
        } else {
          return MALFORMED;
        }
        continue;
      }
      this.#at = skipSpace(text, this.#at);
      const first = text.charCodeAt(this.#at);
      if (first === QUOTE) {
        const end = stringEnd(text, this.#at);
        if (end === undefined) return MALFORMED;
        const contents: Range = [this.#at + 1, end - 1];
        this.#at = end;
        this.#after = true;
        return contents;
      } else if (first === OPEN_BRACE || first === OPEN_BRACKET) {
        const object = first === OPEN_BRACE;
        this.#open.push(object);
        this.#at = skipSpace(text, this.#at + 1);
        if (text.charCodeAt(this.#at) === (object ? CLOSE_BRACE : CLOSE_BRACKET)) {
          this.#open.pop();
          this.#at++;
          this.#after = true;
        } else if (this.#entry(true) === MALFORMED) {
          return MALFORMED;
        }
      } else if (first === 0x2d || (first >= 0x30 && first <= 0x39) || first === 0x74 || first === 0x66 || first === 0x6e) {
        const end = valueEnd(text, this.#at);
        if (end === undefined) return MALFORMED;
        this.#at = end;
        this.#after = true;
      } else {
        return MALFORMED;
      }
    }
  }

  /** The pointer of the string `nextString` returned last. */
  pointer(): At {
    const pointer = this.#tokens.length === 0 ? "" : `/${this.#tokens.join("/")}`;
    return { pointer, cut: this.#tokens.length < this.#open.length };
  }

  /** How many steps the walk has taken; each reads at least one unit, so this stays within the text's length (plus one). */
  get steps(): number {
    return this.#steps;
  }

  /**
   * Starts an entry of the innermost open container at `#at`: reads an object member's name and colon, leaving
   * `#at` at the value, and puts the entry's token in the pointer if it fits.
   */
  #entry(first: boolean): void | Malformed {
    const text = this.#text;
    const depth = this.#open.length;
    const object = this.#open.last();
    // The previous entry's token, if it was kept: an array's gives the next index.
    let previous: number | undefined;
    if (!first && this.#tokens.length === depth) {
      const token = this.#tokens.pop() as string;
      this.#bytes -= 1 + utf8Length(token);
      if (!object) previous = Number(token);
    }
    let name: Range | undefined;
    if (object) {
      if (text.charCodeAt(this.#at) !== QUOTE) return MALFORMED;
      const nameEnd = stringEnd(text, this.#at);
      if (nameEnd === undefined) return MALFORMED;
      name = [this.#at + 1, nameEnd - 1];
      this.#at = skipSpace(text, nameEnd);
      if (text.charCodeAt(this.#at) !== COLON) return MALFORMED;
      this.#at = skipSpace(text, this.#at + 1);
    }
    // Only the innermost container's token can be added, only when every outer one is kept, and only while there
    // is room for more than its slash.
    if (this.#tokens.length + 1 !== depth || this.#bytes >= this.#budget) return;
    let token: string | undefined;
    if (name !== undefined) {
      token = nameToken(text.slice(name[0], name[1]));
    } else if (first) {
      token = "0";
    } else if (previous !== undefined) {
      // An index that didn't fit never fits later: the next one is no shorter.
      token = String(previous + 1);
    }
    if (token === undefined) return;
    const bytes = 1 + utf8Length(token);
    if (this.#bytes + bytes <= this.#budget) {
      this.#tokens.push(token);
      this.#bytes += bytes;
    }
  }

  /** Closes the innermost open container, removing its entry's token if it was kept. */
  #close(): void {
    if (this.#tokens.length === this.#open.length) {
      const token = this.#tokens.pop() as string;
      this.#bytes -= 1 + utf8Length(token);
    }
    this.#open.pop();
  }
}

/**
 * The member name whose raw contents (escapes as written) are `raw`, as a pointer token (`~` and `/` escaped), or
 * undefined if no pointer can spell it (an unpaired surrogate escape).
 */
function nameToken(raw: string): string | undefined {
  const name = raw.includes("\\") ? decodeString(raw) : raw;
  if (name === undefined) return undefined;
  return name.includes("~") || name.includes("/") ? name.replace(/~/g, "~0").replace(/\//g, "~1") : name;
}
