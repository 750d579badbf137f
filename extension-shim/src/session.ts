/**
 * Session cleanup: `endSession(sessionId)` for the agent's session hooks, and, for an agent whose sessions have
 * `reset()` and `close()` but no hooks (browserx's Session), `attachToSessionClass` for every session of a class
 * and `attachToSession` for one session object.
 *
 * A session's data must go when the session ends, even if the host can't be reached at that moment (not
 * installed yet, crashed, the browser shutting down). So a cleanup that fails with StorageUnavailableError is
 * remembered in chrome.storage.local, which outlives the service worker, and sent on the next connection
 * before anything else is sent on it, and by the router (routing.ts) before any later write of the session
 * reaches that backend, since the connection that met the failure may stay open. That order is what keeps newer
 * data safe: a conversation resumed under the same id writes only after the remembered cleanup has run, so the
 * cleanup can't remove what it writes.
 * (The host also removes sessions idle for 24 hours; this makes the removal prompt instead.)
 *
 * With two backends (routing.ts), a session is ended on each that may hold it, and a cleanup is remembered
 * per backend, under that backend's own keys: it is sent on that backend's next connection only, and
 * forgotten as soon as that backend has done it. So a cleanup one backend missed never runs late on the other,
 * where the session may have been resumed meanwhile.
 */

import type { BackendKind, CacheBackend, ConnectionRequest } from "./backend.js";
import { CacheError, StorageUnavailableError } from "./errors.js";
import { tryLock, withLock } from "./locks.js";
import { assertSessionId, isSessionId } from "./session-id.js";
import type { EndSessionResult } from "./protocol.js";
import { backendsOf, endSessionEach, PENDING_END_SESSION_PREFIXES, sessionLockName } from "./routing.js";
import type { KeyValueStore } from "./storage-area.js";

export { PENDING_END_SESSION_PREFIXES };

/** The host's prefix, under the name that code written for the host alone imports. */
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

/** What `attachToSessionClass` needs: a class whose instances are ResettableSessions (browserx's `Session`). */
export interface ResettableSessionClass {
  readonly prototype: ResettableSession;
}

/** Called with the conversation whose cache a reset() or close() ended, and how that went. */
export type OnSessionEnded = (sessionId: string, outcome: EndSessionOutcome) => void;

/**
 * Marks a reset() or close() wrapper with the SessionCleanup it ends caches for, so that wrapping a session
 * whose class is already wrapped (or a class twice) never ends one conversation twice. Deleted when the
 * wrapper is detached, which makes the wrapper a plain pass-through.
 */
const ENDS_CACHE_FOR = Symbol("llmCache.endsCacheFor");

type SessionMethod = (this: ResettableSession, ...args: any[]) => unknown;
type MarkedMethod = SessionMethod & { [ENDS_CACHE_FOR]?: SessionCleanup };

export class SessionCleanup {
  readonly #client: CacheBackend;
  readonly #storage: KeyValueStore;
  /** The prototypes attachToSessionClass has wrapped, with the function that unwraps each. */
  readonly #classes = new WeakMap<object, () => void>();

  /** What else ends with a session (its taint, taint.ts), run once the backends have been asked. */
  readonly #onEnd: ((sessionId: string) => Promise<void>) | undefined;

