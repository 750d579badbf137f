// The benchmarks' work as the demo's service worker does it, shared by the Chromium bench (chromium.bench.mjs) and
// the profiler (profile.mjs): defineBenchmarks is sent to the worker as source text and run there, where it defines
// globalThis.bench (each benchmark's setup, timed run, untimed undo and clean-up), globalThis.timeRounds (the
// bench's interleaved rounds) and globalThis.stepwise (one run at a time, for the profiler). The floors here are
// plain IndexedDB and plain JavaScript written for the bench: they share no code with the shim.

/**
 * Runs in the service worker, sent there as source text alone (by Playwright's evaluate or the DevTools
 * protocol's Runtime.evaluate), so it uses nothing from this module's scope: defines globalThis.bench,
 * timeRounds and stepwise.
 */
export function defineBenchmarks() {
  const randomText = (bytes) => {
    const alphabet = "abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,";
    const random = crypto.getRandomValues(new Uint8Array(Math.min(bytes, 65536)));
    const parts = [];
    for (let done = 0; done < bytes; done += 65536) {
      crypto.getRandomValues(random);
      let part = "";
      for (let i = 0; i < Math.min(65536, bytes - done); i++) part += alphabet[random[i] % alphabet.length];
      parts.push(part);
    }
    return parts.join("");
  };
  // The caches the rows compare, behind the same API, each made as an extension makes it:
  // - host: the demo's own, createLlmCache(), which routes each session and goes to the installed host here;
  // - indexeddb: one that only ever uses the IndexedDB backend, at its default durability (relaxed);
  // - hostAlone: createLlmCache({ fallback: false }), the host with no route to keep;
  // - routedNoHost: createLlmCache() naming a host that isn't installed, so that it routes every session to its
  //   IndexedDB fallback, as the default cache does in a browser without the host;
  // - indexeddbStrict: the IndexedDB backend alone, committing with durability "strict".
  // Made on first use, so that a run of one group makes only the caches it times. The two backends alone have a
  // database each, as the floors do: in one database the caches, taking turns round by round, would hand the
  // backend's writer lease (backends/indexeddb/writer.ts) to each other at every row, as two contexts of an
  // extension that write by turns do, and one extension's cache doesn't.
  const makers = {
    host: () => globalThis.llmCache.client,
    indexeddb: () => inBrowserOnly("bench-indexeddb", "relaxed"),
    hostAlone: () => globalThis.llmCache.createLlmCache({ fallback: false }).client,
    routedNoHost: () => globalThis.llmCache.createLlmCache({ hostName: "com.browserx.absent_bench" }).client,
    indexeddbStrict: () => inBrowserOnly("bench-indexeddb-strict", "strict"),
  };
  const inBrowserOnly = (databaseName, durability) =>
    globalThis.llmCache.createLlmCache({ backend: "indexeddb", indexedDb: () => new globalThis.llmCache.IndexedDbBackend({ databaseName, durability }) })
      .client;
  const clients = {};
  const client = (backend = "host") => (clients[backend] ??= makers[backend]());
  globalThis.servingBackend = async (backend) => (await client(backend).status()).backend;
  // Which backend serves each of the named caches, for the bench's check before it times them.
  globalThis.servingEach = async (names) => Object.fromEntries(await Promise.all(names.map(async (name) => [name, (await client(name).status()).backend])));
  globalThis.servingBackends = async () => ({ host: (await client("host").status()).backend, indexeddb: (await client("indexeddb").status()).backend });
  const request = (port, message) =>
    new Promise((resolve) => {
      const listener = (reply) => {
        if (reply.id !== message.id) return;
        port.onMessage.removeListener(listener);
        resolve(reply);
      };
      port.onMessage.addListener(listener);
      port.postMessage(message);
    });
  const idb = (name, upgrade) =>
    new Promise((resolve, reject) => {
      const open = indexedDB.open(name, 1);
      open.onupgradeneeded = () => upgrade(open.result);
      open.onsuccess = () => resolve(open.result);
      open.onerror = () => reject(open.error);
    });
  const done = (transaction) =>
    new Promise((resolve, reject) => {
      transaction.oncomplete = resolve;
      transaction.onerror = () => reject(transaction.error);
    });
  const result = (req) =>
    new Promise((resolve, reject) => {
      req.onsuccess = () => resolve(req.result);
      req.onerror = () => reject(req.error);
    });
  const words = ["the", "budget", "for", "quarter", "meeting", "invoice", "numbers", "Friday", "please", "review", "team", "offsite", "contract", "renewal", "customer", "escalation", "hiring", "plan", "agenda", "we", "need", "a", "decision", "this", "week"];
  const proseText = (bytes) => {
    const random = crypto.getRandomValues(new Uint8Array(65536));
    let text = "";
    for (let i = 0; text.length < bytes; i++) text += words[random[i % random.length] % words.length] + (random[i % random.length] % 13 === 0 ? ". " : " ");
    return text.slice(0, bytes);
  };
  const summary = (n) => `Summary ${n}: ${randomText(780)}`;
  // How many single calls one run of the single-call rows makes, one after another (their labels in
  // chromium.bench.mjs say so too). A call takes 0.2 to 0.8 ms, and a worker's clock ticks in steps of 0.1 ms: a run
  // of 10 reads (2 ms) moved its ratio by 0.05 a tick, so a run makes 50.
  const SINGLE_CALLS = 50;
  // A full session's items: 10 of 5 MB less 1 KB each, just under the 50 MB quota (52,428,800 bytes).
  const sessionItemBytes = 5 * 1024 * 1024 - 1024;
  // The search rows' query and the text it is found in: random text with the query's words planted near its end,
  // so that finding them takes a pass over nearly the whole item, for the backend and its floor alike.
  const searchQuery = "quarterly invoice";
  const searchText = () => {
    const planted = ` ${searchQuery} `;
    const tail = 2000;
    return randomText(sessionItemBytes - planted.length - tail) + planted + randomText(tail);
  };
  // What each append adds, and the length of the item it is added to: the largest string item (5 MiB of JSON
  // text, quotes included) less a kilobyte and what `runs` appends add, so that it stays under 5 MiB to the end.
  const appendText = " and one more line of the running summary, appended by the bench.";
  const appendBase = (runs) => 5 * 1024 * 1024 - 2 - 1024 - runs * appendText.length;
  const bigRecords = () => ({ emails: Array.from({ length: 1200 }, (_, n) => ({ n, subject: `Subject ${n}`, body: randomText(4300) })) });

  // The spec's IndexedDB design: a `sessions` store and a `cache_items` store with a `by_session` index.
  const specDb = (name) =>
    idb(name, (db) => {
      db.createObjectStore("sessions", { keyPath: "sessionId" });
      db.createObjectStore("cache_items", { keyPath: "storageKey" }).createIndex("by_session", "sessionId");
    });
  const specKey = (sessionId, n) => `${sessionId}_task0000_${String(n).padStart(8, "0")}`;
  // The spec's session end: its items found by the `by_session` index and deleted, and its record, in one
  // transaction at `durability` (the browser's default when left out).
  const specEndSession = async (db, sessionId, durability) => {
    const end = db.transaction(["cache_items", "sessions"], "readwrite", durability ? { durability } : undefined);
    const cursor = end.objectStore("cache_items").index("by_session").openKeyCursor(IDBKeyRange.only(sessionId));
    cursor.onsuccess = () => {
      if (!cursor.result) return;
      end.objectStore("cache_items").delete(cursor.result.primaryKey);
      cursor.result.continue();
    };
    end.objectStore("sessions").delete(sessionId);
    await done(end);
  };

  // The reply to a read of `bytes` of prose as it crosses Chrome's transport to a client that asked for compressed
  // replies: its encoding and the length of its JSON text. A port of its own, so that nothing decodes it first.
  globalThis.compressedReply = async (bytes) => {
    const port = chrome.runtime.connectNative("com.browserx.llm_cache");
    try {
      await request(port, { id: 1, op: "hello", encodings: ["gzip"] });
      const sessionId = "conv_bench-wire";
      const written = await request(port, { id: 2, op: "write", sessionId, data: proseText(bytes), description: "wire" });
      const reply = await request(port, { id: 3, op: "read", sessionId, storageKey: written.result.storageKey });
      await request(port, { id: 4, op: "endSession", sessionId });
      return { encoding: reply.encoding ?? "plain", bytes: JSON.stringify(reply).length };
    } finally {
      port.disconnect();
    }
  };

  // Prepares each benchmark of `list` ({name, arg}), then times `runs` rounds of one run of each, every other
  // round in reverse order; returns one array of times per benchmark.
  globalThis.timeRounds = async (list, runs) => {
    const prepared = [];
    try {
      for (const { name, arg } of list) prepared.push(await globalThis.bench[name](arg));
      const times = list.map(() => []);
      for (let run = 0; run < runs; run++) {
        const order = run % 2 ? [...prepared.keys()].reverse() : [...prepared.keys()];
        for (const i of order) {
          const start = performance.now();
          const value = await prepared[i].run(run);
          times[i].push(performance.now() - start);
          await prepared[i].after?.(value, run);
        }
      }
      return times;
    } finally {
      for (const { close } of prepared) await close?.();
    }
  };

  // The profiler's way through one benchmark: prepare it, then run(n) and after(n) as separate calls, so that the
  // profiler can be started and stopped around each timed run alone. run(n) returns its wall time in ms. Each run
  // is bracketed by two milliseconds of profilerStartMark and of profilerEndMark, outside the timed part, which the
  // profiler finds in its samples to keep only those of the run itself (not the DevTools round trips that start
  // and stop it). Two marks, so that either side can be cut when a loaded machine's sampler misses the other.
  const busy = (ms) => {
    const until = performance.now() + ms;
    while (performance.now() < until);
  };
  const profilerStartMark = () => busy(2);
  const profilerEndMark = () => busy(2);
  let current;
  globalThis.stepwise = {
    async prepare(name, arg) {
      current = { prepared: await globalThis.bench[name](arg), value: undefined };
    },
    async run(run) {
      profilerStartMark();
      const start = performance.now();
      current.value = await current.prepared.run(run);
      const wall = performance.now() - start;
      profilerEndMark();
      return wall;
    },
    async after(run) {
      await current.prepared.after?.(current.value, run);
    },
    async close() {
      await current?.prepared.close?.();
      current = undefined;
    },
  };

  // Each benchmark sets up its data and returns {run, after?, close?}: run(n) is the nth timed run, after(value,
  // n) undoes it untimed where it must, close() cleans up once at the end.
  globalThis.bench = {
    // The benchmarks named cache… take `backend`, "host" or "indexeddb", and put it in their session ids, so that
    // the demo's cache, whose endSession reaches its fallback too, never ends the other cache's session.
    async cacheWrite({ bytes, backend }) {
      const sessionId = `conv_bench-${backend}-w`;
      const text = randomText(bytes);
      return {
        run: () => client(backend).write({ sessionId, data: text, description: "bench" }),
        // The session quota is 50 MB: each item goes before the next is written.
        after: (item) => client(backend).delete({ sessionId, storageKey: item.storageKey }),
        close: () => client(backend).endSession(sessionId),
      };
    },
    async cacheRead({ bytes, prose, backend }) {
      const sessionId = `conv_bench-${backend}-r${prose ? "-prose" : ""}`;
      const data = prose ? proseText(bytes) : randomText(bytes);
      const item = await client(backend).write({ sessionId, data, description: "bench" });
      return {
        run: () => client(backend).read({ sessionId, storageKey: item.storageKey }),
        close: () => client(backend).endSession(sessionId),
      };
    },
    async transportWrite({ bytes, host }) {
      const port = chrome.runtime.connectNative(host);
      const text = randomText(bytes);
      await request(port, { id: 0 });
      return { run: (run) => request(port, { id: run + 1, data: text }), close: () => port.disconnect() };
    },
    async transportRead({ bytes, host }) {
      const port = chrome.runtime.connectNative(host);
      await request(port, { id: 0 });
      // Chrome takes at most 1 MiB from a host in one message: the floor is one frame just under it.
      const reply = Math.min(bytes, 1024 * 1024 - 64);
      return { run: (run) => request(port, { id: run + 1, reply }), close: () => port.disconnect() };
    },
    async idbWrite({ bytes, durability }) {
      const db = await idb(`bench-w-${durability}`, (db) => db.createObjectStore("items"));
      const text = randomText(bytes);
      return {
        async run(run) {
          const tx = db.transaction("items", "readwrite", { durability });
          tx.objectStore("items").put(text, run);
          await done(tx);
        },
        // Each record goes before the next is written, as the cache's item does in cacheWrite, so that the store
        // stays as small for the floor as for the backend it is the floor of.
        async after(_, run) {
          const tx = db.transaction("items", "readwrite");
          tx.objectStore("items").delete(run);
          await done(tx);
        },
        close: () => db.close(),
      };
    },
    async idbRead({ bytes }) {
      const db = await idb("bench-r", (db) => db.createObjectStore("items"));
      const tx = db.transaction("items", "readwrite");
      tx.objectStore("items").put(randomText(bytes), 1);
      await done(tx);
      return { run: () => result(db.transaction("items").objectStore("items").get(1)), close: () => db.close() };
    },
    async storageWrite({ bytes }) {
      const text = randomText(bytes);
      return { run: () => chrome.storage.local.set({ bench: text }), close: () => chrome.storage.local.remove("bench") };
    },
    async storageRead({ bytes }) {
      await chrome.storage.local.set({ bench: randomText(bytes) });
      return { run: () => chrome.storage.local.get("bench"), close: () => chrome.storage.local.remove("bench") };
    },
    async nativeReadMany() {
      const keys = [];
      for (let n = 0; n < 10; n++) keys.push((await client().write({ sessionId: "conv_bench-m", data: summary(n), description: "s" })).storageKey);
      return {
        run: () => client().readMany({ sessionId: "conv_bench-m", storageKeys: keys }),
        close: () => client().endSession("conv_bench-m"),
      };
    },
    async nativeReadTen() {
      const keys = [];
      for (let n = 0; n < 10; n++) keys.push((await client().write({ sessionId: "conv_bench-t", data: summary(n), description: "s" })).storageKey);
      return {
        run: () => Promise.all(keys.map((storageKey) => client().read({ sessionId: "conv_bench-t", storageKey }))),
        close: () => client().endSession("conv_bench-t"),
      };
    },
    async cacheField({ backend }) {
      const sessionId = `conv_bench-${backend}-f`;
      const item = await client(backend).write({ sessionId, data: bigRecords(), description: "5 MB of emails" });
      return {
        run: (run) => client(backend).read({ sessionId, storageKey: item.storageKey, pointer: `/emails/${(run * 37) % 1200}/subject` }),
        close: () => client(backend).endSession(sessionId),
      };
    },
    async idbField() {
      const db = await idb("bench-f", (db) => db.createObjectStore("items"));
      const tx = db.transaction("items", "readwrite");
      tx.objectStore("items").put(bigRecords(), 1);
      await done(tx);
      return {
        async run(run) {
          const value = await result(db.transaction("items").objectStore("items").get(1));
          return value.emails[(run * 37) % 1200].subject;
        },
        close: () => db.close(),
      };
    },
    // The spec's scenario: cache 50 summaries, list them, read 10 back, end the session.
    async cacheWorkflow({ backend }) {
      const summaries = Array.from({ length: 50 }, (_, n) => summary(n));
      const cache = client(backend);
      return {
        async run(run) {
          const sessionId = `conv_bench-${backend}-flow-${run}`;
          const keys = await Promise.all(summaries.map((data, n) => cache.write({ sessionId, data, description: `Summary of email ${n}/50` })));
          await cache.list({ sessionId, limit: 50 });
          await cache.readMany({ sessionId, storageKeys: keys.slice(0, 10).map((item) => item.storageKey) });
          await cache.endSession(sessionId);
        },
      };
    },
    // The same workflow as an agent makes it: each write awaited before the next, then the list, the reads and
    // the end.
    async cacheWorkflowOneByOne({ backend }) {
      const summaries = Array.from({ length: 50 }, (_, n) => summary(n));
      const cache = client(backend);
      return {
        async run(run) {
          const sessionId = `conv_bench-${backend}-step-${run}`;
          const keys = [];
          for (let n = 0; n < 50; n++) keys.push((await cache.write({ sessionId, data: summaries[n], description: `Summary of email ${n}/50` })).storageKey);
          await cache.list({ sessionId, limit: 50 });
          await cache.readMany({ sessionId, storageKeys: keys.slice(0, 10) });
          await cache.endSession(sessionId);
        },
      };
    },
    // Single reads of one summary from a session that holds it: SINGLE_CALLS of them a run, each awaited, so
    // that a run lasts long enough for the clock's resolution.
    async cacheReadOne({ backend }) {
      const sessionId = `conv_bench-${backend}-one-r`;
      const item = await client(backend).write({ sessionId, data: summary(0), description: "one" });
      return {
        async run() {
          for (let n = 0; n < SINGLE_CALLS; n++) await client(backend).read({ sessionId, storageKey: item.storageKey });
        },
        close: () => client(backend).endSession(sessionId),
      };
    },
    // Single writes of one summary to a session that holds one already (so none is its first write): SINGLE_CALLS
    // a run, each awaited, and deleted untimed after it.
    async cacheWriteOne({ backend }) {
      const sessionId = `conv_bench-${backend}-one-w`;
      const data = summary(1);
      await client(backend).write({ sessionId, data: summary(0), description: "first" });
      return {
        async run() {
          const keys = [];
          for (let n = 0; n < SINGLE_CALLS; n++) keys.push((await client(backend).write({ sessionId, data, description: "one" })).storageKey);
          return keys;
        },
        after: (keys) => Promise.all(keys.map((storageKey) => client(backend).delete({ sessionId, storageKey }))),
        close: () => client(backend).endSession(sessionId),
      };
    },
    // The spec's design, its writes one by one as the spec does them; `durability` is its transactions', the
    // browser's default (relaxed in Chromium since 121) when left out, as the spec leaves it.
    async idbWorkflow({ durability } = {}) {
      const db = await specDb(`bench-flow-${durability ?? "default"}`);
      const summaries = Array.from({ length: 50 }, (_, n) => summary(n));
      return {
        async run(run) {
          const sessionId = `conv_bench-flow-${run}`;
          const keys = [];
          for (let n = 0; n < 50; n++) {
            // Each write as the spec's design does it: the item and the session's totals in one transaction.
            const tx = db.transaction(["cache_items", "sessions"], "readwrite", durability ? { durability } : undefined);
            const storageKey = specKey(sessionId, n);
            tx.objectStore("cache_items").put({ storageKey, sessionId, data: summaries[n], description: `Summary of email ${n}/50`, timestamp: Date.now() });
            tx.objectStore("sessions").put({ sessionId, itemCount: n + 1, totalSize: (n + 1) * 800 });
            await done(tx);
            keys.push(storageKey);
          }
          const list = db.transaction("cache_items").objectStore("cache_items").index("by_session");
          const items = await result(list.getAll(sessionId));
          items.map(({ storageKey, description, timestamp }) => ({ storageKey, description, timestamp }));
          const reads = db.transaction("cache_items").objectStore("cache_items");
          await Promise.all(keys.slice(0, 10).map((key) => result(reads.get(key))));
          await specEndSession(db, sessionId, durability);
        },
        close: () => db.close(),
      };
    },
    // The spec's design whole, as ../shared/spec/cache-data-model.md gives it, where idbWorkflow leaves parts out:
    // both indexes of `cache_items` (`by_session`, `by_session_timestamp`) and every field of its records; each
    // write's data serialized to JSON and its size counted, its session's quota checked from a Map read once
    // ("Lazy-load session quotas"); `list` ordered newest first; each read a call of its own ("Read operations
    // are individual"), which also updates `sessions.lastAccessedAt` ("Read Operation Flow"), each awaited as an
    // agent awaits its calls; the end as idbWorkflow's.
    async idbWorkflowWhole({ durability } = {}) {
      const db = await idb(`bench-flow-whole-${durability ?? "default"}`, (db) => {
        db.createObjectStore("sessions", { keyPath: "sessionId" });
        const items = db.createObjectStore("cache_items", { keyPath: "storageKey" });
        items.createIndex("by_session", "sessionId");
        items.createIndex("by_session_timestamp", ["sessionId", "timestamp"]);
      });
      const options = durability ? { durability } : undefined;
      const summaries = Array.from({ length: 50 }, (_, n) => summary(n));
      const utf8 = new TextEncoder();
      const quotas = new Map();
      return {
        async run(run) {
          const sessionId = `conv_bench-whole-${run}`;
          const keys = [];
          for (let n = 0; n < 50; n++) {
            const data = JSON.stringify(summaries[n]);
            const dataSize = utf8.encode(data).length;
            const tx = db.transaction(["cache_items", "sessions"], "readwrite", options);
            let session = quotas.get(sessionId);
            if (session === undefined) {
              const now = Date.now();
              session = (await result(tx.objectStore("sessions").get(sessionId))) ?? { sessionId, totalSize: 0, itemCount: 0, createdAt: now, lastAccessedAt: now };
            }
            if (session.totalSize + dataSize > 52428800) throw new Error("QuotaExceededError");
            const [taskId, turnId] = ["task0000", String(n).padStart(8, "0")];
            const storageKey = `${sessionId}_${taskId}_${turnId}`;
            const timestamp = Date.now();
            tx.objectStore("cache_items").put({ storageKey, data, description: `Summary of email ${n}/50`, timestamp, dataSize, sessionId, taskId, turnId });
            session = { ...session, totalSize: session.totalSize + dataSize, itemCount: session.itemCount + 1, lastAccessedAt: timestamp };
            tx.objectStore("sessions").put(session);
            await done(tx);
            quotas.set(sessionId, session);
            keys.push(storageKey);
          }
          const list = db.transaction("cache_items").objectStore("cache_items").index("by_session");
          const items = await result(list.getAll(sessionId));
          items.map(({ storageKey, description, timestamp, dataSize }) => ({ storageKey, description, timestamp, dataSize })).sort((a, b) => b.timestamp - a.timestamp);
          for (const key of keys.slice(0, 10)) {
            const tx = db.transaction(["cache_items", "sessions"], "readwrite", options);
            const [item, session] = await Promise.all([result(tx.objectStore("cache_items").get(key)), result(tx.objectStore("sessions").get(sessionId))]);
            if (item === undefined) throw new Error("ItemNotFoundError");
            tx.objectStore("sessions").put({ ...session, lastAccessedAt: Date.now() });
            await done(tx);
          }
          await specEndSession(db, sessionId, durability);
          quotas.delete(sessionId);
        },
        close: () => db.close(),
      };
    },
    // One page of a long list: 100 of 1,000 items' metadata, from a session of 1,000 items of 20 KB.
    async cacheList({ backend }) {
      const sessionId = `conv_bench-${backend}-list`;
      // Written 50 at a time, pipelined on the one port (on the IndexedDB backend, queued for its transactions).
      for (let n = 0; n < 1000; n += 50) {
        await Promise.all(
          Array.from({ length: 50 }, (_, i) => client(backend).write({ sessionId, data: randomText(20 * 1024), description: `Item ${n + i} of 1,000` })),
        );
      }
      return { run: () => client(backend).list({ sessionId, limit: 100 }), close: () => client(backend).endSession(sessionId) };
    },
    // Ending a full session: 10 items of 5 MB less 1 KB each, just under the 50 MB quota (52,428,800 bytes). Only
    // endSession is timed: the session is filled before the first run and again after each, one write at a time,
    // so that the worker holds one 5 MB message in flight rather than ten.
    async cacheEndSession({ backend }) {
      const sessionId = `conv_bench-${backend}-end`;
      const text = randomText(sessionItemBytes);
      const fill = async () => {
        for (let n = 0; n < 10; n++) await client(backend).write({ sessionId, data: text, description: `Item ${n} of 10` });
      };
      await fill();
      return { run: () => client(backend).endSession(sessionId), after: fill, close: () => client(backend).endSession(sessionId) };
    },
    // The floor of endSession: the same 10 records of 5 MB less 1 KB, filled untimed, and deleted by key range in
    // one read-write transaction at `durability`, the backend's.
    async idbEndSession({ durability }) {
      const db = await idb("bench-end", (db) => db.createObjectStore("items"));
      const text = randomText(sessionItemBytes);
      const fill = async () => {
        const tx = db.transaction("items", "readwrite");
        for (let n = 0; n < 10; n++) tx.objectStore("items").put(text, n);
        await done(tx);
      };
      await fill();
      return {
        async run() {
          const tx = db.transaction("items", "readwrite", { durability });
          tx.objectStore("items").delete(IDBKeyRange.bound(0, 9));
          await done(tx);
        },
        after: fill,
        async close() {
          const tx = db.transaction("items", "readwrite");
          tx.objectStore("items").clear();
          await done(tx);
          db.close();
        },
      };
    },
    // Searching a full session: 10 items of text of 5 MB less 1 KB, each holding the query's words near its end.
    async cacheSearch({ backend }) {
      const sessionId = `conv_bench-${backend}-search`;
      const text = searchText();
      // One write at a time, so that the worker holds one 5 MB message in flight rather than ten.
      for (let n = 0; n < 10; n++) await client(backend).write({ sessionId, data: text, description: `Item ${n} of 10` });
      return {
        run: () => client(backend).search({ sessionId, query: searchQuery }),
        close: () => client(backend).endSession(sessionId),
      };
    },
    // The floor of search: one read-only transaction gets the 10 strings, and indexOf finds each of the query's
    // words in each.
    async idbSearch() {
      const db = await idb("bench-search", (db) => db.createObjectStore("items"));
      const text = searchText();
      const fill = db.transaction("items", "readwrite");
      for (let n = 0; n < 10; n++) fill.objectStore("items").put(text, n);
      await done(fill);
      const words = searchQuery.split(" ");
      return {
        async run() {
          const store = db.transaction("items").objectStore("items");
          const values = await Promise.all(Array.from({ length: 10 }, (_, n) => result(store.get(n))));
          return values.filter((value) => words.every((word) => value.indexOf(word) >= 0)).length;
        },
        async close() {
          const tx = db.transaction("items", "readwrite");
          tx.objectStore("items").clear();
          await done(tx);
          db.close();
        },
      };
    },
    // Appending a short string to a string item of just under 5 MB; `runs` is the number of runs, which sets the
    // item's length so that it stays under the 5 MiB limit across them.
    async cacheAppend({ backend, runs }) {
      const sessionId = `conv_bench-${backend}-append`;
      const item = await client(backend).write({ sessionId, data: randomText(appendBase(runs)), description: "a running summary" });
      return {
        run: () => client(backend).append({ sessionId, storageKey: item.storageKey, data: appendText }),
        close: () => client(backend).endSession(sessionId),
      };
    },
    // The floor of append: one read-write transaction at `durability`, the backend's, gets the string and puts it
    // back with the text added.
    async idbAppend({ runs, durability }) {
      const db = await idb("bench-append", (db) => db.createObjectStore("items"));
      const fill = db.transaction("items", "readwrite");
      fill.objectStore("items").put(randomText(appendBase(runs)), 1);
      await done(fill);
      return {
        async run() {
          const tx = db.transaction("items", "readwrite", { durability });
          const store = tx.objectStore("items");
          const get = store.get(1);
          get.onsuccess = () => store.put(get.result + appendText, 1);
          await done(tx);
        },
        async close() {
          const tx = db.transaction("items", "readwrite");
          tx.objectStore("items").clear();
          await done(tx);
          db.close();
        },
      };
    },
    async idbList() {
      const db = await specDb("bench-list");
      const sessionId = "conv_bench-list";
      for (let n = 0; n < 1000; n += 50) {
        const tx = db.transaction(["cache_items", "sessions"], "readwrite");
        for (let i = n; i < n + 50; i++) {
          tx.objectStore("cache_items").put({ storageKey: specKey(sessionId, i), sessionId, data: randomText(20 * 1024), description: `Item ${i} of 1,000`, timestamp: Date.now() });
        }
        tx.objectStore("sessions").put({ sessionId, itemCount: n + 50, totalSize: (n + 50) * 20 * 1024 });
        await done(tx);
      }
      return {
        // The design's records hold the data, so a page reads 100 whole records through the index.
        async run() {
          const index = db.transaction("cache_items").objectStore("cache_items").index("by_session");
          const items = await result(index.getAll(IDBKeyRange.only(sessionId), 100));
          return items.map(({ storageKey, description, timestamp }) => ({ storageKey, description, timestamp }));
        },
        async close() {
          const tx = db.transaction(["cache_items", "sessions"], "readwrite");
          tx.objectStore("cache_items").clear();
          tx.objectStore("sessions").clear();
          await done(tx);
          db.close();
        },
      };
    },
  };
}
