/**
 * What IdbHost does beyond one request and its reply, which the transcripts and the differential test can't
 * show: the quota held across several contexts of the extension writing at once, the orphan sweep and the
 * minute-granular refresh of `lastAccessedAt` on an injected clock, generated ids from an injected random source,
 * a connection closed and opened again, a browser that refuses IndexedDB, where an item's data is kept (in its
 * record or apart, by its size), and the store-wide quota: held across contexts, found from what
 * `navigator.storage.estimate()` grants, and its running total brought to databases of the first schema.
 */

import "fake-indexeddb/auto";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { IDBDatabase as FakeIDBDatabase, IDBFactory, IDBIndex, IDBObjectStore } from "fake-indexeddb";
import { LEASE_IDLE_MS } from "../src/locks.js";
import { writerLockName } from "../src/backends/indexeddb/writer.js";
import { lockIsFree } from "./helpers/locks.js";
import { InProcessBackend } from "../src/backends/in-process.js";
import { IdbHost, storeQuotaFrom, type StorageEstimate } from "../src/backends/indexeddb/host.js";
import { COUNTERS, DATA, DATABASE_NAME, ITEMS, MAX_INLINE_DATA_BYTES, SESSIONS, STORE_TOTAL, type Durability } from "../src/backends/indexeddb/store.js";
import { createLlmCache } from "../src/llm-cache.js";
import { MemoryStorage } from "./helpers/memory-storage.js";
import { ItemNotFoundError, QuotaExceededError } from "../src/errors.js";
import { IDB_HOST_VERSION } from "../src/backends/indexeddb/cmd/hello.js";
import { ID_ALPHABET } from "../src/backends/indexeddb/json/index.js";
import { MAX_ITEM_BYTES, MAX_READ_MANY_BYTES, MAX_REQUEST_BYTES, ORPHAN_AFTER_MS, SESSION_QUOTA_BYTES, STORE_QUOTA_BYTES, TOUCH_GRANULARITY_MS } from "../src/protocol.js";

/** Sends a request object and parses the reply. */
async function call(host: IdbHost, request: object): Promise<{ ok: boolean; result?: any; error?: any }> {
  return JSON.parse(await host.handle(request)) as { ok: boolean; result?: any; error?: any };
}

/** A request that writes `data` under the key `conv_s_task0001_<turn>`. */
function write(session: string, turn: string, data: unknown, customMetadata?: object): object {
  return { id: turn, op: "write", sessionId: session, taskId: "task0001", turnId: turn, data, description: turn, customMetadata };
}

describe("changes sent together", () => {
  it("commit in one transaction, answered as if sent one by one, the refused ones changing nothing", async () => {
    // Writes (given keys and generated ones), updates and appends of items written just before them, deletes, and
    // refusals of every kind among them: the store-wide quota, a missing item, a bad field, a malformed request; a
    // read and a list end a run of changes. 1,500 bytes of store: the later writes don't fit.
    const requests: Array<object | string> = [
      write("conv_b", "turn0001", "a".repeat(398)),
      write("conv_b", "turn0002", { list: [1, 2] }),
      { id: "gen-1", op: "write", sessionId: "conv_b", data: "generated", description: "no ids" },
      { id: "up-1", op: "update", sessionId: "conv_b", storageKey: "conv_b_task0001_turn0001", description: "renamed" },
      { id: "app-1", op: "append", sessionId: "conv_b", storageKey: "conv_b_task0001_turn0002", pointer: "/list", data: [3] },
      { id: "missing", op: "update", sessionId: "conv_b", storageKey: "conv_b_task0001_turn0009", data: 1 },
      write("conv_b", "turn0003", "b".repeat(698)),
      write("conv_b", "turn0004", "c".repeat(698)),
      { id: "bad", op: "write", sessionId: "conv_b", data: null, description: "no data" },
      '{"id":"malformed","op":"write",',
      { id: "del-1", op: "delete", sessionId: "conv_b", storageKey: "conv_b_task0001_turn0003" },
      write("conv_b", "turn0005", "d".repeat(698)),
      { id: "read", op: "read", sessionId: "conv_b", storageKey: "conv_b_task0001_turn0002" },
      { id: "app-2", op: "append", sessionId: "conv_b", storageKey: "conv_b_task0001_turn0001", data: "tail" },
      { id: "app-3", op: "append", sessionId: "conv_b", storageKey: "conv_b_task0001_turn0002", data: "not an array" },
      write("conv_c", "turn0001", "e".repeat(98)),
      { id: "list", op: "list", sessionId: "conv_b" },
      { id: "del-2", op: "delete", sessionId: "conv_c", storageKey: "conv_c_task0001_turn0001" },
      { id: "stats", op: "stats", sessionId: "conv_b" },
    ];
    const host = (factory: IDBFactory) => {
      let draws = 0;
      return new IdbHost({ indexedDB: factory, storeQuotaBytes: 1500, now: () => 1_800_000_000_000, random: (bytes) => bytes.fill(draws++ % 36) });
    };
    const send = (to: IdbHost, request: object | string) => to.handleText(typeof request === "string" ? request : JSON.stringify(request));
    const oneByOne = host(new IDBFactory());
    const expected: string[] = [];
    for (const request of requests) expected.push(await send(oneByOne, request));
    // The same requests sent at once, counting the read-write transactions they take.
    const factory = new IDBFactory();
    const together = host(factory);
    await together.maintain();
    let commits = 0;
    const prototype = Object.getPrototypeOf((await new Promise<IDBDatabase>((resolve) => {
      const open = factory.open("count-transactions");
      open.onsuccess = () => resolve(open.result);
    })) as object) as { transaction: (...args: unknown[]) => unknown };
    const transaction = prototype.transaction;
    prototype.transaction = function (this: unknown, ...args: unknown[]) {
      if (args[1] === "readwrite") commits++;
      return transaction.apply(this, args);
    };
    try {
      assert.deepEqual(await Promise.all(requests.map((request) => send(together, request))), expected);
    } finally {
      prototype.transaction = transaction;
    }
    assert.ok(expected.some((reply) => reply.includes("store-wide limit")), "no write was refused for the store's quota");
    // Four commits for fourteen changes (and none for the reads): the first change, which starts before the others
    // are queued; the ones queued meanwhile, up to the read (the refused ones among them go along); those between
    // the read and the list; the last one.
    assert.equal(commits, 4);
    oneByOne.close();
    together.close();
  });
});

