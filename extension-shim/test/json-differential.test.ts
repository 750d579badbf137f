/**
 * The TypeScript twin of the host's JSON walks against the real host: a few hundred seeded random JSON texts
 * (odd number spellings, escapes, lone surrogates, duplicate names, white space between tokens, letters whose
 * case folds oddly, format, bidi and other odd characters raw at the start, middle and end of member names and
 * strings, now and then hundreds of levels deep) are written to the host in raw frames, then read whole,
 * at pointers, in slices and within byte budgets, searched and listed with queries; every answer must be what the
 * twin computes from the same text, byte for byte where the host answers with stored text.
 *
 * Search and list queries are compared only with a host whose `hello` reports `maxQueryWords`; a host without it
 * folds case and bounds pointers differently, and the test says it skipped them.
 * Set JSON_TWIN_SEED to try other texts, LLM_CACHE_HOST_BIN to use another host.
 */

import assert from "node:assert/strict";
import { it, type TestContext } from "node:test";
import {
  checkSessionId,
  checkShortId,
  compactJson,
  find,
  findIn,
  isRuleError,
  isWellFormed,
  MALFORMED,
  nextOffset,
  parseStorageKey,
  Query,
  shape,
  slice,
  truncateDescription,
  utf8Length,
  type Window,
} from "../src/backends/indexeddb/json/index.js";
import type { WireError } from "../src/protocol.js";
import { oddCharacter, withOddCharacter } from "./helpers/odd-characters.js";
import { RawHost } from "./helpers/raw-host.js";
import { Rng } from "./helpers/rng.js";
import { tempDir } from "./helpers/temp.js";

const SEED = Number(process.env.JSON_TWIN_SEED ?? 20_261_116);
const TEXTS = 300;

/** Pieces of string contents as written in JSON: letters that fold oddly, and escapes. */
const PIECES = [
  "invoice", "Invoice", "INVOICE", "due", "Ana", "x", " ", "a/b", "~", "in", "é", "É", "ÉTÉ", "ß", "SS", "İ", "i", "ǅ",
  "ǆ", "Ǆ", "Σ", "σ", "ς", "ΟΔΟΣ", "ﬃ", "ᾳ", "ᾼ", "😀", "\u212A", "k", "Ⱥ", "ⱥ", "\u{10400}", "\u0085", "\\n", '\\"',
  "\\\\", "\\/", "\\u00e9", "\\u00C9", "\\ud83d\\ude00", "\\u0041", "\\t", "\\b",
];
const NAMES = ["a", "b", "emails", "subject", "a/b", "m~n", "", "é", "😀", "\\u0061", "x y", "0", "~1", "ΟΔΟΣ"];
const NUMBERS = ["0", "-0", "1.50", "1e5", "-12.25E-3", "123456789012345678901234567890", "42", "3"];
const SPACES = ["", "", "", "", " ", "\n  ", "\t", "\r\n"];
/** A lone escaped surrogate: valid JSON that no Rust string (and so no host pointer or decoder) holds. */
const LONE = "\\ud800";

function randomString(rng: Rng): string {
  const count = rng.chance(0.1) ? 40 + rng.below(40) : rng.below(6);
  let contents = "";
  for (let i = 0; i < count; i++) contents += rng.chance(0.02) ? LONE : rng.chance(0.02) ? oddCharacter(rng) : rng.pick(PIECES);
  return `"${contents}"`;
}

/** A random JSON text, spaced at random between tokens. Test data of bounded depth, so recursion is fine here. */
function randomValue(rng: Rng, depth: number, kind = rng.below(depth >= 4 ? 3 : 6)): string {
  const sp = () => rng.pick(SPACES);
  switch (kind) {
    case 0:
      return randomString(rng);
    case 1:
      return rng.pick(NUMBERS);
    case 2:
      return rng.pick(["true", "false", "null"]);
    case 3:
    case 4: {
      const entries = Array.from({ length: rng.below(6) }, () => `${sp()}${randomValue(rng, depth + 1)}${sp()}`);
      return `[${sp()}${entries.join(",")}${sp()}]`;
    }
    default: {
      const name = () => `"${rng.chance(0.03) ? LONE : rng.chance(0.1) ? withOddCharacter(rng, rng.pick(NAMES)) : rng.pick(NAMES)}"`;
      const entries = Array.from({ length: rng.below(6) }, () => `${sp()}${name()}${sp()}:${sp()}${randomValue(rng, depth + 1)}${sp()}`);
      return `{${sp()}${entries.join(",")}${sp()}}`;
    }
  }
}

