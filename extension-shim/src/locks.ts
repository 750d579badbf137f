/**
 * Named locks, shared or exclusive, held across every context of the extension: the browser's Web Locks
 * (`navigator.locks`) where there are some, and otherwise the same rules within this JavaScript realm, so that
 * several routers made in one Node process (the tests' "contexts") serialise as an extension's contexts do.
 *
 * The rules are Web Locks': a shared request is granted while only shared holders hold the name and nobody
 * waits before it; an exclusive one when nobody holds it; requests are granted in the order made. A request
 * `ifAvailable` is granted only if it can be at once, and otherwise runs nothing.
 *
 * A lease is a hold kept between calls, so that a context can keep what the lock protects in memory without
 * reading it again per call: shared, as a session's route (routing.ts), or exclusive, as the session's route its
 * first write made (routing.ts) or the right to change the in-browser backend's totals
 * (backends/indexeddb/writer.ts). Whoever asks for a lock asks the holders it must wait for to let go
 * (`askToLetGo`): an exclusive request every holder, a shared lease's request the exclusive ones; in this realm at
 * once, and in the extension's other contexts over a BroadcastChannel. A holder that hears it forgets what it kept
 * and lets go once its calls under way have finished; its next call takes a new lease, which waits behind the
 * request that asked (a shared request never overtakes an exclusive one that waits), and so reads what that holder
 * left. A lease unused for LEASE_IDLE_MS is let go.
 */

import { IdleTimer } from "./idle-timer.js";

export type LockMode = "shared" | "exclusive";

/**
 * How long a context keeps a lease (and what it knows under it) after its last call, so that a worker with nothing
 * to do holds nothing and can sleep. An agent's calls within a turn come well within it.
 */
export const LEASE_IDLE_MS = 20_000;

/** What `tryLock` returns when the lock was not free. */
export const NOT_GRANTED: unique symbol = Symbol("llmCache.lockNotGranted");

/** Runs `run` while holding the lock `name` in `mode`, waiting for it as long as it takes. */
export function withLock<T>(name: string, mode: LockMode, run: () => Promise<T>): Promise<T> {
  const locks = webLocks();
  if (locks) return locks.request(name, { mode }, run);
  return new Promise<void>((grant) => localRequest(name, mode, grant, false)).then(() => runAndRelease(name, run));
}

/** Runs `run` while holding the lock `name` in `mode` if it is free now; otherwise runs nothing. */
export async function tryLock<T>(name: string, mode: LockMode, run: () => Promise<T>): Promise<T | typeof NOT_GRANTED> {
  const locks = webLocks();
  if (locks) return locks.request(name, { mode, ifAvailable: true }, (lock) => (lock === null ? NOT_GRANTED : run()));
  let granted = false;
  localRequest(name, mode, () => (granted = true), true);
  return granted ? runAndRelease(name, run) : NOT_GRANTED;
}

/** A hold on a lock, kept until `release` (or until the context goes, when the browser lets it go). */
export interface Lease {
  /** Settles once the lock is held. */
  readonly granted: Promise<void>;
  /** Lets go of the lock, or of the request for it while it waits; a second call does nothing. */
  release(): void;
}

/** The BroadcastChannel over which the extension's contexts ask each other to let go of a lock. */
const LET_GO_CHANNEL = "llmCache.locks.letGo";

/** What each lease of this realm does when asked to let go, and the mode it holds in, by lock name. */
const letGoListeners = new Map<string, Map<() => void, LockMode>>();

/** The channel to the other contexts: made on first use; undefined where there is no need (no Web Locks) or no way. */
let letGoChannel: BroadcastChannel | undefined | null = null;

function channel(): BroadcastChannel | undefined {
  if (letGoChannel !== null) return letGoChannel;
  // Without Web Locks every lock is this realm's own, and so is every lease: nobody else needs telling.
  letGoChannel = webLocks() && typeof BroadcastChannel === "function" ? new BroadcastChannel(LET_GO_CHANNEL) : undefined;
  letGoChannel?.addEventListener("message", (event: MessageEvent) => {
    const { letGo: name, wanted } = (event.data ?? {}) as { letGo?: unknown; wanted?: unknown };
    if (typeof name === "string") letGoHere(name, wanted === "shared" ? "shared" : "exclusive");
  });
  // A Node that has Web Locks keeps its process alive while a channel is open; browsers have no unref.
  (letGoChannel as { unref?: () => void } | undefined)?.unref?.();
  return letGoChannel;
}

