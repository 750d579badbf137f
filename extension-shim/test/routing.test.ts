/**
 * createLlmCache choosing and switching between the native host and the in-browser backend, with real hosts on
 * both sides: the native one through a port that behaves as Chrome's, and the IndexedDB backend's IdbHost on
 * fake-indexeddb (one IDBFactory per test, given explicitly, so the context itself has no IndexedDB). What is checked: sessions go to the fallback while there is
 * no host and to the host once it answers; a session never moves; nothing is lost or listed twice; the host is
 * asked again only on reconnect or once per HOST_RECHECK_MS; endSession and remembered cleanups reach each
 * backend that needs them; `status()` says why the host isn't used in words a person can act on; `sessions` lists
 * both backends' sessions, the host's first, paging across the boundary, and passes over a host it can't ask;
 * and routing at the backends' speed: no read of chrome.storage.local per ordinary call, a burst of writes to a
 * new session as one first write and the rest at once, an endSession that costs the backend without the session
 * no write, and a route forgotten when another context ends the session.
 */

import assert from "node:assert/strict";
import { IDBDatabase, IDBFactory } from "fake-indexeddb";
import { describe, it } from "node:test";
import { InProcessBackend } from "../src/backends/in-process.js";
import { DEMO_EXTENSION_ID } from "../src/demo-extension.js";
import { InvalidRequestError, StorageUnavailableError } from "../src/errors.js";
import { createLlmCache, type LlmCache } from "../src/llm-cache.js";
import { KeptLease } from "../src/locks.js";
import { lockIsFree } from "./helpers/locks.js";
import { HOST_RECHECK_MS, LEASE_IDLE_MS, ROUTE_PREFIX, sessionLockName } from "../src/routing.js";
import type { KeyValueStore } from "../src/storage-area.js";
import { PENDING_END_SESSION_PREFIXES } from "../src/session.js";
import { IN_BROWSER_CHOSEN } from "../src/status.js";
import { hostConnector } from "./helpers/chrome-port.js";
import { MemoryStorage } from "./helpers/memory-storage.js";
import { RecordingIdbServer, session, world } from "./helpers/routing-world.js";
import { HELLO_V1, replyingScript, scriptedConnector } from "./helpers/scripted-port.js";
import { tempDir } from "./helpers/temp.js";
import { cacheNote, listed } from "./helpers/tool-notes.js";

