// `npm run bench:three` (in e2e/): the Chromium bench (chromium.bench.mjs) three times, each in a fresh browser
// and sandbox, then one summary in markdown on stdout: per row, the three runs' medians (and their median); per
// ratio, the three runs' medians of per-round ratios; per target of the backend's, whether it was met in all three runs,
// in some (k of 3) or in none. Each run's own output (its table, ratios and targets) goes to
// <dir>/run-<n>.md when `--out <dir>` is given, and to stderr otherwise. BENCH_RUNS passes through.
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const REPEAT = 3;
const bench = path.join(path.dirname(fileURLToPath(import.meta.url)), "chromium.bench.mjs");
const outAt = process.argv.indexOf("--out");
const outDir = outAt >= 0 ? path.resolve(process.argv[outAt + 1] ?? "") : undefined;
if (outAt >= 0 && !process.argv[outAt + 1]) throw new Error("--out needs a directory");
if (outDir) fs.mkdirSync(outDir, { recursive: true });

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "llm-cache-bench-three-"));
const results = [];
try {
  for (let n = 1; n <= REPEAT; n++) {
    process.stderr.write(`# run ${n} of ${REPEAT}\n`);
    const json = path.join(scratch, `run-${n}.json`);
    const stdout = await runBench({ ...process.env, BENCH_JSON: json });
    if (outDir) fs.writeFileSync(path.join(outDir, `run-${n}.md`), stdout);
    else process.stderr.write(`${stdout}\n`);
    results.push(JSON.parse(fs.readFileSync(json, "utf8")));
  }
} finally {
  fs.rmSync(scratch, { recursive: true, force: true });
}

const ms = (value) => (value < 10 ? value.toFixed(2) : value.toFixed(1));
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
// Rows and ratios are matched by their place in each run's output, which is the same in every run; a label that
// differs between runs (the compressed reply's measured size) is shown as each run's, joined by "or".
const labelOf = (labels) => [...new Set(labels)].join(" or ");

console.log(`| ${results[0].runs} runs each, three runs, ms | median of the runs' medians | run 1, 2, 3 |`);
console.log("|---|---:|---|");
results[0].rows.forEach((_, i) => {
  const medians = results.map((result) => result.rows[i].median);
  console.log(`| ${labelOf(results.map((result) => result.rows[i].label))} | ${ms(median(medians))} | ${medians.map(ms).join(", ")} |`);
});
console.log();
console.log("| ratio (median of the per-round ratios) | run 1, 2, 3 |");
console.log("|---|---|");
results[0].ratios.forEach((_, i) => {
  const a = labelOf(results.map((result) => result.ratios[i].a));
  const b = labelOf(results.map((result) => result.ratios[i].b));
  console.log(`| ${a} / ${b} | ${results.map((result) => result.ratios[i].median.toFixed(2)).join(", ")} |`);
});
console.log();
console.log("| target (the median of its pair's per-round ratios) | run 1, 2, 3 | met in |");
console.log("|---|---|---|");
results[0].targets.forEach((target, i) => {
  const values = results.map((result) => result.targets[i]);
  const metCount = values.filter((value) => value.met === true).length;
  const hasTarget = values[0].met !== undefined;
  const metIn = !hasTarget ? "" : metCount === REPEAT ? "all" : metCount === 0 ? "none" : `some (${metCount} of ${REPEAT})`;
  console.log(`| ${target.text} | ${values.map((value) => value.ratio.toFixed(2)).join(", ")} | ${metIn} |`);
});

/** Runs the bench once with `env`; resolves with its stdout, its stderr passed through; rejects when it fails. */
function runBench(env) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bench], { env, stdio: ["ignore", "pipe", "inherit"] });
    let stdout = "";
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
    });
    child.on("error", reject);
    child.on("exit", (code, signal) => {
      if (code === 0) resolve(stdout);
      else reject(new Error(`chromium.bench.mjs failed (${code ?? signal})`));
    });
  });
}
