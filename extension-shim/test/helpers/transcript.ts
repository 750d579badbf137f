/**
 * The replay transcripts of tests/transcripts/ (the protocol's conformance suite) run against any server that
 * answers request texts with reply texts: the IndexedDB backend's `IdbHost` under Node (test/conformance.test.ts)
 * and in Chromium. The format is the Rust runner's (tests/replay.rs), read the same way:
 *
 * - `> {json}`: a request, sent as the Rust runner sends it (serde_json's compact text, keys sorted). Requests are
 *   sent when the next `<` line needs a reply, so several `>` lines in a row are pipelined.
 * - `< {json}`: the next reply must match: `"*"` matches any value; `"$name"` captures a value the first time and
 *   must equal it after; in requests, `"$name"` is replaced by what it captured. `{"$repeat": [text, n, end]}`
 *   stands for `text` repeated n times and then `end` (optional). Numbers compare as serde_json's do (`1` is not
 *   `1.0`; `-0` is `-0.0`).
 * - `>raw text`: the request text exactly as written.
 * - `>oversize n [text]`: a request of n bytes, `text` and then spaces: the server refuses it as the host refuses
 *   such a frame.
 * - `!restart arg...`: a new server for the origin these arguments name (a Chromium origin, or a Firefox manifest
 *   path and add-on id), on the same data; `!unavailable`: servers started from here on can't open their store.
 * - `!store-quota n`: servers started from here on have a store-wide quota of n bytes, as a host whose owner set it
 *   at install (before the first request, or after a `!restart`).
 * - `#`: a comment. `#only host: <why>` makes the next request, and the reply that answers it, the host's alone: a
 *   difference PROTOCOL.md allows, such as the wording of StorageUnavailableError or `backend` in `hello`.
 *
 * Frame-level lines, which no request text can stand for, are skipped, and so are the replies that answer them:
 * `>hex` whose bytes are not UTF-8 (`>hex` of UTF-8 bytes, even none, is that text, a leading BOM included), and
 * `>cut` (a frame cut off by the end of input, which gets no reply). The report lists every line skipped.
 *
 * This module uses nothing of Node's, so that the same replay runs in a browser; reading the files is the
 * caller's job.
 */

/** A server of protocol v1 in text: what `IdbHost` is. */
export interface TranscriptServer {
  handleText(requestText: string): Promise<string>;
}

export interface ReplayHooks {
  /**
   * A server for `origin` on the transcript's data (the same origin's data survives a restart); `unavailable`
   * when its store must fail to open; `storeQuotaBytes` its store-wide quota, or undefined for the host's default.
   * Called before the first request and after each `!restart`.
   */
  start(origin: string, unavailable: boolean, storeQuotaBytes: number | undefined): Promise<TranscriptServer>;
  /** Lets go of a server, before a restart and at the end. */
  stop?(server: TranscriptServer): Promise<void> | void;
}

export interface ReplayReport {
  /** How many replies were compared. */
  compared: number;
  /** Lines the replay did not run, each with why. */
  skipped: Array<{ line: number; why: string }>;
}

/** The origin the Rust runner starts its hosts for (tests/common/mod.rs ORIGIN). */
export const DEFAULT_ORIGIN = "chrome-extension://testextensionaaaaaaaaaaaaaaaaaa/";

/** A request waiting for its `<` line: its reply, or why it is skipped (then its `<` line is too). */
type Pending = { text: string; line: number } | { skipped: string; line: number };

/**
 * Replays the transcript `text` (named `name` in messages).
 *
 * @throws Error with a readable account of the first reply that does not match, or of a line not understood.
 */
