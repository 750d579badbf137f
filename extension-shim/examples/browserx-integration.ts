// In browserx's service worker, where it builds its ToolRegistry and Session.
import { REFERENCE_NOTE, browserxTools, createLlmCache } from "@browserx/llm-cache-shim";
import type { BrowserxToolDefinition, BrowserxToolHandler } from "@browserx/llm-cache-shim";
import type { Session, ToolRegistry } from "./browserx.js"; // browserx's own classes

// One port to the host, opened on first use and closed after 30 s without calls (the worker may then sleep).
const cache = createLlmCache();

// In registerTools(registry): the cache tool, and browser_storage in place of browserx's own StorageTool
// (the same name, schema and answers, so the LLM calls that use it keep working).
export async function registerCacheTools(registry: ToolRegistry): Promise<void> {
  const { llmCache, browserStorage } = browserxTools(cache);
  await registry.register(llmCache.definition, llmCache.handler);
  await registry.register(browserStorage.definition, browserStorage.handler);
}

// Any other tool (reading emails, fetching pages, writing documents): a result over 10 KB is cached and the LLM
// sees its key, shape and a preview; and the LLM can pass cached data in as {{llm_cache:KEY}}.
export async function registerWithCache(registry: ToolRegistry, definition: BrowserxToolDefinition, handler: BrowserxToolHandler): Promise<void> {
  definition.function.description += REFERENCE_NOTE;
  await registry.register(definition, cache.offloadLargeResults(definition.function.name, cache.withReferences(handler)));
}

// The agent's system prompt, with the section that teaches the LLM the cache (added once, however often called).
export function agentPrompt(basePrompt: string): string {
  return cache.withPrompt(basePrompt);
}

// reset() gives the session a new conversationId and close() ends it: either ends the old conversation's cache.
// Sent at once, or remembered and sent first on the next connection if the host can't be reached.
export function endCachesOf(session: Session): () => void {
  return cache.attachToSession(session);
}

// Or, where the service worker handles SESSION_RESET itself: read the id before reset() replaces it.
export async function resetSession(session: Session): Promise<void> {
  const ended = session.conversationId;
  await session.reset();
  await cache.endSession(ended);
}