/** A text for an item (never `null`): mostly a container, now and then wrapped hundreds of levels deep (pointers over 1024 bytes). */
function randomItem(rng: Rng): string {
  let value = randomValue(rng, 0, rng.chance(0.8) ? 3 + rng.below(3) : rng.below(6));
  // The host refuses `null` data (it reads as no data at all).
  if (value === "null") value = "[null]";
  if (!rng.chance(0.06)) return value;
  const levels = 400 + rng.below(300);
  return rng.chance(0.5) ? `${"[".repeat(levels)}${value}${"]".repeat(levels)}` : `${'{"abc":'.repeat(levels)}${value}${"}".repeat(levels)}`;
}

/** Pointers into `data` (compact text): paths that exist, and a few that don't. */
function randomPointers(rng: Rng, data: string, count: number): string[] {
  const root: unknown = JSON.parse(data);
  const pointers: string[] = [];
  for (let n = 0; n < count; n++) {
    let pointer = "";
    let value = root;
    while (rng.chance(0.85)) {
      if (Array.isArray(value) && value.length > 0) {
        const index = rng.chance(0.9) ? rng.below(value.length) : value.length;
        pointer += `/${index}`;
        value = value[index];
      } else if (typeof value === "object" && value !== null && Object.keys(value).length > 0) {
        const name = rng.pick(Object.keys(value));
        if (!isWellFormed(name)) break;
        pointer += `/${name.replace(/~/g, "~0").replace(/\//g, "~1")}`;
        value = (value as Record<string, unknown>)[name];
      } else {
        break;
      }
    }
    if (rng.chance(0.15)) pointer += rng.pick(["/01", "/-", "/nope", "/0", "/~1", "/"]);
    pointers.push(pointer);
  }
  return pointers;
}

/** Words for a query: pieces of the data's strings in another case, or odd letters. */
function randomQuery(rng: Rng, data: string): string {
  const strings: string[] = [];
  const collect = [JSON.parse(data) as unknown];
  while (collect.length > 0 && strings.length < 50) {
    const value = collect.pop();
    if (typeof value === "string") strings.push(value);
    else if (typeof value === "object" && value !== null) collect.push(...Object.values(value));
  }
  const word = () => {
    const text = [...(strings.length > 0 && rng.chance(0.8) ? rng.pick(strings) : rng.pick(PIECES))];
    const start = rng.below(Math.max(text.length, 1));
    const piece = text.slice(start, start + 1 + rng.below(4)).join("");
    return rng.pick([piece, piece.toUpperCase(), piece.toLowerCase()]);
  };
  const query = Array.from({ length: 1 + rng.below(3) }, word).join(" ");
  return isWellFormed(query) ? query : "x";
}

/** The raw text at `pointer` in a reply, as the host wrote it. */
function rawAt(reply: string, pointer: string): string | undefined {
  const found = find(reply, pointer);
  return found === null || found === MALFORMED ? undefined : reply.slice(found[0], found[1]);
}

/** A reply as parsed: whether it succeeded, its result, its error. */
function parsed(reply: string): { ok: boolean; result?: any; error?: WireError } {
  return JSON.parse(reply) as { ok: boolean; result?: any; error?: WireError };
}

/** A short account of a case for a failure message. */
function about(data: string, request: string): string {
  const cut = (text: string) => (text.length > 1500 ? `${text.slice(0, 1500)}… (${text.length} units)` : text);
  return `\n  data: ${cut(data)}\n  request: ${cut(request)}`;
}

