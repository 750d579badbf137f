/**
 * The writer lease: the right, held by one context of the extension at a time, to change the totals that every
 * change reads (the session records and the store's running total, store.ts). Its holder keeps them in memory
 * (KnownTotals) from one change to the next, so that a write sends its puts at once, without first reading the
 * totals back from the database: a round trip less per write, most of what the write costs besides its commit.
 *
 * It is an exclusive lease (locks.ts) per database: taken on a context's first change, kept while the context
 * keeps changing, let go after LEASE_IDLE_MS unused or as soon as another context asks for it (once the change
 * under way has committed). What it knew goes with it: the next holder reads the totals afresh once, and so sees
 * what the last holder left. Every transaction that changes a total (a change, endSession, the orphan sweep) runs
 * under it. Where leases can't work (Web Locks without a BroadcastChannel), nothing is kept and each change reads
 * the totals in its own transaction, as it would without the lease.
 *
 * The host needs none of this: one process owns its LMDB store, and reading a total there costs no round trip.
 */

import { KeptLease, leasesWork } from "../../locks.js";
import { KnownTotals } from "./store.js";

/** The lease this context holds (or has asked for), and what it knows under it. */
interface Held {
  kept: KeptLease;
  /** The database connection `known` is of: a new connection (the old one closed) starts knowing nothing. */
  db: IDBDatabase | undefined;
  known: KnownTotals;
}

/** The Web Lock's name of the writer lease of the database `databaseName`. */
export function writerLockName(databaseName: string): string {
  return `llmCache.indexeddb.writer.${databaseName}`;
}

export class WriterLease {
  readonly #name: string;
  #held: Held | undefined;

  /** The lease of the database `databaseName`. */
  constructor(databaseName: string) {
    this.#name = writerLockName(databaseName);
  }

  /**
   * Runs `run` holding the lease, taking it first if this context hasn't it, with the totals this context knows of
   * `db` (undefined where leases can't work). `run` must leave in `known` only what committed (Totals.keep).
   */
  async using<T>(db: IDBDatabase, run: (known: KnownTotals | undefined) => Promise<T>): Promise<T> {
    if (!leasesWork()) return run(undefined);
    const held = this.#held ?? this.#take();
    return held.kept.use(async () => {
      await held.kept.granted;
      if (held.db !== db) [held.db, held.known] = [db, new KnownTotals()];
      return run(held.known);
    });
  }

  /** Lets the lease go once no call uses it, forgetting what it knew (the host closing). */
  release(): void {
    this.#held?.kept.drop();
  }

  #take(): Held {
    const kept = new KeptLease(this.#name, "exclusive", () => {
      if (this.#held === held) this.#held = undefined;
    });
    const held: Held = { kept, db: undefined, known: new KnownTotals() };
    this.#held = held;
    return held;
  }
}
