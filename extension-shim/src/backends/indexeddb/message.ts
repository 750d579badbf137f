/**
 * A request as it arrives, and the reply's envelope: the twin of the host's `src/message.rs`. The request's JSON
 * text is read once into `Fields`, each known field kept as the raw JSON text the client sent (JSON `null` reads as
 * absent), and typed getters turn a missing or mistyped field into the host's `InvalidRequestError`, word for word.
 *
 * Replies are written as text, piece by piece, in the host's key order, because serde writes them that way and
 * answers must match the host's byte for byte: stored data and customMetadata go in as the text they were stored
 * as, request ids as the client spelled them, and strings escaped as serde_json escapes them.
 *
 * The host reads requests with serde_json, and its error replies quote serde's messages ("invalid JSON: expected
 * `,` or `}` at line 1 column 17"), so this module reads the text exactly as serde_json 1.0 does (the parts of it
 * the host uses: a struct of optional raw values, unknown fields skipped, a field given twice refused), over the
 * text's UTF-8 bytes so that columns count bytes as serde's do. Like serde's skipping of values, it is one pass
 * with an explicit stack (a byte per level), so a request nested a million deep costs a megabyte, not the stack.
 */

import { CONTROL_CHARACTER, MAX_ID_BYTES } from "../../protocol.js";
import { decodeString, FlagStack, members, skipSpace, utf8Length } from "./json/index.js";
import { Digits, HostError, jsonTypeName } from "./error.js";

/** The protocol's request fields, as serde names them (`rename_all = "camelCase"`), in the host's order. */
export const FIELD_NAMES = [
  "id",
  "op",
  "sessionId",
  "taskId",
  "turnId",
  "storageKey",
  "data",
  "description",
  "customMetadata",
  "pointer",
  "limit",
  "offset",
  "maxBytes",
  "encodings",
  "storageKeys",
  "query",
  "cursor",
] as const;

export type FieldName = (typeof FIELD_NAMES)[number];

/** A request's fields, each the raw JSON text the client sent; absent when missing or `null`. */
export type Fields = { [name in FieldName]?: string };

const KNOWN_FIELDS: ReadonlySet<string> = new Set(FIELD_NAMES);
const ID_ONLY: ReadonlySet<string> = new Set(["id"]);

/**
 * Reads a request's JSON text.
 *
 * @throws HostError `InvalidRequestError` if the text is not UTF-8 (holds a lone surrogate, which has no UTF-8
 * form), not JSON, not one object, or names a field twice.
 */
export function parseFields(text: string): Fields {
  const notUtf8 = loneSurrogateAt(text);
  if (notUtf8 !== undefined) {
    throw new HostError(
      "InvalidRequestError",
      `the frame is not UTF-8 (invalid byte at offset ${utf8Length(text, 0, notUtf8)})`,
      "send each message as UTF-8 JSON",
    )
      .expected("UTF-8 JSON text")
      .actual("bytes that are not UTF-8");
  }
  const notARequest = (actual: string) =>
    new HostError("InvalidRequestError", "the message is not a JSON request object", 'send one JSON object per frame, like {"id": 1, "op": "hello"}')
      .expected("a JSON object with `id` and `op`")
      .actual(actual);
  const bytes = new TextEncoder().encode(text);
  // serde would also read a JSON array into the fields, one by one: only objects are requests. Rust's
  // trim_start takes any Unicode white space, serde's parser only JSON's.
  if (!text.replace(/^\p{White_Space}+/u, "").startsWith("{")) {
    let actual: string;
    try {
      const [start, end] = new Serde(bytes).rawValue();
      actual = jsonTypeName(decode(bytes, start, end));
    } catch (error) {
      actual = `invalid JSON: ${serdeMessage(error)}`;
    }
    throw notARequest(actual);
  }
  let ranges: Map<string, Range | null>;
  try {
    ranges = new Serde(bytes).struct(KNOWN_FIELDS, false);
  } catch (error) {
    throw notARequest(`invalid JSON: ${serdeMessage(error)}`);
  }
  // serde refuses a known field given twice, but not an unknown one; PROTOCOL.md refuses both.
  const name = duplicateMember(text);
  if (name !== undefined) {
    throw new HostError("InvalidRequestError", `the request has the field ${rustDebug(name)} twice`, "send each field once")
      .expected("a JSON object whose member names differ")
      .actual(`${rustDebug(name)} twice`);
  }
  const fields: Fields = {};
  for (const [field, range] of ranges) {
    if (range !== null) fields[field as FieldName] = decode(bytes, range[0], range[1]);
  }
  return fields;
}

