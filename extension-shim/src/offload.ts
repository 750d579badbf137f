/**
 * Offloading: another tool's large result goes into the cache instead of into the LLM's context.
 *
 * An email or page that a tool fetched would land in the context whole before the LLM could cache it, and the
 * LLM would then retype it as `write` arguments. `offloadLargeResults` wraps the tool's handler: a result over
 * the threshold is cached as it is (one write, no LLM involved), and the LLM gets its metadata line (key, size,
 * shape, description), a short head-and-tail preview, and how to read, search or pass it on.
 *
 * A result bigger than one item may be (the host's `maxItemBytes`, 5 MB) is cached in parts: an array by
 * elements, an object by members, a string by characters, each part at most one item, and the LLM gets one line
 * per part. What can't be cut that way (one element alone is too big), doesn't fit the session's quota, or
 * can't be cached at all is shown as a preview with a note saying so. Such a result never reaches the LLM whole.
 *
 * Offloading never makes a tool fail by itself: a result JSON can't write (a cycle, a BigInt) is returned as
 * it is, and so is every result up to one item's size while the cache can't take it.
 */

import type { CacheBackend } from "./backend.js";
import { CacheError, DataTooLargeError, QuotaExceededError } from "./errors.js";
import { assembleReply, fence, fenceJsonText, freeText, fromLabel, isSourceTool, isTrusted, provenanceOf, untrustedOrigins, type ReplyPart } from "./provenance.js";
import {
  isHighSurrogate,
  isLowSurrogate,
  MAX_DESCRIPTION_CHARS,
  MAX_ITEM_BYTES,
  utf8Length,
  type CacheMetadata,
  type HelloResult,
  type ProvenanceInput,
} from "./protocol.js";
import { assertSessionId } from "./session-id.js";
import type { ContextTaint } from "./taint.js";
import { formatSize, itemLine } from "./tool/format.js";
import { keyIdFor, shortKey } from "./tool/keys.js";
import { STORAGE_TOOL_NAME } from "./tool/spec.js";

/** The spec's "results over 10 KB". */
export const DEFAULT_OFFLOAD_THRESHOLD_BYTES = 10 * 1024;

/** Characters of the result's text shown from its start and from its end. */
export const DEFAULT_PREVIEW_CHARS = 200;

export interface OffloadOptions<A, C> {
  /** Results whose JSON text is longer than this many bytes are cached; DEFAULT_OFFLOAD_THRESHOLD_BYTES by default. */
  thresholdBytes?: number;
  /** Characters of the preview's head and of its tail; DEFAULT_PREVIEW_CHARS by default. */
  previewChars?: number;
  /** The cached item's description; by default "<tool> result for <arguments>". */
  describe?: (args: A, result: unknown) => string;
  /** The agent's task id for a call, so that offloaded results share a taskId with the task's other items. */
  taskId?: (context: C) => string | undefined;
  /** The clock for the metadata line's age; Date.now by default. */
  now?: () => number;
  /**
   * The cache tool's name, for the texts that tell the LLM how to read the result (createLlmCache passes its
   * tool's `name` option); llm_cache by default. References keep their `{{llm_cache:KEY}}` spelling (prompt.ts).
   */
  cacheToolName?: string;
  /**
   * Where a result came from, e.g. `(args) => ({ origin: "web", source: { url: args.url } })`; by default
   * `{origin: "tool", source: {tool: <the tool's name>}}`. Every part of a result cached in parts carries it.
   * A function that throws labels the result `unknown`.
   */
  provenance?: (args: A, result: unknown) => ProvenanceInput;
  /** The session taint every result feeds, large or small (taint.ts); createLlmCache passes its own. */
  taint?: ContextTaint;
}

/** A tool handler: arguments and the agent's context in, a result out. */
export type ToolHandler<A, C, R> = (args: A, context: C) => R | Promise<R>;

