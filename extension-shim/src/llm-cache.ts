/**
 * createLlmCache: the pieces an extension needs, wired together once: one client (one port, one host process),
 * the StorageTool for the LLM, session cleanup for the agent's hook, and the system prompt section.
 */

import { NativeCacheClient, type ClientOptions } from "./client.js";
import { CACHE_SYSTEM_PROMPT } from "./prompt.js";
import { SessionCleanup, type EndSessionOutcome } from "./session.js";
import { chromeLocalStorage, type KeyValueStore } from "./storage-area.js";
import { StorageTool, type StorageToolOptions } from "./storage-tool.js";

export interface LlmCacheOptions extends ClientOptions, Omit<StorageToolOptions, "legacyStorage"> {
  /** chrome.storage.local by default: legacy calls and remembered session cleanups live there. */
  storage?: KeyValueStore;
}

export interface LlmCache {
  client: NativeCacheClient;
  tool: StorageTool;
  cleanup: SessionCleanup;
  /** For the agent's session-cleanup hook; see SessionCleanup.endSession. */
  endSession: (sessionId: string) => Promise<EndSessionOutcome>;
  systemPrompt: string;
}

export function createLlmCache(options: LlmCacheOptions = {}): LlmCache {
  const storage = options.storage ?? chromeLocalStorage();
  const client = new NativeCacheClient(options);
  const cleanup = new SessionCleanup(client, storage);
  const tool = new StorageTool(client, { ...options, legacyStorage: storage });
  return {
    client,
    tool,
    cleanup,
    endSession: (sessionId) => cleanup.endSession(sessionId),
    systemPrompt: CACHE_SYSTEM_PROMPT,
  };
}
