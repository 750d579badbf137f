/**
 * The spec's rules for keys, ids and descriptions, as pure functions: the twin of the host's `src/rules.rs`
 * (its `compact_json` is in compact.ts). Errors are the host's error bodies, field for field and word for word,
 * so that a reply made from one is the host's reply.
 */

import { MAX_DESCRIPTION_CHARS, type WireError } from "../../../protocol.js";
import { utf8Length } from "./scan.js";

/** Every sessionId starts with this (the spec's `conversationId` form). */
export const SESSION_PREFIX = "conv_";

/** The most characters a sessionId may have after its `conv_` prefix. */
export const MAX_SESSION_SUFFIX_CHARS = 64;

/** taskIds and turnIds are exactly this long. */
export const ID_CHARS = 8;

/** The characters of taskIds and turnIds, and so of generated ids. */
export const ID_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789";

/** A storage key split into its three parts. */
export interface StorageKey {
  /** The session that owns the item. */
  sessionId: string;
  /** The task the item belongs to. */
  taskId: string;
  /** The turn that wrote the item. */
  turnId: string;
}

/** The sessionId rule in words, as the host's errors say it. */
export const SESSION_ID_RULE = "`conv_` then 1 to 64 of [A-Za-z0-9-]";

/** Whether `value` is a sessionId: `conv_` and then 1 to 64 of `[A-Za-z0-9-]`. */
export function isSessionId(value: string): boolean {
  const suffix = value.startsWith(SESSION_PREFIX) ? value.slice(SESSION_PREFIX.length) : undefined;
  return suffix !== undefined && suffix.length >= 1 && suffix.length <= MAX_SESSION_SUFFIX_CHARS && /^[A-Za-z0-9-]*$/.test(suffix);
}

/** Checks a sessionId (isSessionId). The error names `field`; undefined when valid. */
export function checkSessionId(field: string, value: string): WireError | undefined {
  return isSessionId(value) ? undefined : keyFormatError(field, SESSION_ID_RULE, value);
}

/** Checks a taskId or turnId: exactly 8 of `[a-z0-9]`. The error names `field`; undefined when valid. */
export function checkShortId(field: string, value: string): WireError | undefined {
  const valid = value.length === ID_CHARS && /^[a-z0-9]*$/.test(value);
  return valid ? undefined : keyFormatError(field, "exactly 8 of [a-z0-9]", value);
}

/** The session part of a storage key already known to be well formed (a stored one), without checking it again. */
export function sessionOf(storageKey: string): string {
  const turn = storageKey.lastIndexOf("_");
  const task = turn > 0 ? storageKey.lastIndexOf("_", turn - 1) : -1;
  return task < 0 ? "" : storageKey.slice(0, task);
}

/**
 * Splits `{sessionId}_{taskId}_{turnId}` from the right, since the `conv_` prefix has an underscore of its own, and
 * checks every part: the parts, or the error naming the part that is wrong.
 */
export function parseStorageKey(key: string): StorageKey | WireError {
  const turn = key.lastIndexOf("_");
  const task = turn > 0 ? key.lastIndexOf("_", turn - 1) : -1;
  if (task < 0) {
    return keyFormatError("storageKey", "{sessionId}_{taskId}_{turnId}, e.g. conv_abc123_a7b3c9d2_f4e8g1h6", key);
  }
  const parts = { sessionId: key.slice(0, task), taskId: key.slice(task + 1, turn), turnId: key.slice(turn + 1) };
  return (
    checkSessionId("storageKey's sessionId part", parts.sessionId) ??
    checkShortId("storageKey's taskId part", parts.taskId) ??
    checkShortId("storageKey's turnId part", parts.turnId) ??
    parts
  );
}

/** Whether `parseStorageKey` (or a check) answered with an error. */
export function isRuleError(value: StorageKey | WireError | undefined): value is WireError {
  return value !== undefined && "code" in value;
}

/** Joins the three parts into a storage key. */
export function storageKey(sessionId: string, taskId: string, turnId: string): string {
  return `${sessionId}_${taskId}_${turnId}`;
}

function keyFormatError(field: string, expected: string, value: string): WireError {
  return {
    code: "InvalidKeyFormatError",
    message: `${field} is not of the form ${expected}`,
    expected,
    actual: shorten(value),
    suggestion:
      "use the storageKey exactly as a write or list returned it; sessionIds come from the conversation and taskIds/turnIds may be left out to have them generated",
  };
}

/** Echoes a malformed id back only when it is short; a long one is described by its length in UTF-8 bytes. */
function shorten(value: string): string {
  const MAX_ECHO = 100;
  const bytes = utf8Length(value);
  return bytes <= MAX_ECHO ? value : `a string of ${bytes} bytes`;
}

/**
 * Makes an id of 8 characters of `[a-z0-9]` from random bytes, each character uniform. `fill` fills a buffer with
 * random bytes (`crypto.getRandomValues` in the extension; a seeded source in tests); whatever it throws passes
 * through.
 */
export function generateId(fill: (buffer: Uint8Array) => void): string {
  let id = "";
  const buffer = new Uint8Array(16);
  while (id.length < ID_CHARS) {
    fill(buffer);
    for (const byte of buffer) {
      const char = idChar(byte);
      if (char !== undefined && id.length < ID_CHARS) id += char;
    }
  }
  return id;
}

/**
 * Maps a random byte to an id character, or to nothing for bytes of 252 and above: 252 is the largest multiple of
 * 36 that fits in a byte, and folding the rest in modulo 36 would favour `a` to `d`.
 */
export function idChar(byte: number): string | undefined {
  const ACCEPT_BELOW = 252;
  return byte < ACCEPT_BELOW ? ID_ALPHABET[byte % 36] : undefined;
}

/**
 * Cuts a description to at most MAX_DESCRIPTION_CHARS characters (Unicode scalar values), the last being `…`,
 * never splitting a character. Reads no further than the cut, however long the description.
 */
export function truncateDescription(description: string): string {
  // Where the character after the first 299 starts, and whether there are more than 300 in all.
  let keep = description.length;
  let chars = 0;
  for (let at = 0; at < description.length; chars++) {
    if (chars === MAX_DESCRIPTION_CHARS - 1) keep = at;
    if (chars === MAX_DESCRIPTION_CHARS) return `${description.slice(0, keep)}…`;
    const unit = description.charCodeAt(at);
    const pair = unit >= 0xd800 && unit <= 0xdbff && (description.charCodeAt(at + 1) & 0xfc00) === 0xdc00;
    at += pair ? 2 : 1;
  }
  return description;
}
