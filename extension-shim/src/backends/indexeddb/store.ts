/**
 * The IndexedDB database of the in-browser host: its schema, its records, and transactions as promises. The
 * twin of the host's `src/store.rs`, much smaller, because IndexedDB gives what LMDB is wrapped for there:
 * transactions that commit whole or not at all, and read-write transactions that the browser runs one at a time
 * for every context of the extension (service worker, side panel, pages), so one transaction that checks the
 * quota and writes holds the quota across all of them.
 *
 * # Schema (database `llm-cache`, version 4)
 * - `items`: an item's metadata (`ItemRecord`), keyed by its storage key, and the data of a small item (at most
 *   MAX_INLINE_DATA_BYTES), so that its write is one request fewer. Index `bySessionTime` on
 *   `[sessionId, timestamp, storageKey]`: a session's items in `list` order when walked backwards (newest first,
 *   then the greater key first, as the host orders them).
 * - `data`: the data of a larger item, keyed by its storage key, so that `list` reads no large data. Data is
 *   the compact JSON text exactly as the host would store it, wherever it is kept.
 * - `sessions`: a session's record (`SessionRecord`: its totals and times), keyed by its id, present while it holds
 *   items. Index `byLastAccess`, for the orphan sweep.
 * - The totals move with every change, and each change of them is numbered (`seq`). A write, update or append
 *   carries its session's record as the change leaves it in the item it puts (`ItemRecord.session`), one request
 *   rather than two; the record in `sessions` is written by the changes that put no item (a delete, an endorsement),
 *   by a session's first write, and by a write when its `lastAccessedAt` there is a minute old or more, so that the
 *   orphan sweep finds idle sessions by it, as reads refresh it (`touch`). A session's record now is the one of the
 *   greater `seq` in `sessions` and on its items (the newest by the index `bySessionSeq` on `[sessionId,
 *   session.seq]`), with the later `lastAccessedAt` of the two (`readSession`), kept equal to the sum over its items.
 * - The store's running total, the sum of every session's `totalSize`, so that the store-wide quota is checked
 *   without a scan: carried, with the number, by whatever the change that moved it wrote (a session's record, as
 *   `storeTotal`, in `sessions` or on an item), or by `storeTotal` in `counters` (a `StoreTotal`) when the change
 *   left no record of its session (its last item deleted, `endSession`, the orphan sweep). It is whichever of the
 *   three places holds the greatest `seq` (`readStoreTotal`; the indexes `bySeq` of `sessions` and of `items`).
 * - Versions: 2 added the running total (a database of version 1 gets it summed once from its sessions), 3 the
 *   data kept in `items`, which keeps shims that know only `data` from opening a database whose small items'
 *   data they would not find, 4 the numbered totals (the total a number in `counters` before, which becomes `seq`
 *   0).
 *
 * An extension's origin is its database's: the browser keeps every origin's IndexedDB apart, as the host keeps
 * origins apart in its keys.
 */

import { TOUCH_GRANULARITY_MS, type Provenance } from "../../protocol.js";
import { utf8Length } from "./json/index.js";

/** The database's name, unless the owner chooses another (tests and the conformance runner do). */
export const DATABASE_NAME = "llm-cache";

/** The schema's version; a new one needs an upgrade step in `openDatabase`. */
export const DATABASE_VERSION = 4;

/** The object stores. */
export const ITEMS = "items";
export const DATA = "data";
export const SESSIONS = "sessions";
export const COUNTERS = "counters";

/** The key in `counters` of the store's running total, when no session record holds a newer one (`StoreTotal`). */
export const STORE_TOTAL = "storeTotal";

/** The indexes. */
export const BY_SESSION_TIME = "bySessionTime";
export const BY_LAST_ACCESS = "byLastAccess";
/** On `sessions` and on `items` (by `session.seq`): the record that holds the newest numbered totals. */
export const BY_SEQ = "bySeq";
export const BY_SESSION_SEQ = "bySessionSeq";

/**
 * The most bytes of data (the UTF-8 of its compact JSON text) an item keeps in its own record in `items`; larger
 * data is kept in `data`. A small item, such as a summary, is then written with one request fewer, about a tenth
 * of its write's time in Chromium (docs/performance.md). Reads of whole records hold it beside the metadata: a
 * `list` page at most (limit + 1) of them (4 MiB at MAX_LIST_LIMIT), a read of several items MAX_STORAGE_KEYS, a
 * session's removal a page of 100 (cleanup.ts).
 */
