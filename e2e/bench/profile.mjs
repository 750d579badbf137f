// `npm run profile` (in e2e/): where the IndexedDB backend's time goes in real Chromium. It starts the demo extension
// in headless Chromium (no host installed: every op here is on a cache made with createLlmCache({ backend:
// "indexeddb" })), attaches the DevTools protocol's sampling Profiler to the service worker, and runs each
// backend row of the Chromium bench (the same workloads, bench/workloads.mjs) PROFILE_RUNS times (default 10),
// with the profiler started just before each call and stopped just after it, so that the setup and the untimed
// undo between calls (deleting a written item, refilling an ended session) stay out of the profile; only the
// samples between the marks that bracket the call in the worker are counted. For each op it
// prints, as markdown for docs/performance.md: the wall time per call, the worker's time rolled up by the shim's
// module (src/…ts; the built-ins a module calls, JSON.parse or IndexedDB's put, counted to the module that called
// them), "(idle)" (the worker waiting: on IndexedDB's commit, on the browser), "(garbage collector)" and
// "(program)" (the engine's own work outside JavaScript), and the top functions by self time.
// PROFILE_ONLY=<words> profiles only the ops whose names contain one of the comma-separated words;
// PROFILE_INTERVAL_US sets the sampling interval (default 100 µs); PROFILE_TOP how many functions each op lists (default
// 12). It measures and asserts nothing.
import fs from "node:fs";
import { launchOverPipe } from "../lib/cdp-pipe.mjs";
import { DEMO_GLOBAL, checkDemoExtension } from "../lib/demo-agent.mjs";
import { CHROMIUM, DEMO_EXTENSION_DIR } from "../lib/env.mjs";
import { createSandbox } from "../lib/sandbox.mjs";
import { defineBenchmarks } from "./workloads.mjs";

const RUNS = Number(process.env.PROFILE_RUNS || 10);
const INTERVAL_US = Number(process.env.PROFILE_INTERVAL_US || 100);
const ONLY = (process.env.PROFILE_ONLY || "").split(",").filter(Boolean);
const TOP_FUNCTIONS = Number(process.env.PROFILE_TOP || 12);
// The bench's workloads are evaluated under this name, so that their frames are told apart from the engine's
// built-ins (which have no URL) and from the shim's modules.
const WORKLOADS_URL = "bench-workloads.js";

const backend = "indexeddb";
const bytes = 1024 * 1024;
const bytes5 = 5 * 1024 * 1024 - 2;
/** The ops profiled: [name, the bench's benchmark, its argument], the backend rows of chromium.bench.mjs. */
const OPS = [
  ["write 1 MB", "cacheWrite", { bytes, backend }],
  ["write 5 MB", "cacheWrite", { bytes: bytes5, backend }],
  ["read 1 MB", "cacheRead", { bytes, backend }],
  ["read 5 MB", "cacheRead", { bytes: bytes5, backend }],
  ["pointer read of one field of a 5 MB item", "cacheField", { backend }],
  ["50-summary workflow", "cacheWorkflow", { backend }],
  ["50-summary workflow, each call awaited", "cacheWorkflowOneByOne", { backend }],
  ["list a page of 100 of 1,000 items of 20 KB", "cacheList", { backend }],
  ["search a 50 MB session", "cacheSearch", { backend }],
  ["append to a 5 MB item", "cacheAppend", { runs: RUNS, backend }],
  ["endSession of a 50 MB session", "cacheEndSession", { backend }],
].filter(([name]) => ONLY.length === 0 || ONLY.some((word) => name.includes(word)));

const ms = (value) => (value < 10 ? value.toFixed(2) : value.toFixed(1));
const percent = (part, whole) => `${Math.round((100 * part) / whole)}%`;

