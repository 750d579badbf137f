/**
 * StorageTool: the LLM tool `llm_cache`. `run` carries out one call and says whether it worked and what the LLM
 * reads; `execute` is the same as text only. Its definitions for every LLM API are in definitions.ts.
 *
 * Two rules shape everything here. What comes back is compact, because it is spent from the LLM's context:
 * one line per item (see format.ts). And a failure comes back as text that says what to do next, because the
 * LLM can often recover (delete old items, split the data, or carry on without the cache); an agent whose tool
 * registry records failures gets `ok: false` with that same text (adapters/browserx.ts).
 *
 * Measured cost (test/storage-tool.test.ts): a `list` of 50 items whose descriptions are email summaries of
 * about 80 characters and whose shape is `object{from,subject,summary}` is 7,557 bytes of text: 151 bytes per
 * item, of which about 42 are the key, size, age, `from` and separators. The spec's budget is 500 bytes per item; the
 * host's JSON metadata for the same item is about 320 bytes, because it spells out the 41-character session
 * id twice.
 */

import type { CacheBackend } from "../backend.js";
import { CacheError, InvalidRequestError } from "../errors.js";
import { assertSessionId } from "../session-id.js";
import { assembleReply, escapeUnicodeTerminators, fence, fromLabel, isTrusted, plainText, provenanceOf, quotedText, untrustedOrigins, type RandomValues, type ReplyPart } from "../provenance.js";
import { MAX_DESCRIPTION_CHARS, utf8Length, type CachedItem, type StatsResult } from "../protocol.js";
import { ContextTaint } from "../taint.js";
import { toolDefinitions, type ToolDefinitions } from "./definitions.js";
import { ITEM_COLUMNS, describeShape, echo, formatAge, formatSize, itemCount, itemLine, pageLine } from "./format.js";
import { fullKey, keyIdFor, shortKey } from "./keys.js";
import { CACHE_ACTIONS, DEFAULT_LIST_LIMIT, DEFAULT_SEARCH_LIMIT, MAX_PAGE_LIMIT, STORAGE_TOOL_NAME, toolName, type ToolNameOption } from "./spec.js";

export { CACHE_ACTIONS, DEFAULT_LIST_LIMIT, DEFAULT_SEARCH_LIMIT, MAX_PAGE_LIMIT, STORAGE_TOOL_NAME } from "./spec.js";

/**
 * The most data one `read` returns, as bytes of JSON text: 12 KB, about 3,000 tokens. A longer value comes
 * back a page at a time (elements of an array, members of an object, characters of a text), each page saying
 * where the next starts; the host cuts the page, so a page of a 5 MB item costs what the page costs. An
 * option, because an extension whose model has a large context may want bigger pages.
 */
export const DEFAULT_MAX_READ_BYTES = 12 * 1024;

/** Who is calling: the agent's session and, when it has them, its task and turn. */
export interface ToolContext {
  /**
   * The session's conversationId: `conv_` then 1 to 64 of [A-Za-z0-9-], e.g. "conv_a3f8e2b4-…" (PROTOCOL.md 5.1).
   * Every call reaches only this session's items. Any other value is a TypeError from `run` and `execute`.
   */
  sessionId: string;
  /** The agent's task id. Items of one task share the taskId part of their keys. */
  taskId?: string | undefined;
  /**
   * The agent's turn id. Not put into keys: one turn often caches many items (50 email summaries), and a
   * write that names both ids of an existing key replaces that item, so the host generates the turn part.
   */
  turnId?: string | undefined;
}

export interface StorageToolOptions extends ToolNameOption {
  /** The clock for items' ages; Date.now by default. */
  now?: () => number;
  /** See DEFAULT_MAX_READ_BYTES. */
  maxReadBytes?: number;
  /**
   * What the model has seen in each session, which the provenance of its writes names (taint.ts); shared with
   * offloading and references by createLlmCache. A tool made without one keeps its own, unwired: its writes
   * carry upstream `unknown`.
   */
  taint?: ContextTaint;
  /** The random source of fence ids; crypto.getRandomValues by default. */
  randomValues?: RandomValues;
}

/** One call's result: the text for the LLM, and whether the call did what was asked. */
export type ToolOutcome = { ok: true; text: string } | { ok: false; text: string; error: unknown };

