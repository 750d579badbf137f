/**
 * Session lifecycle against the real host: endSession sent at once when the host is there, remembered in
 * chrome.storage.local when it isn't and sent first on the next connection (even by a new service worker), never
 * removing what was written after it; the demo working without a host, on IndexedDB; reset() and close() of a browserx-style session ending its cache; an idle
 * port closing so the service worker and the host can sleep.
 */

// The context's IndexedDB, as an extension's: createLlmCache falls back to it where there is no host.
import "fake-indexeddb/auto";
import assert from "node:assert/strict";
import { describe, it, type TestContext } from "node:test";
import { randomUUID } from "node:crypto";
import { NativeCacheClient } from "../src/client.js";
import { createLlmCache, type LlmCache } from "../src/llm-cache.js";
import { PENDING_END_SESSION_PREFIX, SessionCleanup, type EndSessionOutcome } from "../src/session.js";
import { StorageTool } from "../src/tool/storage-tool.js";
import { CHROME_ERRORS, HOST_BINARY, hostConnector, type ChromeNativePort, type HostConnector } from "./helpers/chrome-port.js";
import { MemoryStorage } from "./helpers/memory-storage.js";
import { tempDir } from "./helpers/temp.js";

const SESSION = "conv_session-test";

/** A data directory with `count` items in SESSION, and a client on it to check what is left. */
async function cacheWithItems(t: TestContext, count: number) {
  const dir = tempDir();
  const connect = hostConnector({ dataDir: dir.path });
  const client = new NativeCacheClient({ connect });
  for (let n = 0; n < count; n++) await client.write({ sessionId: SESSION, data: { n }, description: `item ${n}` });
  t.after(async () => {
    client.close();
    await connect.closeAll();
    dir.remove();
  });
  return { dir: dir.path, client };
}

describe("endSession", () => {
  it("removes the session's items when the host is there", async (t) => {
    const { dir, client: checker } = await cacheWithItems(t, 3);
    const connect = hostConnector({ dataDir: dir });
    const client = new NativeCacheClient({ connect });
    t.after(() => connect.closeAll());
    const storage = new MemoryStorage();
    const cleanup = new SessionCleanup(client, storage);

    assert.deepEqual(await cleanup.endSession(SESSION), { status: "ended", deletedItems: 3, freedBytes: 21 });
    assert.equal((await checker.stats(SESSION)).itemCount, 0);
    assert.equal(storage.items.size, 0);
    client.close();
  });

  it("remembers the cleanup while the host can't be reached, and a later service worker sends it on connect", async (t) => {
    const { dir, client: checker } = await cacheWithItems(t, 2);
    const storage = new MemoryStorage();

    // The host isn't installed: the cleanup is remembered.
    const missing = hostConnector({ dataDir: dir, binary: "/nonexistent/llm-cache-host" });
    const offline = new SessionCleanup(new NativeCacheClient({ connect: missing }), storage);
    const outcome = await offline.endSession(SESSION);
    assert.equal(outcome.status, "pending");
    assert.ok(outcome.status === "pending" && outcome.reason.includes(CHROME_ERRORS.notFound), JSON.stringify(outcome));
    assert.deepEqual([...storage.items.keys()], [PENDING_END_SESSION_PREFIX + SESSION]);
    assert.equal((await checker.stats(SESSION)).itemCount, 2, "nothing was removed yet");

    // A new service worker (new client, same chrome.storage.local) connects for some other reason.
    const connect = hostConnector({ dataDir: dir });
    t.after(() => connect.closeAll());
    const client = new NativeCacheClient({ connect });
    const cleanup = new SessionCleanup(client, storage);
    assert.deepEqual(await cleanup.pendingSessions(), [SESSION]);
    await client.stats("conv_something-else");
    // The remembered endSession went out on that connection by itself, settled before the caller's request.
    assert.deepEqual(connect.ports[0]?.log, ["> hello", "< 1", "> endSession", "< 2", "> stats", "< 3"]);

    // Nothing is left to send, and nothing goes out twice.
    assert.deepEqual(await cleanup.flushPending(), []);
    assert.equal(connect.ports[0]?.log.filter((entry) => entry === "> endSession").length, 1);
    assert.equal(storage.items.size, 0);
    assert.equal((await checker.stats(SESSION)).itemCount, 0);
    client.close();
  });

  it("refuses a malformed sessionId with a TypeError before asking the host, remembering nothing", async (t) => {
    const { dir } = await cacheWithItems(t, 0);
    const connect = hostConnector({ dataDir: dir });
    t.after(() => connect.closeAll());
    const client = new NativeCacheClient({ connect });
    const storage = new MemoryStorage();
    await assert.rejects(new SessionCleanup(client, storage).endSession("not-a-session"), TypeError);
    assert.equal(connect.ports.length, 0);
    assert.equal(storage.items.size, 0);
    client.close();
  });
});

