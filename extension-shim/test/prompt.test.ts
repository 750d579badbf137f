/**
 * The system prompt section: the exported string and prompt/system-prompt.md must not drift apart, it teaches
 * what the definitions ask for, and withCachePrompt adds it to an agent's prompt once.
 */

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { it } from "node:test";
import { STORAGE_TOOL_DEFINITIONS } from "../src/tool/definitions.js";
import { CACHE_SYSTEM_PROMPT, STRICT_PROMPT_NOTE, cachePrompt, withCachePrompt } from "../src/tool/prompt.js";
import { STORAGE_TOOL_NAME, STORAGE_TOOL_SPEC } from "../src/tool/spec.js";

const markdown = readFileSync(new URL("../../prompt/system-prompt.md", import.meta.url), "utf8");

it("is the same text as prompt/system-prompt.md", () => {
  assert.equal(CACHE_SYSTEM_PROMPT, markdown);
});

it("says when to cache, how to pass data, read the metadata, page, search, append, pass references, and recover", () => {
  assert.ok(CACHE_SYSTEM_PROMPT.includes(STORAGE_TOOL_NAME));
  for (const phrase of [
    "20 or more similar items",
    "over 10 KB",
    "several steps",
    '"data": "<JSON text>"',
    "text that isn't JSON (a plain summary) is cached as that text",
    "key | size | age | shape | description",
    '"pointer": "/emails/3"',
    '"offset": 20',
    '{"action": "search", "query": "invoice March"}',
    '{"action": "append", "storageKey": "...", "data": "[\\"summary 46\\"',
    "{{llm_cache:KEY}}",
    '{"$llm_cache": "KEY", "pointer": "/emails/3"}',
    "already cached: you then see its key, shape and a short preview",
    "quota exceeded: delete items",
    "data too large: split it",
    "storage unavailable",
    "process the data in your context",
  ]) {
    assert.ok(CACHE_SYSTEM_PROMPT.includes(phrase), `the prompt doesn't say "${phrase}"`);
  }
  // It names no action the tool doesn't have.
  for (const match of CACHE_SYSTEM_PROMPT.matchAll(/"action": "(\w+)"/g)) {
    assert.ok(STORAGE_TOOL_SPEC.parameters.action?.enum?.includes(match[1] as string), match[1]);
  }
});

it("tells a strict variant's LLM to pass null for unused parameters, naming every parameter", () => {
  assert.equal(cachePrompt("openaiResponses"), CACHE_SYSTEM_PROMPT);
  assert.equal(cachePrompt("gemini"), CACHE_SYSTEM_PROMPT);
  for (const variant of ["openaiResponsesStrict", "openaiChatStrict", "anthropicStrict"] as const) {
    assert.equal(cachePrompt(variant), CACHE_SYSTEM_PROMPT + STRICT_PROMPT_NOTE);
  }
  const example = JSON.parse(/`(\{"action": "list".*?\})`/.exec(STRICT_PROMPT_NOTE)?.[1] ?? "null");
  assert.deepEqual(Object.keys(example), STORAGE_TOOL_DEFINITIONS.openaiResponsesStrict.parameters.required);
});

it("is added to an agent's prompt once, however often it is added, and switches variant in place", () => {
  const base = "You are browserx, an agent that works in the user's browser.";
  const once = withCachePrompt(base);
  assert.equal(once, `${base}\n\n${CACHE_SYSTEM_PROMPT}`);
  assert.equal(withCachePrompt(once), once);
  const strict = withCachePrompt(once, "anthropicStrict");
  assert.equal(strict, `${base}\n\n${CACHE_SYSTEM_PROMPT}${STRICT_PROMPT_NOTE}`);
  assert.equal(withCachePrompt(strict, "anthropicStrict"), strict);
  assert.equal(withCachePrompt(strict), once);
  assert.equal(withCachePrompt(""), CACHE_SYSTEM_PROMPT);
});
