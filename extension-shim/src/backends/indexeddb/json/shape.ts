/**
 * An item's shape: a short string that tells the LLM how the data is built, so that it can aim a pointer or a
 * slice without reading the data: `array[50] of {from,subject,summary}`, `object{emails,total}`, `string(48213)`.
 * The twin of the host's `src/json/shape.rs`; computed once, when the data is written.
 */

import { charCount, elements, members, QUOTE, scalarCount } from "./scan.js";

/** The longest shape, in characters; metadata stays well under the spec's 500 bytes per item. */
export const MAX_SHAPE_CHARS = 120;

/** The shape of the JSON value `text`; `"?"` for text that is not well-formed. */
export function shape(text: string): string {
  const first = text.charCodeAt(0);
  if (first === 0x5b) {
    let count = 0;
    let kinds: Kind | undefined;
    let firstElement: readonly [number, number] | undefined;
    const wellFormed = elements(text, (start, end) => {
      const kind = kindOf(text.charCodeAt(start));
      if (kinds === undefined) {
        firstElement = [start, end];
        kinds = kind;
      } else if (kinds !== kind) {
        kinds = "mixed";
      }
      count++;
    });
    if (!wellFormed) return "?";
    const head = `array[${count}]`;
    if (kinds === undefined || firstElement === undefined) return head;
    const of = kinds === "object" ? names(text.slice(firstElement[0], firstElement[1]), MAX_SHAPE_CHARS - head.length - 4) : kinds;
    return `${head} of ${of}`;
  }
  if (first === 0x7b) return `object${names(text, MAX_SHAPE_CHARS - "object".length)}`;
  if (first === QUOTE && text.length >= 2) return `string(${charCount(text, 1, text.length - 1)})`;
  if (text.length > 0) return kindOf(first);
  return "?";
}

/**
 * `{a,b,c}`: an object's member names (escapes as written), cut with `…` to fit in `room` characters. A
 * malformed object lists the names before the fault, as in the host.
 */
function names(object: string, room: number): string {
  let out = "{";
  // Characters (scalar values) in `out`.
  let chars = 1;
  members(object, (nameStart, nameEnd) => {
    const name = object.slice(nameStart + 1, nameEnd - 1);
    // The host asks whether its output has more than one byte: true once a name that is not empty was added.
    const sep = out.length > 1 ? "," : "";
    const nameChars = scalarCount(name);
    if (chars + sep.length + nameChars + 1 > room) {
      out += `${sep}…`;
      return false;
    }
    out += sep + name;
    chars += sep.length + nameChars;
    return true;
  });
  return `${out}}`;
}

/** The kind of a JSON value. */
type Kind = "object" | "array" | "string" | "number" | "boolean" | "null" | "mixed";

/** The kind of a JSON value, by its first unit. */
function kindOf(first: number): Kind {
  if (first === 0x7b) return "object";
  if (first === 0x5b) return "array";
  if (first === QUOTE) return "string";
  if (first === 0x74 || first === 0x66) return "boolean";
  if (first === 0x6e) return "null";
  return "number";
}
