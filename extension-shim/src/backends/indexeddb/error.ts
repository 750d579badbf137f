/**
 * The error replies of the IndexedDB host and the JSON text of every reply: the twin of the host's `src/error.rs`
 * and of the reply half of `src/message.rs`.
 *
 * Replies are written as text, piece by piece, in the host's key order, because serde writes them that way and
 * answers must match the host's byte for byte: stored data and customMetadata go in as the text they were stored
 * as, request ids as the client spelled them, and strings escaped as serde_json escapes them (which is what
 * JSON.stringify does for every string that is Unicode text).
 */

import { CONTROL_CHARACTER, type WireError } from "../../protocol.js";

/** The error codes of PROTOCOL.md section 3.4. */
export type ErrorCode =
  | "QuotaExceededError"
  | "ItemNotFoundError"
  | "StorageUnavailableError"
  | "InvalidKeyFormatError"
  | "DataTooLargeError"
  | "CorruptedDataError"
  | "InvalidRequestError";

/**
 * A non-negative integer of the request echoed in a reply, kept as its digits: the host reads such fields as u64,
 * which JS numbers don't hold past 2^53, and echoes them exactly.
 */
export class Digits {
  constructor(readonly text: string) {}
}

/** What `expected` and `actual` may hold: a string, or a number as the host writes it. */
export type Scalar = string | number | Digits;

/**
 * The one error that becomes an error reply, as the host's `CacheError`: a code, a message, what was expected and
 * what came (where they apply), a suggestion, and machine-readable details (the quota's numbers). Thrown by the
 * ops; anything else that is thrown is a failure of IndexedDB or of this code and becomes StorageUnavailableError.
 */
export class HostError extends Error {
  readonly code: ErrorCode;
  readonly suggestion: string;
  expectedValue: Scalar | undefined;
  actualValue: Scalar | undefined;
  /** Fields after `suggestion`. */
  readonly details: Array<[string, number]> = [];

  constructor(code: ErrorCode, message: string, suggestion: string) {
    super(message);
    this.name = "HostError";
    this.code = code;
    this.suggestion = suggestion;
  }

  /** Says what the host wanted. */
  expected(value: Scalar): this {
    this.expectedValue = value;
    return this;
  }

  /** Says what came instead. */
  actual(value: Scalar): this {
    this.actualValue = value;
    return this;
  }

  /** Adds a machine-readable field beside the standard ones. */
  detail(name: string, value: number): this {
    this.details.push([name, value]);
    return this;
  }

  /** The error body's JSON text: `{"code","message","expected"?,"actual"?,"suggestion",...details}`. */
  toJson(): string {
    let text = `{"code":${quote(this.code)},"message":${quote(this.message)}`;
    if (this.expectedValue !== undefined) text += `,"expected":${scalar(this.expectedValue)}`;
    if (this.actualValue !== undefined) text += `,"actual":${scalar(this.actualValue)}`;
    text += `,"suggestion":${quote(this.suggestion)}`;
    // serde_json keeps them in a map sorted by name (its `preserve_order` is off), so they come in that order.
    const details = [...this.details].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    for (const [name, value] of details) text += `,${quote(name)}:${value}`;
    return `${text}}`;
  }

  /** The error the JSON twin's rules answer with (`WireError`), as a HostError. */
  static from(error: WireError): HostError {
    const made = new HostError(error.code as ErrorCode, error.message, error.suggestion);
    if (error.expected !== undefined) made.expected(error.expected);
    if (error.actual !== undefined) made.actual(error.actual);
    return made;
  }

  /** `InvalidRequestError` for a request that misses a field it needs. */
  static missingField(field: string, expected: string): HostError {
    return new HostError(
      "InvalidRequestError",
      `the request has no \`${field}\``,
      `add \`${field}\` (${expected}) and send the request again`,
    )
      .expected(expected)
      .actual("nothing");
  }

  /** `InvalidRequestError` for a field of the wrong JSON type or form. */
  static invalidField(field: string, expected: string, actual: Scalar): HostError {
    return new HostError("InvalidRequestError", `\`${field}\` is not ${expected}`, `send \`${field}\` as ${expected}`)
      .expected(expected)
      .actual(actual);
  }

  /**
   * `ItemNotFoundError` for a key this session has no item under. The same error serves a key of another session,
   * so that nobody learns such an item exists.
   */
  static itemNotFound(storageKey: string): HostError {
    return new HostError(
      "ItemNotFoundError",
      `no item ${storageKey} in this session`,
      "list the session's items to see which keys exist; the item may have been deleted or its session ended",
    ).actual(storageKey);
  }

  /**
   * `StorageUnavailableError` with the reason the store failed. The advice differs from the host's, which points
   * at its `doctor` command and log: an IndexedDB store has neither, and the browser decides why it failed.
   */
  static storageUnavailable(reason: string): HostError {
    return new HostError(
      "StorageUnavailableError",
      `the cache store is unavailable: ${reason}`,
      "continue without the cache (process the data in context); the browser may have refused IndexedDB to this extension (private browsing, or its storage is full)",
    );
  }

  /** `CorruptedDataError` for a stored record that can't be decoded. */
  static corrupted(storageKey: string, reason: string): HostError {
    return new HostError("CorruptedDataError", `item ${storageKey} is corrupted: ${reason}`, "delete the item and write it again from its source").actual(
      storageKey,
    );
  }
}

/** A string as serde_json writes it. JSON.stringify escapes the same characters the same way (`\u001f` in lower case). */
export function quote(text: string): string {
  return JSON.stringify(text);
}

/** A string or number of an error body. */
function scalar(value: Scalar): string {
  if (typeof value === "string") return quote(value);
  if (typeof value === "number") return String(value);
  return value.text;
}

/** A JSON string, or `null` for undefined: an optional string field that serde writes as `null`. */
export function quoteOrNull(text: string | null | undefined): string {
  return text === null || text === undefined ? "null" : quote(text);
}

/** A number, or `null`. */
export function numberOrNull(value: number | null | undefined): string {
  return value === null || value === undefined ? "null" : String(value);
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
