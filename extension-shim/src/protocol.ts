/**
 * The wire types and limits of llm-cache-host protocol v1, as the shim sees them.
 *
 * PROTOCOL.md at the repository root is normative; the section numbers below point into it. Limits are
 * defined here once so that every check in the shim names the same number the host enforces.
 */

/** The name the host manifest registers, and so the name `connectNative` is called with. */
export const NATIVE_HOST_NAME = "com.browserx.llm_cache";

/** The one protocol version this shim speaks; `hello` tells us the host's (section 4.1). */
export const PROTOCOL_VERSION = 1;

/**
 * The host refuses a request whose JSON text is longer than this (section 2.1): room for 5 MB of data, 64 KiB of
 * customMetadata and a long description. Chrome itself would post up to 64 MiB.
 */
export const MAX_REQUEST_BYTES = 8_388_608;

/** The most `dataSize` one item may have (section 5.4). */
export const MAX_ITEM_BYTES = 5_242_880;

/** The most bytes of data one session may hold (section 5.7). */
export const SESSION_QUOTA_BYTES = 52_428_800;

/**
 * The most the whole store may hold, summed over every session as the session quota counts (data and
 * customMetadata), unless its owner chose otherwise (section 5.7): the host's default, its `DEFAULT_STORE_QUOTA_BYTES`
 * (2 GiB). A host reports the limit in force in `hello`; the IndexedDB backend takes the smaller of this and half of
 * what the browser grants the extension.
 */
export const STORE_QUOTA_BYTES = 2_147_483_648;

/** Descriptions longer than this many characters are cut by the host (section 5.5). */
export const MAX_DESCRIPTION_CHARS = 300;

/** The most bytes of data and customMetadata one `read` with `storageKeys` returns (section 4.3). */
export const MAX_READ_MANY_BYTES = 5_308_416;

/** The most words of a `list` or `search` query (section 3.4). */
export const MAX_QUERY_WORDS = 32;

/** The most UTF-8 bytes of a `list` or `search` query (section 3.4). */
export const MAX_QUERY_BYTES = 512;

/** A search match's pointer longer than this is cut to an ancestor's, with `pointerCut` (section 4.10). */
export const MAX_SEARCH_POINTER_BYTES = 1024;

/** Of a longer request, the host looks for its id in this many first bytes (section 2.1). */
export const OVERSIZED_HEAD_BYTES = 4096;

/** The host sends no frame longer than this; longer replies come in chunks (section 2.2). */
export const MAX_REPLY_FRAME_BYTES = 1_048_576;

/** The longest string id, in UTF-8 bytes after unescaping (section 3.1). */
export const MAX_ID_BYTES = 256;

/** The largest `customMetadata`, in bytes of its compact JSON text (section 5.6). */
export const MAX_CUSTOM_METADATA_BYTES = 65_536;

/** The most keys one `read` with `storageKeys` takes (section 4.3). */
export const MAX_STORAGE_KEYS = 100;

/** The smallest `maxBytes` of a `read`: room for any one character of a string (section 4.3). */
export const MIN_MAX_BYTES = 16;

/** `list`'s (and `sessions`') page size when the request names none, and the largest it may name (sections 4.4, 4.11). */
export const LIST_DEFAULT_LIMIT = 100;
export const MAX_LIST_LIMIT = 1000;

/** `search`'s page size when the request names none, and the largest it may name (section 4.10). */
export const SEARCH_DEFAULT_LIMIT = 20;
export const MAX_SEARCH_LIMIT = 100;

/** `read`, `list` and `search` refresh a session's `lastAccessedAt` only when it is this old (section 5.11). */
export const TOUCH_GRANULARITY_MS = 60_000;

/** A session nobody touched for this long is an orphan and is removed (section 5.11). */
export const ORPHAN_AFTER_MS = 24 * 60 * 60 * 1000;

/** How often a running host looks for orphaned sessions (section 5.11). */
export const ORPHAN_SWEEP_EVERY_MS = 60 * 60 * 1000;

/**
 * Where an item's text came from (PROTOCOL.md section 5.13). Set by the extension's code, never by the model:
 * the tool's definitions have no such member, and the tool refuses a call that sends one.
 */
