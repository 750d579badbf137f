/**
 * A request as it arrives, and the reply's envelope: the twin of the host's `src/message.rs`. The request's JSON
 * text is read once into `Fields`, each known field kept as the raw JSON text the client sent (JSON `null` reads as
 * absent), and typed getters turn a missing or mistyped field into the host's `InvalidRequestError`, word for word.
 *
 * Replies are written as text, piece by piece, in the host's key order, because serde writes them that way and
 * answers must match the host's byte for byte: stored data and customMetadata go in as the text they were stored
 * as, request ids as the client spelled them, and strings escaped as serde_json escapes them.
 *
 * The host reads requests with serde_json, and its error replies quote serde's messages, so a request's text is
 * read here exactly as serde_json 1.0 reads it (json/serde.ts), then checked as the host checks it.
 */

import { CONTROL_CHARACTER, MAX_ID_BYTES } from "../../protocol.js";
import { decodeString, decodeUtf8, members, Serde, serdeMessage, skipSpace, utf8Length, type ByteRange } from "./json/index.js";
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
  "provenance",
  "reason",
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
      actual = jsonTypeName(decodeUtf8(bytes, start, end));
    } catch (error) {
      actual = `invalid JSON: ${serdeMessage(error)}`;
    }
    throw notARequest(actual);
  }
  let ranges: Map<string, ByteRange | null>;
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
    if (range !== null) fields[field as FieldName] = decodeUtf8(bytes, range[0], range[1]);
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
    const id = decodeUtf8(bytes, range[0], range[1]);
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
