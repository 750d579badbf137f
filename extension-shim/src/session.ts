/**
 * Session cleanup: `endSession(sessionId)` for the agent's session-cleanup hook.
 *
 * A session's data must go when the session ends, even if the host can't be reached at that moment (not
 * installed yet, crashed, the browser shutting down). So a cleanup that fails with StorageUnavailableError is
 * remembered in chrome.storage.local, which outlives the service worker, and sent after the next successful
 * connect. The host's endSession is idempotent, so sending one twice does no harm. (The host also removes
 * sessions idle for 24 hours; this makes the removal prompt instead.)
 */

import type { NativeCacheClient } from "./client.js";
import { CacheError, StorageUnavailableError } from "./errors.js";
import type { KeyValueStore } from "./storage-area.js";

/** One chrome.storage.local key per pending session, so two cleanups never race on one shared list. */
export const PENDING_END_SESSION_PREFIX = "llmCache.pendingEndSession.";

export type EndSessionOutcome =
  /** The host removed the session's items. */
  | { status: "ended"; deletedItems: number; freedBytes: number }
  /** The host couldn't be reached; the cleanup is remembered and sent after the next connect. */
  | { status: "pending"; reason: string }
  /** The host refused it (e.g. a malformed sessionId); retrying wouldn't help, so it isn't remembered. */
  | { status: "failed"; error: CacheError };

export class SessionCleanup {
  readonly #client: NativeCacheClient;
  readonly #storage: KeyValueStore;
  /** The flush in progress, if any; a connect during a flush doesn't start a second one. */
  #flushing: Promise<number> | undefined;

  constructor(client: NativeCacheClient, storage: KeyValueStore) {
    this.#client = client;
    this.#storage = storage;
    client.onConnect(() => {
      // Nobody awaits this flush; what it couldn't send stays remembered for the next connect.
      this.flushPending().catch(() => {});
    });
  }

  /**
   * Removes a session's cached items. The host's answers, good or bad, come back as the outcome, not as an
   * exception: a session-cleanup hook has nothing useful to do with one, and a host that can't be reached is
   * handled by remembering the cleanup. (Only a failing chrome.storage.local would make this reject.)
   */
  async endSession(sessionId: string): Promise<EndSessionOutcome> {
    try {
      const result = await this.#client.endSession(sessionId);
      await this.#storage.remove(PENDING_END_SESSION_PREFIX + sessionId);
      return { status: "ended", deletedItems: result.deletedItems, freedBytes: result.freedBytes };
    } catch (error) {
      if (error instanceof StorageUnavailableError) {
        await this.#storage.set({ [PENDING_END_SESSION_PREFIX + sessionId]: Date.now() });
        return { status: "pending", reason: error.message };
      }
      const failure =
        error instanceof CacheError ? error : new StorageUnavailableError({ message: String(error) });
      return { status: "failed", error: failure };
    }
  }

  /**
   * Sends every remembered cleanup and resolves with how many the host completed. Runs by itself after each
   * connect; an extension may also call it at start-up. A cleanup that fails again stays remembered.
   */
  flushPending(): Promise<number> {
    this.#flushing ??= this.#flush().finally(() => {
      this.#flushing = undefined;
    });
    return this.#flushing;
  }

  /** The sessions whose cleanup is still waiting to be sent. */
  async pendingSessions(): Promise<string[]> {
    const all = await this.#storage.get(null);
    return Object.keys(all)
      .filter((key) => key.startsWith(PENDING_END_SESSION_PREFIX))
      .map((key) => key.slice(PENDING_END_SESSION_PREFIX.length));
  }

  async #flush(): Promise<number> {
    let ended = 0;
    for (const sessionId of await this.pendingSessions()) {
      try {
        await this.#client.endSession(sessionId);
        ended++;
      } catch (error) {
        if (error instanceof StorageUnavailableError) break; // the host is gone again; the next connect retries
        // Any other refusal would be the same next time, so the record is dropped below.
      }
      await this.#storage.remove(PENDING_END_SESSION_PREFIX + sessionId);
    }
    return ended;
  }
}
