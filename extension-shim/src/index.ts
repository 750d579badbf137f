/**
 * @browserx/llm-cache-shim: the extension side of llm-cache-host.
 *
 * # Layout
 * - protocol.ts: wire types and limits of protocol v1 (PROTOCOL.md is normative).
 * - errors.ts: one error class per protocol error code, and the mapper from error replies.
 * - backend.ts: CacheBackend, the interface the tool, offloading, references and cleanup talk to, and
 *   ProtocolClient, its typed calls written once over one `request`; `resultOf` turns every backend's replies
 *   into results or errors.
 * - backends/: the backends.
 *   - native.ts: NativeCacheClient, the port to the host: handshake, pipelining, timeouts, chunks, reconnects,
 *     closing an idle port. (client.ts re-exports it, so that imports of client.js keep working.)
 *   - in-process.ts: InProcessBackend, for a protocol server in the extension itself (request text in, reply
 *     text out), which the IndexedDB backend plugs into.
 *   - indexeddb/: IdbHost, protocol v1 served from IndexedDB in the extension, answering as the host does. Each
 *     file is named after the host's file it mirrors (message.ts, error.ts, store.ts, cleanup.ts, cmd/ with a
 *     file per op, json/ for the walks over JSON text); host.ts's table pairs them. backend.ts:
 *     IndexedDbBackend, an IdbHost on the context's IndexedDB with its hourly orphan sweep, createLlmCache's
 *     default fallback.
 * - routing.ts: RoutingBackend, the host where it answers and the in-browser backend where it doesn't, chosen
 *   per session and kept until the session ends; locks.ts: the session locks it and session.ts take, across the
 *   extension's contexts.
 * - status.ts: `status()`'s shape, and why the host isn't used in words a person can act on.
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
 * - references.ts: resolveReferences, which puts cached data into another tool's arguments, each flow of it
 *   allowed or refused by the extension's allowFlow.
 * - provenance.ts: the one judge of an item's trust, and how the model is shown it: the `from` column, free
 *   text that can't break its line, fences around untrusted data. taint.ts: ContextTaint, what the model has
 *   seen in a session, which the provenance of its own writes names.
 * - session-id.ts: the sessionId rule at the API: a TypeError for the extension's own malformed ids.
 * - session.ts: endSession for the agent's session hooks, remembered per backend while it can't be reached and
 *   sent first on its next connection; attachToSessionClass (every session of a class, across rebuilt agents)
 *   and attachToSession (one object) for sessions without hooks.
 * - storage-area.ts: the chrome.storage.local interface session.ts and routing.ts keep their records in.
 * - llm-cache.ts: createLlmCache, all of the above wired together.
 * - demo-extension.ts: the demo extension's fixed id.
 * - pages/: extension pages for the extension's users, not exported here (each is its own module, loaded by its
 *   HTML): install.ts (status and install steps, install-steps.ts per OS), viewer.ts (sessions, items, data;
 *   viewer-route.ts, its URL fragment; pretty.ts, its JSON layout), dom.ts (text-only DOM helpers), visible.ts
 *   (the characters they escape, the command line's set).
 */

export * from "./protocol.js";
export * from "./errors.js";
export * from "./backend.js";
export * from "./client.js";
export * from "./backends/in-process.js";
export { IdbHost, type IdbHostOptions } from "./backends/indexeddb/host.js";
export { IndexedDbBackend } from "./backends/indexeddb/backend.js";
export * from "./routing.js";
export * from "./status.js";
export * from "./tool/spec.js";
export * from "./tool/definitions.js";
export * from "./tool/storage-tool.js";
export { CACHE_PROMPT_OFFLOADING, CACHE_PROMPT_REFERENCES, CACHE_SYSTEM_PROMPT, cachePrompt, withCachePrompt, type PromptFeatures } from "./tool/prompt.js";
export { formatAge, formatSize, itemLine, pageLine, ITEM_COLUMNS } from "./tool/format.js";
export { fullKey, keyIdFor, shortKey } from "./tool/keys.js";
export * from "./legacy/browser-storage.js";
export * from "./adapters/browserx.js";
export * from "./offload.js";
export * from "./references.js";
export { fromLabel, isTrusted, provenanceOf, untrustedOrigins, UNKNOWN_PROVENANCE } from "./provenance.js";
export { ContextTaint, TAINT_KEY_PREFIX, type ContextTaintOptions } from "./taint.js";
export * from "./session.js";
export { assertSessionId, isSessionId, SESSION_ID_RULE } from "./session-id.js";
export * from "./storage-area.js";
export * from "./llm-cache.js";
export { DEMO_EXTENSION_ID } from "./demo-extension.js";
