/** createLlmCache wired to the real host in a temporary data directory, closed and removed after the test. */

import { randomUUID } from "node:crypto";
import type { TestContext } from "node:test";
import { createLlmCache, type LlmCacheOptions } from "../../src/llm-cache.js";
import { hostConnector } from "./chrome-port.js";
import { MemoryStorage } from "./memory-storage.js";
import { tempDir } from "./temp.js";

export function hostCache(t: TestContext, options: LlmCacheOptions = {}) {
  const dir = tempDir();
  const connect = hostConnector({ dataDir: dir.path });
  const cache = createLlmCache({ storage: new MemoryStorage(), connect, ...options });
  t.after(async () => {
    cache.client.close();
    await connect.closeAll();
    dir.remove();
  });
  /** A conversationId as the agent makes them. */
  const sessionId = `conv_${randomUUID()}`;
  return { cache, connect, sessionId };
}
