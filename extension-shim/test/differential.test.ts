/**
 * IdbHost against the real host, request by request: seeded random sequences of request texts (every op, valid and
 * invalid; odd JSON, odd ids, duplicate and unknown fields, wrong types, keys of other sessions, cursors real and
 * forged, format, bidi and other odd characters raw at the start, middle and end of member names and values and
 * of the whole text, data from a few bytes to a few megabytes, a session filled to its quota, a request over the
 * frame limit)
 * go to the host binary in raw frames and to an IdbHost on fake-indexeddb, and every reply must be the same text.
 *
 * Both are made to agree on what is theirs to choose. IdbHost's clock shows the timestamp of the host's last
 * write, so timestamps, list order and cursors match; its random source draws the ids the host generated. What
 * still legitimately differs is normalised: `hostVersion` and IdbHost's `backend` in `hello`, the host's gzip of a
 * reply (the client asked for it; IdbHost never compresses), and `lastAccessedAt` in `stats` and `sessions`, which
 * a host's `delete` sets from its own clock (in `stats` only whether it is null is compared; in `sessions` it is
 * always a number), and the suggestion of a store-wide QuotaExceededError, which names what a person can do where
 * each one serves: the host's command line, the extension's cache viewer.
 *
 * One sequence runs both with a small store-wide quota (the host's from its settings file, IdbHost's as an option),
 * and must fill it, so that the store's totals and refusals are compared too.
 *
 * Set IDB_DIFF_SEED to try other sequences, LLM_CACHE_HOST_BIN to use another host.
 */

import "fake-indexeddb/auto";
import assert from "node:assert/strict";
import { it } from "node:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { IDBFactory } from "fake-indexeddb";
import { IdbHost } from "../src/backends/indexeddb/host.js";
import { ID_ALPHABET } from "../src/backends/indexeddb/json/index.js";
import { STORE_QUOTA_SUGGESTION } from "../src/backends/indexeddb/cmd/mod.js";
import { ORIGINS } from "../src/protocol.js";
import { BOM, oddCharacter, withOddCharacter } from "./helpers/odd-characters.js";
import { RawHost } from "./helpers/raw-host.js";
import { Rng } from "./helpers/rng.js";
import { tempDir } from "./helpers/temp.js";

const SEED = Number(process.env.IDB_DIFF_SEED ?? 20_261_123);
/** Sequences, each on a fresh store on both sides, and requests in each. */
const SEQUENCES = 8;
const REQUESTS = 260;
/** The sequence whose store has a small store-wide quota on both sides (its owner's choice, PROTOCOL.md 5.7), and that quota. */
const SMALL_STORE_SEQUENCE = 1;
const SMALL_STORE_QUOTA = 3000;

const SESSIONS = ["conv_d1", "conv_d2", "conv_D-3"];
const TASKS = ["task0001", "task0002", "abcdefgh"];
/** Pieces of string contents as written in JSON: words to search for, letters that fold oddly, escapes. */
const PIECES = [
  "invoice", "Invoice", "due", "Ana", "budget", " ", "a/b", "~", "é", "ÉTÉ", "ß", "İ", "Σ", "ς", "😀", "\u212A", "k",
  "\\n", '\\"', "\\\\", "\\/", "\\u00e9", "\\ud83d\\ude00", "\\u0041", "\\t",
];
const WORDS = ["invoice", "INVOICE", "due", "ana", "budget", "été", "σ", "k", "a/b", "nothing"];
const NAMES = ["a", "b", "emails", "subject", "a/b", "m~n", "", "é", "\\u0061", "0", "log"];
const NUMBERS = ["0", "-0", "1.50", "1e5", "-12.25E-3", "123456789012345678901234567890", "42", "3"];
const SPACES = ["", "", "", "", " ", "\n  ", "\t"];

/** What the sequence knows of the host's store, to aim requests at what exists. */
interface Known {
  keys: Map<string, string[]>;
  listCursors: Map<string, string>;
  searchCursors: Map<string, string>;
  /** The last `nextCursor` a `sessions` gave. */
  sessionsCursor: string | undefined;
}

function jsonString(rng: Rng, count = rng.below(6)): string {
  let contents = "";
  for (let i = 0; i < count; i++) contents += rng.chance(0.02) ? "\\ud800" : rng.chance(0.05) ? oddCharacter(rng) : rng.pick(PIECES);
  return `"${contents}"`;
}

