/**
 * The browserx adapter, through a registry that behaves as browserx's (helpers/browserx-registry.ts) and the
 * real host: both tools register, every llm_cache action passes browserx's parameter check, the spec's
 * 50-email scenario runs with objects, arrays and strings as data, and failures arrive as failures whose
 * message still tells the LLM what to do next. Then the wiring through browserx's whole life
 * (helpers/browserx-agent.ts): one attachToSessionClass call ends the cache of every conversation of every agent
 * the service worker builds, and the prompt section added in loadPrompt reaches every model request.
 */

import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { describe, it, type TestContext } from "node:test";
import { browserxTools, type BrowserxTools } from "../src/adapters/browserx.js";
import { NativeCacheClient } from "../src/client.js";
import { createLlmCache, type LlmCache } from "../src/llm-cache.js";
import type { EndSessionOutcome } from "../src/session.js";
import { CACHE_SYSTEM_PROMPT } from "../src/tool/prompt.js";
import {
  BrowserxStyleAgent,
  BrowserxStyleServiceWorker,
  BrowserxStyleSession,
  type PromptLoader,
  type ResponseItem,
  type ScriptedModel,
} from "./helpers/browserx-agent.js";
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
  // The agent's only other tools are the ones it is given here, so nothing else enters its context.
  const cache = createLlmCache({ storage: new MemoryStorage(), connect, contextOrigins: [] });
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
    assert.match(update.response.data as string, /^updated [a-z0-9_]+ \| \d+B \| \d+s \| you \| array\[2\] of string \| Two summaries$/);
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

/** prompts/agent_prompt.md and prompts/user_instruction.md, as browserx's loadPrompt and loadUserInstructions read them. */
const AGENT_PROMPT_MD = "You are BrowserX, an agent that works in the user's browser.\n";
const USER_INSTRUCTION_MD = "Follow the user's development guidelines.\n";

/**
 * browserx wired as the README says: the cache's tools in registerTools, the cache's section added in
 * loadPrompt, and, unless `attach` is false, one attachToSessionClass call where the service worker sets up.
 * Ended conversations are collected from onEnded, and `ended(id)` waits for one.
 */
async function browserxWorker(t: TestContext, options: { attach?: boolean; prompt?: boolean } = {}) {
  const dir = tempDir();
  const connect = hostConnector({ dataDir: dir.path });
  const cache = createLlmCache({ storage: new MemoryStorage(), connect });
  // A second client on the same data directory: what is left in the host, seen from outside the cache.
  const checker = new NativeCacheClient({ connect });
  const endings: Array<[string, EndSessionOutcome]> = [];
  const waiting = new Map<string, () => void>();
  const onEnded = (sessionId: string, outcome: EndSessionOutcome) => {
    endings.push([sessionId, outcome]);
    waiting.get(sessionId)?.();
  };
  // The one call, where browserx's service worker sets up (before doInitialize builds the first agent).
  const detach = options.attach === false ? () => {} : cache.attachToSessionClass(BrowserxStyleSession, onEnded);
  t.after(async () => {
    detach();
    cache.client.close();
    checker.close();
    await connect.closeAll();
    dir.remove();
  });
  const prompts: PromptLoader = {
    loadPrompt: async () => (options.prompt === false ? AGENT_PROMPT_MD : cache.withPrompt(AGENT_PROMPT_MD)),
    loadUserInstructions: async () => USER_INSTRUCTION_MD,
  };
  const worker = new BrowserxStyleServiceWorker(prompts, (registry) => registerCacheTools(cache, registry));
  /** Resolves once the cleanup of `sessionId` has been answered (it may already have been). */
  const ended = (sessionId: string) =>
    new Promise<EndSessionOutcome>((resolve) => {
      const find = () => endings.find(([id]) => id === sessionId)?.[1];
      const found = find();
      if (found) return resolve(found);
      waiting.set(sessionId, () => resolve(find() as EndSessionOutcome));
    });
  const itemsOf = async (sessionId: string) => (await checker.stats(sessionId)).itemCount;
  return { cache, checker, worker, onEnded, endings, ended, itemsOf };
}