export async function replayTranscript(name: string, text: string, hooks: ReplayHooks): Promise<ReplayReport> {
  const report: ReplayReport = { compared: 0, skipped: [] };
  const vars = new Map<string, Json>();
  let pending: Pending[] = [];
  const inFlight: Array<{ pending: Pending; reply?: Promise<string> }> = [];
  let server: TranscriptServer | undefined;
  let origin = DEFAULT_ORIGIN;
  let unavailable = false;
  let storeQuotaBytes: number | undefined;
  let onlyHost: string | undefined;
  const lines = text.split("\n");

  for (let index = 0; index < lines.length; index++) {
    const number = index + 1;
    const at = `${name}:${number}`;
    const line = (lines[index] ?? "").trimEnd();
    if (line === "") continue;
    if (line.startsWith("#")) {
      const mark = /^#only host:\s*(.+)$/.exec(line);
      if (mark) onlyHost = mark[1];
      continue;
    }
    if (line === "!unavailable") {
      unavailable = true;
      continue;
    }
    if (line.startsWith("!store-quota ")) {
      if (server) throw new Error(`${at}: !store-quota comes before the server starts: first, or after !restart`);
      storeQuotaBytes = Number(line.slice("!store-quota ".length).trim());
      continue;
    }
    if (line.startsWith("!restart")) {
      if (server) await hooks.stop?.(server);
      server = undefined;
      origin = originOf(line.slice("!restart".length).trim().split(/\s+/));
      continue;
    }
    server ??= await hooks.start(origin, unavailable, storeQuotaBytes);
    const request = (made: Pending) => {
      if (onlyHost !== undefined) {
        made = { skipped: `#only host: ${onlyHost}`, line: number };
        onlyHost = undefined;
      }
      pending.push(made);
    };
    if (line.startsWith(">raw ")) {
      request({ text: line.slice(">raw ".length), line: number });
    } else if (line.startsWith(">hex")) {
      const bytes = Uint8Array.from(line.slice(">hex".length).trim().split(/\s+/).filter(Boolean), (hex) => parseInt(hex, 16));
      try {
        // Every byte is kept: a byte order mark that starts the frame is part of it, as it is to the host.
        request({ text: new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes), line: number });
      } catch {
        request({ skipped: ">hex of bytes that are not UTF-8: no request text holds them", line: number });
      }
    } else if (line.startsWith(">oversize ")) {
      const [size, ...rest] = line.slice(">oversize ".length).split(" ");
      const start = rest.join(" ");
      request({ text: start + " ".repeat(Number(size) - new TextEncoder().encode(start).length), line: number });
    } else if (line.startsWith(">cut ")) {
      report.skipped.push({ line: number, why: ">cut: a frame cut off by the end of input, which gets no reply" });
    } else if (line.startsWith("> ")) {
      request({ text: serdeText(substitute(expand(parse(line.slice(2), at)), vars, at)), line: number });
    } else if (line.startsWith("< ")) {
      // Send everything pending, pipelined: the server answers in order.
      for (const next of pending) inFlight.push("text" in next ? { pending: next, reply: server.handleText(next.text) } : { pending: next });
      pending = [];
      const answered = inFlight.shift();
      if (answered === undefined) throw new Error(`${at}: a reply line with no request before it`);
      if (answered.reply === undefined) {
        const why = "skipped" in answered.pending ? answered.pending.skipped : "";
        report.skipped.push({ line: answered.pending.line, why }, { line: number, why: `the reply to line ${answered.pending.line}` });
        continue;
      }
      const replyText = await answered.reply;
      const expected = expand(parse(line.slice(2), at));
      const actual = parse(replyText, `${at} (the reply)`);
      const why = jsonMatch(bind(expected, actual, vars), actual);
      if (why !== undefined) {
        throw new Error(
          `${at}: the reply to line ${answered.pending.line} does not match (${why})\n--- expected\n${shorten(line.slice(2))}\n--- actual\n${shorten(replyText)}`,
        );
      }
      report.compared++;
    } else {
      throw new Error(`${at}: a line this runner does not understand: ${line}`);
    }
  }
  const unanswered = [...inFlight.map((entry) => entry.pending), ...pending].filter((entry) => "text" in entry);
  if (unanswered.length > 0) throw new Error(`${name}: requests on lines ${unanswered.map((entry) => entry.line).join(", ")} have no reply line`);
  if (server) await hooks.stop?.(server);
  return report;
}

/** The origin a host started with these arguments records (PROTOCOL.md section 1.1). */
function originOf(args: string[]): string {
  const [first = "", second = ""] = args;
  if (first.startsWith("chrome-extension://")) return first.endsWith("/") ? first : `${first}/`;
  return `moz-extension:${second}`;
}

/** A JSON value of a transcript, numbers kept as written and objects as maps in the order written. */
export type Json = null | boolean | string | JsonNumber | Json[] | Map<string, Json>;

