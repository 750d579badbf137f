/**
 * `IdbHost`: protocol v1 served from IndexedDB, in the extension itself, for users without the native host. It
 * takes a request's JSON text and answers with the reply's JSON text exactly as llm-cache-host does (PROTOCOL.md
 * is the contract, the host's replies byte for byte the aim), so everything above it runs unchanged whichever
 * serves: the only differences are `backend: "indexeddb"` in `hello` and the wording of StorageUnavailableError.
 *
 * # Layout
 * - host.ts (this file): the request's way through: size, parse, id, op; one request at a time, in order.
 * - request.ts: the request's fields read as the host reads them (serde_json's rules, its error texts).
 * - wire.ts: error replies and the text of replies.
 * - db.ts: the database's schema, records and transactions.
 * - ops/: one file per group of ops: hello, write (write, update, append), read (read, several items),
 *   list (list, search), session (delete, endSession, stats, orphans), sessions (the extension's sessions);
 *   ops/common.ts has what they share.
 * - json/: the TypeScript twin of the host's walks over JSON text.
 */

import { MAX_REQUEST_BYTES, OVERSIZED_HEAD_BYTES, STORE_QUOTA_BYTES } from "../../protocol.js";
import { DATABASE_NAME, openDatabase } from "./db.js";
import { utf8Length } from "./json/index.js";
import { idError, idInHead, parseFields, recoverId, requiredString, stringifiedFields, usableId, type Fields } from "./request.js";
import type { Context } from "./ops/common.js";
import { helloJson, OPS, parseHello } from "./ops/hello.js";
import { list, parseList, parseSearch, search } from "./ops/list.js";
import { parseRead, parseReadMany, read, readMany } from "./ops/read.js";
import { deleteItem, endSession, parseDelete, parseSessionOp, removeOrphans, stats } from "./ops/session.js";
import { parseSessions, sessions } from "./ops/sessions.js";
import { append, parseAppend, parseUpdate, parseWrite, update, write } from "./ops/write.js";
import { HostError, replyText } from "./wire.js";

export interface IdbHostOptions {
  /** The IndexedDB to use; the global `indexedDB` when left out. */
  indexedDB?: IDBFactory;
  /** The database's name; `llm-cache` when left out. */
  databaseName?: string;
  /** Now, in ms since the Unix epoch; `Date.now` when left out. */
  now?: () => number;
  /** Fills a buffer with random bytes, for generated ids; `crypto.getRandomValues` when left out. */
  random?: (bytes: Uint8Array) => void;
  /**
   * The store-wide quota, in bytes: what every session may hold together (PROTOCOL.md section 5.7). When left out it
   * is `storeQuotaFrom(await navigator.storage.estimate())`, found when the host is made and again at each
   * `maintain()`, and the host's default where the context has no `navigator.storage` (Node).
   */
  storeQuotaBytes?: number;
}

/** What `navigator.storage.estimate()` resolves with (the Storage Standard's StorageEstimate); both may be missing. */
export interface StorageEstimate {
  quota?: number;
  usage?: number;
}

/**
 * The store-wide quota within what the browser grants the extension: the host's default (STORE_QUOTA_BYTES), or half
 * the origin's quota when that is less. Half, because IndexedDB stores more than the bytes the quota counts (the
 * item's record and indexes beside its data, strings maybe as UTF-16), and the extension keeps more than this cache
 * in its origin; the bound then holds before the browser's own QuotaExceededError does. No quota: the default.
 */
export function storeQuotaFrom(estimate: StorageEstimate | undefined): number {
  const quota = estimate?.quota;
  if (typeof quota !== "number" || !Number.isFinite(quota) || quota < 0) return STORE_QUOTA_BYTES;
  return Math.min(STORE_QUOTA_BYTES, Math.floor(quota / 2));
}

/** The store-wide quota this context's browser allows (see `storeQuotaFrom`); never rejects. */
async function estimatedStoreQuota(): Promise<number> {
  const storage = (globalThis as { navigator?: { storage?: { estimate?: () => Promise<StorageEstimate> } } }).navigator?.storage;
  if (typeof storage?.estimate !== "function") return STORE_QUOTA_BYTES;
  try {
    return storeQuotaFrom(await storage.estimate());
  } catch {
    // A browser that can't say (a storage error, an opaque context) gets the default, as Node does.
    return STORE_QUOTA_BYTES;
  }
}

