// In browserx's service worker (src/background/service-worker.ts), where it sets up before building its agent.
import { REFERENCE_NOTE, createLlmCache, registerBrowserxTools } from "@browserx/llm-cache-shim";
import type { BrowserxToolDefinition, BrowserxToolHandler } from "@browserx/llm-cache-shim";
import { Session, type ToolRegistry } from "./browserx.js"; // browserx's own classes

// One port to the host, opened on first use and closed after 30 s without calls (the worker may then sleep).
const cache = createLlmCache();

// Every Session's reset() and close() end the cache of the conversation being left, whichever agent holds it:
// SESSION_RESET resets, CONFIG_UPDATE closes the old agent's session and builds a new agent with a new Session,
// onSuspend closes. One call covers every agent the service worker builds. Sent at once, or remembered and sent
// first on the next connection if the host can't be reached.
cache.attachToSessionClass(Session);

// In registerTools(registry), which runs for every new agent: the cache tool, and browser_storage in place of
// browserx's own StorageTool (the same name, schema and answers, so the LLM calls that use it keep working).
// Both or neither: if browserx already has a tool of either name (its own llm_cache branch), this throws an Error
// that says what to do (createLlmCache({ name: "host_cache" }) sits beside it) before registering anything.
export async function registerCacheTools(registry: ToolRegistry): Promise<void> {
  await registerBrowserxTools(registry, cache);
}

// Any other tool (reading emails, fetching pages, writing documents): a result over 10 KB is cached and the LLM
// sees its key, shape and a preview; and the LLM can pass cached data in as {{llm_cache:KEY}}.
export async function registerWithCache(registry: ToolRegistry, definition: BrowserxToolDefinition, handler: BrowserxToolHandler): Promise<void> {
  definition.function.description += REFERENCE_NOTE;
  await registry.register(definition, cache.offloadLargeResults(definition.function.name, cache.withReferences(handler)));
}

// In src/core/PromptLoader.ts, loadPrompt() reads prompts/agent_prompt.md: BrowserxAgent makes it the turn's base
// instructions (at initialize, and again when a turn switches model), and every model request sends them as its
// `instructions`. Add the section that teaches the LLM the cache there (once, however often it runs):
//   return agentPrompt(await response.text());
export function agentPrompt(basePrompt: string): string {
  return cache.withPrompt(basePrompt);
}
