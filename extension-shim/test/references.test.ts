/**
 * resolveReferences through the real host: cached data put into another tool's arguments, as a value or
 * spliced into a string, without the LLM reading it; and what the LLM reads when a reference is wrong.
 */

import assert from "node:assert/strict";
import { it } from "node:test";
import { REFERENCE_NOTE, spliceText } from "../src/references.js";
import { shortKey } from "../src/tool/keys.js";
import { hostCache } from "./helpers/host-cache.js";

it("replaces {$llm_cache} values anywhere in the arguments, with or without a pointer, and leaves the rest", async (t) => {
  const { cache, sessionId } = hostCache(t);
  const item = await cache.client.write({ sessionId, data: { emails: [{ subject: "Q3" }, { subject: "Offsite" }], n: 2 }, description: "d" });
  const key = shortKey(item.storageKey, sessionId);
  const args = {
    to: "bo@example.com",
    attachments: [{ $llm_cache: key, pointer: "/emails/1" }, { name: "n", value: { $llm_cache: item.storageKey, pointer: "/n" } }],
    all: { $llm_cache: key },
    untouched: [1, null, true, "{{not a reference}}"],
  };
  const before = structuredClone(args);
  const resolved = await cache.resolveReferences(args, { sessionId });
  assert.deepEqual(resolved, {
    to: "bo@example.com",
    attachments: [{ subject: "Offsite" }, { name: "n", value: 2 }],
    all: { emails: [{ subject: "Q3" }, { subject: "Offsite" }], n: 2 },
    untouched: [1, null, true, "{{not a reference}}"],
  });
  assert.deepEqual(args, before, "the caller's arguments are not changed");
  assert.equal(await cache.resolveReferences(before.untouched, { sessionId }), before.untouched, "nothing to resolve: the same object");
});

it("splices references into strings: text as it is, an array's elements as paragraphs, anything else as JSON", async (t) => {
  const { cache, sessionId } = hostCache(t);
  const write = async (data: unknown) => shortKey((await cache.client.write({ sessionId, data, description: "d" })).storageKey, sessionId);
  const summaries = await write(["Ana: Q3 numbers by Friday.", "Bo: offsite moved to May.", { from: "cy", summary: "Invoice $100 {paid}" }]);
  const note = await write({ text: "a note with }} braces", tags: ["x"] });
  const body = `# Inbox\n\n{{llm_cache:${summaries}}}\n\nNote: {{llm_cache:${note}/text}} ({{llm_cache:${note}/tags}}) and {{llm_cache:${note}/tags/0}}.`;
  const resolved = await cache.resolveReferences({ title: "Inbox", body }, { sessionId });
  assert.equal(
    resolved.body,
    '# Inbox\n\nAna: Q3 numbers by Friday.\n\nBo: offsite moved to May.\n\n{"from":"cy","summary":"Invoice $100 {paid}"}\n\n' +
      'Note: a note with }} braces (x) and x.',
  );
  assert.equal(spliceText(42), "42");
});

it("a reference that names nothing, or a malformed one, fails with what to do next; the tool doesn't run", async (t) => {
  const { cache, sessionId } = hostCache(t);
  let ran = false;
  const writeDoc = cache.withReferences(async (args: { body: string }) => {
    ran = true;
    return `wrote ${args.body.length} characters`;
  });
  await assert.rejects(
    writeDoc({ body: "{{llm_cache:aaaaaaaa_bbbbbbbb}}" }, { sessionId }),
    /^Error: llm_cache reference failed: ItemNotFoundError: .*Next: list /,
  );
  const item = await cache.client.write({ sessionId, data: { a: 1 }, description: "d" });
  await assert.rejects(
    writeDoc({ body: `{{llm_cache:${shortKey(item.storageKey, sessionId)}/b}}` }, { sessionId }),
    /^Error: llm_cache reference failed: ItemNotFoundError: .*\/b/,
  );
  await assert.rejects(
    cache.resolveReferences({ x: { $llm_cache: "k", extra: 1 } }, { sessionId }),
    /an object with "\$llm_cache" is a reference, and has only/,
  );
  assert.equal(ran, false);
  assert.equal(await writeDoc({ body: "plain" }, { sessionId }), "wrote 5 characters");
  assert.match(REFERENCE_NOTE, /llm_cache references/);
});
