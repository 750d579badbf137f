/**
 * StorageTool: the LLM tool `llm_cache`. Its definition is a JSON schema for function calling; `execute` runs
 * one call and returns the text the LLM sees.
 *
 * Two rules shape everything here. What comes back is compact, because it is spent from the LLM's context:
 * one line per item (see format.ts). And a failure comes back as text that says what to do next, never as an
 * exception, because an exception would end the agent's turn while the LLM could have recovered (delete old
 * items, split the data, or carry on without the cache).
 *
 * Measured cost (test/storage-tool.test.ts): a `list` of 50 items whose descriptions are email summaries of
 * about 80 characters is 5,692 bytes of text: 114 bytes per item, of which about 33 are the key, size, age
 * and separators. The spec's budget is 500 bytes per item; the host's JSON metadata for the same item is
 * about 280 bytes, because it spells out the 41-character session id twice.
 */

import type { NativeCacheClient } from "./client.js";
import { CacheError, InvalidRequestError } from "./errors.js";
import { ITEM_COLUMNS, describeShape, formatAge, formatSize, itemLine } from "./format.js";
import { fullKey, keyIdFor, shortKey } from "./keys.js";
import { LEGACY_ACTIONS, isLegacyAction, runLegacy } from "./legacy.js";
import { MAX_DESCRIPTION_CHARS, utf8Length } from "./protocol.js";
import type { KeyValueStore } from "./storage-area.js";

export const STORAGE_TOOL_NAME = "llm_cache";

export const CACHE_ACTIONS = ["write", "read", "list", "update", "delete", "stats"] as const;

/** Items per `list` page unless the LLM asks for another number: 50 lines are about 6 KB. */
export const DEFAULT_LIST_LIMIT = 50;

/**
 * The most data one `read` returns. A 5 MB item would swamp any context window, so a bigger value is
 * described instead (its shape, and how to point into it). An option, because an extension may know better.
 */
export const DEFAULT_MAX_READ_BYTES = 256 * 1024;

/** Who is calling: the agent's session and, when it has them, its task and turn. */
export interface ToolContext {
  /** The session's conversationId, e.g. "conv_a3f8e2b4-…". Every call reaches only this session's items. */
  sessionId: string;
  /** The agent's task id. Items of one task share the taskId part of their keys. */
  taskId?: string;
  /**
   * The agent's turn id. Not put into keys: one turn often caches many items (50 email summaries), and a
   * write that names both ids of an existing key replaces that item, so the host generates the turn part.
   */
  turnId?: string;
}

export interface StorageToolOptions {
  /** Where legacy get/set/remove go: chrome.storage.local in an extension. Without it, they fail as text. */
  legacyStorage?: KeyValueStore;
  /** The clock for items' ages; Date.now by default. */
  now?: () => number;
  /** See DEFAULT_MAX_READ_BYTES. */
  maxReadBytes?: number;
}

/** The function-calling definition: `name`, `description` and a JSON-schema `parameters`. */
export const STORAGE_TOOL_DEFINITION = {
  name: STORAGE_TOOL_NAME,
  description:
    "Cache for large intermediate results (many items, results over 10 KB, multi-step aggregation), kept " +
    "outside your context for this conversation. write stores data and returns only its metadata; list shows " +
    "one line per item (key | size | age | description); read returns an item's data, or one part of it with " +
    "a JSON pointer. get/set/remove are the legacy chrome.storage.local calls.",
  parameters: {
    type: "object",
    properties: {
      action: {
        type: "string",
        enum: [...CACHE_ACTIONS, ...LEGACY_ACTIONS],
        description:
          "write: cache data. read: get an item's data. list: the items' metadata, newest first. update: change " +
          "an item's data or description. delete: remove an item. stats: the session's totals and free space. " +
          "get, set, remove: LEGACY plain chrome.storage.local calls, only for existing callers.",
      },
      data: {
        description: "write, update: the data to cache, any JSON value except null, at most 5 MB.",
      },
      description: {
        type: "string",
        maxLength: MAX_DESCRIPTION_CHARS,
        description:
          "write (required), update: what the item holds and how much, e.g. 'Summary of email 7/50: Ana re Q3 " +
          "budget (120 words)'. You see this later instead of the data. At most 300 characters.",
      },
      storageKey: {
        type: "string",
        description: "read, update, delete: the item's key exactly as write or list showed it.",
      },
      pointer: {
        type: "string",
        description: "read: a JSON pointer to read only one part of the data, e.g. '/emails/3/subject'.",
      },
      limit: {
        type: "integer",
        minimum: 1,
        maximum: 100,
        description: `list: items per page (default ${DEFAULT_LIST_LIMIT}).`,
      },
      cursor: {
        type: "string",
        description: "list: the cursor the previous page gave, to get the next page.",
      },
      customMetadata: {
        type: "object",
        description: "write, update: optional extra facts about the item, returned only by read.",
      },
      key: {
        type: "string",
        description: "LEGACY get, set, remove: the chrome.storage.local key.",
      },
      value: {
        description: "LEGACY set: the value to store under key.",
      },
    },
    required: ["action"],
  },
} as const;