describe("choosing the backend", () => {
  it("starts on the fallback without a host; once it is installed, old sessions finish there and new ones go to the host", async (t) => {
    const w = world(t, { installed: false });
    const cache = w.worker();
    const early = session();
    await cacheNote(cache, early, "early 1");
    await cacheNote(cache, early, "early 2");
    const alsoEarly = session();
    await cacheNote(cache, alsoEarly, "also early");
    assert.equal(w.connectors.length, 1, "the host was asked once, at first use, not on every call");
    assert.deepEqual(await w.where(early), { host: [], fallback: ["early 1", "early 2"] });
    assert.equal((await cache.client.stats(early)).backend, "indexeddb");
    assert.equal((await cache.client.hello()).backend, "indexeddb");

    w.install();
    // Within the recheck interval nothing asks the host: the old session carries on, and so would a new one.
    await cacheNote(cache, early, "early 3");
    const beforeRecheck = session();
    await cacheNote(cache, beforeRecheck, "before the recheck");
    assert.equal(w.connectors.length, 1);

    // Once the interval has passed, the next new session asks again (other calls don't), and goes to the host.
    w.clock.now += HOST_RECHECK_MS;
    assert.equal((await cache.client.stats(session())).backend, "indexeddb");
    assert.equal(w.connectors.length, 1);
    const late = session();
    await cacheNote(cache, late, "late 1");
    assert.equal(w.connectors.length, 2);
    await cacheNote(cache, early, "early 4"); // the old session still finishes where it started
    await cacheNote(cache, late, "late 2");

    assert.deepEqual(await w.where(early), { host: [], fallback: ["early 1", "early 2", "early 3", "early 4"] });
    assert.deepEqual(await w.where(beforeRecheck), { host: [], fallback: ["before the recheck"] });
    assert.deepEqual(await w.where(late), { host: ["late 1", "late 2"], fallback: [] });
    // The LLM sees every item once, whichever backend holds it. (Not their order: two writes in one millisecond
    // tie, and then the random keys decide; the transcripts check the order.)
    assert.deepEqual((await listed(cache, early)).sort(), ["early 1", "early 2", "early 3", "early 4"]);
    assert.deepEqual((await listed(cache, late)).sort(), ["late 1", "late 2"]);
    assert.equal((await cache.client.stats(late)).backend, "host");
    assert.equal((await cache.client.stats(early)).backend, "indexeddb");
    assert.equal(w.storage.items.get(ROUTE_PREFIX + early), '"indexeddb"');
    assert.equal(w.storage.items.get(ROUTE_PREFIX + late), '"host"');

    // A restarted service worker asks the host at once, and keeps every session where it was.
    const restarted = w.worker();
    const afterRestart = session();
    await cacheNote(restarted, afterRestart, "after the restart");
    await cacheNote(restarted, alsoEarly, "also early, continued");
    assert.deepEqual(await w.where(afterRestart), { host: ["after the restart"], fallback: [] });
    assert.deepEqual(await w.where(alsoEarly), { host: [], fallback: ["also early", "also early, continued"] });

    // endSession reaches both: the session's own backend removes its items, the other is told too.
    const earlyBytes = (await restarted.client.stats(early)).totalSize;
    const lateBytes = (await restarted.client.stats(late)).totalSize;
    assert.deepEqual(await restarted.endSession(early), { status: "ended", deletedItems: 4, freedBytes: earlyBytes });
    assert.deepEqual(await restarted.endSession(late), { status: "ended", deletedItems: 2, freedBytes: lateBytes });
    assert.deepEqual(await w.where(early), { host: [], fallback: [] });
    assert.deepEqual(await w.where(late), { host: [], fallback: [] });
    const hostOps = w.connectors.flatMap((connector) => connector.ports.flatMap((port) => port.log.filter((entry) => entry.startsWith(">"))));
    const fallbackOps = w.servers.flatMap((server) => server.ops);
    assert.equal(hostOps.filter((op) => op === "> endSession").length, 2);
    assert.equal(fallbackOps.filter((op) => op === "endSession").length, 2);
    assert.equal(w.storage.items.has(ROUTE_PREFIX + early), false, "an ended session's route is gone");
  });

  it("a new session's first writes, made together, all land on one backend, and the host is asked once", async (t) => {
    const w = world(t, { installed: false });
    const cache = w.worker();
    const together = session();
    await Promise.all(Array.from({ length: 10 }, (_, n) => cacheNote(cache, together, `note ${n}`)));
    assert.equal(w.connectors.length, 1);
    assert.deepEqual((await w.where(together)).fallback.length, 10);
    assert.equal((await listed(cache, together)).length, 10);
  });

  it("a session on the host stays there when the host goes away; its remembered cleanup reaches the host only, and spares the session's new life", async (t) => {
    const w = world(t, { installed: true });
    const cache = w.worker();
    const conversation = session();
    await cacheNote(cache, conversation, "before the crash");
    assert.deepEqual(await w.where(conversation), { host: ["before the crash"], fallback: [] });

    // The host goes away (uninstalled while its port was idle).
    w.uninstall();
    cache.client.close();
    const refused = await cache.tool.execute({ action: "write", data: "1", description: "never split" }, { sessionId: conversation });
    assert.match(refused, /^llm_cache write failed: StorageUnavailableError: /, "the session didn't move to the fallback");
    const ended = await cache.endSession(conversation);
    assert.equal(ended.status, "pending");
    assert.deepEqual(await cache.cleanup.pendingSessions(), [conversation]);
    assert.ok(w.storage.items.has(PENDING_END_SESSION_PREFIXES.host + conversation));
    assert.equal(w.storage.items.has(PENDING_END_SESSION_PREFIXES.indexeddb + conversation), false, "the fallback did its part");

    // The conversation is resumed under the same id while the host is away: it starts afresh on the fallback.
    await cacheNote(cache, conversation, "written after the end");

    // A restarted service worker connects to the fallback again: the host's cleanup is not sent there.
    const restarted = w.worker();
    assert.deepEqual(await listed(restarted, conversation), ["written after the end"]);
    assert.equal((await restarted.status()).backend, "indexeddb");

    // The host is back: its next connection sends the remembered cleanup first, to the host alone.
    w.install();
    assert.deepEqual(await restarted.cleanup.flushPending(), []);
    assert.deepEqual(await w.where(conversation), { host: [], fallback: ["written after the end"] });
    assert.deepEqual(await listed(cache, conversation), ["written after the end"]);
  });

  it('"indexeddb" never asks the host; fallback: false keeps today\'s behaviour, failing while there is no host', async (t) => {
    const w = world(t, { installed: true });
    const inBrowser = w.worker({ backend: "indexeddb" });
    const conversation = session();
    await cacheNote(inBrowser, conversation, "in the browser");
    assert.deepEqual(await w.where(conversation), { host: [], fallback: ["in the browser"] });
    assert.deepEqual(await inBrowser.status(), { backend: "indexeddb", hostProblem: IN_BROWSER_CHOSEN });
    assert.equal(w.connectors.length, 0);
    assert.equal(w.storage.items.size, 0, "with one backend there are no routes to keep");

    w.uninstall();
    const backendsMade = w.servers.length;
    const hostOnly = w.worker({ fallback: false });
    const answer = await hostOnly.tool.execute({ action: "write", data: "1", description: "d" }, { sessionId: session() });
    assert.match(answer, /^llm_cache write failed: StorageUnavailableError: the native host disconnected: Specified native messaging host not found\./);
    assert.equal(w.servers.length, backendsMade, "no in-browser backend was made for it");
    assert.throws(() => createLlmCache({ storage: w.storage, backend: "indexeddb" }), /the indexedDb option/);
  });

  it("the LLM reads the same answers from either backend", async (t) => {
    const onHost = world(t, { installed: true }).worker();
    const onFallback = world(t, { installed: false }).worker();
    const calls = [
      { action: "write", data: '{"emails": [{"from": "ana", "subject": "Q3 budget"}]}', description: "inbox page 1" },
      { action: "append", storageKey: "KEY", pointer: "/emails", data: '[{"from": "bo", "subject": "invoice"}]' },
      { action: "read", storageKey: "KEY", pointer: "/emails/1/subject" },
      { action: "search", query: "invoice" },
      { action: "list" },
      { action: "read", storageKey: "aaaaaaaa_bbbbbbbb" },
      { action: "stats" },
    ];
    const sessionId = session(); // the same in both stores, since error texts name full keys
    const answers = async (cache: LlmCache) => {
      const seen: string[] = [];
      let key = "";
      for (const call of calls) {
        const args = { ...call, ...("storageKey" in call && call.storageKey === "KEY" ? { storageKey: key } : {}) };
        const text = await cache.tool.execute(args, { sessionId });
        key ||= /^cached ([a-z0-9]{8}_[a-z0-9]{8}) /.exec(text)?.[1] ?? "";
        // Ages and each reply's own fence id differ from run to run; the rest is the same text.
        const fixed = text.replaceAll(key, "KEY").replace(/\d+[smhd] ago/g, "AGE ago").replace(/ \| \d+[smhd] \| /g, " | AGE | ");
        seen.push(fixed.replace(/<(\/?)untrusted-[a-z0-9]{8}>/g, "<$1untrusted-ID>"));
      }
      return seen;
    };
    const fromHost = await answers(onHost);
    assert.deepEqual(await answers(onFallback), fromHost);
    assert.match(fromHost[5] as string, /ItemNotFoundError/);
  });
});

