/**
 * Finding things in cached data: the string values that contain every word of a query, each with the JSON pointer
 * that names it and a snippet around the match. The twin of the host's `src/json/search.rs`.
 *
 * Matching ignores case as the host's does: a word matches where it occurs in the text's folded form, in which
 * ASCII letters are compared without case and every other character is lower-cased one scalar value at a time
 * (Rust's `char::to_lowercase`, so `Σ` is always `σ`, never a final `ς`), unless that would make it ASCII or
 * several characters (`İ` and the Kelvin sign stay as they are, and so do `ﬃ`-like letters whose lower case is
 * several). A query is at most MAX_QUERY_WORDS words and MAX_QUERY_BYTES bytes.
 *
 * Every string is read a bounded number of times whatever the query: the words are found together in one pass of
 * an Aho-Corasick automaton (a DFA over the words' code units, ASCII case folded into it), and non-ASCII text is
 * folded as it is read, never copied. A whole item can first be screened on its raw text (`mightMatch`), so items
 * that can't match are never walked; the walk itself is `Strings`, one pass however deep.
 *
 * Where the twin leans on the JS engine: lower-casing a non-ASCII character uses `toLowerCase` on that one
 * character, which follows the engine's Unicode version; Rust's follows the host compiler's. They agree on every
 * character where both versions do (checked over the whole range in the tests).
 */

import { MAX_QUERY_BYTES, MAX_QUERY_WORDS, MAX_SEARCH_POINTER_BYTES } from "../../../protocol.js";
import { decodeString, isHighSurrogate, isLowSurrogate, MALFORMED, scalarCount, utf8Length } from "./scan.js";
import { Strings } from "./strings.js";

/** The most characters of a snippet. */
export const MAX_SNIPPET_CHARS = 160;

/** Why a query can't be used: no words, more than MAX_QUERY_WORDS (`count` words), or more than MAX_QUERY_BYTES (`count` bytes). */
export interface QueryError {
  error: "noWords" | "tooManyWords" | "tooLong";
  count: number;
}

/** One matching string value. */
export interface Found {
  /** The RFC 6901 pointer to the string value, or its longest prefix of whole tokens within MAX_SEARCH_POINTER_BYTES. */
  pointer: string;
  /** Whether `pointer` was cut, so that it names an ancestor of the string. */
  pointerCut: boolean;
  /** At most MAX_SNIPPET_CHARS characters around the first word's first occurrence. */
  snippet: string;
}

/** A query: the words to find, and the automaton that finds them all in one pass. */
export class Query {
  /**
   * The words to look for, folded, first word first, repeats and words inside other words left out (finding the
   * longer word finds them too), except the first, which places the snippet.
   */
  readonly words: readonly string[];
  readonly #finder: Finder;
  /** Whether some word has non-ASCII text, so that non-ASCII texts must be folded to compare. */
  readonly #folds: boolean;
  /**
   * The words (as bits) that can be looked for in raw JSON text: those whose characters no escape but `\u` can
   * stand for. Text without `\u` that lacks one of them can't match.
   */
  readonly #screened: number;
  /** Every word's bit. */
  readonly #all: number;

  private constructor(words: string[]) {
    this.words = words;
    this.#finder = new Finder(words);
    this.#folds = words.some((word) => !isAscii(word));
    const screenable = (word: string) => [...word].every((c) => c > " " && c <= "~" && c !== '"' && c !== "\\" && c !== "/");
    this.#screened = words.reduce((bits, word, i) => (screenable(word) ? bits | (1 << i) : bits), 0);
    this.#all = (2 ** words.length - 1) | 0;
  }

  /**
   * The query whose words `text` holds, split at white space (Rust's `split_whitespace`), or why it can't be
   * one. The limits are checked before anything else is done with the text.
   */
  static parse(text: string): Query | QueryError {
    const bytes = utf8Length(text);
    if (bytes > MAX_QUERY_BYTES) return { error: "tooLong", count: bytes };
    const split = splitWhitespace(text);
    if (split.length > MAX_QUERY_WORDS) return { error: "tooManyWords", count: split.length };
    const words: string[] = [];
    for (const word of split.map(foldWord)) {
      if (!words.includes(word)) words.push(word);
    }
    const [first, ...rest] = words;
    if (first === undefined) return { error: "noWords", count: 0 };
    // At most one kept word ends at any one place (the shorter of two would lie inside the longer), two with the
    // first word: the pass reports a bounded number of matches per unit of text.
    const insideAnother = (word: string) => words.some((other) => other !== word && other.includes(word));
    return new Query([first, ...rest.filter((word) => !insideAnother(word))]);
  }