/** A random JSON value, spaced at random. Test data of bounded depth, so recursion is fine here. */
function jsonValue(rng: Rng, depth = 0): string {
  const sp = () => rng.pick(SPACES);
  switch (rng.below(depth >= 3 ? 3 : 6)) {
    case 0:
      return jsonString(rng);
    case 1:
      return rng.pick(NUMBERS);
    case 2:
      return rng.pick(["true", "false", "null"]);
    case 3:
    case 4:
      return `[${sp()}${Array.from({ length: rng.below(5) }, () => `${sp()}${jsonValue(rng, depth + 1)}${sp()}`).join(",")}]`;
    default: {
      const name = () => (rng.chance(0.1) ? withOddCharacter(rng, rng.pick(NAMES)) : rng.pick(NAMES));
      const member = () => `${sp()}"${name()}"${sp()}:${sp()}${jsonValue(rng, depth + 1)}`;
      return `{${Array.from({ length: rng.below(5) }, member).join(",")}${sp()}}`;
    }
  }
}

/** An item's data: small and odd, or a list of emails, or a long string or array; now and then megabytes. */
function itemData(rng: Rng, big: boolean): string {
  if (big) {
    const size = rng.chance(0.15) ? 5_242_879 + rng.below(4) : 200_000 + rng.below(3_000_000);
    return rng.chance(0.5) ? `"${"x".repeat(size - 2)}"` : `[${Array.from({ length: Math.floor(size / 10) }, (_, i) => `"due ${String(i % 1000).padStart(3, "0")}"`).join(",")}]`;
  }
  switch (rng.below(5)) {
    case 0: {
      const emails = Array.from({ length: 1 + rng.below(12) }, (_, i) => `{"from":"${rng.pick(["ana", "bo", "cy"])}@x","subject":${jsonString(rng, 2)},"n":${i}}`);
      return `{"emails":[${emails.join(",")}],"total":${emails.length}}`;
    }
    case 1:
      return jsonString(rng, 4 + rng.below(40));
    case 2: {
      const levels = 300 + rng.below(500);
      return `${"[".repeat(levels)}${jsonString(rng, 3)}${"]".repeat(levels)}`;
    }
    default: {
      const value = jsonValue(rng);
      return value === "null" ? "[null]" : value;
    }
  }
}

/** A request field's value: mostly `good`, now and then something the host must refuse. */
function field(rng: Rng, good: string, p = 0.9): string {
  if (rng.chance(p)) return good;
  return rng.pick([
    "null", "7", "-1", "2.5", "true", "[]", "{}", '"\\ud800"', '"x"', `"${"é".repeat(80)}"`, "18446744073709551616",
    "18446744073709551615", '"conv_other_task0001_turn0001"', '" "', '""',
  ]);
}

function storageKeyFor(rng: Rng, known: Known, session: string): string {
  const keys = known.keys.get(session) ?? [];
  if (keys.length > 0 && rng.chance(0.8)) return rng.pick(keys);
  return rng.pick([
    `${session}_${rng.pick(TASKS)}_turn0001`,
    `${rng.pick(SESSIONS)}_${rng.pick(TASKS)}_${rng.pick(["turn0001", "turn0002"])}`,
    `${session}_TASK0001_turn0001`,
    `${session}_t_x`,
    "justtext",
    `x_${rng.pick(TASKS)}_turn0001`,
  ]);
}

function pointer(rng: Rng): string {
  return rng.pick(["", "/emails", "/emails/0", "/emails/1/subject", "/emails/99", "/0", "/0/0/0", "/total", "/a", "/a~1b", "/m~0n", "/~2", "a", "/01", "/-", `/${"0/".repeat(200)}0`]);
}

/** Members of a request object, in an order and spacing of their own, as JSON text. */
function object(rng: Rng, members: Array<[string, string | undefined]>): string {
  const present = members.filter((member): member is [string, string] => member[1] !== undefined);
  if (rng.chance(0.05)) present.push(["clientField", jsonValue(rng)]);
  if (rng.chance(0.02) && present.length > 0) present.push(rng.pick(present));
  if (rng.chance(0.3)) present.sort(() => (rng.chance(0.5) ? 1 : -1));
  // Now and then a member's name, or a string value, gets an odd character, raw: `"\ufeffop"` must be an unknown
  // field to both, `"conv_d1\u2028"` the same wrong sessionId.
  if (rng.chance(0.1) && present.length > 0) {
    const at = rng.below(present.length);
    const [name, value] = present[at] as [string, string];
    present[at] = [withOddCharacter(rng, name), value];
  }
  if (rng.chance(0.05) && present.length > 0) {
    const at = rng.below(present.length);
    const [name, value] = present[at] as [string, string];
    if (/^"[^"]*"$/.test(value)) present[at] = [name, `"${withOddCharacter(rng, value.slice(1, -1))}"`];
  }
  const sp = () => (rng.chance(0.1) ? rng.pick(SPACES) : "");
  return `{${present.map(([name, value]) => `${sp()}"${name}"${sp()}:${sp()}${value}`).join(",")}${sp()}}`;
}