/** The arguments as the LLM sent them; each action checks the ones it uses, mostly by passing them to the host. */
interface ToolArgs {
  action?: unknown;
  data?: unknown;
  description?: unknown;
  storageKey?: unknown;
  pointer?: unknown;
  offset?: unknown;
  limit?: unknown;
  query?: unknown;
  cursor?: unknown;
  customMetadata?: unknown;
}

export class StorageTool {
  /** The name the LLM calls it by (the `name` option; llm_cache by default). Every answer names the tool so. */
  readonly name: string;
  /** The tool's definition for each LLM API; see definitions.ts. */
  readonly definitions: ToolDefinitions;
  readonly #client: CacheBackend;
  readonly #options: StorageToolOptions;
  readonly #now: () => number;
  readonly #maxReadBytes: number;
  readonly #taint: ContextTaint;

  constructor(client: CacheBackend, options: StorageToolOptions = {}) {
    this.name = toolName(options);
    this.definitions = toolDefinitions({ name: this.name });
    this.#client = client;
    this.#taint = options.taint ?? new ContextTaint();
    this.#options = { ...options, taint: this.#taint };
    this.#now = options.now ?? Date.now;
    this.#maxReadBytes = options.maxReadBytes ?? DEFAULT_MAX_READ_BYTES;
  }

