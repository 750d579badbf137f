// The demo extension's service worker. It loads the compiled shim (`npm run build` puts it in lib/) and puts
// it on globalThis.llmCache, where a person can use it from the service worker's DevTools console and the
// end-to-end test can drive it with `serviceWorker.evaluate`:
//
//   await llmCache.tool.execute({ action: "list" }, { sessionId: "conv_demo" })
//   await llmCache.endSession("conv_demo")
//   await llmCache.demo()   // a short scenario, returning what the LLM would have seen
//   await llmCache.browserx.llmCache.handler({ action: "stats" }, { sessionId: "conv_demo", turnId: "turn_1", toolName: "llm_cache" })
//   await llmCache.browserx.browserStorage.handler({ action: "keys", storageType: "local" }, ...)   // the old tool
//
// `tool` returns at most 256 KB of data per read (bigger values are described instead, as an LLM needs);
// `client.read` returns any item whole, reassembled from the host's 1 MiB chunks.
import { browserxTools, createLlmCache, DEMO_EXTENSION_ID, IndexedDbBackend, NATIVE_HOST_NAME, CACHE_SYSTEM_PROMPT } from "./lib/index.js";

const cache = createLlmCache();
// Both tools as browserx registers them: { llmCache, browserStorage }, each { definition, handler }.
const browserx = browserxTools(cache);

/** Caches three summaries, lists them, reads one field back, and ends the session. */
async function demo(sessionId = "conv_demo") {
  const context = { sessionId };
  const seen = [];
  for (const n of [1, 2, 3]) {
    const summary = { from: `sender${n}@example.com`, subject: `Subject ${n}`, words: 100 + n };
    seen.push(await cache.tool.execute({ action: "write", data: summary, description: `Summary of email ${n}/3` }, context));
  }
  seen.push(await cache.tool.execute({ action: "list" }, context));
  // The last summary's key, from its write's answer ("cached <key> | ..."); none if that write failed.
  const lastKey = /^cached (\S+) \|/.exec(seen[2])?.[1];
  if (lastKey !== undefined) {
    seen.push(await cache.tool.execute({ action: "read", storageKey: lastKey, pointer: "/subject" }, context));
  }
  seen.push(JSON.stringify(await cache.endSession(sessionId)));
  return seen.join("\n\n");
}

globalThis.llmCache = {
  ...cache,
  browserx,
  demo,
  createLlmCache,
  IndexedDbBackend,
  hostName: NATIVE_HOST_NAME,
  extensionId: DEMO_EXTENSION_ID,
  systemPrompt: CACHE_SYSTEM_PROMPT,
};
