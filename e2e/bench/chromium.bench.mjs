// `npm run bench` (in e2e/): the cache as an extension sees it, in headless Chromium, against what the extension
// could use instead, all timed inside the demo's service worker with performance.now():
// - the native client (llmCache.client) talking to the installed llm-cache-host;
// - Chrome's transport alone: the same messages to a host that only answers (bench/noop-host.mjs);
// - IndexedDB (durability "default" and "strict") and chrome.storage.local;
// - the spec's 50-summary workflow, on the host and on the spec's own IndexedDB design (`sessions` and
//   `cache_items` stores, a `by_session` index).
// Data is random text (never repeated characters). Each figure is the median, min and max of RUNS runs, and
// the table goes to stdout for the README. Not part of the test command: it measures, it asserts nothing.
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
try {
  await browser.run(defineBenchmarks, undefined, { what: "defining the benchmarks in the worker" });
  const measure = async (label, name, arg) => {
    const times = await browser.run(({ name, arg }) => globalThis.bench[name](arg), { name, arg: { ...arg, runs: RUNS } }, {
      timeoutMs: 600_000,
      what: label,
    });
    times.sort((a, b) => a - b);
    rows.push([label, times[Math.floor(times.length / 2)], times[0], times[times.length - 1]]);
    process.stderr.write(`${label}: ${times[Math.floor(times.length / 2)].toFixed(2)} ms\n`);
  };
  const bytes = 1024 * 1024;
  await measure("write 1 MB: native client", "nativeWrite", { bytes });
  await measure("write 1 MB: Chrome's transport alone", "transportWrite", { bytes, host: NOOP_HOST });
  await measure("write 1 MB: IndexedDB (durability default)", "idbWrite", { bytes, durability: "default" });
  await measure("write 1 MB: IndexedDB (durability strict)", "idbWrite", { bytes, durability: "strict" });
  await measure("write 1 MB: chrome.storage.local", "storageWrite", { bytes });
  await measure("read 1 MB of random characters: native client (sent plain: gzip can't shrink it)", "nativeRead", { bytes });
  await measure("read 1 MB of prose: native client (sent gzipped)", "nativeRead", { bytes, prose: true });
  await measure("read 1 MB: Chrome's transport alone", "transportRead", { bytes, host: NOOP_HOST });
  await measure("read 1 MB: IndexedDB", "idbRead", { bytes });
  await measure("read 1 MB: chrome.storage.local", "storageRead", { bytes });
  await measure("read 10 summaries: native client, one readMany", "nativeReadMany", {});
  await measure("read 10 summaries: native client, 10 reads", "nativeReadTen", {});
  await measure("one field of a 5 MB item: native client (pointer)", "nativeField", {});
  await measure("one field of a 5 MB item: IndexedDB (get, then pick)", "idbField", {});
  await measure("50-summary workflow: native client", "nativeWorkflow", {});
  await measure("50-summary workflow: the spec's IndexedDB design", "idbWorkflow", {});
} finally {
  await browser.close();
  await sandbox.cleanup();
}

const ms = (value) => (value < 10 ? value.toFixed(2) : value.toFixed(1));
console.log(`| ${RUNS} runs each, ms | median | min | max |`);
console.log("|---|---:|---:|---:|");
for (const [label, median, min, max] of rows) console.log(`| ${label} | ${ms(median)} | ${ms(min)} | ${ms(max)} |`);

