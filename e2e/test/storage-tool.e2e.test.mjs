// The demo extension's StorageTool in real Chromium, checked on what the extension received:
// - with `llm-cache-host install` run into a fresh profile, an agent's 50 email summaries cached through the real
//   connectNative (the spec's scenario);
// - with no host, the same work on the in-browser IndexedDB backend, and the fallback turned off; writes it
//   acknowledged at its default durability (relaxed) are all there after the browser's process is killed;
// - with the host installed while the extension runs: the old session finishes on IndexedDB, new ones go to the host.
// Skips, saying why, until extension-shim/demo and the `install` subcommand exist. What it assumes of the shim is
// listed in ../lib/demo-agent.mjs.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { launchWithExtension } from "../lib/browser.mjs";
import { DEMO_GLOBAL, DemoAgent, keysIn } from "../lib/demo-agent.mjs";
import { demoBrowser } from "../lib/demo-browser.mjs";
import { DEMO_EXTENSION_DIR, EXTENSION_ORIGIN, HOST_BIN, HOST_NAME, demoScenarioSkipReason } from "../lib/env.mjs";
import { withTimeout } from "../lib/timeout.mjs";
import { hostLogs, installHost } from "../lib/sandbox.mjs";

const SKIP = demoScenarioSkipReason() ?? false;

const MAX_ITEM_BYTES = 5_242_880; // PROTOCOL.md section 7
const SESSION_QUOTA_BYTES = 52_428_800;
const EMAILS = 50;
/** What a list of 50 items may cost the LLM's context (the shim's README states its own figure, ~6 KB). */
const LIST_OF_50_BUDGET_BYTES = 16 * 1024;
/** extension-shim/src/routing.ts HOST_RECHECK_MS: how long a host that was down stays unasked. */
const HOST_RECHECK_MS = 60_000;
const HOST_NOT_FOUND = "Specified native messaging host not found."; // this build's lastError text (docs/operations.md)

// The agent's data: 50 email summaries, each with text that appears nowhere else.
const pad = (i) => String(i).padStart(2, "0");
const email = (i) => ({
  from: `sender${pad(i)}@example.com`,
  subject: `Subject line ${pad(i)}`,
  summary: `Summary-${pad(i)}: asks for the Q${(i % 4) + 1} numbers by Friday`,
  unread: i % 3 === 0,
});
const describeEmail = (i) => `Summary of email ${pad(i)}/50 from sender${pad(i)}@example.com`;
const newSessionId = () => `conv_e2e-${crypto.randomBytes(6).toString("hex")}`;

/** Runs the installer against the sandbox's profile and checks the manifest it wrote. */
function installInto(sandbox) {
  const { manifest, transcript } = installHost(sandbox);
  assert.equal(manifest.name, HOST_NAME, transcript);
  assert.equal(manifest.type, "stdio", transcript);
  assert.ok(path.isAbsolute(manifest.path), `the manifest's path is not absolute: ${manifest.path}`);
  fs.accessSync(manifest.path, fs.constants.X_OK);
  assert.ok(manifest.allowed_origins.includes(EXTENSION_ORIGIN), transcript);
  return manifest;
}

/** The text the tool answered with; fails if it threw (an error must come back as text, never as an exception). */
function answered(outcome, what) {
  assert.equal(outcome.resolved, true, `${what}: ${outcome.error}`);
  return outcome.text;
}

/** Caches the 50 emails through the tool; checks each write names one new key and no data; returns the keys. */
async function cacheEmails(agent, sessionId) {
  const keys = [];
  for (let i = 0; i < EMAILS; i++) {
    const text = answered(await agent.write(email(i), describeEmail(i)), `write ${i}`);
    const found = keysIn(text, sessionId);
    assert.equal(found.length, 1, `write ${i} should name one new key: ${text}`);
    assert.ok(!text.includes(email(i).summary), `a write's answer should not echo the data: ${text}`);
    keys.push(found[0]);
  }
  assert.equal(new Set(keys).size, EMAILS);
  return keys;
}

