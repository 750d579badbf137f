/**
 * `IdbHost`: protocol v1 served from IndexedDB, in the extension itself, for users without the native host. It
 * takes a request's JSON text and answers with the reply's JSON text exactly as llm-cache-host does (PROTOCOL.md
 * is the contract, the host's replies byte for byte the aim), so everything above it runs unchanged whichever
 * serves: the only differences are `backend: "indexeddb"` in `hello` and the wording of StorageUnavailableError.
 *
 * # Layout
 * Each file has the name of the host's file it mirrors, so a reader finds one from the other without opening
 * either. Where a file has no twin, the table says why.
 *
 * | file               | the host's twin          | what it holds                                                     |
 * | ------------------ | ------------------------ | ----------------------------------------------------------------- |
 * | host.ts            | src/host.rs              | the request's way through: size, parse, id, op, reply; one at a   |
 * |                    |                          | time, in order, but changes queued together share one             |
 * |                    |                          | commit (`#drain`); and which op runs (cmd/mod.rs's `Command`)     |
 * | message.ts         | src/message.rs           | the request's fields as the host reads them; the reply's text     |
 * | error.ts           | src/error.rs             | HostError, the one error that becomes an error reply              |
 * | store.ts           | src/store.rs             | the database's schema, records and transactions                   |
 * | cleanup.ts         | src/cleanup.rs           | a session's removal (`endSession`); the sweep of idle sessions    |
 * | cmd/mod.ts         | src/cmd/mod.rs           | what the ops share: their names, context, field readers, quotas   |
 * | cmd/hello.ts       | src/cmd/hello.rs         | `hello`, with `backend: "indexeddb"`                              |
 * | cmd/write.ts       | src/cmd/write.rs         | `write`                                                           |
 * | cmd/read.ts        | src/cmd/read.rs          | `read`, of one item or of several (`storageKeys`)                 |
 * | cmd/list.ts        | src/cmd/list.rs          | `list`                                                            |
 * | cmd/update.ts      | src/cmd/update.rs        | `update`                                                          |
 * | cmd/delete.ts      | src/cmd/delete.rs        | `delete`                                                          |
 * | cmd/end_session.ts | src/cmd/end_session.rs   | `endSession`                                                      |
 * | cmd/stats.ts       | src/cmd/stats.rs         | `stats`                                                           |
 * | cmd/append.ts      | src/cmd/append.rs        | `append`                                                          |
 * | cmd/search.ts      | src/cmd/search.rs        | `search`                                                          |
 * | cmd/sessions.ts    | src/cmd/sessions.rs      | `sessions`                                                        |
 * | cmd/endorse.ts     | src/cmd/endorse.rs       | `endorse`                                                         |
 * | provenance.ts      | src/provenance.rs        | where an item came from: read, checked, merged, written           |
 * | json/index.ts      | src/json/mod.rs          | the walks over JSON text, and the list of them                    |
 * | json/scan.ts       | src/json/scan.rs         | where a value ends; elements, members, characters                 |
 * | json/pointer.ts    | src/json/pointer.rs      | RFC 6901 pointers                                                 |
 * | json/slice.ts      | src/json/slice.rs        | `offset..offset + limit` of a value                               |
 * | json/shape.ts      | src/json/shape.rs        | a value's shape, e.g. `array[50] of {from,subject}`               |
 * | json/strings.ts    | src/json/strings.rs      | every string value with its pointer                               |
 * | json/search.ts     | src/json/search.rs       | the string values that hold every word of a query                 |
 * | json/rules.ts      | src/rules.rs             | the rules for keys, ids and descriptions; pure, so kept in json/  |
 * | json/compact.ts    | src/rules.rs             | `compact_json`, the form data is stored in                        |
 * | json/serde.ts      | none: a crate's code     | serde_json's reading of requests, its error texts included; the   |
 * |                    |                          | host gets it from serde_json, the twin must spell it out          |
 * | backend.ts         | none: the host's process | IndexedDbBackend, an IdbHost behind the in-process seam, with its |
 * |                    |                          | hourly sweep; the host is a process of its own (main.rs) instead  |
 * | writer.ts          | none: one process owns   | the writer lease: one context at a time changes the totals, and   |
 * |                    | the host's store         | keeps them in memory meanwhile instead of reading them per write  |
 *
 * The host's files with no twin here: frame.rs and pipe.rs (a request comes as a string, not a frame on a pipe),
 * store_file.rs and store_pages.rs (LMDB's data file and memory map), clock.rs (time and randomness come in as
 * IdbHost's options `now` and `random`), config.rs (the store quota is an option, or found from what the browser
 * grants), limits.rs (its twin is outside this folder, in ../../protocol.ts, because clients need the limits too),
 * and the files of the binary's command line and install (main.rs, launch.rs, call.rs, inspect.rs, verify.rs,
 * install/ and the rest).
 */