/** One result being offloaded: what it is, and what the LLM is told about it. */
interface Offload {
  toolName: string;
  /** What the LLM calls the cache tool. */
  cacheTool: string;
  result: unknown;
  /** The result's JSON text. */
  json: string;
  /** What the preview shows: a string result as it is, anything else as its JSON text. */
  shown: string;
  /** The UTF-8 bytes of the result's JSON text: what the host counts against its limits. */
  bytes: number;
  previewChars: number;
  /** Where the result came from, as every item made of it says. */
  provenance: ProvenanceInput;
}

/** A piece of a result too big for one item, and which piece it is ("elements 0-999 of 3000"). */
interface Part {
  data: unknown;
  what: string;
}

/**
 * `handler`, wrapped so that a result over the threshold is cached and replaced by a short text about it.
 * Smaller results, results JSON can't write, and results up to one item's size while the cache can't take
 * them (host missing, quota full) are returned unchanged: offloading never makes a tool fail. A result over
 * one item's size is cached in parts, or else shown as a preview with a note.
 */
export function offloadLargeResults<A, C extends { sessionId: string }, R>(
  client: CacheBackend,
  toolName: string,
  handler: ToolHandler<A, C, R>,
  options: OffloadOptions<A, C> = {},
): (args: A, context: C) => Promise<R | string> {
  const threshold = options.thresholdBytes ?? DEFAULT_OFFLOAD_THRESHOLD_BYTES;
  const previewChars = options.previewChars ?? DEFAULT_PREVIEW_CHARS;
  const describe = options.describe ?? ((args: A) => `${toolName} result for ${argumentsText(args)}`);
  const now = options.now ?? Date.now;
  return async (args, context) => {
    assertSessionId(`offloadLargeResults(${JSON.stringify(toolName)}): context.sessionId`, context?.sessionId);
    const result = await handler(args, context);
    const provenance = (options.provenance === undefined ? undefined : orUndefined(() => options.provenance?.(args, result))) ?? fallbackProvenance(options.provenance, toolName);
    // Whatever reaches the model from this tool, cached or not, taints what it writes next.
    await options.taint?.note(context.sessionId, untrustedOrigins(provenance));
    const json = jsonText(result);
    if (json === undefined) return result;
    const bytes = utf8Length(json);
    if (bytes <= threshold) return result;
    const shown = typeof result === "string" ? result : json;
    const offload: Offload = { toolName, cacheTool: options.cacheToolName ?? STORAGE_TOOL_NAME, result, json, shown, bytes, previewChars, provenance };

    let limits: HelloResult["limits"] | undefined;
    try {
      limits = (await client.hello()).limits;
      const target = {
        sessionId: context.sessionId,
        taskId: orUndefined(() => {
          const taskId = options.taskId?.(context);
          return taskId === undefined ? undefined : keyIdFor(taskId);
        }),
        description: oneLineCut(orUndefined(() => String(describe(args, result))) ?? `${toolName} result`, MAX_DESCRIPTION_CHARS),
      };
      if (bytes <= limits.maxItemBytes) {
        try {
          const item = await client.write({ ...target, data: result, provenance });
          await options.taint?.note(context.sessionId, [], [item.storageKey]);
          return cachedText(offload, item, now());
        } catch (error) {
          // The host measured more than we did; anything else means the cache can't take it now.
          if (!(error instanceof DataTooLargeError)) throw error;
        }
      }
      const text = await cacheInParts(client, offload, target, limits);
      await options.taint?.note(context.sessionId, [], text.keys);
      return text.text;
    } catch (error) {
      if (bytes <= (limits?.maxItemBytes ?? MAX_ITEM_BYTES)) return result;
      return notCached(offload, reasonOf(error), error instanceof QuotaExceededError);
    }
  };
}

/** The first and last `chars` characters of `text`, with how much lies between. */
export function preview(text: string, chars: number): string {
  if (text.length <= 2 * chars + 40) return text;
  const head = cutAt(text, chars);
  const tail = text.slice(cutAt(text, text.length - chars).length);
  const skipped = utf8Length(text) - utf8Length(head) - utf8Length(tail);
  return `${head} …[${formatSize(skipped)} more]… ${tail}`;
}

/**
 * The provenance of a result whose `provenance` option threw (unknown: nothing is known of it), or of one without
 * the option: the tool's own name, when it is one a source may carry.
 */