describe("the demo extension's StorageTool in Chromium, host installed", { skip: SKIP, timeout: 150_000 }, () => {
  const s = demoBrowser("demo", { install: installInto });
  const sessionId = newSessionId();
  let agent;
  before(() => {
    agent = new DemoAgent(s.browser, sessionId);
  });
  const keys = []; // keys[i]: email i's storage key, whole
  const bigKeys = []; // bigKeys[n]: the 5 MB item filled with String(n)

  it("caches 50 email summaries; each write answers with the new item's key, not its data", async () => {
    keys.push(...(await cacheEmails(agent, sessionId)));
  });

  it("lists all 50 with their descriptions, in a small context budget", async (t) => {
    const text = answered(await agent.list(EMAILS), "list");
    const bytes = Buffer.byteLength(text);
    t.diagnostic(`a list of 50 items is ${bytes} bytes of text`);
    assert.deepEqual(new Set(keysIn(text, sessionId)), new Set(keys), "the list should name exactly the 50 keys");
    for (let i = 0; i < EMAILS; i++) assert.ok(text.includes(describeEmail(i)), `the list lacks email ${i}'s description`);
    assert.ok(bytes <= LIST_OF_50_BUDGET_BYTES, `a list of 50 is ${bytes} bytes, over ${LIST_OF_50_BUDGET_BYTES}`);
  });

  it("reads 10 back, whole and by JSON pointer", async () => {
    for (let i = 0; i < 10; i++) {
      const text = answered(await agent.read(keys[i]), `read ${i}`);
      assert.ok(text.includes(email(i).subject) && text.includes(email(i).summary), `read ${i} lacks its data: ${text}`);
    }
    const part = answered(await agent.read(keys[3], "/subject"), "read with a pointer");
    assert.ok(part.includes(email(3).subject), part);
    assert.ok(!part.includes(email(3).summary), `a pointer read should hold only /subject: ${part}`);
  });

  it("updates one; a read and the list show the new version", async () => {
    const changed = { ...email(7), summary: "Summary-07-updated: the numbers arrived", unread: false };
    const description = `${describeEmail(7)} (updated)`;
    const text = answered(await agent.update(keys[7], { data: changed, description }), "update");
    assert.deepEqual(keysIn(text, sessionId), [keys[7]], `the update's answer should name its key: ${text}`);
    const read = answered(await agent.read(keys[7]), "read after update");
    assert.ok(read.includes(changed.summary) && !read.includes(email(7).summary), read);
    const list = answered(await agent.list(EMAILS), "list after update");
    assert.ok(list.includes(description), `the list lacks the new description: ${list}`);
  });

  it("hits the session quota with 5 MB items and is told what to do", async () => {
    // The 50 summaries take a few KB, so 9 items of the 5 MB maximum fit in 50 MB and a 10th does not.
    const fits = Math.floor(SESSION_QUOTA_BYTES / MAX_ITEM_BYTES) - 1;
    for (let n = 0; n < fits; n++) {
      const text = answered(await agent.writeBig(String(n), MAX_ITEM_BYTES, `5 MB block ${n}`), `big write ${n}`);
      const found = keysIn(text, sessionId);
      assert.equal(found.length, 1, `big write ${n} should be stored: ${text.slice(0, 500)}`);
      bigKeys.push(found[0]);
    }
    const refused = answered(await agent.writeBig("z", MAX_ITEM_BYTES, "one block too many"), "write over the quota");
    assert.match(refused, /QuotaExceededError/);
    assert.match(refused, /delete items/i, "the refusal should tell the agent to delete items it no longer needs");
    const stats = answered(await agent.stats(), "stats at the quota");
    assert.match(stats, new RegExp(`\\b${EMAILS + fits} items\\b`), stats);
  });

  it("reads a 5 MB item back whole, reassembled from the host's chunk frames", async () => {
    const whole = await agent.readBigWhole(bigKeys[4], "4", MAX_ITEM_BYTES);
    assert.equal(whole.resolved, true, whole.error);
    assert.equal(whole.dataSize, MAX_ITEM_BYTES);
    assert.equal(whole.same, true, "the data read back differs from the data written");
    // The same read with gzip replies (what the shim asks for by default): decoded by Chrome's DecompressionStream.
    const gzipped = await agent.readBigWhole(bigKeys[4], "4", MAX_ITEM_BYTES, { compression: true });
    assert.deepEqual({ ...gzipped, error: undefined }, { resolved: true, dataSize: MAX_ITEM_BYTES, same: true, gzip: true, error: undefined });
    // The tool itself gives the LLM the first 12 KB page of a value this big, and where the next page starts.
    const text = answered(await agent.read(bigKeys[4]), "tool read of 5 MB");
    assert.ok(Buffer.byteLength(text) < 12 * 1024 + 256, `the tool answered a 5 MB read with ${Buffer.byteLength(text)} bytes`);
    assert.match(text, /^data, characters 0-\d+ of \d+ \(next page: offset \d+\): <untrusted-([a-z0-9]{8})>"4+"<\/untrusted-\1>$/m);
  });

  it("wrote no cached data or description into the host's logs", () => {
    const logs = hostLogs(s.sandbox);
    assert.match(logs, /op=write/, "the logs record the requests");
    for (let i = 0; i < EMAILS; i++) {
      for (const text of [email(i).summary, email(i).subject, describeEmail(i)]) {
        assert.ok(!logs.includes(text), `the host's log holds cached text: ${text}`);
      }
    }
  });

  it("ends the session and sees it emptied", async () => {
    const ended = await agent.endSession();
    assert.equal(ended.status, "ended", JSON.stringify(ended));
    assert.equal(ended.deletedItems, EMAILS + bigKeys.length);
    assert.ok(ended.freedBytes > bigKeys.length * MAX_ITEM_BYTES, `freedBytes ${ended.freedBytes}`);
    const list = answered(await agent.list(EMAILS), "list after endSession");
    assert.deepEqual(keysIn(list, sessionId), [], `the ended session still lists items: ${list}`);
    const read = answered(await agent.read(keys[0]), "read after endSession");
    assert.match(read, /ItemNotFoundError/);
  });
  it("runs the console demo a person tries first: three summaries cached, listed, one field read, session ended", async () => {
    const outcome = await new DemoAgent(s.browser, newSessionId()).demo();
    assert.equal(outcome.resolved, true, JSON.stringify(outcome));
    assert.match(outcome.text, /^3 items, 192B in all, newest first/m, outcome.text);
    assert.match(outcome.text, /data at \/subject: <untrusted-([a-z0-9]{8})>"Subject 3"<\/untrusted-\1>/, outcome.text);
    assert.match(outcome.text, /\{"status":"ended","deletedItems":3,"freedBytes":192\}/, outcome.text);
  });
});

