// `npm run bench` (in e2e/): the cache as an extension sees it, in headless Chromium, against what the extension
// could use instead, all timed inside the demo's service worker with performance.now():
// - the native client (llmCache.client) talking to the installed llm-cache-host;
// - the shim's IndexedDB backend: the same calls on a cache made with createLlmCache({ backend: "indexeddb" }),
//   what an extension gets without the host, so each of its rows, beside the native client's, shows what
//   installing the host buys (writes and reads of 1 and 5 MB, a pointer read, the workflow, a list page, and
//   ending a 50 MB session);
// - Chrome's transport alone: the same messages to a host that only answers (bench/noop-host.mjs);
// - IndexedDB (durability "default" and "strict") and chrome.storage.local;
// - the spec's 50-summary workflow and a page of a 1,000-item list, on the host, on the IndexedDB backend and on
//   the spec's own IndexedDB design (`sessions` and `cache_items` stores, a `by_session` index).
// Data is random text (never repeated characters). Each figure is the median, min and max of RUNS runs (the
// endSession pair's of at most 10, as its label says), and the table goes to stdout for the README. Pairs
// compared by ratio run interleaved (one run of each per round), and their per-round ratios follow the table.
// Not part of the test command: it measures, and asserts nothing beyond each cache being on the backend its
// rows name.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { launchWithExtension } from "../lib/browser.mjs";
import { DEMO_GLOBAL, checkDemoExtension } from "../lib/demo-agent.mjs";
import { DEMO_EXTENSION_DIR, EXTENSION_ORIGIN, requireHostAndChromium } from "../lib/env.mjs";
import { createSandbox, installHost } from "../lib/sandbox.mjs";

const RUNS = Number(process.env.BENCH_RUNS || 20);
const NOOP_HOST = "com.browserx.noop_bench";

requireHostAndChromium();
checkDemoExtension();
const sandbox = createSandbox("bench");
installHost(sandbox);
// The no-op host, registered beside ours in the same profile.
const noop = path.join(path.dirname(fileURLToPath(import.meta.url)), "noop-host.mjs");
fs.chmodSync(noop, 0o755);
fs.writeFileSync(
  path.join(sandbox.profile, "NativeMessagingHosts", `${NOOP_HOST}.json`),
  JSON.stringify({ name: NOOP_HOST, description: "no-op", path: noop, type: "stdio", allowed_origins: [EXTENSION_ORIGIN] }),
);
const browser = await launchWithExtension(sandbox, DEMO_EXTENSION_DIR, { globalName: DEMO_GLOBAL });