/**
 * The fields of a request text that JSON.stringify wrote, from an object, in this context (the in-process client's:
 * backends/in-process.ts), read as `parseFields` reads them but in one walk of its top level. Such a text is well
 * formed, with no white space, no raw control character and no lone surrogate (JSON.stringify escapes them), and its
 * member names differ, so none of `parseFields`' refusals can apply but one: a member name with an unpaired surrogate
 * escape, which serde refuses. So a name with any escape, or a text that is not an object, gives undefined, and
 * `parseFields` reads it instead. The values' texts are not looked into (a string's contents are skipped with a
 * native search), so a large `data` costs next to nothing here.
 */
export function stringifiedFields(text: string): Fields | undefined {
  if (!text.startsWith("{")) return undefined;
  const fields: Fields = {};
  let plainNames = true;
  const wellFormed = members(text, (nameStart, nameEnd, valueStart, valueEnd) => {
    const name = text.slice(nameStart + 1, nameEnd - 1);
    if (name.includes("\\")) return (plainNames = false);
    if (KNOWN_FIELDS.has(name) && !(valueEnd - valueStart === 4 && text.startsWith("null", valueStart))) {
      fields[name as FieldName] = text.slice(valueStart, valueEnd);
    }
    return true;
  });
  return wellFormed && plainNames ? fields : undefined;
}

/**
 * The usable id of a request text that `parseFields` refused, if it has one (an object with a duplicate field,
 * say), so that even that error reply reaches the right caller. As the host reads it: an object's text as a struct
 * with only an `id` field. Anything else, a one-element array such as `[7]` included, is not a request and has no
 * id (PROTOCOL.md section 3.4).
 */