export const MAX_INLINE_DATA_BYTES = 4096;

/** Every store an item's change touches: its metadata, its data, its session's totals and the store's. */
export const ITEM_STORES = [ITEMS, DATA, SESSIONS, COUNTERS];

/** The stores a read of items looks at: their metadata, their data, and the session's last access. */
export const READ_STORES = [ITEMS, DATA, SESSIONS];

/** An item's metadata, as `items` keeps it. */
export interface ItemRecord {
  /** The session that owns the item: the first part of its key. */
  sessionId: string;
  /** `{sessionId}_{taskId}_{turnId}`. */
  storageKey: string;
  /** As stored: at most 300 characters. */
  description: string;
  /** When the item was last written, ms since the Unix epoch. */
  timestamp: number;
  /** Bytes (UTF-8) of the data's compact JSON text. */
  dataSize: number;
  /** How the data is built, computed when it was written. */
  shape: string;
  /** The client's own annotations as compact JSON text, when it gave any. */
  customMetadata?: string;
  /** The data's compact JSON text when it is at most MAX_INLINE_DATA_BYTES; else the data is in `data`. */
  data?: string;
  /**
   * Where the item's text came from, in canonical form (provenance.ts); absent in records written before items
   * carried it, which read as `{origin: "unknown"}`. Never counted in the quota: it is bounded (a few KB).
   */
  provenance?: Provenance;
  /**
   * The session's record as the write, update or append that put this item left it, numbered (see the schema);
   * absent where the change wrote the record to `sessions` instead. Never in a reply.
   */
  session?: SessionRecord;
}

/**
 * Puts `item` in the transaction `tx` (added, when `add`: a key assumed free) with `text` as its data: in the
 * record when it is small, else in `data`. `replaced` is the record the item replaces, if any: its data goes from
 * `data` when the new data doesn't go there. With no `text` the data stays as it is, where it is.
 */
export function putItem(tx: IDBTransaction, item: ItemRecord, text: string | undefined, replaced: ItemRecord | undefined, add = false): void {
  const items = tx.objectStore(ITEMS);
  if (text !== undefined) {
    const inline = item.dataSize <= MAX_INLINE_DATA_BYTES;
    if (inline) item.data = text;
    else delete item.data;
    if (!inline) tx.objectStore(DATA).put(text, item.storageKey);
    else if (replaced !== undefined && replaced.data === undefined) tx.objectStore(DATA).delete(item.storageKey);
  }
  if (add) items.add(item);
  else items.put(item);
}

/** An item's data text: from its record, or else from `data`; undefined if it is missing from both. */
export function dataOf(tx: IDBTransaction, item: ItemRecord): Promise<string | undefined> {
  return item.data !== undefined ? Promise.resolve(item.data) : storedData(tx, item.storageKey);
}

/** The record of the item a key names, if any. */
export function itemRecord(tx: IDBTransaction, storageKey: string): Promise<ItemRecord | undefined> {
  return request(tx.objectStore(ITEMS).get(storageKey)) as Promise<ItemRecord | undefined>;
}

/** The data that `data` keeps under a key: a larger item's (see MAX_INLINE_DATA_BYTES). */
export function storedData(tx: IDBTransaction, storageKey: string): Promise<string | undefined> {
  return request(tx.objectStore(DATA).get(storageKey)) as Promise<string | undefined>;
}

/** The bytes an item takes from its session's quota: data and customMetadata (PROTOCOL.md section 5.7). */
export function quotaOf(item: ItemRecord): number {
  return item.dataSize + (item.customMetadata === undefined ? 0 : utf8Length(item.customMetadata));
}

/** A session's running totals, as `sessions` keeps them. */
export interface SessionRecord {
  sessionId: string;
  /** The sum over its items of `quotaOf`; the quota bounds it. */
  totalSize: number;
  /** How many items it holds; a record with none is removed. */
  itemCount: number;
  /** When its first item was written. */
  createdAt: number;
  /** When it was last written (or read, at a minute's granularity): the orphan rule's clock. */
  lastAccessedAt: number;
  /**
   * The number of the change that left this record, and the store's running total as it left it; absent in
   * records written before the totals were numbered (see the schema). Only the greatest `seq` holds them now.
   */
  seq?: number;
  storeTotal?: number;
}