describe("a request JSON.stringify wrote (the in-process client's)", () => {
  it("is read in one pass however deep its data, and answered as the full reading answers it", async () => {
    const DEEP = 1_000_000;
    const host = () => new IdbHost({ indexedDB: new IDBFactory(), now: () => 1_800_000_000_000, random: (bytes) => bytes.fill(1) });
    // The objects' 6 MB is over the item limit: walked whole all the same, to be refused for its size.
    const requests: Array<[string, RegExp]> = [
      [`{"id":1,"op":"write","sessionId":"conv_deep","data":${"[".repeat(DEEP)}${"]".repeat(DEEP)},"description":"deep"}`, /"ok":true/],
      [`{"id":2,"op":"write","sessionId":"conv_deep","data":${'{"a":'.repeat(DEEP)}1${"}".repeat(DEEP)},"description":"deep"}`, /"DataTooLargeError","message":"data is 6000001 bytes/],
      ['{"id":3,"op":"list","sessionId":"conv_deep"}', /"ok":true.*array\[1\] of array/],
    ];
    const [fast, full] = [host(), host()];
    for (const [text, expected] of requests) {
      const reply = await fast.handleText(text, { stringified: true });
      assert.equal(reply, await full.handleText(text));
      assert.match(reply, expected);
    }
    fast.close();
    full.close();
  });
});

describe("a long request's size, counted once", () => {
  it("the in-process client counts a long request's UTF-8 once, and the host goes by that count", async () => {
    const host = new IdbHost({ indexedDB: new IDBFactory() });
    const counts: Array<number | undefined> = [];
    const client = new InProcessBackend({
      handleText: (text, options) => host.handleText(text, options),
      handleParsed: (text, bytes) => {
        counts.push(bytes);
        return host.handleParsed(text, bytes);
      },
    });
    // Over a third of the request limit in UTF-16 units, so that it must be counted; é is two bytes of UTF-8.
    const data = "é".repeat(1_000_000) + "a".repeat(2_000_000);
    const item = await client.write({ sessionId: "conv_counted", data, description: "long" });
    assert.equal(item.dataSize, Buffer.byteLength(JSON.stringify(data)), "the item's size is its UTF-8");
    const request = counts.at(-1);
    assert.ok(request !== undefined && request > Buffer.byteLength(JSON.stringify(data)), "the write's count was given to the host");
    await client.write({ sessionId: "conv_counted", data: "short", description: "short" });
    assert.equal(counts.at(-1), undefined, "a short request is not counted at all");
    // The host takes the count it is given: a request said to be over the limit is refused as one.
    const text = JSON.stringify({ id: 9, op: "stats", sessionId: "conv_counted" });
    const reply = JSON.parse(await host.handleText(text, { stringified: true, bytes: MAX_REQUEST_BYTES + 1 })) as { error?: { message?: string } };
    assert.match(reply.error?.message ?? "", new RegExp(`a frame of ${MAX_REQUEST_BYTES + 1} bytes is over the limit`));
    client.close();
  });
});

describe("a batch that fails", () => {
  it("runs its changes again one by one: a generated key drawn twice in one batch is drawn again, nothing lost", async () => {
    // Each id drawn takes one fill of the random bytes: the first write draws x (task and turn), the two after it
    // both draw y, and so would the retries, until z comes.
    const fills = ["x", "x", "y", "y", "y", "y", "y", "y", "y", "y", "z", "z"].map((letter) => ID_ALPHABET.indexOf(letter));
    const host = new IdbHost({ indexedDB: new IDBFactory(), random: (bytes) => bytes.fill(fills.shift() ?? 0) });
    const writes = [1, 2, 3].map((n) => call(host, { id: n, op: "write", sessionId: "conv_g", data: n, description: `item ${n}` }));
    const keys = (await Promise.all(writes)).map((reply) => reply.result?.storageKey);
    assert.deepEqual(keys, ["conv_g_xxxxxxxx_xxxxxxxx", "conv_g_yyyyyyyy_yyyyyyyy", "conv_g_zzzzzzzz_zzzzzzzz"]);
    const list = await call(host, { id: 4, op: "list", sessionId: "conv_g" });
    assert.deepEqual(list.result.items.map((item: { storageKey: string }) => item.storageKey).sort(), keys);
    const stats = await call(host, { id: 5, op: "stats", sessionId: "conv_g" });
    assert.deepEqual([stats.result.itemCount, stats.result.totalSize, stats.result.storeTotalSize], [3, 3, 3]);
    host.close();
  });
});

describe("several contexts of one extension", () => {
  it("hold the session quota together: one transaction checks and writes", async () => {
    const factory = new IDBFactory();
    // The service worker and a side panel, say: two hosts on one database.
    const contexts = [new IdbHost({ indexedDB: factory }), new IdbHost({ indexedDB: factory })];
    const big = "x".repeat(MAX_ITEM_BYTES - 2);
    const writes = Array.from({ length: 14 }, (_, i) => call(contexts[i % 2] as IdbHost, write("conv_q", `turn${String(i).padStart(4, "0")}`, big)));
    const replies = await Promise.all(writes);
    assert.equal(replies.filter((reply) => reply.ok).length, SESSION_QUOTA_BYTES / MAX_ITEM_BYTES);
    assert.ok(replies.filter((reply) => !reply.ok).every((reply) => reply.error.code === "QuotaExceededError"));
    const stats = await call(contexts[1] as IdbHost, { id: 1, op: "stats", sessionId: "conv_q" });
    assert.equal(stats.result.totalSize, SESSION_QUOTA_BYTES);
    assert.equal(stats.result.itemCount, 10);
    for (const context of contexts) context.close();
  });

  it("see each other's writes and an ended session at once", async () => {
    const factory = new IDBFactory();
    const [worker, panel] = [new IdbHost({ indexedDB: factory }), new IdbHost({ indexedDB: factory })];
    assert.ok((await call(worker, write("conv_e", "turn0001", [1, 2]))).ok);
    const read = await call(panel, { id: 2, op: "read", sessionId: "conv_e", storageKey: "conv_e_task0001_turn0001" });
    assert.deepEqual(read.result.item.data, [1, 2]);
    assert.deepEqual((await call(panel, { id: 3, op: "endSession", sessionId: "conv_e" })).result, { sessionId: "conv_e", deletedItems: 1, freedBytes: 5 });
    assert.equal((await call(worker, { id: 4, op: "read", sessionId: "conv_e", storageKey: "conv_e_task0001_turn0001" })).error.code, "ItemNotFoundError");
  });
});

describe("the writer lease", () => {
  const LOCK = writerLockName(DATABASE_NAME);

  it("lets a context that keeps changing read the session's and the store's totals once, not per write", async (t) => {
    const host = new IdbHost({ indexedDB: new IDBFactory() });
    const get = IDBObjectStore.prototype.get;
    let totalsRead = 0;
    IDBObjectStore.prototype.get = function (this: IDBObjectStore, ...args: Parameters<typeof get>) {
      if (this.name === SESSIONS || this.name === COUNTERS) totalsRead++;
      return get.apply(this, args);
    };
    t.after(() => {
      IDBObjectStore.prototype.get = get;
      host.close();
    });
    for (let n = 0; n < 5; n++) assert.ok((await call(host, { id: n, op: "write", sessionId: "conv_w", data: n, description: `item ${n}` })).ok);
    assert.ok((await call(host, { id: 5, op: "delete", sessionId: "conv_w", storageKey: (await call(host, write("conv_w", "turn0001", 1))).result.storageKey })).ok);
    assert.equal(totalsRead, 2, "the first write reads the session's record and the store's total; the other changes read neither");
    const stats = await call(host, { id: 6, op: "stats", sessionId: "conv_w" });
    assert.deepEqual([stats.result.itemCount, stats.result.totalSize, stats.result.storeTotalSize], [5, 5, 5]);
  });

  it("passes between contexts, and each reads what the other left: the quota holds, one change after another", async () => {
    const factory = new IDBFactory();
    const [worker, panel] = [new IdbHost({ indexedDB: factory, storeQuotaBytes: 1000 }), new IdbHost({ indexedDB: factory, storeQuotaBytes: 1000 })];
    // Each context's second change comes after the other's: one that went by what it knew from its first would
    // see 400 bytes where there are 800, and let the third write pass the limit.
    assert.ok((await call(worker, write("conv_p", "turn0001", "x".repeat(398)))).ok);
    assert.ok((await call(panel, write("conv_p", "turn0002", "y".repeat(398)))).ok);
    const third = await call(worker, write("conv_p", "turn0003", "z".repeat(398)));
    assert.equal(third.error?.code, "QuotaExceededError");
    assert.deepEqual([third.error.current, third.error.limit], [800, 1000]);
    assert.ok((await call(panel, { id: 1, op: "delete", sessionId: "conv_p", storageKey: "conv_p_task0001_turn0001" })).ok);
    assert.ok((await call(worker, write("conv_p", "turn0003", "z".repeat(398)))).ok);
    assert.deepEqual((await call(panel, { id: 2, op: "endSession", sessionId: "conv_p" })).result, { sessionId: "conv_p", deletedItems: 2, freedBytes: 800 });
    assert.ok((await call(worker, write("conv_p", "turn0004", "w".repeat(998)))).ok, "the ended session's bytes are free again");
    const stats = await call(panel, { id: 3, op: "stats", sessionId: "conv_p" });
    assert.deepEqual([stats.result.itemCount, stats.result.totalSize, stats.result.storeTotalSize], [1, 1000, 1000]);
    worker.close();
    panel.close();
  });

  it("is let go once unused for LEASE_IDLE_MS, and not before", async (t) => {
    t.mock.timers.enable({ apis: ["setTimeout", "Date"] });
    const host = new IdbHost({ indexedDB: new IDBFactory() });
    t.after(() => host.close());
    assert.ok((await call(host, write("conv_i", "turn0001", 1))).ok);
    // Whether another context could take the lease now.
    const free = () => lockIsFree(LOCK);
    assert.equal(await free(), false, "held after the write");
    t.mock.timers.tick(LEASE_IDLE_MS - 1);
    assert.ok((await call(host, write("conv_i", "turn0002", 2))).ok);
    t.mock.timers.tick(1);
    assert.equal(await free(), false, "a write meanwhile: the idle time counts from it");
    t.mock.timers.tick(LEASE_IDLE_MS - 2);
    assert.equal(await free(), false, "and still just before the idle time");
    t.mock.timers.tick(1);
    assert.equal(await free(), true, "let go once unused for LEASE_IDLE_MS");
  });
});

describe("a page's leases", () => {
  it("are let go when the page is frozen or hidden, so that a frozen page keeps no other context waiting", async (t) => {
    // A page as the Page Lifecycle API has it: `freeze` is fired at its document, `pagehide` at its window (here
    // the global object, as in a page). Set before the realm's first lease in a page, when locks.ts listens.
    const [document, window] = [new EventTarget(), new EventTarget()];
    const global = globalThis as { document?: EventTarget; addEventListener?: EventTarget["addEventListener"] };
    global.document = document;
    global.addEventListener = window.addEventListener.bind(window);
    const host = new IdbHost({ indexedDB: new IDBFactory() });
    t.after(() => {
      host.close();
      delete global.document;
      delete global.addEventListener;
    });
    const free = () => lockIsFree(writerLockName(DATABASE_NAME));
    for (const [target, event] of [
      [document, "freeze"],
      [window, "pagehide"],
    ] as const) {
      assert.ok((await call(host, { id: 1, op: "write", sessionId: "conv_f", data: 1, description: event })).ok);
      assert.equal(await free(), false, `the writer lease is held after a write, before ${event}`);
      target.dispatchEvent(new Event(event));
      assert.equal(await free(), true, `and let go at ${event}`);
    }
    const stats = await call(host, { id: 2, op: "stats", sessionId: "conv_f" });
    assert.equal(stats.result.itemCount, 2, "the writes after a let-go took the lease again");
  });
});

describe("the store-wide quota", () => {
  /**
   * The store's running total as the database keeps it (the newest numbered one, in `counters`, on a session's
   * record or on the record an item carries: store.ts), and the sum it must equal: every item's data and
   * customMetadata. And each session's record now (the newer of its own and its newest item's), with the sums over
   * its items it must equal.
   */
  async function totals(factory: IDBFactory, name = "llm-cache"): Promise<{ kept: unknown; sum: number; sessions: Record<string, unknown> }> {
    const db = await new Promise<IDBDatabase>((resolve, reject) => {
      const opening = factory.open(name);
      opening.onsuccess = () => resolve(opening.result);
      opening.onerror = () => reject(opening.error);
    });
    type Numbered = { sessionId: string; totalSize: number; itemCount: number; seq?: number; storeTotal?: number };
    const all = <T>(store: string) =>
      new Promise<T[]>((resolve) => (db.transaction(store, "readonly").objectStore(store).getAll().onsuccess = (e) => resolve((e.target as IDBRequest).result)));
    const [counted, records, items] = await Promise.all([
      new Promise<{ seq: number; total: number }>(
        (resolve) => (db.transaction(COUNTERS, "readonly").objectStore(COUNTERS).get(STORE_TOTAL).onsuccess = (e) => resolve((e.target as IDBRequest).result)),
      ),
      all<Numbered>(SESSIONS),
      all<{ sessionId: string; dataSize: number; customMetadata?: string; session?: Numbered }>(ITEMS),
    ]);
    db.close();
    let newest = counted;
    const carried = items.flatMap((item) => (item.session === undefined ? [] : [item.session]));
    for (const { seq, storeTotal } of [...records, ...carried]) if (seq !== undefined && seq > newest.seq) newest = { seq, total: storeTotal as number };
    const quota = (item: (typeof items)[number]) => item.dataSize + Buffer.byteLength(item.customMetadata ?? "");
    const sessions: Record<string, unknown> = {};
    for (const record of records) {
      let now = record;
      for (const other of carried) if (other.sessionId === record.sessionId && (other.seq ?? -1) > (now.seq ?? -1)) now = other;
      const own = items.filter((item) => item.sessionId === record.sessionId);
      sessions[record.sessionId] = { kept: [now.itemCount, now.totalSize], sum: [own.length, own.reduce((sum, item) => sum + quota(item), 0)] };
    }
    return { kept: newest.total, sum: items.reduce((sum, item) => sum + quota(item), 0), sessions };
  }

  /** `totals`, checked: the store's total and each session's record equal their sums. */
  async function checkedTotal(factory: IDBFactory): Promise<number> {
    const found = await totals(factory);
    assert.equal(found.kept, found.sum, "the store's total is the sum of its items");
    for (const [sessionId, { kept, sum }] of Object.entries(found.sessions) as Array<[string, { kept: number[]; sum: number[] }]>) {
      assert.deepEqual(kept, sum, `${sessionId}'s record counts its items`);
    }
    return found.sum;
  }

  it("is held by every context together, and the running total stays the sum of the sessions", async () => {
    const factory = new IDBFactory();
    const contexts = [new IdbHost({ indexedDB: factory, storeQuotaBytes: 1000 }), new IdbHost({ indexedDB: factory, storeQuotaBytes: 1000 })];
    // Twelve writes of 100 bytes to six sessions, from two contexts at once: ten fit.
    const writes = Array.from({ length: 12 }, (_, i) =>
      call(contexts[i % 2] as IdbHost, write(`conv_s${i % 6}`, `turn${String(i).padStart(4, "0")}`, "x".repeat(98))),
    );
    const replies = await Promise.all(writes);
    assert.equal(replies.filter((reply) => reply.ok).length, 10);
    const refused = replies.filter((reply) => !reply.ok);
    assert.ok(refused.every((reply) => reply.error.code === "QuotaExceededError" && /store-wide limit of 1000/.test(reply.error.message)));
    assert.equal(await checkedTotal(factory), 1000);
    // Updates, appends, deletes and ended sessions keep it so.
    const [worker, panel] = contexts as [IdbHost, IdbHost];
    assert.ok((await call(worker, { id: 1, op: "update", sessionId: "conv_s0", storageKey: "conv_s0_task0001_turn0000", data: "x" })).ok);
    assert.ok((await call(panel, { id: 2, op: "append", sessionId: "conv_s1", storageKey: "conv_s1_task0001_turn0001", data: "yy" })).ok);
    assert.ok((await call(worker, { id: 3, op: "delete", sessionId: "conv_s2", storageKey: "conv_s2_task0001_turn0002" })).ok);
    // Which two writes were refused depends on how the contexts' transactions fell: conv_s3 holds one or two items.
    const s3Items = replies.filter((reply, i) => reply.ok && i % 6 === 3).length;
    const ended = await call(panel, { id: 4, op: "endSession", sessionId: "conv_s3" });
    assert.deepEqual([ended.result.deletedItems, ended.result.freedBytes], [s3Items, 100 * s3Items]);
    const sum = await checkedTotal(factory);
    // 1000, less 97 (the update), plus 2 (the append), less 100 (the delete) and conv_s3's items.
    assert.equal(sum, 1000 - 97 + 2 - 100 - 100 * s3Items);
    const stats = await call(worker, { id: 5, op: "stats", sessionId: "conv_s0" });
    assert.deepEqual([stats.result.storeTotalSize, stats.result.storeQuotaBytes, stats.result.storeRemainingBytes], [sum, 1000, 1000 - sum]);
    for (const context of contexts) context.close();
  });

  it("is refused with what a person can do in the browser, not with the host's command line", async () => {
    const host = new IdbHost({ indexedDB: new IDBFactory(), storeQuotaBytes: 100 });
    const refused = await call(host, write("conv_q", "turn0001", "x".repeat(99)));
    assert.equal(refused.error.code, "QuotaExceededError");
    assert.equal(
      refused.error.suggestion,
      "end the sessions whose tasks are done (endSession; a person can see every session in the extension's cache viewer and end one there), or delete items no longer needed, then try again; the limit is the one the extension set, or else half of the disk space the browser grants the extension (2 GiB at most)",
    );
    host.close();
  });

  it("is brought to a database of the first schema once, summed from its sessions, its items read as unknown", async () => {
    const factory = new IDBFactory();
    // A database as shims before the store-wide quota left it: version 1, with two sessions' totals, and conv_a's
    // item as records were before they carried provenance.
    const older = { sessionId: "conv_a", storageKey: "conv_a_aaaaaaaa_00000001", description: "an older note", dataSize: 300, shape: "" };
    await new Promise<void>((resolve, reject) => {
      const opening = factory.open("llm-cache", 1);
      opening.onupgradeneeded = () => {
        const db = opening.result;
        const items = db.createObjectStore("items", { keyPath: "storageKey" });
        items.createIndex("bySessionTime", ["sessionId", "timestamp", "storageKey"]);
        const data = db.createObjectStore("data");
        const sessions = db.createObjectStore("sessions", { keyPath: "sessionId" });
        sessions.createIndex("byLastAccess", "lastAccessedAt");
        const now = Date.now();
        items.put({ ...older, timestamp: now });
        data.put(JSON.stringify("x".repeat(298)), older.storageKey);
        for (const [sessionId, totalSize] of [["conv_a", 300], ["conv_b", 450]] as const) {
          sessions.put({ sessionId, totalSize, itemCount: 1, createdAt: now, lastAccessedAt: now });
        }
      };
      opening.onsuccess = () => {
        opening.result.close();
        resolve();
      };
      opening.onerror = () => reject(opening.error);
    });
    const host = new IdbHost({ indexedDB: factory, storeQuotaBytes: 1000 });
    const stats = await call(host, { id: 1, op: "stats", sessionId: "conv_a" });
    assert.deepEqual([stats.result.totalSize, stats.result.storeTotalSize, stats.result.storeRemainingBytes], [300, 750, 250]);
    const over = await call(host, write("conv_c", "turn0001", "x".repeat(250)));
    assert.equal(over.error.actual, "750 + 252 = 1002 bytes");
    const read = await call(host, { id: 2, op: "read", sessionId: "conv_a", storageKey: older.storageKey });
    assert.deepEqual([read.result.item.provenance, read.result.item.shape], [{ origin: "unknown" }, ""]);
    const endorsed = await call(host, { id: 3, op: "endorse", sessionId: "conv_a", storageKey: older.storageKey, reason: "read it" });
    assert.equal(endorsed.result.provenance.endorsed.reason, "read it");
    assert.equal(endorsed.result.timestamp, read.result.item.timestamp);
    host.close();
  });

  it("moves with each change in one request: a write's item carries its session, and a new context finds the newest", async (t) => {
    const factory = new IDBFactory();
    // What each change writes: adds, puts and deletes per store.
    const [add, put, del] = [IDBObjectStore.prototype.add, IDBObjectStore.prototype.put, IDBObjectStore.prototype.delete];
    const writes: string[] = [];
    IDBObjectStore.prototype.add = function (this: IDBObjectStore, ...args: Parameters<typeof add>) {
      writes.push(`add ${this.name}`);
      return add.apply(this, args);
    };
    IDBObjectStore.prototype.put = function (this: IDBObjectStore, ...args: Parameters<typeof put>) {
      writes.push(`put ${this.name}`);
      return put.apply(this, args);
    };
    IDBObjectStore.prototype.delete = function (this: IDBObjectStore, ...args: Parameters<typeof del>) {
      writes.push(`delete ${this.name}`);
      return del.apply(this, args);
    };
    t.after(() => {
      [IDBObjectStore.prototype.add, IDBObjectStore.prototype.put, IDBObjectStore.prototype.delete] = [add, put, del];
    });
    let clock = 1_800_000_000_000;
    const context = () => new IdbHost({ indexedDB: factory, storeQuotaBytes: 1000, now: () => clock });
    const written = async (host: IdbHost, request: object) => {
      writes.length = 0;
      assert.ok((await call(host, request)).ok);
      return [...writes];
    };
    const worker = context();
    // Opens the database, whose creation puts the first total in `counters`.
    assert.equal((await call(worker, { id: 0, op: "stats", sessionId: "conv_a" })).result.storeTotalSize, 0);
    // A session's first write puts its record; the writes after it, their items alone, each carrying the record.
    assert.deepEqual(await written(worker, write("conv_a", "turn0001", "x".repeat(98))), ["put sessions", "put items"]);
    clock += 1000;
    assert.deepEqual(await written(worker, write("conv_a", "turn0002", "x".repeat(198))), ["put items"]);
    assert.deepEqual(await written(worker, { id: 1, op: "write", sessionId: "conv_b", data: "y".repeat(298), description: "generated" }), [
      "put sessions",
      "add items",
    ]);
    assert.equal(await checkedTotal(factory), 600);
    // Once the record's last access is a minute old, a write puts it again, as the orphan sweep reads it.
    clock += TOUCH_GRANULARITY_MS;
    assert.deepEqual(await written(worker, { id: 2, op: "update", sessionId: "conv_a", storageKey: "conv_a_task0001_turn0002", data: "z" }), [
      "put sessions",
      "put items",
    ]);
    // The session whose item holds the newest total ends: the total goes to `counters`.
    assert.equal((await call(worker, { id: 3, op: "endSession", sessionId: "conv_b" })).result.freedBytes, 300);
    assert.ok(writes.includes("put counters"));
    assert.equal(await checkedTotal(factory), 103);
    // A delete puts the record; the next write carries it again.
    assert.deepEqual(await written(worker, { id: 4, op: "delete", sessionId: "conv_a", storageKey: "conv_a_task0001_turn0001" }), [
      "delete items",
      "delete data",
      "put sessions",
    ]);
    clock += 1000;
    assert.deepEqual(await written(worker, write("conv_a", "turn0003", "w".repeat(48))), ["put items"]);
    assert.equal(await checkedTotal(factory), 53);
    // A read a minute later refreshes the last access of the record in `sessions` only (touch): the session's last
    // access is the later of the two records'.
    clock += TOUCH_GRANULARITY_MS;
    assert.deepEqual(await written(worker, { id: 9, op: "read", sessionId: "conv_a", storageKey: "conv_a_task0001_turn0003" }), ["put sessions"]);
    worker.close();
    // Another context, which knows nothing of what the first left, finds the record and the total on the newest item.
    const panel = context();
    const stats = (await call(panel, { id: 5, op: "stats", sessionId: "conv_a" })).result;
    assert.deepEqual([stats.itemCount, stats.totalSize, stats.storeTotalSize, stats.lastAccessedAt], [2, 53, 53, clock]);
    assert.deepEqual((await call(panel, { id: 6, op: "sessions" })).result.sessions, [
      { sessionId: "conv_a", itemCount: 2, totalSize: 53, createdAt: 1_800_000_000_000, lastAccessedAt: clock },
    ]);
    const over = await call(panel, write("conv_c", "turn0001", "z".repeat(946)));
    assert.equal(over.error.actual, "53 + 948 = 1001 bytes");
    assert.ok((await call(panel, { id: 7, op: "endSession", sessionId: "conv_a" })).ok);
    panel.close();
    const last = context();
    assert.equal((await call(last, { id: 8, op: "stats", sessionId: "conv_a" })).result.storeTotalSize, 0);
    assert.ok((await call(last, write("conv_c", "turn0001", "z".repeat(998)))).ok, "the whole quota is free again");
    last.close();
  });

  it("is numbered in a database of the third schema, where it was a number", async () => {
    const factory = new IDBFactory();
    await new Promise<void>((resolve, reject) => {
      const opening = factory.open("llm-cache", 3);
      opening.onupgradeneeded = () => {
        const db = opening.result;
        db.createObjectStore("items", { keyPath: "storageKey" }).createIndex("bySessionTime", ["sessionId", "timestamp", "storageKey"]);
        db.createObjectStore("data");
        db.createObjectStore("sessions", { keyPath: "sessionId" }).createIndex("byLastAccess", "lastAccessedAt");
        const now = Date.now();
        for (const [sessionId, totalSize] of [["conv_a", 300], ["conv_b", 450]] as const) {
          opening.transaction?.objectStore("sessions").put({ sessionId, totalSize, itemCount: 1, createdAt: now, lastAccessedAt: now });
        }
        db.createObjectStore("counters").put(750, "storeTotal");
      };
      opening.onsuccess = () => {
        opening.result.close();
        resolve();
      };
      opening.onerror = () => reject(opening.error);
    });
    const host = new IdbHost({ indexedDB: factory, storeQuotaBytes: 1000 });
    assert.equal((await call(host, { id: 1, op: "stats", sessionId: "conv_a" })).result.storeTotalSize, 750);
    assert.ok((await call(host, write("conv_a", "turn0001", "x".repeat(98)))).ok);
    assert.equal((await call(host, write("conv_c", "turn0001", "x".repeat(150)))).error.actual, "850 + 152 = 1002 bytes");
    host.close();
    assert.deepEqual((await totals(factory)).kept, 850);
  });

  describe("found from navigator.storage.estimate()", () => {
    /**
     * Puts a stub of navigator.storage (the Storage Standard's StorageManager) in place for `body`: on Node's own
     * navigator where it has one (Node 21 and later), else on a navigator of its own.
     */
    async function withEstimate(estimate: () => Promise<StorageEstimate>, body: () => Promise<void>): Promise<void> {
      const global = globalThis as { navigator?: object };
      const own = global.navigator === undefined;
      if (own) Object.defineProperty(global, "navigator", { value: {}, configurable: true });
      Object.defineProperty(global.navigator, "storage", { value: { estimate }, configurable: true });
      try {
        await body();
      } finally {
        delete (global.navigator as { storage?: unknown }).storage;
        if (own) delete global.navigator;
      }
    }
    const helloQuota = async (host: IdbHost) => (await call(host, { id: 1, op: "hello" })).result.limits.storeQuotaBytes as number;

    it("is the host's default where there is no navigator.storage (Node)", async () => {
      assert.equal((globalThis.navigator as { storage?: unknown } | undefined)?.storage, undefined);
      assert.equal(await helloQuota(new IdbHost({ indexedDB: new IDBFactory() })), STORE_QUOTA_BYTES);
    });

    it("is half of what the browser grants when that is less than the default, and follows it at maintenance", async () => {
      let grant: StorageEstimate = { quota: 3000, usage: 1200 };
      await withEstimate(async () => grant, async () => {
        const host = new IdbHost({ indexedDB: new IDBFactory() });
        assert.equal(await helloQuota(host), 1500);
        const over = await call(host, write("conv_e", "turn0001", "x".repeat(1499)));
        assert.match(over.error.message, /store-wide limit of 1500$/);
        grant = { quota: 100 * STORE_QUOTA_BYTES, usage: 0 };
        await host.maintain();
        assert.equal(await helloQuota(host), STORE_QUOTA_BYTES);
        assert.ok((await call(host, write("conv_e", "turn0001", "x".repeat(1499)))).ok);
        // A quota given as an option is kept, whatever the browser says.
        const fixed = new IdbHost({ indexedDB: new IDBFactory(), storeQuotaBytes: 42 });
        await fixed.maintain();
        assert.equal(await helloQuota(fixed), 42);
        host.close();
        fixed.close();
      });
    });

    it("is the default when the browser can't say", async () => {
      await withEstimate(() => Promise.reject(new DOMException("no", "UnknownError")), async () => {
        assert.equal(await helloQuota(new IdbHost({ indexedDB: new IDBFactory() })), STORE_QUOTA_BYTES);
      });
      for (const estimate of [undefined, {}, { quota: Number.NaN }, { quota: -1 }]) assert.equal(storeQuotaFrom(estimate), STORE_QUOTA_BYTES);
      assert.equal(storeQuotaFrom({ quota: 1001 }), 500);
      assert.throws(() => new IdbHost({ storeQuotaBytes: 1.5 }), /storeQuotaBytes must be a whole number/);
    });
  });
});

describe("time", () => {
  it("removes sessions idle for 24 hours, and only those", async () => {
    let now = 1_800_000_000_000;
    const host = new IdbHost({ indexedDB: new IDBFactory(), now: () => now });
    await call(host, write("conv_idle", "turn0001", "a", { k: 1 }));
    await call(host, write("conv_used", "turn0001", "b"));
    now += ORPHAN_AFTER_MS - 1;
    assert.equal(await host.maintain(), 0);
    await call(host, write("conv_used", "turn0002", "c"));
    now += 1;
    assert.equal(await host.maintain(), 1);
    const idle = await call(host, { id: 1, op: "stats", sessionId: "conv_idle" });
    assert.deepEqual([idle.result.itemCount, idle.result.createdAt], [0, null]);
    assert.equal((await call(host, { id: 2, op: "list", sessionId: "conv_idle" })).result.items.length, 0);
    assert.equal((await call(host, { id: 3, op: "stats", sessionId: "conv_used" })).result.itemCount, 2);
    // Its data went with it: the key is free, and a new session starts from nothing.
    assert.equal((await call(host, write("conv_idle", "turn0001", "again"))).result.dataSize, 7);
    assert.equal((await call(host, { id: 4, op: "stats", sessionId: "conv_idle" })).result.totalSize, 7);
  });

  it("keeps a session written within 24 hours whose record in `sessions` is older (its last write carried it)", async () => {
    let now = 1_800_000_000_000;
    const host = new IdbHost({ indexedDB: new IDBFactory(), now: () => now });
    await call(host, write("conv_busy", "turn0001", "a"));
    // Half a minute later: the write's item carries the session's record, and the one in `sessions` stays as it was.
    now += 30_000;
    await call(host, write("conv_busy", "turn0002", "b"));
    now += ORPHAN_AFTER_MS - 20_000;
    assert.equal(await host.maintain(), 0, "idle for 24 hours by its record in `sessions`, not by its last write");
    now += 20_000;
    assert.equal(await host.maintain(), 1);
    host.close();
  });

  it("keeps a session another context read between the sweep's look and its removal, whatever the writer knew", async (t) => {
    let now = 1_800_000_000_000;
    const host = new IdbHost({ indexedDB: new IDBFactory(), now: () => now });
    t.after(() => host.close());
    // The write leaves the host holding the writer lease, with the session's record (last accessed now) known.
    assert.ok((await call(host, write("conv_read", "turn0001", "a"))).ok);
    now += ORPHAN_AFTER_MS;
    // While the sweep looks for idle sessions, another context reads this one: its refresh of lastAccessedAt (what
    // touch() commits, without the writer lease) is queued before the sweep's removal, and so runs first.
    const openKeyCursor = IDBIndex.prototype.openKeyCursor;
    IDBIndex.prototype.openKeyCursor = function (this: IDBIndex, ...args: Parameters<typeof openKeyCursor>) {
      const found = openKeyCursor.apply(this, args);
      const sessions = this.objectStore.transaction.db.transaction([SESSIONS], "readwrite").objectStore(SESSIONS);
      const reading = sessions.get("conv_read");
      reading.onsuccess = () => sessions.put({ ...reading.result, lastAccessedAt: now });
      return found;
    };
    t.after(() => (IDBIndex.prototype.openKeyCursor = openKeyCursor));
    assert.equal(await host.maintain(), 0);
    assert.equal((await call(host, { id: 1, op: "stats", sessionId: "conv_read" })).result.itemCount, 1);
  });

  it("refreshes lastAccessedAt on reads only once it is a minute old", async () => {
    let now = 1_800_000_000_000;
    const host = new IdbHost({ indexedDB: new IDBFactory(), now: () => now });
    const written = now;
    await call(host, write("conv_t", "turn0001", "a"));
    const lastAccess = async () => (await call(host, { id: 1, op: "stats", sessionId: "conv_t" })).result.lastAccessedAt as number;
    const read = { id: 2, op: "read", sessionId: "conv_t", storageKey: "conv_t_task0001_turn0001" };
    now += TOUCH_GRANULARITY_MS - 1;
    await call(host, read);
    await call(host, { id: 3, op: "list", sessionId: "conv_t" });
    assert.equal(await lastAccess(), written);
    now += 1;
    await call(host, read);
    assert.equal(await lastAccess(), now);
    now += TOUCH_GRANULARITY_MS;
    await call(host, { id: 4, op: "search", sessionId: "conv_t", query: "a" });
    assert.equal(await lastAccess(), now);
  });
});

describe("durability", () => {
  /** Runs `work`, and returns the durability of every read-write transaction it opened. */
  async function readWriteDurabilities(work: () => Promise<void>): Promise<string[]> {
    const seen: string[] = [];
    const original = FakeIDBDatabase.prototype.transaction;
    FakeIDBDatabase.prototype.transaction = function (this: IDBDatabase, ...args: Parameters<IDBDatabase["transaction"]>) {
      const tx = original.apply(this, args);
      if (tx.mode === "readwrite") seen.push(tx.durability);
      return tx;
    } as typeof original;
    try {
      await work();
    } finally {
      FakeIDBDatabase.prototype.transaction = original;
    }
    return seen;
  }

  /** Every kind of change: a write, an update, an append, a delete, a read's refresh, endSession and the sweep. */
  async function everyChange(host: IdbHost, clock: { now: number }): Promise<void> {
    assert.ok((await call(host, write("conv_d", "turn0001", "a"))).ok);
    assert.ok((await call(host, write("conv_d", "turn0002", "b"))).ok);
    assert.ok((await call(host, { id: 1, op: "update", sessionId: "conv_d", storageKey: "conv_d_task0001_turn0001", description: "u" })).ok);
    assert.ok((await call(host, { id: 2, op: "append", sessionId: "conv_d", storageKey: "conv_d_task0001_turn0001", data: "c" })).ok);
    assert.ok((await call(host, { id: 3, op: "delete", sessionId: "conv_d", storageKey: "conv_d_task0001_turn0002" })).ok);
    clock.now += TOUCH_GRANULARITY_MS;
    assert.ok((await call(host, { id: 4, op: "read", sessionId: "conv_d", storageKey: "conv_d_task0001_turn0001" })).ok);
    assert.ok((await call(host, { id: 5, op: "endSession", sessionId: "conv_d" })).ok);
    assert.ok((await call(host, write("conv_o", "turn0001", "o"))).ok);
    clock.now += ORPHAN_AFTER_MS;
    assert.equal(await host.maintain(), 1);
  }

  for (const [asked, expected] of [
    [undefined, "relaxed"],
    ["relaxed", "relaxed"],
    ["strict", "strict"],
  ] as const) {
    it(`commits every change ${expected} when ${asked === undefined ? "left to its default" : `asked for ${asked}`}`, async () => {
      const clock = { now: 1_700_000_000_000 };
      const host = new IdbHost({ indexedDB: new IDBFactory(), now: () => clock.now, storeQuotaBytes: STORE_QUOTA_BYTES, durability: asked });
      const seen = await readWriteDurabilities(() => everyChange(host, clock));
      // Seven changes, the read's refresh and the sweep's removal: nine read-write transactions, all alike.
      assert.equal(seen.length, 9);
      assert.deepEqual(new Set(seen), new Set([expected]));
    });
  }

  it("is createLlmCache's `durability` for the in-browser backend it makes, and nothing else is taken", async () => {
    for (const durability of ["strict", undefined] as const) {
      const cache = createLlmCache({ backend: "indexeddb", storage: new MemoryStorage(), durability });
      const seen = await readWriteDurabilities(async () => {
        await cache.client.write({ sessionId: "conv_l", data: 1, description: "d" });
      });
      cache.client.close();
      assert.deepEqual(seen, [durability ?? "relaxed"]);
    }
    assert.throws(() => new IdbHost({ indexedDB: new IDBFactory(), durability: "default" as Durability }), /durability must be "relaxed" or "strict", not "default"/);
  });
});

describe("a list", () => {
  it("reads a page the same in one request (Chrome 141 and later) as by a walk (other browsers)", async () => {
    // Timestamps that tie, so that the key orders the items within them, as the host orders them.
    let clock = 1_800_000_000_000;
    const host = new IdbHost({ indexedDB: new IDBFactory(), now: () => clock++ >> 1 });
    for (let n = 0; n < 7; n++) await call(host, { id: n, op: "write", sessionId: "conv_l", data: n, description: `item ${n}` });
    const pages = async () => {
      const seen: unknown[] = [];
      let cursor: string | null | undefined;
      do {
        const reply = await call(host, { id: 9, op: "list", sessionId: "conv_l", limit: 3, cursor: cursor ?? undefined });
        seen.push(reply.result);
        cursor = reply.result.nextCursor;
      } while (cursor !== null);
      return seen;
    };
    const inOne = await pages();
    const getAllRecords = Object.getOwnPropertyDescriptor(IDBIndex.prototype, "getAllRecords");
    assert.ok(getAllRecords, "fake-indexeddb reads backwards in one request, as Chrome does");
    delete (IDBIndex.prototype as { getAllRecords?: unknown }).getAllRecords;
    let walked;
    try {
      walked = await pages();
    } finally {
      Object.defineProperty(IDBIndex.prototype, "getAllRecords", getAllRecords);
    }
    assert.deepEqual(walked, inOne);
    // Three pages, every item once, newest first (and the greater key first where the times tie).
    const pageItems = inOne.map((page) => (page as { items: Array<{ timestamp: number; storageKey: string }> }).items);
    assert.deepEqual(pageItems.map((items) => items.length), [3, 3, 1]);
    const order = pageItems.flat().map(({ timestamp, storageKey }) => [timestamp, storageKey] as const);
    const newestFirst = [...order].sort(([t1, k1], [t2, k2]) => t2 - t1 || (k2 > k1 ? 1 : k2 < k1 ? -1 : 0));
    assert.deepEqual(order, newestFirst);
    assert.equal(new Set(order.map(([, key]) => key)).size, 7);
    host.close();
  });
});

describe("a read of several items", () => {
  it("asks for the entries' data together, never more than its own bound of stored data (or one item) at a time", async () => {
    const host = new IdbHost({ indexedDB: new IDBFactory() });
    const big = { part: "x".repeat(2_200_000), small: 1 };
    const keys: string[] = [];
    for (const [n, data] of [1, 2, 3, 4, 5, big, big, big, 6].entries()) {
      keys.push((await call(host, { id: n, op: "write", sessionId: "conv_r", data, description: `item ${n}` })).result.storageKey);
    }
    const sizes = new Map<string, number>();
    for (const key of keys) sizes.set(key, (await call(host, { id: 0, op: "read", sessionId: "conv_r", storageKey: key })).result.item.dataSize);
    // The data store's gets, counted while they are under way: how many at once, and how many bytes of data.
    const get = IDBObjectStore.prototype.get;
    let [asked, bytes, mostAsked, mostBytes] = [0, 0, 0, 0];
    const askedFor = new Set<string>();
    IDBObjectStore.prototype.get = function (this: IDBObjectStore, key: IDBValidKey) {
      const request = get.call(this, key);
      if (this.name === "data") {
        askedFor.add(String(key));
        const size = sizes.get(String(key)) ?? 0;
        [asked, bytes] = [asked + 1, bytes + size];
        [mostAsked, mostBytes] = [Math.max(mostAsked, asked), Math.max(mostBytes, bytes)];
        request.addEventListener("success", () => ([asked, bytes] = [asked - 1, bytes - size]));
      }
      return request;
    };
    let reply;
    try {
      // Each big item's small part only, so that the read fits its bound although the items' data doesn't.
      const storageKeys = keys.map((storageKey, n) => (n >= 5 && n <= 7 ? { storageKey, pointer: "/small" } : storageKey));
      reply = await call(host, { id: 9, op: "read", sessionId: "conv_r", storageKeys });
    } finally {
      IDBObjectStore.prototype.get = get;
    }
    assert.deepEqual(
      reply.result.items.map((entry: { item: { data: unknown } }) => entry.item.data),
      [1, 2, 3, 4, 5, 1, 1, 1, 6],
    );
    // The six small items come with their records, never asked of the data store; the first two big ones fit
    // MAX_READ_MANY_BYTES together, the third doesn't.
    assert.equal(mostAsked, 2);
    assert.deepEqual([...askedFor].sort(), keys.slice(5, 8).sort());
    assert.ok(mostBytes <= MAX_READ_MANY_BYTES, `${mostBytes} bytes of data asked for at once`);
    host.close();
  });
});

describe("an item's data", () => {
  /** Where the database keeps an item's data: in its record, in the `data` store, or both (wrongly). */
  async function kept(factory: IDBFactory, storageKey: string): Promise<{ inRecord: boolean; inStore: boolean }> {
    const db = await new Promise<IDBDatabase>((resolve, reject) => {
      const opening = factory.open(DATABASE_NAME);
      opening.onsuccess = () => resolve(opening.result);
      opening.onerror = () => reject(opening.error);
    });
    const tx = db.transaction([ITEMS, DATA], "readonly");
    const get = (store: string) => new Promise<unknown>((resolve) => (tx.objectStore(store).get(storageKey).onsuccess = (e) => resolve((e.target as IDBRequest).result)));
    const [record, stored] = await Promise.all([get(ITEMS), get(DATA)]);
    db.close();
    return { inRecord: (record as { data?: string } | undefined)?.data !== undefined, inStore: stored !== undefined };
  }

  it("is kept in the item's record up to MAX_INLINE_DATA_BYTES and in the data store past it, once, as it grows and shrinks", async () => {
    const factory = new IDBFactory();
    const host = new IdbHost({ indexedDB: factory });
    // A string's JSON text is its characters and two quotes.
    const [small, large] = ["s".repeat(MAX_INLINE_DATA_BYTES - 2), "l".repeat(MAX_INLINE_DATA_BYTES - 1)];
    const key = (turn: string) => `conv_d_task0001_${turn}`;
    const steps: Array<[string, object, string, { inRecord: boolean; inStore: boolean }]> = [
      ["a small write", write("conv_d", "turn0001", small), small, { inRecord: true, inStore: false }],
      ["a large write", write("conv_d", "turn0002", large), large, { inRecord: false, inStore: true }],
      ["a small item rewritten large", write("conv_d", "turn0001", large), large, { inRecord: false, inStore: true }],
      ["a large item rewritten small", write("conv_d", "turn0001", small), small, { inRecord: true, inStore: false }],
      ["a small item updated large", { op: "update", sessionId: "conv_d", storageKey: key("turn0001"), data: large }, large, { inRecord: false, inStore: true }],
      ["a large item updated small", { op: "update", sessionId: "conv_d", storageKey: key("turn0001"), data: "x" }, "x", { inRecord: true, inStore: false }],
      ["a small item appended past the bound", { op: "append", sessionId: "conv_d", storageKey: key("turn0001"), data: large }, `x${large}`, { inRecord: false, inStore: true }],
      ["a large item's description updated", { op: "update", sessionId: "conv_d", storageKey: key("turn0001"), description: "d" }, `x${large}`, { inRecord: false, inStore: true }],
    ];
    for (const [n, [what, request, data, where]] of steps.entries()) {
      const reply = await call(host, { id: n, ...request });
      assert.equal(reply.ok, true, `${what}: ${JSON.stringify(reply.error)}`);
      const storageKey = "storageKey" in request ? String(request.storageKey) : reply.result.storageKey;
      assert.deepEqual(await kept(factory, storageKey), where, what);
      const read = await call(host, { id: n, op: "read", sessionId: "conv_d", storageKey });
      assert.equal(read.result.item.data, data, what);
    }
    // Search reads the data wherever it is.
    assert.equal((await call(host, write("conv_d", "turn0003", `${small.slice(9)} needle`))).ok, true);
    const found = await call(host, { id: 20, op: "search", sessionId: "conv_d", query: "needle" });
    assert.deepEqual(found.result.matches.map((match: { storageKey: string }) => match.storageKey), [key("turn0003")]);
    const foundLarge = await call(host, { id: 20, op: "search", sessionId: "conv_d", query: "lll" });
    assert.deepEqual(foundLarge.result.matches.map((match: { storageKey: string }) => match.storageKey).sort(), [key("turn0001"), key("turn0002")]);
    assert.equal((await call(host, { id: 21, op: "delete", sessionId: "conv_d", storageKey: key("turn0001") })).ok, true);
    assert.deepEqual(await kept(factory, key("turn0001")), { inRecord: false, inStore: false });
    host.close();
  });
});

describe("the host's other promises", () => {
  it("generates ids from its random source, and gives up on a key that stays taken", async () => {
    let draws = 0;
    const host = new IdbHost({
      indexedDB: new IDBFactory(),
      random: (bytes) => {
        draws++;
        bytes.fill(0);
      },
    });
    const first = await call(host, { id: 1, op: "write", sessionId: "conv_g", data: 1, description: "d" });
    assert.equal(first.result.storageKey, "conv_g_aaaaaaaa_aaaaaaaa");
    const second = await call(host, { id: 2, op: "write", sessionId: "conv_g", data: 2, description: "d" });
    assert.equal(second.error.code, "StorageUnavailableError");
    assert.match(second.error.message, /no free storage key could be generated/);
    // The first write's two ids; the second's, added on the guess that they are free (IndexedDB refuses the add);
    // then, careful, 16 draws of two that all find the key taken.
    assert.equal(draws, 2 + 2 + 16 * 2);
  });

  it("measures a large write's data in bytes of UTF-8 whether its request was counted as ASCII or not", async () => {
    // Over a third of the request limit in UTF-16 units, so the request itself is counted first (host.ts #prepare).
    const units = Math.ceil(MAX_REQUEST_BYTES / 3) + 10;
    const host = new IdbHost({ indexedDB: new IDBFactory() });
    for (const [text, bytes] of [
      ["a".repeat(units), units + 2],
      [`${"a".repeat(units - 1)}é`, units + 3],
      [`${"é".repeat(1_000_000)}${"a".repeat(units - 1_000_000)}`, units + 1_000_000 + 2],
    ] as const) {
      const written = await call(host, { id: 1, op: "write", sessionId: "conv_m", data: text, description: "large" });
      assert.equal(written.result.dataSize, bytes);
      const appended = await call(host, { id: 2, op: "append", sessionId: "conv_m", storageKey: written.result.storageKey, data: "é" });
      assert.equal(appended.result.dataSize, bytes + 2);
      const updated = await call(host, { id: 3, op: "update", sessionId: "conv_m", storageKey: written.result.storageKey, data: text });
      assert.equal(updated.result.dataSize, bytes);
    }
    host.close();
  });

  it("a generated key found taken is drawn again, and the write lands under a free one", async () => {
    let draws = 0;
    const host = new IdbHost({
      indexedDB: new IDBFactory(),
      // Zeros for the first write's ids and the second's guess, and again for its first careful draw; then ones.
      random: (bytes) => void bytes.fill(draws++ < 6 ? 0 : 1),
    });
    const first = await call(host, { id: 1, op: "write", sessionId: "conv_g", data: 1, description: "d" });
    const second = await call(host, { id: 2, op: "write", sessionId: "conv_g", data: 2, description: "d" });
    assert.equal(first.result.storageKey, "conv_g_aaaaaaaa_aaaaaaaa");
    assert.equal(second.result.storageKey, "conv_g_bbbbbbbb_bbbbbbbb");
    const listed = await call(host, { id: 3, op: "list", sessionId: "conv_g" });
    assert.equal(listed.result.items.length, 2, "neither write replaced the other");
  });

  it("answers request objects as their JSON text, and opens its database again after close()", async () => {
    const host = new IdbHost({ indexedDB: new IDBFactory() });
    const request = { id: "w", op: "write", sessionId: "conv_c", taskId: "task0001", turnId: "turn0001", data: { a: [1] }, description: "d" };
    const text = await host.handle(request);
    host.close();
    const again = await host.handleText(JSON.stringify(request));
    assert.equal(again.replace(/"timestamp":\d+/, ""), text.replace(/"timestamp":\d+/, ""));
    const read = await call(host, { id: "r", op: "read", sessionId: "conv_c", storageKey: "conv_c_task0001_turn0001" });
    assert.deepEqual(read.result.item.data, { a: [1] });
  });

  it("opens its database again after another context deleted it", async () => {
    const factory = new IDBFactory();
    const host = new IdbHost({ indexedDB: factory, databaseName: "cache" });
    assert.ok((await call(host, write("conv_v", "turn0001", 1))).ok);
    // The open connection lets the deletion through (versionchange) instead of blocking it.
    await new Promise<void>((resolve, reject) => {
      const deleting = factory.deleteDatabase("cache");
      deleting.onsuccess = () => resolve();
      deleting.onerror = () => reject(deleting.error ?? new Error("delete failed"));
      deleting.onblocked = () => reject(new Error("the deletion was blocked by IdbHost's connection"));
    });
    assert.ok((await call(host, write("conv_v", "turn0002", 2))).ok);
    assert.equal((await call(host, { id: 1, op: "stats", sessionId: "conv_v" })).result.itemCount, 1);
  });

  it("answers hello as the shim whose version it reports", async () => {
    const hello = await call(new IdbHost({ indexedDB: new IDBFactory() }), { id: 1, op: "hello", encodings: ["gzip"] });
    const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string };
    assert.equal(hello.result.hostVersion, pkg.version);
    assert.equal(IDB_HOST_VERSION, pkg.version);
    assert.equal(hello.result.backend, "indexeddb");
    assert.equal(hello.result.encoding, "gzip");
  });

  it("says why when the browser refuses IndexedDB, and still shakes hands", async () => {
    const refusing = {
      open() {
        throw new DOMException("The user denied permission to access the database.", "SecurityError");
      },
    } as unknown as IDBFactory;
    const host = new IdbHost({ indexedDB: refusing, databaseName: "cache" });
    assert.equal((await call(host, { id: 1, op: "hello" })).result.backend, "indexeddb");
    const written = await call(host, { id: 2, op: "write", sessionId: "conv_u", data: 1, description: "d" });
    assert.equal(written.error.code, "StorageUnavailableError");
    assert.equal(
      written.error.message,
      "the cache store is unavailable: IndexedDB database cache can't be opened (SecurityError: The user denied permission to access the database.)",
    );
    // Field checks come first, as in the host: a bad key is reported even though there is no store.
    assert.equal((await call(host, { id: 3, op: "read", sessionId: "conv_u", storageKey: "bad" })).error.code, "InvalidKeyFormatError");
    await assert.rejects(host.maintain(), { code: "StorageUnavailableError" });
  });

  it("answers requests in the order they came, however long each takes", async () => {
    const host = new IdbHost({ indexedDB: new IDBFactory() });
    const big = "y".repeat(3_000_000);
    const replies = await Promise.all([
      call(host, write("conv_o", "turn0001", big)),
      call(host, { id: "r", op: "read", sessionId: "conv_o", storageKey: "conv_o_task0001_turn0001", maxBytes: 16 }),
      call(host, { id: "d", op: "delete", sessionId: "conv_o", storageKey: "conv_o_task0001_turn0001" }),
      call(host, { id: "s", op: "stats", sessionId: "conv_o" }),
    ]);
    assert.deepEqual(
      replies.map((reply) => reply.ok),
      [true, true, true, true],
    );
    assert.equal(replies[1]?.result.item.data, "yyyyyyyyyyyyyy");
    assert.equal(replies[3]?.result.itemCount, 0);
  });
});

