/**
 * Notes written and listed through the StorageTool, as the LLM would: what the routing and fallback tests use to
 * see where each session's items went, in the words the LLM reads.
 */

import assert from "node:assert/strict";
import type { LlmCache } from "../../src/llm-cache.js";

/** Writes through the tool, as the LLM would, and checks the write was acknowledged. */
export async function cacheNote(cache: LlmCache, sessionId: string, description: string): Promise<void> {
  const answer = await cache.tool.execute({ action: "write", data: `{"note": "${description}"}`, description }, { sessionId });
  assert.match(answer, /^cached /, answer);
}

/**
 * The descriptions the LLM's `list` shows, in order (newest first): the last column, read back from its JSON
 * string literal when the item is untrusted (the model's items are, in a cache that reports no context origins).
 */
export async function listed(cache: LlmCache, sessionId: string): Promise<string[]> {
  const text = await cache.tool.execute({ action: "list" }, { sessionId });
  return text
    .split("\n")
    .slice(1)
    .filter((line) => line.includes(" | "))
    .map((line) => line.split(" | ")[5] as string)
    .map((description) => (description.startsWith('"') ? (JSON.parse(description) as string) : description));
}
