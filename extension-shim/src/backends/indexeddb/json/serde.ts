/**
 * serde_json's reading of JSON text, as far as the host reads requests with it: the parts of serde_json 1.0 the
 * host uses (a struct of optional raw values, unknown fields skipped, a field given twice refused, a raw value
 * alone), down to its error texts. The host's error replies quote serde's messages ("invalid JSON: expected `,` or
 * `}` at line 1 column 17"), so message.ts reads a request with this and answers as the host does, word for word.
 * The host has no twin of this file: serde_json is a crate it depends on.
 *
 * Unlike the rest of json/, it walks the text's UTF-8 bytes, not its UTF-16 units, so that columns count bytes as
 * serde's do; the bytes it looks for are ASCII, the same in both, so it shares scan.ts's names for them. Like serde's
 * skipping of values, it is one pass with an explicit stack (a byte per level), so a request nested a million deep
 * costs a megabyte, not the call stack.
 */

import { BACKSLASH, CLOSE_BRACE, CLOSE_BRACKET, COLON, COMMA, FlagStack, isSpace, OPEN_BRACE, OPEN_BRACKET, QUOTE } from "./scan.js";

/** A range of the text's UTF-8 bytes: `[start, end)`. */
export type ByteRange = readonly [start: number, end: number];

/**
 * UTF-8 back to text, every character kept: a `TextDecoder` drops a byte order mark at the start of what it
 * decodes unless told `ignoreBOM`, and a member name or value that starts with one (`"\ufeffop"`) must stay the
 * name serde_json reads, which is not `op`. The bytes are a well-formed string's own UTF-8, so nothing is replaced.
 */
const UTF8 = new TextDecoder("utf-8", { ignoreBOM: true });

export function decodeUtf8(bytes: Uint8Array, start: number, end: number): string {
  return UTF8.decode(bytes.subarray(start, end));
}

/** serde_json's syntax errors, by the text its `Display` gives them. */
const SYNTAX = {
  eofList: "EOF while parsing a list",
  eofObject: "EOF while parsing an object",
  eofString: "EOF while parsing a string",
  eofValue: "EOF while parsing a value",
  colon: "expected `:`",
  listCommaOrEnd: "expected `,` or `]`",
  objectCommaOrEnd: "expected `,` or `}`",
  ident: "expected ident",
  value: "expected value",
  escape: "invalid escape",
  number: "invalid number",
  control: "control character (\\u0000-\\u001F) found while parsing a string",
  keyString: "key must be a string",
  loneLeading: "lone leading surrogate in hex escape",
  trailingComma: "trailing comma",
  trailing: "trailing characters",
  hexEnd: "unexpected end of hex escape",
} as const;

/** A serde_json error, its message as serde's `Display` writes it ("... at line 1 column 5"). */
class SerdeError extends Error {}

/** An error of serde's that has no position yet (a duplicate field): serde gives it the reader's. */
class Positionless extends Error {}

/** The message of a serde_json error; anything else thrown is thrown on. */
export function serdeMessage(error: unknown): string {
  if (error instanceof SerdeError) return error.message;
  throw error;
}

function isDigit(byte: number): boolean {
  return byte >= 0x30 && byte <= 0x39;
}

function isHexDigit(byte: number): boolean {
  return isDigit(byte) || (byte >= 0x61 && byte <= 0x66) || (byte >= 0x41 && byte <= 0x46);
}

/**
 * serde_json's `Deserializer` over a `SliceRead`, as far as the host uses it. Every method is the function of the
 * same job in serde_json 1.0's de.rs and read.rs, down to which byte an error is reported at: `error` where the
 * reader is (after the byte it took), `peekError` one byte further (at the byte it looked at).
 */
export class Serde {
  readonly #bytes: Uint8Array;
  #index = 0;

  constructor(bytes: Uint8Array) {
    this.#bytes = bytes;
  }

  /** The range of the one JSON value the text holds, as `serde_json::from_str::<&RawValue>` finds it. */
  rawValue(): ByteRange {
    this.#whitespace();
    const start = this.#index;
    this.#ignoreValue();
    const end = this.#index;
    this.#end();
    return [start, end];
  }

