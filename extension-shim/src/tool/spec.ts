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
    "Keeps large intermediate results outside your context for this conversation. Answers show each item as a " +
    "line of metadata, never its data.",
  parameters: {
    action: {
      type: "string",
      enum: CACHE_ACTIONS,
      description:
        "write: cache data. read: an item's data, or part of it. append: add to an array or text in an item. " +
        "list: items' metadata, newest first. search: find words in the data. update: replace an item's data or " +
        "description. delete: remove an item. stats: totals and free space.",
    },
    data: {
      type: "string",
      description:
        "A string, never an object or array: the value as JSON text, e.g. '{\"from\":\"ana@example.com\"}', " +
        "'[1,2]', '42'; other text is cached as it is. At most 5 MB. append: a JSON array of elements to add, " +
        "or text to add to a text.",
    },
    description: {
      type: "string",
      maxLength: MAX_DESCRIPTION_CHARS,
      description:
        "write (required), update, append: what the item holds and how much, e.g. 'Summary of email 7/50: Ana " +
        `re Q3 budget (120 words)'. At most ${MAX_DESCRIPTION_CHARS} characters.`,
    },
    storageKey: {
      type: "string",
      description: "read, append, update, delete: the item's key, exactly as shown.",
    },
    pointer: {
      type: "string",
      description: "read: a JSON pointer to one part, e.g. '/emails/3/subject'. append: the array or text inside the item.",
    },
    offset: {
      type: "integer",
      minimum: 0,
      description: "read: where the page starts, as the previous page said.",
    },
    limit: {
      type: "integer",
      minimum: 1,
      description: `list, search: results per page, 1 to ${MAX_PAGE_LIMIT}. read: the most elements, members or characters.`,
    },
    query: {
      type: "string",
      description: "search (required): words to find in the data. list: words the description must contain.",
    },
    cursor: {
      type: "string",
      description: "list, search: the previous page's cursor.",
    },
    customMetadata: {
      type: "string",
      description: "write, update: optional extra facts as the JSON text of an object; only read returns them.",
    },
  },
  required: ["action"],
};

/** The spec under the name in `options` (see ToolNameOption); the same spec otherwise. */
export function toolSpec(options: ToolNameOption = {}): ToolSpec {
  const name = toolName(options);
  return name === STORAGE_TOOL_SPEC.name ? STORAGE_TOOL_SPEC : { ...STORAGE_TOOL_SPEC, name };
}
