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
 *
 * Bounded: the LLM writes the arguments, and a prompt injection may write them too. One call resolves at most
 * MAX_REFERENCES different references, and puts at most MAX_REFERENCE_BYTES into the arguments, every
 * occurrence counted; both are checked before the arguments are rebuilt, so 100 references to one 5 MB item
 * are refused before a 500 MB string exists. The arguments are walked with an explicit stack, never by
 * recursion, so no depth of nesting can overflow the call stack, and an object met twice (a cycle) is walked
 * once.
 */

import type { CacheBackend } from "./backend.js";
import { DataTooLargeError, InvalidRequestError } from "./errors.js";
import { fromLabel, isTrusted, provenanceOf } from "./provenance.js";
import { MAX_ITEM_BYTES, utf8Length, type JsonValue, type Provenance } from "./protocol.js";
import { assertSessionId } from "./session-id.js";
import { formatSize } from "./tool/format.js";
import { fullKey, shortKey } from "./tool/keys.js";

/** The member that marks an object as a reference. */
export const REFERENCE_MEMBER = "$llm_cache";

/**
 * The most bytes that references may put into one call's arguments: four of the host's largest items, 20 MiB.
 * Each occurrence counts (a value as its JSON text, a splice as its text), since the tool receives, and may
 * send on, every copy. Past it the call fails with a DataTooLargeError that says to pass less.
 */
export const MAX_REFERENCE_BYTES = 4 * MAX_ITEM_BYTES;

/** The most different references (key and pointer) one call may hold; each is one read from the host. */
export const MAX_REFERENCES = 100;

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

/** A reference found in the arguments, with how often it occurs as a value and inside strings, and where. */
interface Wanted extends Reference {
  asValue: number;
  asText: number;
  /** The argument paths (JSON pointers into the arguments) of its occurrences, in the order they are written. */
  paths: string[];
}

/** One place where cached data is about to flow into a tool's arguments, for the extension to allow or refuse. */
export interface Flow {
  /** The item's full storage key. */
  storageKey: string;
  /** The pointer into the item the reference named; "" for the whole item. */
  pointer: string;
  /** Where the item came from (provenance.ts decides `trusted` from it). */
  provenance: Provenance;
  trusted: boolean;
  /** The tool the arguments are for, as `withReferences` was told; "" when it wasn't. */
  tool: string;
  /** Where in the arguments the data goes, as a JSON pointer ("/to/0"); inside a string, that string's. */
  argumentPath: string;
}

/**
 * The extension's decision about a flow: true lets it through; false or a reason (text for the model) refuses
 * it, and the call fails before the tool runs. The place to keep untrusted text out of a recipient or a URL.
 */
export type AllowFlow = (flow: Flow) => boolean | string | Promise<boolean | string>;

export interface ReferenceOptions {
  /** The tool's name, for the flows and for the refusal's text. */
  tool?: string | undefined;
  allowFlow?: AllowFlow | undefined;
}

/** A reference's data, read once, and its text when it is spliced into a string. */
interface Resolved {
  value: JsonValue;
  text: string | undefined;
}

/**
 * `args` with every reference replaced by the cached data it names; `args` itself is left as it was. Rejects
 * with the host's error (ItemNotFoundError, say) when a reference names nothing, with InvalidRequestError when
 * an object has `$llm_cache` but isn't a reference or when there are more than MAX_REFERENCES, and with
 * DataTooLargeError when the data would be more than MAX_REFERENCE_BYTES.
 */