describe("status()", () => {
  it("names the host's version and protocol when it serves", async (t) => {
    const cache = world(t, { installed: true }).worker();
    const status = await cache.status();
    const hello = await cache.client.hello();
    assert.deepEqual(status, { backend: "host", hostName: "com.browserx.llm_cache", host: { version: hello.hostVersion, protocolVersion: 1 } });
    assert.equal(hello.backend, "host");
  });

  it("with recheck, asks the host over a new port even while one is open, and new sessions follow what it finds", async (t) => {
    const w = world(t, { installed: true });
    const cache = w.worker();
    assert.equal((await cache.status()).backend, "host");
    assert.equal((await cache.status()).backend, "host");
    assert.equal(w.connectors.length, 1, "a plain status() uses the open port");

    // Removed while its port is open: only a recheck sees it.
    w.uninstall();
    assert.equal((await cache.status()).backend, "host");
    assert.equal(w.connectors.length, 1);
    const removed = await cache.status({ recheck: true });
    assert.equal(w.connectors.length, 2);
    assert.equal(removed.backend, "indexeddb");
    assert.match(removed.hostProblem ?? "", /^the native host is not installed/);
    const meanwhile = session();
    await cacheNote(cache, meanwhile, "while removed");

    // Installed again: the recheck finds it at once, without waiting for HOST_RECHECK_MS.
    w.install();
    const back = await cache.status({ recheck: true });
    assert.equal(w.connectors.length, 3);
    assert.equal(back.backend, "host");
    assert.equal(back.host?.protocolVersion, 1);
    const after = session();
    await cacheNote(cache, after, "after the reinstall");
    assert.deepEqual(await w.where(meanwhile), { host: [], fallback: ["while removed"] });
    assert.deepEqual(await w.where(after), { host: ["after the reinstall"], fallback: [] });
  });

  it("says the host is not installed, and how to install it", async (t) => {
    const status = await world(t, { installed: false }).worker().status();
    assert.equal(status.backend, "indexeddb");
    assert.equal(
      status.hostProblem,
      "the native host is not installed: the browser found no manifest for com.browserx.llm_cache, or the binary it names " +
        `is missing. Install it from llm-cache-host's source with ./install.sh --extension-id ${DEMO_EXTENSION_ID}; ` +
        "`llm-cache-host doctor` then checks each step",
    );
  });

  it("connects to the host name it is given, and names that host and its command in what it says", async (t) => {
    const dir = tempDir();
    t.after(() => dir.remove());
    const hostName = "com.example.mail_cache";
    const connect = hostConnector({ dataDir: dir.path, hostName });
    const mine = createLlmCache({ storage: new MemoryStorage(), connect, hostName, fallback: false });
    t.after(() => mine.client.close());
    const status = await mine.status();
    assert.equal(status.backend, "host");
    assert.equal(status.hostName, hostName);
    assert.equal(status.hostProblem, undefined);
    assert.equal(status.host?.protocolVersion, 1);

    // The default name finds no manifest where only the developer's host is registered, and the other way round.
    const demo = createLlmCache({ storage: new MemoryStorage(), connect, fallback: false });
    assert.match((await demo.status()).hostProblem ?? "", /^the native host is not installed: the browser found no manifest for com\.browserx\.llm_cache,/);
    const elsewhere = createLlmCache({ storage: new MemoryStorage(), connect: hostConnector({ dataDir: dir.path }), hostName, fallback: false });
    assert.deepEqual(await elsewhere.status(), {
      backend: "host",
      hostName,
      hostProblem:
        `the native host is not installed: the browser found no manifest for ${hostName}, or the binary it names is missing. ` +
        `Install it from llm-cache-host's source with ./install.sh --extension-id ${DEMO_EXTENSION_ID} --host-name ${hostName}; ` +
        "`com.example.mail-cache doctor` then checks each step",
    });
    // On the install page, for the extension's users, the remedy is the page's own steps, not a source checkout.
    const onPage = await elsewhere.status({ advice: "install page" });
    assert.equal(
      onPage.hostProblem,
      `the native host is not installed: the browser found no manifest for ${hostName}, or the binary it names is missing. ` +
        "Install it with the steps below; `com.example.mail-cache doctor` then checks each step",
    );
  });

  it("refuses a host name no host could be installed under, saying the rule, before connecting", () => {
    for (const hostName of ["Com.Example.Mail", "mail_cache", "com.example.mail-cache", "com..x", "_x.example.ab"]) {
      assert.throws(
        () => createLlmCache({ storage: new MemoryStorage(), hostName, connect: () => assert.fail("connected") }),
        (error: unknown) => error instanceof TypeError && error.message.startsWith("hostName must be a host name, a host name is Chrome's: lowercase letters") && error.message.endsWith(`; it is ${JSON.stringify(hostName)}`),
        hostName,
      );
    }
  });

  it("says the host is not allowed for this extension's id", async (t) => {
    const dir = tempDir();
    t.after(() => dir.remove());
    const connect = hostConnector({ dataDir: dir.path, allowedOrigins: ["chrome-extension://abcdefghijklmnopabcdefghijklmnop/"] });
    const cache = createLlmCache({ storage: new MemoryStorage(), connect, fallback: false });
    assert.deepEqual(await cache.status(), {
      backend: "host",
      hostName: "com.browserx.llm_cache",
      hostProblem:
        `the native host is installed but not allowed for this extension's id (${DEMO_EXTENSION_ID}): its manifest's ` +
        `allowed_origins doesn't list chrome-extension://${DEMO_EXTENSION_ID}/. Install it again with ./install.sh --extension-id ${DEMO_EXTENSION_ID}`,
    });
  });

  it("says the host is too old when it speaks an older protocol", async () => {
    const connect = scriptedConnector(replyingScript({ hello: { ...HELLO_V1, protocolVersion: 0 } }));
    const status = await createLlmCache({ storage: new MemoryStorage(), connect }).status();
    assert.equal(
      status.hostProblem,
      "the native host is too old: it speaks protocol version 0 and this extension needs version 1; " +
        `update it (pull llm-cache-host's source, then run ./install.sh --extension-id ${DEMO_EXTENSION_ID} again)`,
    );
    assert.equal(connect.ports[0]?.disconnected, true);
  });

  it("says the host crashed at start, and where to look", async (t) => {
    const dir = tempDir();
    t.after(() => dir.remove());
    const connect = hostConnector({ dataDir: dir.path, binary: "/bin/false" });
    t.after(() => connect.closeAll());
    const status = await createLlmCache({ storage: new MemoryStorage(), connect }).status();
    assert.equal(
      status.hostProblem,
      'the native host crashed at start (the browser said: "Native host has exited."). Run `llm-cache-host doctor`, ' +
        "which checks that it answers hello; its log (<data dir>/logs/host.<date>.log) says why it stopped",
    );
  });
});