/** The store's running total and the number of its last change (see the schema). */
export interface StoreTotal {
  seq: number;
  total: number;
}

/** A session that holds nothing yet. */
export function newSession(sessionId: string, now: number): SessionRecord {
  return { sessionId, totalSize: 0, itemCount: 0, createdAt: now, lastAccessedAt: now };
}

/**
 * Opens (and on first use creates) the database.
 *
 * @throws whatever the browser fails with: IndexedDB refused (private browsing in some browsers), a newer version
 * of the schema, an upgrade that failed.
 */
export function openDatabase(factory: IDBFactory, name: string): Promise<IDBDatabase> {
  return new Promise((resolve, reject) => {
    const opening = factory.open(name, DATABASE_VERSION);
    opening.onupgradeneeded = (event) => {
      const db = opening.result;
      const upgrade = opening.transaction;
      if (upgrade === null) return;
      if (event.oldVersion < 1) {
        const items = db.createObjectStore(ITEMS, { keyPath: "storageKey" });
        items.createIndex(BY_SESSION_TIME, ["sessionId", "timestamp", "storageKey"]);
        db.createObjectStore(DATA);
        const sessions = db.createObjectStore(SESSIONS, { keyPath: "sessionId" });
        sessions.createIndex(BY_LAST_ACCESS, "lastAccessedAt");
      }
      // Version 3 adds nothing to upgrade: a record without `data` keeps its data in the `data` store.
      if (event.oldVersion < 4) {
        upgrade.objectStore(SESSIONS).createIndex(BY_SEQ, "seq");
        const items = upgrade.objectStore(ITEMS);
        items.createIndex(BY_SEQ, "session.seq");
        items.createIndex(BY_SESSION_SEQ, ["sessionId", "session.seq"]);
      }
      const start = (total: number) => upgrade.objectStore(COUNTERS).put({ seq: 0, total } satisfies StoreTotal, STORE_TOTAL);
      if (event.oldVersion < 2) {
        // The running total starts as the sum of the sessions' totals, walked once, in the upgrade's transaction.
        db.createObjectStore(COUNTERS);
        let total = 0;
        const walk = upgrade.objectStore(SESSIONS).openCursor();
        walk.onsuccess = () => {
          const cursor = walk.result;
          if (cursor === null) {
            start(total);
            return;
          }
          total += (cursor.value as SessionRecord).totalSize;
          cursor.continue();
        };
      } else if (event.oldVersion < 4) {
        // The total kept as a number becomes the first numbered one.
        const kept = upgrade.objectStore(COUNTERS).get(STORE_TOTAL);
        kept.onsuccess = () => start((kept.result as number | undefined) ?? 0);
      }
    };
    opening.onsuccess = () => {
      const db = opening.result;
      // Another context that upgrades the schema waits for this connection: let it go.
      db.onversionchange = () => db.close();
      resolve(db);
    };
    opening.onerror = () => reject(opening.error ?? new Error("the database could not be opened"));
    opening.onblocked = () => {
      // An older connection elsewhere holds the database: opening goes on once it closes.
    };
  });
}

/**
 * How a read-write transaction commits (IndexedDB's `durability`). "relaxed", the default, is the platform's own
 * (Chrome's since 121, Firefox's, Safari's): the transaction is complete once the browser's storage process has the
 * write, before the OS has flushed it to disk, so a browser that is killed keeps every acknowledged write, while an
 * OS crash or power loss may lose the last seconds, as it may the conversation the browser keeps beside it. "strict"
 * waits for the flush, an fsync per commit, so an acknowledged write also survives those.
 */
export type Durability = "relaxed" | "strict";

/** The durability the backend commits with unless its owner asks for another. */
export const DEFAULT_DURABILITY: Durability = "relaxed";