import { MAX_REQUEST_BYTES, OVERSIZED_HEAD_BYTES, STORE_QUOTA_BYTES } from "../../protocol.js";
import { DATABASE_NAME, DEFAULT_DURABILITY, openDatabase, type Durability } from "./store.js";
import { utf8Length } from "./json/index.js";
import { changeTotals, OPS, parseSessionOp, type Change, type Context } from "./cmd/mod.js";
import { WriterLease } from "./writer.js";
import { helloJson, parseHello } from "./cmd/hello.js";
import { list, parseList } from "./cmd/list.js";
import { parseRead, parseReadMany, read, readMany } from "./cmd/read.js";
import { parseSearch, search } from "./cmd/search.js";
import { deleteItem, parseDelete } from "./cmd/delete.js";
import { endSession } from "./cmd/end_session.js";
import { stats } from "./cmd/stats.js";
import { parseSessions, sessions } from "./cmd/sessions.js";
import { parseWrite, write } from "./cmd/write.js";
import { parseUpdate, update } from "./cmd/update.js";
import { append, parseAppend } from "./cmd/append.js";
import { endorse, parseEndorse } from "./cmd/endorse.js";
import { removeOrphans } from "./cleanup.js";
import { HostError } from "./error.js";
import {
  idError,
  idInHead,
  parseFields,
  recoverId,
  replyObject,
  replyText,
  requiredString,
  stringifiedFields,
  usableId,
  type Fields,
  type Outcome,
  type ResultText,
} from "./message.js";

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
  /**
   * How every change commits: "relaxed" (the default, the platform's own) survives the browser being killed, and
   * may lose the last seconds to an OS crash or power loss; "strict" waits for the disk, an fsync per commit, and
   * survives those too. See store.ts `Durability`.
   */
  durability?: Durability;
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
  /** The text's UTF-8 length, counted by whoever stringified it (with `stringified` only). */
  bytes?: number | undefined;
}

/**
 * The most changes one transaction takes (see `IdbHost.#drain`), and the most request text (UTF-16 units) they may
 * come in: enough for a burst of small writes, while a few large ones commit apart, so that one transaction never
 * holds more than a few items' worth of data.
 */
const MAX_BATCH_CHANGES = 64;
const MAX_BATCH_UNITS = 8 * 1024 * 1024;

/** A request waiting its turn, and once read (perhaps while looking for changes to batch), what it asks. */
interface RequestJob {
  text: string;
  stringified: boolean;
  /** The text's UTF-8 length, where its stringifier counted it. */
  bytes: number | undefined;
  /** Answers the request (`handleText` writes the reply's text, `handleParsed` its object). */
  resolve: (answer: Answer) => void;
  prepared?: Prepared;
}

/** A reply, before it is written as text or an object: the request's id (as its JSON text) and its outcome. */
type Answer = { id: string | undefined; outcome: Outcome };

/** A request of a batch: a change, or one refused before it ran. */
type Batched = { job: RequestJob; prepared: { answer: Answer } | { id: string; change: Change } };

/** A job: a request, or a sweep of orphans (which settles its own promise). */
type Job = RequestJob | (() => Promise<void>);

/** A request read and checked: its reply already (a refusal), or its id and what runs it, alone or as a change. */
type Prepared = { answer: Answer } | { id: string; run: () => Promise<ResultText> } | { id: string; change: Change };

/** The database once opened, or why it can't be. */
type Opened = { db: IDBDatabase } | { error: HostError };

export class IdbHost {
  readonly #factory: IDBFactory | undefined;
  readonly #name: string;
  readonly #context: Context;
  /** The database being opened or open; opened again on the first request after `close()`. */
  #opened: Promise<Opened> | undefined;
  /** What waits its turn: requests run one at a time, in order, as in the host, and the sweeps among them. */
  readonly #jobs: Job[] = [];
  /** Whether `#drain` is running the jobs; it runs until none is left. */
  #draining = false;
  /** The store quota given as an option, which estimates never replace. */
  readonly #fixedStoreQuota: number | undefined;
  /** The store-wide quota in force, or its estimate under way. */
  #storeQuota: Promise<number>;
  /** The right to change the totals, and what this context knows of them while it holds it. */
  readonly #writer: WriterLease;

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
    const durability = options.durability ?? DEFAULT_DURABILITY;
    if (durability !== "relaxed" && durability !== "strict") {
      throw new RangeError(`durability must be "relaxed" or "strict", not ${JSON.stringify(durability)}`);
    }
    const writer = (this.#writer = new WriterLease(this.#name));
    this.#context = { db: () => this.#db(), now, random, storeQuota: () => this.#storeQuota, durability, writing: (db, run) => writer.using(db, run) };
    this.#opened = this.#open();
  }