describe("the demo extension's StorageTool in Chromium, host not installed", { skip: SKIP, timeout: 120_000 }, () => {
  const s = demoBrowser("demo-noinstall", {});
  const sessionId = newSessionId();
  let agent;
  before(() => {
    agent = new DemoAgent(s.browser, sessionId);
  });
  const keys = [];

  it("says it serves from IndexedDB, and why the host isn't used, with Chrome's own reason", async () => {
    const status = await s.browser.run(() => globalThis.llmCache.status(), undefined, { what: "llmCache.status()" });
    assert.equal(status.backend, "indexeddb", JSON.stringify(status));
    assert.match(status.hostProblem, /the native host is not installed/, JSON.stringify(status));
  });

  it("caches 50 email summaries in IndexedDB, each write answering with its key", async () => {
    keys.push(...(await cacheEmails(agent, sessionId)));
  });

  it("lists, reads by pointer and searches them as the host would", async () => {
    const list = answered(await agent.list(EMAILS), "list");
    assert.deepEqual(new Set(keysIn(list, sessionId)), new Set(keys), "the list should name exactly the 50 keys");
    assert.ok(Buffer.byteLength(list) <= LIST_OF_50_BUDGET_BYTES, `a list of 50 is ${Buffer.byteLength(list)} bytes`);
    const part = answered(await agent.read(keys[3], "/subject"), "read with a pointer");
    assert.ok(part.includes(email(3).subject) && !part.includes(email(3).summary), part);
    const found = answered(await agent.execute({ action: "search", query: "Summary-17" }), "search");
    assert.deepEqual(keysIn(found, sessionId), [keys[17]], found);
  });

  it("stores and reads back a 5 MB item whole", async () => {
    const written = answered(await agent.writeBig("7", MAX_ITEM_BYTES, "5 MB block"), "big write");
    const [bigKey] = keysIn(written, sessionId);
    assert.ok(bigKey, written.slice(0, 500));
    const whole = await agent.readBigWhole(bigKey, "7", MAX_ITEM_BYTES);
    assert.deepEqual({ ...whole, gzip: undefined }, { resolved: true, dataSize: MAX_ITEM_BYTES, same: true, gzip: undefined });
  });

  it("ends the session at once and sees it emptied", async () => {
    const ended = await agent.endSession();
    assert.equal(ended.status, "ended", JSON.stringify(ended));
    assert.equal(ended.deletedItems, EMAILS + 1);
    const list = answered(await agent.list(EMAILS), "list after endSession");
    assert.deepEqual(keysIn(list, sessionId), [], `the ended session still lists items: ${list}`);
  });

  it("runs the console demo to its end with the same answers the host gives", async () => {
    const outcome = await new DemoAgent(s.browser, newSessionId()).demo();
    assert.equal(outcome.resolved, true, JSON.stringify(outcome));
    assert.match(outcome.text, /^3 items, 192B in all, newest first/m, outcome.text);
    assert.match(outcome.text, /data at \/subject: <untrusted-([a-z0-9]{8})>"Subject 3"<\/untrusted-\1>/, outcome.text);
    assert.match(outcome.text, /\{"status":"ended","deletedItems":3,"freedBytes":192\}/, outcome.text);
  });

  it("with the fallback turned off, answers StorageUnavailableError carrying Chrome's lastError, and how to go on", async () => {
    const text = await s.browser.run(
      async (sessionId) => {
        const cache = globalThis.llmCache.createLlmCache({ fallback: false });
        try {
          return await cache.tool.execute({ action: "list" }, { sessionId });
        } finally {
          cache.client.close();
        }
      },
      newSessionId(),
      { what: "a cache without the fallback" },
    );
    assert.match(text, /StorageUnavailableError/, text);
    assert.ok(text.includes(HOST_NOT_FOUND), `the answer should carry Chrome's "${HOST_NOT_FOUND}": ${text}`);
    assert.match(text, /without the cache/i, "the answer should tell the agent to carry on without the cache");
  });

  it("with the fallback turned off, remembers an endSession it could not send", async () => {
    const ended = await s.browser.run(
      async (sessionId) => {
        const cache = globalThis.llmCache.createLlmCache({ fallback: false });
        try {
          const outcome = await cache.endSession(sessionId);
          return { ...outcome, sessionId, pending: await cache.cleanup.pendingSessions() };
        } finally {
          cache.client.close();
        }
      },
      newSessionId(),
      { what: "endSession without the fallback" },
    );
    assert.equal(ended.status, "pending", JSON.stringify(ended));
    assert.ok(ended.reason.includes(HOST_NOT_FOUND), ended.reason);
    assert.ok(ended.pending.includes(ended.sessionId), `the session should wait for the host: ${JSON.stringify(ended)}`);
  });

  // Last in this suite: it kills the suite's browser and leaves a new one, on the same profile, for `after`.
  it("loses no acknowledged write when the browser's process is killed (SIGKILL) at its default durability", async () => {
    const sessionId = newSessionId();
    // 20 writes awaited one by one, then 20 sent at once (one shared commit), then one of 1 MB: each item's data is
    // made from its number, so the next browser can check it without being told.
    const written = await s.browser.run(
      async (sessionId) => {
        const data = (n) => (n === 40 ? `big ${n} `.repeat(131072) : { n, text: `item ${n} of the killed browser` });
        const cache = globalThis.llmCache.createLlmCache({ backend: "indexeddb" });
        const write = (n) => cache.client.write({ sessionId, data: data(n), description: `item ${n}` }).then((item) => item.storageKey);
        const keys = [];
        for (let n = 0; n < 20; n++) keys.push(await write(n));
        keys.push(...(await Promise.all(Array.from({ length: 20 }, (_, i) => write(20 + i)))));
        keys.push(await write(40));
        return keys;
      },
      sessionId,
      { what: "41 acknowledged writes on the IndexedDB backend" },
    );
    assert.equal(written.length, 41);
    // The browser's own process (not the shell wrapper that started it, nor its children), killed the moment the
    // last write was acknowledged: nothing gets to close the database or flush it.
    const pid = browserPid(s.sandbox.profile);
    const closed = new Promise((resolve) => s.browser.context.once("close", resolve));
    process.kill(pid, "SIGKILL");
    await withTimeout(closed, 20_000, "the killed browser's connection closing");
    s.browser = await launchWithExtension(s.sandbox, DEMO_EXTENSION_DIR, { globalName: DEMO_GLOBAL });
    const found = await s.browser.run(
      async ({ sessionId, keys }) => {
        const data = (n) => (n === 40 ? `big ${n} `.repeat(131072) : { n, text: `item ${n} of the killed browser` });
        const cache = globalThis.llmCache.createLlmCache({ backend: "indexeddb" });
        const missing = [];
        for (const [n, storageKey] of keys.entries()) {
          try {
            const item = await cache.client.read({ sessionId, storageKey });
            if (JSON.stringify(item.data) !== JSON.stringify(data(n))) missing.push(`${n}: other data`);
          } catch (error) {
            missing.push(`${n}: ${error.name}`);
          }
        }
        const listed = (await cache.client.list({ sessionId, limit: 100 })).items.length;
        await cache.client.endSession(sessionId);
        return { missing, listed };
      },
      { sessionId, keys: written },
      { what: "reading the 41 items in the reopened profile" },
    );
    assert.deepEqual(found, { missing: [], listed: 41 });
  });
});

