/**
 * Characters that decoders, trimmers and displays treat specially, for the differential tests to put raw (as
 * UTF-8 in the JSON text, not as `\u` escapes) at the start, middle and end of member names and values. A twin
 * that reads any of them differently from the host, as a `TextDecoder` without `ignoreBOM` once read a byte order
 * mark at the start of a member name, answers differently, and the differential tests see it.
 */

import type { Rng } from "./rng.js";

/** The byte order mark: the one character a platform decoder drops by default. */
export const BOM = "\ufeff";

/**
 * Format, separator, invisible and bidi characters, and others with a special reading: each is valid raw in a
 * JSON string (none is a C0 control).
 */
export const ODD_CHARACTERS: readonly string[] = [
  BOM,
  "\u0085", // NEXT LINE, a C1 control that some trimmers take for white space
  "\u007f",
  "\u009b",
  "\u00a0", // NO-BREAK SPACE: white space to Unicode, not to JSON
  "\u00ad", // SOFT HYPHEN
  "\u034f", // COMBINING GRAPHEME JOINER
  "\u061c", // ARABIC LETTER MARK
  "\u115f",
  "\u1680",
  "\u180e", // MONGOLIAN VOWEL SEPARATOR, white space in older Unicode
  "\u2000",
  "\u200a",
  "\u200b",
  "\u200c",
  "\u200d",
  "\u200e",
  "\u200f",
  "\u2028",
  "\u2029",
  "\u202a",
  "\u202b",
  "\u202c",
  "\u202d",
  "\u202e",
  "\u202f",
  "\u205f",
  "\u2060",
  "\u2061",
  "\u2062",
  "\u2063",
  "\u2064",
  "\u2066",
  "\u2067",
  "\u2068",
  "\u2069",
  "\u206a",
  "\u206f",
  "\u3000",
  "\u3164",
  "\ufe0f",
  "\ufff9",
  "\ufffa",
  "\ufffb",
  "\ufffe", // a noncharacter, still UTF-8
  "\u{e0001}",
  "\u{e0020}",
  "\u{1d173}",
];

/** One odd character; the byte order mark an eighth of the time, as the one a decoder is known to drop. */
export function oddCharacter(rng: Rng): string {
  return rng.chance(0.125) ? BOM : rng.pick(ODD_CHARACTERS);
}

/**
 * `text` (a member name or the contents of a string, as written in JSON) with an odd character put raw at its
 * start (half the time, where a decoder looks for a byte order mark), in its middle, or at its end. The middle is
 * taken between two code points and never inside an escape.
 */
export function withOddCharacter(rng: Rng, text: string): string {
  const odd = oddCharacter(rng);
  const roll = rng.below(4);
  if (roll < 2) return odd + text;
  if (roll === 3) return text + odd;
  // The boundaries a character can go in: not after a backslash, nor inside \uXXXX or a surrogate pair.
  const boundaries: number[] = [];
  for (let at = 0; at <= text.length; ) {
    boundaries.push(at);
    if (text[at] === "\\") at += text[at + 1] === "u" ? 6 : 2;
    else at += (text.codePointAt(at) ?? 0) > 0xffff ? 2 : 1;
  }
  const at = rng.pick(boundaries);
  return text.slice(0, at) + odd + text.slice(at);
}
