/**
 * `npm run measure`: runs the 50-email scenario (helpers/inbox-scenario.ts) three ways through the real host
 * and prints the context bytes as the README's table.
 */

import { randomUUID } from "node:crypto";
import { createLlmCache } from "../src/llm-cache.js";
import { hostConnector } from "./helpers/chrome-port.js";
import { inbox, runScenario, type Measured, type Mode } from "./helpers/inbox-scenario.js";
import { MemoryStorage } from "./helpers/memory-storage.js";
import { tempDir } from "./helpers/temp.js";

const dir = tempDir();
const connect = hostConnector({ dataDir: dir.path });
const cache = createLlmCache({ storage: new MemoryStorage(), connect });
const runs = new Map<Mode, Measured>();
try {
  for (const mode of ["none", "today", "new"] as Mode[]) {
    runs.set(mode, await runScenario(mode, cache, `conv_${randomUUID()}`, inbox(50)));
  }
} finally {
  cache.client.close();
  await connect.closeAll();
  dir.remove();
}

const kb = (bytes: number) => (bytes < 1024 ? `${bytes} B` : `${(bytes / 1024).toFixed(1)} KB`);
const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
const rows: Array<[string, (m: Measured) => number]> = [
  ["list the 50 unread emails", (m) => m.listing],
  ["read the 50 emails (about 4 KB each)", (m) => m.reading],
  ["cache the summaries, 5 at a time", (m) => sum(m.batchSteps)],
  ["the last batch of 5", (m) => m.batchSteps.at(-1) ?? 0],
  ["write the document", (m) => m.docStep],
  ["**total**", (m) => m.total],
  ["**peak held at once**", (m) => m.peak],
];
const [none, today, fresh] = (["none", "today", "new"] as Mode[]).map((mode) => runs.get(mode) as Measured) as [Measured, Measured, Measured];
console.log("| Context bytes | no cache | today's tool | append, offloading, references |");
console.log("|---|---:|---:|---:|");
for (const [label, value] of rows) {
  const cell = (m: Measured) => (label.includes("cache the") || label.includes("last batch")) && m === none ? "–" : kb(value(m));
  console.log(`| ${label} | ${cell(none)} | ${cell(today)} | ${cell(fresh)} |`);
}