/** A number as written. */
export class JsonNumber {
  constructor(readonly text: string) {}
}

/** Parses JSON text into a `Json`. Transcripts and replies nest a few levels; this recursion is not over client data. */
export function parse(text: string, at: string): Json {
  let i = 0;
  const fail = (): never => {
    throw new Error(`${at}: bad JSON at offset ${i}: ${text.slice(i, i + 40)}`);
  };
  const space = () => {
    while (i < text.length && " \t\n\r".includes(text.charAt(i))) i++;
  };
  const value = (): Json => {
    space();
    const char = text.charAt(i);
    if (char === "{") {
      i++;
      const map = new Map<string, Json>();
      space();
      if (text.charAt(i) === "}") {
        i++;
        return map;
      }
      for (;;) {
        space();
        const key = value();
        if (typeof key !== "string") fail();
        space();
        if (text.charAt(i++) !== ":") fail();
        map.set(key as string, value());
        space();
        const after = text.charAt(i++);
        if (after === "}") return map;
        if (after !== ",") fail();
      }
    }
    if (char === "[") {
      i++;
      const items: Json[] = [];
      space();
      if (text.charAt(i) === "]") {
        i++;
        return items;
      }
      for (;;) {
        items.push(value());
        space();
        const after = text.charAt(i++);
        if (after === "]") return items;
        if (after !== ",") fail();
      }
    }
    if (char === '"') {
      const start = i;
      i++;
      while (i < text.length && text.charAt(i) !== '"') i += text.charAt(i) === "\\" ? 2 : 1;
      i++;
      return JSON.parse(text.slice(start, i)) as string;
    }
    for (const [word, meaning] of [["true", true], ["false", false], ["null", null]] as const) {
      if (text.startsWith(word, i)) {
        i += word.length;
        return meaning;
      }
    }
    const number = /^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?/.exec(text.slice(i, i + 400));
    if (!number) return fail();
    i += number[0].length;
    return new JsonNumber(number[0]);
  };
  const result = value();
  space();
  if (i !== text.length) fail();
  return result;
}

/** A number as serde_json's `Value` holds it: an integer of u64 or i64 range, or an f64. */
function serdeNumber(text: string): { int: bigint } | { float: number } {
  if (/^-?[0-9]+$/.test(text) && text !== "-0") {
    const value = BigInt(text);
    if (value >= -(2n ** 63n) && value < 2n ** 64n) return { int: value };
  }
  return { float: Number(text) };
}

/** An f64 as serde_json writes it (ryu's layout: `1.0`, `0.001`, `1e21`, `1.5e-7`). */
function formatFloat(value: number): string {
  if (value === 0) return Object.is(value, -0) ? "-0.0" : "0.0";
  const [mantissa = "", exponent = "0"] = value.toExponential().split("e");
  const sign = mantissa.startsWith("-") ? "-" : "";
  const digits = mantissa.replace("-", "").replace(".", "");
  const point = Number(exponent) + 1;
  let text: string;
  if (point > 0 && point <= 16) {
    text = digits.length <= point ? `${digits}${"0".repeat(point - digits.length)}.0` : `${digits.slice(0, point)}.${digits.slice(point)}`;
  } else if (point > -5 && point <= 0) {
    text = `0.${"0".repeat(-point)}${digits}`;
  } else {
    text = `${digits.length === 1 ? digits : `${digits.charAt(0)}.${digits.slice(1)}`}e${point - 1}`;
  }
  return sign + text;
}

/** Code point order, as Rust compares strings (and so as serde_json's `Value` sorts an object's keys). */
function byCodePoint(a: string, b: string): number {
  const [x, y] = [Array.from(a), Array.from(b)];
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = (x[i]?.codePointAt(0) ?? 0) - (y[i]?.codePointAt(0) ?? 0);
    if (d !== 0) return d;
  }
  return x.length - y.length;
}

/** A value as the Rust runner sends it: `serde_json::to_vec` of a `Value`, compact, keys sorted. */
export function serdeText(value: Json): string {
  if (value === null) return "null";
  if (typeof value === "boolean") return String(value);
  if (typeof value === "string") return JSON.stringify(value);
  if (value instanceof JsonNumber) {
    const number = serdeNumber(value.text);
    return "int" in number ? String(number.int) : formatFloat(number.float);
  }
  if (Array.isArray(value)) return `[${value.map(serdeText).join(",")}]`;
  const keys = [...value.keys()].sort(byCodePoint);
  return `{${keys.map((key) => `${JSON.stringify(key)}:${serdeText(value.get(key) ?? null)}`).join(",")}}`;
}

