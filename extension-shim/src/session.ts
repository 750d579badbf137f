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
 *
 * With two backends (routing.ts), a session is ended on each that may hold it, and a cleanup is remembered
 * per backend, under that backend's own keys: it is sent on that backend's next connection only, and
 * forgotten as soon as that backend has done it. So a cleanup one backend missed never runs late on the other,
 * where the session may have been resumed meanwhile.
 */

import type { BackendKind, CacheBackend, ConnectionRequest } from "./backend.js";
import { CacheError, StorageUnavailableError } from "./errors.js";
import type { EndSessionResult } from "./protocol.js";
import { backendsOf, endSessionEach } from "./routing.js";
import type { KeyValueStore } from "./storage-area.js";

/**
 * One chrome.storage.local key per pending session and backend, so two cleanups never race on one shared
 * record. The host's keys are the ones shims before the in-browser backend wrote, so those are still sent.
 */
export const PENDING_END_SESSION_PREFIXES: Record<BackendKind, string> = {
  host: "llmCache.pendingEndSession.",
  indexeddb: "llmCache.indexeddb.pendingEndSession.",
};

/** The host's prefix, by its old name. */
export const PENDING_END_SESSION_PREFIX = PENDING_END_SESSION_PREFIXES.host;

/** The Web Lock every context of the extension takes while it sends a backend's remembered cleanups. */
const FLUSH_LOCKS: Record<BackendKind, string> = {
  host: "llmCache.pendingEndSession",
  indexeddb: "llmCache.indexeddb.pendingEndSession",
};

export type EndSessionOutcome =
  /** The backend (or each that may hold the session) removed the session's items. */
  | { status: "ended"; deletedItems: number; freedBytes: number }
  /** A backend holding the session couldn't be reached; the cleanup is remembered and sent on its next connection. */
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
    client.onConnect(({ backend, request }) => this.#flush(backend, request));
  }

  /**
   * Removes a session's cached items. The host's answers, good or bad, come back as the outcome, not as an
   * exception: a session hook has nothing useful to do with one, and a host that can't be reached is handled
   * by remembering the cleanup. (Only a failing chrome.storage.local would make this reject.)
   */
  async endSession(sessionId: string): Promise<EndSessionOutcome> {
    let deletedItems = 0;
    let freedBytes = 0;
    let pending: string | undefined;
    let failure: CacheError | undefined;
    for (const attempt of await endSessionEach(this.#client, sessionId)) {
      const key = PENDING_END_SESSION_PREFIXES[attempt.backend] + sessionId;
      if (attempt.ok) {
        await this.#storage.remove(key);
        deletedItems += attempt.result.deletedItems;
        freedBytes += attempt.result.freedBytes;
      } else if (attempt.required && attempt.error instanceof StorageUnavailableError) {
        await this.#storage.set({ [key]: Date.now() });
        pending ??= attempt.error.message;
      } else if (attempt.required) {
        failure ??= attempt.error instanceof CacheError ? attempt.error : new StorageUnavailableError({ message: String(attempt.error) });
      }
    }
    if (failure) return { status: "failed", error: failure };
    if (pending !== undefined) return { status: "pending", reason: pending };
    return { status: "ended", deletedItems, freedBytes };
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
   * Connects each backend if needed, which sends its remembered cleanups first. Resolves with the sessions
   * still waiting (empty once every backend has taken them all).
   */
  async flushPending(): Promise<string[]> {
    for (const backend of backendsOf(this.#client)) {
      try {
        await backend.hello();
      } catch {
        // Still unreachable: its cleanups stay remembered.
      }
    }
    return this.pendingSessions();
  }

  /** The sessions whose cleanup is still waiting to be sent to some backend. */
  async pendingSessions(): Promise<string[]> {
    const keys = Object.keys(await this.#storage.get(null));
    const sessions = new Set<string>();
    for (const prefix of Object.values(PENDING_END_SESSION_PREFIXES)) {
      for (const key of keys) if (key.startsWith(prefix)) sessions.add(key.slice(prefix.length));
    }
    return [...sessions];
  }

  /**
   * Sends a backend's remembered cleanups on its new connection. Every context of the extension (service
   * worker, side panel, offscreen document) may connect at once; the lock lets one of them send while the
   * others wait and then find nothing left, so no context sends a cleanup it read before another context had
   * finished it.
   */
  async #flush(backend: BackendKind, request: ConnectionRequest): Promise<void> {
    const prefix = PENDING_END_SESSION_PREFIXES[backend];
    const run = async () => {
      const keys = Object.keys(await this.#storage.get(null)).filter((key) => key.startsWith(prefix));
      for (const key of keys) {
        try {
          await request<EndSessionResult>("endSession", { sessionId: key.slice(prefix.length) });
        } catch (error) {
          // The backend is gone again: the connection fails, and the next one retries what is left.
          if (error instanceof StorageUnavailableError) throw error;
          // Any other refusal would be the same next time, so the record is dropped below.
        }
        await this.#storage.remove(key);
      }
    };
    const locks = (globalThis as { navigator?: { locks?: LockManager } }).navigator?.locks;
    return locks ? locks.request(FLUSH_LOCKS[backend], run) : run();
  }
}