  /**
   * The text as a struct whose fields are `known`, each an `Option<&RawValue>`: each known field's value range
   * (null for JSON `null`), as serde's derived `Deserialize` reads it, then `end()`. `fromSeq` lets a one-element
   * array fill a one-field struct, as serde does.
   */
  struct(known: ReadonlySet<string>, fromSeq: boolean): Map<string, ByteRange | null> {
    const peek = this.#whitespace();
    if (peek < 0) throw this.#peekError(SYNTAX.eofValue);
    let fields: Map<string, ByteRange | null>;
    if (peek === OPEN_BRACE) {
      this.#index++;
      let failed: unknown;
      let read = new Map<string, ByteRange | null>();
      try {
        read = this.#map(known);
      } catch (error) {
        failed = error;
      }
      // serde ends the map even after a failure, and only then places an error that has no position.
      let ended: unknown;
      try {
        this.#endMap();
      } catch (error) {
        ended = error;
      }
      if (failed instanceof Positionless) throw this.#error(failed.message);
      if (failed !== undefined) throw failed;
      if (ended !== undefined) throw ended;
      fields = read;
    } else if (peek === OPEN_BRACKET && fromSeq) {
      this.#index++;
      fields = this.#oneElement(known);
    } else {
      throw this.#peekError(SYNTAX.value);
    }
    this.#end();
    return fields;
  }

  /** `visit_map` of a derived struct: known fields read as raw values (a second one refused), others skipped. */
  #map(known: ReadonlySet<string>): Map<string, ByteRange | null> {
    const fields = new Map<string, ByteRange | null>();
    let first = true;
    for (;;) {
      const peek = this.#whitespace();
      if (peek < 0) throw this.#peekError(SYNTAX.eofObject);
      if (peek === CLOSE_BRACE) return fields;
      if (first) {
        first = false;
        if (peek !== QUOTE) throw this.#peekError(SYNTAX.keyString);
      } else if (peek === COMMA) {
        this.#index++;
        const next = this.#whitespace();
        if (next === CLOSE_BRACE) throw this.#peekError(SYNTAX.trailingComma);
        if (next < 0) throw this.#peekError(SYNTAX.eofValue);
        if (next !== QUOTE) throw this.#peekError(SYNTAX.keyString);
      } else {
        throw this.#peekError(SYNTAX.objectCommaOrEnd);
      }
      this.#index++;
      const name = this.#key();
      const isKnown = known.has(name);
      if (isKnown && fields.has(name)) throw new Positionless(`duplicate field \`${name}\``);
      const colon = this.#whitespace();
      if (colon < 0) throw this.#peekError(SYNTAX.eofObject);
      if (colon !== COLON) throw this.#peekError(SYNTAX.colon);
      this.#index++;
      if (isKnown) fields.set(name, this.#optionalRaw());
      else this.#ignoreValue();
    }
  }

  /** `visit_seq` of a one-field struct, then `end_seq`. */
  #oneElement(known: ReadonlySet<string>): Map<string, ByteRange | null> {
    const peek = this.#whitespace();
    if (peek < 0) throw this.#peekError(SYNTAX.eofList);
    // An empty array is too short for the struct.
    if (peek === CLOSE_BRACKET) throw new SerdeError("invalid length 0");
    const fields = new Map<string, ByteRange | null>();
    const [name] = known;
    fields.set(name ?? "", this.#optionalRaw());
    const after = this.#whitespace();
    if (after === CLOSE_BRACKET) {
      this.#index++;
    } else if (after === COMMA) {
      this.#index++;
      throw this.#peekError(this.#whitespace() === CLOSE_BRACKET ? SYNTAX.trailingComma : SYNTAX.trailing);
    } else {
      throw this.#peekError(after < 0 ? SYNTAX.eofList : SYNTAX.listCommaOrEnd);
    }
    return fields;
  }

  /** `Option<&RawValue>`: `null` is none, anything else its range. */
  #optionalRaw(): ByteRange | null {
    if (this.#whitespace() === 0x6e) {
      this.#index++;
      this.#ident("ull");
      return null;
    }
    const start = this.#index;
    this.#ignoreValue();
    return [start, this.#index];
  }