/**
 * A `provenance` member's JSON text: mostly one both must take (any origin, a source with odd URLs, upstream and
 * derivedFrom with duplicates, keys of the session that exist or not), now and then one both must refuse in the
 * same words (an unknown origin, `endorsed`, too many entries, a key of another session, a tool name with a space).
 */
function provenance(rng: Rng, known: Known, session: string): string {
  const origin = () => rng.pick(ORIGINS);
  const source = object(rng, [
    ["url", rng.chance(0.6) ? (rng.chance(0.9) ? jsonString(rng, 1 + rng.below(3)) : rng.pick(['""', `"${"u".repeat(2049)}"`, `"${"é".repeat(2048)}"`, "5"])) : undefined],
    ["tool", rng.chance(0.5) ? JSON.stringify(rng.pick(["fetch_page", "mcp:search/v2", "a b", "t".repeat(64), "t".repeat(65), "", "é"])) : undefined],
  ]);
  const upstream = Array.from({ length: rng.chance(0.05) ? 8 : rng.below(4) }, () => JSON.stringify(rng.chance(0.97) ? origin() : "website"));
  const keys = known.keys.get(session) ?? [];
  const key = () =>
    rng.chance(0.7) && keys.length > 0 ? rng.pick(keys) : rng.pick([`${session}_task0001_turn0001`, "conv_other_task0001_turn0001", "nope", `${session}_TASK0001_x`]);
  const derivedFrom = Array.from({ length: rng.chance(0.05) ? 17 : rng.below(5) }, () => JSON.stringify(key()));
  return object(rng, [
    ["origin", rng.chance(0.97) ? field(rng, JSON.stringify(origin()), 0.95) : undefined],
    ["source", rng.chance(0.4) ? field(rng, source, 0.95) : undefined],
    ["upstream", rng.chance(0.4) ? field(rng, `[${upstream.join(",")}]`, 0.95) : undefined],
    ["derivedFrom", rng.chance(0.4) ? field(rng, `[${derivedFrom.join(",")}]`, 0.95) : undefined],
    ["endorsed", rng.chance(0.03) ? '{"at":1,"reason":"trust me"}' : undefined],
  ]);
}

function requestId(rng: Rng, n: number): string {
  if (rng.chance(0.92)) return rng.chance(0.5) ? String(n) : `"r${n}"`;
  return rng.pick(["-0", "-9223372036854775808", "18446744073709551615", "18446744073709551616", "1.0", "1e2", "true", "null", "[1]", '"\\u0041"', `"${"i".repeat(257)}"`, '"\\ud800"']);
}