const rows = [];
const ratios = [];
const spread = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  return [sorted[Math.floor(sorted.length / 2)], sorted[0], sorted[sorted.length - 1]];
};
try {
  await browser.run(defineBenchmarks, undefined, { what: "defining the benchmarks in the worker" });
  // Without a working host the demo's cache quietly serves from its in-browser fallback, and the "native
  // client" rows would time the IndexedDB backend twice: refuse to print such a table.
  const serving = await browser.run(() => globalThis.servingBackends(), undefined, { what: "asking each cache which backend serves" });
  if (serving.host !== "host" || serving.indexeddb !== "indexeddb") {
    throw new Error(`the caches are served by ${JSON.stringify(serving)}, not by the host and the IndexedDB backend: is the host installed?`);
  }
  // Times benchmarks [label, name, arg] in `runs` rounds of one run each (see timeRounds); returns their times.
  const rounds = async (benchmarks, runs = RUNS) => {
    const times = await browser.run(
      ({ list, runs }) => globalThis.timeRounds(list, runs),
      { list: benchmarks.map(([, name, arg]) => ({ name, arg })), runs },
      { timeoutMs: 600_000, what: benchmarks.map(([label]) => label).join(" and ") },
    );
    benchmarks.forEach(([label], i) => {
      const [median, min, max] = spread(times[i]);
      rows.push([label, median, min, max]);
      process.stderr.write(`${label}: ${median.toFixed(2)} ms\n`);
    });
    return times;
  };
  const measure = (label, name, arg) => rounds([[label, name, arg]]);
  // Two benchmarks interleaved, so that the machine's noise hits both alike, and their ratio round by round.
  // The first is compared with each of the others. compareIn takes the number of rounds; compare does RUNS.
  const compareIn = async (runs, a, ...others) => {
    const [timesA, ...timesOthers] = await rounds([a, ...others], runs);
    others.forEach((b, j) => ratios.push([a[0], b[0], timesA.map((time, i) => time / timesOthers[j][i])]));
  };
  const compare = (a, ...others) => compareIn(RUNS, a, ...others);
  // Each figure of the host has one of the IndexedDB backend beside it: the same benchmark, the same calls, on
  // the cache made with `backend: "indexeddb"`. Run interleaved, so their ratio is what installing the host buys.
  const host = { backend: "host" };
  const inBrowser = { backend: "indexeddb" };
  const bytes = 1024 * 1024;
  // The largest string the host takes as one item: 5 MiB of compact JSON, quotes included.
  const bytes5 = 5 * 1024 * 1024 - 2;
  await compare(
    ["write 1 MB: native client", "cacheWrite", { bytes, ...host }],
    ["write 1 MB: IndexedDB backend", "cacheWrite", { bytes, ...inBrowser }],
    ["write 1 MB: Chrome's transport alone", "transportWrite", { bytes, host: NOOP_HOST }],
  );
  await measure("write 1 MB: IndexedDB (durability default)", "idbWrite", { bytes, durability: "default" });
  await measure("write 1 MB: IndexedDB (durability strict)", "idbWrite", { bytes, durability: "strict" });
  await measure("write 1 MB: chrome.storage.local", "storageWrite", { bytes });
  await compare(
    ["read 1 MB of random characters: native client (sent plain: gzip can't shrink it)", "cacheRead", { bytes, ...host }],
    ["read 1 MB of random characters: IndexedDB backend", "cacheRead", { bytes, ...inBrowser }],
  );
  // The compressed reply to a read of 1 MB of this prose, measured as it crosses (its JSON text, base64 payload
  // and all): the transport's time for that many bytes is the floor of a compressed read, before compressing and
  // decoding.
  const wire = await browser.run((bytes) => globalThis.compressedReply(bytes), bytes, { what: "measuring the compressed reply" });
  process.stderr.write(`a read of 1 MB of prose crosses as ${wire.bytes} bytes, encoding ${wire.encoding}\n`);
  await compare(
    [`read 1 MB of prose: native client (sent ${wire.encoding})`, "cacheRead", { bytes, prose: true, ...host }],
    ["read 1 MB: Chrome's transport alone", "transportRead", { bytes, host: NOOP_HOST }],
    [`read ${Math.round(wire.bytes / 1000)} KB (the compressed reply's measured size): Chrome's transport alone`, "transportRead", { bytes: wire.bytes, host: NOOP_HOST }],
  );
  await measure("read 1 MB: IndexedDB", "idbRead", { bytes });
  await measure("read 1 MB: chrome.storage.local", "storageRead", { bytes });
  await compare(["write 5 MB: native client", "cacheWrite", { bytes: bytes5, ...host }], ["write 5 MB: IndexedDB backend", "cacheWrite", { bytes: bytes5, ...inBrowser }]);
  await measure("write 5 MB: IndexedDB (durability default)", "idbWrite", { bytes: bytes5, durability: "default" });
  await compare(["read 5 MB: native client", "cacheRead", { bytes: bytes5, ...host }], ["read 5 MB: IndexedDB backend", "cacheRead", { bytes: bytes5, ...inBrowser }]);
  await measure("read 5 MB: IndexedDB", "idbRead", { bytes: bytes5 });
  await measure("read 10 summaries: native client, one readMany", "nativeReadMany", {});
  await measure("read 10 summaries: native client, 10 reads", "nativeReadTen", {});
  await compare(
    ["one field of a 5 MB item: native client (pointer)", "cacheField", host],
    ["one field of a 5 MB item: IndexedDB backend (pointer)", "cacheField", inBrowser],
  );
  await measure("one field of a 5 MB item: IndexedDB (get, then pick)", "idbField", {});
  await compare(["50-summary workflow: native client", "cacheWorkflow", host], ["50-summary workflow: IndexedDB backend", "cacheWorkflow", inBrowser]);
  await measure("50-summary workflow: the spec's IndexedDB design", "idbWorkflow", {});
  await compare(
    ["list a page of 100 of 1,000 items of 20 KB: native client", "cacheList", host],
    ["list a page of 100 of 1,000 items of 20 KB: IndexedDB backend", "cacheList", inBrowser],
  );
  await measure("list a page of 100 of 1,000 items of 20 KB: the spec's IndexedDB design", "idbList", {});
  // Each run needs a full session again, and filling one (untimed) takes far longer than ending it: so fewer runs.
  const endRuns = Math.min(RUNS, 10);
  await compareIn(
    endRuns,
    [`endSession of a 50 MB session (10 items of 5 MB; ${endRuns} runs): native client`, "cacheEndSession", host],
    [`endSession of a 50 MB session (10 items of 5 MB; ${endRuns} runs): IndexedDB backend`, "cacheEndSession", inBrowser],
  );
} finally {
  await browser.close();
  await sandbox.cleanup();
}