describe("listing sessions (for extension pages)", () => {
  /** Every page of `sessions` with this limit, as [sessionId, backend] per page. */
  async function pages(cache: LlmCache, limit: number): Promise<string[][]> {
    const seen: string[][] = [];
    let cursor: string | undefined;
    do {
      const page = await cache.client.sessions(cursor === undefined ? { limit } : { limit, cursor });
      assert.deepEqual(page.unlisted, []);
      assert.ok(page.sessions.length <= limit);
      seen.push(page.sessions.map((summary) => `${summary.sessionId}@${summary.backend}`));
      cursor = page.nextCursor ?? undefined;
    } while (cursor !== undefined);
    return seen;
  }

  it("lists the host's sessions, then the in-browser backend's, each marked, and pages across the boundary", async (t) => {
    const w = world(t, { installed: false });
    const cache = w.worker();
    // The in-browser sessions sort before the host's: the host's still come first.
    await cacheNote(cache, "conv_a1", "in the browser");
    await cacheNote(cache, "conv_a2", "in the browser too");
    await cacheNote(cache, "conv_a2", "and again");
    w.install();
    w.clock.now += HOST_RECHECK_MS;
    await cacheNote(cache, "conv_z2", "on the host");
    await cacheNote(cache, "conv_z1", "on the host too");

    const all = await cache.client.sessions();
    assert.deepEqual(
      all.sessions.map((summary) => [summary.sessionId, summary.backend, summary.itemCount]),
      [
        ["conv_z1", "host", 1],
        ["conv_z2", "host", 1],
        ["conv_a1", "indexeddb", 1],
        ["conv_a2", "indexeddb", 2],
      ],
    );
    assert.equal(all.nextCursor, null);
    // Each summary is what its backend's stats says.
    for (const summary of all.sessions) {
      const stats = await cache.client.stats(summary.sessionId);
      assert.deepEqual(
        [summary.totalSize, summary.createdAt, summary.lastAccessedAt, summary.backend],
        [stats.totalSize, stats.createdAt, stats.lastAccessedAt, stats.backend],
      );
    }

    // Pages of every size: a page that ends the host's sessions goes on with the in-browser ones, and a page that
    // is full right at the boundary leads on only because the in-browser backend holds sessions.
    const everyOne = ["conv_z1@host", "conv_z2@host", "conv_a1@indexeddb", "conv_a2@indexeddb"];
    assert.deepEqual(await pages(cache, 1), everyOne.map((one) => [one]));
    assert.deepEqual(await pages(cache, 2), [everyOne.slice(0, 2), everyOne.slice(2)]);
    assert.deepEqual(await pages(cache, 3), [everyOne.slice(0, 3), everyOne.slice(3)]);
    assert.deepEqual(await pages(cache, 4), [everyOne]);

    // Through `request` too, as a page would send it.
    const viaRequest = await cache.client.request<{ sessions: unknown[] }>("sessions", { limit: 3 });
    assert.equal(viaRequest.sessions.length, 3);

    // An ended session is listed no more, on either backend.
    await cache.endSession("conv_z1");
    await cache.endSession("conv_a1");
    assert.deepEqual(await pages(cache, 1), [["conv_z2@host"], ["conv_a2@indexeddb"]]);
    // With the in-browser sessions all gone, a page that is full at the host's last session has nothing to lead on to.
    await cache.endSession("conv_a2");
    assert.deepEqual(await pages(cache, 1), [["conv_z2@host"]]);
  });

  it("refuses cursors it did not give and limits out of range, as the protocol does", async (t) => {
    const w = world(t, { installed: true });
    const cache = w.worker();
    await cacheNote(cache, "conv_x1", "one");
    for (const cursor of ["garbage", "conv_x1", "nowhere:conv_x1", "", 5 as unknown as string]) {
      await assert.rejects(cache.client.sessions({ cursor }), (error: unknown) => {
        assert.ok(error instanceof InvalidRequestError, String(error));
        assert.equal(error.expected, "a nextCursor returned by an earlier sessions");
        return true;
      });
    }
    // A cursor of the router's form whose inner part no backend gave: the backend's own refusal.
    await assert.rejects(cache.client.sessions({ cursor: "host:garbage" }), InvalidRequestError);
    for (const limit of [0, 1001, 2.5]) {
      await assert.rejects(cache.client.sessions({ limit }), /`limit` is not/);
    }
  });

  it("passes over a host that is down, or too old for the op, and says so; the in-browser sessions are still listed", async (t) => {
    const w = world(t, { installed: true });
    const cache = w.worker();
    await cacheNote(cache, "conv_h1", "on the host");
    w.uninstall();
    cache.client.close();
    const page = await cache.client.sessions();
    assert.deepEqual(page.sessions, []);
    assert.equal(page.unlisted.length, 1);
    assert.equal(page.unlisted[0]?.backend, "host");
    assert.ok(page.unlisted[0]?.error instanceof StorageUnavailableError, String(page.unlisted[0]?.error));
    await cacheNote(cache, "conv_b1", "in the browser, while the host is away");
    const withFallback = await cache.client.sessions();
    assert.deepEqual(
      withFallback.sessions.map((summary) => `${summary.sessionId}@${summary.backend}`),
      ["conv_b1@indexeddb"],
    );
    assert.equal(withFallback.unlisted[0]?.backend, "host");

    // A host without the op (its hello lists no `sessions`) is never sent it.
    const asked: string[] = [];
    const oldHost = scriptedConnector(
      replyingScript({
        reply: (message) => {
          asked.push(String(message.op));
          return { id: message.id, ok: true, result: {} };
        },
      }),
    );
    const dbFactory = new IDBFactory();
    const old = createLlmCache({
      storage: new MemoryStorage(),
      connect: oldHost,
      indexedDb: () => new InProcessBackend(new RecordingIdbServer(dbFactory), "indexeddb"),
    });
    t.after(() => old.client.close());
    const fromOld = await old.client.sessions();
    assert.deepEqual(fromOld.sessions, []);
    assert.equal(fromOld.unlisted[0]?.backend, "host");
    assert.match(String(fromOld.unlisted[0]?.error), /llm-cache-host 0\.0\.0-test has no op `sessions`/);
    assert.deepEqual(asked, []);
  });
});

