/**
 * A JSON value as text for a person, as the viewer shows an item's data: `JSON.stringify(value, null, 2)`'s layout
 * for any value, however deep, in text proportional to the value's own.
 *
 * `JSON.stringify` recurses: an item nested 7,000 deep (14 KB, one page) throws "Maximum call stack size
 * exceeded". And its indentation grows with depth: one 15 KB page of `[deep(3900), deep(3900)]` becomes 60 MB of
 * spaces. So this is one loop with an explicit stack of the containers open around the value being written, and
 * its indentation stops growing past MAX_INDENT_LEVELS, the same depth as the command line's `show`
 * (src/json/pretty.rs), so that every line is at most that much wider than its token. Every string, member names
 * included, has the characters of `escapeControls` escaped, as the command line prints them.
 *
 * The value is the one `JSON.parse` gave (V8's parser is iterative, so parsing is safe at any depth).
 */

import type { JsonValue } from "../protocol.js";
import { escapeControls } from "./visible.js";

/** The depth past which lines are indented no further: src/json/pretty.rs's MAX_INDENT_LEVELS. */
export const MAX_INDENT_LEVELS = 20;

/** A container being written: its closing bracket, its entries (member names for an object) and the next one. */
interface Open {
  value: JsonValue[] | { [key: string]: JsonValue };
  /** The member names of an object, in `JSON.stringify`'s order; undefined for an array. */
  names: string[] | undefined;
  length: number;
  next: number;
}

/**
 * `value` as JSON text: compact like `JSON.stringify(value)` when `indent` is 0, otherwise laid out like
 * `JSON.stringify(value, null, indent)` up to MAX_INDENT_LEVELS levels deep (deeper lines are indented no
 * further), with unsafe characters escaped in every string. Its length is at most about
 * `(indent * MAX_INDENT_LEVELS + 2)` times the compact text's.
 */
export function jsonText(value: JsonValue, indent = 2): string {
  const out: string[] = [];
  const stack: Open[] = [];
  const deepest = " ".repeat(indent * MAX_INDENT_LEVELS);
  const newLine = (depth: number) => {
    if (indent > 0) out.push("\n", deepest.slice(0, indent * Math.min(depth, MAX_INDENT_LEVELS)));
  };
  const colon = indent > 0 ? ": " : ":";

  /** Writes a scalar, or opens a container (writing it whole when it is empty). */
  const start = (item: unknown) => {
    if (Array.isArray(item)) {
      if (item.length === 0) out.push("[]");
      else {
        out.push("[");
        stack.push({ value: item as JsonValue[], names: undefined, length: item.length, next: 0 });
      }
    } else if (typeof item === "object" && item !== null) {
      const object = item as { [key: string]: JsonValue };
      // JSON.stringify leaves out members it can't write (undefined, functions); parsed JSON has none.
      const names = Object.keys(object).filter((name) => writable(object[name]));
      if (names.length === 0) out.push("{}");
      else {
        out.push("{");
        stack.push({ value: object, names, length: names.length, next: 0 });
      }
    } else {
      out.push(writable(item) ? escapeControls(JSON.stringify(item)) : "null");
    }
  };

  start(value);
  for (let open = stack.at(-1); open !== undefined; open = stack.at(-1)) {
    const depth = stack.length;
    if (open.next === open.length) {
      stack.pop();
      newLine(depth - 1);
      out.push(open.names === undefined ? "]" : "}");
      continue;
    }
    if (open.next > 0) out.push(",");
    newLine(depth);
    const index = open.next++;
    if (open.names === undefined) {
      start((open.value as JsonValue[])[index]);
    } else {
      const name = open.names[index] as string;
      out.push(escapeControls(JSON.stringify(name)), colon);
      start((open.value as { [key: string]: JsonValue })[name]);
    }
  }
  return out.join("");
}

/** Whether JSON.stringify writes `item` (anything but undefined, functions and symbols). */
function writable(item: unknown): boolean {
  return item !== undefined && typeof item !== "function" && typeof item !== "symbol";
}