export const ORIGINS = ["web", "email", "tool", "user", "extension", "agent", "unknown"] as const;
export type Origin = (typeof ORIGINS)[number];
/** The origins whose text an item may hold and still be trusted (with `agent`, the model's own writing). */
export const TRUSTED_ORIGINS: readonly Origin[] = ["user", "extension", "agent"];
/** The longest `provenance.source.url`, in characters. */
export const MAX_SOURCE_URL_CHARS = 2048;
/** The longest `provenance.source.tool`, in characters. */
export const MAX_SOURCE_TOOL_CHARS = 64;
/** The most keys `provenance.derivedFrom` holds: a request sends at most this many, and a union keeps the newest. */
export const MAX_DERIVED_FROM = 16;
/** The longest `endorse` reason, in characters. */
export const MAX_ENDORSE_REASON_CHARS = 120;

/** An item's provenance as every CacheMetadata carries it; an item stored without one reads as `{origin: "unknown"}`. */
export interface Provenance {
  origin: Origin;
  /** Where exactly: the page's URL, the tool's name. */
  source?: { url?: string; tool?: string };
  /** The origins of the text this item was made from or has been mixed with (a set, in ORIGINS order). */
  upstream?: Origin[];
  /** The keys of the items this one was made from, oldest first, at most MAX_DERIVED_FROM. */
  derivedFrom?: string[];
  /** Set only by the `endorse` op: when (ms since the Unix epoch) and why the extension vouched for the item. */
  endorsed?: { at: number; reason: string };
}

/** What a write, update or append may say about where its text came from: all but `endorsed`. */
export type ProvenanceInput = Omit<Provenance, "endorsed">;

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** What the host says about an item: never its data (section 4.0). */
export interface CacheMetadata {
  storageKey: string;
  description: string;
  /** When the item was last written or updated, in ms since the Unix epoch (the host's clock). */
  timestamp: number;
  /** Bytes of the data's compact JSON text (the quota counts this and the customMetadata's compact text). */
  dataSize: number;
  /**
   * How the data is built, e.g. "array[50] of {from,subject,summary}", "string(48213)" (section 5.12); at
   * most 120 characters. "" for items written by a host older than shapes.
   */
  shape: string;
  sessionId: string;
  taskId: string;
  turnId: string;
  /** Where the item came from; `{origin: "unknown"}` for items stored without one. */
  provenance: Provenance;
}

/** An item as `read` returns it: its metadata plus the data, or the part of it a pointer named (section 4.3). */
export interface CachedItem extends CacheMetadata {
  data: JsonValue;
  customMetadata?: { [key: string]: JsonValue };
  /** Present when `data` is a slice: asked for with `offset`/`limit`, or cut to fit `maxBytes`. */
  slice?: Slice;
}

/** Where a slice lies in the value it was cut from: elements of an array, members of an object, characters of a string. */
export interface Slice {
  offset: number;
  count: number;
  total: number;
  /** The `offset` of the next slice; null when this one reaches the end. */
  nextOffset: number | null;
}

export interface HelloResult {
  protocolVersion: number;
  hostVersion: string;
  /** The ops the host serves; absent from hosts older than `append` and `search` (section 4.1). */
  ops?: string[];
  /** "gzip" when the host will compress large replies, as the client asked (section 3.5). */
  encoding?: string;
  limits: {
    maxItemBytes: number;
    sessionQuotaBytes: number;
    /** The most every session of the store may hold together (section 5.7); absent from older hosts. */
    storeQuotaBytes?: number;
    maxDescriptionChars: number;
    maxReplyFrameBytes: number;
    maxRequestFrameBytes: number;
    /** The most data and customMetadata one `read` with `storageKeys` returns (section 4.3); absent from older hosts. */
    maxReadManyBytes?: number;
    /** The most words and UTF-8 bytes of a `list` or `search` query (section 3.4); absent from older hosts. */
    maxQueryWords?: number;
    maxQueryBytes?: number;
    /** The longest pointer a search match names (section 4.10); absent from older hosts. */
    maxSearchPointerBytes?: number;
    /** The bounds of an item's provenance (section 5.13); absent from older hosts. */
    maxSourceUrlChars?: number;
    maxSourceToolChars?: number;
    maxDerivedFrom?: number;
  };
}

