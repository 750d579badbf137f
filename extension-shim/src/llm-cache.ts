/**
 * createLlmCache: the pieces an extension needs, wired together once: the backends (the native host, and the
 * in-browser backend where the host isn't there) behind one RoutingBackend, the StorageTool for the LLM,
 * session cleanup for the agent's hooks, the system prompt section, `status()`, and the wrappers that keep
 * other tools' data out of the context (offloading and references).
 */

import type { CacheBackend } from "./backend.js";
import { hasIndexedDb, IndexedDbBackend } from "./backends/indexeddb/backend.js";
import type { Durability } from "./backends/indexeddb/store.js";
import { NativeCacheClient, type ClientOptions } from "./backends/native.js";
import { errorText } from "./tool/storage-tool.js";
import { offloadLargeResults, type OffloadOptions, type ToolHandler } from "./offload.js";
import { resolveReferences, type ReferenceOptions } from "./references.js";
import { ORIGINS, type Origin } from "./protocol.js";
import { RoutingBackend } from "./routing.js";
import { ContextTaint } from "./taint.js";
import { assertSessionId } from "./session-id.js";
import { SessionCleanup, type EndSessionOutcome, type OnSessionEnded, type ResettableSession, type ResettableSessionClass } from "./session.js";
import type { CacheStatus, StatusOptions } from "./status.js";
import { chromeLocalStorage, type KeyValueStore } from "./storage-area.js";
import type { DefinitionVariant } from "./tool/definitions.js";
import { cachePrompt, withCachePrompt, type PromptFeatures } from "./tool/prompt.js";
import { StorageTool, type StorageToolOptions } from "./tool/storage-tool.js";

/** Which backend serves: see LlmCacheOptions.backend. */
export type BackendChoice = "auto" | "host" | "indexeddb";

export interface LlmCacheOptions extends ClientOptions, StorageToolOptions {
  /** chrome.storage.local by default: remembered session cleanups and sessions' routes live there. */
  storage?: KeyValueStore;
  /**
   * "auto" (the default) and "host": the native host when its handshake succeeds, and the in-browser backend
   * when it doesn't (not installed, forbidden, crashed at start), unless `fallback` is false. "indexeddb":
   * the in-browser backend only; the host is never asked. While the host is down, a new session asks it again
   * at most once per HOST_RECHECK_MS (routing.ts), timed by `now`.
   */
  backend?: BackendChoice;
  /** Whether the in-browser backend stands in while the host can't be used; true by default. */
  fallback?: boolean;
  /**
   * Makes the in-browser backend; an IndexedDbBackend on the context's `indexedDB` by default. Where the
   * context has no IndexedDB and this is left out, there is none to fall back to, and `backend: "indexeddb"`
   * is refused.
   */
  indexedDb?: () => CacheBackend;
  /**
   * How the in-browser backend made by default commits its changes: "relaxed" (the default, the platform's own)
   * keeps every acknowledged write when the browser is killed and may lose the last seconds to an OS crash or
   * power loss, as the conversation the browser keeps may; "strict" waits for the disk on every commit and survives
   * those too, at the cost of an fsync per write. The native host's commits are durable either way.
   */
  durability?: Durability;
  /**
   * The origins of what the agent's other tools put in its context without offloadLargeResults (a page
   * reader's text: `["web"]`), which every item the model writes then names as its upstream; `[]` when there is
   * nothing of the kind. Until this is given, a tool is wrapped or noteContextOrigin is called, the model's items
   * name `unknown`, and read as untrusted (taint.ts).
   */
  contextOrigins?: readonly Origin[];
}