/** Runs in the service worker (Playwright sends its source alone): defines globalThis.bench. */
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
  const timed = async (runs, body) => {
    const times = [];
    for (let run = 0; run < runs; run++) {
      const start = performance.now();
      await body(run);
      times.push(performance.now() - start);
    }
    return times;
  };
  const client = () => globalThis.llmCache.client;
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

  globalThis.bench = {
    async nativeWrite({ bytes, runs }) {
      const text = randomText(bytes);
      const times = await timed(runs, () => client().write({ sessionId: "conv_bench-w", data: text, description: "bench" }));
      await client().endSession("conv_bench-w");
      return times;
    },
    async nativeRead({ bytes, prose, runs }) {
      const data = prose ? proseText(bytes) : randomText(bytes);
      const item = await client().write({ sessionId: "conv_bench-r", data, description: "bench" });
      const times = await timed(runs, () => client().read({ sessionId: "conv_bench-r", storageKey: item.storageKey }));
      await client().endSession("conv_bench-r");
      return times;
    },
    async transportWrite({ bytes, host, runs }) {
      const port = chrome.runtime.connectNative(host);
      const text = randomText(bytes);
      await request(port, { id: 0 });
      const times = await timed(runs, (run) => request(port, { id: run + 1, data: text }));
      port.disconnect();
      return times;
    },
    async transportRead({ bytes, host, runs }) {
      const port = chrome.runtime.connectNative(host);
      await request(port, { id: 0 });
      // Chrome takes at most 1 MiB from a host in one message: the floor is one frame just under it.
      const reply = Math.min(bytes, 1024 * 1024 - 64);
      const times = await timed(runs, (run) => request(port, { id: run + 1, reply }));
      port.disconnect();
      return times;
    },
    async idbWrite({ bytes, durability, runs }) {
      const db = await idb(`bench-w-${durability}`, (db) => db.createObjectStore("items"));
      const text = randomText(bytes);
      const times = await timed(runs, async (run) => {
        const tx = db.transaction("items", "readwrite", { durability });
        tx.objectStore("items").put(text, run);
        await done(tx);
      });
      db.close();
      return times;
    },
    async idbRead({ bytes, runs }) {
      const db = await idb("bench-r", (db) => db.createObjectStore("items"));
      const tx = db.transaction("items", "readwrite");
      tx.objectStore("items").put(randomText(bytes), 1);
      await done(tx);
      const times = await timed(runs, () => result(db.transaction("items").objectStore("items").get(1)));
      db.close();
      return times;
    },
    async storageWrite({ bytes, runs }) {
      const text = randomText(bytes);
      const times = await timed(runs, () => chrome.storage.local.set({ bench: text }));
      await chrome.storage.local.remove("bench");
      return times;
    },
    async storageRead({ bytes, runs }) {
      await chrome.storage.local.set({ bench: randomText(bytes) });
      const times = await timed(runs, () => chrome.storage.local.get("bench"));
      await chrome.storage.local.remove("bench");
      return times;
    },
    async nativeReadMany({ runs }) {
      const keys = [];
      for (let n = 0; n < 10; n++) keys.push((await client().write({ sessionId: "conv_bench-m", data: summary(n), description: "s" })).storageKey);
      const times = await timed(runs, () => client().readMany({ sessionId: "conv_bench-m", storageKeys: keys }));
      await client().endSession("conv_bench-m");
      return times;
    },
    async nativeReadTen({ runs }) {
      const keys = [];
      for (let n = 0; n < 10; n++) keys.push((await client().write({ sessionId: "conv_bench-t", data: summary(n), description: "s" })).storageKey);
      const times = await timed(runs, () => Promise.all(keys.map((storageKey) => client().read({ sessionId: "conv_bench-t", storageKey }))));
      await client().endSession("conv_bench-t");
      return times;
    },
    async nativeField({ runs }) {
      const item = await client().write({ sessionId: "conv_bench-f", data: bigRecords(), description: "5 MB of emails" });
      const times = await timed(runs, (run) =>
        client().read({ sessionId: "conv_bench-f", storageKey: item.storageKey, pointer: `/emails/${(run * 37) % 1200}/subject` }),
      );
      await client().endSession("conv_bench-f");
      return times;
    },
    async idbField({ runs }) {
      const db = await idb("bench-f", (db) => db.createObjectStore("items"));
      const tx = db.transaction("items", "readwrite");
      tx.objectStore("items").put(bigRecords(), 1);
      await done(tx);
      const times = await timed(runs, async (run) => {
        const value = await result(db.transaction("items").objectStore("items").get(1));
        return value.emails[(run * 37) % 1200].subject;
      });
      db.close();
      return times;
    },
    // The spec's scenario: cache 50 summaries, list them, read 10 back, end the session.
    async nativeWorkflow({ runs }) {
      const summaries = Array.from({ length: 50 }, (_, n) => summary(n));
      return timed(runs, async (run) => {
        const sessionId = `conv_bench-flow-${run}`;
        const keys = await Promise.all(summaries.map((data, n) => client().write({ sessionId, data, description: `Summary of email ${n}/50` })));
        await client().list({ sessionId, limit: 50 });
        await client().readMany({ sessionId, storageKeys: keys.slice(0, 10).map((item) => item.storageKey) });
        await client().endSession(sessionId);
      });
    },
    async idbWorkflow({ runs }) {
      const db = await idb("bench-flow", (db) => {
        db.createObjectStore("sessions", { keyPath: "sessionId" });
        db.createObjectStore("cache_items", { keyPath: "storageKey" }).createIndex("by_session", "sessionId");
      });
      const summaries = Array.from({ length: 50 }, (_, n) => summary(n));
      const times = await timed(runs, async (run) => {
        const sessionId = `conv_bench-flow-${run}`;
        const keys = [];
        for (let n = 0; n < 50; n++) {
          // Each write as the spec's design does it: the item and the session's totals in one transaction.
          const tx = db.transaction(["cache_items", "sessions"], "readwrite");
          const storageKey = `${sessionId}_task0000_${String(n).padStart(8, "0")}`;
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
      });
      db.close();
      return times;
    },
  };
}