export interface WriteRequest {
  sessionId: string;
  /** Left out, the host generates one (section 5.2). */
  taskId?: string;
  /** Left out, the host generates one. Sending both ids of an existing key replaces that item. */
  turnId?: string;
  data: unknown;
  description: string;
  customMetadata?: { [key: string]: unknown };
  /** Where the data came from; left out, the item reads as `{origin: "unknown"}`. A replaced item gets this one. */
  provenance?: ProvenanceInput;
}

export interface ReadRequest {
  sessionId: string;
  storageKey: string;
  /** An RFC 6901 JSON pointer: "" or a string starting with "/". */
  pointer?: string;
  /** Where a slice starts (elements, members or characters). */
  offset?: number;
  /** How many elements, members or characters a slice holds at most. */
  limit?: number;
  /** The most bytes of JSON text `data` may have: a longer value comes back as its first slice that fits. */
  maxBytes?: number;
}

/** `read` of several items in one round trip (section 4.3, "Several items"). */
export interface ReadManyRequest {
  sessionId: string;
  /** 1 to 100 keys, each alone or with a pointer. */
  storageKeys: Array<string | { storageKey: string; pointer?: string }>;
  maxBytes?: number;
}

/** One entry of a `readMany`: the item, or the error a read of that key alone would have failed with. */
export type ReadManyEntry = { item: CachedItem; slice?: Slice } | { storageKey: string; error: WireError };

export interface ListRequest {
  sessionId: string;
  taskId?: string;
  /** 1 to 1000; the host's default is 100. */
  limit?: number;
  /** A `nextCursor` from an earlier page of the same session, passed back unchanged. */
  cursor?: string;
  /** Only items whose description or customMetadata strings contain every word, ignoring case. */
  query?: string;
}

export interface ListResult {
  items: CacheMetadata[];
  nextCursor: string | null;
  /** Items in the whole session (or task), not on this page. */
  itemCount: number;
  totalSize: number;
}

export interface UpdateRequest {
  sessionId: string;
  storageKey: string;
  data?: unknown;
  description?: string;
  customMetadata?: { [key: string]: unknown };
  /** Where the new text came from, merged into the item's (section 5.13); left out, it counts as `unknown`. */
  provenance?: ProvenanceInput;
}

export interface AppendRequest {
  sessionId: string;
  storageKey: string;
  /** The array or string inside the data to add to; the whole data when absent. */
  pointer?: string;
  /** An array whose elements are added, or a string to add to a string. */
  data: unknown;
  description?: string;
  /** Where the added text came from, merged into the item's (section 5.13); left out, it counts as `unknown`. */
  provenance?: ProvenanceInput;
}

/** Vouches for an item: its provenance gets `endorsed`, and it reads as trusted until untrusted text is added. */
export interface EndorseRequest {
  sessionId: string;
  storageKey: string;
  /** Why, for the viewer and the logs' reader: 1 to MAX_ENDORSE_REASON_CHARS characters. */
  reason: string;
}

export interface SearchRequest {
  sessionId: string;
  /** Words that a string value must all contain, ignoring case. */
  query: string;
  /** 1 to 100; the host's default is 20. */
  limit?: number;
  cursor?: string;
}

export interface SearchMatch {
  storageKey: string;
  /** The pointer to the matching string value, or to an ancestor of it when `pointerCut` (section 4.10). */
  pointer: string;
  /** True when the pointer was longer than `limits.maxSearchPointerBytes` and names an ancestor instead. */
  pointerCut?: boolean;
  /** At most 160 characters of the string around the match, with … where it is cut. */
  snippet: string;
  /** The matching item's provenance, as its CacheMetadata gives it. */
  provenance: Provenance;
}

export interface SearchResult {
  matches: SearchMatch[];
  nextCursor: string | null;
}

export interface KeyRequest {
  sessionId: string;
  storageKey: string;
}

export interface DeleteResult {
  storageKey: string;
  deleted: boolean;
  freedBytes: number;
}

export interface EndSessionResult {
  sessionId: string;
  deletedItems: number;
  freedBytes: number;
}

export interface StatsResult {
  sessionId: string;
  totalSize: number;
  itemCount: number;
  createdAt: number | null;
  lastAccessedAt: number | null;
  quotaBytes: number;
  remainingBytes: number;
  /** What every session of the store holds together, its store-wide quota and what is left of it (section 4.8); absent from older hosts. */
  storeTotalSize?: number;
  storeQuotaBytes?: number;
  storeRemainingBytes?: number;
}

