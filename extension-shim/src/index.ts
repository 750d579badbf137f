/**
 * @browserx/llm-cache-shim: the extension side of llm-cache-host.
 *
 * # Layout
 * - protocol.ts: wire types and limits of protocol v1 (PROTOCOL.md is normative).
 * - errors.ts: one error class per protocol error code, and the mapper from error replies.
 * - client.ts: NativeCacheClient, the port to the host: handshake, pipelining, timeouts, chunks, reconnects.
 * - storage-tool.ts: StorageTool, the LLM tool `llm_cache`: its JSON schema and the text it answers with.
 * - format.ts and keys.ts: how the tool shows items (one line each) and names them (short keys).
 * - legacy.ts: the old chrome.storage.local get/set/remove calls, still served by the same tool.
 * - session.ts: endSession for the agent's cleanup hook, remembered while the host can't be reached.
 * - storage-area.ts: the chrome.storage.local interface the last two use.
 * - prompt.ts: the system prompt section (the same text as prompt/system-prompt.md).
 * - llm-cache.ts: createLlmCache, all of the above wired together.
 * - demo-extension.ts: the demo extension's fixed id.
 */

export * from "./protocol.js";
export * from "./errors.js";
export * from "./client.js";
export * from "./storage-tool.js";
export { formatAge, formatSize, itemLine, ITEM_COLUMNS } from "./format.js";
export { fullKey, keyIdFor, shortKey } from "./keys.js";
export { LEGACY_ACTIONS, type LegacyAction } from "./legacy.js";
export * from "./session.js";
export * from "./storage-area.js";
export { CACHE_SYSTEM_PROMPT } from "./prompt.js";
export * from "./llm-cache.js";
export { DEMO_EXTENSION_ID } from "./demo-extension.js";