  /** The same tool over the same backend, called `name`: for an adapter given its own name option. */
  named(name: string | undefined): StorageTool {
    return name === undefined || name === this.name ? this : new StorageTool(this.#client, { ...this.#options, name });
  }

  /**
   * Runs one tool call and resolves with the text the LLM sees, also when the call failed. `args` is the call's
   * arguments, as an object or as the JSON text function calling delivers.
   */
  async execute(args: unknown, context: ToolContext): Promise<string> {
    return (await this.run(args, context)).text;
  }

  /**
   * Runs one tool call. Whatever the LLM sent, it resolves: a failure's text says what went wrong and what to do
   * next. Only the extension's own mistake rejects: a `context.sessionId` that isn't `conv_` then 1 to 64 of
   * [A-Za-z0-9-] is a TypeError saying so, before any request (session-id.ts).
   */
  async run(args: unknown, context: ToolContext): Promise<ToolOutcome> {
    assertSessionId(`${this.name} tool.run: context.sessionId`, context?.sessionId);
    let action = "call";
    try {
      const input = parseArgs(args, this.name);
      action = typeof input.action === "string" ? input.action : action;
      refuseProvenance(input, this.name);
      return { ok: true, text: assembleReply(await this.#dispatch(input, context), this.#options.randomValues) };
    } catch (error) {
      return { ok: false, text: errorText(action, error, this.name), error };
    }
  }

  #dispatch(input: ToolArgs, context: ToolContext): Promise<ReplyPart[] | string> {
    switch (input.action) {
      case "write":
        return this.#write(input, context);
      case "read":
        return this.#read(input, context);
      case "append":
        return this.#append(input, context);
      case "list":
        return this.#list(input, context);
      case "search":
        return this.#search(input, context);
      case "update":
        return this.#update(input, context);
      case "delete":
        return this.#delete(input, context);
      case "stats":
        return this.#stats(context);
      default:
        throw new InvalidRequestError({
          message: "action must be one of the tool's actions",
          expected: CACHE_ACTIONS.join(", "),
          actual: typeof input.action === "string" ? input.action.slice(0, 40) : typeof input.action,
          suggestion: `call ${this.name} again with one of those actions`,
        });
    }
  }

  async #write(input: ToolArgs, context: ToolContext): Promise<string> {
    const item = await this.#client.write({
      sessionId: context.sessionId,
      taskId: context.taskId === undefined ? undefined : keyIdFor(context.taskId),
      data: parseData(input.data),
      description: sentDescription(input.description) as string,
      customMetadata: parseCustomMetadata(input.customMetadata, this.name),
      provenance: await this.#taint.agentProvenance(context.sessionId),
    });
    return `cached ${itemLine(item, this.#now())}`;
  }

  async #read(input: ToolArgs, context: ToolContext): Promise<ReplyPart[]> {
    const item = await this.#client.read({
      sessionId: context.sessionId,
      storageKey: hostKey(input.storageKey, context),
      pointer: input.pointer as string | undefined,
      offset: input.offset as number | undefined,
      limit: input.limit as number | undefined,
      maxBytes: this.#maxReadBytes,
    });
    await this.#taint.note(context.sessionId, untrustedOrigins(provenanceOf(item)), [item.storageKey]);
    return readReply(item, (input.pointer as string | undefined) ?? "", this.#maxReadBytes, this.#now());
  }

  async #append(input: ToolArgs, context: ToolContext): Promise<string> {
    const item = await this.#client.append({
      sessionId: context.sessionId,
      storageKey: hostKey(input.storageKey, context),
      pointer: input.pointer as string | undefined,
      data: appendData(input.data),
      description: sentDescription(input.description) as string | undefined,
      provenance: await this.#taint.agentProvenance(context.sessionId),
    });
    return `appended; now ${itemLine(item, this.#now())}`;
  }

  async #list(input: ToolArgs, context: ToolContext): Promise<string> {
    const query = input.query as string | undefined;
    const page = await this.#client.list({
      sessionId: context.sessionId,
      limit: pageLimit(input.limit, DEFAULT_LIST_LIMIT, this.name),
      cursor: input.cursor as string | undefined,
      query,
    });
    const matching = typeof query === "string" ? ` matching "${echo(query)}"` : "";
    if (page.itemCount === 0) return query === undefined ? "the cache of this session is empty" : `no items${matching}`;
    const count =
      page.items.length === page.itemCount
        ? itemCount(page.itemCount)
        : `${page.items.length} of ${itemCount(page.itemCount)}`;
    const now = this.#now();
    const lines = [`${count}${matching}, ${formatSize(page.totalSize)} in all, newest first (${ITEM_COLUMNS}):`];
    for (const item of page.items) lines.push(itemLine(item, now));
    if (page.nextCursor !== null) lines.push(`more: list with cursor "${page.nextCursor}"`);
    return lines.join("\n");
  }

  async #search(input: ToolArgs, context: ToolContext): Promise<string> {
    const query = input.query as string;
    const cursor = input.cursor as string | undefined;
    const result = await this.#client.search({
      sessionId: context.sessionId,
      query,
      limit: pageLimit(input.limit, DEFAULT_SEARCH_LIMIT, this.name),
      cursor,
    });
    const words = typeof query === "string" ? echo(query) : "";
    if (result.matches.length === 0) {
      return cursor === undefined ? `no cached text contains "${words}"` : `no more matches for "${words}"`;
    }
    const count = result.matches.length === 1 ? "1 match" : `${result.matches.length} matches`;
    const lines = [`${count} for "${words}" (key | from | pointer | snippet):`];
    for (const match of result.matches) {
      const provenance = provenanceOf(match);
      const trusted = isTrusted(provenance);
      // A pointer's tokens are the item's member names: an untrusted item's are quoted like its other text.
      const path = match.pointer === "" ? '""' : trusted ? plainText(match.pointer) : quotedText(match.pointer);
      // A cut pointer names an ancestor of the match (data nested hundreds deep): say so, or the LLM reads the wrong value.
      const pointer = `${path}${match.pointerCut === true ? " (an ancestor: the match is deeper)" : ""}`;
      const snippet = trusted ? plainText(match.snippet) : quotedText(match.snippet);
      lines.push(`${shortKey(match.storageKey, context.sessionId)} | ${fromLabel(provenance)} | ${pointer} | ${snippet}`);
    }
    const seen = result.matches.map(provenanceOf).flatMap(untrustedOrigins);
    await this.#taint.note(context.sessionId, seen, result.matches.map((match) => match.storageKey));
    if (result.nextCursor !== null) lines.push(`more: search with cursor "${result.nextCursor}"`);
    return lines.join("\n");
  }

  async #update(input: ToolArgs, context: ToolContext): Promise<string> {
    const item = await this.#client.update({
      sessionId: context.sessionId,
      storageKey: hostKey(input.storageKey, context),
      data: parseData(input.data),
      description: sentDescription(input.description) as string | undefined,
      customMetadata: parseCustomMetadata(input.customMetadata, this.name),
      provenance: await this.#taint.agentProvenance(context.sessionId),
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
    const space = freeSpace(stats);
    if (stats.itemCount === 0) return `the cache of this session is empty; ${space}`;
    const now = this.#now();
    const created = stats.createdAt === null ? "" : `; created ${formatAge(now - stats.createdAt)} ago`;
    const used = stats.lastAccessedAt === null ? "" : `, last used ${formatAge(now - stats.lastAccessedAt)} ago`;
    return `${itemCount(stats.itemCount)}, ${formatSize(stats.totalSize)} used, ${space}${created}${used}`;
  }
}