try {
  fs.accessSync(CHROMIUM, fs.constants.X_OK);
} catch {
  throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (or set CHROMIUM_PATH)`);
}
checkDemoExtension();
const sandbox = createSandbox("profile");
const browser = await launchOverPipe(sandbox, DEMO_EXTENSION_DIR, { globalName: DEMO_GLOBAL });
const sections = [];
const summary = [];
try {
  await browser.evaluate(`(${defineBenchmarks})();\n//# sourceURL=${WORKLOADS_URL}`, { what: "defining the benchmarks in the worker" });
  const serving = await browser.evaluate(`globalThis.servingBackend(${JSON.stringify(backend)})`, { what: "asking the cache which backend serves" });
  if (serving !== backend) throw new Error(`the cache made with backend "${backend}" is served by ${serving}`);
  await browser.command("Profiler.enable");
  await browser.command("Profiler.setSamplingInterval", { interval: INTERVAL_US });
  for (const [name, benchmark, arg] of OPS) {
    process.stderr.write(`${name}: preparing\n`);
    await browser.evaluate(`globalThis.stepwise.prepare(${JSON.stringify(benchmark)}, ${JSON.stringify(arg)})`, {
      timeoutMs: 600_000,
      what: `preparing ${name}`,
    });
    const walls = [];
    const profiles = [];
    try {
      for (let run = 0; run < RUNS; run++) {
        await browser.command("Profiler.start");
        walls.push(await browser.evaluate(`globalThis.stepwise.run(${run})`, { timeoutMs: 120_000, what: `${name}, run ${run}` }));
        profiles.push((await browser.command("Profiler.stop", {}, { timeoutMs: 60_000 })).profile);
        await browser.evaluate(`globalThis.stepwise.after(${run})`, { timeoutMs: 120_000, what: `undoing ${name}, run ${run}` });
      }
    } finally {
      await browser.evaluate("globalThis.stepwise.close()", { timeoutMs: 120_000, what: `cleaning up after ${name}` });
    }
    const report = analyse(profiles, walls);
    process.stderr.write(`${name}: ${report.wall.median.toFixed(2)} ms per call\n`);
    sections.push(section(name, report));
    summary.push([name, report]);
  }
} finally {
  await browser.close();
  await sandbox.cleanup();
}

console.log(`# Where the IndexedDB backend's time goes in Chromium (${RUNS} calls per op, sampled every ${INTERVAL_US} µs)`);
console.log();
console.log("| op | wall per call, median (min–max) | (idle) | (garbage collector) | the three biggest modules, ms per call |");
console.log("|---|---:|---:|---:|---|");
for (const [name, report] of summary) {
  const top = report.modules
    .filter(([where]) => !where.startsWith("("))
    .slice(0, 3)
    .map(([where, time]) => `${where.replace(/^src\//, "")} ${ms(time / RUNS / 1000)}`)
    .join("; ");
  const share = (label) => percent(report.modules.find(([where]) => where === label)?.[1] ?? 0, report.total);
  console.log(
    `| ${name} | ${ms(report.wall.median)} (${ms(report.wall.min)}–${ms(report.wall.max)}) | ${share("(idle)")} | ${share("(garbage collector)")} | ${top} |`,
  );
}
console.log();
console.log(sections.join("\n"));

/**
 * Adds up the samples of `profiles` (one per call) that fall between the profilerStartMark and profilerEndMark
 * that bracket the call (see stepwise in workloads.mjs): the time of each sample is the gap to the next one. Returns
 * per-module and per-function times in µs, their total, and the calls' wall times.
 */
