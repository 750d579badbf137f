/**
 * resolveReferences through the real host: cached data put into another tool's arguments, as a value or
 * spliced into a string, without the LLM reading it; and what the LLM reads when a reference is wrong.
 */

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { CacheError } from "../src/errors.js";
import { MAX_ITEM_BYTES } from "../src/protocol.js";
import { MAX_REFERENCE_BYTES, MAX_REFERENCES, REFERENCE_NOTE, spliceText } from "../src/references.js";
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

describe("bounded expansion", () => {
  it(`references may put at most MAX_REFERENCE_BYTES (${MAX_REFERENCE_BYTES} bytes) into one call; past it, an error naming the limit`, async (t) => {
    // Plain replies: the debug host gzips 5 MB slowly, and compression is not what this is about.
    const { cache, sessionId } = hostCache(t, { compression: false });
    // One item of the host's largest size, named again and again.
    const text = "x".repeat(MAX_ITEM_BYTES - 2);
    const key = shortKey((await cache.client.write({ sessionId, data: text, description: "5 MB" })).storageKey, sessionId);
    let ran = 0;
    const writeDoc = cache.withReferences(async (args: unknown) => {
      ran++;
      return typeof args;
    });
    const times = Math.floor(MAX_REFERENCE_BYTES / MAX_ITEM_BYTES) + 1;
    const refused = [
      { body: `{{llm_cache:${key}}}\n`.repeat(times) },
      { parts: Array.from({ length: times }, () => `{{llm_cache:${key}}}`) },
      { parts: Array.from({ length: times }, () => ({ $llm_cache: key })) },
    ];
    for (const args of refused) {
      await assert.rejects(writeDoc(args, { sessionId }), (error: Error) => {
        assert.match(error.message, /^llm_cache reference failed: DataTooLargeError: the references in this call expand to more than 20MB/);
        assert.match(error.message, /Next: .*pointer/);
        return true;
      });
    }
    assert.equal(ran, 0, "the tool never ran");

    // Up to the limit, the same references resolve.
    const allowed = times - 1;
    const resolved = await cache.resolveReferences({ body: `{{llm_cache:${key}}}`.repeat(allowed) }, { sessionId });
    assert.equal(resolved.body.length, allowed * text.length);
  });

  it(`at most MAX_REFERENCES (${MAX_REFERENCES}) different references in one call`, async (t) => {
    const { cache, sessionId } = hostCache(t);
    const item = await cache.client.write({ sessionId, data: Array.from({ length: MAX_REFERENCES + 1 }, (_, i) => i), description: "d" });
    const key = shortKey(item.storageKey, sessionId);
    const body = (count: number) => Array.from({ length: count }, (_, i) => `{{llm_cache:${key}/${i}}}`).join(",");
    assert.equal((await cache.resolveReferences({ body: body(MAX_REFERENCES) }, { sessionId })).body, body(MAX_REFERENCES).replace(/\{\{[^}]*\/(\d+)\}\}/g, "$1"));
    await assert.rejects(cache.resolveReferences({ body: body(MAX_REFERENCES + 1) }, { sessionId }), (error: CacheError) => {
      assert.equal(error.code, "InvalidRequestError");
      assert.match(error.message, /^more than 100 different references in one call; at most 100 are resolved/);
      return true;
    });
  });

  it("arguments nested 200,000 deep, or holding a cycle, resolve without overflowing the stack", async (t) => {
    const { cache, sessionId } = hostCache(t);
    const key = shortKey((await cache.client.write({ sessionId, data: { n: 1 }, description: "d" })).storageKey, sessionId);
    const depth = 200_000; // recursion overflows the stack at about 10,000
    let nested: unknown = [{ $llm_cache: key }, `{{llm_cache:${key}/n}}`];
    for (let i = 0; i < depth; i++) nested = [nested];
    let resolved = await cache.resolveReferences(nested, { sessionId });
    for (let i = 0; i < depth; i++) resolved = (resolved as unknown[])[0];
    assert.deepEqual(resolved, [{ n: 1 }, "1"]);

    const cyclic: { body: string; self?: unknown } = { body: `{{llm_cache:${key}/n}}` };
    cyclic.self = cyclic;
    const copy = await cache.resolveReferences(cyclic, { sessionId });
    assert.equal(copy.body, "1");
    assert.equal(copy.self, copy, "the copy has the same cycle");
    assert.equal(cyclic.body, `{{llm_cache:${key}/n}}`, "the caller's arguments are not changed");
  });

  it("a malformed reference holding what JSON can't show is still a clear error", async (t) => {
    const { cache, sessionId } = hostCache(t);
    await assert.rejects(cache.resolveReferences({ x: { $llm_cache: "k", extra: 10n } }, { sessionId }), (error: CacheError) => {
      assert.equal(error.code, "InvalidRequestError");
      assert.match(error.message, /an object with "\$llm_cache" is a reference, and has only/);
      assert.equal(error.actual, "an object with $llm_cache, extra");
      return true;
    });
    const huge = Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`member${i}`, i]));
    await assert.rejects(cache.resolveReferences({ $llm_cache: "k", ...huge }, { sessionId }), (error: CacheError) => {
      assert.ok(String(error.actual).length <= 120, String(error.actual));
      return true;
    });
  });
});