  constructor(client: CacheBackend, storage: KeyValueStore, onEnd?: (sessionId: string) => Promise<void>) {
    this.#client = client;
    this.#storage = storage;
    this.#onEnd = onEnd;
    // Awaited by the client before any caller's request goes out on the new connection.
    client.onConnect(({ backend, request }) => this.#flush(backend, request));
  }

  /**
   * Removes a session's cached items. The host's answers, good or bad, come back as the outcome, not as an
   * exception: a session hook has nothing useful to do with one, and a host that can't be reached is handled
   * by remembering the cleanup. Only the extension's own mistakes reject: a `sessionId` that isn't `conv_` then 1
   * to 64 of [A-Za-z0-9-] is a TypeError saying so, before any request; and a failing chrome.storage.local.
   */
  async endSession(sessionId: string): Promise<EndSessionOutcome> {
    assertSessionId("endSession: sessionId", sessionId);
    let deletedItems = 0;
    let freedBytes = 0;
    let pending: string | undefined;
    let failure: CacheError | undefined;
    // The records are kept while the session's lock is still held, so no first write of the session's next
    // life can come between its end and the record of a cleanup still owed.
    await endSessionEach(this.#client, sessionId, async (attempts) => {
      // The backends that ended it owe it nothing any more: their records, where there are any, go in one call.
      const done: string[] = [];
      for (const attempt of attempts) {
        const key = PENDING_END_SESSION_PREFIXES[attempt.backend] + sessionId;
        if (attempt.ok) {
          if (attempt.owed !== false) done.push(key);
          deletedItems += attempt.result.deletedItems;
          freedBytes += attempt.result.freedBytes;
        } else if (attempt.required && attempt.error instanceof StorageUnavailableError) {
          await this.#storage.set({ [key]: Date.now() });
          pending ??= attempt.error.message;
        } else if (attempt.required) {
          failure ??= attempt.error instanceof CacheError ? attempt.error : new StorageUnavailableError({ message: String(attempt.error) });
        }
      }
      if (done.length > 0) await this.#storage.remove(done);
    });
    // Whatever the backends answered, the conversation is over: its next life starts with a clean context.
    await this.#onEnd?.(sessionId);
    if (failure) return { status: "failed", error: failure };
    if (pending !== undefined) return { status: "pending", reason: pending };
    return { status: "ended", deletedItems, freedBytes };
  }

  /**
   * Makes `reset()` and `close()` of every instance of `sessionClass` end the cache of the conversation being
   * left, whichever object holds the session and whenever it was made: one call where the agent is set up.
   *
   * Why the class and not the agent (a `followAgent(() => agent)` that finds the current session through the
   * agent): browserx's service worker keeps its agent in a variable and replaces it. At start (doInitialize)
   * and on every settings change (CONFIG_UPDATE) it builds a new BrowserxAgent, whose constructor builds a new
   * Session; CONFIG_UPDATE first calls `close()` on the old agent's session. Nothing calls the integrator's
   * code between the new session's birth and its first `reset()` (SESSION_RESET, the Stop button) or `close()`
   * (the next CONFIG_UPDATE, onSuspend), so a follower could only find the new session when something else
   * happened to ask it, and would miss a session another path made (`Session.import`). Every one of those
   * sessions runs the methods of one class, so wrapping them there once covers them all, with no instance to
   * know and no moment to catch.
   *
   * The id is read from the session before the original method runs, since browserx's `reset()` replaces
   * `conversationId` in place. The cleanup runs after the original call and is not awaited by it (its outcome
   * goes to `onEnded`); a backend that can't be reached gets it on its next connection. A service worker that
   * dies between `close()` and the backend's answer leaves the cleanup undone, and the backend's 24-hour orphan
   * sweep removes those items.
   *
   * Idempotent: calling it again for the same class (a service worker that initialises twice) changes nothing
   * and returns the same function, and `attachToSession` on an instance of a wrapped class adds nothing.
   * Returns a function that puts the class's own methods back.
   *
   * # Errors
   * A TypeError when the class's prototype has no `reset` or `close` method.
   */
  attachToSessionClass(sessionClass: ResettableSessionClass, onEnded?: OnSessionEnded): () => void {
    const prototype = sessionClass?.prototype as unknown as Record<"reset" | "close", MarkedMethod> | undefined;
    for (const name of ["reset", "close"] as const) {
      if (typeof prototype?.[name] !== "function") {
        throw new TypeError(
          `attachToSessionClass: expected a session class whose instances have reset() and close(), but its prototype has no ${name}() method; pass the class itself (browserx's Session), not an instance, or use attachToSession(session) for one object`,
        );
      }
    }
    const attached = this.#classes.get(prototype!);
    if (attached) return attached;
    const original = { reset: prototype!.reset, close: prototype!.close };
    const wrappers = {
      reset: this.#wrap(original.reset, (session) => session.conversationId, onEnded),
      close: this.#wrap(original.close, (session) => session.conversationId, onEnded),
    };
    Object.assign(prototype!, wrappers);
    const detach = () => {
      for (const name of ["reset", "close"] as const) {
        delete wrappers[name][ENDS_CACHE_FOR];
        // Put the original back unless something has wrapped ours since; ours is now a pass-through anyway.
        if (prototype![name] === wrappers[name]) prototype![name] = original[name];
      }
      this.#classes.delete(prototype!);
    };
    this.#classes.set(prototype!, detach);
    return detach;
  }