describe("a remembered cleanup never removes newer data", () => {
  it("a conversation resumed under the same id keeps what it writes once the host is back", async (t) => {
    const { dir, client: checker } = await cacheWithItems(t, 2);
    const storage = new MemoryStorage();
    // One connector whose binary is missing at first, as before the host is installed.
    let binary = "/nonexistent/llm-cache-host";
    const connectors: HostConnector[] = [];
    const connect = (hostName: string) => {
      const connector = hostConnector({ dataDir: dir, binary });
      connectors.push(connector);
      return connector(hostName);
    };
    t.after(() => Promise.all(connectors.map((connector) => connector.closeAll())));
    const client = new NativeCacheClient({ connect });
    const cleanup = new SessionCleanup(client, storage);
    const tool = new StorageTool(client);

    assert.equal((await cleanup.endSession(SESSION)).status, "pending");
    binary = HOST_BINARY; // the host is installed
    const answer = await tool.execute({ action: "write", data: '{"n": "new"}', description: "written after the end" }, { sessionId: SESSION });
    assert.match(answer, /^cached /);
    assert.deepEqual(connectors[1]?.ports[0]?.log.filter((entry) => entry.startsWith(">")), ["> hello", "> endSession", "> write"]);
    const left = await checker.list({ sessionId: SESSION });
    assert.deepEqual(left.items.map((item) => item.description), ["written after the end"]);
    assert.deepEqual(await cleanup.pendingSessions(), []);
    client.close();
  });

  it("the demo run twice, the first time without a host (on IndexedDB), works fully both times", async (t) => {
    const dir = tempDir();
    t.after(() => dir.remove());
    const storage = new MemoryStorage();
    const offline = createLlmCache({ storage, connect: hostConnector({ dataDir: dir.path, binary: "/nonexistent/llm-cache-host" }) });
    const first = await demoRun(offline);
    assert.deepEqual(first.cached, [true, true, true]);
    assert.match(first.list, /^3 items, /);
    assert.equal(first.ended.status, "ended");
    assert.equal((await offline.status()).backend, "indexeddb");
    offline.client.close();

    const connect = hostConnector({ dataDir: dir.path });
    t.after(() => connect.closeAll());
    const online = createLlmCache({ storage, connect });
    const second = await demoRun(online);
    assert.deepEqual(second.cached, [true, true, true]);
    assert.match(second.list, /^3 items, /);
    assert.deepEqual(second.ended, { status: "ended", deletedItems: 3, freedBytes: second.ended.status === "ended" ? second.ended.freedBytes : -1 });
    assert.equal((await online.status()).backend, "host");
    online.client.close();
  });
});

/** A connector to hosts on a fresh data directory, closed and removed after the test. */
function hostIn(t: TestContext): HostConnector {
  const dir = tempDir();
  const connect = hostConnector({ dataDir: dir.path });
  t.after(async () => {
    await connect.closeAll();
    dir.remove();
  });
  return connect;
}

/** The demo's steps (demo/background.js): three writes, a list, the end of the session. */
async function demoRun(cache: LlmCache) {
  const context = { sessionId: "conv_demo" };
  const cached: boolean[] = [];
  for (const n of [1, 2, 3]) {
    const answer = await cache.tool.execute({ action: "write", data: `{"n": ${n}}`, description: `Summary of email ${n}/3` }, context);
    cached.push(answer.startsWith("cached "));
  }
  const list = await cache.tool.execute({ action: "list" }, context);
  return { cached, list, ended: await cache.endSession(context.sessionId) };
}

/** A session as browserx's: reset() replaces conversationId in place; close() leaves it. */
class AgentSession {
  conversationId = `conv_${randomUUID()}`;
  readonly events: string[] = [];
  async reset(): Promise<void> {
    this.events.push(`reset ${this.conversationId}`);
    Object.assign(this, { conversationId: `conv_${randomUUID()}` });
  }
  async close(): Promise<void> {
    this.events.push(`close ${this.conversationId}`);
  }
}

