/**
 * endSession for the agent's cleanup hook: sent at once when the host is there, remembered in
 * chrome.storage.local when it isn't, and sent after the next successful connect, even by a new service worker.
 */

import assert from "node:assert/strict";
import { describe, it, type TestContext } from "node:test";
import { NativeCacheClient } from "../src/client.js";
import { PENDING_END_SESSION_PREFIX, SessionCleanup } from "../src/session.js";
import { CHROME_ERRORS, hostConnector } from "./helpers/chrome-port.js";
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
    // The remembered endSession went out on that connect by itself, before the caller's reply came back.
    assert.deepEqual(connect.ports[0]?.log.filter((entry) => entry.startsWith(">")), ["> hello", "> stats", "> endSession"]);

    // Waits for that flush (or finds nothing left to send); either way the cleanup goes out once.
    await cleanup.flushPending();
    assert.equal(connect.ports[0]?.log.filter((entry) => entry === "> endSession").length, 1);
    assert.equal(storage.items.size, 0);
    assert.equal((await checker.stats(SESSION)).itemCount, 0);
    client.close();
  });

  it("doesn't remember a cleanup the host refused, since it would be refused again", async (t) => {
    const { dir } = await cacheWithItems(t, 0);
    const connect = hostConnector({ dataDir: dir });
    t.after(() => connect.closeAll());
    const client = new NativeCacheClient({ connect });
    const storage = new MemoryStorage();
    const outcome = await new SessionCleanup(client, storage).endSession("not-a-session");
    assert.equal(outcome.status, "failed");
    assert.equal(outcome.status === "failed" && outcome.error.code, "InvalidKeyFormatError");
    assert.equal(storage.items.size, 0);
    client.close();
  });
});
