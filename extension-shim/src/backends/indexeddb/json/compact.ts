/**
 * The compact form in which data is stored: the twin of the host's `rules::compact_json`. `dataSize` is the
 * UTF-8 size of this text, and every read answers from it, so it must be the host's text exactly.
 */

import { isSpace, QUOTE, stringEnd } from "./scan.js";

/**
 * `json` with the white space between its tokens removed; everything else (numbers as spelled, escapes as
 * written, white space inside strings) is kept. `json` must be valid JSON. Text that has no white space between
 * tokens, as JSON.stringify and Chrome write it, is returned as it is.
 *
 * One pass: strings are skipped from quote to quote, and the text between runs of white space is kept in whole
 * slices, joined once at the end.
 */
export function compactJson(json: string): string {
  let parts: string[] | undefined;
  // Everything before `kept` is in `parts` already (once there are parts).
  let kept = 0;
  let at = 0;
  while (at < json.length) {
    const unit = json.charCodeAt(at);
    if (unit === QUOTE) {
      // An unterminated string runs to the end, as in the host.
      at = stringEnd(json, at) ?? json.length;
    } else if (isSpace(unit)) {
      (parts ??= []).push(json.slice(kept, at));
      while (at < json.length && isSpace(json.charCodeAt(at))) at++;
      kept = at;
    } else {
      at++;
    }
  }
  if (parts === undefined) return json;
  parts.push(json.slice(kept));
  return parts.join("");
}
