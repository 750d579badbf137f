/**
 * IdleTimer: runs something once a thing has gone unused for a quiet time, armed once rather than by every use. A
 * kept lease (locks.ts) and the native client's port (backends/native.ts) are used by every call, and a timer
 * cleared and armed again per call costs about as much as the rest of the lease.
 *
 * When it fires and finds a use since it was armed, it waits for what is left of the quiet time after that use;
 * while a use is under way it does nothing, and that use arms it again when it ends. So `onIdle` runs exactly the
 * quiet time after the last use ended.
 */

export class IdleTimer {
  readonly #quietMs: number;
  readonly #busy: () => boolean;
  readonly #onIdle: () => void;
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** When the last use ended (Date.now()). */
  #lastUsed = 0;

  /** `busy` says whether a use is under way; `onIdle` runs once none has been for `quietMs`. */
  constructor(quietMs: number, busy: () => boolean, onIdle: () => void) {
    this.#quietMs = quietMs;
    this.#busy = busy;
    this.#onIdle = onIdle;
  }

  /** Says a use has ended with none under way: `onIdle` runs the quiet time from now, unless used again. */
  used(): void {
    this.#lastUsed = Date.now();
    if (this.#timer === undefined) this.#arm(this.#quietMs);
  }

  /** Stops it: `onIdle` doesn't run unless `used` arms it again. */
  cancel(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #arm(ms: number): void {
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      if (this.#busy()) return;
      const quiet = Date.now() - this.#lastUsed;
      // A clock set back can't say how long; both users only lose what they kept, and take it again when next used.
      if (quiet >= this.#quietMs || quiet < 0) this.#onIdle();
      else this.#arm(this.#quietMs - quiet);
    }, ms);
    // In Node (the tests) an idle timer must not keep the process alive; browsers have no unref.
    (this.#timer as { unref?: () => void }).unref?.();
  }
}