  /** A map key: the string whose opening quote was just taken, checked as serde's `parse_str` checks it, decoded. */
  #key(): string {
    const start = this.#index;
    let escaped = false;
    for (;;) {
      this.#skipToEscape();
      if (this.#index === this.#bytes.length) throw this.#error(SYNTAX.eofString);
      const byte = this.#bytes[this.#index] ?? 0;
      if (byte === QUOTE) {
        const raw = decodeUtf8(this.#bytes, start, this.#index);
        this.#index++;
        return escaped ? (JSON.parse(`"${raw}"`) as string) : raw;
      }
      this.#index++;
      if (byte !== BACKSLASH) throw this.#error(SYNTAX.control);
      escaped = true;
      this.#escape(true);
    }
  }

  /** `ignore_value`: one value skipped, its nesting kept on a stack of a byte per level. */
  #ignoreValue(): void {
    const stack = new FlagStack();
    // The container the value just read is in, when it is not on the stack yet (serde's `enclosing`).
    let enclosing: boolean | undefined;
    for (;;) {
      const peek = this.#whitespace();
      if (peek < 0) throw this.#peekError(SYNTAX.eofValue);
      let opened: boolean | undefined;
      switch (peek) {
        case 0x6e:
          this.#index++;
          this.#ident("ull");
          break;
        case 0x74:
          this.#index++;
          this.#ident("rue");
          break;
        case 0x66:
          this.#index++;
          this.#ident("alse");
          break;
        case 0x2d:
          this.#index++;
          this.#integer();
          break;
        case QUOTE:
          this.#index++;
          this.#ignoreString();
          break;
        case OPEN_BRACKET:
        case OPEN_BRACE:
          if (enclosing !== undefined) stack.push(enclosing);
          enclosing = undefined;
          this.#index++;
          opened = peek === OPEN_BRACE;
          break;
        default:
          if (!isDigit(peek)) throw this.#peekError(SYNTAX.value);
          this.#integer();
      }
      // Whether the container `isObject` takes a comma next (a value was just read in it) or not (just opened).
      let acceptComma: boolean;
      let isObject: boolean;
      if (opened !== undefined) {
        [acceptComma, isObject] = [false, opened];
      } else if (enclosing !== undefined) {
        [acceptComma, isObject] = [true, enclosing];
        enclosing = undefined;
      } else if (stack.length > 0) {
        [acceptComma, isObject] = [true, stack.last()];
        stack.pop();
      } else {
        return;
      }
      for (;;) {
        const next = this.#whitespace();
        if (next === COMMA && acceptComma) {
          this.#index++;
          break;
        }
        const closes = next === (isObject ? CLOSE_BRACE : CLOSE_BRACKET);
        if (!closes) {
          if (next < 0) throw this.#peekError(isObject ? SYNTAX.eofObject : SYNTAX.eofList);
          if (acceptComma) throw this.#peekError(isObject ? SYNTAX.objectCommaOrEnd : SYNTAX.listCommaOrEnd);
          break;
        }
        this.#index++;
        if (stack.length === 0) return;
        isObject = stack.last();
        stack.pop();
        acceptComma = true;
      }
      if (isObject) {
        const quote = this.#whitespace();
        if (quote < 0) throw this.#peekError(SYNTAX.eofObject);
        if (quote !== QUOTE) throw this.#peekError(SYNTAX.keyString);
        this.#index++;
        this.#ignoreString();
        const colon = this.#whitespace();
        if (colon < 0) throw this.#peekError(SYNTAX.eofObject);
        if (colon !== COLON) throw this.#peekError(SYNTAX.colon);
        this.#index++;
      }
      enclosing = isObject;
    }
  }

