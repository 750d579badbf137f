/**
 * The tool's name as an option, for an agent that already has a tool called llm_cache (browserx's branch
 * 011-storage-cache adds its own): every text the LLM reads names the tool as it is registered, the reference
 * markers keep their spelling, and registering with browserx where the name is taken fails before anything is
 * registered, with a message that names the option to change. Runs against the real host.
 */

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { browserxTools, registerBrowserxTools } from "../src/adapters/browserx.js";
import { createLlmCache } from "../src/llm-cache.js";
import { CACHE_PROMPT_REFERENCES, CACHE_SYSTEM_PROMPT, cachePrompt, withCachePrompt } from "../src/tool/prompt.js";
import { BrowserxStyleRegistry, llmOutput } from "./helpers/browserx-registry.js";
import { hostCache } from "./helpers/host-cache.js";
import { MemoryStorage, memoryAreas } from "./helpers/memory-storage.js";

const NAME = "host_cache";

/** A stand-in for browserx's own llm_cache (011-storage-cache): its own schema, data as an object. */
const BROWSERX_OWN_LLM_CACHE = {
  type: "function" as const,
  function: {
    name: "llm_cache",
    description: "browserx's own cache over IndexedDB",
    strict: false,
    parameters: { type: "object" as const, properties: { action: { type: "string" as const } }, required: ["action"] },
  },
};

