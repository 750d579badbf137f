/**
 * References: cached data flowing into another tool's arguments without passing through the LLM.
 *
 * The last step of a long task (write a document from 50 cached summaries) would otherwise read every summary
 * back into context only to send it out again as arguments. Instead the LLM names the data, and
 * `resolveReferences` puts it in place before the tool runs. Two forms:
 * - a value `{"$llm_cache": "<key>"}` or `{"$llm_cache": "<key>", "pointer": "/summaries"}` anywhere in the
 *   arguments becomes the cached value it names, whatever its type;
 * - `{{llm_cache:<key>}}` or `{{llm_cache:<key>/summaries}}` inside a string argument becomes the value as text
 *   (see `spliceText`). This is the form strict schemas allow, where an argument must be a string.
 * Keys are short (as the tool shows them) or full. Values are read whole: they go to the tool, not the LLM.
 */

import type { NativeCacheClient } from "./client.js";
import { InvalidRequestError } from "./errors.js";
import type { JsonValue } from "./protocol.js";
import { fullKey } from "./tool/keys.js";

/** The member that marks an object as a reference. */
export const REFERENCE_MEMBER = "$llm_cache";

/**
 * For the description of a tool whose handler resolves references, so that the LLM knows it may pass them.
 * The system prompt explains the two forms.
 */
export const REFERENCE_NOTE = " Accepts llm_cache references in its arguments.";

/** `{{llm_cache:KEY}}` or `{{llm_cache:KEY/pointer}}`; the pointer runs up to the closing braces. */
const SPLICE = /\{\{llm_cache:([A-Za-z0-9_-]+)((?:\/(?:[^}]|\}(?!\}))*)?)\}\}/g;

interface Reference {
  key: string;
  pointer: string;
}

/**
 * `args` with every reference replaced by the cached data it names; `args` itself is left as it was. Rejects
 * with the host's error (ItemNotFoundError, say) when a reference names nothing, and with
 * InvalidRequestError when an object has `$llm_cache` but isn't a reference.
 */
export async function resolveReferences<T>(client: NativeCacheClient, args: T, context: { sessionId: string }): Promise<T> {
  const wanted = new Map<string, Reference>();
  collect(args, wanted);
  if (wanted.size === 0) return args;
  const values = new Map<string, JsonValue>();
  await Promise.all(
    [...wanted].map(async ([id, { key, pointer }]) => {
      const item = await client.read({
        sessionId: context.sessionId,
        storageKey: fullKey(key, context.sessionId),
        ...(pointer === "" ? {} : { pointer }),
      });
      values.set(id, item.data);
    }),
  );
  return replace(args, values) as T;
}

/**
 * A cached value as text inside a string: a string as it is; an array as its elements separated by a blank
 * line, each string as it is and anything else as JSON text (so 50 cached summaries become 50 paragraphs);
 * anything else as JSON text.
 */
export function spliceText(value: JsonValue): string {
  if (typeof value === "string") return value;
  if (Array.isArray(value)) return value.map((element) => (typeof element === "string" ? element : JSON.stringify(element))).join("\n\n");
  return JSON.stringify(value);
}

function id({ key, pointer }: Reference): string {
  return `${key}\u0000${pointer}`;
}

/** Finds every reference in `value`. */
function collect(value: unknown, into: Map<string, Reference>): void {
  if (typeof value === "string") {
    for (const match of value.matchAll(SPLICE)) {
      const reference = { key: match[1] as string, pointer: match[2] ?? "" };
      into.set(id(reference), reference);
    }
  } else if (Array.isArray(value)) {
    for (const element of value) collect(element, into);
  } else if (typeof value === "object" && value !== null) {
    const reference = asReference(value);
    if (reference) {
      into.set(id(reference), reference);
      return;
    }
    for (const member of Object.values(value)) collect(member, into);
  }
}

/** The reference `value` is, or undefined when it is an ordinary object. */
function asReference(value: object): Reference | undefined {
  if (!(REFERENCE_MEMBER in value)) return undefined;
  const { [REFERENCE_MEMBER]: key, pointer, ...rest } = value as Record<string, unknown>;
  if (typeof key !== "string" || (pointer !== undefined && typeof pointer !== "string") || Object.keys(rest).length > 0) {
    throw new InvalidRequestError({
      message: `an object with "${REFERENCE_MEMBER}" is a reference, and has only "${REFERENCE_MEMBER}" (a key) and "pointer" (a JSON pointer)`,
      expected: `{"${REFERENCE_MEMBER}": "<storageKey>", "pointer": "/optional/pointer"}`,
      actual: JSON.stringify(value).slice(0, 120),
      suggestion: "call the tool again with the reference in that form, or {{llm_cache:<storageKey>}} inside a string",
    });
  }
  return { key, pointer: pointer ?? "" };
}

function replace(value: unknown, values: Map<string, JsonValue>): unknown {
  if (typeof value === "string") {
    return value.replace(SPLICE, (_, key: string, pointer: string | undefined) =>
      spliceText(values.get(id({ key, pointer: pointer ?? "" })) as JsonValue),
    );
  }
  if (Array.isArray(value)) return value.map((element) => replace(element, values));
  if (typeof value === "object" && value !== null) {
    const reference = asReference(value);
    if (reference) return values.get(id(reference));
    return Object.fromEntries(Object.entries(value).map(([name, member]) => [name, replace(member, values)]));
  }
  return value;
}
