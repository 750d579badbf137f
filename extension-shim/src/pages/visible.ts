/**
 * Text made visible: what the pages show that an LLM or a web page wrote (descriptions, keys, session ids, data,
 * error messages that echo input) may hold characters that hide or reorder the text around them. A right-to-left
 * override turns the description "report\u202Efdp.exe" into what reads as "reportexe.pdf"; a zero-width space or
 * a byte order mark is there and can't be seen.
 *
 * The set is exactly the one the command line escapes (src/terminal.rs, `is_unsafe`), so the viewer and
 * `llm-cache-host show` show the same text; test/page-text.test.ts reads that file and fails when the two differ.
 * The escapes are JSON's (`\n`, `\u202e`), so escaped JSON text is still JSON, meaning the same.
 */

/**
 * The unsafe characters, as inclusive ranges of code points: the C0 controls, DEL and the C1 controls; the bidi
 * controls (U+061C, U+200E, U+200F, U+202A..U+202E, U+2066..U+2069); the line and paragraph separators; and the
 * invisible characters no script needs (zero-width space, word joiner and invisible operators, the deprecated
 * format controls, the byte order mark, interlinear annotations). The zero-width joiners (U+200C, U+200D) stay:
 * emoji and several scripts are written with them. Every one is in the Basic Multilingual Plane.
 */
export const UNSAFE_RANGES: ReadonlyArray<readonly [number, number]> = [
  [0x00, 0x1f],
  [0x7f, 0x9f],
  [0x61c, 0x61c],
  [0x200b, 0x200b],
  [0x200e, 0x200f],
  [0x2028, 0x202e],
  [0x2060, 0x2064],
  [0x2066, 0x206f],
  [0xfeff, 0xfeff],
  [0xfff9, 0xfffb],
];

const hex4 = (code: number) => code.toString(16).padStart(4, "0");

/** Any one unsafe character; a class of UTF-16 units, which is exact since none is outside the BMP. */
const UNSAFE = new RegExp(`[${UNSAFE_RANGES.map(([first, last]) => `\\u${hex4(first)}-\\u${hex4(last)}`).join("")}]`, "g");

/** The short escapes JSON has; every other unsafe character is `\uXXXX`. */
const SHORT: Readonly<Record<string, string>> = { "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r" };

/** Whether the code point `code` is one that `escapeControls` escapes. */
export function isUnsafe(code: number): boolean {
  return UNSAFE_RANGES.some(([first, last]) => code >= first && code <= last);
}

/**
 * `text` with every unsafe character written as a JSON escape (`\n`, `\t`, `\u001b`, `\u202e`), as the command
 * line's `escape_controls` writes it. Backslashes are left alone, so plain text that spells out an escape reads
 * the same as an escaped character.
 */
export function escapeControls(text: string): string {
  return text.replace(UNSAFE, (char) => SHORT[char] ?? `\\u${hex4(char.charCodeAt(0))}`);
}