export function recoverId(text: string): string | undefined {
  if (loneSurrogateAt(text) !== undefined) return undefined;
  if (!/^[ \t\n\r]*\{/.test(text)) return undefined;
  const bytes = new TextEncoder().encode(text);
  try {
    const range = new Serde(bytes).struct(ID_ONLY, true).get("id");
    if (!range) return undefined;
    const id = decode(bytes, range[0], range[1]);
    return isUsableId(id) ? id : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The usable id of a request of which only `head`, its first bytes, is looked at (a request over the size
 * limit), when the id comes whole among them: `{"id": 7, ...` or after other short fields.
 */
export function idInHead(head: string): string | undefined {
  // Rust's trim_ascii_start: space, tab, line feed, form feed and carriage return.
  const text = head.replace(/^[ \t\n\f\r]+/, "");
  let id: string | undefined;
  members(text, (nameStart, nameEnd, valueStart, valueEnd) => {
    // A value that reaches the end of the head may go on past it (a number, say).
    if (valueEnd >= text.length) return false;
    if (text.slice(nameStart, nameEnd) !== '"id"') return true;
    const raw = text.slice(valueStart, valueEnd);
    try {
      const bytes = new TextEncoder().encode(raw);
      new Serde(bytes).rawValue();
      if (isUsableId(raw)) id = raw;
    } catch {
      // Not a JSON value: no id.
    }
    return false;
  });
  return id;
}

/** The request's id if it is usable: a string of at most 256 bytes, or an integer. */
export function usableId(fields: Fields): string | undefined {
  return fields.id !== undefined && isUsableId(fields.id) ? fields.id : undefined;
}

/** Why the id is not usable, for the error reply that must then carry `"id": null`. */
export function idError(fields: Fields): HostError {
  const expected = "a string of at most 256 bytes or an integer";
  if (fields.id === undefined) return HostError.missingField("id", expected);
  const type = jsonTypeName(fields.id);
  return HostError.invalidField("id", expected, type === "a string" ? `a string of ${utf8Length(fields.id) - 2} bytes` : type);
}

/**
 * Whether an id can be echoed: a string of at most 256 bytes that is Unicode text, or an integer from -2^63 to
 * 2^64 - 1 (`-0` is one too).
 */
function isUsableId(raw: string): boolean {
  if (raw.startsWith('"')) {
    const value = decodeString(raw.slice(1, -1));
    return value !== undefined && utf8Length(value) <= MAX_ID_BYTES;
  }
  if (!/^-?(0|[1-9][0-9]*)$/.test(raw)) return false;
  const value = BigInt(raw);
  return value >= -(2n ** 63n) && value < 2n ** 64n;
}

/**
 * Reads an optional string field.
 *
 * @throws HostError `InvalidRequestError` if the field is there but is not a string of Unicode text.
 */
export function optionalString(raw: string | undefined, field: string): string | undefined {
  if (raw === undefined) return undefined;
  const type = jsonTypeName(raw);
  if (type !== "a string") throw HostError.invalidField(field, "a string", type);
  const value = decodeString(raw.slice(1, -1));
  if (value === undefined) {
    throw new HostError(
      "InvalidRequestError",
      `\`${field}\` holds an unpaired surrogate escape (such as \\ud800), which is not Unicode text`,
      `send \`${field}\` as text whose surrogate escapes come in pairs, as JSON.stringify of a well-formed string does`,
    )
      .expected("a string of Unicode text")
      .actual("a string with an unpaired surrogate escape");
  }
  return value;
}

/**
 * Reads a string field that must be there.
 *
 * @throws HostError `InvalidRequestError` if the field is missing or not a string.
 */
export function requiredString(raw: string | undefined, field: string): string {
  const value = optionalString(raw, field);
  if (value === undefined) throw HostError.missingField(field, "a string");
  return value;
}

/** A non-negative integer of a request: its value (exact up to 2^53, past the end of any text beyond) and its digits. */
export interface Count {
  value: number;
  digits: string;
}

/** A count as a reply echoes it: a number, or its digits when JS numbers don't hold it. */
export function echo(count: Count): number | Digits {
  return Number.isSafeInteger(count.value) ? count.value : new Digits(count.digits);
}

/**
 * Reads an optional non-negative integer field, as serde reads a u64.
 *
 * @throws HostError `InvalidRequestError` if the field is there but is not an integer from 0 to 2^64 - 1.
 */
export function optionalCount(raw: string | undefined, field: string): Count | undefined {
  if (raw === undefined) return undefined;
  if (/^(0|[1-9][0-9]*)$/.test(raw) && BigInt(raw) < 2n ** 64n) return { value: Number(raw), digits: raw };
  const type = jsonTypeName(raw);
  throw HostError.invalidField(field, "a non-negative integer", type === "a number" ? raw : type);
}

/**
 * A result's JSON text in three parts, the middle one a value the result holds whole (a read's data, at the member
 * `path`): its text is `before + value + after`, `before` ending with the member's name and colon. Kept apart so
 * that `replyObject` can take the value without parsing it again; everything else uses its text.
 */
export class Spliced {
  constructor(
    readonly before: string,
    readonly path: readonly [string, ...string[]],
    readonly value: string,
    readonly after: string,
  ) {}

  toString(): string {
    return this.before + this.value + this.after;
  }
}

/** A result's JSON text, whole or spliced. */
export type ResultText = string | Spliced;

/** What an op came to: its result's JSON text, or its error. */
export type Outcome = { result: ResultText } | { error: HostError };

/**
 * The JSON text of a reply to the request whose id is `id` (its JSON text as the request spelled it, or undefined
 * for `null`): `{"id","ok":true,"result"}` with the result's JSON text, or `{"id","ok":false,"error"}`.
 */
export function replyText(id: string | undefined, outcome: Outcome): string {
  const idText = id ?? "null";
  if ("result" in outcome) return `{"id":${idText},"ok":true,"result":${String(outcome.result)}}`;
  return `{"id":${idText},"ok":false,"error":${outcome.error.toJson()}}`;
}

/**
 * The reply `replyText` writes, as JSON.parse reads it, made faster for a spliced result: the rest of the result is
 * parsed with `null` in the value's place, and the value put there. A value that is a string with no escape (one
 * quote at each end, no backslash, no raw control character) is its text between the quotes, which costs no copy;
 * any other is parsed. So a read of megabytes of text is not copied and parsed again in the extension.
 */
export function replyObject(id: string | undefined, outcome: Outcome): unknown {
  const idValue: unknown = JSON.parse(id ?? "null");
  if ("error" in outcome) return { id: idValue, ok: false, error: JSON.parse(outcome.error.toJson()) as unknown };
  const result = outcome.result;
  if (typeof result === "string") return { id: idValue, ok: true, result: JSON.parse(result) as unknown };
  const parsed = JSON.parse(`${result.before}null${result.after}`) as Record<string, unknown>;
  const path = [...result.path];
  const member = path.pop() as string;
  let holder = parsed;
  for (const name of path) holder = holder[name] as Record<string, unknown>;
  const text = result.value;
  const plain = text.length >= 2 && text.startsWith('"') && text.indexOf('"', 1) === text.length - 1 && !text.includes("\\") && !CONTROL_CHARACTER.test(text);
  holder[member] = plain ? text.slice(1, -1) : (JSON.parse(text) as unknown);
  return { id: idValue, ok: true, result: parsed };
}

/** Where `text` holds a lone surrogate (which has no UTF-8 form), if anywhere. */
function loneSurrogateAt(text: string): number | undefined {
  // Most requests are JSON.stringify's output, which escapes lone surrogates: the regex rules them out at once.
  const found = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.exec(text);
  return found?.index;
}

/**
 * The first member name that the request object `text` (known to be valid JSON) has twice, names compared
 * decoded, or as written when they hold a lone surrogate escape; as the host's `duplicate_member`.
 */
function duplicateMember(text: string): string | undefined {
  const seen = new Set<string>();
  let duplicate: string | undefined;
  members(
    text,
    (nameStart, nameEnd) => {
      const raw = text.slice(nameStart, nameEnd);
      const name = decodeString(raw.slice(1, -1)) ?? raw;
      if (seen.has(name)) {
        duplicate = name;
        return false;
      }
      seen.add(name);
      return true;
    },
    skipSpace(text, 0),
  );
  return duplicate;
}

/**
 * `text` as Rust's `{:?}` writes a string: in quotes, with `\t`, `\r`, `\n`, `\\`, `\"` and `\0` escaped, and
 * `\u{..}` for characters Rust doesn't print (controls, format characters, separators but the space, unassigned
 * and private-use code points, surrogates) and for combining marks (Grapheme_Extend).
 */
export function rustDebug(text: string): string {
  let out = '"';
  for (const char of text) {
    const code = char.codePointAt(0) ?? 0;
    if (char === "\t") out += "\\t";
    else if (char === "\r") out += "\\r";
    else if (char === "\n") out += "\\n";
    else if (char === "\\") out += "\\\\";
    else if (char === '"') out += '\\"';
    else if (char === "\0") out += "\\0";
    else if (code >= 0x20 && code < 0x7f) out += char;
    else if (/[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}\p{Grapheme_Extend}]/u.test(char)) out += `\\u{${code.toString(16)}}`;
    else out += char;
  }
  return `${out}"`;
}

/** A range of bytes: `[start, end)`. */
type Range = readonly [number, number];

/**
 * UTF-8 back to text, every character kept: a `TextDecoder` drops a byte order mark at the start of what it
 * decodes unless told `ignoreBOM`, and a member name or value that starts with one (`"\ufeffop"`) must stay the
 * name serde_json reads, which is not `op`. The bytes are a well-formed string's own UTF-8, so nothing is replaced.
 */
const UTF8 = new TextDecoder("utf-8", { ignoreBOM: true });

function decode(bytes: Uint8Array, start: number, end: number): string {
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

function serdeMessage(error: unknown): string {
  if (error instanceof SerdeError) return error.message;
  throw error;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

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
class Serde {
  readonly #bytes: Uint8Array;
  #index = 0;

  constructor(bytes: Uint8Array) {
    this.#bytes = bytes;
  }

  /** The range of the one JSON value the text holds, as `serde_json::from_str::<&RawValue>` finds it. */
  rawValue(): Range {
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
  struct(known: ReadonlySet<string>, fromSeq: boolean): Map<string, Range | null> {
    const peek = this.#whitespace();
    if (peek < 0) throw this.#peekError(SYNTAX.eofValue);
    let fields: Map<string, Range | null>;
    if (peek === 0x7b) {
      this.#index++;
      let failed: unknown;
      let read = new Map<string, Range | null>();
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
    } else if (peek === 0x5b && fromSeq) {
      this.#index++;
      fields = this.#oneElement(known);
    } else {
      throw this.#peekError(SYNTAX.value);
    }
    this.#end();
    return fields;
  }

  /** `visit_map` of a derived struct: known fields read as raw values (a second one refused), others skipped. */
  #map(known: ReadonlySet<string>): Map<string, Range | null> {
    const fields = new Map<string, Range | null>();
    let first = true;
    for (;;) {
      const peek = this.#whitespace();
      if (peek < 0) throw this.#peekError(SYNTAX.eofObject);
      if (peek === 0x7d) return fields;
      if (first) {
        first = false;
        if (peek !== QUOTE) throw this.#peekError(SYNTAX.keyString);
      } else if (peek === 0x2c) {
        this.#index++;
        const next = this.#whitespace();
        if (next === 0x7d) throw this.#peekError(SYNTAX.trailingComma);
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
      if (colon !== 0x3a) throw this.#peekError(SYNTAX.colon);
      this.#index++;
      if (isKnown) fields.set(name, this.#optionalRaw());
      else this.#ignoreValue();
    }
  }

  /** `visit_seq` of a one-field struct, then `end_seq`. */
  #oneElement(known: ReadonlySet<string>): Map<string, Range | null> {
    const peek = this.#whitespace();
    if (peek < 0) throw this.#peekError(SYNTAX.eofList);
    // An empty array is too short for the struct.
    if (peek === 0x5d) throw new SerdeError("invalid length 0");
    const fields = new Map<string, Range | null>();
    const [name] = known;
    fields.set(name ?? "", this.#optionalRaw());
    const after = this.#whitespace();
    if (after === 0x5d) {
      this.#index++;
    } else if (after === 0x2c) {
      this.#index++;
      throw this.#peekError(this.#whitespace() === 0x5d ? SYNTAX.trailingComma : SYNTAX.trailing);
    } else {
      throw this.#peekError(after < 0 ? SYNTAX.eofList : SYNTAX.listCommaOrEnd);
    }
    return fields;
  }

  /** `Option<&RawValue>`: `null` is none, anything else its range. */
  #optionalRaw(): Range | null {
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
        const raw = decode(this.#bytes, start, this.#index);
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
        case 0x5b:
        case 0x7b:
          if (enclosing !== undefined) stack.push(enclosing);
          enclosing = undefined;
          this.#index++;
          opened = peek === 0x7b;
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
        if (next === 0x2c && acceptComma) {
          this.#index++;
          break;
        }
        const closes = next === (isObject ? 0x7d : 0x5d);
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
        if (colon !== 0x3a) throw this.#peekError(SYNTAX.colon);
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
    if (peek === 0x7d) {
      this.#index++;
      return;
    }
    if (peek < 0) throw this.#peekError(SYNTAX.eofObject);
    throw this.#peekError(peek === 0x2c ? SYNTAX.trailingComma : SYNTAX.trailing);
  }

  /** `end`: nothing but white space may follow the value. */
  #end(): void {
    if (this.#whitespace() >= 0) throw this.#peekError(SYNTAX.trailing);
  }

  /** `parse_whitespace`: JSON's white space skipped, the next byte (-1 at the end) not taken. */
  #whitespace(): number {
    for (;;) {
      const byte = this.#peek();
      if (byte !== 0x20 && byte !== 0x0a && byte !== 0x09 && byte !== 0x0d) return byte;
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