/** How a request's text came to be: see `IdbHost.handleText`. */
export interface HandleOptions {
  stringified?: boolean;
}

/** The database once opened, or why it can't be. */
type Opened = { db: IDBDatabase } | { error: HostError };

export class IdbHost {
  readonly #factory: IDBFactory | undefined;
  readonly #name: string;
  readonly #context: Context;
  /** The database being opened or open; opened again on the first request after `close()`. */
  #opened: Promise<Opened> | undefined;
  /** The request being answered: the next one waits for it, so requests run one at a time, in order, as in the host. */
  #queue: Promise<unknown> = Promise.resolve();
  /** The store quota given as an option, which estimates never replace. */
  readonly #fixedStoreQuota: number | undefined;
  /** The store-wide quota in force, or its estimate under way. */
  #storeQuota: Promise<number>;

  /** Starts opening the database at once; `hello` doesn't wait for it, every other op does. */
  constructor(options: IdbHostOptions = {}) {
    this.#factory = options.indexedDB ?? (globalThis as { indexedDB?: IDBFactory }).indexedDB;
    this.#name = options.databaseName ?? DATABASE_NAME;
    const now = options.now ?? Date.now;
    const random = options.random ?? ((bytes: Uint8Array) => void crypto.getRandomValues(bytes as Uint8Array<ArrayBuffer>));
    const fixed = options.storeQuotaBytes;
    if (fixed !== undefined && !(Number.isSafeInteger(fixed) && fixed >= 0)) {
      throw new RangeError(`storeQuotaBytes must be a whole number of bytes, not ${String(fixed)}`);
    }
    this.#fixedStoreQuota = fixed;
    this.#storeQuota = fixed === undefined ? estimatedStoreQuota() : Promise.resolve(fixed);
    this.#context = { db: () => this.#db(), now, random, storeQuota: () => this.#storeQuota };
    this.#opened = this.#open();
  }

  /**
   * Answers one request's JSON text with its reply's JSON text. Requests may overlap; they are answered in order.
   * `options.stringified` promises that JSON.stringify wrote the text from an object in this context, as the
   * in-process client does: its fields are then read without checking again what JSON.stringify guarantees
   * (`stringifiedFields`). The reply is the same either way.
   */
  handleText(requestText: string, options: HandleOptions = {}): Promise<string> {
    const reply = this.#queue.then(() => this.#answer(requestText, options.stringified === true));
    this.#queue = reply.catch(() => undefined);
    return reply;
  }

  /** Answers a request object, as its JSON text. */
  handle(request: object): Promise<string> {
    return this.handleText(JSON.stringify(request));
  }

  /**
   * Removes the sessions nobody touched for 24 hours (PROTOCOL.md section 5.11) and returns how many, and finds the
   * store quota again from what the browser grants (unless it was given as an option). Its owner
   * runs it when the extension starts and every hour (ORPHAN_SWEEP_EVERY_MS) while it runs. It takes its turn
   * with the requests, as the host's sweep does, so a request sent after it sees the sweep done.
   *
   * @throws HostError StorageUnavailableError when the database can't be opened or fails.
   */
  maintain(): Promise<number> {
    // What the browser grants changes with the disk's free space: the quota follows it, unless it was given.
    if (this.#fixedStoreQuota === undefined) this.#storeQuota = estimatedStoreQuota();
    const swept = this.#queue.then(async () => {
      try {
        return await removeOrphans(this.#context);
      } catch (error) {
        throw asHostError(error);
      }
    });
    this.#queue = swept.catch(() => undefined);
    return swept;
  }

  /** Lets go of the database connection; a request after this opens it again. */
  close(): void {
    const opened = this.#opened;
    this.#opened = undefined;
    void opened?.then((opened) => {
      if ("db" in opened) opened.db.close();
    });
  }

  #open(): Promise<Opened> {
    const factory = this.#factory;
    if (factory === undefined) return Promise.resolve({ error: HostError.storageUnavailable("this browser context has no IndexedDB") });
    const opened: Promise<Opened> = openDatabase(factory, this.#name).then(
      (db) => {
        // A connection the browser closes (another context upgrading the schema, the user clearing site data)
        // is forgotten, so that the next request opens a new one.
        const forget = () => {
          if (this.#opened === opened) this.#opened = undefined;
        };
        db.addEventListener("versionchange", forget);
        db.addEventListener("close", forget);
        return { db };
      },
      (error: unknown) => ({ error: HostError.storageUnavailable(`IndexedDB database ${this.#name} can't be opened (${describe(error)})`) }),
    );
    return opened;
  }