describe("attachToSession", () => {
  it("ends the old conversation's cache on reset and the current one's on close, and can be detached", async (t) => {
    const connect = hostIn(t);
    const cache = createLlmCache({ storage: new MemoryStorage(), connect });
    const session = new AgentSession();
    const ended: Array<[string, EndSessionOutcome]> = [];
    const settled = () => new Promise<void>((resolve) => queueMicrotask(resolve));
    let done: (() => void) | undefined;
    const detach = cache.attachToSession(session, (sessionId, outcome) => {
      ended.push([sessionId, outcome]);
      done?.();
    });
    const endOf = (action: () => Promise<void>) =>
      new Promise<void>((resolve) => {
        done = resolve;
        void action();
      });

    const first = session.conversationId;
    await cache.tool.execute({ action: "write", data: "first conversation", description: "a" }, { sessionId: first });
    await endOf(() => session.reset());
    const second = session.conversationId;
    assert.notEqual(second, first);
    assert.deepEqual(session.events, [`reset ${first}`], "the original reset ran");
    assert.deepEqual(ended, [[first, { status: "ended", deletedItems: 1, freedBytes: 20 }]]);

    await cache.tool.execute({ action: "write", data: "second conversation", description: "b" }, { sessionId: second });
    await endOf(() => session.close());
    assert.deepEqual(ended[1], [second, { status: "ended", deletedItems: 1, freedBytes: 21 }]);

    detach();
    await session.reset();
    await settled();
    assert.equal(ended.length, 2, "a detached session ends nothing");
    cache.client.close();
  });
});

describe("an idle port", () => {
  it("closes after the quiet time, lets its host exit, and the next call connects again", async (t) => {
    t.mock.timers.enable({ apis: ["setTimeout", "Date"] });
    const connect = hostIn(t);
    const client = new NativeCacheClient({ connect, idleCloseMs: 30_000 });
    await client.stats(SESSION);
    const port = connect.ports[0] as ChromeNativePort;
    t.mock.timers.tick(29_999);
    assert.equal(port.connected, true, "not yet idle for 30 s");
    await client.stats(SESSION); // activity starts the quiet time again
    t.mock.timers.tick(29_999);
    assert.equal(port.connected, true);
    t.mock.timers.tick(1);
    assert.equal(port.connected, false, "closed after 30 s without a request");
    await port.closed; // the host saw its stdin close and exited
    assert.equal(port.process.exitCode, 0);
    assert.equal(client.hostInfo, undefined);

    assert.equal((await client.stats(SESSION)).itemCount, 0);
    assert.equal(connect.ports.length, 2, "the next call started a new host");
    client.close();
  });

  it("stays open while a request is waiting, and with idleCloseMs 0 never closes", async (t) => {
    t.mock.timers.enable({ apis: ["setTimeout", "Date"] });
    const connect = hostIn(t);
    const keepOpen = new NativeCacheClient({ connect, idleCloseMs: 0 });
    await keepOpen.stats(SESSION);
    t.mock.timers.tick(24 * 3600 * 1000);
    assert.equal(connect.ports[0]?.connected, true);
    keepOpen.close();

    const client = new NativeCacheClient({ connect, idleCloseMs: 1000 });
    await client.hello();
    const waiting = client.stats(SESSION); // sent; its reply hasn't been read yet
    t.mock.timers.tick(1000);
    assert.equal(connect.ports[1]?.connected, true, "a request in flight keeps the port");
    await waiting;
    t.mock.timers.tick(999);
    assert.equal(connect.ports[1]?.connected, true, "the quiet time counts from the reply");
    t.mock.timers.tick(1);
    assert.equal(connect.ports[1]?.connected, false);
  });

  it("arms its close once between calls, not once each", async (t) => {
    const connect = hostIn(t);
    const client = new NativeCacheClient({ connect, idleCloseMs: 30_001 });
    t.after(() => client.close());
    await client.stats(SESSION);
    const timers = t.mock.method(globalThis, "setTimeout");
    for (let n = 0; n < 20; n++) await client.stats(SESSION);
    assert.deepEqual(timers.mock.calls.filter((call) => call.arguments[1] === 30_001), [], "the close armed after the first call still stands");
    assert.equal(connect.ports.length, 1);
    assert.equal(connect.ports[0]?.connected, true);
  });
});