/**
 * The reply to a read of `item` (its metadata, customMetadata on the first page, and the data or a page of it),
 * as parts for assembleReply: an untrusted item's customMetadata and data are fenced, and a trusted item's are
 * shown as they are. `pointer` is the pointer the read was given.
 */
export function readReply(item: CachedItem, pointer: string, maxReadBytes: number, now: number): ReplyPart[] {
  const trusted = isTrusted(provenanceOf(item));
  // A trusted body is JSON as it always was, but for U+0085, U+2028 and U+2029, which JSON leaves raw and a reader
  // splitting on Unicode line breaks would take for the end of the line.
  const body = (value: unknown): ReplyPart => (trusted ? escapeUnicodeTerminators(JSON.stringify(value) ?? "null") : fence(value));
  const parts: ReplyPart[] = [itemLine(item, now)];
  const later = item.slice !== undefined && item.slice.offset > 0;
  if (item.customMetadata !== undefined && !later) parts.push("\ncustomMetadata: ", body(item.customMetadata));
  const text = JSON.stringify(item.data);
  if (item.slice !== undefined) {
    const intro = pageLine(item.data, item.slice, pointer, maxReadBytes);
    parts.push("\n", ...(item.slice.count === 0 ? [intro] : [`${intro}: `, body(item.data)]));
  } else if (utf8Length(text) > maxReadBytes) {
    // A host older than maxBytes sent the whole value.
    const where = pointer ? ` at ${pointer}` : "";
    parts.push(
      `\nthe data${where} is ${formatSize(utf8Length(text))}, more than one read returns (${formatSize(maxReadBytes)}). `,
      ...describeShape(item.data, pointer, trusted),
    );
  } else {
    parts.push(`\ndata${pointer ? ` at ${pointer}` : ""}: `, body(item.data));
  }
  return parts;
}

/**
 * The exact text the model gets for a read of `item` with no pointer, fences included (each call draws its
 * own fence id, as each reply does): for the viewer, which shows an item as the model sees it.
 */
export function modelTextOf(item: CachedItem, options: { now?: number; maxReadBytes?: number; randomValues?: RandomValues } = {}): string {
  const parts = readReply(item, "", options.maxReadBytes ?? DEFAULT_MAX_READ_BYTES, options.now ?? Date.now());
  return assembleReply(parts, options.randomValues);
}

/** The members a call may not carry: where an item came from is the extension's to say, never the model's. */
const PROVENANCE_MEMBERS = ["provenance", "trust", "origin", "endorsed"] as const;

function refuseProvenance(input: ToolArgs, name: string): void {
  const sent = PROVENANCE_MEMBERS.find((member) => Object.hasOwn(input, member));
  if (sent === undefined) return;
  throw new InvalidRequestError({
    message: `the tool takes no "${sent}": the extension sets where items come from, never a tool call`,
    expected: `the tool's own parameters, without "${sent}"`,
    actual: sent,
    suggestion: `call ${name} again without "${sent}"`,
  });
}

/**
 * What the session can still take, as `stats` says it: the smaller of what its own quota and the store-wide quota
 * leave (a host older than the store quota reports only the first), rounded down. "49.9MB of 50MB free" while the
 * session's quota is what binds; "1.2MB free (store-wide limit)" when the store, shared with other sessions, is.
 */
function freeSpace(stats: StatsResult): string {
  const store = stats.storeRemainingBytes;
  if (store !== undefined && store < stats.remainingBytes) return `${formatSize(store, "down")} free (store-wide limit)`;
  const free = formatSize(stats.remainingBytes, "down");
  return stats.itemCount === 0 ? `${free} free` : `${free} of ${formatSize(stats.quotaBytes)} free`;
}

/**
 * The key the host needs for the key the LLM passed. Anything but a string goes through unchanged, so the
 * host's own check names the problem.
 */
function hostKey(key: unknown, context: ToolContext): string {
  return typeof key === "string" ? fullKey(key, context.sessionId) : (key as string);
}

function parseArgs(args: unknown, name: string): ToolArgs {
  let value = args;
  if (typeof args === "string") {
    try {
      value = JSON.parse(args);
    } catch {
      throw new InvalidRequestError({
        message: "the tool's arguments are not valid JSON",
        suggestion: `call ${name} again with a JSON object such as {"action": "list"}`,
      });
    }
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new InvalidRequestError({
      message: "the tool's arguments must be a JSON object",
      suggestion: `call ${name} again with a JSON object such as {"action": "list"}`,
    });
  }
  // Strict definitions make the LLM send every parameter, null where the action doesn't use it.
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== null)) as ToolArgs;
}