/** A description (never only white space, which the host refuses), now and then over 300 characters. */
function randomDescription(rng: Rng): string {
  return `d ${Array.from({ length: rng.chance(0.2) ? 200 : 1 + rng.below(8) }, () => rng.pick(PIECES)).join("")}`;
}

const ID_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_é ";
function randomId(rng: Rng, session: boolean): string {
  const length = rng.chance(0.1) ? 60 + rng.below(100) : rng.below(12);
  const id = Array.from({ length }, () => rng.pick([...ID_CHARS])).join("");
  return session && rng.chance(0.6) ? `conv_${id}` : id;
}

/** Starts a host in a fresh store, closed and removed after the test. */
async function startHost(t: TestContext): Promise<{ host: RawHost; reportsQueryLimits: boolean }> {
  const dir = tempDir();
  const host = new RawHost(dir.path);
  t.after(async () => {
    await host.close();
    dir.remove();
  });
  const [hello] = await host.requests(['{"id":0,"op":"hello"}']);
  return { host, reportsQueryLimits: parsed(hello ?? "{}").result?.limits?.maxQueryWords !== undefined };
}

it("writes, reads at pointers, slices and rules answer as the host does, byte for byte", async (t) => {
  const { host } = await startHost(t);
  const rng = new Rng(SEED);
  const counts = { texts: 0, pointers: 0, slices: 0, rules: 0 };
  for (let n = 0; n < TEXTS; n++) {
    const raw = randomItem(rng);
    const data = compactJson(raw);
    const sessionId = `conv_t${n}`;
    const key = `${sessionId}_aaaaaaaa_bbbbbbbb`;
    const description = randomDescription(rng);
    const requests = [
      `{"id":1,"op":"write","sessionId":"${sessionId}","taskId":"aaaaaaaa","turnId":"bbbbbbbb","description":${JSON.stringify(description)},"data":${raw}}`,
      `{"id":2,"op":"read","sessionId":"${sessionId}","storageKey":"${key}"}`,
    ];
    const pointers = randomPointers(rng, data, 6);
    for (const pointer of pointers) {
      requests.push(`{"id":3,"op":"read","sessionId":"${sessionId}","storageKey":"${key}","pointer":${JSON.stringify(pointer)}}`);
    }
    const windows: { pointer: string | undefined; window: Window; asked: boolean }[] = [];
    for (let i = 0; i < 6; i++) {
      const pointer = rng.chance(0.3) ? undefined : rng.pick(pointers);
      const asked = rng.chance(0.7);
      const window: Window = {
        offset: asked ? rng.below(7) : 0,
        limit: asked && rng.chance(0.6) ? 1 + rng.below(5) : undefined,
        maxBytes: !asked || rng.chance(0.5) ? 16 + rng.below(200) : undefined,
      };
      windows.push({ pointer, window, asked });
      const fields = [
        pointer === undefined ? "" : `,"pointer":${JSON.stringify(pointer)}`,
        asked ? `,"offset":${window.offset}` : "",
        window.limit === undefined ? "" : `,"limit":${window.limit}`,
        window.maxBytes === undefined ? "" : `,"maxBytes":${window.maxBytes}`,
      ];
      requests.push(`{"id":4,"op":"read","sessionId":"${sessionId}","storageKey":"${key}"${fields.join("")}}`);
    }
    const rules: string[] = [];
    for (let i = 0; i < 2; i++) {
      const ids = [randomId(rng, true), randomId(rng, false), randomId(rng, false)] as const;
      rules.push(
        `{"id":5,"op":"write","sessionId":${JSON.stringify(ids[0])},"taskId":${JSON.stringify(ids[1])},"turnId":${JSON.stringify(ids[2])},"description":"d","data":1}`,
      );
      requests.push(rules[rules.length - 1] as string);
      const storageKey = rng.chance(0.5) ? `${sessionId}_${ids[1]}_${ids[2]}` : ids.join("_");
      rules.push(`{"id":6,"op":"read","sessionId":"${sessionId}","storageKey":${JSON.stringify(storageKey)}}`);
      requests.push(rules[rules.length - 1] as string);
    }
    requests.push(`{"id":7,"op":"endSession","sessionId":"${sessionId}"}`);
    const replies = await host.requests(requests);
    const next = () => replies.shift() as string;
    let request = 0;
    const sent = () => requests[request++] as string;

    // The write: the size, shape and description the host stored are the twin's.
    const write = parsed(next());
    const writeRequest = sent();
    assert.ok(write.ok, `${JSON.stringify(write.error)}${about(raw, writeRequest)}`);
    assert.deepEqual(
      [write.result.dataSize, write.result.shape, write.result.description],
      [utf8Length(data), shape(data), truncateDescription(description)],
      about(data, writeRequest),
    );
    // The whole read: the stored text is the twin's compact text.
    const whole = next();
    assert.equal(rawAt(whole, "/result/item/data"), data, about(raw, sent()));

    for (const pointer of pointers) {
      const reply = next();
      const found = find(data, pointer);
      assert.notEqual(found, MALFORMED);
      const expected = found === null || found === MALFORMED ? undefined : data.slice(found[0], found[1]);
      const actual = parsed(reply).ok ? rawAt(reply, "/result/item/data") : undefined;
      assert.equal(actual, expected, about(data, sent()));
      if (!parsed(reply).ok) assert.equal(parsed(reply).error?.code, "ItemNotFoundError", about(data, requests[request - 1] as string));
      counts.pointers++;
    }

    for (const { pointer, window, asked } of windows) {
      const reply = next();
      const context = about(data, sent());
      const found = pointer === undefined ? [0, data.length] : find(data, pointer);
      if (found === null || found === MALFORMED) {
        assert.equal(parsed(reply).error?.code, "ItemNotFoundError", context);
        continue;
      }
      const value = data.slice(found[0], found[1]);
      // As the host's read: a window when one is asked for, or when maxBytes alone can't hold a container or string.
      const cut =
        asked ||
        (window.maxBytes !== undefined && utf8Length(value) > window.maxBytes && "[{\"".includes(value[0] ?? "x"));
      if (!cut) {
        assert.equal(rawAt(reply, "/result/item/data"), value, context);
        assert.equal(parsed(reply).result?.slice, undefined, context);
        continue;
      }
      const sliced = slice(value, window);
      assert.notEqual(sliced, MALFORMED, context);
      if (typeof sliced === "object" && "notSliceable" in sliced) {
        assert.deepEqual([parsed(reply).error?.code, parsed(reply).error?.actual], ["InvalidRequestError", sliced.notSliceable], context);
      } else if (typeof sliced === "object") {
        assert.equal(rawAt(reply, "/result/item/data"), sliced.text, context);
        const { offset, count, total } = sliced;
        assert.deepEqual(parsed(reply).result?.slice, { offset, count, total, nextOffset: nextOffset(sliced) }, context);
      }
      counts.slices++;
    }

    // Rules: the first wrong id of a write, and a storage key of a read, get the host's error word for word.
    for (const rule of rules) {
      const reply = parsed(next());
      sent();
      const request = JSON.parse(rule) as { op: string; sessionId: string; taskId: string; turnId: string; storageKey: string };
      let expected: WireError | undefined;
      if (request.op === "write") {
        expected = checkSessionId("sessionId", request.sessionId) ?? checkShortId("taskId", request.taskId) ?? checkShortId("turnId", request.turnId);
      } else {
        const key = parseStorageKey(request.storageKey);
        if (isRuleError(key)) expected = key;
      }
      if (expected === undefined) continue;
      assert.deepEqual(reply.error, expected, rule);
      counts.rules++;
    }
    next();
    sent();
    counts.texts++;
  }
  t.diagnostic(`${counts.texts} texts, ${counts.pointers} pointers, ${counts.slices} slices, ${counts.rules} rule errors compared`);
  assert.ok(counts.slices > TEXTS && counts.rules > TEXTS / 2, JSON.stringify(counts));
});