function fallbackProvenance(option: unknown, toolName: string): ProvenanceInput {
  if (option !== undefined) return { origin: "unknown" };
  return isSourceTool(toolName) ? { origin: "tool", source: { tool: toolName } } : { origin: "tool" };
}

/**
 * The preview line: fenced when the result is untrusted, as every body of an untrusted item is. A string result's
 * preview is its text, fenced as a JSON string; any other result's is a cut of its JSON text, already on one line,
 * fenced as it is.
 */
function previewLine(offload: Offload): ReplyPart[] {
  const text = preview(offload.shown, offload.previewChars);
  if (isTrusted(offload.provenance)) return [`preview: ${text}`];
  return ["preview: ", typeof offload.result === "string" ? fence(text) : fenceJsonText(text)];
}

/** The text the LLM gets for a result cached as one item. */
function cachedText(offload: Offload, item: CacheMetadata, now: number): string {
  const key = shortKey(item.storageKey, item.sessionId);
  return assembleReply([
    `${offload.toolName}'s result (${formatSize(item.dataSize)}) was cached instead of shown:\n`,
    itemLine(item, now),
    "\n",
    ...previewLine(offload),
    `\nRead it a page at a time with ${offload.cacheTool} read (storageKey "${key}", a pointer to one part), find words ` +
      `in it with ${offload.cacheTool} search, or pass it to a tool as {{llm_cache:${key}}}.`,
  ]);
}

/**
 * Caches a result too big for one item as several, all under one taskId. If the quota (or anything else)
 * refuses a part, the parts written are deleted again and the LLM gets a preview and a note.
 */
async function cacheInParts(
  client: CacheBackend,
  offload: Offload,
  target: { sessionId: string; taskId: string | undefined; description: string },
  limits: HelloResult["limits"],
): Promise<{ text: string; keys: string[] }> {
  const none = (text: string) => ({ text, keys: [] });
  if (offload.bytes > limits.sessionQuotaBytes) {
    return none(notCached(offload, `it is more than a session's whole cache (${formatSize(limits.sessionQuotaBytes)})`, false));
  }
  const parts = split(offload.result, offload.json, limits.maxItemBytes, isTrusted(offload.provenance));
  if (typeof parts === "string") return none(notCached(offload, `${parts}, more than one item holds (${formatSize(limits.maxItemBytes)})`, false));

  const write = (i: number, taskId: string | undefined) => {
    const label = ` (part ${i + 1} of ${parts.length}: ${(parts[i] as Part).what})`;
    return client.write({
      sessionId: target.sessionId,
      taskId,
      data: (parts[i] as Part).data,
      description: oneLineCut(target.description, MAX_DESCRIPTION_CHARS - label.length) + label,
      provenance: offload.provenance,
    });
  };
  // The first part alone, so that its taskId (generated, unless the agent gave one) groups the others with it;
  // the others together, so that the host can commit them as one group.
  let first: CacheMetadata;
  try {
    first = await write(0, target.taskId);
  } catch (error) {
    return none(notCached(offload, reasonOf(error), error instanceof QuotaExceededError));
  }
  const taskId = shortKey(first.storageKey, first.sessionId).split("_")[0];
  const rest = await Promise.allSettled(parts.slice(1).map((_, i) => write(i + 1, taskId)));
  const written = [first, ...rest.flatMap((outcome) => (outcome.status === "fulfilled" ? [outcome.value] : []))];
  const refused = rest.find((outcome) => outcome.status === "rejected");
  if (refused !== undefined) {
    await Promise.allSettled(written.map((item) => client.delete({ sessionId: item.sessionId, storageKey: item.storageKey })));
    return none(notCached(offload, reasonOf(refused.reason), refused.reason instanceof QuotaExceededError));
  }

  const key = shortKey(first.storageKey, first.sessionId);
  // Each part's line as an item's: the shape is the content's member names, quoted when the result is untrusted.
  const partLine = (item: CacheMetadata, i: number) => {
    const provenance = provenanceOf(item);
    const shape = item.shape ? freeText(item.shape, isTrusted(provenance)) : "?";
    return `${shortKey(item.storageKey, item.sessionId)} | ${formatSize(item.dataSize)} | ${fromLabel(provenance)} | ${shape} | ${(parts[i] as Part).what}\n`;
  };
  const text = assembleReply([
    `${offload.toolName}'s result (${formatSize(offload.bytes)}) is more than one item holds ` +
      `(${formatSize(limits.maxItemBytes)}), so it was cached in ${parts.length} parts instead of shown (key | size | from | shape | part):\n`,
    ...written.map(partLine),
    ...previewLine(offload),
    `\nRead a part a page at a time with ${offload.cacheTool} read (storageKey "${key}", a pointer to one part), find words ` +
      `in all of them with ${offload.cacheTool} search, or pass a part to a tool as {{llm_cache:${key}}}.`,
  ]);
  return { text, keys: written.map((item) => item.storageKey) };
}

