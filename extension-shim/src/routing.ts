/**
 * RoutingBackend: the native host where it answers, the in-browser backend where it doesn't, chosen per session.
 *
 * What it promises: every acknowledged write is listed until its session ends, whichever context of the
 * extension wrote it and whichever backend holds it (test/routes.test.ts, e2e/test/routes.e2e.test.mjs).
 *
 * The rules, and why:
 * - A session stays on the backend where its first item was written until it ends, so it is never split: a
 *   `list` shows every item once, and no item is left behind on the other backend. The choice is a small
 *   route record per session in the KeyValueStore (chrome.storage.local), one key each
 *   (`llmCache.route.<sessionId>`), so it survives the service worker's restarts and every context of the
 *   extension sees it.
 * - No write lands in a backend without a route record that says so. Every context (service worker, pages,
 *   offscreen documents) may end a session, so a context knows a route only while it holds the session's lock
 *   in shared mode (a Web Lock, held across the extension's contexts; locks.ts). It takes that lock once, as a
 *   lease, reads the route and the session's remembered cleanups once under it, and keeps both in memory for
 *   the calls that follow, so an ordinary call reads nothing from chrome.storage.local. Whatever changes a
 *   route or records a cleanup holds the lock exclusively: a session's first write (so two first writes can't
 *   choose differently), `endSession`, and pruning. It first asks every lease holder to let go (a
 *   BroadcastChannel message naming the session); a holder forgets what it knew and lets go once its calls
 *   under way have finished, and its next call takes a new lease, granted after the exclusive holder is done,
 *   and reads again. So a write and the removal of its route never interleave: the write either finishes
 *   before the end (and is ended by it) or starts after it, as the first write of the session's next life.
 *   A lease unused for LEASE_IDLE_MS is let go, so a worker with nothing to do holds nothing and can sleep.
 * - Writes sent at once to a new session share one exclusive section per context: one of them makes the route
 *   with its write, and the others join it and go with that write once the route is chosen, under the same hold,
 *   each acknowledged once the route is kept, so the backends' group commits work through the router as they do
 *   alone. If any of them lands, the route stays; if none does, it goes. A write to a session this context has not
 *   met (none of the last SESSIONS_REMEMBERED it held a lease or section of) goes to that section at once, without
 *   a lease that would only find no route: a new session's first write needs the section anyway, and one already
 *   routed elsewhere costs it the same reads. The section's hold is itself a lease, exclusive, which the context
 *   keeps once the section is done, knowing what it left: the calls that follow a first write, and the session's
 *   end, take no lock and read nothing from the store, and the burst's writes still under way are its calls, so
 *   nobody else holds the lock before they are answered. Another context that wants the session asks it to let
 *   go, shared or exclusive (locks.ts); after that, each context's next call takes a shared lease as above.
 * - A route to a backend that is down gives that backend's StorageUnavailableError, for writes and reads
 *   alike: the session's items are there, so answering from the other backend (an empty `list`) would hide them.
 * - New sessions go to the host when its handshake succeeds. Whether it does is known from the handshakes
 *   themselves: the first use asks, every (re)connection of the native client says so, and while the host is
 *   down it is asked again at most once per HOST_RECHECK_MS, when a new session starts. Never on every call.
 * - If a new session's first write fails because the host just went away, the write goes to the in-browser
 *   backend instead: nothing was in that session yet, so nothing is split. The host may have committed the write
 *   before its reply was lost, so an `endSession` is remembered for the host (session.ts sends it first on the
 *   host's next connection).
 * - A cleanup remembered for a backend (that one, or an `endSession` that met a full disk or a transient
 *   IndexedDB failure) is sent to it before any later write, update or append of that session reaches it, under
 *   the session's exclusive lock, so it can never remove the items of a later life. Waiting for the backend's
 *   next connection is not enough: the connection that met the failure may stay open. Whether one is owed is
 *   known under the lease too: a cleanup is only ever recorded under the exclusive lock, so none appears unseen.
 * - Route records of sessions their backend no longer holds (ended elsewhere, or removed as orphans after 24
 *   hours idle) are pruned, a page (ROUTE_PRUNE_PAGE) at a time, when the router is made and whenever the host
 *   connects: each is checked again under the session's exclusive lock, and one whose backend is down is kept.
 * - `endSession` goes to the backend that holds the session (which must answer), and to the other one too
 *   where it is up, for items an older shim (or a context with one backend) wrote there without a route. It
 *   costs that backend no write: both find a session they don't hold in a read-only look and commit nothing.
 * - `hello` and `stats` say which backend answered (`backend`); nothing else differs, so the LLM sees the same
 *   tool, prompt and answers either way.
 * - `sessions` (for extension pages, never the LLM) lists both backends' sessions, the host's first, each marked
 *   with its `backend`; its cursor says which backend the next page starts in. A host that is down (or too old
 *   for the op) is passed over and named in `unlisted`, so that a page still shows the in-browser sessions.
 *
 * With one backend (the host only, or the in-browser one only) every call goes to it and no routes are kept.
 */

import type {
  BackendKind,
  CacheBackend,
  ConnectSetup,
  RequestOptions,
  Served,
} from "./backend.js";
import { InvalidRequestError, StorageUnavailableError } from "./errors.js";
import type {
  AppendRequest,
  CacheMetadata,
  CachedItem,
  DeleteResult,
  EndSessionResult,
  HelloResult,
  EndorseRequest,
  KeyRequest,
  ListRequest,
  ListResult,
  ReadManyEntry,
  ReadManyRequest,
  ReadRequest,
  SearchRequest,
  SearchResult,
  SessionSummary,
  SessionsRequest,
  SessionsResult,
  StatsResult,
  UpdateRequest,
  WriteRequest,
} from "./protocol.js";
import { LIST_DEFAULT_LIMIT, NATIVE_HOST_NAME } from "./protocol.js";
import { KeptLease, leasesWork, withExclusiveLock, withLock } from "./locks.js";
import { IN_BROWSER_CHOSEN, hostProblemText, type CacheStatus, type StatusOptions } from "./status.js";
import type { KeyValueStore } from "./storage-area.js";

