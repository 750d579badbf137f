/**
 * Where an item's text came from (PROTOCOL.md section 5.13): the `provenance` a write, update or append may carry,
 * read and checked here, its canonical form, its JSON text, and the merge that update and append make. The twin of
 * the host's `src/provenance.rs`, word for word in its errors.
 *
 * The store keeps provenance and never judges it: whether an item is trusted is the tool's and the extension's
 * business. The merge only ever adds to what the item says it was made from, so no update or append can make an
 * item look more trusted than it was; only `endorse` does, and only the extension's code calls it.
 */

import {
  MAX_DERIVED_FROM,
  MAX_SOURCE_TOOL_CHARS,
  MAX_SOURCE_URL_CHARS,
  ORIGINS,
  type Origin,
  type Provenance,
  type ProvenanceInput,
} from "../../protocol.js";
import { decodeString, elements, isRuleError, members, parseStorageKey } from "./json/index.js";
import { HostError, jsonTypeName, quote } from "./error.js";
import { rustDebug } from "./message.js";
import { isTrusted } from "../../provenance.js";

/** What `origin` (and each `upstream` entry) must be. */
const ORIGIN_EXPECTED = `one of ${ORIGINS.join(", ")}`;
const PROVENANCE_EXPECTED = "an object with `origin` and, if known, `source`, `upstream` and `derivedFrom`";
const SOURCE_EXPECTED = `an object with \`url\` (1 to ${MAX_SOURCE_URL_CHARS} characters) and/or \`tool\` (1 to ${MAX_SOURCE_TOOL_CHARS} characters of A-Z a-z 0-9 _ . : / -)`;
const URL_EXPECTED = `a string of 1 to ${MAX_SOURCE_URL_CHARS} characters`;
const TOOL_EXPECTED = `a string of 1 to ${MAX_SOURCE_TOOL_CHARS} characters of A-Z a-z 0-9 _ . : / -`;
const UPSTREAM_EXPECTED = `an array of at most ${ORIGINS.length} origins (${ORIGINS.join(", ")})`;
const DERIVED_EXPECTED = `an array of at most ${MAX_DERIVED_FROM} storage keys of this session`;
/** The most characters of a member name or an origin an error message echoes. */
const MAX_ECHO_CHARS = 40;

/** An item stored without provenance reads as this. */
export function unknownProvenance(): Provenance {
  return { origin: "unknown" };
}

/**
 * Reads and checks a request's `provenance` (its raw JSON text, or undefined when absent), in one pass over its
 * members and one over each array, never recursing: the canonical form, upstream a set in ORIGINS order and
 * derivedFrom without duplicates (a key named twice keeps its last place).
 *
 * @throws HostError `InvalidRequestError` naming the member at fault.
 */
export function provenanceOf(raw: string | undefined, sessionId: string): ProvenanceInput | undefined {
  if (raw === undefined) return undefined;
  const text = raw.replace(/^[ \t\n\r]+/, "");
  if (!text.startsWith("{")) throw HostError.invalidField("provenance", PROVENANCE_EXPECTED, jsonTypeName(text));
  let origin: Origin | undefined;
  let source: ProvenanceInput["source"];
  let upstream: Origin[] = [];
  let derivedFrom: string[] = [];
  eachMember(text, "provenance", (name, value) => {
    switch (name) {
      case "origin":
        origin = originOf(value, "provenance.origin", ORIGIN_EXPECTED);
        break;
      case "source":
        source = sourceOf(value);
        break;
      case "upstream":
        upstream = upstreamOf(value);
        break;
      case "derivedFrom":
        derivedFrom = derivedFromOf(value, sessionId);
        break;
      case "endorsed":
        throw new HostError(
          "InvalidRequestError",
          "`provenance.endorsed` is set only by the endorse op",
          "leave `endorsed` out; the extension's code vouches for an item with the endorse op",
        )
          .expected("provenance without `endorsed`")
          .actual("`endorsed`");
      default:
        throw unknownMember("provenance", name, "`origin`, `source`, `upstream` and `derivedFrom`");
    }
  });
  if (origin === undefined) throw HostError.missingField("provenance.origin", ORIGIN_EXPECTED);
  return canonical({ origin, source, upstream, derivedFrom });
}