describe("the prompt under another name", () => {
  it("names the tool as given everywhere, keeps the reference markers, and says whose keys they take", () => {
    for (const variant of ["openaiResponses", "anthropicStrict"] as const) {
      const named = cachePrompt(variant, { name: NAME, references: true });
      const mentions = [...named.matchAll(/(\{\{|\$)?llm_cache(:| references)?/g)].map((match) => match[0]);
      assert.deepEqual(
        [...new Set(mentions)].sort(),
        ["$llm_cache", "llm_cache references", "{{llm_cache:"].sort(),
        "only the reference forms keep llm_cache",
      );
      assert.ok(named.startsWith(`## The ${NAME} tool: a cache`));
      assert.ok(named.includes(`The \`${NAME}\` tool keeps data outside it`));
      assert.ok(named.includes(`accepts llm_cache references (they name items of \`${NAME}\`), put \`{{llm_cache:KEY}}\``));
      // The same text as the default but for the name and that one clause.
      const back = named.replace(` (they name items of \`${NAME}\`)`, "").replaceAll(NAME, "llm_cache");
      assert.equal(back, CACHE_SYSTEM_PROMPT + CACHE_PROMPT_REFERENCES);
    }
    assert.equal(cachePrompt("openaiResponses", { name: "llm_cache" }), CACHE_SYSTEM_PROMPT);
  });

  it("is added once under its name, and refuses a name no API takes", () => {
    const base = "You are browserx.";
    const once = withCachePrompt(base, "openaiResponses", { name: NAME });
    assert.equal(withCachePrompt(once, "openaiResponses", { name: NAME }), once);
    assert.equal(withCachePrompt(once, "openaiChatStrict", { name: NAME }), `${base}\n\n${cachePrompt("openaiChatStrict", { name: NAME })}`);
    assert.throws(() => cachePrompt("openaiResponses", { name: "llm cache" }), /Pass another name option/);
  });
});

describe("createLlmCache({ name })", () => {
  it("the tool, its definitions, its answers, its prompt and offloaded results all use the name", async (t) => {
    const { cache, sessionId } = hostCache(t, { name: NAME });
    assert.equal(cache.tool.name, NAME);
    assert.equal(cache.tool.definitions.anthropicStrict.name, NAME);
    assert.ok(cache.systemPrompt.startsWith(`## The ${NAME} tool`));
    assert.ok(cache.promptFor("openaiChatStrict").startsWith(`## The ${NAME} tool`));
    // The references' lines once the cache's withReferences wraps a tool.
    assert.ok(!cache.promptFor("openaiResponses").includes("{{llm_cache:KEY}}"));
    cache.withReferences(async () => "done");
    assert.ok(cache.promptFor("openaiResponses").includes(`(they name items of \`${NAME}\`)`));
    assert.ok(cache.withPrompt("Base.").includes(`The \`${NAME}\` tool`));

    const missing = await cache.tool.run({ action: "read", storageKey: "aaaaaaaa_bbbbbbbb" }, { sessionId });
    assert.match(missing.text, new RegExp(`^${NAME} read failed: ItemNotFoundError: `));
    assert.match((await cache.tool.run({ action: "explode" }, { sessionId })).text, new RegExp(`Next: call ${NAME} again with one of those actions\\.$`));
    assert.match((await cache.tool.run("{", { sessionId })).text, new RegExp(`Next: call ${NAME} again with a JSON object`));

    const big = cache.offloadLargeResults("read_inbox", () => "x".repeat(20_000));
    const shown = (await big({}, { sessionId })) as string;
    assert.match(shown, new RegExp(`with ${NAME} read \\(storageKey "[a-z0-9_]+", .*with ${NAME} search, or pass it to a tool as \\{\\{llm_cache:`));
    assert.ok(!/llm_cache (read|search)/.test(shown));

    const unresolved = cache.withReferences(() => "never runs");
    await assert.rejects(unresolved({ body: "{{llm_cache:aaaaaaaa_bbbbbbbb}}" }, { sessionId }), new RegExp(`^Error: ${NAME} reference failed: ItemNotFoundError`));
  });
});

describe("registering with browserx where llm_cache is taken", () => {
  it("registerBrowserxTools refuses before registering anything, and names the option to change", async () => {
    const registry = new BrowserxStyleRegistry();
    await registry.register(BROWSERX_OWN_LLM_CACHE, async () => "browserx's own");
    const cache = createLlmCache({ storage: new MemoryStorage(), connect: () => assert.fail("no call is made") });
    await assert.rejects(registerBrowserxTools(registry, cache, { browserStorage: { areas: memoryAreas() } }), (error: Error) => {
      assert.equal(
        error.message,
        "a tool named 'llm_cache' is already registered with browserx's ToolRegistry: pass another name, e.g. " +
          'registerBrowserxTools(registry, cache, { name: "host_cache" }), and the same name to the prompt ' +
          "(createLlmCache({ name }) does both), or leave browserx's own llm_cache out of registerTools (its " +
          "011-storage-cache branch adds one); extension-shim/README.md says how to choose",
      );
      return true;
    });
    assert.deepEqual(registry.listTools().map((tool) => tool.type === "function" && tool.function.name), ["llm_cache"], "browser_storage was not registered either");
  });

  it("a registry without getTool: browserx's own refusal is caught and explained the same way", async () => {
    const registry = new BrowserxStyleRegistry();
    await registry.register(BROWSERX_OWN_LLM_CACHE, async () => "browserx's own");
    const bare = { register: registry.register.bind(registry) };
    const cache = createLlmCache({ storage: new MemoryStorage(), connect: () => assert.fail("no call is made") });
    await assert.rejects(registerBrowserxTools(bare, cache), (error: Error) => {
      assert.match(error.message, /^a tool named 'llm_cache' is already registered .* pass another name, e\.g\. /);
      assert.match(String((error.cause as Error).message), /^Tool 'llm_cache' is already registered$/);
      return true;
    });
  });

  it("a taken browser_storage says to leave browserx's own StorageTool out", async () => {
    const registry = new BrowserxStyleRegistry();
    const theirs = { ...BROWSERX_OWN_LLM_CACHE, function: { ...BROWSERX_OWN_LLM_CACHE.function, name: "browser_storage" } };
    await registry.register(theirs, async () => "browserx's own");
    const cache = createLlmCache({ storage: new MemoryStorage(), connect: () => assert.fail("no call is made") });
    await assert.rejects(registerBrowserxTools(registry, cache), /^Error: a tool named 'browser_storage' is already registered .*leave that one out of registerTools$/);
    assert.equal(registry.listTools().length, 1);
  });

  it("with { name }, both caches register side by side and each answers its own calls", async (t) => {
    const { cache, sessionId } = hostCache(t, { contextOrigins: [] });
    const registry = new BrowserxStyleRegistry();
    await registry.register(BROWSERX_OWN_LLM_CACHE, async () => "browserx's own answer");
    const tools = await registerBrowserxTools(registry, cache, { name: NAME, browserStorage: { areas: memoryAreas() } });
    assert.equal(tools.llmCache.definition.function.name, NAME);
    assert.deepEqual(
      registry.listTools().map((tool) => tool.type === "function" && tool.function.name),
      ["llm_cache", NAME, "browser_storage"],
    );
    const ours = await registry.execute({ toolName: NAME, parameters: { action: "write", data: "[1,2]", description: "two" }, sessionId, turnId: "turn_1" });
    assert.match(llmOutput(ours), /^"cached [a-z0-9]{8}_[a-z0-9]{8} \| 5B \| \d+s \| you \| array\[2\] of number \| two"$/);
    const missing = await registry.execute({ toolName: NAME, parameters: { action: "read", storageKey: "aaaaaaaa_bbbbbbbb" }, sessionId, turnId: "turn_2" });
    assert.match(llmOutput(missing), new RegExp(`^Error: ${NAME} read failed: ItemNotFoundError: `), "the answer names the tool the LLM called");
    const theirs = await registry.execute({ toolName: "llm_cache", parameters: { action: "list" }, sessionId, turnId: "turn_3" });
    assert.equal(llmOutput(theirs), '"browserx\'s own answer"');
  });

  it("browserxTools(cache, { name }) alone gives the renamed pair; the default follows the cache's own name", () => {
    const cache = createLlmCache({ storage: new MemoryStorage(), connect: () => assert.fail("no call is made"), name: "other_cache" });
    assert.equal(browserxTools(cache).llmCache.definition.function.name, "other_cache");
    assert.equal(browserxTools(cache, { name: NAME }).llmCache.definition.function.name, NAME);
    assert.throws(() => browserxTools(cache, { name: "host cache" }), /^TypeError: the tool's name must be/);
  });
});