/** browserx's registerTools with the cache's two tools added, as the sample's registerCacheTools does. */
async function registerCacheTools(cache: LlmCache, registry: BrowserxStyleRegistry): Promise<void> {
  const { llmCache, browserStorage } = browserxTools(cache, { browserStorage: { areas: memoryAreas() } });
  await registry.register(llmCache.definition, llmCache.handler);
  await registry.register(browserStorage.definition, browserStorage.handler);
}

/** A model that answers the user's message with `count` llm_cache writes, and their outputs with a message. */
function cachingModel(count: number, outputs: string[] = []): ScriptedModel {
  return (request) => {
    const last = request.input.at(-1);
    if (last?.type !== "message") {
      for (const item of request.input) if (item.type === "function_call_output") outputs.push(item.output);
      return [{ type: "message", role: "assistant", content: [{ type: "output_text", text: "Cached." }] }];
    }
    return Array.from({ length: count }, (_, n): ResponseItem => ({
      type: "function_call",
      name: "llm_cache",
      call_id: `call_${randomUUID()}`,
      arguments: JSON.stringify({ action: "write", data: JSON.stringify({ n }), description: `Summary ${n + 1}/${count}` }),
    }));
  };
}

/** The user asks, the model caches `count` items under the agent's current conversation; returns that id. */
async function cacheThrough(agent: BrowserxStyleAgent, count: number): Promise<string> {
  const outputs: string[] = [];
  await agent.submit(`Cache ${count} summaries.`, cachingModel(count, outputs));
  assert.equal(outputs.length, count);
  for (const output of outputs) assert.match(output, /^"cached [a-z0-9]{8}_[a-z0-9]{8} \|/, output);
  return agent.getSession().conversationId;
}

describe("an agent browserx rebuilds on settings changes", () => {
  it("one attachToSessionClass call: reset and close of the old and the new agents' sessions end exactly their caches", async (t) => {
    const { cache, checker, worker, onEnded, endings, ended, itemsOf } = await browserxWorker(t);
    // The service worker setting up twice, and the one-object wiring left in place beside it (below): neither may end
    // a cache twice.
    assert.equal(cache.attachToSessionClass(BrowserxStyleSession, onEnded), cache.attachToSessionClass(BrowserxStyleSession, onEnded));
    // A conversation that isn't one of these sessions': nothing below may touch it.
    const other = `conv_${randomUUID()}`;
    await checker.write({ sessionId: other, data: ["kept"], description: "another conversation" });

    // doInitialize: the first agent, with its own session.
    const first = await worker.initialize();
    cache.attachToSession(first.getSession(), onEnded);
    const a = await cacheThrough(first, 3);

    // SESSION_RESET: a's cache ends; the session goes on as b.
    await worker.sessionReset();
    assert.equal((await ended(a)).status, "ended");
    const b = await cacheThrough(first, 2);
    assert.notEqual(b, a);
    assert.equal(await itemsOf(a), 0);

    // CONFIG_UPDATE: the old agent's session is closed (b ends), and a new agent comes with a new session.
    const second = await worker.configUpdate();
    assert.notEqual(second, first);
    assert.equal((await ended(b)).status, "ended");
    assert.equal(await itemsOf(b), 0);
    assert.deepEqual(first.getSession().rollout.map((record) => record.event), [
      `Session reset: new conversation ${b}`,
      `Session closed: ${b} (5 messages)`,
    ], "the original reset() and close() ran");
    const c = await cacheThrough(second, 2);
    assert.ok(![a, b].includes(c));

    // The new agent's session: SESSION_RESET ends c, and nothing of d or the other conversation.
    await worker.sessionReset();
    assert.equal((await ended(c)).status, "ended");
    assert.equal(await itemsOf(c), 0);
    const d = await cacheThrough(second, 1);

    // Another settings change, then the service worker suspends: d ends with its agent, e with the worker.
    const third = await worker.configUpdate();
    assert.equal((await ended(d)).status, "ended");
    const e = await cacheThrough(third, 2);
    assert.equal(await itemsOf(e), 2, "the current conversation keeps its items until it ends");
    await worker.suspend();
    assert.equal((await ended(e)).status, "ended");

    for (const id of [a, b, c, d, e]) assert.equal(await itemsOf(id), 0, id);
    assert.equal(await itemsOf(other), 1, "another conversation's items stay");
    // A request sent after every cleanup on the cache's own connection has been answered, so a second ending of
    // any conversation would have been answered (and reported) before it.
    await cache.client.stats(other);
    assert.deepEqual(
      endings.map(([id, outcome]) => [id, outcome.status === "ended" ? outcome.deletedItems : outcome.status]),
      [[a, 3], [b, 2], [c, 2], [d, 1], [e, 2]],
      "each conversation ended once, in order, with exactly its own items",
    );
  });

  it("a session browserx resumes from storage ends its saved conversation; detaching puts the class's methods back", async (t) => {
    const { cache, checker, onEnded, ended, itemsOf, endings } = await browserxWorker(t, { attach: false });
    const saved = `conv_${randomUUID()}`;
    await checker.write({ sessionId: saved, data: { resumed: true }, description: "from an earlier service worker" });
    const { reset, close } = BrowserxStyleSession.prototype;
    const detach = cache.attachToSessionClass(BrowserxStyleSession, onEnded);
    // The wrapper reads `conversationId` when close() runs, so the id import() put on the session counts.
    await BrowserxStyleSession.import({ id: saved }).close();
    const outcome = await ended(saved);
    assert.ok(outcome.status === "ended" && outcome.deletedItems === 1, JSON.stringify(outcome));
    assert.equal(await itemsOf(saved), 0);

    detach();
    assert.equal(BrowserxStyleSession.prototype.reset, reset);
    assert.equal(BrowserxStyleSession.prototype.close, close);
    await new BrowserxStyleSession().reset();
    await cache.client.stats(saved);
    assert.deepEqual(endings.map(([id]) => id), [saved], "a detached class ends nothing");
  });

  it("the one-object wiring misses the rebuilt agent's session, which is why the class is wired", async (t) => {
    const { cache, worker, onEnded, ended, itemsOf, endings } = await browserxWorker(t, { attach: false });
    const first = await worker.initialize();
    cache.attachToSession(first.getSession(), onEnded);
    const a = await cacheThrough(first, 1);
    await worker.configUpdate();
    assert.equal((await ended(a)).status, "ended", "the attached session's close() ended its cache");
    const b = await cacheThrough(worker.agent!, 1);
    await worker.sessionReset();
    await cache.client.stats(b);
    assert.deepEqual(endings.map(([id]) => id), [a], "only the first agent's session was attached");
    assert.equal(await itemsOf(b), 1, "the new agent's reset left its cache for the 24-hour sweep");
  });

  it("refuses an instance where the class is expected, saying what to pass", async (t) => {
    const { cache } = await browserxWorker(t, { attach: false });
    assert.throws(
      () => cache.attachToSessionClass(new BrowserxStyleSession() as never),
      /^TypeError: attachToSessionClass: expected a session class whose instances have reset\(\) and close\(\), but its prototype has no reset\(\) method; pass the class itself/,
    );
  });
});

describe("the prompt in browserx's place", () => {
  it("the section added in loadPrompt reaches every model request's instructions, the rebuilt agent's too", async (t) => {
    const { worker } = await browserxWorker(t);
    for (const rebuild of [false, true]) {
      const agent = rebuild ? await worker.configUpdate() : await worker.initialize();
      const requests = await agent.submit("Summarise my inbox.", cachingModel(1));
      assert.equal(requests.length, 2, "the call's output went back to the model");
      for (const request of requests) {
        // browserx's request: the base instructions (agent_prompt.md, now with the section), then the user's.
        assert.ok(request.instructions.startsWith(AGENT_PROMPT_MD), request.instructions.slice(0, 80));
        assert.equal(request.instructions.split(CACHE_SYSTEM_PROMPT).length, 2, "the section, once");
        assert.ok(request.instructions.endsWith(`\n${USER_INSTRUCTION_MD}`));
        assert.deepEqual(request.tools.map((tool) => tool.name), ["llm_cache", "browser_storage"]);
      }
    }
  });

  it("without the loadPrompt line the model runs with no word of the cache", async (t) => {
    const { worker } = await browserxWorker(t, { prompt: false });
    const [request] = await (await worker.initialize()).submit("Summarise my inbox.", () => []);
    assert.equal(request?.instructions, `${AGENT_PROMPT_MD}\n${USER_INSTRUCTION_MD}`);
  });
});
