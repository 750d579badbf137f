/**
 * The browserx adapter, through a registry that behaves as browserx's (helpers/browserx-registry.ts) and the
 * real host: both tools register, every llm_cache action passes browserx's parameter check, the spec's
 * 50-email scenario runs with objects, arrays and strings as data, and failures arrive as failures whose
 * message still tells the LLM what to do next.
 */

import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { describe, it, type TestContext } from "node:test";
import { browserxTools, type BrowserxTools } from "../src/adapters/browserx.js";
import { createLlmCache } from "../src/llm-cache.js";
import { BrowserxStyleRegistry, llmOutput, type ToolDefinition, type ToolHandler } from "./helpers/browserx-registry.js";
import { hostConnector } from "./helpers/chrome-port.js";
import { MemoryStorage, memoryAreas } from "./helpers/memory-storage.js";
import { tempDir } from "./helpers/temp.js";

/** Compile-time: the pairs fit browserx's own types (declared independently in the helper), without casts. */
function typeCheck(tools: BrowserxTools): Array<[ToolDefinition, ToolHandler]> {
  return [
    [tools.llmCache.definition, tools.llmCache.handler],
    [tools.browserStorage.definition, tools.browserStorage.handler],
  ];
}

async function agent(t: TestContext) {
  const dir = tempDir();
  const connect = hostConnector({ dataDir: dir.path });
  const cache = createLlmCache({ storage: new MemoryStorage(), connect });
  const tools = browserxTools(cache, { browserStorage: { areas: memoryAreas() } });
  const registry = new BrowserxStyleRegistry();
  for (const [definition, handler] of typeCheck(tools)) await registry.register(definition, handler);
  t.after(async () => {
    cache.client.close();
    await connect.closeAll();
    dir.remove();
  });
  const sessionId = `conv_${randomUUID()}`;
  let turn = 0;
  /** One LLM tool call as browserx's TurnManager makes it: what the registry answers, and what the LLM reads. */
  const call = async (parameters: Record<string, any>) => {
    const response = await registry.execute({ toolName: "llm_cache", parameters, sessionId, turnId: `turn_${++turn}` });
    return { response, text: llmOutput(response) };
  };
  return { cache, registry, call, sessionId };
}

describe("registering with browserx", () => {
  it("both pairs register; a second registration of a name is refused as browserx refuses it", async (t) => {
    const { registry } = await agent(t);
    assert.deepEqual(
      registry.listTools().map((tool) => tool.type === "function" && tool.function.name),
      ["llm_cache", "browser_storage"],
    );
    const again = browserxTools(createLlmCache({ storage: new MemoryStorage(), connect: () => assert.fail() }));
    await assert.rejects(registry.register(again.llmCache.definition, again.llmCache.handler), /Tool 'llm_cache' is already registered/);
  });

  it("the llm_cache definition is browserx's shape: function, strict false, a type on every property, actions named", async (t) => {
    const { registry } = await agent(t);
    const definition = registry.listTools()[0];
    assert.ok(definition?.type === "function");
    assert.equal(definition.function.strict, false);
    const parameters = definition.function.parameters;
    assert.ok(parameters.type === "object");
    assert.deepEqual(parameters.required, ["action"]);
    assert.equal(parameters.additionalProperties, false);
    for (const property of Object.values(parameters.properties)) assert.ok(["string", "integer"].includes(property.type));
    const action = parameters.properties.action;
    assert.ok(action?.type === "string");
    assert.match(action.description ?? "", /One of: write, read, append, list, search, update, delete, stats\.$/);
  });

  it("every action's parameters pass browserx's check; what the schema doesn't allow is refused before the host", async (t) => {
    const { registry } = await agent(t);
    const valid = [
      { action: "write", data: '{"a":1}', description: "d", customMetadata: '{"source":"gmail"}' },
      { action: "read", storageKey: "aaaaaaaa_bbbbbbbb", pointer: "/a" },
      { action: "list", limit: 10, cursor: "c" },
      { action: "update", storageKey: "aaaaaaaa_bbbbbbbb", data: "[1]", description: "d" },
      { action: "delete", storageKey: "aaaaaaaa_bbbbbbbb" },
      { action: "stats" },
    ];
    for (const parameters of valid) assert.deepEqual(registry.validate("llm_cache", parameters), [], JSON.stringify(parameters));
    assert.deepEqual(registry.validate("llm_cache", { action: "write", data: { a: 1 }, description: "d" }), [
      { parameter: "data", message: "Expected string type", code: "TYPE_MISMATCH" },
    ]);
    assert.deepEqual(registry.validate("llm_cache", { action: "list", limit: 2.5 }), [
      { parameter: "limit", message: "Expected integer value", code: "TYPE_MISMATCH" },
    ]);
    assert.equal(registry.validate("llm_cache", { action: "list", sessionId: "conv_other" })[0]?.code, "UNKNOWN_PARAMETER");
  });
});