export async function resolveReferences<T>(client: CacheBackend, args: T, context: { sessionId: string }, options: ReferenceOptions = {}): Promise<T> {
  assertSessionId("resolveReferences: context.sessionId", context?.sessionId);
  const wanted = collect(args);
  if (wanted.size === 0) return args;
  const resolved = new Map<string, Resolved>();
  let total = 0;
  // One read at a time, counting as it goes, so that what is held stays near the limit whatever was asked.
  for (const [id, reference] of wanted) {
    const item = await client.read({
      sessionId: context.sessionId,
      storageKey: fullKey(reference.key, context.sessionId),
      ...(reference.pointer === "" ? {} : { pointer: reference.pointer }),
    });
    const data = item.data;
    if (options.allowFlow !== undefined) await checkFlows(options, reference, item.storageKey, provenanceOf(item), context.sessionId);
    const text = reference.asText > 0 ? spliceText(data) : undefined;
    if (reference.asText > 0) total += reference.asText * utf8Length(text as string);
    if (reference.asValue > 0) total += reference.asValue * utf8Length(JSON.stringify(data));
    if (total > MAX_REFERENCE_BYTES) throw tooMuch(total, resolved.size + 1, wanted.size);
    resolved.set(id, { value: data, text });
  }
  return substitute(args, resolved) as T;
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

/**
 * Asks the extension about each place the reference's data would go, and refuses the whole call at the first
 * flow it refuses, naming the item, the tool and the argument.
 */
async function checkFlows(options: ReferenceOptions, reference: Wanted, storageKey: string, provenance: Provenance, sessionId: string): Promise<void> {
  const tool = options.tool ?? "";
  const trusted = isTrusted(provenance);
  for (const argumentPath of reference.paths) {
    const decision = await (options.allowFlow as AllowFlow)({ storageKey, pointer: reference.pointer, provenance, trusted, tool, argumentPath });
    if (decision === true) continue;
    const item = `${shortKey(storageKey, sessionId)}${reference.pointer === "" ? "" : reference.pointer} (from ${fromLabel(provenance)})`;
    const why = typeof decision === "string" && decision !== "" ? `: ${decision}` : "";
    throw new InvalidRequestError({
      message: `the extension does not let item ${item} flow into ${tool === "" ? "this tool" : tool}'s argument ${argumentPath || '""'}${why}`,
      suggestion: "call the tool again without that reference in that argument (write the value yourself, or ask the user)",
    });
  }
}

function id({ key, pointer }: Reference): string {
  return `${key}\u0000${pointer}`;
}

function spliced(match: RegExpMatchArray): Reference {
  return { key: match[1] as string, pointer: match[2] ?? "" };
}

/** Finds every reference in `args`, counting each occurrence; at most MAX_REFERENCES different ones. */
function collect(args: unknown): Map<string, Wanted> {
  const wanted = new Map<string, Wanted>();
  const found = (reference: Reference, form: "asValue" | "asText", path: string) => {
    let entry = wanted.get(id(reference));
    if (entry === undefined) {
      if (wanted.size === MAX_REFERENCES) throw tooMany();
      entry = { ...reference, asValue: 0, asText: 0, paths: [] };
      wanted.set(id(reference), entry);
    }
    entry[form]++;
    entry.paths.push(path);
  };
  // Containers already walked: one met again (shared, or a cycle) is not walked again.
  const seen = new Set<object>();
  const stack: Array<[unknown, string]> = [[args, ""]];
  while (stack.length > 0) {
    const [value, path] = stack.pop() as [unknown, string];
    if (typeof value === "string") {
      for (const match of value.matchAll(SPLICE)) found(spliced(match), "asText", path);
    } else if (typeof value === "object" && value !== null) {
      const reference = asReference(value);
      if (reference) {
        found(reference, "asValue", path);
      } else if (!seen.has(value)) {
        seen.add(value);
        // Pushed last to first, so that references are read in the order they are written.
        const members: Array<[string, unknown]> = Array.isArray(value) ? value.map((member, i) => [String(i), member]) : Object.entries(value);
        for (let i = members.length - 1; i >= 0; i--) {
          const [name, member] = members[i] as [string, unknown];
          stack.push([member, `${path}/${name.replace(/~/g, "~0").replace(/\//g, "~1")}`]);
        }
      }
    }
  }
  return wanted;
}

/**
 * A copy of `args` with every reference replaced. Each container is copied once: one met again (shared, or a
 * cycle) is the same copy again, so the copy has the shape the arguments had.
 */
function substitute(args: unknown, resolved: Map<string, Resolved>): unknown {
  const copies = new Map<object, unknown>();
  /** Containers copied whose members are still to be filled in. */
  const unfilled: Array<[object, object]> = [];
  const convert = (value: unknown): unknown => {
    if (typeof value === "string") {
      return value.replace(SPLICE, (...match) => (resolved.get(id(spliced(match as RegExpMatchArray))) as Resolved).text as string);
    }
    if (typeof value !== "object" || value === null) return value;
    const reference = asReference(value);
    if (reference) return (resolved.get(id(reference)) as Resolved).value;
    let copy = copies.get(value) as object | undefined;
    if (copy === undefined) {
      copy = Array.isArray(value) ? new Array<unknown>(value.length) : {};
      copies.set(value, copy);
      unfilled.push([value, copy]);
    }
    return copy;
  };
  const result = convert(args);
  while (unfilled.length > 0) {
    const [source, copy] = unfilled.pop() as [object, object];
    if (Array.isArray(source)) {
      for (let i = 0; i < source.length; i++) (copy as unknown[])[i] = convert(source[i]);
    } else {
      // Defined rather than assigned, so that a member named "__proto__" stays a member.
      for (const [name, member] of Object.entries(source)) {
        Object.defineProperty(copy, name, { value: convert(member), enumerable: true, writable: true, configurable: true });
      }
    }
  }
  return result;
}

/** The reference `value` is, or undefined when it is an ordinary object. */
function asReference(value: object): Reference | undefined {
  if (Array.isArray(value) || !Object.hasOwn(value, REFERENCE_MEMBER)) return undefined;
  const { [REFERENCE_MEMBER]: key, pointer, ...rest } = value as Record<string, unknown>;
  if (typeof key !== "string" || (pointer !== undefined && typeof pointer !== "string") || Object.keys(rest).length > 0) {
    // Named by its members, not its JSON: a member may be huge, or something JSON can't write (a BigInt).
    const members = Object.keys(value)
      .slice(0, 10)
      .map((name) => name.slice(0, 40));
    throw new InvalidRequestError({
      message: `an object with "${REFERENCE_MEMBER}" is a reference, and has only "${REFERENCE_MEMBER}" (a key) and "pointer" (a JSON pointer)`,
      expected: `{"${REFERENCE_MEMBER}": "<storageKey>", "pointer": "/optional/pointer"}`,
      actual: `an object with ${members.join(", ")}`.slice(0, 120),
      suggestion: "call the tool again with the reference in that form, or {{llm_cache:<storageKey>}} inside a string",
    });
  }
  return { key, pointer: pointer ?? "" };
}

function tooMany(): InvalidRequestError {
  return new InvalidRequestError({
    message: `more than ${MAX_REFERENCES} different references in one call; at most ${MAX_REFERENCES} are resolved`,
    expected: `at most ${MAX_REFERENCES} different references`,
    suggestion: "reference a whole item or array once instead of its parts one by one, or call the tool several times",
  });
}

function tooMuch(total: number, read: number, count: number): DataTooLargeError {
  const many = count === 1 ? "the one reference already makes" : `the first ${read} of ${count} different references already make`;
  return new DataTooLargeError({
    message:
      `the references in this call expand to more than ${formatSize(MAX_REFERENCE_BYTES)}, the most one call may ` +
      `take: ${many} ${formatSize(total)}`,
    expected: `at most ${formatSize(MAX_REFERENCE_BYTES)}`,
    actual: formatSize(total),
    suggestion:
      "pass less: name each item once, add a pointer to the part the tool needs ({{llm_cache:KEY/0}}), or call " +
      "the tool once per part",
  });
}