/** `provenance` in its canonical form: only non-empty members, upstream in ORIGINS order. */
function canonical(provenance: Provenance): Provenance {
  const out: Provenance = { origin: provenance.origin };
  const source = provenance.source;
  if (source !== undefined && (source.url !== undefined || source.tool !== undefined)) {
    out.source = {};
    if (source.url !== undefined) out.source.url = source.url;
    if (source.tool !== undefined) out.source.tool = source.tool;
  }
  const upstream = ORIGINS.filter((origin) => provenance.upstream?.includes(origin));
  if (upstream.length > 0) out.upstream = upstream;
  if (provenance.derivedFrom !== undefined && provenance.derivedFrom.length > 0) out.derivedFrom = [...provenance.derivedFrom];
  if (provenance.endorsed !== undefined) out.endorsed = { at: provenance.endorsed.at, reason: provenance.endorsed.reason };
  return out;
}

/**
 * Visits an object's members (`text` is its well-formed JSON text) with their decoded names (as written, when a
 * name holds an unpaired surrogate escape) and value texts.
 *
 * @throws HostError `InvalidRequestError` for a member named twice, or whatever `visit` throws.
 */
function eachMember(text: string, field: string, visit: (name: string, value: string) => void): void {
  const seen = new Set<string>();
  members(text, (nameStart, nameEnd, valueStart, valueEnd) => {
    const raw = text.slice(nameStart, nameEnd);
    const name = decodeString(raw.slice(1, -1)) ?? raw;
    if (seen.has(name)) {
      throw new HostError("InvalidRequestError", `\`${field}\` has the member ${echo(name)} twice`, "send each member once")
        .expected("an object whose member names differ")
        .actual(`${echo(name)} twice`);
    }
    seen.add(name);
    visit(name, text.slice(valueStart, valueEnd));
  });
}

/** The refusal of a member an object doesn't take. */
function unknownMember(field: string, name: string, takes: string): HostError {
  return new HostError("InvalidRequestError", `\`${field}\` has the member ${echo(name)}, which it doesn't take`, `send only ${takes}`)
    .expected(takes)
    .actual(echo(name));
}

/** A name or value as messages show it: as Rust's `{:?}` writes its first MAX_ECHO_CHARS characters. */
function echo(text: string): string {
  return rustDebug(Array.from(text).slice(0, MAX_ECHO_CHARS).join(""));
}

/**
 * A string member's value.
 *
 * @throws HostError `InvalidRequestError` when it is not a string of Unicode text.
 */
function stringOf(value: string, field: string, expected: string): string {
  if (!value.startsWith('"')) throw HostError.invalidField(field, expected, jsonTypeName(value));
  const decoded = decodeString(value.slice(1, -1));
  if (decoded === undefined) throw HostError.invalidField(field, expected, "a string with an unpaired surrogate escape");
  return decoded;
}

/** An origin: one of ORIGINS. */
function originOf(value: string, field: string, expected: string): Origin {
  const text = stringOf(value, field, expected);
  const origin = ORIGINS.find((known) => known === text);
  if (origin === undefined) throw HostError.invalidField(field, expected, echo(text));
  return origin;
}

/** `source`: `url` and `tool`, each optional. */
function sourceOf(value: string): ProvenanceInput["source"] {
  if (!value.startsWith("{")) throw HostError.invalidField("provenance.source", SOURCE_EXPECTED, jsonTypeName(value));
  const source: { url?: string; tool?: string } = {};
  eachMember(value, "provenance.source", (name, member) => {
    if (name === "url") {
      const url = stringOf(member, "provenance.source.url", URL_EXPECTED);
      const chars = Array.from(url).length;
      if (chars < 1 || chars > MAX_SOURCE_URL_CHARS) throw HostError.invalidField("provenance.source.url", URL_EXPECTED, `a string of ${chars} characters`);
      source.url = url;
    } else if (name === "tool") {
      const tool = stringOf(member, "provenance.source.tool", TOOL_EXPECTED);
      const chars = Array.from(tool).length;
      if (chars < 1 || chars > MAX_SOURCE_TOOL_CHARS) throw HostError.invalidField("provenance.source.tool", TOOL_EXPECTED, `a string of ${chars} characters`);
      if (!/^[A-Za-z0-9_.:/-]+$/.test(tool)) throw HostError.invalidField("provenance.source.tool", TOOL_EXPECTED, "a string with other characters");
      source.tool = tool;
    } else {
      throw unknownMember("provenance.source", name, "`url` and `tool`");
    }
  });
  return source;
}