/**
 * Whether leases can be kept here: every holder can be asked to let go. True with this realm's own locks, and
 * with Web Locks where there is a BroadcastChannel; a context with Web Locks and no channel holds locks per call.
 */
export function leasesWork(): boolean {
  return !webLocks() || channel() !== undefined;
}

/**
 * Takes the lock `name` in `mode` and keeps it until released. `onLetGo` runs (once per request, in any context)
 * when someone is about to wait for the lock: every lease when the request is exclusive, an exclusive one when it
 * is a shared lease's. The holder should then forget what it kept and release. A lease asks the holders it waits
 * for to let go (`askToLetGo`): an exclusive one every other holder, as `withExclusiveLock` does, and a shared one
 * the exclusive holders.
 */
export function holdLease(name: string, onLetGo: () => void, mode: LockMode = "shared"): Lease {
  watchLifecycle();
  let letGo!: () => void;
  const held = new Promise<void>((resolve) => (letGo = resolve));
  let listeners = letGoListeners.get(name);
  if (!listeners) letGoListeners.set(name, (listeners = new Map()));
  const registered = listeners;
  registered.set(onLetGo, mode);
  let released = false;
  const granted = new Promise<void>((grant) => {
    void withLock(name, mode, () => {
      grant();
      return held;
    });
  });
  askToLetGo(name, onLetGo, mode);
  const release = () => {
    if (released) return;
    released = true;
    registered.delete(onLetGo);
    if (registered.size === 0 && letGoListeners.get(name) === registered) letGoListeners.delete(name);
    letGo();
  };
  return { granted, release };
}

/**
 * A lease as its owner keeps it: used by calls (`use`), let go once none uses it after someone asked (a let-go
 * message, the page frozen), after LEASE_IDLE_MS unused, or when its owner drops it. `onDrop` runs once, when it is
 * dropped, so that the owner forgets it and what it knew under it: its next call takes a new lease.
 */
export class KeptLease {
  readonly #lease: Lease;
  readonly #onDrop: () => void;
  /** Calls under way: the lease is let go only when none is, so that none of them is cut short. */
  #uses = 0;
  #dropped = false;
  /** Drops the lease once it has been unused for LEASE_IDLE_MS. */
  readonly #idle = new IdleTimer(LEASE_IDLE_MS, () => this.#uses > 0, () => this.drop());
  /** What waits for the calls under way to finish (`last`), woken as each does. */
  readonly #finished: Array<() => void> = [];

  constructor(name: string, mode: LockMode, onDrop: () => void) {
    this.#onDrop = onDrop;
    this.#lease = holdLease(name, () => this.drop(), mode);
  }

  /** Settles once the lock is held. */
  get granted(): Promise<void> {
    return this.#lease.granted;
  }

