/**
 * The system prompt section that explains the cache to the LLM (the spec's FR-014), and `withCachePrompt`,
 * which adds it to an agent's own prompt.
 *
 * prompt/system-prompt.md is the same text, for people to read and review; test/prompt.test.ts fails when the
 * two differ. It is kept as a string here, not read from the file at run time, so that an extension can
 * import it without a fetch and without a bundler that understands markdown.
 */

import { STRICT_VARIANTS, type DefinitionVariant } from "./definitions.js";

export const CACHE_SYSTEM_PROMPT = `## The llm_cache tool: a cache for large intermediate results

Your context window is small next to the data some tasks touch. The \`llm_cache\` tool keeps data outside it, on this computer, for the rest of this conversation. You keep a one-line description of each cached item in context and read an item back only when a step needs it.

**When to cache**
- You process 20 or more similar items (emails, pages, files, records): cache each item's result as you go instead of keeping them all in context.
- A result is over 10 KB: cache it and keep only its description in mind.
- A task has several steps that build on each other (collect, then combine, then write a document): cache each step's output and read back only what the next step needs.
Small results that fit easily in context don't need the cache.

**Write** with \`{"action": "write", "data": "<JSON text>", "description": "..."}\`. \`data\` is the value as JSON text: \`"{\\"from\\": \\"ana@example.com\\", \\"summary\\": \\"...\\"}"\`, \`"[1, 2, 3]"\`, \`"42"\`; text that isn't JSON (a plain summary) is cached as that text. The answer shows the item's metadata, never the data. The description is all you will see of the item later, so say what it holds and how much: "Summary of email 7/50: Ana re Q3 budget, asks for numbers by Friday (120 words)". Descriptions are cut at 300 characters. One item holds at most 5 MB; this conversation's cache holds at most 50 MB.

**Reading the metadata.** \`write\`, \`update\` and \`list\` show one line per item:

    key | size | age | description
    a7b3c9d2_f4e8a1b6 | 1.2KB | 3m | Summary of email 7/50: Ana re Q3 budget, ...

\`key\` names the item: pass it as \`storageKey\`, exactly as shown. \`size\` is the size of the data, which is what reading it costs you. \`age\` is how long ago it was written or last updated. \`list\` shows the newest items first, 50 to a page; when there are more it ends with a cursor to pass to the next \`list\`. \`stats\` shows the totals and the free space.

**Read** with \`{"action": "read", "storageKey": "..."}\`. To pull in only one part of a large item, add a JSON pointer: \`"pointer": "/emails/3"\` reads one element of the \`emails\` array, \`"/emails/3/subject"\` one field of it. Read what the next step needs, not everything at once.

**Update** an item in place with \`{"action": "update", "storageKey": "...", "data": "...", "description": "..."}\` (data, description or both), for example to add the next batch to a running result. **Delete** items you no longer need with \`{"action": "delete", "storageKey": "..."}\`. The whole cache of a conversation is removed when the conversation ends.

**When a call fails**, the answer says what went wrong and what to do next:
- quota exceeded: delete items you no longer need (\`list\` shows their sizes) or store smaller summaries;
- data too large: split it into parts of at most 5 MB, write each as its own item, and say in each description which part it is ("part 2/3");
- item not found: \`list\` to see which keys exist;
- storage unavailable: the cache can't be used right now. Carry on without it: process the data in your context, in smaller batches, and don't keep retrying the cache.
`;

/** What the section adds for a strict definition, whose calls carry every parameter. */
export const STRICT_PROMPT_NOTE =
  "\nEvery `llm_cache` call lists all of its parameters: give `null` to each one the action doesn't use, e.g. " +
  '`{"action": "list", "data": null, "description": null, "storageKey": null, "pointer": null, "limit": null, ' +
  '"cursor": null, "customMetadata": null}`.\n';

/** The section for the definition variant the agent sends; the plain text unless the variant is strict. */
export function cachePrompt(variant: DefinitionVariant = "openaiResponses"): string {
  return STRICT_VARIANTS.includes(variant) ? CACHE_SYSTEM_PROMPT + STRICT_PROMPT_NOTE : CACHE_SYSTEM_PROMPT;
}

/**
 * The agent's prompt with the cache section at its end, matching `variant`. Idempotent: a prompt that already
 * holds the section (for any variant) gets it once, for the variant asked for now.
 */
export function withCachePrompt(basePrompt: string, variant: DefinitionVariant = "openaiResponses"): string {
  const section = cachePrompt(variant);
  for (const present of [cachePrompt("openaiResponsesStrict"), CACHE_SYSTEM_PROMPT]) {
    const at = basePrompt.indexOf(present);
    if (at !== -1) return basePrompt.slice(0, at) + section + basePrompt.slice(at + present.length);
  }
  const separator = basePrompt === "" || basePrompt.endsWith("\n\n") ? "" : basePrompt.endsWith("\n") ? "\n" : "\n\n";
  return basePrompt + separator + section;
}
