/**
 * createLlmCache: the pieces an extension needs, wired together once: one client (one port, one host process),
 * the StorageTool for the LLM, session cleanup for the agent's hooks, and the system prompt section.
 */

import { NativeCacheClient, type ClientOptions } from "./client.js";
import { SessionCleanup, type EndSessionOutcome, type ResettableSession } from "./session.js";
import { chromeLocalStorage, type KeyValueStore } from "./storage-area.js";
import type { DefinitionVariant } from "./tool/definitions.js";
import { cachePrompt, withCachePrompt } from "./tool/prompt.js";
import { StorageTool, type StorageToolOptions } from "./tool/storage-tool.js";

export interface LlmCacheOptions extends ClientOptions, StorageToolOptions {
  /** chrome.storage.local by default: remembered session cleanups live there. */
  storage?: KeyValueStore;
}

export interface LlmCache {
  client: NativeCacheClient;
  tool: StorageTool;
  cleanup: SessionCleanup;
  /** For the agent's session-end hooks; see SessionCleanup.endSession. */
  endSession: (sessionId: string) => Promise<EndSessionOutcome>;
  /** Ends the conversation's cache whenever `session.reset()` or `session.close()` runs; see SessionCleanup. */
  attachToSession: (session: ResettableSession, onEnded?: (sessionId: string, outcome: EndSessionOutcome) => void) => () => void;
  /** The system prompt section for the plain definitions. */
  systemPrompt: string;
  /** The section for the definition variant the agent sends. */
  promptFor: (variant: DefinitionVariant) => string;
  /** The agent's prompt with the section added once (idempotent). */
  withPrompt: (basePrompt: string, variant?: DefinitionVariant) => string;
}

export function createLlmCache(options: LlmCacheOptions = {}): LlmCache {
  const storage = options.storage ?? chromeLocalStorage();
  const client = new NativeCacheClient(options);
  const cleanup = new SessionCleanup(client, storage);
  const tool = new StorageTool(client, options);
  return {
    client,
    tool,
    cleanup,
    endSession: (sessionId) => cleanup.endSession(sessionId),
    attachToSession: (session, onEnded) => cleanup.attachToSession(session, onEnded),
    systemPrompt: cachePrompt(),
    promptFor: cachePrompt,
    withPrompt: withCachePrompt,
  };
}