/**
 * Runs `body` in one transaction over `stores` and resolves with its result: a read-write transaction's once it has
 * committed with `durability` (see Durability), a read-only one's as soon as `body` has it. If `body`
 * throws, the transaction is aborted, so a refused request changes nothing, and the error is thrown on.
 *
 * `body` may await only this transaction's requests (`request`, `each`): a transaction whose requests are all
 * done commits as soon as control returns to the event loop.
 */
export function transact<T>(db: IDBDatabase, stores: string[], mode: "readonly", body: (tx: IDBTransaction) => Promise<T>): Promise<T>;
export function transact<T>(
  db: IDBDatabase,
  stores: string[],
  mode: "readwrite",
  body: (tx: IDBTransaction) => Promise<T>,
  durability: Durability,
): Promise<T>;
export async function transact<T>(
  db: IDBDatabase,
  stores: string[],
  mode: IDBTransactionMode,
  body: (tx: IDBTransaction) => Promise<T>,
  durability?: Durability,
): Promise<T> {
  const tx = mode === "readwrite" ? db.transaction(stores, mode, { durability }) : db.transaction(stores, mode);
  const finished = new Promise<void>((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onabort = () => reject(tx.error ?? new DOMException("the transaction was aborted", "AbortError"));
  });
  let result: T;
  try {
    result = await body(tx);
  } catch (error) {
    finished.catch(() => undefined);
    try {
      tx.abort();
    } catch {
      // It had finished already.
    }
    throw error;
  }
  // A read-only transaction has nothing to commit: its answer is ready once its requests are, a task or two before
  // the browser reports it complete. A read-write one is asked to commit now, its last requests sent, rather than
  // once the browser has seen their answers handled (a round trip less); it may have ended already.
  if (mode === "readonly") {
    finished.catch(() => undefined);
    return result;
  }
  try {
    tx.commit();
  } catch {
    // Inactive or finished: it commits (or has failed) on its own, as `finished` reports.
  }
  await finished;
  return result;
}

/** The result of one request. */
export function request<T>(req: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error ?? new Error("an IndexedDB request failed"));
  });
}

/**
 * Walks a cursor: `visit` is called at each record and may await requests of the same transaction; it returns
 * false to stop. One record at a time, so a walk over a session of millions of items holds one.
 */
export function each<C extends IDBCursor>(
  req: IDBRequest<C | null>,
  visit: (cursor: C) => boolean | void | Promise<boolean | void>,
): Promise<void> {
  return new Promise((resolve, reject) => {
    req.onerror = () => reject(req.error ?? new Error("an IndexedDB cursor failed"));
    req.onsuccess = () => {
      const cursor = req.result;
      if (!cursor) {
        resolve();
        return;
      }
      let went: boolean | void | Promise<boolean | void>;
      try {
        went = visit(cursor);
      } catch (error) {
        reject(error);
        return;
      }
      const next = (go: boolean | void) => (go === false ? resolve() : cursor.continue());
      if (went instanceof Promise) went.then(next, reject);
      else next(went);
    };
  });
}

/**
 * The range of `bySessionTime` that holds a session's items, up to `before` (a timestamp and key) when given:
 * excluded, or included when `through`. Arrays sort after numbers and strings in IndexedDB, so `[sessionId, []]`
 * is past every `[sessionId, timestamp, key]`.
 */
export function sessionItems(sessionId: string, before?: readonly [number, string], through = false): IDBKeyRange {
  const upper = before === undefined ? [sessionId, []] : [sessionId, before[0], before[1]];
  return IDBKeyRange.bound([sessionId], upper, false, before !== undefined && !through);
}

/*
 * The writes below are sent without waiting for their answers: a transaction runs its requests in the order they
 * were made, and one that fails aborts the transaction, which `transact` then reports. So an op reads what it needs
 * (every read at once), decides, sends its writes and waits only for the commit: a round trip or two to the
 * browser's IndexedDB instead of one per request.
 */

/** The newest record an index of seq numbers holds in `range` (all of it when null). */
async function newestBySeq<T>(index: IDBIndex, range: IDBKeyRange | null): Promise<T | undefined> {
  return (await request(index.openCursor(range, "prev")))?.value as T | undefined;
}

/**
 * The store's running total, the bytes every session holds, and the number of its last change: whichever of
 * `counters`, the session records and the records items carry holds the greatest `seq`; 0 in a database that holds
 * nothing yet. All three read at once.
 */
