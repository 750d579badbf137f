/**
 * The system prompt section that explains the cache to the LLM (the spec's FR-014), and `withCachePrompt`,
 * which adds it to an agent's own prompt.
 *
 * prompt/system-prompt.md is the same text, for people to read and review; test/prompt.test.ts fails when the
 * two differ. It is kept as a string here, not read from the file at run time, so that an extension can
 * import it without a fetch and without a bundler that understands markdown.
 */

import { STRICT_VARIANTS, type DefinitionVariant } from "./definitions.js";
import { STORAGE_TOOL_NAME, toolName, type ToolNameOption } from "./spec.js";

export const CACHE_SYSTEM_PROMPT = `## The llm_cache tool: a cache for large intermediate results

Your context window is small next to the data some tasks touch. The \`llm_cache\` tool keeps data outside it, on this computer, for the rest of this conversation. You keep a one-line description of each cached item in context and read an item back only when a step needs it.

**When to cache**
- You process 20 or more similar items (emails, pages, files, records): cache each item's result as you go instead of keeping them all in context.
- A result is over 10 KB: cache it and keep only its description in mind.
- A task has several steps that build on each other (collect, then combine, then write a document): cache each step's output and read back only what the next step needs.
Small results that fit easily in context don't need the cache.

**Write** with \`{"action": "write", "data": "<JSON text>", "description": "..."}\`. \`data\` is always a string, the value as JSON text, never the object itself: \`"{\\"from\\": \\"ana@example.com\\", \\"summary\\": \\"...\\"}"\`, \`"[1, 2, 3]"\`, \`"42"\`; text that isn't JSON (a plain summary) is cached as that text. The answer shows the item's metadata, never the data. The description is all you will see of the item later, so say what it holds and how much: "Summary of email 7/50: Ana re Q3 budget, asks for numbers by Friday (120 words)". Descriptions are cut at 300 characters. One item holds at most 5 MB; this conversation's cache holds at most 50 MB.

**Reading the metadata.** \`write\`, \`append\`, \`update\` and \`list\` show one line per item:

    key | size | age | shape | description
    a7b3c9d2_f4e8a1b6 | 41.2KB | 3m | array[50] of {from,subject,summary} | Summaries of emails 1-50 ...

\`key\` names the item: pass it as \`storageKey\`, exactly as shown. \`size\` is what reading all of it would cost you. \`shape\` shows how the data is built, so you can point into it without reading it: \`array[50] of {from,subject,summary}\`, \`object{emails,total}\`, \`string(48213)\` (characters). \`list\` shows the newest items first, 50 to a page, and ends with a cursor when there are more; \`"query": "invoice"\` lists only items whose description has those words. \`stats\` shows the totals and the free space.

**Read** with \`{"action": "read", "storageKey": "..."}\`. A JSON pointer reads one part: \`"pointer": "/emails/3"\` one element of the \`emails\` array, \`"/emails/3/subject"\` one field of it. A long value comes back one page at a time (about 12 KB: elements of an array, members of an object, characters of a text); the answer says which part you got and the \`offset\` of the next page, e.g. \`{"action": "read", "storageKey": "...", "pointer": "/emails", "offset": 20}\`. \`limit\` asks for fewer. Read what the next step needs, not everything.

**Search** inside the cached data with \`{"action": "search", "query": "invoice March"}\`: each match is \`key | pointer | snippet\`, so you read exactly the string that matched (\`read\` with that key and pointer).

**Build results up with append.** To add the next batch to a running result, don't read it back and rewrite it: \`{"action": "append", "storageKey": "...", "data": "[\\"summary 46\\", \\"summary 47\\"]", "description": "Summaries of emails 1-47"}\` adds the array's elements to the array in the item (\`pointer\` names an array inside it); text appended to a text is added at its end. **Update** replaces an item's data or description; **delete** removes an item you no longer need. The whole cache of a conversation is removed when the conversation ends.

**Pass cached data to another tool without reading it.** Where a tool's description says it accepts llm_cache references, put \`{{llm_cache:KEY}}\` (or \`{{llm_cache:KEY/pointer}}\`) inside a string argument: the tool receives the data in its place, a text as it is and an array's elements one per paragraph. For example, write a document from 50 cached summaries with \`"body": "# Inbox summary\\n\\n{{llm_cache:a7b3c9d2_f4e8a1b6}}"\`. An argument that is all data can be \`{"$llm_cache": "KEY", "pointer": "/emails/3"}\`. Another tool's result over 10 KB may arrive already cached: you then see its key, shape and a short preview, and read, search or pass it like any item.

**When a call fails**, the answer says what went wrong and what to do next:
- quota exceeded: delete items you no longer need (\`list\` shows their sizes) or store smaller summaries;
- data too large: split it into parts of at most 5 MB, write each as its own item, and say in each description which part it is ("part 2/3");
- item not found: \`list\` to see which keys exist;
- storage unavailable: the cache can't be used right now. Carry on without it: process the data in your context, in smaller batches, and don't keep retrying the cache.
`;

