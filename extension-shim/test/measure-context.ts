/**
 * `npm run measure`: runs the 50-email scenario (helpers/inbox-scenario.ts) three ways through the real host
 * and prints the context bytes as the README's table; then what provenance costs in o200k tokens (the encoding
 * of OpenAI's current models): a fence pair around a body, over FENCE_SAMPLES random ids (ids tokenize unevenly),
 * and the `from` column of an item line for each kind of label.
 */

import { randomUUID } from "node:crypto";
import { encode } from "gpt-tokenizer/encoding/o200k_base";
import { assembleReply, fence, fromLabel } from "../src/provenance.js";
import type { Provenance } from "../src/protocol.js";
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

/** How many random fence ids the fence's cost is measured over. */
const FENCE_SAMPLES = 10_000;
const tokens = (text: string) => encode(text).length;
// A body as a read shows it; the fence's cost is what the pair adds to it, tokenized together.
const body = '{"from":"ana@example.com","subject":"Q3 budget","summary":"Asks for the revised figures by Friday."}';
const costs = Array.from({ length: FENCE_SAMPLES }, () => tokens(assembleReply(["data: ", fence(JSON.parse(body))])) - tokens(`data: ${body}`)).sort((a, b) => a - b);
const at = (share: number) => costs[Math.min(costs.length - 1, Math.floor(share * costs.length))];
console.log("");
console.log(`| a fence pair, o200k tokens, over ${FENCE_SAMPLES.toLocaleString("en")} random ids | median | 9 in 10 at most | 99 in 100 at most | most |`);
console.log("|---|---:|---:|---:|---:|");
console.log(`| around a 100-byte body | ${at(0.5)} | ${at(0.9)} | ${at(0.99)} | ${costs.at(-1)} |`);

// What the column adds to an item line, tokenized with the columns around it.
const labels: Array<[string, Provenance]> = [
  ["the model's own", { origin: "agent" }],
  ["the user's", { origin: "user" }],
  ["an email", { origin: "email" }],
  ["unknown", { origin: "unknown" }],
  ["a tool's", { origin: "tool", source: { tool: "read_email" } }],
  ["a page", { origin: "web", source: { url: "https://mail.google.com/mail/u/0/" } }],
  ["a page of a long host", { origin: "web", source: { url: "https://news.ycombinator.com/item?id=1" } }],
  ["a page of an international host", { origin: "web", source: { url: "https://bücher.example/a" } }],
  ["the model's, made from a page", { origin: "agent", upstream: ["web"] }],
  ["the model's, made from a page and an email", { origin: "agent", upstream: ["web", "email"] }],
];
console.log("");
console.log("| the `from` column of an item line | label | o200k tokens |");
console.log("|---|---|---:|");
for (const [what, provenance] of labels) {
  const label = fromLabel(provenance);
  const line = (from: string) => `n633k0ca_wpr3bt2r | 510B | 3m |${from} object{from,subject,summary} | Summary of email 50/50`;
  console.log(`| ${what} | \`${label}\` | ${tokens(line(` ${label} |`)) - tokens(line(""))} |`);
}