/**
 * Two contexts of a world without the host, `a` and `b`, and a burst of `n` writes from `a` to a new session, each held
 * at `a`'s backend until released: `release(k)` lets the k-th to arrive (the first write is the 0th) be answered.
 * `arrived` settles once all of them are there.
 */
async function heldBurst(t: Parameters<typeof world>[0], n: number) {
  const w = world(t, { installed: false });
  const a = w.worker();
  await a.client.pruneRoutes();
  const server = w.servers.at(-1) as RecordingIdbServer;
  const b = w.worker();
  const bServer = w.servers.at(-1) as RecordingIdbServer;
  const handle = server.handleText.bind(server);
  const gates = Array.from({ length: n }, () => {
    let open!: () => void;
    const opened = new Promise<void>((resolve) => (open = resolve));
    return { open, opened };
  });
  let writes = 0;
  let allArrived!: () => void;
  const arrived = new Promise<void>((resolve) => (allArrived = resolve));
  server.handleText = async (text: string) => {
    if ((JSON.parse(text) as { op?: unknown }).op === "write") {
      const gate = gates[writes++];
      if (writes === n) allArrived();
      await gate?.opened;
    }
    return handle(text);
  };
  const sessionId = session();
  const [first, ...others] = Array.from({ length: n }, (_, k) => a.client.write({ sessionId, data: { n: k }, description: `note ${k}` }));
  const release = (k: number) => gates[k]?.open();
  return { w, a, aServer: server, b, bServer, sessionId, first, others, arrived, release };
}

/** `storage`, counting its reads, and each read of one key alone (as only an exclusive section reads a route). */
function countingStorage(storage: KeyValueStore) {
  const counted = {
    reads: 0,
    /** How many reads asked for each key, alone or among others. */
    keyReads: new Map<string, number>(),
    get: (keys?: string | string[] | null) => {
      counted.reads++;
      for (const key of typeof keys === "string" ? [keys] : Array.isArray(keys) ? keys : []) {
        counted.keyReads.set(key, (counted.keyReads.get(key) ?? 0) + 1);
      }
      return storage.get(keys);
    },
    set: (items: Record<string, unknown>) => storage.set(items),
    /** The keys of each call that removed some. */
    removed: [] as string[][],
    remove: (keys: string | string[]) => {
      counted.removed.push(typeof keys === "string" ? [keys] : keys);
      return storage.remove(keys);
    },
  };
  return counted;
}

