// `npm run bench` (in e2e/): the cache as an extension sees it, in headless Chromium, against what the extension
// could use instead, all timed inside the demo's service worker with performance.now():
// - the native client (llmCache.client) talking to the installed llm-cache-host;
// - the shim's IndexedDB backend: the same calls on a cache made with createLlmCache({ backend: "indexeddb" }),
//   what an extension gets without the host, so each of its rows, beside the native client's, shows what
//   installing the host buys (writes and reads of 1 and 5 MB, a pointer read, the workflow, a list page, search
//   of and append to a full session's items, and ending a 50 MB session);
// - each IndexedDB-backend row's floor: the same work done with plain IndexedDB and plain JavaScript, written in
//   bench/workloads.mjs (a put with durability "strict", the backend's for every write; a get; a get, then pick;
//   the spec's own design; indexOf over the stored strings; a get and a put; a delete by key range);
// - Chrome's transport alone: the same messages to a host that only answers (bench/noop-host.mjs);
// - IndexedDB (durability "default") and chrome.storage.local.
// Data is random text (never repeated characters). Each figure is the median, min and max of RUNS runs (fewer for
// the heavy rows, as their labels say), and the table goes to stdout for docs/performance.md. The rows of a group
// run interleaved (one run of each per round, every other round in reverse order), and the ratios of its pairs are
// taken round by round: after the table come their medians, then the backend's targets (IndexedDB backend / floor),
// each met or not in this run. BENCH_JSON=<file> also writes the figures as JSON (bench/three.mjs uses it).
// Not part of the test command: it measures, and asserts nothing beyond each cache being on the backend its
// rows name.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { launchWithExtension } from "../lib/browser.mjs";
import { DEMO_GLOBAL, checkDemoExtension } from "../lib/demo-agent.mjs";
import { DEMO_EXTENSION_DIR, EXTENSION_ORIGIN, requireHostAndChromium } from "../lib/env.mjs";
import { createSandbox, installHost } from "../lib/sandbox.mjs";
import { defineBenchmarks } from "./workloads.mjs";

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
// The backend's targets, each the median of one pair's per-round ratios (IndexedDB backend / its floor), and the new
// rows' ratios to their floors, printed with no target.
const targets = [];
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
      { timeoutMs: 900_000, what: benchmarks.map(([label]) => label).join(" and ") },
    );
    benchmarks.forEach(([label], i) => {
      const [median, min, max] = spread(times[i]);
      rows.push([label, median, min, max]);
      process.stderr.write(`${label}: ${median.toFixed(2)} ms\n`);
    });
    return times;
  };
  const measure = (label, name, arg) => rounds([[label, name, arg]]);
  // A group of benchmarks run interleaved in `runs` rounds, so that the machine's noise hits them alike, and the
  // ratios of `pairs` round by round. A pair is [i, j] (benchmark i / benchmark j), or [i, j, target] for a
  // target on the ratio: { name, below } (ratio < below) or { name, atMost } (ratio <= atMost); a target with
  // neither is a ratio printed with no target.
  const group = async (runs, benchmarks, pairs) => {
    const times = await rounds(benchmarks, runs);
    for (const [i, j, target] of pairs) {
      const values = times[i].map((time, round) => time / times[j][round]);
      ratios.push([benchmarks[i][0], benchmarks[j][0], values]);
      if (target) targets.push({ ...target, ratio: spread(values)[0] });
    }
  };
  // The backend against its floor, in rounds of their own: with the native client in the same rounds, its host
  // process and Chrome's transport still at work after a run (on a 2-core machine) land on whichever runs next.
  // `backend` is the benchmark of the host's group, run again here; its label says so.
  const againstFloor = (runs, backend, floor, target) =>
    group(runs, [[`${backend[0]}, against its floor`, backend[1], backend[2]], floor], [[0, 1, target]]);
  // Each figure of the host has one of the IndexedDB backend beside it: the same benchmark, the same calls, on
  // the cache made with `backend: "indexeddb"`, and the backend's floor beside both: the same work in plain
  // IndexedDB. Run interleaved, so that host / backend is what installing the host buys, and backend / floor what
  // the backend costs over IndexedDB's own speed.
  const host = { backend: "host" };
  const inBrowser = { backend: "indexeddb" };
  const bytes = 1024 * 1024;
  // The largest string the host takes as one item: 5 MiB of compact JSON, quotes included.
  const bytes5 = 5 * 1024 * 1024 - 2;
  await group(
    RUNS,
    [
      ["write 1 MB: native client", "cacheWrite", { bytes, ...host }],
      ["write 1 MB: IndexedDB backend", "cacheWrite", { bytes, ...inBrowser }],
      ["write 1 MB: Chrome's transport alone", "transportWrite", { bytes, host: NOOP_HOST }],
    ],
    [[0, 1], [0, 2]],
  );
  await againstFloor(
    RUNS,
    ["write 1 MB: IndexedDB backend", "cacheWrite", { bytes, ...inBrowser }],
    ["write 1 MB: IndexedDB (durability strict), the backend's floor", "idbWrite", { bytes, durability: "strict" }],
    { name: "write 1 MB", atMost: 1.3 },
  );
  await measure("write 1 MB: IndexedDB (durability default)", "idbWrite", { bytes, durability: "default" });
  await measure("write 1 MB: chrome.storage.local", "storageWrite", { bytes });
  await group(
    RUNS,
    [
      ["read 1 MB of random characters: native client (sent plain: gzip can't shrink it)", "cacheRead", { bytes, ...host }],
      ["read 1 MB of random characters: IndexedDB backend", "cacheRead", { bytes, ...inBrowser }],
    ],
    [[0, 1]],
  );
  await againstFloor(
    RUNS,
    ["read 1 MB of random characters: IndexedDB backend", "cacheRead", { bytes, ...inBrowser }],
    ["read 1 MB: IndexedDB (get), the backend's floor", "idbRead", { bytes }],
    { name: "read 1 MB", atMost: 1.2 },
  );
  // The compressed reply to a read of 1 MB of this prose, measured as it crosses (its JSON text, base64 payload
  // and all): the transport's time for that many bytes is the floor of a compressed read, before compressing and
  // decoding.
  const wire = await browser.run((bytes) => globalThis.compressedReply(bytes), bytes, { what: "measuring the compressed reply" });
  process.stderr.write(`a read of 1 MB of prose crosses as ${wire.bytes} bytes, encoding ${wire.encoding}\n`);
  await group(
    RUNS,
    [
      [`read 1 MB of prose: native client (sent ${wire.encoding})`, "cacheRead", { bytes, prose: true, ...host }],
      ["read 1 MB: Chrome's transport alone", "transportRead", { bytes, host: NOOP_HOST }],
      [`read ${Math.round(wire.bytes / 1000)} KB (the compressed reply's measured size): Chrome's transport alone`, "transportRead", { bytes: wire.bytes, host: NOOP_HOST }],
    ],
    [[0, 1], [0, 2]],
  );
  await measure("read 1 MB: chrome.storage.local", "storageRead", { bytes });
  await group(
    RUNS,
    [
      ["write 5 MB: native client", "cacheWrite", { bytes: bytes5, ...host }],
      ["write 5 MB: IndexedDB backend", "cacheWrite", { bytes: bytes5, ...inBrowser }],
    ],
    [[0, 1]],
  );
  await againstFloor(
    RUNS,
    ["write 5 MB: IndexedDB backend", "cacheWrite", { bytes: bytes5, ...inBrowser }],
    ["write 5 MB: IndexedDB (durability strict), the backend's floor", "idbWrite", { bytes: bytes5, durability: "strict" }],
    { name: "write 5 MB", atMost: 1.3 },
  );
  await measure("write 5 MB: IndexedDB (durability default)", "idbWrite", { bytes: bytes5, durability: "default" });
  await group(
    RUNS,
    [
      ["read 5 MB: native client", "cacheRead", { bytes: bytes5, ...host }],
      ["read 5 MB: IndexedDB backend", "cacheRead", { bytes: bytes5, ...inBrowser }],
    ],
    [[0, 1]],
  );
  await againstFloor(
    RUNS,
    ["read 5 MB: IndexedDB backend", "cacheRead", { bytes: bytes5, ...inBrowser }],
    ["read 5 MB: IndexedDB (get), the backend's floor", "idbRead", { bytes: bytes5 }],
    { name: "read 5 MB", atMost: 1.2 },
  );
  await measure("read 10 summaries: native client, one readMany", "nativeReadMany", {});
  await measure("read 10 summaries: native client, 10 reads", "nativeReadTen", {});
  await group(
    RUNS,
    [
      ["one field of a 5 MB item: native client (pointer)", "cacheField", host],
      ["one field of a 5 MB item: IndexedDB backend (pointer)", "cacheField", inBrowser],
    ],
    [[0, 1]],
  );
  await againstFloor(
    RUNS,
    ["one field of a 5 MB item: IndexedDB backend (pointer)", "cacheField", inBrowser],
    ["one field of a 5 MB item: IndexedDB (get, then pick), the backend's floor", "idbField", {}],
    { name: "pointer read", atMost: 1.2 },
  );
  await group(
    RUNS,
    [
      ["50-summary workflow: native client", "cacheWorkflow", host],
      ["50-summary workflow: IndexedDB backend", "cacheWorkflow", inBrowser],
      ["50-summary workflow: the spec's IndexedDB design", "idbWorkflow", {}],
    ],
    [[0, 1], [0, 2]],
  );
  await againstFloor(
    RUNS,
    ["50-summary workflow: IndexedDB backend", "cacheWorkflow", inBrowser],
    ["50-summary workflow: the spec's IndexedDB design", "idbWorkflow", {}],
    { name: "50-summary workflow", below: 1 },
  );
  await group(
    RUNS,
    [
      ["list a page of 100 of 1,000 items of 20 KB: native client", "cacheList", host],
      ["list a page of 100 of 1,000 items of 20 KB: IndexedDB backend", "cacheList", inBrowser],
      ["list a page of 100 of 1,000 items of 20 KB: the spec's IndexedDB design", "idbList", {}],
    ],
    [[0, 1], [0, 2]],
  );
  await againstFloor(
    RUNS,
    ["list a page of 100 of 1,000 items of 20 KB: IndexedDB backend", "cacheList", inBrowser],
    ["list a page of 100 of 1,000 items of 20 KB: the spec's IndexedDB design", "idbList", {}],
    { name: "list page", below: 1 },
  );
  await group(
    RUNS,
    [
      ["search a 50 MB session (10 items of 5 MB of text): native client", "cacheSearch", host],
      ["search a 50 MB session (10 items of 5 MB of text): IndexedDB backend", "cacheSearch", inBrowser],
    ],
    [[0, 1]],
  );
  await againstFloor(
    RUNS,
    ["search a 50 MB session (10 items of 5 MB of text): IndexedDB backend", "cacheSearch", inBrowser],
    ["search a 50 MB session (10 items of 5 MB of text): IndexedDB (get the 10, indexOf), the backend's floor", "idbSearch", {}],
    { name: "search of a 50 MB session" },
  );
  // The item grows by one short string a run, so its length depends on the number of runs (see cacheAppend).
  await group(
    RUNS,
    [
      ["append to a 5 MB item: native client", "cacheAppend", { runs: RUNS, ...host }],
      ["append to a 5 MB item: IndexedDB backend", "cacheAppend", { runs: RUNS, ...inBrowser }],
    ],
    [[0, 1]],
  );
  await againstFloor(
    RUNS,
    ["append to a 5 MB item: IndexedDB backend", "cacheAppend", { runs: RUNS, ...inBrowser }],
    ["append to a 5 MB item: IndexedDB (get, put; durability strict), the backend's floor", "idbAppend", { runs: RUNS }],
    { name: "append to a 5 MB item" },
  );
  // Each run needs a full session again, and filling one (untimed) takes far longer than ending it: so fewer runs.
  const endRuns = Math.min(RUNS, 10);
  await group(
    endRuns,
    [
      [`endSession of a 50 MB session (10 items of 5 MB; ${endRuns} runs): native client`, "cacheEndSession", host],
      [`endSession of a 50 MB session (10 items of 5 MB; ${endRuns} runs): IndexedDB backend`, "cacheEndSession", inBrowser],
    ],
    [[0, 1]],
  );
  await againstFloor(
    endRuns,
    [`endSession of a 50 MB session (10 items of 5 MB; ${endRuns} runs): IndexedDB backend`, "cacheEndSession", inBrowser],
    [`endSession of a 50 MB session (10 items of 5 MB; ${endRuns} runs): IndexedDB (delete a key range; durability strict), the backend's floor`, "idbEndSession", {}],
    { name: "endSession of a 50 MB session" },
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
console.log();
console.log("Targets: IndexedDB backend / its floor, the median of the per-round ratios of this run.");
console.log();
console.log("| target | ratio | met |");
console.log("|---|---:|---|");
for (const target of targets) console.log(`| ${targetText(target)} | ${target.ratio.toFixed(2)} | ${metText(target)} |`);
if (process.env.BENCH_JSON) {
  const json = {
    runs: RUNS,
    rows: rows.map(([label, median, min, max]) => ({ label, median, min, max })),
    ratios: ratios.map(([a, b, values]) => ({ a, b, median: spread(values)[0] })),
    targets: targets.map((target) => ({ ...target, text: targetText(target), met: met(target) })),
  };
  fs.writeFileSync(process.env.BENCH_JSON, `${JSON.stringify(json, null, 2)}\n`);
}

/** The target as a line of the table: its name and bound, or "(no target)". */
function targetText({ name, below, atMost }) {
  if (below !== undefined) return `${name} < ${below.toFixed(1)}`;
  if (atMost !== undefined) return `${name} <= ${atMost.toFixed(1)}`;
  return `${name} (no target)`;
}

/** Whether the ratio meets the target: true, false, or undefined for a ratio with no target. */
function met({ ratio, below, atMost }) {
  if (below !== undefined) return ratio < below;
  if (atMost !== undefined) return ratio <= atMost;
  return undefined;
}

function metText(target) {
  const result = met(target);
  return result === undefined ? "" : result ? "met" : "not met";
}