/** One random request text. */
function randomRequest(rng: Rng, n: number, known: Known): string {
  const id = requestId(rng, n);
  const session = rng.chance(0.97) ? rng.pick(SESSIONS) : rng.pick(["bad session", "conv_", `conv_${"a".repeat(65)}`, "session_1"]);
  const sid = field(rng, JSON.stringify(session), 0.97);
  const roll = rng.below(100);
  if (roll < 3) {
    const encodings = rng.pick([undefined, '["gzip"]', '["br"]', '"gzip"', "[1]"]);
    return object(rng, [["id", id], ["op", '"hello"'], ["encodings", encodings]]);
  }
  if (roll < 30) {
    const big = rng.chance(0.03);
    const taskId = rng.chance(0.7) ? field(rng, `"${rng.pick(TASKS)}"`) : undefined;
    const turnId = rng.chance(0.6) ? field(rng, `"turn000${rng.below(4)}"`) : undefined;
    const customName = rng.chance(0.3) ? withOddCharacter(rng, "labels") : "labels";
    const custom = rng.chance(0.2) ? field(rng, rng.chance(0.05) ? `{"k":"${"c".repeat(65_530)}"}` : `{"${customName}":[${jsonString(rng, 2)}],"n":1}`) : undefined;
    const description = field(rng, rng.chance(0.1) ? `"${"é😀".repeat(200)}"` : jsonString(rng, 1 + rng.below(3)).replace(/^""$/, '"d"'), 0.95);
    return object(rng, [
      ["id", id],
      ["op", '"write"'],
      ["sessionId", sid],
      ["taskId", taskId],
      ["turnId", turnId],
      ["data", rng.chance(0.97) ? itemData(rng, big) : field(rng, "1", 0)],
      ["description", rng.chance(0.97) ? description : undefined],
      ["customMetadata", custom],
      ["provenance", rng.chance(0.5) ? field(rng, provenance(rng, known, session), 0.95) : undefined],
    ]);
  }
  const key = field(rng, JSON.stringify(storageKeyFor(rng, known, session)), 0.95);
  const count = (good: number) => field(rng, String(good), 0.85);
  if (roll < 48) {
    if (rng.chance(0.15)) {
      const entries = Array.from({ length: rng.chance(0.05) ? 101 : 1 + rng.below(6) }, () =>
        rng.chance(0.7) ? JSON.stringify(storageKeyFor(rng, known, session)) : `{"storageKey":${key},"pointer":${field(rng, JSON.stringify(pointer(rng)))}}`,
      );
      return object(rng, [
        ["id", id],
        ["op", '"read"'],
        ["sessionId", sid],
        ["storageKeys", field(rng, `[${entries.join(",")}]`, 0.95)],
        ["maxBytes", rng.chance(0.3) ? count(16 + rng.below(3000)) : undefined],
        ["offset", rng.chance(0.03) ? "1" : undefined],
      ]);
    }
    return object(rng, [
      ["id", id],
      ["op", '"read"'],
      ["sessionId", sid],
      ["storageKey", key],
      ["pointer", rng.chance(0.4) ? field(rng, JSON.stringify(pointer(rng))) : undefined],
      ["offset", rng.chance(0.2) ? count(rng.below(30)) : undefined],
      ["limit", rng.chance(0.2) ? count(rng.below(30)) : undefined],
      ["maxBytes", rng.chance(0.25) ? count(rng.chance(0.1) ? rng.below(20) : 16 + rng.below(5000)) : undefined],
    ]);
  }
  if (roll < 60) {
    const cursor = known.listCursors.get(session);
    return object(rng, [
      ["id", id],
      ["op", '"list"'],
      ["sessionId", sid],
      ["taskId", rng.chance(0.2) ? field(rng, `"${rng.pick(TASKS)}"`) : undefined],
      ["limit", rng.chance(0.6) ? count(1 + rng.below(rng.chance(0.9) ? 4 : 1200)) : undefined],
      ["cursor", rng.chance(0.4) ? field(rng, cursor === undefined ? '"12:conv_d1_task0001_turn0001"' : JSON.stringify(cursor)) : undefined],
      ["query", rng.chance(0.2) ? field(rng, JSON.stringify(rng.pick(WORDS))) : undefined],
    ]);
  }
  if (roll < 68) {
    const cursor = known.searchCursors.get(session);
    const query = rng.chance(0.05) ? `"${"w ".repeat(33)}"` : JSON.stringify(Array.from({ length: 1 + rng.below(2) }, () => rng.pick(WORDS)).join(" "));
    return object(rng, [
      ["id", id],
      ["op", '"search"'],
      ["sessionId", sid],
      ["query", field(rng, query)],
      ["limit", rng.chance(0.6) ? count(1 + rng.below(rng.chance(0.9) ? 5 : 120)) : undefined],
      ["cursor", rng.chance(0.4) ? field(rng, cursor === undefined ? '"12:0:conv_d1_task0001_turn0001"' : JSON.stringify(cursor)) : undefined],
    ]);
  }
  if (roll < 76) {
    return object(rng, [
      ["id", id],
      ["op", '"update"'],
      ["sessionId", sid],
      ["storageKey", key],
      ["data", rng.chance(0.4) ? itemData(rng, rng.chance(0.03)) : undefined],
      ["description", rng.chance(0.5) ? field(rng, '"updated"') : undefined],
      ["customMetadata", rng.chance(0.3) ? field(rng, '{"v":2}') : undefined],
      ["provenance", rng.chance(0.5) ? field(rng, provenance(rng, known, session), 0.95) : undefined],
    ]);
  }
  if (roll < 84) {
    const data = rng.pick(['["more",1]', '"text"', "[]", '""', "5", '{"a":1}', `"${"y".repeat(rng.chance(0.05) ? 3_000_000 : 10)}"`]);
    return object(rng, [
      ["id", id],
      ["op", '"append"'],
      ["sessionId", sid],
      ["storageKey", key],
      ["pointer", rng.chance(0.5) ? field(rng, JSON.stringify(rng.pick(["", "/emails", "/emails/0/subject", "/log", "/0", "/nope"]))) : undefined],
      ["data", field(rng, data, 0.95)],
      ["description", rng.chance(0.3) ? field(rng, '"appended"') : undefined],
      ["provenance", rng.chance(0.5) ? field(rng, provenance(rng, known, session), 0.95) : undefined],
    ]);
  }
  if (roll < 87) {
    const reason = rng.pick(["checked by the user", "ok", " ", "", "r".repeat(120), "r".repeat(121), "é".repeat(120), "😀".repeat(61), "line\u2028break"]);
    return object(rng, [
      ["id", id],
      ["op", '"endorse"'],
      ["sessionId", sid],
      ["storageKey", key],
      ["reason", rng.chance(0.97) ? field(rng, `"${reason}"`, 0.95) : undefined],
    ]);
  }
  if (roll < 90) return object(rng, [["id", id], ["op", '"delete"'], ["sessionId", sid], ["storageKey", key]]);
  if (roll < 92) return object(rng, [["id", id], ["op", '"stats"'], ["sessionId", sid]]);
  if (roll < 94) return object(rng, [["id", id], ["op", '"endSession"'], ["sessionId", sid]]);
  if (roll < 97) {
    // Cursors real, forged in the form of the host's (a sessionId) or of another op's, and of no form.
    const forged = rng.pick(['"conv_d1"', '"conv_D"', '"conv_z"', '"12:conv_d1_task0001_turn0001"', '"garbage"', '""']);
    const cursor = known.sessionsCursor !== undefined && rng.chance(0.7) ? JSON.stringify(known.sessionsCursor) : forged;
    return object(rng, [
      ["id", id],
      ["op", '"sessions"'],
      ["limit", rng.chance(0.6) ? count(1 + rng.below(rng.chance(0.9) ? 3 : 1200)) : undefined],
      ["cursor", rng.chance(0.4) ? field(rng, cursor) : undefined],
      // A sessionId means nothing to `sessions`: it lists every session of the caller all the same.
      ["sessionId", rng.chance(0.1) ? sid : undefined],
    ]);
  }
  // Requests that are wrong as a whole.
  const valid = object(rng, [["id", id], ["op", '"stats"'], ["sessionId", sid]]);
  return rng.pick([
    valid.slice(0, rng.below(valid.length)),
    `${valid} x`,
    `[${id}]`,
    `[${id},2]`,
    '"a string"',
    "42",
    "",
    " \n",
    `\u00a0${valid}`,
    `${oddCharacter(rng)}${valid}`,
    `\u000b${valid}`,
    `{"id":${id},"op":"stats","op":"list"}`,
    `{"id":${id},"op":"stats","sessionId":${sid},"x":1,"\\u0078":2}`,
    `{"id":${id},"op":${rng.pick(['"drop"', "5", "null", `"${"é".repeat(50)}"`])}}`,
    `{"id":${id},"op":"stats","\\ud800":1}`,
    `{"id":${id},"op":"stats",}`,
    `{"id":${id} "op":"stats"}`,
    `{"id":${id},"op":"stats","sessionId":"conv_a\\x"}`,
    `{"id":${id},"op":"stats","sessionId":"conv_a\u0001"}`,
    `{"id":${id},"op":"stats","data":[1,2,}`,
    `{"id":${id},"op":"stats","data":01}`,
    `{"id":${id},"op":"stats","data":-}`,
    `{"id":${id},"op":"stats","data":1.e5}`,
    `{"id":${id},"op":"stats","data":tru}`,
    `{"id":${id},\n"op":"stats",\n"data":{"a" 1}}`,
    `{"id":${id},"op":"stats","data":"\\u12"}`,
    `{${id}:1}`,
  ]);
}

