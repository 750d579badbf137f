/** The system prompt section: the exported string and prompt/system-prompt.md must not drift apart. */

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { it } from "node:test";
import { CACHE_SYSTEM_PROMPT } from "../src/prompt.js";
import { STORAGE_TOOL_NAME } from "../src/storage-tool.js";

const markdown = readFileSync(new URL("../../prompt/system-prompt.md", import.meta.url), "utf8");

it("is the same text as prompt/system-prompt.md", () => {
  assert.equal(CACHE_SYSTEM_PROMPT, markdown);
});

it("says when to cache, how to read the metadata, how to read one part, and what to do on errors", () => {
  assert.ok(CACHE_SYSTEM_PROMPT.includes(STORAGE_TOOL_NAME));
  for (const phrase of [
    "20 or more similar items",
    "over 10 KB",
    "several steps",
    "key | size | age | description",
    '"pointer": "/emails/3"',
    "quota exceeded: delete items",
    "data too large: split it",
    "storage unavailable",
    "process the data in your context",
  ]) {
    assert.ok(CACHE_SYSTEM_PROMPT.includes(phrase), `the prompt doesn't say "${phrase}"`);
  }
});