it("search and list queries answer as the host does", async (t) => {
  const { host, reportsQueryLimits } = await startHost(t);
  if (!reportsQueryLimits) {
    t.skip("this host's hello has no maxQueryWords, so its search answers otherwise; set LLM_CACHE_HOST_BIN to a host whose hello has it");
    return;
  }
  const rng = new Rng(SEED ^ 0x5eed);
  const counts = { searches: 0, matches: 0, cut: 0, lists: 0, listed: 0 };
  for (let n = 0; n < TEXTS; n++) {
    const raw = randomItem(rng);
    const data = compactJson(raw);
    const sessionId = `conv_s${n}`;
    const key = `${sessionId}_aaaaaaaa_bbbbbbbb`;
    const description = randomDescription(rng);
    const custom = rng.chance(0.5) ? randomValue(rng, 1, 5) : undefined;
    const queries = [randomQuery(rng, data), randomQuery(rng, data), randomQuery(rng, custom === undefined ? data : compactJson(custom))];
    const customField = custom === undefined ? "" : `,"customMetadata":${custom}`;
    const requests = [
      `{"id":1,"op":"write","sessionId":"${sessionId}","taskId":"aaaaaaaa","turnId":"bbbbbbbb","description":${JSON.stringify(description)},"data":${raw}${customField}}`,
      ...queries.slice(0, 2).map((query) => `{"id":2,"op":"search","sessionId":"${sessionId}","query":${JSON.stringify(query)},"limit":100}`),
      ...queries.map((query) => `{"id":3,"op":"list","sessionId":"${sessionId}","query":${JSON.stringify(query)}}`),
      `{"id":4,"op":"endSession","sessionId":"${sessionId}"}`,
    ];
    const replies = (await host.requests(requests)).map(parsed);
    assert.ok(replies[0]?.ok, `${JSON.stringify(replies[0]?.error)}${about(raw, requests[0] as string)}`);

    for (let i = 0; i < 2; i++) {
      const reply = replies[1 + i];
      const query = Query.parse(queries[i] as string);
      const context = about(data, requests[1 + i] as string);
      if (!(query instanceof Query)) {
        assert.equal(reply?.error?.code, "InvalidRequestError", context);
        continue;
      }
      const result = findIn(data, query, 0, 100);
      assert.ok(result !== undefined);
      // The item was written without provenance, so every match says it is unknown.
      const provenance = { origin: "unknown" };
      const expected = result.found.map(({ pointer, pointerCut, snippet }) =>
        pointerCut ? { storageKey: key, pointer, pointerCut, snippet, provenance } : { storageKey: key, pointer, snippet, provenance },
      );
      assert.deepEqual(reply?.result?.matches, expected, context);
      assert.equal(reply?.result?.nextCursor === null, !result.more, context);
      if (result.found.length > 0) assert.ok(query.mightMatch(data), `screening ruled out a match${context}`);
      counts.searches++;
      counts.matches += result.found.length;
      counts.cut += result.found.filter((found) => found.pointerCut).length;
    }

    for (let i = 0; i < 3; i++) {
      const reply = replies[3 + i];
      const query = Query.parse(queries[i] as string);
      const context = about(custom ?? "", `${requests[3 + i]} after ${requests[0]}`);
      if (!(query instanceof Query)) {
        assert.equal(reply?.error?.code, "InvalidRequestError", context);
        continue;
      }
      const together = query.together();
      together.add(truncateDescription(description));
      if (custom !== undefined) together.addStrings(compactJson(custom));
      assert.equal(reply?.result?.items?.length, together.all() ? 1 : 0, context);
      counts.lists++;
      if (together.all()) counts.listed++;
    }
  }
  t.diagnostic(`${counts.searches} searches (${counts.matches} matches, ${counts.cut} pointers cut), ${counts.lists} lists (${counts.listed} matched)`);
  // The texts must reach matches in numbers, or they test little. Seeds give from about 240 to 340 matches.
  assert.ok(counts.matches > TEXTS / 2 && counts.cut > 0 && counts.listed > TEXTS / 4, JSON.stringify(counts));
});