function analyse(profiles, walls) {
  const modules = new Map();
  const functions = new Map();
  const add = (map, key, time) => map.set(key, (map.get(key) ?? 0) + time);
  let unbracketed = 0;
  for (const profile of profiles) {
    const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
    const parents = new Map();
    for (const node of profile.nodes) for (const child of node.children ?? []) parents.set(child, node);
    const marked = (node, name) => {
      for (let at = node; at; at = parents.get(at.id)) if (at.callFrame.functionName === name) return true;
      return false;
    };
    let at = profile.startTime;
    const stamps = profile.timeDeltas.map((delta) => (at += Math.max(0, delta)));
    // The window: after the last sample of the start mark, before the first of the end mark. A side whose mark got
    // no sample runs to the profile's start or end, which then counts a round trip around the call as (idle) too.
    let first = -1;
    let last = profile.samples.length;
    profile.samples.forEach((id, i) => {
      const node = nodes.get(id);
      if (marked(node, "profilerStartMark")) first = i;
      else if (last === profile.samples.length && marked(node, "profilerEndMark")) last = i;
    });
    if (first < 0 || last === profile.samples.length) unbracketed++;
    for (let i = first + 1; i < last; i++) {
      const time = Math.max(0, (i + 1 < stamps.length ? stamps[i + 1] : profile.endTime) - stamps[i]);
      const node = nodes.get(profile.samples[i]);
      const { functionName, url, lineNumber } = node.callFrame;
      if (!url && functionName.startsWith("(")) {
        // (idle), (program), (garbage collector) and (root).
        add(modules, functionName, time);
        add(functions, `${functionName}\t`, time);
      } else if (url) {
        add(modules, moduleOf(url), time);
        add(functions, `${functionName || "(anonymous)"}\t${place(url, lineNumber)}`, time);
      } else {
        // A built-in (JSON.parse, String.prototype.indexOf, IndexedDB's put): counted to the nearest caller with a URL.
        let caller = parents.get(node.id);
        while (caller && !caller.callFrame.url) caller = parents.get(caller.id);
        const from = caller ? `${caller.callFrame.functionName || "(anonymous)"} ${place(caller.callFrame.url, caller.callFrame.lineNumber)}` : "no caller";
        add(modules, caller ? moduleOf(caller.callFrame.url) : "(built-ins with no caller)", time);
        add(functions, `${functionName || "(anonymous)"} (built-in)\tcalled from ${from}`, time);
      }
    }
  }
  const sorted = (map) => [...map].sort((a, b) => b[1] - a[1]);
  const total = [...modules.values()].reduce((sum, time) => sum + time, 0);
  const ordered = [...walls].sort((a, b) => a - b);
  return {
    modules: sorted(modules),
    functions: sorted(functions),
    total,
    unbracketed,
    wall: {
      median: ordered[Math.floor(ordered.length / 2)],
      mean: ordered.reduce((sum, wall) => sum + wall, 0) / ordered.length,
      min: ordered[0],
      max: ordered[ordered.length - 1],
    },
  };
}

/** The shim's source module of a script URL (chrome-extension://<id>/lib/x/y.js is src/x/y.ts), or what else it is. */
function moduleOf(url) {
  const shim = /^chrome-extension:\/\/[a-p]{32}\/lib\/(.+)\.js$/.exec(url);
  if (shim) return `src/${shim[1]}.ts`;
  if (url === WORKLOADS_URL) return "(the bench's workload code)";
  if (/^chrome-extension:\/\/[a-p]{32}\/background\.js$/.test(url)) return "demo/background.js";
  return url;
}

/** A frame's script and 1-based line as a reader finds it: the compiled file in the demo (extension-shim/demo/lib/). */
function place(url, lineNumber) {
  const local = /^chrome-extension:\/\/[a-p]{32}\/(.+)$/.exec(url);
  return `${local ? local[1] : url}:${lineNumber + 1}`;
}

/** One op's markdown: its wall times, its modules, its top functions. */
function section(name, report) {
  const lines = [
    `## ${name}`,
    "",
    `Wall time per call: median ${ms(report.wall.median)} ms (min ${ms(report.wall.min)}, max ${ms(report.wall.max)}, ` +
      `mean ${ms(report.wall.mean)}). Sampled within the calls: ${ms(report.total / RUNS / 1000)} ms per call` +
      (report.unbracketed ? ` (${report.unbracketed} of the ${RUNS} calls cut on one side only: a mark got no sample).` : "."),
    "",
    "| where the worker's time went | ms per call | share |",
    "|---|---:|---:|",
  ];
  for (const [where, time] of report.modules) lines.push(`| ${where} | ${ms(time / RUNS / 1000)} | ${percent(time, report.total)} |`);
  lines.push("", `| function, by self time | where (lines of the compiled JS in extension-shim/demo/lib/) | ms per call | share |`, "|---|---|---:|---:|");
  for (const [key, time] of report.functions.slice(0, TOP_FUNCTIONS)) {
    const [fn, where] = key.split("\t");
    lines.push(`| ${fn} | ${where} | ${ms(time / RUNS / 1000)} | ${percent(time, report.total)} |`);
  }
  lines.push("");
  return lines.join("\n");
}