/** The arguments as the LLM sent them; each action checks the ones it uses, mostly by passing them to the host. */
interface ToolArgs {
  action?: unknown;
  data?: unknown;
  description?: unknown;
  storageKey?: unknown;
  pointer?: unknown;
  limit?: unknown;
  cursor?: unknown;
  customMetadata?: unknown;
  key?: unknown;
  value?: unknown;
}

export class StorageTool {
  readonly name = STORAGE_TOOL_NAME;
  readonly definition = STORAGE_TOOL_DEFINITION;
  readonly #client: NativeCacheClient;
  readonly #legacyStorage: KeyValueStore | undefined;
  readonly #now: () => number;
  readonly #maxReadBytes: number;

  constructor(client: NativeCacheClient, options: StorageToolOptions = {}) {
    this.#client = client;
    this.#legacyStorage = options.legacyStorage;
    this.#now = options.now ?? Date.now;
    this.#maxReadBytes = options.maxReadBytes ?? DEFAULT_MAX_READ_BYTES;
  }

  /**
   * Runs one tool call. `args` is the call's arguments, as an object or as the JSON text function calling
   * delivers. Always resolves with text for the LLM, also when the call fails.
   */
  async execute(args: unknown, context: ToolContext): Promise<string> {
    let action = "call";
    try {
      const input = parseArgs(args);
      action = typeof input.action === "string" ? input.action : action;
      if (isLegacyAction(input.action)) {
        if (!this.#legacyStorage) {
          throw new InvalidRequestError({ message: "legacy storage is not configured in this extension" });
        }
        return await runLegacy(this.#legacyStorage, input.action, input);
      }
      switch (input.action) {
        case "write":
          return await this.#write(input, context);
        case "read":
          return await this.#read(input, context);
        case "list":
          return await this.#list(input, context);
        case "update":
          return await this.#update(input, context);
        case "delete":
          return await this.#delete(input, context);
        case "stats":
          return await this.#stats(context);
        default:
          throw new InvalidRequestError({
            message: "action must be one of the tool's actions",
            expected: [...CACHE_ACTIONS, ...LEGACY_ACTIONS].join(", "),
            actual: typeof input.action === "string" ? input.action.slice(0, 40) : typeof input.action,
            suggestion: "call llm_cache again with one of those actions",
          });
      }
    } catch (error) {
      return errorText(action, error);
    }
  }

  async #write(input: ToolArgs, context: ToolContext): Promise<string> {
    const item = await this.#client.write({
      sessionId: context.sessionId,
      taskId: context.taskId === undefined ? undefined : keyIdFor(context.taskId),
      data: input.data,
      description: input.description as string,
      customMetadata: input.customMetadata as { [key: string]: unknown } | undefined,
    });
    return `cached ${itemLine(item, this.#now())}`;
  }

  async #read(input: ToolArgs, context: ToolContext): Promise<string> {
    const pointer = input.pointer as string | undefined;
    const item = await this.#client.read({
      sessionId: context.sessionId,
      storageKey: hostKey(input.storageKey, context),
      pointer,
    });
    const lines = [itemLine(item, this.#now())];
    if (item.customMetadata !== undefined) lines.push(`customMetadata: ${JSON.stringify(item.customMetadata)}`);
    const where = pointer ? ` at ${pointer}` : "";
    const text = JSON.stringify(item.data);
    const bytes = utf8Length(text);
    if (bytes > this.#maxReadBytes) {
      lines.push(
        `the data${where} is ${formatSize(bytes)}, more than one read returns (${formatSize(this.#maxReadBytes)}). ` +
          describeShape(item.data, pointer ?? ""),
      );
    } else {
      lines.push(`data${where}: ${text}`);
    }
    return lines.join("\n");
  }

  async #list(input: ToolArgs, context: ToolContext): Promise<string> {
    const page = await this.#client.list({
      sessionId: context.sessionId,
      limit: (input.limit as number | undefined) ?? DEFAULT_LIST_LIMIT,
      cursor: input.cursor as string | undefined,
    });
    if (page.itemCount === 0) return "the cache of this session is empty";
    const count =
      page.items.length === page.itemCount
        ? itemCount(page.itemCount)
        : `${page.items.length} of ${itemCount(page.itemCount)}`;
    const now = this.#now();
    const lines = [`${count}, ${formatSize(page.totalSize)} in all, newest first (${ITEM_COLUMNS}):`];
    for (const item of page.items) lines.push(itemLine(item, now));
    if (page.nextCursor !== null) lines.push(`more: list with cursor "${page.nextCursor}"`);
    return lines.join("\n");
  }

  async #update(input: ToolArgs, context: ToolContext): Promise<string> {
    const item = await this.#client.update({
      sessionId: context.sessionId,
      storageKey: hostKey(input.storageKey, context),
      data: input.data,
      description: input.description as string | undefined,
      customMetadata: input.customMetadata as { [key: string]: unknown } | undefined,
    });
    return `updated ${itemLine(item, this.#now())}`;
  }

  async #delete(input: ToolArgs, context: ToolContext): Promise<string> {
    const result = await this.#client.delete({
      sessionId: context.sessionId,
      storageKey: hostKey(input.storageKey, context),
    });
    return `deleted ${shortKey(result.storageKey, context.sessionId)}, freed ${formatSize(result.freedBytes)}`;
  }

  async #stats(context: ToolContext): Promise<string> {
    const stats = await this.#client.stats(context.sessionId);
    const quota = formatSize(stats.quotaBytes);
    if (stats.itemCount === 0) return `the cache of this session is empty; ${quota} free`;
    const now = this.#now();
    const created = stats.createdAt === null ? "" : `; created ${formatAge(now - stats.createdAt)} ago`;
    const used = stats.lastAccessedAt === null ? "" : `, last used ${formatAge(now - stats.lastAccessedAt)} ago`;
    return (
      `${itemCount(stats.itemCount)}, ${formatSize(stats.totalSize)} used, ` +
      `${formatSize(stats.remainingBytes)} of ${quota} free${created}${used}`
    );
  }
}

