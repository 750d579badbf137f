/**
 * Where an item's text came from, as the model is shown it: the one place that decides whether an item is
 * trusted, the `from` column's label, how free text of either kind is written on a line, and the fences around
 * an untrusted item's data.
 *
 * The host stores provenance and never judges it (PROTOCOL.md section 5.13); the shim judges it here and nowhere
 * else, so the tool, offloading, references and the viewer can't disagree about an item.
 *
 * An untrusted item's text is never printed where it could pass for the reply's own text: its free text is a
 * JSON string literal, and its data stands between `<untrusted-ID>` and `</untrusted-ID>` on one line, where ID
 * is drawn at random for each reply and drawn again until nothing in the reply, read generously (NFKC, default-
 * ignorable characters removed, case folded), contains it. Content can't close a fence it can't name.
 */

import { MAX_SOURCE_TOOL_CHARS, TRUSTED_ORIGINS, type CacheMetadata, type Origin, type Provenance } from "./protocol.js";

/** What an item without provenance (a store or host from before provenance) reads as: untrusted. */
export const UNKNOWN_PROVENANCE: Provenance = { origin: "unknown" };

/** The characters of a fence id, and its length: 36^8 ids, so a reply's content rules out almost none of them. */
const FENCE_ID_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789";
const FENCE_ID_LENGTH = 8;

/**
 * The most ids drawn for one reply. A reply holds at most a few hundred thousand 8-character windows against
 * 2.8e12 ids, so a second draw is already rare; past this many the random source is broken, not unlucky.
 */
export const MAX_FENCE_DRAWS = 32;

/** Every line terminator a reader may split on: the ones JSON.stringify escapes, and the Unicode ones it doesn't. */
const LINE_TERMINATORS = /[\r\n\v\f\u0085\u2028\u2029]+/g;
/** The line terminators JSON.stringify leaves raw in a string literal. */
const UNESCAPED_BY_JSON = /[\u0085\u2028\u2029]/g;

/** An item's provenance; `{origin: "unknown"}` when its backend sent none. */
export function provenanceOf(item: { provenance?: Provenance | undefined }): Provenance {
  return item.provenance ?? UNKNOWN_PROVENANCE;
}

/**
 * Whether the item's text may be shown as the model's own: it is endorsed, or its origin and every upstream
 * origin are the user's, the extension's or the model's own writing. Everything else, `unknown` included, is not.
 */
export function isTrusted(provenance: Provenance): boolean {
  if (provenance.endorsed !== undefined) return true;
  return trustedOrigin(provenance.origin) && (provenance.upstream ?? []).every(trustedOrigin);
}

function trustedOrigin(origin: Origin): boolean {
  return TRUSTED_ORIGINS.includes(origin);
}

/**
 * The origins an item brings into whatever is made from it: its origin and upstream origins that aren't trusted.
 * None for a trusted item (an endorsed one included: the extension vouched for it).
 */
export function untrustedOrigins(provenance: Provenance): Origin[] {
  if (isTrusted(provenance)) return [];
  const origins = [provenance.origin, ...(provenance.upstream ?? [])].filter((origin) => !trustedOrigin(origin));
  return [...new Set(origins)];
}

/** How the `from` column names one origin by itself. */
const ORIGIN_LABELS: Record<Origin, string> = {
  web: "web",
  email: "email",
  tool: "tool",
  user: "user",
  extension: "extension",
  agent: "you",
  unknown: "unknown",
};

/**
 * The `from` column: `you`, `user` or `extension` for a trusted item (an endorsed item of another origin is
 * `extension`, which vouched for it); for an untrusted one its origin (`web <host>`, `email`, `tool <name>`,
 * `unknown`, `you`, ...) then, when its upstream holds untrusted origins, `, from` and those (`you, from web,
 * email`). Only ASCII without `|` or spaces inside a name, so the column can't be mistaken for another.
 */
export function fromLabel(provenance: Provenance): string {
  if (isTrusted(provenance)) return trustedOrigin(provenance.origin) ? ORIGIN_LABELS[provenance.origin] : "extension";
  let label = ORIGIN_LABELS[provenance.origin];
  if (provenance.origin === "web") {
    const host = urlHost(provenance.source?.url);
    if (host !== undefined) label += ` ${host}`;
  } else if (provenance.origin === "tool") {
    const tool = provenance.source?.tool;
    if (tool !== undefined && isSourceTool(tool)) label += ` ${tool}`;
  }
  const upstream = (provenance.upstream ?? []).filter((origin) => !trustedOrigin(origin));
  return upstream.length === 0 ? label : `${label}, from ${upstream.map((origin) => ORIGIN_LABELS[origin]).join(", ")}`;
}

/**
 * Whether `name` may stand as a tool's name in `source.tool`, and so in the `from` column: 1 to
 * MAX_SOURCE_TOOL_CHARS of [A-Za-z0-9_.:/-], as the stores check it (PROTOCOL.md section 5.13).
 */
export function isSourceTool(name: string): boolean {
  return name.length >= 1 && name.length <= MAX_SOURCE_TOOL_CHARS && /^[A-Za-z0-9_.:/-]+$/.test(name);
}