/**
 * How often, at most, a new session asks a host that was down whether it is there now. Installing the host
 * then takes effect within a minute, and an extension without one spends one failed connect a minute at most.
 */
export const HOST_RECHECK_MS = 60_000;

/** One chrome.storage.local key per session's route, so that two contexts never race on a shared record. */
export const ROUTE_PREFIX = "llmCache.route.";

/**
 * One chrome.storage.local key per pending session cleanup and backend (session.ts), so two cleanups never race
 * on one shared record. The host's keys are the ones shims before the in-browser backend wrote, so those are
 * still sent. Routing remembers one too, for a first write that may have reached the host before it went away.
 */
export const PENDING_END_SESSION_PREFIXES: Record<BackendKind, string> = {
  host: "llmCache.pendingEndSession.",
  indexeddb: "llmCache.indexeddb.pendingEndSession.",
};

/** How long a context keeps a session's lease (and the route it knows under it) after its last call. */
export { LEASE_IDLE_MS } from "./locks.js";

/**
 * How many sessions a context remembers having held a lease or section of. A write to one it doesn't remember
 * goes to the exclusive section at once (see the rules above); one it does takes a lease, so that two contexts
 * writing to one session don't take the section turn about.
 */
export const SESSIONS_REMEMBERED = 1024;

/** How many route records one pruning run looks at; the next run goes on after the last one. */
export const ROUTE_PRUNE_PAGE = 100;

/**
 * The name of a session's lock, held across every context of the extension: shared by its writes and by the
 * sending of its remembered cleanups, exclusive while its route is made, removed or pruned.
 */
export function sessionLockName(sessionId: string): string {
  return ROUTE_PREFIX + sessionId;
}

export interface RoutingOptions {
  /** The native client; absent when the extension chose the in-browser backend only. */
  host?: CacheBackend | undefined;
  /** The in-browser backend; absent when there is none (none given, or `fallback: false`). */
  fallback?: CacheBackend | undefined;
  /** Where routes are kept: chrome.storage.local in the extension. */
  storage: KeyValueStore;
  /** The clock for the recheck interval; Date.now by default. */
  now?: () => number;
  /** See HOST_RECHECK_MS. */
  recheckMs?: number;
}

/** What the router knows of the host, from its last handshake. */
type HostState = { state: "unknown" } | { state: "up"; hello: HelloResult } | { state: "down"; error: unknown; at: number };

/** What a context knows of a session: read once from the store under the session's lease, or per call without one. */
interface SessionRecords {
  /** The backend of the session's route (the one backend when there is only one); undefined without a route. */
  routed: CacheBackend | undefined;
  /** The backends a cleanup of the session's earlier life is remembered for. */
  owing: Set<BackendKind>;
}

/**
 * A context's hold on a session's lock, with what it knows under it: shared, or exclusive when an exclusive section
 * of this context kept its hold.
 */
interface SessionLease {
  kept: KeptLease;
  /** What the store said once the lease was granted, or what the section left; nobody else changes it meanwhile. */
  records: Promise<SessionRecords>;
  /** Whether the lease holds the lock exclusively: then nothing of the session is under way in another context. */
  exclusive: boolean;
}

/** How ending a session went on one backend. */
type EndOutcome = { backend: BackendKind } & ({ ok: true; result: EndSessionResult } | { ok: false; error: unknown });

/**
 * One backend's part in ending a session. `required`: it holds the session, so its cleanup must happen. `owed`:
 * whether a cleanup of the session was remembered for that backend as the end began (a RoutingBackend reads that
 * with the route; absent where it isn't known), so that a backend that ended it and owed nothing needs no record
 * forgotten.
 */
export type EndSessionAttempt = EndOutcome & { required: boolean; owed?: boolean };

/** What is done with a session's end attempts while its lock is still held (session.ts remembers the failed ones). */
export type SettleAttempts = (attempts: EndSessionAttempt[]) => Promise<void>;

/** What a pruning run did: the route records it asked a backend about, and those it removed. */
export interface PruneResult {
  checked: number;
  removed: number;
}

/** A backend whose sessions a `sessions` page could not list, and why. */
export interface UnlistedBackend {
  backend: BackendKind;
  /** The host's failed handshake or request, or an InvalidRequestError when the host is too old for `sessions`. */
  error: unknown;
}

/** A `sessions` page over both backends: the host's sessions, then the in-browser backend's. */
export interface RoutedSessionsResult extends SessionsResult {
  /** Each session marked with the backend that holds it. */
  sessions: Served<SessionSummary>[];
  /** The backends passed over on this page because they couldn't list their sessions; empty when none was. */
  unlisted: UnlistedBackend[];
}

export class RoutingBackend implements CacheBackend {
  readonly #host: CacheBackend | undefined;
  readonly #fallback: CacheBackend | undefined;
  readonly #storage: KeyValueStore;
  readonly #now: () => number;
  readonly #recheckMs: number;
  #hostState: HostState = { state: "unknown" };
  /** The handshake under way, so that calls arriving together ask the host once. */
  #checking: Promise<void> | undefined;
  /** The last route record the previous pruning run looked at ("": start from the first). */
  #pruneAfter = "";
  /** Settles when the pruning runs asked for so far have: each run waits for the one before it. */
  #pruned: Promise<unknown> = Promise.resolve();
  /** Set by close(): a pruning run under way sends nothing more, so it never opens a new connection. */
  #closed = false;
  /** Whether sessions' leases can be kept here (locks.ts); without, each call reads the records under the lock. */
  readonly #leasing = leasesWork();
  /** The leases this context holds, by session. */
  readonly #leases = new Map<string, SessionLease>();
  /**
   * The exclusive section under way per session in this context (a first write, or a remembered cleanup sent):
   * other changes of the session that need one join it, so a burst of writes to a new session makes one first
   * write and the rest go together under the same hold.
   */
  readonly #exclusive = new Map<string, Section>();
  /** The sessions this context held a lease or section of, the last SESSIONS_REMEMBERED of them, oldest first. */
  readonly #met = new Set<string>();

