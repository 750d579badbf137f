/**
 * createLlmCache's default fallback: with no host installed, the whole cache works on IndexedDB in the extension
 * (the real IdbHost, on fake-indexeddb set up as the context's global `indexedDB`, as a browser's would be). The
 * host is then installed mid-way, with a port that fails as Chrome's does until then and spawns the real binary
 * after: the session under way finishes on IndexedDB, new sessions go to the host, endSession reaches the
 * backend that holds each session, and `status()` says which backend serves.
 */

import "fake-indexeddb/auto";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { describe, it } from "node:test";
import { IDBFactory } from "fake-indexeddb";
import { IndexedDbBackend } from "../src/backends/indexeddb/backend.js";
import { NativeCacheClient } from "../src/backends/native.js";
import { DEMO_EXTENSION_ID } from "../src/demo-extension.js";
import { createLlmCache } from "../src/llm-cache.js";
import { ORPHAN_AFTER_MS, ORPHAN_SWEEP_EVERY_MS } from "../src/protocol.js";
import { HOST_RECHECK_MS } from "../src/routing.js";
import { HOST_BINARY, hostConnector, type HostConnector } from "./helpers/chrome-port.js";
import { MemoryStorage } from "./helpers/memory-storage.js";
import { tempDir } from "./helpers/temp.js";
import { cacheNote, listed } from "./helpers/tool-notes.js";

// Chrome gives an extension its id here; the status texts name it in the install command.
const global = globalThis as { chrome?: { runtime?: { id?: string } } };
global.chrome ??= {};
global.chrome.runtime ??= {};
global.chrome.runtime.id = DEMO_EXTENSION_ID;

describe("the IndexedDB fallback by default", () => {
  it("serves everything without a host, finishes its sessions once the host is installed, and sends new ones to the host", async (t) => {
    const hostDir = tempDir();
    let binary = "/nonexistent/llm-cache-host";
    const connectors: HostConnector[] = [];
    const clock = { now: Date.now() };
    const cache = createLlmCache({
      storage: new MemoryStorage(),
      now: () => clock.now,
      connect: (hostName) => {
        const connector = hostConnector({ dataDir: hostDir.path, binary });
        connectors.push(connector);
        return connector(hostName);
      },
    });
    // Each store asked directly: the host on the same data directory, IndexedDB on the same database.
    const hostStore = new NativeCacheClient({ connect: hostConnector({ dataDir: hostDir.path }) });
    const idbStore = new IndexedDbBackend();
    t.after(async () => {
      cache.client.close();
      hostStore.close();
      idbStore.close();
      await Promise.all(connectors.map((connector) => connector.closeAll()));
      hostDir.remove();
    });
    const where = async (sessionId: string) => ({
      host: (await hostStore.list({ sessionId })).items.map((item) => item.description).sort(),
      indexeddb: (await idbStore.list({ sessionId })).items.map((item) => item.description).sort(),
    });

    // No host: every action works, on IndexedDB.
    const early = `conv_${randomUUID()}`;
    await cacheNote(cache, early, "early 1");
    await cacheNote(cache, early, "early 2");
    const read = await cache.tool.execute({ action: "search", query: "early 2" }, { sessionId: early });
    assert.match(read, /early 2/);
    const before = await cache.status();
    assert.equal(before.backend, "indexeddb");
    assert.match(before.hostProblem ?? "", /the native host is not installed/);
    assert.deepEqual(await where(early), { host: [], indexeddb: ["early 1", "early 2"] });

    // The host is installed; once the recheck interval has passed, a new session asks it again.
    binary = HOST_BINARY;
    clock.now += HOST_RECHECK_MS;
    const late = `conv_${randomUUID()}`;
    await cacheNote(cache, late, "late 1");
    await cacheNote(cache, early, "early 3");
    await cacheNote(cache, late, "late 2");
    const after = await cache.status();
    assert.equal(after.backend, "host");
    assert.equal(after.hostProblem, undefined);
    assert.equal(after.host?.protocolVersion, 1);

    assert.deepEqual(await where(early), { host: [], indexeddb: ["early 1", "early 2", "early 3"] });
    assert.deepEqual(await where(late), { host: ["late 1", "late 2"], indexeddb: [] });
    // The LLM sees every item once. (Not their order: two writes in one millisecond tie, and then the random keys
    // decide; the transcripts check the order.)
    assert.deepEqual((await listed(cache, early)).sort(), ["early 1", "early 2", "early 3"]);
    assert.deepEqual((await listed(cache, late)).sort(), ["late 1", "late 2"]);

    // Each end removes the session's items from the backend that holds them.
    const earlyEnd = await cache.endSession(early);
    assert.equal(earlyEnd.status, "ended");
    assert.equal(earlyEnd.status === "ended" && earlyEnd.deletedItems, 3);
    const lateEnd = await cache.endSession(late);
    assert.equal(lateEnd.status === "ended" && lateEnd.deletedItems, 2);
    assert.deepEqual(await where(early), { host: [], indexeddb: [] });
    assert.deepEqual(await where(late), { host: [], indexeddb: [] });
  });
});

describe("the IndexedDB backend's orphan sweep", () => {
  it("removes sessions idle for 24 hours when it is made, and every hour while it lives", async (t) => {
    t.mock.timers.enable({ apis: ["setInterval"] });
    const clock = { now: Date.parse("2026-11-23T00:00:00Z") };
    const options = { indexedDB: new IDBFactory(), now: () => clock.now };
    const descriptions = async (backend: IndexedDbBackend, sessionId: string) =>
      (await backend.list({ sessionId })).items.map((item) => item.description);

    // A session left by an earlier worker is swept when the next one makes its backend.
    const earlier = new IndexedDbBackend(options);
    await earlier.write({ sessionId: "conv_left", data: 1, description: "left behind" });
    earlier.close();
    clock.now += ORPHAN_AFTER_MS + 1;
    const backend = new IndexedDbBackend(options);
    t.after(() => backend.close());
    assert.deepEqual(await descriptions(backend, "conv_left"), []);

    // While the backend lives, the hourly timer sweeps; a session touched within the 24 hours stays.
    await backend.write({ sessionId: "conv_idle", data: 1, description: "idle" });
    await backend.write({ sessionId: "conv_busy", data: 1, description: "busy" });
    clock.now += ORPHAN_AFTER_MS + 1;
    t.mock.timers.tick(ORPHAN_SWEEP_EVERY_MS - 1);
    assert.deepEqual(await descriptions(backend, "conv_busy"), ["busy"], "no sweep before the hour is up");
    t.mock.timers.tick(1);
    assert.deepEqual(await descriptions(backend, "conv_idle"), [], "the hourly sweep removes the idle session");
    assert.deepEqual(await descriptions(backend, "conv_busy"), ["busy"], "a session used within 24 hours stays");

    // close() stops the timer: a later hour sweeps nothing.
    backend.close();
    clock.now += ORPHAN_AFTER_MS + 1;
    t.mock.timers.tick(ORPHAN_SWEEP_EVERY_MS);
    assert.deepEqual(await descriptions(backend, "conv_busy"), ["busy"]);
  });
});