export async function readStoreTotal(tx: IDBTransaction): Promise<StoreTotal> {
  const [kept, stored, item] = await Promise.all([
    request(tx.objectStore(COUNTERS).get(STORE_TOTAL)) as Promise<StoreTotal | undefined>,
    newestBySeq<SessionRecord>(tx.objectStore(SESSIONS).index(BY_SEQ), null),
    newestBySeq<ItemRecord>(tx.objectStore(ITEMS).index(BY_SEQ), null),
  ]);
  let newest = kept ?? { seq: 0, total: 0 };
  for (const record of [stored, item?.session]) {
    if (record?.seq !== undefined && record.storeTotal !== undefined && record.seq > newest.seq) newest = { seq: record.seq, total: record.storeTotal };
  }
  return newest;
}

/** A session's record now, and when its record in `sessions` was last accessed (Totals decides by it where to write). */
export interface SessionNow {
  record: SessionRecord;
  storedAccess: number;
}

/**
 * A session's record now (see the schema): the one of the greater `seq` in `sessions` and on the session's newest
 * item, with the later `lastAccessedAt`; undefined for a session that holds nothing. Both read at once.
 */
export async function readSession(tx: IDBTransaction, sessionId: string): Promise<SessionNow | undefined> {
  const [stored, carried] = await Promise.all([request(tx.objectStore(SESSIONS).get(sessionId)) as Promise<SessionRecord | undefined>, carriedRecord(tx, sessionId)]);
  // A session's record is in `sessions` while it holds items (its first write puts it there).
  return stored === undefined ? undefined : { record: newer(stored, carried), storedAccess: stored.lastAccessedAt };
}

/** The session's record as its newest item carries it, if one does. */
export async function carriedRecord(tx: IDBTransaction, sessionId: string): Promise<SessionRecord | undefined> {
  const range = IDBKeyRange.bound([sessionId], [sessionId, []]);
  return (await newestBySeq<ItemRecord>(tx.objectStore(ITEMS).index(BY_SESSION_SEQ), range))?.session;
}

/** A session's record now, from its record in `sessions` and the one its newest item carries (see the schema). */
export function newer(stored: SessionRecord, carried: SessionRecord | undefined): SessionRecord {
  if (carried === undefined || (carried.seq ?? -1) <= (stored.seq ?? -1)) return stored;
  return { ...carried, lastAccessedAt: Math.max(carried.lastAccessedAt, stored.lastAccessedAt) };
}

/** A session's record, if it has one, and the store's running total. */
export type SessionTotals = [session: SessionRecord | undefined, store: number];

/**
 * The most session records a context keeps in KnownTotals; past it, it forgets them all and reads each again once.
 * Bounds the memory of a client that writes to sessions without end; an agent uses a few.
 */
const MAX_KNOWN_SESSIONS = 1024;

/**
 * The session records and the store's running total as this context's last committed changes left them: kept only
 * while the context holds the writer lease (writer.ts), when no other context changes them, so that a change reads
 * them from here rather than from the database, a round trip less per write. A session known to hold nothing is
 * `undefined`. A record's `lastAccessedAt` may be older than the database's, since a read refreshes it (`touch`,
 * cmd/mod.ts) without the lease: every change sets it to now anyway, and the orphan sweep reads it from the
 * database.
 */
export class KnownTotals {
  readonly sessions = new Map<string, SessionNow | undefined>();
  store: StoreTotal | undefined;
}

/**
 * The session records and the store's running total as the changes of one transaction see them: each read from
 * `known` or else from the database once, then kept here as the changes move them, so that a batch of changes
 * (host.ts) reads a session's record and the store's total once rather than once a change. A change reads them
 * with `of` (a copy of the record, which it may edit) and hands back what it writes with `putSession`, which moves
 * the store's total with it; a refused change hands back nothing, and so moves nothing. Once the transaction has
 * committed, `keep` tells `known` what it left.
 */
export class Totals {
  readonly #tx: IDBTransaction;
  readonly #known: KnownTotals | undefined;
  /** The reads of sessions under way or done, one per session. */
  readonly #reads = new Map<string, Promise<void>>();
  /** Each session as this transaction has read or left it: what `keep` hands on. */
  readonly #sessions = new Map<string, SessionNow | undefined>();
  #storeRead: Promise<void> | undefined;
  /** The store's total as this transaction has read or left it. */
  #store: StoreTotal | undefined;

