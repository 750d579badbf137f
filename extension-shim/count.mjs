import { encode } from "gpt-tokenizer/encoding/o200k_base";
const m = await import("./dist/src/index.js");
const defs = m.toolDefinitions();
for (const [variant, def] of Object.entries(defs)) {
  const d = encode(JSON.stringify(def)).length;
  const p = encode(m.cachePrompt(variant)).length;
  console.log(variant.padEnd(24), d, p, d + p);
}