describe("behind InProcessBackend", () => {
  it("gives the typed results and typed errors every backend gives", async () => {
    const backend = new InProcessBackend(new IdbHost({ indexedDB: new IDBFactory() }), "indexeddb");
    const hello = await backend.hello();
    assert.equal(hello.protocolVersion, 1);
    const written = await backend.write({ sessionId: "conv_b", taskId: "task0001", turnId: "turn0001", data: { emails: ["a", "b"] }, description: "two" });
    assert.equal(written.shape, "object{emails}");
    const item = await backend.read({ sessionId: "conv_b", storageKey: written.storageKey, pointer: "/emails/1" });
    assert.equal(item.data, "b");
    const page = await backend.list({ sessionId: "conv_b" });
    assert.deepEqual([page.itemCount, page.items[0]?.storageKey], [1, written.storageKey]);
    await assert.rejects(backend.read({ sessionId: "conv_b", storageKey: "conv_b_task0001_turn0009" }), ItemNotFoundError);
    await backend.write({ sessionId: "conv_b", data: "x".repeat(MAX_ITEM_BYTES - 2), description: "big" });
    await assert.rejects(
      Promise.all(Array.from({ length: 10 }, () => backend.write({ sessionId: "conv_b", data: "x".repeat(MAX_ITEM_BYTES - 2), description: "big" }))),
      (error: unknown) => error instanceof QuotaExceededError && error.limit === SESSION_QUOTA_BYTES,
    );
    backend.close();
  });
});