/**
 * The process id of the Chromium running on `profile`: the real binary (the /usr/bin/chromium wrapper runs it as a
 * child, not with exec) whose command line names the profile and no `--type=` (which its children carry).
 */
function browserPid(profile) {
  const found = [];
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let args;
    try {
      args = fs.readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
    } catch {
      continue; // gone meanwhile
    }
    if (path.basename(args[0]) !== "chromium" || args.some((arg) => arg.startsWith("--type="))) continue;
    if (args.includes(`--user-data-dir=${profile}`)) found.push(Number(entry));
  }
  assert.equal(found.length, 1, `one Chromium process should run on ${profile}: ${found.join(", ")}`);
  return found[0];
}

describe("the demo extension in Chromium, host installed while it runs", { skip: SKIP, timeout: 120_000 }, () => {
  const s = demoBrowser("demo-midway", {});
  const early = newSessionId();
  const late = newSessionId();

  // In the worker: a cache on a clock the test moves, so the host's recheck interval passes without waiting.
  // `where(sessionId)` lists the session's descriptions on each backend directly: [host, IndexedDB].
  const setUp = () => {
    const clock = { now: Date.now() };
    const cache = globalThis.llmCache.createLlmCache({ now: () => clock.now });
    const descriptions = async (backend, sessionId) =>
      (await backend.list({ sessionId })).items.map((item) => item.description).sort();
    globalThis.midway = {
      clock,
      cache,
      note: (sessionId, text) => cache.tool.execute({ action: "write", data: { text }, description: text }, { sessionId }),
      listed: async (sessionId) => {
        const items = (await cache.client.list({ sessionId })).items;
        return items.map((item) => item.description);
      },
      where: async (sessionId) => {
        const [host, indexeddb] = cache.client.backends;
        const onHost = await descriptions(host, sessionId).catch((e) => `${e.name}`);
        return { host: onHost, indexeddb: await descriptions(indexeddb, sessionId) };
      },
    };
  };

  it("starts on IndexedDB: a session's items are written there", async () => {
    await s.browser.run(setUp, undefined, { what: "a cache on a test clock" });
    const outcome = await s.browser.run(
      async (sessionId) => {
        const m = globalThis.midway;
        await m.note(sessionId, "early 1");
        await m.note(sessionId, "early 2");
        return { status: await m.cache.status(), where: await m.where(sessionId) };
      },
      early,
      { what: "the first session's writes" },
    );
    assert.equal(outcome.status.backend, "indexeddb", JSON.stringify(outcome.status));
    assert.deepEqual(outcome.where.indexeddb, ["early 1", "early 2"]);
    assert.match(String(outcome.where.host), /StorageUnavailableError/);
  });

  it("once the host is installed, new sessions go to it and the old one finishes on IndexedDB, nothing lost", async () => {
    installInto(s.sandbox);
    const outcome = await s.browser.run(
      async ({ early, late, recheckMs }) => {
        const m = globalThis.midway;
        m.clock.now += recheckMs;
        await m.note(late, "late 1");
        await m.note(early, "early 3");
        await m.note(late, "late 2");
        return {
          status: await m.cache.status(),
          early: await m.where(early),
          late: await m.where(late),
          listedEarly: await m.listed(early),
          listedLate: await m.listed(late),
        };
      },
      { early, late, recheckMs: HOST_RECHECK_MS },
      { what: "writes after the install" },
    );
    assert.equal(outcome.status.backend, "host", JSON.stringify(outcome.status));
    assert.equal(outcome.status.host?.protocolVersion, 1);
    assert.deepEqual(outcome.early, { host: [], indexeddb: ["early 1", "early 2", "early 3"] });
    assert.deepEqual(outcome.late, { host: ["late 1", "late 2"], indexeddb: [] });
    // Every item listed once (not their order: two writes in one millisecond tie, and the random keys decide).
    assert.deepEqual(outcome.listedEarly.sort(), ["early 1", "early 2", "early 3"]);
    assert.deepEqual(outcome.listedLate.sort(), ["late 1", "late 2"]);
    // The host's own store holds the new session: its CLI lists it.
    const cli = spawnSync(HOST_BIN, ["sessions", "--json"], { env: s.sandbox.env, encoding: "utf8", timeout: 30_000 });
    assert.equal(cli.status, 0, cli.stderr);
    assert.ok(cli.stdout.includes(late) && !cli.stdout.includes(early), cli.stdout);
  });

  it("ends each session on the backend that holds it", async () => {
    const outcome = await s.browser.run(
      async ({ early, late }) => {
        const m = globalThis.midway;
        const ends = [await m.cache.endSession(early), await m.cache.endSession(late)];
        return { ends, early: await m.where(early), late: await m.where(late) };
      },
      { early, late },
      { what: "ending both sessions" },
    );
    assert.deepEqual(
      outcome.ends.map((end) => [end.status, end.deletedItems]),
      [["ended", 3], ["ended", 2]],
      JSON.stringify(outcome.ends),
    );
    assert.deepEqual(outcome.early, { host: [], indexeddb: [] });
    assert.deepEqual(outcome.late, { host: [], indexeddb: [] });
  });
});