  /**
   * Makes `session.reset()` and `session.close()` end the conversation's cache, for this one object. The id
   * is read before the original call runs, since browserx's reset() replaces `conversationId` in place. The
   * cleanup runs after the original call and is not awaited by it (its outcome goes to `onEnded`). An agent
   * that replaces its session (browserx on every settings change) needs `attachToSessionClass` instead.
   * Returns a function that puts the original methods back.
   *
   * # Errors
   * A TypeError when `session.conversationId` isn't a session id (`conv_` then 1 to 64 of [A-Za-z0-9-]).
   */
  attachToSession<S extends ResettableSession>(session: S, onEnded?: OnSessionEnded): () => void {
    assertSessionId("attachToSession: session.conversationId", session?.conversationId);
    const methods = session as unknown as Record<"reset" | "close", MarkedMethod>;
    const restore: Array<() => void> = [];
    for (const name of ["reset", "close"] as const) {
      const own = Object.prototype.hasOwnProperty.call(session, name);
      const original = methods[name];
      const wrapper = this.#wrap(original, () => session.conversationId, onEnded);
      methods[name] = wrapper;
      restore.push(() => {
        delete wrapper[ENDS_CACHE_FOR];
        // A method the session inherited is inherited again, so a class wrapped later reaches it.
        if (own) methods[name] = original;
        else delete (methods as Partial<typeof methods>)[name];
      });
    }
    return () => restore.forEach((undo) => undo());
  }

  /** Whether `method` is a wrapper that ends caches for this cleanup and hasn't been detached. */
  #endsCache(method: MarkedMethod | undefined): boolean {
    return method?.[ENDS_CACHE_FOR] === this;
  }

  /**
   * `method`, ending the cache of the conversation `idOf` names (read before the method runs) once it has run.
   * A method that already does that for this cleanup (a class wrapper under an instance wrapper) is called as
   * it is, so one reset() ends one conversation once.
   */
  #wrap(method: MarkedMethod, idOf: (session: ResettableSession) => string, onEnded?: OnSessionEnded): MarkedMethod {
    const cleanup = this;
    const wrapper: MarkedMethod = function (this: ResettableSession, ...args: any[]): unknown {
      if (wrapper[ENDS_CACHE_FOR] !== cleanup || cleanup.#endsCache(method)) return method.apply(this, args);
      const sessionId = idOf(this);
      const result = method.apply(this, args);
      const end = () => {
        // A conversation whose id breaks the rule can hold nothing (every call with it is refused), so it has
        // nothing to end; and the session's own reset() or close() must never fail because of the cache.
        if (typeof sessionId !== "string" || !isSessionId(sessionId)) return;
        void cleanup.endSession(sessionId).then((outcome) => onEnded?.(sessionId, outcome));
      };
      if (result instanceof Promise) return result.finally(end);
      end();
      return result;
    };
    Object.defineProperty(wrapper, ENDS_CACHE_FOR, { value: this, configurable: true });
    return wrapper;
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
   *
   * Each cleanup is sent holding its session's lock (shared), and only if it is still remembered then: a
   * session's route is made, and a cleanup owed by its earlier life sent or recorded, under the exclusive
   * lock, so a cleanup read here can never reach the backend after a new life of the session has written
   * there. While another context holds that lock exclusively, the cleanup is left for it (a write of the
   * session sends it itself) or for the next connection: waiting could deadlock, since that context may be waiting for
   * this very connection.
   */
  async #flush(backend: BackendKind, request: ConnectionRequest): Promise<void> {
    const prefix = PENDING_END_SESSION_PREFIXES[backend];
    const sendOne = async (key: string) => {
      if ((await this.#storage.get(key))[key] === undefined) return;
      try {
        await request<EndSessionResult>("endSession", { sessionId: key.slice(prefix.length) });
      } catch (error) {
        // The backend is gone again: the connection fails, and the next one retries what is left.
        if (error instanceof StorageUnavailableError) throw error;
        // Any other refusal would be the same next time, so the record is dropped below.
      }
      await this.#storage.remove(key);
    };
    await withLock(FLUSH_LOCKS[backend], "exclusive", async () => {
      const keys = Object.keys(await this.#storage.get(null)).filter((key) => key.startsWith(prefix));
      for (const key of keys) await tryLock(sessionLockName(key.slice(prefix.length)), "shared", () => sendOne(key));
    });
  }
}
