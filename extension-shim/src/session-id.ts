/**
 * The sessionId rule where the extension's own code hands the shim a session id: `tool.run`'s and
 * `tool.execute`'s context, `endSession`, `attachToSession`, and the context of the tools wrapped by
 * `offloadLargeResults` and `withReferences`. A malformed id there is the developer's mistake, not the LLM's, so
 * it is a TypeError at the call, saying the rule, before any request: the LLM-facing answer ("use the
 * storageKey exactly…") would send the model after a problem it can't fix.
 *
 * The rule is PROTOCOL.md section 5.1's, checked by the same function the in-browser backend answers with.
 * browserx's Session makes its ids as `conv_` + a UUID (36 characters of hex and hyphens), which it keeps.
 */

import { isSessionId, SESSION_ID_RULE } from "./backends/indexeddb/json/rules.js";

export { isSessionId, SESSION_ID_RULE };

/** The most characters of a bad id the TypeError shows. */
const SHOWN_CHARS = 80;

/**
 * Throws a TypeError unless `value` is a sessionId. `where` names the call and argument, e.g.
 * "tool.run: context.sessionId".
 */
export function assertSessionId(where: string, value: unknown): asserts value is string {
  if (typeof value === "string" && isSessionId(value)) return;
  const actual = typeof value === "string" ? JSON.stringify(value.slice(0, SHOWN_CHARS)) + (value.length > SHOWN_CHARS ? "…" : "") : typeof value;
  throw new TypeError(
    `${where} must be a session id, ${SESSION_ID_RULE} (PROTOCOL.md 5.1), but is ${actual}; ` +
      'pass the conversation\'s id in that form, e.g. "conv_" + crypto.randomUUID() made once per conversation',
  );
}