/** Replaces every `{"$repeat": [text, n, end]}` by the repeated text. */
function expand(value: Json): Json {
  if (value instanceof Map) {
    const args = value.get("$repeat");
    if (value.size === 1 && Array.isArray(args)) {
      const [text, count, end] = args;
      return String(text).repeat(Number(count instanceof JsonNumber ? count.text : count)) + (typeof end === "string" ? end : "");
    }
    return new Map([...value].map(([key, item]) => [key, expand(item)]));
  }
  return Array.isArray(value) ? value.map(expand) : value;
}

/** Replaces `"$name"` strings in a request by the values they captured. */
function substitute(value: Json, vars: Map<string, Json>, at: string): Json {
  if (typeof value === "string" && value.startsWith("$")) {
    const captured = vars.get(value);
    if (captured === undefined) throw new Error(`${at}: ${value} was never captured`);
    return captured;
  }
  if (value instanceof Map) return new Map([...value].map(([key, item]) => [key, substitute(item, vars, at)]));
  return Array.isArray(value) ? value.map((item) => substitute(item, vars, at)) : value;
}

/**
 * Captures the values `"$name"` stands for in `expected`, and returns `expected` with captured names replaced by
 * their values (so a second use must match the first).
 */
function bind(expected: Json, actual: Json, vars: Map<string, Json>): Json {
  if (typeof expected === "string" && expected.startsWith("$")) {
    if (!vars.has(expected)) vars.set(expected, actual);
    return vars.get(expected) ?? null;
  }
  if (expected instanceof Map && actual instanceof Map) {
    return new Map([...expected].map(([key, item]) => [key, actual.has(key) ? bind(item, actual.get(key) ?? null, vars) : item]));
  }
  if (Array.isArray(expected) && Array.isArray(actual)) {
    return expected.map((item, i) => (i < actual.length ? bind(item, actual[i] ?? null, vars) : item));
  }
  return expected;
}

/** Why `actual` doesn't match `expected` (`"*"` matching anything), or undefined when it does. */
export function jsonMatch(expected: Json, actual: Json, path = ""): string | undefined {
  if (expected === "*") return undefined;
  if (expected instanceof Map && actual instanceof Map) {
    for (const key of new Set([...expected.keys(), ...actual.keys()])) {
      if (!actual.has(key)) return `${path}/${key} is missing`;
      if (!expected.has(key)) return `${path}/${key} is unexpected: ${shorten(serdeText(actual.get(key) ?? null))}`;
      const why = jsonMatch(expected.get(key) ?? null, actual.get(key) ?? null, `${path}/${key}`);
      if (why !== undefined) return why;
    }
    return undefined;
  }
  if (Array.isArray(expected) && Array.isArray(actual) && expected.length === actual.length) {
    for (let i = 0; i < expected.length; i++) {
      const why = jsonMatch(expected[i] ?? null, actual[i] ?? null, `${path}/${i}`);
      if (why !== undefined) return why;
    }
    return undefined;
  }
  if (equal(expected, actual)) return undefined;
  return `${path}: expected ${shorten(serdeText(expected))}, got ${shorten(serdeText(actual))}`;
}

/** serde_json's `Value` equality. */
function equal(a: Json, b: Json): boolean {
  if (a instanceof JsonNumber && b instanceof JsonNumber) {
    const [x, y] = [serdeNumber(a.text), serdeNumber(b.text)];
    if ("int" in x && "int" in y) return x.int === y.int;
    return "float" in x && "float" in y && x.float === y.float;
  }
  if (a instanceof Map && b instanceof Map) {
    return a.size === b.size && [...a].every(([key, value]) => b.has(key) && equal(value, b.get(key) ?? null));
  }
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((value, i) => equal(value, b[i] ?? null));
  return a === b;
}

/** A text for a failure message, cut so that a 5 MB reply stays readable. */
function shorten(text: string): string {
  return text.length > 4000 ? `${text.slice(0, 4000)}… (${text.length} characters in all)` : text;
}