/** The text the LLM gets for a result too big to show that could not be cached: why, a preview, what to do. */
function notCached(offload: Offload, reason: string, quota: boolean): string {
  const free = quota ? `, or free space in the cache (${offload.cacheTool} list shows the items' sizes, delete removes one) and call it again` : "";
  return assembleReply([
    `${offload.toolName}'s result (${formatSize(offload.bytes)}) is too big to show, and was not cached: ${reason}.\n`,
    ...previewLine(offload),
    `\nNext: call ${offload.toolName} again for less (a page, a narrower query, fewer fields)${free}.`,
  ]);
}

/**
 * `value` cut into parts whose JSON texts are each at most `maxBytes`: an array by elements, an object by
 * members, a string by characters (never splitting one). Or, when no such cut exists, why not, naming a member
 * of an untrusted value by its position. `json` is `value`'s JSON text.
 */
function split(value: unknown, json: string, maxBytes: number, trusted: boolean): Part[] | string {
  // What JSON writes for a value with toJSON is what toJSON returns, so that is what gets cut.
  const hasToJson = typeof value === "object" && value !== null && typeof (value as { toJSON?: unknown }).toJSON === "function";
  const data = hasToJson ? (JSON.parse(json) as unknown) : value;
  if (typeof data === "string") return splitString(data, maxBytes);
  if (Array.isArray(data)) {
    const measure = (i: number) => ({
      // An element JSON can't write (undefined, a function) is written as null, as JSON.stringify does.
      bytes: utf8Length(JSON.stringify(data[i]) ?? "null"),
      name: `element ${i}`,
    });
    return splitMembers(data.length, maxBytes, "elements", measure, (start, end) => data.slice(start, end));
  }
  if (typeof data !== "object" || data === null) return `it is one ${typeof data}`;
  // Members JSON leaves out (undefined, a function) are left out here too, and the rest measured once.
  const members: Array<{ name: string; member: unknown; bytes: number }> = [];
  for (const [name, member] of Object.entries(data)) {
    const text = JSON.stringify(member);
    if (text !== undefined) members.push({ name, member, bytes: utf8Length(JSON.stringify(name)) + 1 + utf8Length(text) });
  }
  const measure = (i: number) => {
    const { name, bytes } = members[i] as (typeof members)[number];
    // An untrusted result's member names are its content, which the model sees only quoted on an item's line or fenced.
    return { bytes, name: trusted ? `member ${JSON.stringify(name.slice(0, 40))}` : `member ${i}` };
  };
  return splitMembers(members.length, maxBytes, "members", measure, (start, end) =>
    Object.fromEntries(members.slice(start, end).map(({ name, member }) => [name, member])),
  );
}

/**
 * Fills parts with consecutive members of a container of `count` members, in one pass: each part holds as many
 * as fit in `maxBytes` of JSON text (the brackets, and a comma between members, included).
 */