const ms = (value) => (value < 10 ? value.toFixed(2) : value.toFixed(1));
console.log(`| ${RUNS} runs each, ms | median | min | max |`);
console.log("|---|---:|---:|---:|");
for (const [label, median, min, max] of rows) console.log(`| ${label} | ${ms(median)} | ${ms(min)} | ${ms(max)} |`);
console.log();
for (const [a, b, values] of ratios) {
  const [median, min, max] = spread(values).map((ratio) => ratio.toFixed(2));
  console.log(`ratio ${a} / ${b}: median of per-round ratios ${median} (min ${min}, max ${max})`);
}

/** Runs in the service worker (Playwright sends its source alone): defines globalThis.bench and timeRounds. */
function defineBenchmarks() {
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
  // The two caches the rows compare, behind the same API: the demo's own, whose client goes to the installed
  // host (its endSession also asks the in-browser fallback, which holds nothing here, as any extension's would),
  // and one that only ever uses the IndexedDB backend, as an extension does where the host isn't installed.
  const clients = { host: globalThis.llmCache.client, indexeddb: globalThis.llmCache.createLlmCache({ backend: "indexeddb" }).client };
  const client = (backend = "host") => clients[backend];
  globalThis.servingBackends = async () => ({ host: (await clients.host.status()).backend, indexeddb: (await clients.indexeddb.status()).backend });
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
  const bigRecords = () => ({ emails: Array.from({ length: 1200 }, (_, n) => ({ n, subject: `Subject ${n}`, body: randomText(4300) })) });

  // The spec's IndexedDB design: a `sessions` store and a `cache_items` store with a `by_session` index.
  const specDb = (name) =>
    idb(name, (db) => {
      db.createObjectStore("sessions", { keyPath: "sessionId" });
      db.createObjectStore("cache_items", { keyPath: "storageKey" }).createIndex("by_session", "sessionId");
    });
  const specKey = (sessionId, n) => `${sessionId}_task0000_${String(n).padStart(8, "0")}`;

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
    async idbWorkflow() {
      const db = await specDb("bench-flow");
      const summaries = Array.from({ length: 50 }, (_, n) => summary(n));
      return {
        async run(run) {
          const sessionId = `conv_bench-flow-${run}`;
          const keys = [];
          for (let n = 0; n < 50; n++) {
            // Each write as the spec's design does it: the item and the session's totals in one transaction.
            const tx = db.transaction(["cache_items", "sessions"], "readwrite");
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
          const end = db.transaction(["cache_items", "sessions"], "readwrite");
          const cursor = end.objectStore("cache_items").index("by_session").openKeyCursor(IDBKeyRange.only(sessionId));
          cursor.onsuccess = () => {
            if (!cursor.result) return;
            end.objectStore("cache_items").delete(cursor.result.primaryKey);
            cursor.result.continue();
          };
          end.objectStore("sessions").delete(sessionId);
          await done(end);
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
      const text = randomText(5 * 1024 * 1024 - 1024);
      const fill = async () => {
        for (let n = 0; n < 10; n++) await client(backend).write({ sessionId, data: text, description: `Item ${n} of 10` });
      };
      await fill();
      return { run: () => client(backend).endSession(sessionId), after: fill, close: () => client(backend).endSession(sessionId) };
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