describe("routing at the backends' speed", () => {
  it("an ordinary call reads nothing from chrome.storage.local: the route is known under the session's lease", async (t) => {
    const w = world(t, { installed: false });
    const counted = countingStorage(w.storage);
    const cache = w.worker({ storage: counted });
    const sessionId = session();
    const first = await cache.client.write({ sessionId, data: { n: 0 }, description: "makes the route" });
    await cache.client.pruneRoutes();
    await cache.client.write({ sessionId, data: { n: 1 }, description: "takes the lease" });
    counted.reads = 0;
    for (let n = 2; n < 7; n++) await cache.client.write({ sessionId, data: { n }, description: `note ${n}` });
    await cache.client.read({ sessionId, storageKey: first.storageKey });
    await cache.client.update({ sessionId, storageKey: first.storageKey, description: "changed" });
    await cache.client.list({ sessionId });
    await cache.client.search({ sessionId, query: "note" });
    assert.equal((await cache.client.stats(sessionId)).itemCount, 7);
    assert.equal(counted.reads, 0, "no call read the store");
  });

  it("a burst of writes to a new session makes one exclusive section, and the backend sees the rest at once", async (t) => {
    const w = world(t, { installed: false });
    const counted = countingStorage(w.storage);
    const cache = w.worker({ storage: counted });
    await cache.client.pruneRoutes();
    const server = w.servers.at(-1) as RecordingIdbServer;
    let [writing, most] = [0, 0];
    const handle = server.handleText.bind(server);
    server.handleText = async (text: string) => {
      const isWrite = (JSON.parse(text) as { op?: unknown }).op === "write";
      if (isWrite) most = Math.max(most, ++writing);
      try {
        return await handle(text);
      } finally {
        if (isWrite) writing--;
      }
    };
    const sessionId = session();
    const N = 8;
    await Promise.all(Array.from({ length: N }, (_, n) => cache.client.write({ sessionId, data: { n }, description: `note ${n}` })));
    assert.equal(counted.keyReads.get(ROUTE_PREFIX + sessionId), 1, "the route was read once, by one exclusive section");
    assert.equal(most, N, "the first write and the others reached the backend together");
    assert.equal((await cache.client.list({ sessionId })).items.length, N);
  });

  it("a burst whose first write is refused leaves no route for it, and the rest make the route and land", async (t) => {
    const w = world(t, { installed: false });
    const cache = w.worker();
    const sessionId = session();
    const calls = [
      cache.client.write({ sessionId, data: { n: 0 }, description: "   " }),
      ...Array.from({ length: 5 }, (_, n) => cache.client.write({ sessionId, data: { n: n + 1 }, description: `note ${n + 1}` })),
    ];
    const [refused, ...written] = await Promise.allSettled(calls);
    assert.equal(refused?.status, "rejected", "a description of spaces is refused by the backend");
    assert.ok(written.every((outcome) => outcome.status === "fulfilled"), "the writes that joined its section went on and landed");
    assert.equal((await cache.client.list({ sessionId })).items.length, 5);
    assert.equal((await w.storage.get(ROUTE_PREFIX + sessionId))[ROUTE_PREFIX + sessionId], "indexeddb", "the route says where they are");
  });

  it("a refused first write leaves no route", async (t) => {
    const w = world(t, { installed: false });
    const cache = w.worker();
    const sessionId = session();
    await assert.rejects(cache.client.write({ sessionId, data: { n: 0 }, description: "   " }));
    assert.deepEqual(await w.storage.get(ROUTE_PREFIX + sessionId), {}, "nothing was written, so nothing is routed");
  });

  it("a lease's calls arm its idle timer once between them, not once each", async (t) => {
    const w = world(t, { installed: false });
    const cache = w.worker();
    const sessionId = session();
    await cache.client.write({ sessionId, data: { n: 0 }, description: "makes the route" });
    await cache.client.list({ sessionId });
    const timers = t.mock.method(globalThis, "setTimeout");
    for (let n = 0; n < 20; n++) await cache.client.list({ sessionId });
    const idleTimers = timers.mock.calls.filter((call) => call.arguments[1] === LEASE_IDLE_MS);
    assert.deepEqual(idleTimers, [], "the timer armed after the first call still stands");
    assert.equal(await lockIsFree(sessionLockName(sessionId)), false, "and the lease is held");
  });

  it("a lease whose idle time ends during a call is let go LEASE_IDLE_MS after that call", async (t) => {
    t.mock.timers.enable({ apis: ["setTimeout", "Date"] });
    const name = `test.lease.${session()}`;
    const kept = new KeptLease(name, "shared", () => undefined);
    await kept.use(() => kept.granted);
    let finish!: () => void;
    const long = kept.use(() => new Promise<void>((resolve) => (finish = resolve)));
    t.mock.timers.tick(LEASE_IDLE_MS);
    assert.equal(await lockIsFree(name), false, "held while the call is under way");
    finish();
    await long;
    t.mock.timers.tick(LEASE_IDLE_MS - 1);
    assert.equal(await lockIsFree(name), false, "and after it, until it has been unused for LEASE_IDLE_MS");
    t.mock.timers.tick(1);
    assert.equal(await lockIsFree(name), true);
  });

  it("a lease unused for LEASE_IDLE_MS is let go, so a context with nothing to do holds no lock", async (t) => {
    t.mock.timers.enable({ apis: ["setTimeout", "Date"] });
    const w = world(t, { installed: false });
    const cache = w.worker();
    const sessionId = session();
    await cache.client.write({ sessionId, data: { n: 0 }, description: "makes the route" });
    await cache.client.list({ sessionId });
    const name = sessionLockName(sessionId);
    const free = () => lockIsFree(name);
    assert.equal(await free(), false, "the list's lease is held after it");
    t.mock.timers.tick(LEASE_IDLE_MS / 2);
    await cache.client.list({ sessionId });
    t.mock.timers.tick(LEASE_IDLE_MS / 2);
    assert.equal(await free(), false, "a call meanwhile: the idle time counts from it");
    t.mock.timers.tick(LEASE_IDLE_MS / 2 - 1);
    assert.equal(await free(), false, "and still just before the idle time");
    t.mock.timers.tick(1);
    assert.equal(await free(), true, "let go once unused for LEASE_IDLE_MS");
    assert.equal((await cache.client.list({ sessionId })).items.length, 1, "the next call takes a lease again");
    assert.equal(await free(), false);
  });

  it("endSession tells the in-browser backend, which never held the session, without a write transaction", async (t) => {
    const w = world(t, { installed: true });
    const cache = w.worker();
    const sessionId = session();
    await cacheNote(cache, sessionId, "on the host");
    const transaction = IDBDatabase.prototype.transaction;
    let writes = 0;
    IDBDatabase.prototype.transaction = function (this: IDBDatabase, ...args: Parameters<typeof transaction>) {
      if (args[1] === "readwrite") writes++;
      return transaction.apply(this, args);
    };
    t.after(() => {
      IDBDatabase.prototype.transaction = transaction;
    });
    const ops = () => w.servers.flatMap((server) => server.ops).filter((op) => op === "endSession").length;
    const told = ops();
    assert.equal((await cache.endSession(sessionId)).status, "ended");
    IDBDatabase.prototype.transaction = transaction;
    assert.equal(ops(), told + 1, "the in-browser backend was told, for items an older shim may have left");
    assert.equal(writes, 0, "and found nothing to remove without writing");
    assert.deepEqual(await w.where(sessionId), { host: [], fallback: [] });
  });

  it("endSession with the host down tells the in-browser backend while the route is read, not once it is removed", async (t) => {
    const w = world(t, { installed: false });
    const sessionId = session();
    // Written by another context: the one that ends the session holds no lease of it, and so reads its route.
    await cacheNote(w.worker(), sessionId, "on IndexedDB");
    // chrome.storage.local answers from another process, a turn of the event loop later at least; so does this
    // store. It notes what the in-browser backend had been told by the time it answered endSession's read of
    // the route: the end was sent without waiting for the read and then the route's removal.
    let toldByThen: string[] | undefined;
    const storage = {
      get: async (keys?: string | string[] | null) => {
        await new Promise((resolve) => setImmediate(resolve));
        if (keys === ROUTE_PREFIX + sessionId) toldByThen = [...server.ops];
        return w.storage.get(keys);
      },
      set: (items: Record<string, unknown>) => w.storage.set(items),
      remove: (keys: string | string[]) => w.storage.remove(keys),
    };
    const cache = w.worker({ storage });
    const server = w.servers.at(-1) as RecordingIdbServer;
    assert.equal((await cache.endSession(sessionId)).status, "ended");
    assert.equal(toldByThen?.at(-1), "endSession");
    assert.deepEqual(await w.where(sessionId), { host: [], fallback: [] });
    assert.equal(w.storage.items.has(ROUTE_PREFIX + sessionId), false, "the route is gone");
  });

  it("a first write's section keeps its hold as a lease, so the calls after a burst read nothing from the store", async (t) => {
    const w = world(t, { installed: false });
    const counted = countingStorage(w.storage);
    const cache = w.worker({ storage: counted });
    await cache.client.pruneRoutes();
    const sessionId = session();
    const written = await Promise.all(Array.from({ length: 4 }, (_, n) => cache.client.write({ sessionId, data: { n }, description: `note ${n}` })));
    counted.reads = 0;
    assert.equal((await cache.client.list({ sessionId })).items.length, 4);
    await cache.client.read({ sessionId, storageKey: (written[0] as { storageKey: string }).storageKey });
    await cache.client.write({ sessionId, data: { n: 4 }, description: "note 4" });
    assert.equal(counted.reads, 0, "the lease knew what the section left");
  });

  it("a context ends a session it made the route of under the lease its section kept, reading nothing from the store", async (t) => {
    const w = world(t, { installed: true });
    const counted = countingStorage(w.storage);
    const cache = w.worker({ storage: counted });
    await cache.client.pruneRoutes();
    const sessionId = session();
    await Promise.all(Array.from({ length: 3 }, (_, n) => cacheNote(cache, sessionId, `note ${n}`)));
    counted.keyReads.clear();
    assert.equal((await cache.endSession(sessionId)).status, "ended");
    const routing = [ROUTE_PREFIX, ...Object.values(PENDING_END_SESSION_PREFIXES)].map((prefix) => prefix + sessionId);
    assert.deepEqual(
      routing.filter((key) => counted.keyReads.has(key)),
      [],
      "the route, and that no cleanup is owed, were known: nobody else could have changed them",
    );
    assert.deepEqual(await w.where(sessionId), { host: [], fallback: [] });
    assert.equal(w.storage.items.has(ROUTE_PREFIX + sessionId), false, "the route is gone");
    assert.equal(await lockIsFree(sessionLockName(sessionId)), true, "and so is the lease");
    await cacheNote(cache, sessionId, "next life");
    assert.equal(w.storage.items.get(ROUTE_PREFIX + sessionId), '"host"', "the next write made a new route");
  });

  it("the lease a first write's section kept lets go when another context only reads the session", { timeout: 30_000 }, async (t) => {
    // No lease is let go for being idle here: the read is answered only if it asks the exclusive holder to let go.
    t.mock.timers.enable({ apis: ["setTimeout"] });
    const w = world(t, { installed: false });
    const [a, b] = [w.worker(), w.worker()];
    const sessionId = session();
    await cacheNote(a, sessionId, "by a");
    assert.deepEqual(await listed(b, sessionId), ["by a"]);
    await cacheNote(a, sessionId, "by a, later"); // a's next call takes a shared lease, beside b's
    assert.deepEqual(await listed(b, sessionId), ["by a, later", "by a"]);
  });

  it("a section that another context asked to let go, to end the session, keeps nothing, and its next write makes a new route", async (t) => {
    const w = world(t, { installed: false });
    const a = w.worker();
    await a.client.pruneRoutes();
    const server = w.servers.at(-1) as RecordingIdbServer;
    const b = w.worker();
    const handle = server.handleText.bind(server);
    let arrived!: () => void;
    const writeArrived = new Promise<void>((resolve) => (arrived = resolve));
    let answer!: () => void;
    const answered = new Promise<void>((resolve) => (answer = resolve));
    server.handleText = async (text: string) => {
      if ((JSON.parse(text) as { op?: unknown }).op === "write") {
        arrived();
        await answered;
      }
      return handle(text);
    };
    const sessionId = session();
    const first = a.client.write({ sessionId, data: { n: 0 }, description: "first life" });
    await writeArrived;
    // b's end waits for a's section, which it asks to let go: a keeps no lease, and its next call asks the store.
    const ended = b.client.endSession(sessionId);
    server.handleText = handle;
    answer();
    await first;
    assert.equal((await ended).deletedItems, 1);
    assert.equal(w.storage.items.has(ROUTE_PREFIX + sessionId), false, "b's end took the route away");
    await a.client.write({ sessionId, data: { n: 1 }, description: "next life" });
    assert.equal(w.storage.items.get(ROUTE_PREFIX + sessionId), '"indexeddb"', "a's next write made a new route rather than trust what its section left");
    assert.deepEqual(await listed(b, sessionId), ["next life"]);
  });

  it("a burst's first write is answered before the others, and they hold off another context's end", { timeout: 30_000 }, async (t) => {
    const N = 4;
    const { w, b, bServer, sessionId, first, others, arrived, release } = await heldBurst(t, N);
    release(0);
    await arrived;
    // Answered while the others still wait at the backend.
    await first;
    const ended = b.client.endSession(sessionId);
    // Everything b's end could do without waiting for a lock has run by the next turn of the event loop.
    await new Promise((settled) => setImmediate(settled));
    assert.equal(bServer.ops.includes("endSession"), false, "b's end waits for the burst's writes");
    for (let k = 1; k < N; k++) release(k);
    await Promise.all(others);
    assert.equal((await ended).deletedItems, N, "the end came after every write of the burst, and removed them all");
    assert.deepEqual(await w.where(sessionId), { host: [], fallback: [] });
    assert.equal(w.storage.items.has(ROUTE_PREFIX + sessionId), false);
  });

  it("a burst's own context ends the session only once the burst's writes are answered, under the lease its section kept", { timeout: 30_000 }, async (t) => {
    const N = 4;
    const { w, a, aServer, sessionId, first, others, arrived, release } = await heldBurst(t, N);
    release(0);
    await arrived;
    await first;
    const ended = a.endSession(sessionId);
    await new Promise((settled) => setImmediate(settled));
    assert.equal(aServer.ops.includes("endSession"), false, "the end waits for the burst's writes still under way");
    for (let k = 1; k < N; k++) release(k);
    await Promise.all(others);
    const outcome = await ended;
    assert.equal(outcome.status === "ended" && outcome.deletedItems, N, "and removes them all");
    assert.deepEqual(await w.where(sessionId), { host: [], fallback: [] });
    assert.equal(w.storage.items.has(ROUTE_PREFIX + sessionId), false);
  });

  it("a first write is acknowledged once written and routed, while the rest of its burst and another context's end still wait", { timeout: 30_000 }, async (t) => {
    const N = 4;
    const { w, b, bServer, sessionId, first, others, arrived, release } = await heldBurst(t, N);
    await arrived;
    // b's end waits for a's section, which holds the lock until the burst is answered.
    const ended = b.client.endSession(sessionId);
    release(0);
    const written = await first;
    assert.match(written?.storageKey ?? "", new RegExp(`^${sessionId}_`));
    assert.equal(w.storage.items.get(ROUTE_PREFIX + sessionId), '"indexeddb"', "acknowledged with its route kept");
    assert.equal(bServer.ops.includes("endSession"), false, "b's end still waits for the burst");
    for (let k = 1; k < N; k++) release(k);
    await Promise.all(others);
    assert.equal((await ended).deletedItems, N, "the end came after every write of the burst, and removed them all");
  });

  it("two contexts writing to one session in turn each keep a lease, and read nothing from the store once they hold one", async (t) => {
    const w = world(t, { installed: false });
    const counted = countingStorage(w.storage);
    const [a, b] = [w.worker({ storage: counted }), w.worker({ storage: counted })];
    const sessionId = session();
    await cacheNote(a, sessionId, "a 0"); // a's section keeps its hold, exclusive
    await cacheNote(b, sessionId, "b 0"); // b's first write takes the section, which asks a's lease to let go
    await cacheNote(a, sessionId, "a 1"); // a takes a shared lease, which asks b's exclusive one to let go
    await cacheNote(b, sessionId, "b 1"); // b takes a shared lease, beside a's
    counted.reads = 0;
    for (let n = 2; n < 4; n++) {
      await cacheNote(a, sessionId, `a ${n}`);
      await cacheNote(b, sessionId, `b ${n}`);
    }
    assert.equal(counted.reads, 0, "neither took the session's exclusive section again");
    assert.equal((await listed(a, sessionId)).length, 8);
  });

  it("with one backend, the client's endSession reads nothing from the store: there is no route to find", async (t) => {
    const w = world(t, { installed: false });
    const counted = countingStorage(w.storage);
    const cache = w.worker({ storage: counted, backend: "indexeddb" });
    const sessionId = session();
    await cacheNote(cache, sessionId, "in the browser");
    counted.reads = 0;
    assert.equal((await cache.client.endSession(sessionId)).deletedItems, 1);
    assert.equal(counted.reads, 0);
  });

  it("ending a session forgets only the cleanups it had remembered, and touches none where none was owed", async (t) => {
    const w = world(t, { installed: true });
    const counted = countingStorage(w.storage);
    const cache = w.worker({ storage: counted });
    const cleanups = (sessionId: string) => Object.values(PENDING_END_SESSION_PREFIXES).map((prefix) => prefix + sessionId);
    const removedCleanups = (sessionId: string) => counted.removed.filter((keys) => keys.some((key) => cleanups(sessionId).includes(key)));

    // Ended at once under the lease its first write left, and again from a context that must read the records.
    for (const ender of [cache, w.worker({ storage: counted })]) {
      const sessionId = session();
      await cacheNote(cache, sessionId, "on the host");
      counted.removed = [];
      assert.equal((await ender.endSession(sessionId)).status, "ended");
      assert.deepEqual(removedCleanups(sessionId), [], "none was remembered, so none is forgotten");
      assert.deepEqual([...w.storage.items.keys()].filter((key) => key.includes(sessionId)), []);
    }

    // The host was away when the session first ended: its cleanup is remembered, and the next end forgets it.
    const sessionId = session();
    await cacheNote(cache, sessionId, "on the host");
    w.uninstall();
    cache.client.close();
    assert.equal((await cache.endSession(sessionId)).status, "pending");
    w.install();
    counted.removed = [];
    assert.equal((await cache.endSession(sessionId)).status, "ended");
    assert.deepEqual(removedCleanups(sessionId), [[PENDING_END_SESSION_PREFIXES.host + sessionId]], "one call, for the one owed");
    assert.deepEqual([...w.storage.items.keys()].filter((key) => key.includes(sessionId)), []);
    assert.deepEqual(await w.where(sessionId), { host: [], fallback: [] });
  });

  it("a context forgets the route it knows when another context ends the session, and the next write makes a new one", async (t) => {
    const w = world(t, { installed: false });
    const [a, b] = [w.worker(), w.worker()];
    const sessionId = session();
    await cacheNote(a, sessionId, "item 1");
    await cacheNote(a, sessionId, "item 2"); // a now holds the session's lease, knowing its route
    assert.equal((await b.endSession(sessionId)).status, "ended");
    assert.equal(w.storage.items.has(ROUTE_PREFIX + sessionId), false);
    w.install();
    w.clock.now += HOST_RECHECK_MS;
    await cacheNote(a, sessionId, "next life");
    assert.deepEqual(await w.where(sessionId), { host: ["next life"], fallback: [] });
    assert.equal(w.storage.items.get(ROUTE_PREFIX + sessionId), '"host"');
    assert.deepEqual(await listed(b, sessionId), ["next life"]);
  });
});
