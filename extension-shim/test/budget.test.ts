/**
 * What the tool costs the model on every request, whether or not it uses the cache: its definition and its prompt
 * section, counted with the o200k tokenizer (gpt-tokenizer, the encoding of OpenAI's current models) as the APIs
 * receive them (the definition as JSON). The plain variants must stay within 1,000 tokens, the strict ones, whose
 * schemas spell out nulls, within 1,150. Each feature an integrator turns on adds only its own lines,
 * counted here too; the shim's README shows these figures.
 */

import assert from "node:assert/strict";
import { it } from "node:test";
import { encode } from "gpt-tokenizer/encoding/o200k_base";
import { browserStorageDefinition } from "../src/legacy/browser-storage.js";
import { STORAGE_TOOL_DEFINITIONS, STRICT_VARIANTS, type DefinitionVariant } from "../src/tool/definitions.js";
import { CACHE_PROMPT_OFFLOADING, CACHE_PROMPT_REFERENCES, CACHE_SYSTEM_PROMPT, cachePrompt } from "../src/tool/prompt.js";

/** The most tokens a request carries for the tool (definition and prompt section), by kind of variant. */
const PLAIN_BUDGET = 1000;
const STRICT_BUDGET = 1150;

const tokens = (text: string) => encode(text).length;

it("costs every variant at most its budget per request: definition and prompt section", (t) => {
  const rows: string[] = [];
  for (const variant of Object.keys(STORAGE_TOOL_DEFINITIONS) as DefinitionVariant[]) {
    const definition = tokens(JSON.stringify(STORAGE_TOOL_DEFINITIONS[variant]));
    const prompt = tokens(cachePrompt(variant));
    const budget = STRICT_VARIANTS.includes(variant) ? STRICT_BUDGET : PLAIN_BUDGET;
    rows.push(`${variant}: ${definition} + ${prompt} = ${definition + prompt} (budget ${budget})`);
    assert.ok(definition + prompt <= budget, `${variant}: ${definition} + ${prompt} tokens, over ${budget}`);
  }
  t.diagnostic(rows.join("; "));
});

it("adds only each feature's own lines, and says what each costs", (t) => {
  assert.equal(cachePrompt("openaiResponses", { references: true, offloading: true }), CACHE_SYSTEM_PROMPT + CACHE_PROMPT_REFERENCES + CACHE_PROMPT_OFFLOADING);
  const costs = {
    references: tokens(CACHE_PROMPT_REFERENCES),
    offloading: tokens(CACHE_PROMPT_OFFLOADING),
    legacyTool: tokens(JSON.stringify(browserStorageDefinition())),
  };
  t.diagnostic(`references ${costs.references}, offloading ${costs.offloading}, the legacy browser_storage tool ${costs.legacyTool}`);
  // As the shim's README states them.
  assert.deepEqual(costs, { references: 138, offloading: 39, legacyTool: 297 });
});