/**
 * Requests whose member names JSON.stringify writes with an escape: a lone surrogate (which serde refuses), a quote
 * and a backslash (which it reads), a control character, each beside a known field or in place of one.
 */
function escapedNameRequests(): string[] {
  const names = ['"\\ud800"', '"\\udfff"', '"a\\"b"', '"a\\\\b"', '"\\u0001"', '"op\\u0000"'];
  return names.flatMap((name, n) => [
    `{"id":"escaped-${n}","op":"stats","sessionId":"conv_d1",${name}:1}`,
    `{${name}:"x","id":"escaped-first-${n}","op":"hello"}`,
  ]);
}

/** The host's reply as a client reads it: a gzipped reply decoded. */
function decoded(reply: string): string {
  const gzip = /^\{"id":(.*?),"ok":(?:true|false),"encoding":"gzip","payload":"([A-Za-z0-9+/=]*)"\}$/s.exec(reply);
  return gzip ? gunzipSync(Buffer.from(gzip[2] ?? "", "base64")).toString("utf8") : reply;
}

/** What may legitimately differ, made the same (see the module's comment). */
function normalised(reply: string): string {
  return reply
    .replace(/"hostVersion":"[^"]*"/, '"hostVersion":"*"')
    .replace(/,"backend":"indexeddb"\}\}$/, "}}")
    .replace(/("lastAccessedAt":)[0-9]+(,"quotaBytes")/, "$1*$2")
    .replace(/("lastAccessedAt":)[0-9]+\}/g, "$1*}")
    .replace(HOST_STORE_QUOTA_SUGGESTION, "*")
    .replace(JSON.stringify(STORE_QUOTA_SUGGESTION), "*");
}

