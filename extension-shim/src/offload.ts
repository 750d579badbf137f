/**
 * Offloading: another tool's large result goes into the cache instead of into the LLM's context.
 *
 * An email or page that a tool fetched would land in the context whole before the LLM could cache it, and the
 * LLM would then retype it as `write` arguments. `offloadLargeResults` wraps the tool's handler: a result over
 * the threshold is cached as it is (one write, no LLM involved), and the LLM gets its metadata line (key, size,
 * shape, description), a short head-and-tail preview, and how to read, search or pass it on.
 */

import type { NativeCacheClient } from "./client.js";
import { utf8Length } from "./protocol.js";
import { formatSize, itemLine } from "./tool/format.js";
import { keyIdFor, shortKey } from "./tool/keys.js";

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
}

/** A tool handler: arguments and the agent's context in, a result out. */
export type ToolHandler<A, C, R> = (args: A, context: C) => R | Promise<R>;

/**
 * `handler`, wrapped so that a result over the threshold is cached and replaced by a short text about it.
 * Smaller results, and every result while the cache can't take it (host missing, quota full), are returned
 * unchanged: offloading never makes a tool fail.
 */
export function offloadLargeResults<A, C extends { sessionId: string }, R>(
  client: NativeCacheClient,
  toolName: string,
  handler: ToolHandler<A, C, R>,
  options: OffloadOptions<A, C> = {},
): (args: A, context: C) => Promise<R | string> {
  const threshold = options.thresholdBytes ?? DEFAULT_OFFLOAD_THRESHOLD_BYTES;
  const previewChars = options.previewChars ?? DEFAULT_PREVIEW_CHARS;
  const describe = options.describe ?? ((args: A) => `${toolName} result for ${JSON.stringify(args) ?? "no arguments"}`);
  const now = options.now ?? Date.now;
  return async (args, context) => {
    const result = await handler(args, context);
    const text = typeof result === "string" ? result : JSON.stringify(result);
    if (text === undefined || utf8Length(text) <= threshold) return result;
    const taskId = options.taskId?.(context);
    let item;
    try {
      item = await client.write({
        sessionId: context.sessionId,
        taskId: taskId === undefined ? undefined : keyIdFor(taskId),
        data: result,
        description: oneLineCut(describe(args, result), 300),
      });
    } catch {
      return result;
    }
    const key = shortKey(item.storageKey, context.sessionId);
    return [
      `${toolName}'s result (${formatSize(item.dataSize)}) was cached instead of shown:`,
      itemLine(item, now()),
      `preview: ${preview(text, previewChars)}`,
      `Read it a page at a time with llm_cache read (storageKey "${key}", a pointer to one part), find words ` +
        `in it with llm_cache search, or pass it to a tool as {{llm_cache:${key}}}.`,
    ].join("\n");
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

/** The first `length` UTF-16 units of `text`, one shorter if that would split a surrogate pair. */
function cutAt(text: string, length: number): string {
  const unit = text.charCodeAt(length - 1);
  return text.slice(0, unit >= 0xd800 && unit <= 0xdbff ? length - 1 : length);
}

/** A description on one line, at most `max` characters. */
function oneLineCut(text: string, max: number): string {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length <= max ? line : `${cutAt(line, max - 1)}…`;
}