describe("the spec's 50-email scenario through browserx's registry and the real host", () => {
  it("caches 50 summaries as objects, arrays and strings, lists them, reads parts back, updates, and ends", async (t) => {
    const { call, cache, sessionId } = await agent(t);
    const keys: string[] = [];
    for (let n = 1; n <= 50; n++) {
      // Objects mostly; every fifth an array, every seventh plain text, as an LLM would mix them.
      const summary = { from: `sender${n}@example.com`, subject: `Subject ${n}`, summary: `Summary ${n}: ${"words ".repeat(20)}` };
      const data = n % 7 === 0 ? `Plain summary ${n}` : JSON.stringify(n % 5 === 0 ? [summary.from, summary.subject] : summary);
      const { response, text } = await call({ action: "write", data, description: `Summary of email ${n}/50` });
      assert.equal(response.success, true, text);
      const key = /^"cached ([a-z0-9]{8}_[a-z0-9]{8}) \|/.exec(text)?.[1];
      assert.ok(key, text);
      keys.push(key);
    }

    const list = await call({ action: "list", limit: 50 });
    assert.equal(list.response.success, true);
    const lines = (list.response.data as string).split("\n");
    assert.match(lines[0] as string, /^50 items, /);
    assert.equal(lines.length, 51, "one line per item, and no cursor: they fit one page");

    // Ten read back: objects by one field, arrays by one element, plain text whole.
    const reads = { object: 0, array: 0, text: 0 };
    for (const n of [1, 5, 7, 10, 13, 20, 22, 33, 35, 50]) {
      const kind = n % 7 === 0 ? "text" : n % 5 === 0 ? "array" : "object";
      reads[kind]++;
      const pointer = { object: "/subject", array: "/1", text: "" }[kind];
      const read = await call({ action: "read", storageKey: keys[n - 1], ...(pointer ? { pointer } : {}) });
      assert.equal(read.response.success, true, read.text);
      const expected = kind === "text" ? `"Plain summary ${n}"` : `"Subject ${n}"`;
      assert.ok((read.response.data as string).endsWith(`${pointer ? ` at ${pointer}` : ""}: ${expected}`), read.text);
    }
    assert.deepEqual(reads, { object: 4, array: 4, text: 2 });

    const update = await call({ action: "update", storageKey: keys[0], data: '["first", "second"]', description: "Two summaries" });
    assert.match(update.response.data as string, /^updated [a-z0-9_]+ \| \d+B \| \d+s \| array\[2\] of string \| Two summaries$/);
    const read = await call({ action: "read", storageKey: keys[0], pointer: "/1" });
    assert.match(read.response.data as string, /data at \/1: "second"$/);
    assert.match((await call({ action: "stats" })).response.data as string, /^50 items, /);

    assert.deepEqual((await cache.endSession(sessionId)).status, "ended");
    assert.equal((await call({ action: "list" })).response.data, "the cache of this session is empty");
  });

  it("failures are recorded as failures, and the LLM reads the code, the problem and the next step", async (t) => {
    const { call } = await agent(t);
    const missing = await call({ action: "read", storageKey: "aaaaaaaa_bbbbbbbb" });
    assert.equal(missing.response.success, false);
    assert.equal(missing.response.error?.code, "EXECUTION_ERROR");
    assert.match(missing.text, /^Error: llm_cache read failed: ItemNotFoundError: .+ Next: list the session's items/);

    const noDescription = await call({ action: "write", data: "[1]" });
    assert.equal(noDescription.response.success, false);
    assert.match(noDescription.text, /^Error: llm_cache write failed: InvalidRequestError: .*description/);

    const badMetadata = await call({ action: "write", data: "[1]", description: "d", customMetadata: "not json" });
    assert.match(badMetadata.text, /^Error: llm_cache write failed: InvalidRequestError: customMetadata must be the JSON text of an object/);

    // What browserx's check refuses never reaches the tool, and the LLM gets browserx's own answer.
    const objectData = await call({ action: "write", data: { a: 1 }, description: "d" });
    assert.equal(objectData.text, "Error: Parameter validation failed");
  });

  it("a host that isn't installed is a failure that says to carry on without the cache", async (t) => {
    const dir = tempDir();
    t.after(() => dir.remove());
    const cache = createLlmCache({ storage: new MemoryStorage(), connect: hostConnector({ dataDir: dir.path, binary: "/nonexistent/llm-cache-host" }) });
    const tools = browserxTools(cache);
    await assert.rejects(
      tools.llmCache.handler({ action: "list" }, { sessionId: "conv_x", turnId: "turn_1", toolName: "llm_cache" }),
      /^Error: llm_cache list failed: StorageUnavailableError: .*Specified native messaging host not found.* Next: continue without the cache/,
    );
  });
});
