/**
 * IndexedDbBackend: the in-browser backend, an IdbHost on the context's IndexedDB behind the in-process seam.
 *
 * It is what createLlmCache falls back to where the native host isn't there, so an extension works without the
 * host. Sessions nobody touched for 24 hours are swept when the backend is made (the worker's start) and then
 * every ORPHAN_SWEEP_EVERY_MS while it lives; the timer is unref'd where the platform allows (Node), so it never
 * keeps a process alive, and `close()` stops it.
 */

import { ORPHAN_SWEEP_EVERY_MS } from "../../protocol.js";
import { InProcessBackend } from "../in-process.js";
import { IdbHost, type IdbHostOptions } from "./host.js";

export class IndexedDbBackend extends InProcessBackend {
  readonly host: IdbHost;
  #timer: ReturnType<typeof setInterval> | undefined;

  constructor(options: IdbHostOptions = {}) {
    const host = new IdbHost(options);
    super(host, "indexeddb");
    this.host = host;
    this.#sweep();
    this.#startTimer();
  }

  /** Stops the hourly sweep and lets go of the database. A later call opens it again, without the sweep. */
  override close(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    super.close();
  }

  #startTimer(): void {
    const timer = setInterval(() => this.#sweep(), ORPHAN_SWEEP_EVERY_MS);
    // Node's timers keep the process alive unless unref'd; a browser's return a number, which has no unref.
    (timer as { unref?: () => void }).unref?.();
    this.#timer = timer;
  }

  /** A failed sweep only means orphans stay until the next one; the requests report the database's state. */
  #sweep(): void {
    this.host.maintain().catch(() => undefined);
  }
}

/** Whether this context has an IndexedDB, i.e. whether the in-browser backend can be made by default. */
export function hasIndexedDb(): boolean {
  return (globalThis as { indexedDB?: unknown }).indexedDB !== undefined;
}
