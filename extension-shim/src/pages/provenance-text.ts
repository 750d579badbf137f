/**
 * Where an item came from, as the viewer's user reads it: the origin in words, the source page's host or the
 * tool's name, what the item was made from, and whether the agent's tool treats its text as trusted. Pure, so
 * the tests check it without a browser.
 */

import type { Provenance } from "../protocol.js";
import { isTrusted, urlHost } from "../provenance.js";

/** What the viewer says of an item's trust: endorsed by the extension, trusted by its origins, or not. */
export type TrustWord = "endorsed" | "trusted" | "untrusted";

/** The viewer's trust filter. */
export type TrustFilter = "trusted" | "untrusted";

/** The item's trust as the tool judges it (provenance.ts), with an endorsement named as such. */
export function trustWord(provenance: Provenance): TrustWord {
  if (provenance.endorsed) return "endorsed";
  return isTrusted(provenance) ? "trusted" : "untrusted";
}

/** "web · example.com", "tool · fetch_page", "agent, made from web and email": one line, for a table cell. */
export function originText(provenance: Provenance): string {
  // The host as the tool's `from` column shows it (punycode); a URL it can't show a host of, as written.
  const url = provenance.source?.url;
  const where = url !== undefined ? (urlHost(url) ?? url) : provenance.source?.tool;
  const origin = where ? `${provenance.origin} · ${where}` : provenance.origin;
  const upstream = (provenance.upstream ?? []).filter((other) => other !== provenance.origin);
  return upstream.length === 0 ? origin : `${origin}, made from ${wordList(upstream)}`;
}

/** Whether an item passes the viewer's filters: its origin, and its trust ("trusted" includes endorsed). */
export function passes(provenance: Provenance, origin: string | undefined, trust: TrustFilter | undefined): boolean {
  if (origin && provenance.origin !== origin) return false;
  if (trust === "trusted") return trustWord(provenance) !== "untrusted";
  if (trust === "untrusted") return trustWord(provenance) === "untrusted";
  return true;
}

function wordList(words: readonly string[]): string {
  return words.length < 2 ? words.join("") : `${words.slice(0, -1).join(", ")} and ${words[words.length - 1]}`;
}