  /**
   * Answers one request's JSON text with its reply's JSON text. Requests may overlap; they are answered in order.
   * `options.stringified` promises that JSON.stringify wrote the text from an object in this context, as the
   * in-process client does: its fields are then read without checking again what JSON.stringify guarantees
   * (`stringifiedFields`), and its UTF-8 length is `options.bytes` where that is given. The reply is the same
   * either way.
   */
  handleText(requestText: string, options: HandleOptions = {}): Promise<string> {
    const stringified = options.stringified === true;
    return this.#enqueue(requestText, stringified, stringified ? options.bytes : undefined, ({ id, outcome }) => replyText(id, outcome));
  }

  /**
   * Answers a request that JSON.stringify wrote in this context (as `handleText` with `stringified`) with the reply
   * as an object: what JSON.parse makes of the reply's text, made without writing and parsing again what the reply
   * holds whole, such as a read's data (`replyObject`). For the in-process client, which would parse it. `bytes`
   * as `options.bytes` of `handleText`.
   */
  handleParsed(requestText: string, bytes?: number): Promise<unknown> {
    return this.#enqueue(requestText, true, bytes, ({ id, outcome }) => {
      try {
        return replyObject(id, outcome);
      } catch {
        // Data that isn't JSON (a store edited by hand): no reply object, as JSON.parse of the reply's text gives none.
        return undefined;
      }
    });
  }

  /** Queues a request; its reply is what `write` makes of its answer. */
  #enqueue<T>(text: string, stringified: boolean, bytes: number | undefined, write: (answer: Answer) => T): Promise<T> {
    return new Promise((resolve) => {
      this.#jobs.push({ text, stringified, bytes, resolve: (answer) => resolve(write(answer)) });
      void this.#drain();
    });
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
    return new Promise((resolve, reject) => {
      this.#jobs.push(async () => {
        try {
          resolve(await removeOrphans(this.#context));
        } catch (error) {
          reject(asHostError(error));
        }
      });
      void this.#drain();
    });
  }

  /** Lets go of the database connection; a request after this opens it again. */
  close(): void {
    this.#writer.release();
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

  /**
   * Runs the jobs in order until none is left. A change (write, update, append, delete) shares its transaction with
   * the changes queued right behind it, up to MAX_BATCH_CHANGES of them and MAX_BATCH_UNITS of request text: one
   * commit for all, where each would otherwise wait for its own (a commit, and at strict durability its fsync, is
   * most of a small write's time). Each runs as it would alone, in order, seeing the ones before it; a refused one
   * changes nothing (see `Change`), so the others go on; and every reply waits for the commit. If the commit fails,
   * nothing was acknowledged, and each change runs again alone (`#commit`).
   */
  async #drain(): Promise<void> {
    if (this.#draining) return;
    this.#draining = true;
    try {
      for (let job = this.#jobs.shift(); job !== undefined; job = this.#jobs.shift()) {
        if (typeof job === "function") {
          await job();
          continue;
        }
        const prepared = (job.prepared ??= this.#prepare(job));
        if ("answer" in prepared) {
          job.resolve(prepared.answer);
        } else if ("run" in prepared) {
          job.resolve({ id: prepared.id, outcome: await outcomeOf(prepared.run) });
        } else {
          // Requests refused before they ran go along, answered in their turn.
          const batch: Batched[] = [{ job, prepared }];
          let [changes, units] = [1, job.text.length];
          for (let next = this.#jobs[0]; next !== undefined && typeof next !== "function"; next = this.#jobs[0]) {
            if (changes === MAX_BATCH_CHANGES || units + next.text.length > MAX_BATCH_UNITS) break;
            const nextPrepared = (next.prepared ??= this.#prepare(next));
            if ("run" in nextPrepared) break;
            this.#jobs.shift();
            batch.push({ job: next, prepared: nextPrepared });
            changes += "change" in nextPrepared ? 1 : 0;
            units += next.text.length;
          }
          await this.#commit(batch);
        }
      }
    } finally {
      this.#draining = false;
    }
  }

  /** A request read and checked as the host's request loop does, before anything runs: its reply, or what runs it. */
  #prepare(job: RequestJob): Prepared {
    const text = job.text;
    const refused = (id: string | undefined, error: HostError) => ({ answer: { id, outcome: { error } } });
    // A UTF-16 unit is at most 3 bytes of UTF-8, so only a text over a third of the limit needs counting. A text
    // counted and found ASCII (as many bytes as units) holds data of as many bytes as characters, which the op
    // then needn't count again (a 5 MB write's second pass over its data). The in-process client counted it already.
    const bytes = job.bytes ?? (text.length > MAX_REQUEST_BYTES / 3 ? utf8Length(text) : 0);
    if (bytes > MAX_REQUEST_BYTES) return refused(idInHead(head(text)), oversized(bytes));
    const ascii = bytes === text.length;
    let fields: Fields;
    try {
      fields = (job.stringified ? stringifiedFields(text) : undefined) ?? parseFields(text);
    } catch (error) {
      if (error instanceof HostError) return refused(recoverId(text), error);
      return refused(undefined, HostError.storageUnavailable(`the request could not be read (${describe(error)})`));
    }
    const id = usableId(fields);
    if (id === undefined) return refused(undefined, idError(fields));
    try {
      return { id, ...this.#op(fields, ascii) };
    } catch (error) {
      return refused(id, asHostError(error));
    }
  }

  /**
   * Runs the changes of `batch` in one transaction and, once it has committed, answers every request of it in order
   * (see `#drain`). If that transaction fails (IndexedDB refusing a write, or a generated key found taken), nothing
   * of it stays, and each change runs again alone and careful (see Batch.careful), as the host runs them: only a
   * change that fails so fails.
   */
  async #commit(batch: Batched[]): Promise<void> {
    const changes = batch.flatMap(({ prepared }) => ("change" in prepared ? [prepared.change] : []));
    let outcomes: Outcome[];
    try {
      outcomes = await this.#inTransaction(changes, false);
    } catch {
      outcomes = [];
      for (const change of changes) {
        try {
          outcomes.push(...(await this.#inTransaction([change], true)));
        } catch (alone) {
          outcomes.push({ error: asHostError(alone) });
        }
      }
    }
    let next = 0;
    for (const { job, prepared } of batch) {
      if ("answer" in prepared) job.resolve(prepared.answer);
      else job.resolve({ id: prepared.id, outcome: outcomes[next++] ?? { error: asHostError(undefined) } });
    }
  }

  /** Runs `changes` in order in one transaction; their outcomes once it has committed. Throws if it fails. */
  async #inTransaction(changes: Change[], careful: boolean): Promise<Outcome[]> {
    const ctx = this.#context;
    const db = await ctx.db();
    const limit = await ctx.storeQuota();
    return changeTotals(ctx, db, async (tx, totals) => {
      const batch = { tx, limit, totals, careful };
      const done: Outcome[] = [];
      for (const change of changes) {
        try {
          done.push({ result: await change(batch) });
        } catch (error) {
          // A refusal changed nothing; anything else (IndexedDB failing) ends the transaction for all of them.
          if (!(error instanceof HostError)) throw error;
          done.push({ error });
        }
      }
      return done;
    });
  }

  /**
   * Parses the op and its fields (every check before the database is touched): what runs it, or the change it
   * makes. `ascii`: the request's text was counted and is ASCII (see `dataOf`).
   */
  #op(fields: Fields, ascii: boolean): { run: () => Promise<ResultText> } | { change: Change } {
    const ctx = this.#context;
    const op = requiredString(fields.op, "op");
    const run = (answer: () => Promise<ResultText>) => ({ run: answer });
    switch (op) {
      case "hello": {
        const hello = parseHello(fields);
        return run(() => ctx.storeQuota().then((storeQuota) => helloJson(hello, storeQuota)));
      }
      case "write":
        return { change: write(ctx, parseWrite(fields, ascii)) };
      case "read": {
        if (fields.storageKeys !== undefined) {
          const cmd = parseReadMany(fields);
          return run(() => readMany(ctx, cmd));
        }
        const cmd = parseRead(fields);
        return run(() => read(ctx, cmd));
      }
      case "list": {
        const cmd = parseList(fields);
        return run(() => list(ctx, cmd));
      }
      case "update":
        return { change: update(ctx, parseUpdate(fields, ascii)) };
      case "delete":
        return { change: deleteItem(ctx, parseDelete(fields)) };
      case "endSession": {
        const sessionId = parseSessionOp(fields);
        return run(() => endSession(ctx, sessionId));
      }
      case "stats": {
        const sessionId = parseSessionOp(fields);
        return run(() => stats(ctx, sessionId));
      }
      case "append":
        return { change: append(ctx, parseAppend(fields, ascii)) };
      case "search": {
        const cmd = parseSearch(fields);
        return run(() => search(ctx, cmd));
      }
      case "sessions": {
        const cmd = parseSessions(fields);
        return run(() => sessions(ctx, cmd));
      }
      case "endorse":
        return { change: endorse(ctx, parseEndorse(fields)) };
      default: {
        const shown = Array.from(op).slice(0, 40).join("");
        throw new HostError("InvalidRequestError", `unknown op \`${shown}\``, `use one of: ${OPS.join(", ")}`)
          .expected(OPS.join(" | "))
          .actual(shown);
      }
    }
  }
}

/** What running an op came to: its result, or the error it threw. */
async function outcomeOf(run: () => Promise<ResultText>): Promise<Outcome> {
  try {
    return { result: await run() };
  } catch (error) {
    return { error: asHostError(error) };
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