/** The host's suggestion for a full store, which names its command line; IdbHost's names the cache viewer. */
const HOST_STORE_QUOTA_SUGGESTION = JSON.stringify(
  "end the sessions whose tasks are done (endSession; a person can see every session with `llm-cache-host sessions` and remove one with `llm-cache-host end <session>`), or delete items no longer needed, then try again; the limit itself is raised with `llm-cache-host config --store-quota <size>`",
);

/**
 * The text the in-process client would send for `text`'s request: JSON.stringify of the object it parses to (the
 * client stringifies objects), or undefined when it is not a JSON object, which that client never sends.
 */
function asStringified(text: string): string | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === "object" && value !== null && !Array.isArray(value) ? JSON.stringify(value) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Sends the requests, keeps what the host's replies tell of its store, and compares every reply. With
 * `stringified`, every request that is a JSON object is sent as JSON.stringify writes it, to both, and IdbHost gets
 * it as the in-process client sends it (`handleParsed`): its reply object must be what JSON.parse makes of the host's.
 */
async function runSequence(
  sequence: number,
  stringified = false,
): Promise<{
  compared: number;
  ok: number;
  bigRequests: number;
  pagedSessions: number;
  bomStrings: number;
  viaStringify: number;
  labelled: number;
  endorsed: number;
}> {
  const rng = new Rng(SEED + sequence * 7919);
  const dir = tempDir();
  const storeQuotaBytes = sequence === SMALL_STORE_SEQUENCE ? SMALL_STORE_QUOTA : undefined;
  // The host reads its store quota from the data directory's settings file, as `install --store-quota` writes it.
  if (storeQuotaBytes !== undefined) writeFileSync(join(dir.path, "config.json"), JSON.stringify({ storeQuotaBytes }));
  const host = new RawHost(dir.path);
  // IdbHost's clock and random source follow the host's: see the module's comment.
  let clock = Date.now();
  const draws: number[][] = [];
  const fallback = new Rng(SEED ^ 0x5eed);
  const idb = new IdbHost({
    indexedDB: new IDBFactory(),
    storeQuotaBytes,
    now: () => clock,
    random: (bytes) => {
      const wanted = draws.shift();
      for (let i = 0; i < bytes.length; i++) bytes[i] = wanted?.[i] ?? fallback.below(256);
    },
  });
  // Refusals for the store-wide quota: the small-store sequence must have some.
  let storeFull = 0;
  const known: Known = { keys: new Map(), listCursors: new Map(), searchCursors: new Map(), sessionsCursor: undefined };
  let [compared, ok, bigRequests, pagedSessions, bomStrings, viaStringify] = [0, 0, 0, 0, 0, 0];
  // Changes that carried a provenance the host took, and endorsements it gave.
  let [labelled, endorsed] = [0, 0];
  try {
    await idb.maintain();
    // The last sequence fills a session to its quota and sends a request over the frame limit; the small-store one
    // fills its store once whatever the seed draws.
    const requests = [
      ...(sequence === SEQUENCES - 1 ? quotaRequests() : []),
      ...(sequence === SMALL_STORE_SEQUENCE ? storeFillRequests() : []),
      ...(stringified ? escapedNameRequests() : []),
    ];
    for (let n = 0; n < REQUESTS + requests.length; n++) {
      const drawn = requests[n] ?? randomRequest(rng, n, known);
      const sent = stringified ? asStringified(drawn) : undefined;
      const text = sent ?? drawn;
      if (sent !== undefined) viaStringify++;
      if (text.length > 100_000) bigRequests++;
      // A member name or string that starts with a raw byte order mark: what a decoder drops by default.
      if (text.includes(`"${BOM}`)) bomStrings++;
      const hostReply = await host.request(text);
      const expected = decoded(hostReply);
      let result: { timestamp?: unknown; storageKey?: unknown; taskId?: unknown; turnId?: unknown; nextCursor?: unknown } | undefined;
      try {
        result = (JSON.parse(expected) as { result?: typeof result }).result;
      } catch {
        result = undefined;
      }
      if (typeof result?.timestamp === "number") clock = result.timestamp;
      // An endorsement keeps the item's timestamp: the host's clock shows in when it was given.
      const endorsedAt = (result as { provenance?: { endorsed?: { at?: unknown } } } | undefined)?.provenance?.endorsed?.at;
      if (/"op"\s*:\s*"endorse"/.test(text) && typeof endorsedAt === "number") clock = endorsedAt;
      // The ids the host generated, as the bytes that IdbHost's generator turns into them.
      if (/"op"\s*:\s*"write"/.test(text) && typeof result?.taskId === "string" && typeof result.turnId === "string") {
        if (!/"taskId"\s*:\s*"/.test(text)) draws.push(idBytes(result.taskId));
        if (!/"turnId"\s*:\s*"/.test(text)) draws.push(idBytes(result.turnId));
      }
      // The in-process client takes the reply as an object (handleParsed): compared as JSON.parse reads the host's.
      const [actual, wanted] =
        sent === undefined ? [await idb.handleText(text), expected] : [JSON.stringify(await idb.handleParsed(text)), JSON.stringify(JSON.parse(expected))];
      draws.length = 0;
      compared++;
      if (normalised(actual) !== normalised(wanted)) {
        const cut = (s: string) => (s.length > 2000 ? `${s.slice(0, 2000)}… (${s.length} characters)` : s);
        assert.fail(`sequence ${sequence} (seed ${SEED}), request ${n}:\n  request: ${cut(text)}\n  host:    ${cut(wanted)}\n  idb:     ${cut(actual)}`);
      }
      if (expected.includes('"ok":true')) ok++;
      if (expected.includes('"ok":true') && /"provenance"\s*:\s*\{/.test(text)) labelled++;
      if (expected.includes('"ok":true') && /"op"\s*:\s*"endorse"/.test(text)) endorsed++;
      if (expected.includes("store-wide limit")) storeFull++;
      // A `sessions` page that lists sessions and leads on to another.
      if (/"sessions":\[\{.*"nextCursor":"/.test(expected)) pagedSessions++;
      learn(text, result, known);
    }
    if (storeQuotaBytes !== undefined) assert.ok(storeFull > 0, `sequence ${sequence} never filled its store of ${storeQuotaBytes} bytes`);
  } finally {
    idb.close();
    await host.close();
    dir.remove();
  }
  return { compared, ok, bigRequests, pagedSessions, bomStrings, viaStringify, labelled, endorsed };
}

/** The bytes IdbHost's id generator turns into `id` (each byte below 36 is that letter of the alphabet). */
function idBytes(id: string): number[] {
  return [...id].map((char) => ID_ALPHABET.indexOf(char));
}

/** What a reply tells of the store: keys written, cursors given, sessions ended. */
function learn(text: string, result: { storageKey?: unknown; nextCursor?: unknown } | undefined, known: Known): void {
  if (/"op"\s*:\s*"sessions"/.test(text) && typeof result?.nextCursor === "string") known.sessionsCursor = result.nextCursor;
  const session = /"sessionId"\s*:\s*"(conv_[A-Za-z0-9-]+)"/.exec(text)?.[1];
  if (session === undefined || result === undefined) return;
  const op = /"op"\s*:\s*"(\w+)"/.exec(text)?.[1];
  if (op === "write" && typeof result.storageKey === "string") {
    const keys = known.keys.get(session) ?? [];
    if (!keys.includes(result.storageKey)) keys.push(result.storageKey);
    known.keys.set(session, keys);
  }
  if (op === "list" && typeof result.nextCursor === "string") known.listCursors.set(session, result.nextCursor);
  if (op === "search" && typeof result.nextCursor === "string") known.searchCursors.set(session, result.nextCursor);
  if (op === "endSession") known.keys.delete(session);
}

/** Ten items of 5 MiB less a little customMetadata fill a session; then one more byte, and a request over 8 MiB. */
/**
 * The small-store sequence's first requests: a write of 1,800 bytes, one more in another session that its store
 * quota (SMALL_STORE_QUOTA) refuses, and the first session ended, so the random requests start from an empty store.
 */
function storeFillRequests(): string[] {
  const write = (id: string, sessionId: string) =>
    `{"id":"${id}","op":"write","sessionId":"${sessionId}","taskId":"task0001","turnId":"turn0001","data":"${"f".repeat(1_798)}","description":"fills the store"}`;
  return [write("f1", "conv_f1"), write("f2", "conv_f2"), `{"id":"f-end","op":"endSession","sessionId":"conv_f1"}`];
}

function quotaRequests(): string[] {
  const requests = Array.from(
    { length: 10 },
    (_, i) =>
      `{"id":"q${i}","op":"write","sessionId":"conv_q","taskId":"task0001","turnId":"turn000${i}","data":"${"q".repeat(5_242_878 - 20)}","description":"part ${i}","customMetadata":{"part":"${String(i).padStart(9, "0")}"}}`,
  );
  requests.push(
    `{"id":"q-over","op":"write","sessionId":"conv_q","data":[${"1,".repeat(9)}1],"description":"one more"}`,
    `{"id":"q-stats","op":"stats","sessionId":"conv_q"}`,
    `{"id":"q-list","op":"list","sessionId":"conv_q","query":"part","limit":3}`,
    `{"id":"q-many","op":"read","sessionId":"conv_q","storageKeys":["conv_q_task0001_turn0001","conv_q_task0001_turn0002"]}`,
    `{"id":"q-many-small","op":"read","sessionId":"conv_q","maxBytes":100,"storageKeys":["conv_q_task0001_turn0001","conv_q_task0001_turn0002"]}`,
    `{"id":"too-big","op":"write","sessionId":"conv_q","data":"${"z".repeat(8_400_000)}","description":"over the frame limit"}`,
    `{"op":"write","sessionId":"conv_q","data":"${"z".repeat(8_400_000)}","id":"id-after-data"}`,
    `{"id":"q-end","op":"endSession","sessionId":"conv_q"}`,
  );
  return requests;
}

it(`answers ${SEQUENCES} random sequences of requests exactly as the host does (seed ${SEED})`, async (t) => {
  let [compared, ok, bigRequests, pagedSessions, bomStrings, labelled, endorsed] = [0, 0, 0, 0, 0, 0, 0];
  for (let sequence = 0; sequence < SEQUENCES; sequence++) {
    const counts = await runSequence(sequence);
    labelled += counts.labelled;
    endorsed += counts.endorsed;
    compared += counts.compared;
    ok += counts.ok;
    bigRequests += counts.bigRequests;
    pagedSessions += counts.pagedSessions;
    bomStrings += counts.bomStrings;
  }
  t.diagnostic(
    `${compared} replies compared (${ok} successes, ${compared - ok} errors), ${bigRequests} requests over 100 KB, ` +
      `${pagedSessions} pages of sessions with a next page, ${bomStrings} requests with a string that starts with a raw BOM, ` +
      `${labelled} changes with provenance taken, ${endorsed} endorsements given`,
  );
  assert.ok(labelled > 0 && endorsed > 0, `${labelled} changes with provenance taken, ${endorsed} endorsements given`);
  assert.ok(bomStrings > 0, "no request had a string (a member name or value) that starts with a raw byte order mark");
  assert.ok(pagedSessions > 0, "no sessions page led on to another");
  // The sequences must reach both kinds of answer in numbers, or they test little.
  assert.ok(ok > compared / 4 && compared - ok > compared / 4, `${ok} of ${compared} succeeded`);
});

it("answers requests as the in-process client sends them (JSON.stringify's text, the reply as an object) as the host does", async (t) => {
  // The first sequences, the small store's among them, and the last one, with the session filled to its quota.
  let [compared, ok, viaStringify] = [0, 0, 0];
  for (const sequence of [0, SMALL_STORE_SEQUENCE, SEQUENCES - 1]) {
    const counts = await runSequence(sequence, true);
    compared += counts.compared;
    ok += counts.ok;
    viaStringify += counts.viaStringify;
  }
  t.diagnostic(`${compared} replies compared (${ok} successes), ${viaStringify} requests sent as JSON.stringify writes them`);
  assert.ok(viaStringify > compared / 2, `only ${viaStringify} of ${compared} requests were JSON objects`);
  assert.ok(ok > compared / 4 && compared - ok > compared / 4, `${ok} of ${compared} succeeded`);
});