  /** Whether the text holds every word, ignoring case. */
  matches(text: string): boolean {
    const together = this.together();
    together.add(text);
    return together.all();
  }

  /** A test of several texts taken together: every word must be in one of them. */
  together(): Together {
    return new Together((text, wanted) => this.#finder.holds(text, wanted, this.#folds).found, this.#all);
  }

  /**
   * False only when the raw JSON text `data` surely holds no match: some word that no escape but `\u` can stand
   * for is missing from it. (Escapes such as `\u0041` could hide any word, so text with `\u` is never ruled out.)
   */
  mightMatch(data: string): boolean {
    if (this.#screened === 0 || data.includes("\\u")) return true;
    const { found } = this.#finder.holds(data, this.#screened, false);
    return (found & this.#screened) === this.#screened;
  }

  /**
   * The string whose raw contents (between its quotes, escapes as written) are `raw`, decoded, and the index (in
   * characters) where the first word first occurs in it, if the string holds every word.
   */
  firstMatch(raw: string): { text: string; at: number } | undefined {
    // Text that needs decoding or folding is screened on its raw text first.
    const copies = raw.includes("\\") || (this.#folds && !isAscii(raw));
    if (copies && !this.mightMatch(raw)) return undefined;
    // A string with a lone escaped surrogate, which the host can't decode, is searched as written, as there.
    const text = decodeString(raw) ?? raw;
    const { found, first } = this.#finder.holds(text, this.#all, this.#folds);
    if (found !== this.#all) return undefined;
    return { text, at: Math.max(first, 0) };
  }
}

/** Several texts tested together against a query, as `Query.together` makes. */
export class Together {
  readonly #holds: (text: string, wanted: number) => number;
  readonly #all: number;
  /** The words found so far, as bits. */
  #found = 0;

  constructor(holds: (text: string, wanted: number) => number, all: number) {
    this.#holds = holds;
    this.#all = all;
  }

  /** Adds a text, which is read only if some word is still missing. */
  add(text: string): void {
    if (this.#found === this.#all) return;
    this.#found |= this.#holds(text, this.#all & ~this.#found);
  }

  /**
   * Adds every string value of the JSON text `json`, in one pass however deep it nests. Malformed text adds the
   * strings before the fault.
   */
  addStrings(json: string): void {
    const strings = new Strings(json, 0);
    for (;;) {
      const next = strings.nextString();
      if (next === null || next === MALFORMED || this.all()) return;
      const raw = json.slice(next[0], next[1]);
      this.add(decodeString(raw) ?? raw);
    }
  }

  /** Whether every word was found. */
  all(): boolean {
    return this.#found === this.#all;
  }
}

/**
 * The string values of the JSON `data` that match `query`, in document order, after skipping `skip` of them; at
 * most `max`. `more` says whether more matches follow. Undefined if the text is malformed.
 */
export function findIn(data: string, query: Query, skip: number, max: number): { found: Found[]; more: boolean } | undefined {
  const strings = new Strings(data, MAX_SEARCH_POINTER_BYTES);
  const found: Found[] = [];
  for (;;) {
    const next = strings.nextString();
    if (next === MALFORMED) return undefined;
    if (next === null) return { found, more: false };
    const match = query.firstMatch(data.slice(next[0], next[1]));
    if (match === undefined) continue;
    if (skip > 0) {
      skip--;
      continue;
    }
    if (found.length === max) return { found, more: true };
    const at = strings.pointer();
    found.push({ pointer: at.pointer, pointerCut: at.cut, snippet: snippet(match.text, match.at) });
  }
}

/**
 * Finds every word in one pass: an Aho-Corasick automaton over the folded words' UTF-16 code units, as a DFA
 * (one table lookup per unit), with ASCII letters of either case in one class and every unit no word holds in
 * another. A query has at most 512 bytes, so at most 513 states and 513 classes.
 */
class Finder {
  /** The class of each ASCII unit (0: in no word). */
  readonly #ascii = new Int32Array(128);
  /** The class of each non-ASCII unit some word holds. */
  readonly #wide = new Map<number, number>();
  readonly #classes: number;
  /** The DFA: the state after `state` reads a unit of class `c` is `#next[state * #classes + c]`. */
  readonly #next: Int32Array;
  /** The word that ends at each state, or -1. */
  readonly #word: Int32Array;
  /** The nearest state for a proper suffix of each state's text at which a word ends, or -1. */
  readonly #link: Int32Array;
  /** Whether any word ends at a state or at one its links lead to. */
  readonly #reports: Uint8Array;
  /** How many characters the first word has: where it starts is where it ends minus this. */
  readonly #firstChars: number;

  constructor(words: readonly string[]) {
    let classes = 1;
    for (const word of words) {
      for (let i = 0; i < word.length; i++) {
        const unit = word.charCodeAt(i);
        if (unit < 128 ? this.#ascii[unit] === 0 : !this.#wide.has(unit)) {
          if (unit < 128) this.#ascii[unit] = classes++;
          else this.#wide.set(unit, classes++);
        }
      }
    }
    // Words are folded, so their letters are lower case: the text's upper case letters read as the same class.
    for (let unit = 0x41; unit <= 0x5a; unit++) this.#ascii[unit] = this.#ascii[unit + 0x20]!;
    this.#classes = classes;

    // The trie of the words.
    const children: Map<number, number>[] = [new Map()];
    const wordAt: number[] = [-1];
    words.forEach((word, w) => {
      let state = 0;
      for (let i = 0; i < word.length; i++) {
        const c = this.#class(word.charCodeAt(i));
        let child = children[state]!.get(c);
        if (child === undefined) {
          child = children.length;
          children.push(new Map());
          wordAt.push(-1);
          children[state]!.set(c, child);
        }
        state = child;
      }
      wordAt[state] = w;
    });

    // Breadth first: each state's failure (its longest proper suffix that is a trie state) is known before its
    // children's, so its DFA row and links can be filled in from the failure's.
    const states = children.length;
    this.#next = new Int32Array(states * classes);
    this.#word = Int32Array.from(wordAt);
    this.#link = new Int32Array(states).fill(-1);
    this.#reports = new Uint8Array(states);
    const fail = new Int32Array(states);
    const queue = [0];
    for (let head = 0; head < queue.length; head++) {
      const state = queue[head]!;
      for (let c = 0; c < classes; c++) {
        const child = c === 0 ? undefined : children[state]!.get(c);
        const viaFailure = state === 0 ? 0 : this.#next[fail[state]! * classes + c]!;
        if (child === undefined) {
          this.#next[state * classes + c] = viaFailure;
          continue;
        }
        this.#next[state * classes + c] = child;
        const suffix = state === 0 ? 0 : viaFailure;
        fail[child] = suffix;
        this.#link[child] = this.#word[suffix]! >= 0 ? suffix : this.#link[suffix]!;
        this.#reports[child] = this.#word[child]! >= 0 || this.#link[child]! >= 0 ? 1 : 0;
        queue.push(child);
      }
    }
    this.#firstChars = scalarCount(words[0] ?? "");
  }

  #class(unit: number): number {
    return unit < 128 ? this.#ascii[unit]! : (this.#wide.get(unit) ?? 0);
  }

  /**
   * The words `text` holds (as bits), looking no further once it holds every word in `wanted`, and the index in
   * characters where the first word first starts in `text` (-1 if it wasn't found). `fold` folds non-ASCII
   * characters as they are read; ASCII case is the automaton's.
   */
  holds(text: string, wanted: number, fold: boolean): { found: number; first: number } {
    const [classes, next, ascii, word, link, reports] = [this.#classes, this.#next, this.#ascii, this.#word, this.#link, this.#reports];
    let state = 0;
    let found = 0;
    let first = -1;
    let chars = 0;
    for (let i = 0; i < text.length; ) {
      let unit = text.charCodeAt(i++);
      if (unit < 128) {
        state = next[state * classes + ascii[unit]!]!;
      } else {
        let char = unit;
        if (isHighSurrogate(unit) && isLowSurrogate(text.charCodeAt(i))) {
          char = (unit - 0xd800) * 0x400 + (text.charCodeAt(i++) - 0xdc00) + 0x10000;
        }
        if (fold) char = foldChar(char);
        if (char > 0xffff) {
          unit = 0xd800 + ((char - 0x10000) >> 10);
          state = next[state * classes + this.#class(unit)]!;
          unit = 0xdc00 + ((char - 0x10000) & 0x3ff);
        } else {
          unit = char;
        }
        state = next[state * classes + this.#class(unit)]!;
      }
      chars++;
      // A word ends only after a whole character: no word ends in half a surrogate pair.
      if (reports[state] === 0) continue;
      for (let at = word[state]! >= 0 ? state : link[state]!; at >= 0; at = link[at]!) {
        const bit = 1 << word[at]!;
        if ((found & bit) !== 0) continue;
        found |= bit;
        if (bit === 1) first = chars - this.#firstChars;
        if ((found & wanted) === wanted) return { found, first };
      }
    }
    return { found, first };
  }
}

/** Folds of BMP characters looked up so far (0: not yet), made on first use. */
let bmpFolds: Int32Array | undefined;
/** Folds of astral characters, each in the slot its code point modulo 512 names, as pairs of character and fold. */
const astralFolds = new Int32Array(1024);

/** `char` folded: ASCII lower-cased, anything else as `lower` says. Remembered, since looking one up costs a string. */
export function foldChar(char: number): number {
  if (char < 0x80) return char >= 0x41 && char <= 0x5a ? char + 0x20 : char;
  if (char <= 0xffff) {
    bmpFolds ??= new Int32Array(0x10000);
    let folded = bmpFolds[char]!;
    if (folded === 0) folded = bmpFolds[char] = lower(char);
    return folded;
  }
  const slot = (char % 512) * 2;
  if (astralFolds[slot] !== char) {
    astralFolds[slot] = char;
    astralFolds[slot + 1] = lower(char);
  }
  return astralFolds[slot + 1]!;
}

/**
 * `char` lower-cased, unless that would make it ASCII or more than one character: only İ (to `i` and a
 * combining dot) and the Kelvin sign (to `k`) would turn ASCII, as a test checks, and they stay as they are.
 * One character at a time, as Rust's `char::to_lowercase`: a lone `Σ` has no final form.
 */
export function lower(char: number): number {
  const lowered = String.fromCodePoint(char).toLowerCase();
  const first = lowered.codePointAt(0) ?? char;
  const single = lowered.length === (first > 0xffff ? 2 : 1);
  return single && first >= 0x80 ? first : char;
}

/** A query word folded, ASCII letters lower-cased too, so that repeats are found whatever their case. */
export function foldWord(word: string): string {
  let out = "";
  for (const c of word) out += String.fromCodePoint(foldChar(c.codePointAt(0)!));
  return out;
}

/** The characters Rust's `char::is_whitespace` takes for white space (Unicode's White_Space; not JS's `\s`). */
export function isRustWhitespace(unit: number): boolean {
  return (
    (unit >= 0x09 && unit <= 0x0d) ||
    unit === 0x20 ||
    unit === 0x85 ||
    unit === 0xa0 ||
    unit === 0x1680 ||
    (unit >= 0x2000 && unit <= 0x200a) ||
    unit === 0x2028 ||
    unit === 0x2029 ||
    unit === 0x202f ||
    unit === 0x205f ||
    unit === 0x3000
  );
}

/** The words of `text`, split at white space as Rust's `split_whitespace` does. */
function splitWhitespace(text: string): string[] {
  const words: string[] = [];
  let start = -1;
  for (let i = 0; i <= text.length; i++) {
    const space = i === text.length || isRustWhitespace(text.charCodeAt(i));
    if (space && start >= 0) {
      words.push(text.slice(start, i));
      start = -1;
    } else if (!space && start < 0) {
      start = i;
    }
  }
  return words;
}

function isAscii(text: string): boolean {
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) >= 0x80) return false;
  return true;
}

/** At most MAX_SNIPPET_CHARS characters of `text` around the character at index `at`, marked with `…` where cut. */
export function snippet(text: string, at: number): string {
  const total = scalarCount(text);
  if (total <= MAX_SNIPPET_CHARS) return text;
  const room = MAX_SNIPPET_CHARS - 2;
  const start = Math.min(Math.max(at - Math.floor(room / 3), 0), total - room);
  const from = unitIndex(text, 0, start);
  const to = unitIndex(text, from, room);
  return `${start > 0 ? "…" : ""}${text.slice(from, to)}${start + room < total ? "…" : ""}`;
}

/** The index of the unit `chars` characters after index `from`. */
function unitIndex(text: string, from: number, chars: number): number {
  let at = from;
  for (let n = 0; n < chars && at < text.length; n++) {
    at += isHighSurrogate(text.charCodeAt(at)) && isLowSurrogate(text.charCodeAt(at + 1)) ? 2 : 1;
  }
  return at;
}