  async #db(): Promise<IDBDatabase> {
    this.#opened ??= this.#open();
    const opened = await this.#opened;
    if ("error" in opened) throw opened.error;
    return opened.db;
  }

  /** The reply to one request, as the host's request loop makes it. */
  async #answer(text: string, stringified: boolean): Promise<string> {
    const bytes = utf8Length(text);
    if (bytes > MAX_REQUEST_BYTES) return replyText(idInHead(head(text)), { error: oversized(bytes) });
    let fields: Fields;
    try {
      fields = (stringified ? stringifiedFields(text) : undefined) ?? parseFields(text);
    } catch (error) {
      if (error instanceof HostError) return replyText(recoverId(text), { error });
      return replyText(undefined, { error: HostError.storageUnavailable(`the request could not be read (${describe(error)})`) });
    }
    const id = usableId(fields);
    if (id === undefined) return replyText(undefined, { error: idError(fields) });
    try {
      return replyText(id, { result: await this.#run(fields) });
    } catch (error) {
      return replyText(id, { error: asHostError(error) });
    }
  }

  /** Parses the op and its fields (every check before the database is touched), then runs it. */
  #run(fields: Fields): Promise<string> {
    const ctx = this.#context;
    const op = requiredString(fields.op, "op");
    switch (op) {
      case "hello": {
        const hello = parseHello(fields);
        return ctx.storeQuota().then((storeQuota) => helloJson(hello, storeQuota));
      }
      case "write":
        return write(ctx, parseWrite(fields));
      case "read":
        return fields.storageKeys !== undefined ? readMany(ctx, parseReadMany(fields)) : read(ctx, parseRead(fields));
      case "list":
        return list(ctx, parseList(fields));
      case "update":
        return update(ctx, parseUpdate(fields));
      case "delete":
        return deleteItem(ctx, parseDelete(fields));
      case "endSession":
        return endSession(ctx, parseSessionOp(fields));
      case "stats":
        return stats(ctx, parseSessionOp(fields));
      case "append":
        return append(ctx, parseAppend(fields));
      case "search":
        return search(ctx, parseSearch(fields));
      case "sessions":
        return sessions(ctx, parseSessions(fields));
      default: {
        const shown = Array.from(op).slice(0, 40).join("");
        throw new HostError("InvalidRequestError", `unknown op \`${shown}\``, `use one of: ${OPS.join(", ")}`)
          .expected(OPS.join(" | "))
          .actual(shown);
      }
    }
  }
}

/** The error a reply carries for whatever an op threw: its own verdict, or IndexedDB's failure (or a bug). */
function asHostError(error: unknown): HostError {
  if (error instanceof HostError) return error;
  return HostError.storageUnavailable(`IndexedDB failed (${describe(error)})`);
}

/** An error's name and message, for a reason; never data (IndexedDB's errors don't carry it). */
function describe(error: unknown): string {
  if (error instanceof Error || error instanceof DOMException) return `${error.name}: ${error.message}`;
  return String(error);
}

/** The error for a request longer than the host reads (PROTOCOL.md section 2.1). */
function oversized(bytes: number): HostError {
  return new HostError(
    "InvalidRequestError",
    `a frame of ${bytes} bytes is over the limit of ${MAX_REQUEST_BYTES} for one request (room for an item's 5 MiB of data and 64 KiB of customMetadata); it was skipped`,
    "split the data into items of at most 5 MB each and send them as separate requests",
  )
    .expected(`a frame of at most ${MAX_REQUEST_BYTES} bytes`)
    .actual(bytes);
}

/** The longest start of `text` whose UTF-8 is at most OVERSIZED_HEAD_BYTES, without a cut character. */
function head(text: string): string {
  let bytes = 0;
  let at = 0;
  while (at < text.length) {
    const unit = text.charCodeAt(at);
    const width = unit >= 0xd800 && unit <= 0xdbff && at + 1 < text.length ? 2 : 1;
    bytes += utf8Length(text, at, at + width);
    if (bytes > OVERSIZED_HEAD_BYTES) break;
    at += width;
  }
  return text.slice(0, at);
}
