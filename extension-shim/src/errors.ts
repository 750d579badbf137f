/**
 * Typed errors: one class per error code of the protocol (PROTOCOL.md section 3.4), and a mapper from the
 * `error` object of a reply to the matching class.
 *
 * Three errors are made by the client itself, for failures that never reach the host. Each one extends the
 * protocol class whose advice fits, and keeps that class's `code`, so a caller that branches on `code` (or on
 * `instanceof StorageUnavailableError`) handles them without knowing they exist:
 * - RequestTimeoutError and ProtocolVersionError are StorageUnavailableErrors: the cache can't be used now.
 * - MessageTooLargeError is a DataTooLargeError: the data has to be split.
 */

import { MAX_REQUEST_BYTES, type WireError } from "./protocol.js";

export const ERROR_CODES = [
  "InvalidRequestError",
  "InvalidKeyFormatError",
  "ItemNotFoundError",
  "DataTooLargeError",
  "QuotaExceededError",
  "CorruptedDataError",
  "StorageUnavailableError",
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

/** What an error says besides its code. The host fills these in; client-made errors fill them in themselves. */
export interface ErrorDetail {
  message: string;
  expected?: string | number | undefined;
  actual?: string | number | undefined;
  /** Left out, the class's default advice is used. */
  suggestion?: string | undefined;
}

/**
 * What the caller should do next for each code, used when the host's reply has no suggestion or the client
 * made the error itself. They are the LLM's only guidance after a failure: the prompt section doesn't repeat them.
 */
const DEFAULT_SUGGESTIONS: Record<ErrorCode, string> = {
  InvalidRequestError: "check the tool's parameters against its schema and call it again",
  InvalidKeyFormatError: "use the storageKey exactly as write or list showed it",
  ItemNotFoundError: "list the session's items to see which keys exist",
  DataTooLargeError:
    "split the data into parts of at most 5 MB, write each as its own item, and say in each description which part it is",
  QuotaExceededError:
    "delete items the task no longer needs (list shows their sizes) or store a smaller summary, then try again",
  CorruptedDataError: "delete the item and, if you still need it, produce and write it again",
  StorageUnavailableError:
    "continue without the cache: process the data in your context, in smaller batches if needed, and don't keep retrying it",
};

/** The base class of every error the shim reports: a protocol code plus the host's explanation. */
export class CacheError extends Error {
  /** The protocol's error code; the one field callers should branch on. */
  readonly code: ErrorCode;
  /** What the host wanted (a type, a form, a limit), when that applies. */
  readonly expected: string | number | undefined;
  /** What came instead: a type name, a size, a key. Never cached data. */
  readonly actual: string | number | undefined;
  /** What to do next, in words an LLM can act on. */
  readonly suggestion: string;

  constructor(code: ErrorCode, detail: ErrorDetail) {
    super(detail.message);
    this.name = new.target.name;
    this.code = code;
    this.expected = detail.expected;
    this.actual = detail.actual;
    this.suggestion = detail.suggestion ?? DEFAULT_SUGGESTIONS[code];
  }
}

export class InvalidRequestError extends CacheError {
  constructor(detail: ErrorDetail) {
    super("InvalidRequestError", detail);
  }
}

export class InvalidKeyFormatError extends CacheError {
  constructor(detail: ErrorDetail) {
    super("InvalidKeyFormatError", detail);
  }
}

export class ItemNotFoundError extends CacheError {
  constructor(detail: ErrorDetail) {
    super("ItemNotFoundError", detail);
  }
}

export class DataTooLargeError extends CacheError {
  constructor(detail: ErrorDetail) {
    super("DataTooLargeError", detail);
  }
}

/** The quota numbers are the one part of an error, besides its code, that the protocol promises to keep. */
export class QuotaExceededError extends CacheError {
  /** The session's total without the item being written or updated. */
  readonly current: number | undefined;
  /** The new item's size. */
  readonly requested: number | undefined;
  /** The session quota. */
  readonly limit: number | undefined;

  constructor(detail: ErrorDetail & { current?: number; requested?: number; limit?: number }) {
    super("QuotaExceededError", detail);
    this.current = detail.current;
    this.requested = detail.requested;
    this.limit = detail.limit;
  }
}

export class CorruptedDataError extends CacheError {
  constructor(detail: ErrorDetail) {
    super("CorruptedDataError", detail);
  }
}

export class StorageUnavailableError extends CacheError {
  constructor(detail: ErrorDetail) {
    super("StorageUnavailableError", detail);
  }
}

/** The host sent no reply in time. Whether a write it carried was applied is unknown. */
export class RequestTimeoutError extends StorageUnavailableError {
  constructor(op: string, timeoutMs: number) {
    super({
      message: `the native host sent no reply to ${op} within ${timeoutMs} ms`,
      expected: `a reply within ${timeoutMs} ms`,
      actual: "no reply",
    });
  }
}

/** The host speaks another protocol version, so nothing it says can be trusted to mean what we think. */
export class ProtocolVersionError extends StorageUnavailableError {
  constructor(expected: number, actual: unknown) {
    super({
      message:
        `the native host speaks protocol version ${String(actual)}, but this shim speaks version ${expected}; ` +
        "install a host and a shim of the same release",
      expected,
      actual: typeof actual === "number" ? actual : String(actual),
    });
  }
}

/** The host would refuse this message, so it is never sent (PROTOCOL.md section 2.1). */
export class MessageTooLargeError extends DataTooLargeError {
  constructor(bytes: number) {
    super({
      message: `the request is ${bytes} bytes of JSON; the host takes at most ${MAX_REQUEST_BYTES} bytes in one request`,
      expected: MAX_REQUEST_BYTES,
      actual: bytes,
    });
  }
}

/**
 * Turns the `error` of a failed reply into its class. A code this shim doesn't know (from a newer host) or a
 * reply without an error object means the two sides don't understand each other, which is treated as the
 * cache being unavailable.
 */
export function errorFromReply(error: WireError | undefined): CacheError {
  if (typeof error !== "object" || error === null || typeof error.message !== "string") {
    return new StorageUnavailableError({ message: "the native host sent a failed reply without an error object" });
  }
  const detail: ErrorDetail = {
    message: error.message,
    expected: error.expected,
    actual: error.actual,
    suggestion: typeof error.suggestion === "string" ? error.suggestion : undefined,
  };
  switch (error.code) {
    case "InvalidRequestError":
      return new InvalidRequestError(detail);
    case "InvalidKeyFormatError":
      return new InvalidKeyFormatError(detail);
    case "ItemNotFoundError":
      return new ItemNotFoundError(detail);
    case "DataTooLargeError":
      return new DataTooLargeError(detail);
    case "QuotaExceededError":
      return new QuotaExceededError({
        ...detail,
        current: error.current,
        requested: error.requested,
        limit: error.limit,
      });
    case "CorruptedDataError":
      return new CorruptedDataError(detail);
    case "StorageUnavailableError":
      return new StorageUnavailableError(detail);
    default:
      return new StorageUnavailableError({
        message: `the native host answered with an error code this shim doesn't know (${String(error.code)}): ${error.message}`,
        suggestion: error.suggestion,
      });
  }
}
