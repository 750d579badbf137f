/**
 * Session cleanup: `endSession(sessionId)` for the agent's session hooks, and `attachToSession` for an agent
 * whose session object has `reset()` and `close()` but no hooks (browserx's Session).
 *
 * A session's data must go when the session ends, even if the host can't be reached at that moment (not
 * installed yet, crashed, the browser shutting down). So a cleanup that fails with StorageUnavailableError is
 * remembered in chrome.storage.local, which outlives the service worker, and sent on the next connection
 * before anything else is sent on it. That order is what keeps newer data safe: a conversation resumed under
 * the same id writes only after the remembered cleanup has run, so the cleanup can't remove what it writes.
 * (The host also removes sessions idle for 24 hours; this makes the removal prompt instead.)
 */

import type { CacheBackend, ConnectionRequest } from "./backend.js";
import { CacheError, StorageUnavailableError } from "./errors.js";
import type { EndSessionResult } from "./protocol.js";
import type { KeyValueStore } from "./storage-area.js";

/** One chrome.storage.local key per pending session, so two cleanups never race on one shared list. */
export const PENDING_END_SESSION_PREFIX = "llmCache.pendingEndSession.";

/** The Web Lock every context of the extension takes while it sends remembered cleanups. */
const FLUSH_LOCK = "llmCache.pendingEndSession";

export type EndSessionOutcome =
  /** The host removed the session's items. */
  | { status: "ended"; deletedItems: number; freedBytes: number }
  /** The host couldn't be reached; the cleanup is remembered and sent on the next connection. */
  | { status: "pending"; reason: string }
  /** The host refused it (e.g. a malformed sessionId); retrying wouldn't help, so it isn't remembered. */
  | { status: "failed"; error: CacheError };

/** What `attachToSession` needs of an agent's session: its id and the two calls that end a conversation. */
export interface ResettableSession {
  readonly conversationId: string;
  reset(...args: any[]): unknown;
  close(...args: any[]): unknown;
}

export class SessionCleanup {
  readonly #client: CacheBackend;
  readonly #storage: KeyValueStore;

  constructor(client: CacheBackend, storage: KeyValueStore) {
    this.#client = client;
    this.#storage = storage;
    // Awaited by the client before any caller's request goes out on the new connection.
    client.onConnect(({ request }) => this.#flush(request));
  }

  /**
   * Removes a session's cached items. The host's answers, good or bad, come back as the outcome, not as an
   * exception: a session hook has nothing useful to do with one, and a host that can't be reached is handled
   * by remembering the cleanup. (Only a failing chrome.storage.local would make this reject.)
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
   * Makes `session.reset()` and `session.close()` end the conversation's cache. The id is read before the
   * original call runs, since browserx's reset() replaces `conversationId` in place. The cleanup runs after
   * the original call and is not awaited by it (its outcome goes to `onEnded`). Returns a function that puts
   * the original methods back.
   */
  attachToSession<S extends ResettableSession>(session: S, onEnded?: (sessionId: string, outcome: EndSessionOutcome) => void): () => void {
    const original = { reset: session.reset, close: session.close };
    const cleanup = this; // `this` inside the wrappers is the session
    const wrap = (method: (...args: any[]) => unknown) =>
      function (this: S, ...args: any[]): unknown {
        const sessionId = session.conversationId;
        const result = method.apply(this, args);
        const end = () => {
          void cleanup.endSession(sessionId).then((outcome) => onEnded?.(sessionId, outcome));
        };
        if (result instanceof Promise) return result.finally(end);
        end();
        return result;
      };
    session.reset = wrap(original.reset);
    session.close = wrap(original.close);
    return () => {
      session.reset = original.reset;
      session.close = original.close;
    };
  }

  /**
   * Connects if needed, which sends every remembered cleanup first. Resolves with the sessions still waiting
   * (empty once the host has taken them all).
   */
  async flushPending(): Promise<string[]> {
    try {
      await this.#client.hello();
    } catch {
      // Still unreachable: everything stays remembered.
    }
    return this.pendingSessions();
  }

  /** The sessions whose cleanup is still waiting to be sent. */
  async pendingSessions(): Promise<string[]> {
    const all = await this.#storage.get(null);
    return Object.keys(all)
      .filter((key) => key.startsWith(PENDING_END_SESSION_PREFIX))
      .map((key) => key.slice(PENDING_END_SESSION_PREFIX.length));
  }

  /**
   * Sends every remembered cleanup on a new connection. Every context of the extension (service worker, side
   * panel, offscreen document) may connect at once; the lock lets one of them send while the others wait and
   * then find nothing left, so no context sends a cleanup it read before another context had finished it.
   */
  async #flush(request: ConnectionRequest): Promise<void> {
    const run = async () => {
      for (const sessionId of await this.pendingSessions()) {
        try {
          await request<EndSessionResult>("endSession", { sessionId });
        } catch (error) {
          // The host is gone again: the connection fails, and the next one retries what is left.
          if (error instanceof StorageUnavailableError) throw error;
          // Any other refusal would be the same next time, so the record is dropped below.
        }
        await this.#storage.remove(PENDING_END_SESSION_PREFIX + sessionId);
      }
    };
    const locks = (globalThis as { navigator?: { locks?: LockManager } }).navigator?.locks;
    return locks ? locks.request(FLUSH_LOCK, run) : run();
  }
}