  constructor(tx: IDBTransaction, known?: KnownTotals) {
    this.#tx = tx;
    this.#known = known;
  }

  /**
   * The session's record, if it has one (a copy, which the change may edit and then save with `putSession`), and
   * the store's running total, read together with whatever else the change reads.
   */
  async of(sessionId: string): Promise<SessionTotals> {
    await Promise.all([this.#readSession(sessionId), this.#readStore()]);
    const now = this.#sessions.get(sessionId);
    return [now === undefined ? undefined : { ...now.record }, (this.#store as StoreTotal).total];
  }

  #readSession(sessionId: string): Promise<void> {
    let read = this.#reads.get(sessionId);
    if (read === undefined) {
      const known = this.#known?.sessions;
      const found = known?.has(sessionId) === true ? Promise.resolve(known.get(sessionId)) : readSession(this.#tx, sessionId);
      read = found.then((now) => void this.#sessions.set(sessionId, now));
      this.#reads.set(sessionId, read);
    }
    return read;
  }

  #readStore(): Promise<void> {
    const known = this.#known?.store;
    return (this.#storeRead ??= (known === undefined ? readStoreTotal(this.#tx) : Promise.resolve({ ...known })).then((store) => {
      this.#store = store;
    }));
  }

  /**
   * Saves a session's record as the change leaves it, as the host's `put_session`, numbered, with the store's total
   * moved by what the session's moved (see the schema): on `item`, when the change puts one (it must put it after
   * this) and the session's record in `sessions` was accessed less than a minute before; else in `sessions`; or,
   * when the session holds no item any more, its record removed and the store's total put in `counters`. Only after
   * `of` has read the session.
   */
  putSession(record: SessionRecord, item?: ItemRecord): void {
    const store = this.#store;
    if (store === undefined || !this.#sessions.has(record.sessionId)) throw new Error("putSession before the totals were read");
    const before = this.#sessions.get(record.sessionId);
    const kept = record.itemCount === 0 ? undefined : { ...record };
    const delta = (kept?.totalSize ?? 0) - (before?.record.totalSize ?? 0);
    const moved: StoreTotal = { seq: store.seq + 1, total: Math.max(store.total + delta, 0) };
    this.#store = moved;
    if (item !== undefined) delete item.session;
    const sessions = this.#tx.objectStore(SESSIONS);
    if (kept === undefined) {
      sessions.delete(record.sessionId);
      this.#tx.objectStore(COUNTERS).put(moved, STORE_TOTAL);
      this.#sessions.set(record.sessionId, undefined);
      return;
    }
    [kept.seq, kept.storeTotal] = [moved.seq, moved.total];
    const carried = item !== undefined && before !== undefined && kept.lastAccessedAt - before.storedAccess < TOUCH_GRANULARITY_MS;
    if (carried) item.session = kept;
    else sessions.put(kept);
    this.#sessions.set(record.sessionId, { record: kept, storedAccess: carried ? before.storedAccess : kept.lastAccessedAt });
  }

  /** After the transaction has committed: `known` learns what it left (and nothing, if it failed). */
  keep(): void {
    const known = this.#known;
    if (known === undefined) return;
    if (known.sessions.size + this.#sessions.size > MAX_KNOWN_SESSIONS) known.sessions.clear();
    for (const [sessionId, now] of this.#sessions) known.sessions.set(sessionId, now);
    if (this.#store !== undefined) known.store = this.#store;
  }
}

/**
 * The keys (in `items` and `data`) of a session's items, or of one task's: every key that starts with
 * `{sessionId}_` (or `{sessionId}_{taskId}_`). A sessionId has no `_` after its `conv_`, so no other session's key
 * starts so; keys are ASCII, so `\uffff` is past all of them.
 */
export function keysOf(sessionId: string, taskId?: string): IDBKeyRange {
  const prefix = taskId === undefined ? `${sessionId}_` : `${sessionId}_${taskId}_`;
  return IDBKeyRange.bound(prefix, `${prefix}\uffff`);
}
