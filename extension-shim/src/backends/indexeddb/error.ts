/**
 * The one error that becomes an error reply, and the JSON text of its body: the twin of the host's `src/error.rs`.
 *
 * An error body is written as text in the host's key order, because serde writes it that way and answers must match
 * the host's byte for byte: strings escaped as serde_json escapes them (which is what JSON.stringify does for every
 * string that is Unicode text), numbers the request gave as their digits.
 */

import type { WireError } from "../../protocol.js";

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

/** The name of a JSON value's type, for the `actual` of a mistyped field; it never echoes the value. */
export function jsonTypeName(raw: string): string {
  switch (raw.replace(/^\p{White_Space}+/u, "").charAt(0)) {
    case '"':
      return "a string";
    case "{":
      return "an object";
    case "[":
      return "an array";
    case "t":
    case "f":
      return "a boolean";
    case "n":
      return "null";
    default:
      return "a number";
  }
}