  constructor(options: RoutingOptions) {
    if (!options.host && !options.fallback) throw new TypeError("RoutingBackend needs a host or a fallback backend");
    this.#host = options.host;
    this.#fallback = options.fallback;
    this.#storage = options.storage;
    this.#now = options.now ?? Date.now;
    this.#recheckMs = options.recheckMs ?? HOST_RECHECK_MS;
    // Every successful handshake, including reconnects made by ordinary calls, says the host is there, and is
    // when the host's sessions can be compared with their routes. The pruning isn't awaited: it sends its
    // requests after the connection's setups, like any caller.
    this.#host?.onConnect(({ hello }) => {
      this.#hostState = { state: "up", hello };
      this.#pruneInBackground();
    });
    this.#pruneInBackground();
  }

  /** The backends this one routes between: the host first. */
  get backends(): CacheBackend[] {
    return [this.#host, this.#fallback].filter((backend): backend is CacheBackend => backend !== undefined);
  }

  /** The backend new sessions go to now, as far as is known without asking. */
  get kind(): BackendKind {
    return this.#defaultBackend().kind;
  }

  /** The `hello` result of the backend new sessions go to, with `backend` saying which it is. */
  async hello(): Promise<Served<HelloResult>> {
    const backend = await this.#newSessionBackend(false);
    return { ...(await backend.hello()), backend: backend.kind };
  }

  async stats(sessionId: string, options?: RequestOptions): Promise<Served<StatsResult>> {
    return this.#onRoute(sessionId, async (backend) => ({ ...(await backend.stats(sessionId, options)), backend: backend.kind }));
  }

  /**
   * A page of the sessions of both backends: the host's in sessionId order, then the in-browser backend's, each
   * marked with its `backend` (a session both hold, written by an older shim without routes, is listed twice).
   * A page that ends one backend's sessions goes on with the next one's. The cursor is `<backend>:<that
   * backend's cursor>` (empty: from its first session), opaque to callers. The host's sessions are passed over,
   * and the host named in `unlisted`, while it is down, when its store is unavailable, or when it is too old for
   * the op; any other error (a bad `limit` or `cursor`) rejects.
   */
  async sessions(request: SessionsRequest = {}, options?: RequestOptions): Promise<RoutedSessionsResult> {
    const backends = this.backends;
    let [start, cursor] = [0, undefined as string | undefined];
    if (request.cursor !== undefined) [start, cursor] = this.#sessionsCursor(request.cursor);
    const sessions: Served<SessionSummary>[] = [];
    const unlisted: UnlistedBackend[] = [];
    let nextCursor: string | null = null;
    // The first backend asked checks `limit` (with the protocol's own error); after it, the limit is sound.
    let checked = false;
    const limit = request.limit ?? LIST_DEFAULT_LIMIT;
    for (const backend of backends.slice(start)) {
      const kind = backend.kind;
      const unusable = await this.#cannotList(backend);
      // A page that is full already only looks whether this backend has a session, to know whether to lead on.
      const full = checked && sessions.length >= limit;
      const ask: SessionsRequest = {};
      const pageLimit = full ? 1 : checked ? limit - sessions.length : request.limit;
      if (pageLimit !== undefined) ask.limit = pageLimit;
      if (cursor !== undefined) ask.cursor = cursor;
      cursor = undefined;
      let page: SessionsResult;
      try {
        if (unusable !== undefined) throw unusable;
        page = await backend.sessions(ask, options);
      } catch (error) {
        if (backend !== this.#host || !(error instanceof StorageUnavailableError || error === unusable)) throw error;
        unlisted.push({ backend: kind, error });
        continue;
      }
      checked = true;
      if (full) {
        if (page.sessions.length > 0) nextCursor = `${kind}:`;
        break;
      }
      for (const summary of page.sessions) sessions.push({ ...summary, backend: kind });
      if (page.nextCursor !== null) {
        nextCursor = `${kind}:${page.nextCursor}`;
        break;
      }
    }
    return { sessions, nextCursor, unlisted };
  }

  /**
   * Writes to the backend of the session's route (see #change). A session without a route makes one
   * (#firstWrite).
   */
  async write(request: WriteRequest, options?: RequestOptions): Promise<CacheMetadata> {
    const sessionId = request.sessionId;
    if (typeof sessionId !== "string") return (await this.#newSessionBackend(false)).write(request, options);
    return this.#change(
      sessionId,
      (backend) => backend.write(request, options),
      (owing, together) => this.#firstWrite(request, owing, together, options),
    );
  }

  async read(request: ReadRequest, options?: RequestOptions): Promise<CachedItem> {
    return this.#onRoute(request.sessionId, (backend) => backend.read(request, options));
  }

  async readMany(request: ReadManyRequest, options?: RequestOptions): Promise<ReadManyEntry[]> {
    return this.#onRoute(request.sessionId, (backend) => backend.readMany(request, options));
  }

  async list(request: ListRequest, options?: RequestOptions): Promise<ListResult> {
    return this.#onRoute(request.sessionId, (backend) => backend.list(request, options));
  }

  async update(request: UpdateRequest, options?: RequestOptions): Promise<CacheMetadata> {
    return this.#change(request.sessionId, (backend) => backend.update(request, options));
  }

  async append(request: AppendRequest, options?: RequestOptions): Promise<CacheMetadata> {
    return this.#change(request.sessionId, (backend) => backend.append(request, options));
  }

  async search(request: SearchRequest, options?: RequestOptions): Promise<SearchResult> {
    return this.#onRoute(request.sessionId, (backend) => backend.search(request, options));
  }

  async endorse(request: EndorseRequest, options?: RequestOptions): Promise<CacheMetadata> {
    return this.#change(request.sessionId, (backend) => backend.endorse(request, options));
  }

  async delete(request: KeyRequest, options?: RequestOptions): Promise<DeleteResult> {
    return this.#onRoute(request.sessionId, (backend) => backend.delete(request, options));
  }

  /**
   * Ends the session on the backend that holds it and, where it is up, on the other one; the counts are the
   * sum. Rejects with the holding backend's error when it couldn't do it; the other's failures don't matter,
   * since it holds nothing of the session.
   */
  async endSession(sessionId: string, options?: RequestOptions): Promise<EndSessionResult> {
    const attempts = await this.endSessionEach(sessionId, options);
    const failed = attempts.find((attempt) => attempt.required && !attempt.ok);
    if (failed && !failed.ok) throw failed.error;
    let deletedItems = 0;
    let freedBytes = 0;
    for (const attempt of attempts) {
      if (!attempt.ok) continue;
      deletedItems += attempt.result.deletedItems;
      freedBytes += attempt.result.freedBytes;
    }
    return { sessionId, deletedItems, freedBytes };
  }

  /**
   * Ends the session on each backend that may hold it, and says how each went and whether a cleanup was owed there
   * (read with the route, in one read of the store), so that session cleanup can remember exactly the ones that
   * couldn't be reached and forget only those it had remembered (`settle`, run before the lock is let go). The route
   * goes either way: a session resumed under the same id starts afresh, and a cleanup remembered for the old
   * one is sent before the new one's first change reaches that backend (#change), so it can't touch the new
   * one's items. All of it holds the session's lock exclusively: no write of any context is under way, and the
   * next one finds the route gone. A context whose exclusive lease the session's first write left ends it under
   * that lease, as its last call, knowing the route and that no cleanup is owed: no lock to wait for, no read of
   * the store.
   */
  async endSessionEach(sessionId: string, options?: RequestOptions, settle?: SettleAttempts): Promise<EndSessionAttempt[]> {
    const end = async (records: Promise<Partial<SessionRecords>>) => {
      this.#met.delete(sessionId);
      const routed = records.then((known) => known.routed);
      // The route goes as the backends end the session: nobody reads it before the lock is let go.
      const removed = this.backends.length > 1 ? routed.then(() => this.#storage.remove(ROUTE_PREFIX + sessionId)) : routed;
      // Awaited with the backends' answers; a failed read fails it too, and is reported where the read is awaited.
      removed.catch(() => undefined);
      // Every backend that is up is told at once, and the route, read meanwhile, only says which must answer, and
      // whether one that is down must be told too: it must if it holds the session.
      const up = this.backends.filter((backend) => this.#isUp(backend));
      const told = up.map((backend) => endOn(backend, sessionId, options));
      const holder = (await routed) ?? (await this.#newSessionBackend(false));
      if (!up.includes(holder)) told.unshift(endOn(holder, sessionId, options));
      const [outcomes] = await Promise.all([Promise.all(told), removed]);
      const { owing } = await records;
      const attempts = outcomes.map((outcome) => ({
        ...outcome,
        required: outcome.backend === holder.kind,
        ...(owing ? { owed: owing.has(outcome.backend) } : {}),
      }));
      await settle?.(attempts);
      return attempts;
    };
    // A sessionId that isn't a string can have no route; the backend's own check names the problem.
    if (typeof sessionId !== "string") return end(Promise.resolve({}));
    const lease = this.#leases.get(sessionId);
    const underLease = lease?.exclusive ? lease.kept.last(async () => end(lease.records)) : undefined;
    // With one backend there is no route to read, and no read for the cleanups either: forgetting one that isn't
    // there costs what reading it would, so whether one is owed stays unknown.
    const look = () => (this.backends.length > 1 ? this.#records(sessionId) : Promise.resolve({ routed: this.backends[0] }));
    return underLease ?? withExclusiveLock(sessionLockName(sessionId), () => end(look()));
  }

  /**
   * Looks at a page of route records (ROUTE_PRUNE_PAGE, going on from the last run's) and removes each whose
   * backend answers that it holds nothing of the session any more: the session ended elsewhere, or its backend
   * removed it as an orphan (24 hours idle). Each is checked under the session's exclusive lock, so a write
   * under way finishes first and keeps its route. A route whose backend is down, or can't say, is kept. Runs
   * when the router is made and whenever the host connects; callers may run it too.
   */
  pruneRoutes(): Promise<PruneResult> {
    const run = this.#pruned.then(() => this.#prune());
    this.#pruned = run.catch(() => undefined);
    return run;
  }

  /**
   * Sends one request to the backend of `fields.sessionId` (or, without one, of new sessions). The ops whose
   * routing does more than pick a backend (a change sends a remembered cleanup first, a first write makes a
   * route, endSession reaches both, hello and stats say who answered) go through their typed calls.
   */
  async request<T>(op: string, fields: object, options?: RequestOptions): Promise<T> {
    if (op === "sessions") return (await this.sessions(fields as SessionsRequest, options)) as T;
    const sessionId = (fields as { sessionId?: unknown }).sessionId;
    if (typeof sessionId !== "string") {
      return op === "hello" ? (this.hello() as Promise<T>) : (await this.#newSessionBackend(false)).request<T>(op, fields, options);
    }
    switch (op) {
      case "write":
        return (await this.write(fields as WriteRequest, options)) as T;
      case "update":
        return (await this.update(fields as UpdateRequest, options)) as T;
      case "append":
        return (await this.append(fields as AppendRequest, options)) as T;
      case "endorse":
        return (await this.endorse(fields as EndorseRequest, options)) as T;
      case "endSession":
        return (await this.endSession(sessionId, options)) as T;
      case "stats":
        return (await this.stats(sessionId, options)) as T;
      default:
        return this.#onRoute(sessionId, (backend) => backend.request<T>(op, fields, options));
    }
  }

  /** Registers the setup with every backend; each runs it on its own connections. */
  onConnect(setup: ConnectSetup): void {
    for (const backend of this.backends) backend.onConnect(setup);
  }

  close(): void {
    this.#closed = true;
    for (const held of this.#leases.values()) held.kept.drop();
    for (const backend of this.backends) backend.close();
  }

  /** The host's `hello` result while it is known to be up (the native client's hostInfo). */
  get hostInfo(): HelloResult | undefined {
    return (this.#host as { hostInfo?: HelloResult } | undefined)?.hostInfo;
  }

  /**
   * Which backend serves new sessions, the host's version, and why the host isn't used, if it isn't. Asks the
   * host (a cheap no-op while its port is open), since whoever asks wants the answer as of now; with `recheck`,
   * over a new port even while one is open (see StatusOptions). What it finds is what new sessions then go by.
   */
  async status(options: StatusOptions = {}): Promise<CacheStatus> {
    if (!this.#host) return { backend: (this.#fallback as CacheBackend).kind, hostProblem: IN_BROWSER_CHOSEN };
    if (options.recheck) await this.#recheckHost();
    else await this.#checkHost();
    const state = this.#hostState;
    // A host backend other than the native client (a test's) has no name of its own: the default one is meant.
    const hostName = (this.#host as { hostName?: string }).hostName ?? NATIVE_HOST_NAME;
    if (state.state === "up") {
      return { backend: "host", hostName, host: { version: state.hello.hostVersion, protocolVersion: state.hello.protocolVersion } };
    }
    // After a check the host is known to be up or down.
    const error = state.state === "down" ? state.error : undefined;
    return { backend: this.#defaultBackend().kind, hostName, hostProblem: hostProblemText(error, undefined, undefined, hostName, options.advice) };
  }

  /**
   * Where a `sessions` cursor of this router's leads: the index of the backend it names, and that backend's own
   * cursor (undefined: from its first session).
   *
   * @throws InvalidRequestError for any other string.
   */
  #sessionsCursor(cursor: string): [number, string | undefined] {
    const colon = typeof cursor === "string" ? cursor.indexOf(":") : -1;
    const at = colon < 0 ? -1 : this.backends.findIndex((backend) => backend.kind === cursor.slice(0, colon));
    if (at < 0) {
      throw new InvalidRequestError({
        message: "`cursor` is not a nextCursor returned by an earlier sessions",
        expected: "a nextCursor returned by an earlier sessions",
        actual: "another string",
        suggestion: "pass nextCursor back unchanged, or leave cursor out to start from the first session",
      });
    }
    const inner = cursor.slice(colon + 1);
    return [at, inner === "" ? undefined : inner];
  }

  /**
   * Why `backend` can't list its sessions now, if it can't: the host while it is down (asked again once the
   * recheck interval has passed, so that a host installed meanwhile is seen), or a host older than the op.
   */
  async #cannotList(backend: CacheBackend): Promise<unknown> {
    if (backend !== this.#host) return undefined;
    const known = this.#hostState;
    if (known.state === "unknown" || (known.state === "down" && this.#now() - known.at >= this.#recheckMs)) await this.#checkHost();
    const state = this.#hostState;
    if (state.state === "down") return state.error;
    if (state.state === "up" && !(state.hello.ops ?? []).includes("sessions")) {
      return new InvalidRequestError({
        message: `llm-cache-host ${state.hello.hostVersion} has no op \`sessions\`, so its sessions can't be listed`,
        suggestion: "update llm-cache-host to list the sessions it holds",
      });
    }
    return undefined;
  }

  /**
   * Sends a call that changes nothing of the route to the backend of the session's route or, before its first
   * item, to that of new sessions, under the session's lease: the route it goes by can't change until it is done.
   */
  async #onRoute<T>(sessionId: string, send: (backend: CacheBackend) => Promise<T>): Promise<T> {
    // With one backend there is no route to know; a sessionId that isn't a string has none either, and the
    // backend's own check names the problem.
    if (this.backends.length === 1) return send(this.backends[0] as CacheBackend);
    if (typeof sessionId !== "string") return send(await this.#newSessionBackend(false));
    return this.#underLease(sessionId, async ({ routed }) => send(routed ?? (await this.#newSessionBackend(false))));
  }

  /**
   * The backend of the session's route, if it has one (and there is more than one backend to choose from), read
   * from the store: for whoever holds the session's lock exclusively, or prunes, and so must see it as it is now.
   */
  async #routed(sessionId: string): Promise<CacheBackend | undefined> {
    if (this.backends.length === 1) return this.backends[0];
    if (typeof sessionId !== "string") return undefined; // the backend's own check names the problem
    const kind = (await this.#storage.get(ROUTE_PREFIX + sessionId))[ROUTE_PREFIX + sessionId];
    return this.backends.find((backend) => backend.kind === kind);
  }

  /**
   * Runs `run` with the session's records, holding the session's lock shared. With leases (locks.ts), the lock
   * is this context's lease, taken and read once and kept across calls until someone asks for the lock
   * exclusively or it has been idle for LEASE_IDLE_MS: so an ordinary call reads nothing from the store. What
   * the lease read can't go stale while it is held, since only an exclusive holder changes a route or records a
   * cleanup. (A cleanup may be sent and forgotten under a shared hold, session.ts's flush; one still thought owed
   * only sends the change through an exclusive section that reads the records again.)
   */
  async #underLease<T>(sessionId: string, run: (records: SessionRecords) => Promise<T>): Promise<T> {
    if (!this.#leasing) return withLock(sessionLockName(sessionId), "shared", async () => run(await this.#records(sessionId)));
    const held = this.#leases.get(sessionId) ?? this.#takeLease(sessionId);
    return held.kept.use(async () => run(await held.records));
  }

  /** Takes the session's lease, shared, and reads its records once it is granted. */
  #takeLease(sessionId: string): SessionLease {
    const kept = new KeptLease(sessionLockName(sessionId), "shared", () => {
      if (this.#leases.get(sessionId) === held) this.#leases.delete(sessionId);
    });
    const records = kept.granted.then(() => this.#records(sessionId));
    const held: SessionLease = { kept, records, exclusive: false };
    this.#meet(sessionId);
    // A store that failed to answer leaves nothing known: the next call takes a new lease and asks again.
    held.records.catch(() => kept.drop());
    this.#leases.set(sessionId, held);
    return held;
  }

  /**
   * Sends a change to a session's items (a write, update or append) to the backend of the session's route,
   * under the session's lease, so that no other context can remove the route between the knowing and the
   * change's answer. Without a route, `first` makes one (a write), or the change goes to the backend of new
   * sessions (an update or append, which has no item to change there unless an older shim wrote it).
   *
   * A session without a route, and a backend that still owes the session a remembered cleanup (an `endSession`
   * of its earlier life that met a StorageUnavailableError: a full disk, a transient IndexedDB failure), take an
   * exclusive section: the route is made there, or the cleanup sent first. The backend's connection may have
   * outlived the failure, so no new connection would send it before this change; sent any later, it would
   * remove what this change was acknowledged for. A write to a session this context has not met goes to the
   * section at once (see SESSIONS_REMEMBERED). One exclusive section per session runs at a time in this context;
   * changes that come meanwhile join it and are sent under its hold: with a first write, as soon as the route is
   * chosen, so that a burst of writes to a new session makes one route and reaches the backend as one group;
   * otherwise once it has left a route. If it left none (no write of it landed), they try again as they came.
   */
  async #change<T>(
    sessionId: string,
    send: (backend: CacheBackend) => Promise<T>,
    first?: FirstWrite<T>,
  ): Promise<T> {
    // A sessionId that isn't a string can have no route or cleanup; the backend's own check names the problem.
    if (typeof sessionId !== "string") return send(await this.#newSessionBackend(false));
    // Each turn answers, or finds the section it joined left no route to go by.
    for (;;) {
      let section = this.#exclusive.get(sessionId);
      // With one backend there is no route to make: a first write is an ordinary change.
      const unmet = first !== undefined && this.backends.length > 1 && this.#leasing && !this.#leases.has(sessionId) && !this.#met.has(sessionId);
      if (!section && !unmet) {
        const sent = await this.#underLease(sessionId, async ({ routed, owing }) => {
          if (!routed && first) return undefined;
          const backend = routed ?? (await this.#newSessionBackend(false));
          return owing.has(backend.kind) ? undefined : { result: await send(backend) };
        });
        if (sent) return sent.result;
        section = this.#exclusive.get(sessionId);
      }
      const joined = section ? await join(section, send) : await this.#exclusiveSection(sessionId, send, first);
      if (joined) return joined.result;
    }
  }

  /**
   * Runs a change holding the session's lock exclusively (see #change): reads the session's records afresh, makes
   * the route with `first` (which sends the changes that joined with it) or sends the owed cleanup and the change,
   * and then the changes that joined meanwhile. Answers with its own change's result (or rejects with what it met)
   * as soon as that change is done: a first write is acknowledged once it is written and its route kept, not once
   * the burst it began is answered. The joined changes try again if no route was made.
   *
   * The hold is a lease, exclusive, and once the change is done it stays this context's lease of the session,
   * knowing what the section left, unless someone asked for the lock meanwhile: so the calls that follow a first
   * write, and the session's end, take no lock and read nothing from the store, and the writes of its burst still
   * under way are the lease's calls, answered before anyone else holds the lock. Another context that wants the
   * session, shared or exclusive, asks the lease to let go (locks.ts), as it asks any other.
   */
  #exclusiveSection<T>(
    sessionId: string,
    send: (backend: CacheBackend) => Promise<T>,
    first?: FirstWrite<T>,
  ): Promise<{ result: T }> {
    const section: Section = { waiting: [] };
    this.#exclusive.set(sessionId, section);
    this.#meet(sessionId);
    let askedToLetGo = false;
    const kept: KeptLease = new KeptLease(sessionLockName(sessionId), "exclusive", () => {
      askedToLetGo = true;
      if (this.#leases.get(sessionId)?.kept === kept) this.#leases.delete(sessionId);
    });
    return new Promise((answer, refuse) => {
      // Used at once, so that a request to let go before the lock is granted waits for the section.
      const held = kept.use(async () => {
        await kept.granted;
        // The backend the session is routed to once this change is done; the joined changes go there.
        let routedTo: CacheBackend | undefined;
        // What the store holds of the session once this change is done, where it is known.
        let left: SessionRecords | undefined;
        // The joined writes a first write left under way.
        let rest: Promise<unknown> | undefined;
        const own = (async (): Promise<{ result: T }> => {
          const { routed, owing } = await this.#records(sessionId);
          if (!routed && first) {
            const made = await first(owing, (backend, routeKept) => sendJoined(section, backend, routeKept));
            [routedTo, rest] = [made.backend, made.rest];
            left = { routed: routedTo, owing };
            return { result: made.result };
          }
          const backend = routed ?? (await this.#newSessionBackend(false));
          await this.#sendRememberedCleanup(backend, sessionId, owing);
          routedTo = routed;
          left = { routed, owing };
          return { result: await send(backend) };
        })();
        own.then(answer, refuse);
        try {
          await own;
        } catch {
          // Its caller has the error; the section still tells the joined changes where to go.
        }
        // Kept as the session's lease where what the section left is known; calls that come from now on go by it.
        // It is let go once the section is done without leases (no way to be asked to let go), when asked already,
        // and while a cleanup of the session is still owed: a connection's flush (session.ts) sends that under a
        // shared hold it can't wait for, so none may be held exclusively, idle, in the meantime.
        if (left && left.owing.size === 0 && this.#leasing && !askedToLetGo) this.#leases.set(sessionId, { kept, records: Promise.resolve(left), exclusive: true });
        else kept.drop();
        if (this.#exclusive.get(sessionId) === section) this.#exclusive.delete(sessionId);
        // Every change that joined is sent (or, if the section left no route, told to try again) before the
        // section's hold can go. None joins from here on: the section is forgotten, and later calls go by the lease.
        await rest;
        await sendJoined(section, routedTo);
      });
      // The lock refused (its change never ran), or sending the joined changes failing after the change was answered.
      held.catch(refuse);
    });
  }

  /**
   * A session's first write, run holding the session's lock exclusively (#change): the route is chosen, the item
   * written, and the route kept as it is sent (no other context reads it before the lock is let go; a write that
   * is refused takes it away again). Returns the item and the backend the session is now routed to.
   *
   * A write to the host that fails with StorageUnavailableError may still have been committed there (the
   * host crashed, or the port closed, after the commit and before the reply). So the route says host if the
   * host is back at once; if it is still down, the write goes to the in-browser backend, and an `endSession`
   * is remembered for the host (session.ts sends it first on the host's next connection), so the host keeps
   * no copy that nobody lists. Before a new session's first write goes to a backend, a cleanup remembered there
   * for an earlier session of that id (`owing`, as the section read it) is sent, so that it can never run later
   * and remove the new items.
   *
   * The writes that joined the section by then (`together`) go with it, once that cleanup is sent, so that the
   * backend commits them as one group, and each is acknowledged once the route is kept. If one of them lands, the
   * session is on that backend whatever becomes of this write: the route stays, and this write's error is its own.
   */
  async #firstWrite(
    request: WriteRequest,
    owing: Set<BackendKind>,
    together: SendJoined,
    options?: RequestOptions,
  ): Promise<{ backend: CacheBackend; result: CacheMetadata; rest?: Promise<unknown> }> {
    const sessionId = request.sessionId;
    const routeKey = ROUTE_PREFIX + sessionId;
    const backend = await this.#newSessionBackend(true);
    const writeOn = async (target: CacheBackend) => {
      await this.#sendRememberedCleanup(target, sessionId, owing);
      return target.write(request, options);
    };
    const routing = this.#storage.set({ [routeKey]: backend.kind });
    const cleaned = this.#sendRememberedCleanup(backend, sessionId, owing);
    const writing = cleaned.then(() => backend.write(request, options));
    // Joined writes not sent (the cleanup failed) wait for the backend the section leaves routed.
    const joined = cleaned.then(() => together(backend, routing), () => false);
    const [written, routed] = await Promise.allSettled([writing, routing]);
    if (written.status === "fulfilled" && routed.status === "fulfilled") return { backend, result: written.value, rest: joined };
    // Whatever went wrong, the joined writes are answered before the section goes on.
    const landed = await joined;
    if (routed.status === "rejected") throw routed.reason;
    const error: unknown = (written as PromiseRejectedResult).reason;
    if (landed) throw error;
    if (backend === this.#host && this.#fallback && error instanceof StorageUnavailableError) {
      await this.#checkHost();
      // The host is back: the write may be there, and the route says so.
      if (this.#hostState.state === "up") throw error;
      // The host went away since it last answered: this session has nothing anywhere else, so it can start
      // on the in-browser backend, and whatever the host may hold of it goes when the host is back.
      const fallback = this.#fallback;
      await this.#storage.set({ [PENDING_END_SESSION_PREFIXES.host + sessionId]: Date.now() });
      owing.add("host");
      const [onFallback] = await Promise.allSettled([writeOn(fallback)]);
      if (onFallback.status === "fulfilled") {
        await this.#storage.set({ [routeKey]: fallback.kind });
        return { backend: fallback, result: onFallback.value };
      }
      await this.#storage.remove(routeKey);
      throw onFallback.reason;
    }
    // Refused: nothing was written, so the session keeps no route.
    await this.#storage.remove(routeKey);
    throw error;
  }

  /**
   * Sends the backend an `endSession` remembered for it of this session id, if `owing` (read under the session's
   * exclusive lock) says one is, and forgets it once done. Only a StorageUnavailableError keeps it remembered (and
   * rejects): any other refusal would be the same next time, as session.ts's sending on connect decides too.
   */
  async #sendRememberedCleanup(backend: CacheBackend, sessionId: string, owing: Set<BackendKind>): Promise<void> {
    if (!owing.has(backend.kind)) return;
    try {
      await backend.endSession(sessionId);
    } catch (error) {
      if (error instanceof StorageUnavailableError) throw error;
    }
    await this.#storage.remove(PENDING_END_SESSION_PREFIXES[backend.kind] + sessionId);
    owing.delete(backend.kind);
  }

  /**
   * The backend of the session's route (as #routed) and the kinds of the backends a cleanup of the session is
   * remembered for, in one read of the store, since every change reads both.
   */
  async #records(sessionId: string): Promise<SessionRecords> {
    const routeKey = ROUTE_PREFIX + sessionId;
    const cleanupKey = (backend: CacheBackend) => PENDING_END_SESSION_PREFIXES[backend.kind] + sessionId;
    const single = this.backends.length === 1;
    const found = await this.#storage.get([...(single ? [] : [routeKey]), ...this.backends.map(cleanupKey)]);
    const routed = single ? this.backends[0] : this.backends.find((backend) => backend.kind === found[routeKey]);
    const owing = new Set(this.backends.filter((backend) => found[cleanupKey(backend)] !== undefined).map((backend) => backend.kind));
    return { routed, owing };
  }

  /** Remembers that this context met the session (see SESSIONS_REMEMBERED), forgetting the oldest beyond that. */
  #meet(sessionId: string): void {
    this.#met.delete(sessionId);
    this.#met.add(sessionId);
    if (this.#met.size > SESSIONS_REMEMBERED) this.#met.delete(this.#met.values().next().value as string);
  }

  /** One pruning run; see pruneRoutes. */
  async #prune(): Promise<PruneResult> {
    const result: PruneResult = { checked: 0, removed: 0 };
    if (this.backends.length === 1) return result;
    const keys = Object.keys(await this.#storage.get(null))
      .filter((key) => key.startsWith(ROUTE_PREFIX) && key > this.#pruneAfter)
      .sort()
      .slice(0, ROUTE_PRUNE_PAGE);
    this.#pruneAfter = keys.length === ROUTE_PRUNE_PAGE ? (keys[keys.length - 1] as string) : "";
    for (const key of keys) {
      const sessionId = key.slice(ROUTE_PREFIX.length);
      const backend = await this.#routed(sessionId);
      const held = backend && (await this.#holds(backend, sessionId));
      if (held !== undefined) result.checked++;
      if (!backend || held !== false) continue;
      // Checked again under the lock, which is taken only for a route that looks stale: a write that made or
      // used the route meanwhile has finished by then, and keeps it.
      await withExclusiveLock(sessionLockName(sessionId), async () => {
        if ((await this.#routed(sessionId)) !== backend || (await this.#holds(backend, sessionId)) !== false) return;
        await this.#storage.remove(key);
        result.removed++;
      });
    }
    return result;
  }

  /**
   * Whether the backend holds items of the session, or undefined when it can't say now (down, or this router
   * closed meanwhile, when nothing more is sent): then the route stays, and a later run asks again.
   */
  async #holds(backend: CacheBackend, sessionId: string): Promise<boolean | undefined> {
    if (this.#closed || !this.#isUp(backend)) return undefined;
    try {
      return (await backend.stats(sessionId)).itemCount > 0;
    } catch {
      return undefined;
    }
  }

  /** A pruning run nobody waits for: a failure (a backend gone meanwhile) only leaves routes for the next run. */
  #pruneInBackground(): void {
    if (this.backends.length > 1) this.pruneRoutes().catch(() => undefined);
  }

  /**
   * The backend new sessions go to. The host is asked on first use and, when `starting` a session while it is
   * known to be down, once the recheck interval has passed.
   */
  async #newSessionBackend(starting: boolean): Promise<CacheBackend> {
    if (this.#host && this.#fallback) {
      const state = this.#hostState;
      const due = state.state === "down" && starting && this.#now() - state.at >= this.#recheckMs;
      if (state.state === "unknown" || due) await this.#checkHost();
    }
    return this.#defaultBackend();
  }

  #defaultBackend(): CacheBackend {
    if (!this.#host) return this.#fallback as CacheBackend;
    if (!this.#fallback || this.#hostState.state !== "down") return this.#host;
    return this.#fallback;
  }

  /** Whether a backend is known to answer: the in-browser one always is; the host when its handshake was last seen to succeed. */
  #isUp(backend: CacheBackend): boolean {
    return backend !== this.#host || this.#hostState.state === "up";
  }

  /** Shakes hands with the host (a no-op while its port is open) and records the outcome. */
  #checkHost(): Promise<void> {
    const host = this.#host;
    if (!host) return Promise.resolve();
    this.#checking ??= host.hello().then(
      (hello) => {
        this.#hostState = { state: "up", hello };
      },
      (error: unknown) => {
        this.#hostState = { state: "down", error, at: this.#now() };
      },
    ).finally(() => {
      this.#checking = undefined;
    });
    return this.#checking;
  }

  /**
   * Shakes hands with the host afresh (NativeCacheClient.recheck) and records the outcome. A check already under
   * way may have used an old port, so this one waits for it and then makes its own.
   */
  async #recheckHost(): Promise<void> {
    const host = this.#host;
    if (!host) return;
    await this.#checking;
    const check = (async () => {
      try {
        this.#hostState = { state: "up", hello: await (host.recheck ? host.recheck() : host.hello()) };
      } catch (error) {
        this.#hostState = { state: "down", error, at: this.#now() };
      }
    })();
    this.#checking = check;
    await check;
    if (this.#checking === check) this.#checking = undefined;
  }
}

/**
 * Ends a session on each backend `client` stands for, and says how each went: a RoutingBackend's own
 * attempts, or the one backend's.
 */
export async function endSessionEach(client: CacheBackend, sessionId: string, settle?: SettleAttempts): Promise<EndSessionAttempt[]> {
  if (client instanceof RoutingBackend) return client.endSessionEach(sessionId, undefined, settle);
  const attempts = [{ ...(await endOn(client, sessionId)), required: true }];
  await settle?.(attempts);
  return attempts;
}

/** Ends the session on one backend, and says how that went. */
async function endOn(backend: CacheBackend, sessionId: string, options?: RequestOptions): Promise<EndOutcome> {
  try {
    return { backend: backend.kind, ok: true, result: await backend.endSession(sessionId, options) };
  } catch (error) {
    return { backend: backend.kind, ok: false, error };
  }
}

/** The backends `client` stands for: a RoutingBackend's, or the client itself. */
export function backendsOf(client: CacheBackend): CacheBackend[] {
  return client instanceof RoutingBackend ? client.backends : [client];
}

/** An exclusive section under way in a context (RoutingBackend.#change), with the changes that joined it. */
interface Section {
  /**
   * Each joined change: sent to `routed` (given undefined, told to try again), and answered once `routeKept`
   * settles too. Says whether it landed.
   */
  waiting: Array<(routed: CacheBackend | undefined, routeKept: Promise<unknown>) => Promise<boolean>>;
}

/**
 * Sends the changes that joined a section to `routed` (or tells them to try again), and those that join while
 * they are under way too, until none waits; each is answered once `routeKept` settles. Says whether one landed.
 */
type SendJoined = (routed: CacheBackend | undefined, routeKept?: Promise<unknown>) => Promise<boolean>;

/**
 * A session's first write, made in an exclusive section (RoutingBackend.#firstWrite): the backend it routed the
 * session to, its result, and the writes that joined it still under way (`rest`), if any are.
 */
type FirstWrite<T> = (owing: Set<BackendKind>, together: SendJoined) => Promise<{ backend: CacheBackend; result: T; rest?: Promise<unknown> }>;

async function sendJoined(section: Section, routed: CacheBackend | undefined, routeKept: Promise<unknown> = Promise.resolve()): Promise<boolean> {
  let landed = false;
  for (let waiting = section.waiting.splice(0); waiting.length > 0; waiting = section.waiting.splice(0)) {
    const outcomes = await Promise.all(waiting.map((go) => go(routed, routeKept)));
    landed ||= outcomes.includes(true);
  }
  return landed;
}

/** Joins a section: the change's result once sent on its backend, or undefined when it must try again. */
function join<T>(section: Section, send: (backend: CacheBackend) => Promise<T>): Promise<{ result: T } | undefined> {
  return new Promise((resolve, reject) => {
    section.waiting.push(async (routed, routeKept) => {
      if (routed === undefined) {
        resolve(undefined);
        return false;
      }
      let result: T;
      try {
        result = await send(routed);
      } catch (error) {
        reject(error);
        return false;
      }
      // Acknowledged only once the route that lists it is kept.
      await routeKept.then(() => resolve({ result }), reject);
      return true;
    });
  });
}
