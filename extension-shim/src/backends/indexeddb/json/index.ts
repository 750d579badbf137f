/**
 * The TypeScript twin of the host's `src/json/` and of the pure rules in `src/rules.rs`, and of the part of serde_json
 * the host reads requests with: pure functions over JSON text, with no I/O and no dependencies, so that the IndexedDB
 * backend answers byte for byte as the host does. Each walk is one forward pass with an explicit stack, never
 * recursion, bounded as the host's.
 *
 * # Layout
 * - scan.ts: where a value ends; an array's elements and an object's members; the characters of a string; UTF-8
 *   byte counts of JS text (the protocol counts sizes in bytes of the compact JSON text).
 * - compact.ts: the compact form data is stored in (`rules::compact_json`).
 * - pointer.ts: RFC 6901 pointers, checked and resolved in one pass however deep.
 * - slice.ts: elements, members or characters `offset..offset + limit` of a value, within a byte budget.
 * - shape.ts: the short description of a value's structure, e.g. `array[50] of {from,subject}`.
 * - strings.ts: every string value with its pointer, in one pass however deep.
 * - search.ts: the string values that contain every word of a query, with pointers and snippets.
 * - rules.ts: session, task and turn id checks, storage keys, generated ids, description cutting.
 * - serde.ts: serde_json's reading of a request's text, its error messages included, over the text's UTF-8 bytes.
 */

export * from "./scan.js";
export * from "./compact.js";
export * from "./pointer.js";
export * from "./slice.js";
export * from "./shape.js";
export * from "./strings.js";
export * from "./search.js";
export * from "./rules.js";
export * from "./serde.js";