/**
 * A URL's host as WHATWG URL gives it: ASCII, an internationalised name in punycode. Nothing when there is no
 * host, or when it holds anything but printable ASCII without `|`, `,` and spaces (an opaque host of an odd
 * scheme), which would blur the column.
 */
export function urlHost(url: string | undefined): string | undefined {
  if (url === undefined) return undefined;
  let host: string;
  try {
    host = new URL(url).hostname;
  } catch {
    return undefined;
  }
  return /^[\x21-\x7e]+$/.test(host) && !/[|,]/.test(host) ? host : undefined;
}

/** A trusted item's free text on one line: every line terminator becomes a space, and `|` becomes `¦`. */
export function plainText(text: string): string {
  return text.replace(LINE_TERMINATORS, " ").replace(/\|/g, "¦");
}

/** An untrusted item's free text: a JSON string literal, with every line terminator escaped. */
export function quotedText(text: string): string {
  return escapeUnicodeTerminators(JSON.stringify(text));
}

/** An item's free text as its trust says: plain for a trusted item, a JSON string literal for an untrusted one. */
export function freeText(text: string, trusted: boolean): string {
  return trusted ? plainText(text) : quotedText(text);
}

/** JSON text with U+0085, U+2028 and U+2029 escaped, so that it stays on one line for every reader. */
export function escapeUnicodeTerminators(json: string): string {
  return json.replace(UNESCAPED_BY_JSON, (character) => `\\u${character.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/** A data body that goes between the reply's fences: compact JSON text on one line. */
export interface Fenced {
  fenced: string;
}

/** A value's compact JSON text, to be fenced. `undefined` (nothing JSON can write) is written as null. */
export function fence(value: unknown): Fenced {
  return { fenced: escapeUnicodeTerminators(JSON.stringify(value) ?? "null") };
}

/**
 * Text that is already one line of JSON (a cut of a value's JSON text, as a preview shows it), to be fenced as it
 * is: quoting it again would double every quote the model reads. Only U+0085, U+2028 and U+2029, which JSON keeps
 * raw, are escaped.
 */
export function fenceJsonText(json: string): Fenced {
  return { fenced: escapeUnicodeTerminators(json) };
}

/** One piece of a reply: its own text, or an untrusted body to fence. */
export type ReplyPart = string | Fenced;

/** A source of randomness shaped like crypto.getRandomValues; tests pass a stub to force a draw. */
export type RandomValues = (array: Uint8Array<ArrayBuffer>) => Uint8Array<ArrayBuffer>;

const defaultRandom: RandomValues = (array) => globalThis.crypto.getRandomValues(array);

/**
 * The reply: its parts joined, with every fenced body between `<untrusted-ID>` and `</untrusted-ID>`. The id is
 * chosen after the parts are all known, and drawn again until it occurs nowhere in the reply's text as a reader
 * might see it (see `lookAlikeText`): each draw is one search of text normalised once. A reply without fenced
 * parts draws nothing.
 *
 * # Errors
 * Throws when MAX_FENCE_DRAWS draws all occur in the text, which only a broken random source makes happen.
 */
export function assembleReply(parts: string | readonly ReplyPart[], random: RandomValues = defaultRandom): string {
  if (typeof parts === "string") return parts;
  if (!parts.some((part) => typeof part !== "string")) return parts.join("");
  // Joined as the reply joins them, so an id can't be formed across two parts either.
  const text = lookAlikeText(parts.map((part) => (typeof part === "string" ? part : part.fenced)).join(""));
  for (let draw = 0; draw < MAX_FENCE_DRAWS; draw++) {
    const id = fenceId(random);
    if (!text.includes(id)) {
      return parts.map((part) => (typeof part === "string" ? part : `<untrusted-${id}>${part.fenced}</untrusted-${id}>`)).join("");
    }
  }
  throw new Error(`no fence id absent from the reply after ${MAX_FENCE_DRAWS} draws: the random source repeats itself`);
}

/**
 * Text as a lenient reader would match an id in it: NFKC (fullwidth letters become ASCII), default-ignorable
 * characters (zero-width and bidi controls) removed, lower-cased.
 */
export function lookAlikeText(text: string): string {
  return text.normalize("NFKC").replace(/\p{Default_Ignorable_Code_Point}/gu, "").toLowerCase();
}

/**
 * Eight characters of [a-z0-9], each uniform: bytes of 252 and over are drawn again (252 = 7 × 36).
 *
 * # Errors
 * Throws when MAX_FENCE_DRAWS rounds of bytes don't give eight characters, which only a broken source makes happen.
 */
export function fenceId(random: RandomValues = defaultRandom): string {
  let id = "";
  for (let round = 0; round < MAX_FENCE_DRAWS && id.length < FENCE_ID_LENGTH; round++) {
    for (const byte of random(new Uint8Array(FENCE_ID_LENGTH))) {
      if (byte < 252 && id.length < FENCE_ID_LENGTH) id += FENCE_ID_ALPHABET[byte % 36];
    }
  }
  if (id.length < FENCE_ID_LENGTH) throw new Error("the random source gave no usable bytes for a fence id");
  return id;
}

/** Whether an item's metadata says it is trusted; an item without provenance is not. */
export function itemTrusted(item: Pick<CacheMetadata, "provenance"> | { provenance?: Provenance }): boolean {
  return isTrusted(provenanceOf(item));
}
