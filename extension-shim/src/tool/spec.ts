/**
 * The llm_cache tool described once: its name, what it is for, and each parameter. definitions.ts turns this
 * into the definition every LLM API takes; nothing else spells the schema out.
 *
 * Every parameter is a string or an integer, because that is what every API accepts in every mode. Strict modes
 * (OpenAI, Anthropic) can't express "any JSON value" (a schema without a type, or an object without a fixed set
 * of properties), so the cached value travels as JSON text in `data`, and text that isn't JSON is cached as that
 * text. StorageTool parses it; callers that aren't LLMs may still pass any JSON value directly.
 */

import { MAX_DESCRIPTION_CHARS } from "../protocol.js";

/** One parameter. The bounds are schema keywords where an API takes them, and are always enforced by the host. */
export interface ParameterSpec {
  readonly type: "string" | "integer";
  readonly description: string;
  readonly enum?: readonly string[];
  readonly maxLength?: number;
  readonly minimum?: number;
  readonly maximum?: number;
}

export interface ToolSpec {
  readonly name: string;
  /** A short human title, for APIs that show one (MCP). */
  readonly title: string;
  readonly description: string;
  readonly parameters: Readonly<Record<string, ParameterSpec>>;
  /** The parameters every call has; the others are used by some actions only. */
  readonly required: readonly string[];
}

export const STORAGE_TOOL_NAME = "llm_cache";

/**
 * A name every API takes: OpenAI allows [a-zA-Z0-9_-]{1,64}, Anthropic the same up to 128, Gemini wants a letter
 * or underscore first, MCP [A-Za-z0-9._-]{1,128}. This is what all four share.
 */
export const TOOL_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_-]{0,63}$/;

/** For every function that takes the tool's name as an option; `llm_cache` when left out. */
export interface ToolNameOption {
  /**
   * The tool's name as the LLM calls it. Another name lets the cache sit beside another tool called
   * llm_cache (browserx's own, say). It must match TOOL_NAME_PATTERN.
   */
  name?: string | undefined;
}

/** The tool's name from the options, checked once here so every caller gets the same clear error. */
export function toolName(options: ToolNameOption = {}): string {
  const name = options.name ?? STORAGE_TOOL_NAME;
  if (typeof name !== "string" || !TOOL_NAME_PATTERN.test(name)) {
    throw new TypeError(
      `the tool's name must be a letter or _ followed by at most 63 letters, digits, _ or -, which every LLM API ` +
        `accepts; got ${JSON.stringify(name)?.slice(0, 80)}. Pass another name option, such as "host_cache"`,
    );
  }
  return name;
}

export const CACHE_ACTIONS = ["write", "read", "append", "list", "search", "update", "delete", "stats"] as const;
export type CacheAction = (typeof CACHE_ACTIONS)[number];

/** Items per `list` page unless the LLM asks for another number: 50 lines are about 6 KB. */
export const DEFAULT_LIST_LIMIT = 50;
/** Matches per `search` page: 10 snippets are about 2 KB. */
export const DEFAULT_SEARCH_LIMIT = 10;
/** The most items or matches one `list` or `search` page shows. */
export const MAX_PAGE_LIMIT = 100;

export const STORAGE_TOOL_SPEC: ToolSpec = {
  name: STORAGE_TOOL_NAME,
  title: "LLM cache",
  description:
    "Cache for large intermediate results (many items, results over 10 KB, multi-step work), kept outside your " +
    "context for this conversation. write stores data and answers with one line of metadata (key | size | age | " +
    "shape | description); list shows those lines, newest first; read returns an item's data, a part of it by " +
    "JSON pointer, a page at a time when it is long; append adds to a running array or text; search finds text " +
    "inside the data. data is always a string of JSON text, never an object: " +
    "'{\"from\":\"ana@example.com\",\"summary\":\"...\"}', '[1,2]', '42'; text that isn't JSON is cached as that text.",
  parameters: {
    action: {
      type: "string",
      enum: CACHE_ACTIONS,
      description:
        "write: cache data. read: get an item's data, or a page of it. append: add elements to an array (or text " +
        "to a text) in an item. list: the items' metadata, newest first. search: find words inside the cached " +
        "data. update: replace an item's data or description. delete: remove an item. stats: totals and free space.",
    },
    data: {
      type: "string",
      description:
        "A string, never an object or array. write, update: the value to cache as JSON text (an object, array, " +
        "number, true/false or a quoted string); other text is cached as it is. At most 5 MB. append: a JSON " +
        "array whose elements are added, or text to add to a text.",
    },
    description: {
      type: "string",
      maxLength: MAX_DESCRIPTION_CHARS,
      description:
        "write (required), update, append: what the item holds and how much, e.g. 'Summary of email 7/50: Ana " +
        `re Q3 budget (120 words)'. You see this later instead of the data. At most ${MAX_DESCRIPTION_CHARS} characters.`,
    },
    storageKey: {
      type: "string",
      description: "read, append, update, delete: the item's key exactly as write, list or search showed it.",
    },
    pointer: {
      type: "string",
      description:
        "read: a JSON pointer to read only one part of the data, e.g. '/emails/3/subject'. append: the array or " +
        "text inside the item to add to, e.g. '/summaries'; the whole item when absent.",
    },
    offset: {
      type: "integer",
      minimum: 0,
      description:
        "read: where a page starts: an element of an array, a member of an object or a character of a text, " +
        "from 0. A read that doesn't return everything says which offset comes next.",
    },
    limit: {
      type: "integer",
      minimum: 1,
      description:
        `list, search: results per page, 1 to ${MAX_PAGE_LIMIT} (default ${DEFAULT_LIST_LIMIT} items, ` +
        `${DEFAULT_SEARCH_LIMIT} matches). read: the most elements, members or characters to return.`,
    },
    query: {
      type: "string",
      description:
        "list: only items whose description contains every one of these words. search (required): words to " +
        "find in the cached data; each match gives its key, pointer and a snippet.",
    },
    cursor: {
      type: "string",
      description: "list, search: the cursor the previous page gave, to get the next page.",
    },
    customMetadata: {
      type: "string",
      description:
        "write, update: optional extra facts about the item as the JSON text of an object, e.g. " +
        "'{\"source\":\"gmail\"}'; only read returns them.",
    },
  },
  required: ["action"],
};

/** The spec under the name in `options` (see ToolNameOption); the same spec otherwise. */
export function toolSpec(options: ToolNameOption = {}): ToolSpec {
  const name = toolName(options);
  return name === STORAGE_TOOL_SPEC.name ? STORAGE_TOOL_SPEC : { ...STORAGE_TOOL_SPEC, name };
}