  /** `ignore_integer` and the fraction and exponent after it. */
  #integer(): void {
    const first = this.#nextOrNull();
    if (first === 0x30) {
      // There can be only one leading '0'.
      if (isDigit(this.#peekOrNull())) throw this.#peekError(SYNTAX.number);
    } else if (first >= 0x31 && first <= 0x39) {
      while (isDigit(this.#peekOrNull())) this.#index++;
    } else {
      throw this.#error(SYNTAX.number);
    }
    let next = this.#peekOrNull();
    if (next === 0x2e) {
      this.#index++;
      let digits = false;
      while (isDigit(this.#peekOrNull())) {
        this.#index++;
        digits = true;
      }
      if (!digits) throw this.#peekError(SYNTAX.number);
      next = this.#peekOrNull();
    }
    if (next === 0x65 || next === 0x45) {
      this.#index++;
      const sign = this.#peekOrNull();
      if (sign === 0x2b || sign === 0x2d) this.#index++;
      if (!isDigit(this.#nextOrNull())) throw this.#error(SYNTAX.number);
      while (isDigit(this.#peekOrNull())) this.#index++;
    }
  }

  /** `ignore_str`: the rest of a string whose opening quote was taken, escapes checked but not decoded. */
  #ignoreString(): void {
    for (;;) {
      this.#skipToEscape();
      if (this.#index === this.#bytes.length) throw this.#error(SYNTAX.eofString);
      const byte = this.#bytes[this.#index] ?? 0;
      if (byte === QUOTE) {
        this.#index++;
        return;
      }
      if (byte !== BACKSLASH) throw this.#error(SYNTAX.control);
      this.#index++;
      this.#escape(false);
    }
  }

  /**
   * The escape after a backslash just taken. `validate` is serde's `parse_str` (a key, decoded: surrogate escapes
   * must pair); otherwise its `ignore_escape`, which only reads the four hex digits.
   */
  #escape(validate: boolean): void {
    const char = this.#next();
    if (char < 0) throw this.#error(SYNTAX.eofString);
    if (char === 0x75) {
      const code = this.#hex();
      if (validate) this.#surrogates(code);
    } else if (!'"\\/bfnrt'.includes(String.fromCharCode(char))) {
      throw this.#error(SYNTAX.escape);
    }
  }

  /** `parse_unicode_escape`'s checks of the escape `\uXXXX` just read as `code`: a surrogate must be a pair. */
  #surrogates(code: number): void {
    if (code >= 0xdc00 && code <= 0xdfff) throw this.#error(SYNTAX.loneLeading);
    if (code < 0xd800 || code > 0xdbff) return;
    for (const expected of [BACKSLASH, 0x75]) {
      if (this.#index === this.#bytes.length) throw this.#error(SYNTAX.eofString);
      const found = this.#bytes[this.#index];
      this.#index++;
      if (found !== expected) throw this.#error(SYNTAX.hexEnd);
    }
    const low = this.#hex();
    if (low < 0xdc00 || low > 0xdfff) throw this.#error(SYNTAX.loneLeading);
  }

  /** `decode_hex_escape`: four hex digits. */
  #hex(): number {
    if (this.#index + 4 > this.#bytes.length) {
      this.#index = this.#bytes.length;
      throw this.#error(SYNTAX.eofString);
    }
    const digits = this.#bytes.subarray(this.#index, this.#index + 4);
    this.#index += 4;
    if (!digits.every(isHexDigit)) throw this.#error(SYNTAX.escape);
    return parseInt(String.fromCharCode(...digits), 16);
  }

  /** `skip_to_escape`: to the next quote, backslash or control character. */
  #skipToEscape(): void {
    const bytes = this.#bytes;
    let at = this.#index;
    while (at < bytes.length) {
      const byte = bytes[at] ?? 0;
      if (byte === QUOTE || byte === BACKSLASH || byte < 0x20) break;
      at++;
    }
    this.#index = at;
  }

  /** `parse_ident`: the rest of `null`, `true` or `false`. */
  #ident(rest: string): void {
    for (let i = 0; i < rest.length; i++) {
      const byte = this.#next();
      if (byte < 0) throw this.#error(SYNTAX.eofValue);
      if (byte !== rest.charCodeAt(i)) throw this.#error(SYNTAX.ident);
    }
  }

  /** `end_map`. */
  #endMap(): void {
    const peek = this.#whitespace();
    if (peek === CLOSE_BRACE) {
      this.#index++;
      return;
    }
    if (peek < 0) throw this.#peekError(SYNTAX.eofObject);
    throw this.#peekError(peek === COMMA ? SYNTAX.trailingComma : SYNTAX.trailing);
  }

  /** `end`: nothing but white space may follow the value. */
  #end(): void {
    if (this.#whitespace() >= 0) throw this.#peekError(SYNTAX.trailing);
  }

  /** `parse_whitespace`: JSON's white space skipped, the next byte (-1 at the end) not taken. */
  #whitespace(): number {
    for (;;) {
      const byte = this.#peek();
      if (!isSpace(byte)) return byte;
      this.#index++;
    }
  }

  #peek(): number {
    return this.#index < this.#bytes.length ? (this.#bytes[this.#index] ?? -1) : -1;
  }

  #peekOrNull(): number {
    return Math.max(this.#peek(), 0);
  }

  #next(): number {
    const byte = this.#peek();
    if (byte >= 0) this.#index++;
    return byte;
  }

  #nextOrNull(): number {
    return Math.max(this.#next(), 0);
  }

  /** An error at the reader's position. */
  #error(message: string): SerdeError {
    return this.#at(message, this.#index);
  }

  /** An error at the byte after the reader's position: the byte it peeked at. */
  #peekError(message: string): SerdeError {
    return this.#at(message, Math.min(this.#bytes.length, this.#index + 1));
  }

  /** serde's `position_of_index`: lines from 1, columns in bytes from the line's start. */
  #at(message: string, index: number): SerdeError {
    let line = 1;
    let lineStart = 0;
    for (let at = this.#bytes.indexOf(0x0a); at >= 0 && at < index; at = this.#bytes.indexOf(0x0a, at + 1)) {
      line++;
      lineStart = at + 1;
    }
    return new SerdeError(`${message} at line ${line} column ${index - lineStart}`);
  }
}