/** What the section adds for a strict definition, whose calls carry every parameter. */
export const STRICT_PROMPT_NOTE =
  "\nEvery `llm_cache` call lists all of its parameters: give `null` to each one the action doesn't use, e.g. " +
  '`{"action": "list", "data": null, "description": null, "storageKey": null, "pointer": null, "offset": null, ' +
  '"limit": null, "query": null, "cursor": null, "customMetadata": null}`.\n';

/** A mention of the tool by name: not a reference marker (`{{llm_cache:`, `$llm_cache`, "llm_cache references"). */
const TOOL_MENTION = /(?<![{$])llm_cache(?!:| references)/g;
const REFERENCES_INTRO = "Where a tool's description says it accepts llm_cache references";

/**
 * The section for the definition variant the agent sends (the plain text unless the variant is strict), for
 * the tool called `options.name`.
 *
 * Under another name, every mention of the tool takes that name, but the two reference forms keep theirs:
 * `{{llm_cache:KEY}}` and `{"$llm_cache": KEY}` are markers that our resolver (references.ts) finds in other
 * tools' arguments, not calls of the tool. Keeping them fixed means a tool's description ("Accepts llm_cache
 * references") and the resolver need no name, and no other llm_cache (browserx's own has no references)
 * resolves the same marker. One clause then tells the LLM whose keys the markers take.
 */
export function cachePrompt(variant: DefinitionVariant = "openaiResponses", options: ToolNameOption = {}): string {
  const text = STRICT_VARIANTS.includes(variant) ? CACHE_SYSTEM_PROMPT + STRICT_PROMPT_NOTE : CACHE_SYSTEM_PROMPT;
  const name = toolName(options);
  if (name === STORAGE_TOOL_NAME) return text;
  return text
    .replace(TOOL_MENTION, name)
    .replace(REFERENCES_INTRO, `${REFERENCES_INTRO} (they name items of \`${name}\`)`);
}

/**
 * The agent's prompt with the cache section at its end, matching `variant` and the tool's name. Idempotent: a
 * prompt that already holds the section (for any variant, under this name) gets it once, for the variant
 * asked for now.
 */
export function withCachePrompt(basePrompt: string, variant: DefinitionVariant = "openaiResponses", options: ToolNameOption = {}): string {
  const section = cachePrompt(variant, options);
  for (const present of [cachePrompt("openaiResponsesStrict", options), cachePrompt("openaiResponses", options)]) {
    const at = basePrompt.indexOf(present);
    if (at !== -1) return basePrompt.slice(0, at) + section + basePrompt.slice(at + present.length);
  }
  const separator = basePrompt === "" || basePrompt.endsWith("\n\n") ? "" : basePrompt.endsWith("\n") ? "\n" : "\n\n";
  return basePrompt + separator + section;
}