function splitMembers(
  count: number,
  maxBytes: number,
  unit: string,
  measure: (i: number) => { bytes: number; name: string },
  slice: (start: number, end: number) => unknown,
): Part[] | string {
  const parts: Part[] = [];
  const close = (start: number, end: number) => parts.push({ data: slice(start, end), what: `${unit} ${start}-${end - 1} of ${count}` });
  let start = 0;
  let size = 2;
  for (let i = 0; i < count; i++) {
    const { bytes, name } = measure(i);
    if (2 + bytes > maxBytes) return `its ${name} alone is ${formatSize(bytes)}`;
    if (i > start && size + 1 + bytes > maxBytes) {
      close(start, i);
      start = i;
      size = 2;
    }
    size += (i > start ? 1 : 0) + bytes;
  }
  close(start, count);
  return parts;
}

/**
 * A string cut into parts of at most `maxBytes` of JSON text each, counting what JSON.stringify writes for each
 * character (2 bytes for a quote or a line break, 6 for other control characters and lone surrogates) and
 * never cutting a surrogate pair. Parts are described in characters (code points).
 */
function splitString(text: string, maxBytes: number): Part[] {
  const budget = maxBytes - 2; // the quotes
  const cuts: Array<[number, number]> = []; // [UTF-16 index, code point index] where each part starts
  let size = 0;
  let characters = 0;
  for (let i = 0; i < text.length; characters++) {
    const unit = text.charCodeAt(i);
    const pair = isHighSurrogate(unit) && isLowSurrogate(text.charCodeAt(i + 1));
    const bytes = pair ? 4 : jsonUnitBytes(unit);
    if (size + bytes > budget) {
      cuts.push([i, characters]);
      size = 0;
    }
    size += bytes;
    i += pair ? 2 : 1;
  }
  const starts: Array<[number, number]> = [[0, 0], ...cuts, [text.length, characters]];
  const parts: Part[] = [];
  for (let p = 0; p + 1 < starts.length; p++) {
    const [from, first] = starts[p] as [number, number];
    const [to, next] = starts[p + 1] as [number, number];
    parts.push({ data: text.slice(from, to), what: `characters ${first}-${next - 1} of ${characters}` });
  }
  return parts;
}

/** The bytes JSON.stringify writes for one UTF-16 unit that is not half of a surrogate pair. */
function jsonUnitBytes(unit: number): number {
  if (unit === 0x22 || unit === 0x5c) return 2; // \" and \\
  if (unit === 0x08 || unit === 0x09 || unit === 0x0a || unit === 0x0c || unit === 0x0d) return 2; // \b \t \n \f \r
  if (unit < 0x20) return 6; // \u00XX
  if (unit < 0x80) return 1;
  if (unit < 0x800) return 2;
  if (unit >= 0xd800 && unit <= 0xdfff) return 6; // a lone surrogate, written as \uXXXX
  return 3;
}

/** The JSON text of `value`, or undefined when JSON can't write it (a cycle, a BigInt, a throwing toJSON, a function). */
function jsonText(value: unknown): string | undefined {
  try {
    return JSON.stringify(value);
  } catch {
    return undefined;
  }
}

/** The arguments as the default description shows them. */
function argumentsText(args: unknown): string {
  const text = jsonText(args);
  return text === undefined ? "arguments JSON can't show" : text;
}

/** What `option` returns, or undefined if it throws: the caller's describe and taskId can't fail the tool. */
function orUndefined<T>(option: () => T): T | undefined {
  try {
    return option();
  } catch {
    return undefined;
  }
}

/** Why a result could not be cached, in one short clause. */
function reasonOf(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const text = oneLineCut(message.replace(/\.+$/, ""), 200);
  return error instanceof CacheError ? `${error.code}: ${text}` : text;
}

/** The first `length` UTF-16 units of `text`, one shorter if that would split a surrogate pair. */
function cutAt(text: string, length: number): string {
  const unit = text.charCodeAt(length - 1);
  return text.slice(0, isHighSurrogate(unit) ? length - 1 : length);
}

/** A description on one line, at most `max` characters. Only its start is looked at, however long it is. */
function oneLineCut(text: string, max: number): string {
  const line = text.slice(0, 8 * max).replace(/\s+/g, " ").trim();
  return line.length <= max ? line : `${cutAt(line, max - 1)}…`;
}