/**
 * The key the host needs for the key the LLM passed. Anything but a string goes through unchanged, so the
 * host's own check names the problem.
 */
function hostKey(key: unknown, context: ToolContext): string {
  return typeof key === "string" ? fullKey(key, context.sessionId) : (key as string);
}

function parseArgs(args: unknown): ToolArgs {
  let value = args;
  if (typeof args === "string") {
    try {
      value = JSON.parse(args);
    } catch {
      throw new InvalidRequestError({
        message: "the tool's arguments are not valid JSON",
        suggestion: 'call llm_cache again with a JSON object such as {"action": "list"}',
      });
    }
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new InvalidRequestError({
      message: "the tool's arguments must be a JSON object",
      suggestion: 'call llm_cache again with a JSON object such as {"action": "list"}',
    });
  }
  return value as ToolArgs;
}

/**
 * A failure as the LLM should read it: what failed, why, and what to do next. `actual` is added when the
 * message doesn't already name it: the host's messages name keys and sizes, but not every bad value.
 */
export function errorText(action: string, error: unknown): string {
  if (error instanceof CacheError) {
    const actual = error.actual === undefined || names(error.message, String(error.actual)) ? "" : ` (got ${String(error.actual)})`;
    return `llm_cache ${action} failed: ${error.code}: ${sentence(error.message)}${actual}. Next: ${sentence(error.suggestion)}.`;
  }
  const message = error instanceof Error ? error.message : String(error);
  return (
    `llm_cache ${action} failed unexpectedly: ${sentence(message)}. ` +
    "Next: continue without the cache: process the data in your context, in smaller batches if needed."
  );
}

/** Whether `text` contains `value` as a whole word: "0" is not named by "from 1 to 1000". */
function names(text: string, value: string): boolean {
  const escaped = value.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return new RegExp(`(^|\\W)${escaped}(\\W|$)`).test(text);
}

/** A text without its final period, so that one can be added without doubling Chrome's ("… not found."). */
/** "1 item", "2 items". */
function itemCount(count: number): string {
  return count === 1 ? "1 item" : `${count} items`;
}

function sentence(text: string): string {
  return text.replace(/\.+$/, "");
}
