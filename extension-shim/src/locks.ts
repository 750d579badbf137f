/**
 * Named locks, shared or exclusive, held across every context of the extension: the browser's Web Locks
 * (`navigator.locks`) where there are some, and otherwise the same rules within this JavaScript realm, so that
 * several routers made in one Node process (the tests' "contexts") serialise as an extension's contexts do.
 *
 * The rules are Web Locks': a shared request is granted while only shared holders hold the name and nobody
 * waits before it; an exclusive one when nobody holds it; requests are granted in the order made. A request
 * `ifAvailable` is granted only if it can be at once, and otherwise runs nothing.
 */

export type LockMode = "shared" | "exclusive";

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
