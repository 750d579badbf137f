/**
 * A model that sends `data` as an object where the schema says JSON text. Where our handler sees the call (the
 * plain definitions, StorageTool.run), the object is cached as its JSON text would have been, and the answer
 * says nothing about it. Where browserx's parameter check refuses it first, with only "Parameter validation
 * failed", the definition and the prompt say that data is a string, and what that message means; the added
 * bytes are measured and bounded. Runs against the real host.
 */

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { BROWSERX_DATA_NOTE, browserxTools } from "../src/adapters/browserx.js";
import { BrowserxStyleRegistry, llmOutput } from "./helpers/browserx-registry.js";
import { hostCache } from "./helpers/host-cache.js";
import { memoryAreas } from "./helpers/memory-storage.js";

const OBJECT = { from: "ana@example.com", tags: ["q3", "budget"], count: 3 };

/** An answer's metadata line without the key and age, which differ from item to item. */
function metadataOf(answer: string): string {
  return answer.replace(/[a-z0-9]{8}_[a-z0-9]{8}/, "KEY").replace(/ \| \d+[smhd] \| /, " | AGE | ");
}

describe("the plain handler", () => {
  it("caches an object sent as data exactly as its JSON text, and the answer says nothing of it", async (t) => {
    // Nothing but the model's own writing enters this context, so its items are trusted and shown plain.
    const { cache, sessionId } = hostCache(t, { contextOrigins: [] });
    const asText = await cache.tool.run({ action: "write", data: JSON.stringify(OBJECT), description: "email" }, { sessionId });
    const asObject = await cache.tool.run({ action: "write", data: OBJECT, description: "email" }, { sessionId });
    assert.equal(asObject.ok, true);
    assert.equal(metadataOf(asObject.text), metadataOf(asText.text));
    assert.match(asObject.text, /^cached [a-z0-9_]+ \| \d+B \| \d+s \| you \| object\{from,tags,count\} \| email$/);

    const key = /^cached ([a-z0-9_]+) /.exec(asObject.text)?.[1];
    const read = await cache.tool.run({ action: "read", storageKey: key, pointer: "/tags/1" }, { sessionId });
    assert.match(read.text, /\ndata at \/tags\/1: "budget"$/);

    // update too, and with the strict variants' nulls beside it.
    const nulls = { description: null, pointer: null, offset: null, limit: null, query: null, cursor: null, customMetadata: null };
    const updated = await cache.tool.run({ ...nulls, action: "update", storageKey: key, data: [1, 2] }, { sessionId });
    assert.match(updated.text, /^updated [a-z0-9_]+ \| 5B \| \d+s \| you \| array\[2\] of number \| email$/);
  });
});

describe("the browserx path, where browserx refuses the object before our handler", () => {
  it("the definition and the prompt say data is a string, and what browserx's bare refusal means", async (t) => {
    const { cache, sessionId } = hostCache(t, { contextOrigins: [] });
    const tools = browserxTools(cache, { browserStorage: { areas: memoryAreas() } });
    const registry = new BrowserxStyleRegistry();
    await registry.register(tools.llmCache.definition, tools.llmCache.handler);

    const refused = await registry.execute({ toolName: "llm_cache", parameters: { action: "write", data: OBJECT, description: "d" }, sessionId, turnId: "turn_1" });
    assert.equal(llmOutput(refused), "Error: Parameter validation failed", "browserx's answer, all the LLM reads");

    // What the LLM has read before that call: data's description (the one place it is said), which
    // browserx's registration ends with what its bare refusal means.
    const definition = tools.llmCache.definition.function;
    const parameters = definition.parameters;
    assert.ok(parameters.type === "object");
    const property = parameters.properties.data;
    assert.ok(property?.type === "string");
    const data = property.description ?? "";
    assert.ok(data.startsWith("A string, never an object or array: the value as JSON text"));
    assert.ok(data.endsWith(BROWSERX_DATA_NOTE));
    assert.equal(Buffer.byteLength(BROWSERX_DATA_NOTE), 84, "the note stays short: it is sent on every request");

    // The same call as JSON text then goes through.
    const fixed = await registry.execute({ toolName: "llm_cache", parameters: { action: "write", data: JSON.stringify(OBJECT), description: "d" }, sessionId, turnId: "turn_2" });
    assert.match(llmOutput(fixed), /^"cached [a-z0-9_]+ \| \d+B \| \d+s \| you \| object\{from,tags,count\} \| d"$/);
  });
});
