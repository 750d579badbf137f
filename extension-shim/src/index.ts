/**
 * @browserx/llm-cache-shim: the extension side of llm-cache-host.
 *
 * # Layout
 * - protocol.ts: wire types and limits of protocol v1 (PROTOCOL.md is normative).
 * - errors.ts: one error class per protocol error code, and the mapper from error replies.
 * - client.ts: NativeCacheClient, the port to the host: handshake, pipelining, timeouts, chunks, reconnects,
 *   closing an idle port.
 * - tool/: the LLM tool `llm_cache`.
 *   - spec.ts: the tool described once: name, purpose, parameters.
 *   - definitions.ts: that spec as each LLM API takes it (OpenAI Responses and Chat, plain and strict;
 *     Anthropic, plain and strict; Gemini; MCP).
 *   - storage-tool.ts: StorageTool, which runs a call and answers with compact text.
 *   - format.ts and keys.ts: how the tool shows items (one line each) and names them (short keys).
 *   - prompt.ts: the system prompt section (the same text as prompt/system-prompt.md) and withCachePrompt.
 * - legacy/browser-storage.ts: the old `browser_storage` tool, every action and area, with its old answers.
 * - adapters/: agents. browserx.ts gives both tools as browserx registry pairs; browserx-types.ts declares
 *   the shapes its registry takes.
 * - offload.ts: offloadLargeResults, which caches another tool's large results instead of showing them.
 * - references.ts: resolveReferences, which puts cached data into another tool's arguments.
 * - session.ts: endSession for the agent's session hooks, remembered while the host can't be reached and sent
 *   first on the next connection; attachToSession for sessions without hooks.
 * - storage-area.ts: the chrome.storage.local interface session.ts uses.
 * - llm-cache.ts: createLlmCache, all of the above wired together.
 * - demo-extension.ts: the demo extension's fixed id.
 */

export * from "./protocol.js";
export * from "./errors.js";
export * from "./backend.js";
export * from "./client.js";
export * from "./backends/in-process.js";
export * from "./tool/spec.js";
export * from "./tool/definitions.js";
export * from "./tool/storage-tool.js";
export { CACHE_SYSTEM_PROMPT, STRICT_PROMPT_NOTE, cachePrompt, withCachePrompt } from "./tool/prompt.js";
export { formatAge, formatSize, itemLine, pageLine, ITEM_COLUMNS } from "./tool/format.js";
export { fullKey, keyIdFor, shortKey } from "./tool/keys.js";
export * from "./legacy/browser-storage.js";
export * from "./adapters/browserx.js";
export * from "./offload.js";
export * from "./references.js";
export * from "./session.js";
export * from "./storage-area.js";
export * from "./llm-cache.js";
export { DEMO_EXTENSION_ID } from "./demo-extension.js";