  /** Runs `run` as a call on the lease: it is not let go before `run` is done. */
  async use<T>(run: () => Promise<T>): Promise<T> {
    this.#uses++;
    try {
      return await run();
    } finally {
      this.#uses--;
      for (const wake of this.#finished.splice(0)) wake();
      this.#settle();
    }
  }

  /**
   * Forgets the lease (as `drop` does) and runs `run` as its last call, once every call under way has finished, so
   * that `run` holds the lock alone, as an exclusive lease's holder that took the lock afresh would, with no lock
   * to wait for; then lets it go. Undefined, running nothing, when the lease was dropped already: its owner has
   * forgotten it, and needs the lock anew.
   */
  last<T>(run: () => Promise<T>): Promise<T> | undefined {
    if (this.#dropped) return undefined;
    return this.use(async () => {
      this.drop();
      while (this.#uses > 1) await new Promise<void>((wake) => this.#finished.push(wake));
      return run();
    });
  }

  /** Forgets the lease (`onDrop`) and lets it go once no call uses it. */
  drop(): void {
    if (!this.#dropped) {
      this.#dropped = true;
      this.#onDrop();
    }
    this.#settle();
  }

  #settle(): void {
    if (this.#uses > 0) return;
    if (this.#dropped) {
      this.#idle.cancel();
      this.#lease.release();
      return;
    }
    this.#idle.used();
  }
}

/**
 * Asks the leases of `name` that a request in mode `wanted` waits for, in this context and the others, to let go:
 * every one for an exclusive request, the exclusive ones for a shared one. Called right after the request is made,
 * so that a lease taken by anyone who hears this waits behind that request, and every holder whose request came
 * before it (and so registered its listener before this is sent) hears it.
 */
export function askToLetGo(name: string, except?: () => void, wanted: LockMode = "exclusive"): void {
  letGoHere(name, wanted, except);
  channel()?.postMessage({ letGo: name, wanted });
}

/** Runs `run` holding `name` exclusively, having asked every lease of it to let go. */
export function withExclusiveLock<T>(name: string, run: () => Promise<T>): Promise<T> {
  const done = withLock(name, "exclusive", run);
  askToLetGo(name);
  return done;
}

/** Whether this realm's leases are let go when its page is frozen or hidden (see watchLifecycle). */
let watchingLifecycle = false;

/**
 * In a page (an extension page, a side panel), lets go of every lease when the page is about to be frozen (the Page
 * Lifecycle API's `freeze`, fired at the document: Chrome's Energy Saver freezes a hidden page) or hidden for the
 * back/forward cache (`pagehide`): a frozen page runs nothing, so it would hold its locks, and keep every other
 * context's exclusive request waiting, until someone showed it again. Chrome freezes no page holding a lock that
 * another context waits for, but a lease held idle is one that nobody waits for yet. Its next call takes a new
 * lease. A worker has no document, and is stopped, not frozen (its locks then go with it).
 */
function watchLifecycle(): void {
  if (watchingLifecycle) return;
  const page = globalThis as { document?: EventTarget; addEventListener?: EventTarget["addEventListener"] };
  if (page.document === undefined) return;
  watchingLifecycle = true;
  const letGoOfAll = () => {
    for (const name of [...letGoListeners.keys()]) letGoHere(name, "exclusive");
  };
  page.document.addEventListener("freeze", letGoOfAll);
  page.addEventListener?.("pagehide", letGoOfAll);
}

function letGoHere(name: string, wanted: LockMode, except?: () => void): void {
  for (const [listener, mode] of [...(letGoListeners.get(name) ?? [])]) {
    if (listener !== except && (wanted === "exclusive" || mode === "exclusive")) listener();
  }
}

function webLocks(): LockManager | undefined {
  return (globalThis as { navigator?: { locks?: LockManager } }).navigator?.locks;
}

/** A name's holders and waiters in this realm. */
interface LocalLock {
  mode: LockMode;
  held: number;
  waiting: Array<{ mode: LockMode; grant: () => void }>;
}

const localLocks = new Map<string, LocalLock>();

/** Grants the request at once if it can be (calling `grant` synchronously); otherwise queues it, unless `ifAvailable`. */
function localRequest(name: string, mode: LockMode, grant: () => void, ifAvailable: boolean): void {
  const lock = localLocks.get(name) ?? { mode, held: 0, waiting: [] };
  localLocks.set(name, lock);
  const free = lock.waiting.length === 0 && (lock.held === 0 || (mode === "shared" && lock.mode === "shared"));
  if (free) {
    lock.mode = mode;
    lock.held++;
    grant();
  } else if (!ifAvailable) {
    lock.waiting.push({ mode, grant });
  } else if (lock.held === 0) {
    localLocks.delete(name);
  }
}

async function runAndRelease<T>(name: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } finally {
    release(name);
  }
}

/** Lets go of one hold; when none is left, grants the next exclusive waiter, or the next run of shared ones. */
function release(name: string): void {
  const lock = localLocks.get(name) as LocalLock;
  lock.held--;
  if (lock.held > 0) return;
  const next = lock.waiting[0];
  if (!next) {
    localLocks.delete(name);
    return;
  }
  lock.mode = next.mode;
  while (lock.waiting.length > 0 && (lock.held === 0 || (lock.mode === "shared" && lock.waiting[0]?.mode === "shared"))) {
    lock.held++;
    (lock.waiting.shift() as { grant: () => void }).grant();
  }
}