export interface LlmCache {
  /** The typed client: a RoutingBackend over the backends in use. */
  client: RoutingBackend;
  tool: StorageTool;
  cleanup: SessionCleanup;
  /** For the agent's session-end hooks; see SessionCleanup.endSession. */
  endSession: (sessionId: string) => Promise<EndSessionOutcome>;
  /**
   * Ends a conversation's cache whenever `reset()` or `close()` runs on any instance of the class (browserx's
   * Session), across agents rebuilt with new sessions; see SessionCleanup.attachToSessionClass.
   */
  attachToSessionClass: (sessionClass: ResettableSessionClass, onEnded?: OnSessionEnded) => () => void;
  /** Ends the conversation's cache whenever this one `session.reset()` or `session.close()` runs; see SessionCleanup. */
  attachToSession: (session: ResettableSession, onEnded?: OnSessionEnded) => () => void;
  /**
   * Which backend serves new sessions, the host's version, and why the host isn't used, if it isn't;
   * `{ recheck: true }` asks the host over a new port (see StatusOptions).
   */
  status: (options?: StatusOptions) => Promise<CacheStatus>;
  /** The system prompt section, naming the tool as `tool.name` (the `name` option), without any feature's lines. */
  systemPrompt: string;
  /**
   * The section, with the lines of the features in `features`: by default those this cache's `withReferences` and
   * `offloadLargeResults` have been used for so far (wrap the agent's tools before building its prompt).
   */
  promptFor: (variant: DefinitionVariant, features?: PromptFeatures) => string;
  /** The agent's prompt with the section added once (idempotent); `features` as in `promptFor`. */
  withPrompt: (basePrompt: string, variant?: DefinitionVariant, features?: PromptFeatures) => string;
  /**
   * Another tool's handler, whose results over 10 KB are cached (over 5 MB, in parts) and shown as key, shape and
   * preview; see offload.ts.
   */
  offloadLargeResults: <A, C extends { sessionId: string }, R>(
    toolName: string,
    handler: ToolHandler<A, C, R>,
    options?: OffloadOptions<A, C>,
  ) => (args: A, context: C) => Promise<R | string>;
  /** `args` with every llm_cache reference replaced by the data it names; see references.ts. */
  resolveReferences: <T>(args: T, context: { sessionId: string }) => Promise<T>;
  /**
   * Another tool's handler, run with its references resolved. A reference that can't be resolved, or whose flow
   * `options.allowFlow` refuses, rejects with an Error whose message tells the LLM what to do ("… ItemNotFoundError:
   * … Next: list …"). `options.tool` names the tool in the flows and in a refusal.
   */
  withReferences: <A, C extends { sessionId: string }, R>(handler: ToolHandler<A, C, R>, options?: ReferenceOptions) => (args: A, context: C) => Promise<R>;
  /**
   * Says that text of `origin` reached the model in the session through a tool the cache didn't wrap: what the
   * model writes afterwards names it as upstream. The taint only grows until the session ends.
   */
  noteContextOrigin: (sessionId: string, origin: Origin) => Promise<void>;
}

export function createLlmCache(options: LlmCacheOptions = {}): LlmCache {
  const storage = options.storage ?? chromeLocalStorage();
  const choice = options.backend ?? "auto";
  const makeInBrowser = options.indexedDb ?? (hasIndexedDb() ? () => new IndexedDbBackend({ durability: options.durability }) : undefined);
  const inBrowser = choice === "indexeddb" || options.fallback !== false ? makeInBrowser?.() : undefined;
  if (choice === "indexeddb" && !inBrowser) {
    throw new TypeError('createLlmCache: backend "indexeddb" needs IndexedDB in this context, or the indexedDb option, which makes the in-browser backend');
  }
  const client = new RoutingBackend({
    host: choice === "indexeddb" ? undefined : new NativeCacheClient(options),
    fallback: inBrowser,
    storage,
    now: options.now,
  });
  const taint = new ContextTaint({ storage, contextOrigins: options.contextOrigins });
  const cleanup = new SessionCleanup(client, storage, (sessionId) => taint.clear(sessionId));
  const tool = new StorageTool(client, { ...options, taint });
  // The features the agent's tools use so far, whose lines the prompt then carries (see promptFor).
  const used: PromptFeatures = {};
  return {
    client,
    tool,
    cleanup,
    endSession: (sessionId) => cleanup.endSession(sessionId),
    attachToSessionClass: (sessionClass, onEnded) => cleanup.attachToSessionClass(sessionClass, onEnded),
    attachToSession: (session, onEnded) => cleanup.attachToSession(session, onEnded),
    status: (statusOptions) => client.status(statusOptions),
    systemPrompt: cachePrompt("openaiResponses", tool),
    promptFor: (variant, features = used) => cachePrompt(variant, { name: tool.name, ...features }),
    withPrompt: (basePrompt, variant, features = used) => withCachePrompt(basePrompt, variant, { name: tool.name, ...features }),
    offloadLargeResults: (toolName, handler, offloadOptions) => {
      used.offloading = true;
      taint.markWired();
      return offloadLargeResults(client, toolName, handler, { cacheToolName: tool.name, taint, ...offloadOptions });
    },
    noteContextOrigin: async (sessionId, origin) => {
      assertSessionId("noteContextOrigin: sessionId", sessionId);
      if (!ORIGINS.includes(origin)) throw new TypeError(`noteContextOrigin: origin must be one of ${ORIGINS.join(", ")}, not ${JSON.stringify(origin)}`);
      taint.markWired();
      await taint.note(sessionId, [origin]);
    },
    resolveReferences: (args, context) => resolveReferences(client, args, context),
    withReferences: (handler, referenceOptions) => {
      used.references = true;
      return async (args, context) => {
        // The extension's mistake is its TypeError, not text for the LLM like a reference that can't be resolved.
        assertSessionId("withReferences: context.sessionId", context?.sessionId);
        let resolved;
        try {
          resolved = await resolveReferences(client, args, context, referenceOptions);
        } catch (error) {
          throw new Error(errorText("reference", error, tool.name));
        }
        return handler(resolved, context);
      };
    },
  };
}