/** `upstream`: at most one entry per origin; duplicates collapse. */
function upstreamOf(value: string): Origin[] {
  if (!value.startsWith("[")) throw HostError.invalidField("provenance.upstream", UPSTREAM_EXPECTED, jsonTypeName(value));
  const found: Origin[] = [];
  let count = 0;
  elements(value, (start, end) => {
    if (++count > ORIGINS.length) {
      throw HostError.invalidField("provenance.upstream", UPSTREAM_EXPECTED, `an array of more than ${ORIGINS.length} entries`);
    }
    found.push(originOf(value.slice(start, end), "provenance.upstream", UPSTREAM_EXPECTED));
  });
  return found;
}

/** `derivedFrom`: storage keys of the session, oldest first; a key named twice keeps its last place. */
function derivedFromOf(value: string, sessionId: string): string[] {
  if (!value.startsWith("[")) throw HostError.invalidField("provenance.derivedFrom", DERIVED_EXPECTED, jsonTypeName(value));
  const keys: string[] = [];
  elements(value, (start, end) => {
    if (keys.length >= MAX_DERIVED_FROM) {
      throw HostError.invalidField("provenance.derivedFrom", DERIVED_EXPECTED, `an array of more than ${MAX_DERIVED_FROM} entries`);
    }
    const key = stringOf(value.slice(start, end), "provenance.derivedFrom", DERIVED_EXPECTED);
    const parts = parseStorageKey(key);
    if (isRuleError(parts)) throw HostError.invalidField("provenance.derivedFrom", DERIVED_EXPECTED, "a string that is not a storage key");
    if (parts.sessionId !== sessionId) throw HostError.invalidField("provenance.derivedFrom", DERIVED_EXPECTED, "a key of another session");
    keys.push(key);
  });
  return lastPlaces(keys);
}

/** The keys with each one's earlier places dropped, so each stands where it came last. */
function lastPlaces(keys: readonly string[]): string[] {
  return keys.filter((key, at) => keys.indexOf(key, at + 1) < 0);
}

/**
 * What an item whose provenance was `stored` (undefined: unknown) says after an update or append whose provenance
 * is `incoming` (undefined counts as `{origin: "unknown"}`): origin and source stay; upstream gains the incoming
 * upstream and its origin when it differs; derivedFrom gains the incoming keys at its end, keeping the newest
 * MAX_DERIVED_FROM; the endorsement stays only when the incoming text is trusted by itself.
 */
export function merged(stored: Provenance | undefined, incoming: ProvenanceInput | undefined): Provenance {
  const before = stored ?? unknownProvenance();
  const added = incoming ?? unknownProvenance();
  const upstream = [...(before.upstream ?? []), ...(added.upstream ?? [])];
  if (added.origin !== before.origin) upstream.push(added.origin);
  const derivedFrom = lastPlaces([...(before.derivedFrom ?? []), ...(added.derivedFrom ?? [])]).slice(-MAX_DERIVED_FROM);
  const endorsed = isTrusted({ origin: added.origin, upstream: added.upstream }) ? before.endorsed : undefined;
  return canonical({ origin: before.origin, source: before.source, upstream, derivedFrom, endorsed });
}

/** Provenance's JSON text, members in the canonical order, as the host's serde writes it. */
export function provenanceJson(provenance: Provenance | undefined): string {
  const p = provenance ?? unknownProvenance();
  let text = `{"origin":${quote(p.origin)}`;
  if (p.source !== undefined) {
    const parts: string[] = [];
    if (p.source.url !== undefined) parts.push(`"url":${quote(p.source.url)}`);
    if (p.source.tool !== undefined) parts.push(`"tool":${quote(p.source.tool)}`);
    text += `,"source":{${parts.join(",")}}`;
  }
  if (p.upstream !== undefined) text += `,"upstream":[${p.upstream.map(quote).join(",")}]`;
  if (p.derivedFrom !== undefined) text += `,"derivedFrom":[${p.derivedFrom.map(quote).join(",")}]`;
  if (p.endorsed !== undefined) text += `,"endorsed":{"at":${p.endorsed.at},"reason":${quote(p.endorsed.reason)}}`;
  return `${text}}`;
}