/** `sessions` (section 4.11): a page of the calling extension's sessions. For extension pages, not the LLM. */
export interface SessionsRequest {
  /** 1 to 1000; the host's default is 100. */
  limit?: number;
  /** A `nextCursor` from an earlier page, passed back unchanged. */
  cursor?: string;
}

/** One session that holds items, as `sessions` lists it. */
export interface SessionSummary {
  sessionId: string;
  /** How many items it holds: at least one. */
  itemCount: number;
  /** What its items take from its quota: data and customMetadata bytes. */
  totalSize: number;
  /** When its first item was written, ms since the Unix epoch. */
  createdAt: number;
  /** Its last write or read (reads count at a minute's granularity); listing it is no access. */
  lastAccessedAt: number;
}

export interface SessionsResult {
  /** This page, in sessionId order (bytes). */
  sessions: SessionSummary[];
  /** Pass it as `cursor` for the next page; null on the last page. */
  nextCursor: string | null;
}

/** The `error` of a failed reply (section 3.3). Only `code` and the quota numbers are machine-readable. */
export interface WireError {
  code: string;
  message: string;
  expected?: string | number;
  actual?: string | number;
  suggestion: string;
  current?: number;
  limit?: number;
  requested?: number;
}

/**
 * A whole reply (section 3.2). `id` is null when the host couldn't read the request's id. A reply with
 * `encoding: "gzip"` stands for the reply whose gzipped JSON text `payload` holds in base64 (section 3.5).
 */
export interface Reply {
  id: number | string | null;
  ok: boolean;
  result?: unknown;
  error?: WireError;
  encoding?: string;
  payload?: string;
}

/** One slice of a reply longer than 1 MiB (section 2.2). It has no `ok` field; that is how it is told apart. */
export interface ChunkFrame {
  id: number | string | null;
  chunk: number;
  chunks: number;
  part: string;
}

export function isChunkFrame(message: unknown): message is ChunkFrame {
  return (
    typeof message === "object" &&
    message !== null &&
    !("ok" in message) &&
    "chunk" in message &&
    "chunks" in message &&
    "part" in message
  );
}

/** Below this many units, counting by hand is cheaper than first asking a regular expression whether to. */
const UTF8_BY_HAND_UNITS = 256;

/**
 * Any unit that is not ASCII. Spelled as one range up to \uffff because V8 searches such a class at memory speed
 * (5 MB in a fraction of a millisecond in Chromium), where `[^\x00-\x7f]` takes as long as counting by hand.
 */
const NON_ASCII = /[\u0080-\uffff]/;

/**
 * The number of bytes `text[from..to)` takes as UTF-8, which is how Chrome and the host measure a message against
 * their limits and the protocol counts sizes. A lone surrogate counts 3 bytes, as the U+FFFD it is encoded as;
 * JSON.stringify escapes lone surrogates anyway, so they don't occur in the texts the client measures.
 *
 * Text that is all ASCII, as most cached text nearly is, is one byte a unit: a native search says so, and only
 * other text is counted by hand. Neither copies the text (a TextEncoder would, and in Chromium its `encodeInto` is
 * slower than counting by hand).
 */
export function utf8Length(text: string, from = 0, to = text.length): number {
  if (to - from >= UTF8_BY_HAND_UNITS && !NON_ASCII.test(from === 0 && to === text.length ? text : text.slice(from, to))) {
    return to - from;
  }
  let bytes = 0;
  for (let i = from; i < to; i++) {
    const unit = text.charCodeAt(i);
    if (unit < 0x80) {
      bytes += 1;
    } else if (unit < 0x800) {
      bytes += 2;
    } else if (isHighSurrogate(unit) && i + 1 < to && isLowSurrogate(text.charCodeAt(i + 1))) {
      bytes += 4;
      i++;
    } else {
      bytes += 3;
    }
  }
  return bytes;
}

export function isHighSurrogate(unit: number): boolean {
  return unit >= 0xd800 && unit <= 0xdbff;
}

export function isLowSurrogate(unit: number): boolean {
  return unit >= 0xdc00 && unit <= 0xdfff;
}

/**
 * A surrogate, and a raw control character (which a JSON string can't hold unescaped): each one character range,
 * which V8 searches at memory speed, where a class of several ranges is many times slower.
 */
export const SURROGATE = /[\ud800-\udfff]/;
export const CONTROL_CHARACTER = /[\u0000-\u001f]/;