/**
 * The value to cache. The LLM sends it as JSON text (the only form every API's strict mode takes); text that
 * isn't JSON is cached as that text, and so is a number that JSON would change ("1e999", a 30-digit id,
 * "42.0"), so that nothing the LLM wrote is lost. Any other value is cached as it is, without a word: it came
 * from a caller that isn't an LLM, or from an LLM that sent an object where the schema says text, and either
 * way it is what that object's JSON text would have been parsed to. Refusing it would cost the LLM a turn for
 * nothing.
 */
export function parseData(data: unknown): unknown {
  if (typeof data !== "string") return data;
  let parsed: unknown;
  try {
    parsed = JSON.parse(data);
  } catch {
    return data;
  }
  return typeof parsed === "number" && String(parsed) !== data.trim() ? data : parsed;
}

/**
 * What `append` adds: a JSON array's elements, or text. Text that parses as something else (a number, an
 * object) is added as the text it is, since only an array or a string can be appended.
 */
function appendData(data: unknown): unknown {
  const parsed = parseData(data);
  return typeof data === "string" && typeof parsed !== "string" && !Array.isArray(parsed) ? data : parsed;
}

/**
 * A description as sent to the host. The host keeps at most MAX_DESCRIPTION_CHARS characters (the last one `…`);
 * a longer string is cut here to four times that many UTF-16 units (never splitting a surrogate pair), still
 * longer than the host keeps, so the host cuts it exactly as it would have cut the whole, and a 60 MB
 * description costs no more than a short one. Anything else goes as it is, for the host's check to name.
 */
function sentDescription(description: unknown): unknown {
  const units = 4 * MAX_DESCRIPTION_CHARS;
  if (typeof description !== "string" || description.length <= units) return description;
  const last = description.charCodeAt(units - 1);
  return description.slice(0, last >= 0xd800 && last <= 0xdbff ? units - 1 : units);
}

/**
 * A page size for list or search: the default when absent, and never more than a page the context can take.
 * A value that isn't a number goes to the host as it is, whose check names it.
 */
function pageLimit(limit: unknown, fallback: number, name: string): number {
  if (limit === undefined) return fallback;
  if (typeof limit === "number" && limit > MAX_PAGE_LIMIT) {
    throw new InvalidRequestError({
      message: `limit is more than ${MAX_PAGE_LIMIT} results per page`,
      expected: `an integer from 1 to ${MAX_PAGE_LIMIT}`,
      actual: limit,
      suggestion: `call ${name} again with a limit of at most ${MAX_PAGE_LIMIT}, and page on with the cursor`,
    });
  }
  return limit as number;
}

/** customMetadata as JSON text of an object (or an object, from callers that aren't LLMs). */
function parseCustomMetadata(value: unknown, name: string): { [key: string]: unknown } | undefined {
  if (value === undefined) return undefined;
  let parsed: unknown = value;
  if (typeof value === "string") {
    try {
      parsed = JSON.parse(value);
    } catch {
      parsed = undefined;
    }
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new InvalidRequestError({
      message: "customMetadata must be the JSON text of an object",
      expected: 'JSON object text such as {"source":"gmail"}',
      actual: typeof value === "string" ? "text that is not a JSON object" : typeof value,
      suggestion: `call ${name} again with customMetadata as JSON object text, or without it`,
    });
  }
  return parsed as { [key: string]: unknown };
}

/**
 * A failure as the LLM should read it: what failed, why, and what to do next. `actual` is added when the
 * message doesn't already name it: the host's messages name keys and sizes, but not every bad value.
 */
export function errorText(action: string, error: unknown, name: string = STORAGE_TOOL_NAME): string {
  if (error instanceof CacheError) {
    const actual =
      error.actual === undefined || names(error.message, String(error.actual)) ? "" : ` (got ${echo(String(error.actual), 120)})`;
    return `${name} ${action} failed: ${error.code}: ${sentence(error.message)}${actual}. Next: ${sentence(error.suggestion)}.`;
  }
  const message = error instanceof Error ? error.message : String(error);
  return (
    `${name} ${action} failed unexpectedly: ${sentence(message)}. ` +
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
function sentence(text: string): string {
  return text.replace(/\.+$/, "");
}
