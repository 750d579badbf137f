/**
 * Routes that can't go stale: every acknowledged write is listed until its session ends, whichever context
 * wrote it and whichever backend holds it. Contexts are separate createLlmCache instances sharing one
 * chrome.storage.local and one IndexedDB (fake-indexeddb), with the real host binary behind Chrome-like ports;
 * the host comes and goes under them. What is checked: another context's endSession never leaves this context
 * writing where no route says; a first write whose reply was lost leaves no copy
 * on the host once it is back; routes of sessions no backend holds are pruned, those on a host that is down
 * kept; and a seeded run of interleaved writes, ends, lists and host crashes never loses an acknowledged item.
 */

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ItemNotFoundError, StorageUnavailableError } from "../src/errors.js";
import type { LlmCache } from "../src/llm-cache.js";
import { HOST_RECHECK_MS, ROUTE_PREFIX } from "../src/routing.js";
import { PENDING_END_SESSION_PREFIXES } from "../src/session.js";
import { Rng } from "./helpers/rng.js";
import { session, world } from "./helpers/routing-world.js";
import { cacheNote, listed } from "./helpers/tool-notes.js";

/** Writes through the tool, as the LLM would; true when the write was acknowledged. */
async function tryNote(cache: LlmCache, sessionId: string, description: string): Promise<boolean> {
  const answer = await cache.tool.execute({ action: "write", data: `{"note": "${description}"}`, description }, { sessionId });
  return answer.startsWith("cached ");
}

/** The descriptions a `list` shows, or the error it failed with. */
async function listedOrError(cache: LlmCache, sessionId: string): Promise<string[] | Error> {
  try {
    return (await cache.client.list({ sessionId })).items.map((item) => item.description).sort();
  } catch (error) {
    return error as Error;
  }
}

describe("routes that can't go stale", () => {
  it("a write after another context ended the session is listed, after the host went away and came back", async (t) => {
    const w = world(t, { installed: true });
    const a = w.worker();
    const b = w.worker();
    const conversation = session();
    await cacheNote(a, conversation, "item 1");
    assert.equal((await b.endSession(conversation)).status, "ended");
    await cacheNote(a, conversation, "item 2");
    assert.equal(w.storage.items.get(ROUTE_PREFIX + conversation), '"host"', "the write made its route again");

    await w.crash();
    // A fresh context can't list a session whose backend is down: that is an error, never an empty list.
    const c = w.worker();
    const whileDown = await listedOrError(c, conversation);
    assert.ok(whileDown instanceof StorageUnavailableError, `while the host is down, list answered ${String(whileDown)}`);
    assert.equal(await tryNote(c, conversation, "item 3"), false, "the session doesn't move to the other backend");

    w.install();
    const d = w.worker();
    assert.deepEqual(await listed(d, conversation), ["item 2"]);
    assert.deepEqual(await w.where(conversation), { host: ["item 2"], fallback: [] });
  });

  it("a first write whose reply was lost goes to the in-browser backend, and the host's copy goes when it is back", async (t) => {
    const w = world(t, { installed: true });
    const cache = w.worker();
    assert.equal((await cache.status()).backend, "host");
    const conversation = session();
    w.loseNextWriteReply();
    await cacheNote(cache, conversation, "written once");
    // The host committed it before it went away; the in-browser backend holds the acknowledged one.
    assert.deepEqual(await w.where(conversation), { host: ["written once"], fallback: ["written once"] });
    assert.equal(w.storage.items.get(ROUTE_PREFIX + conversation), '"indexeddb"');
    assert.ok(w.storage.items.has(PENDING_END_SESSION_PREFIXES.host + conversation), "the host's copy is remembered");
    assert.deepEqual(await listed(cache, conversation), ["written once"]);

    w.install();
    const restarted = w.worker();
    assert.deepEqual(await restarted.cleanup.flushPending(), []);
    assert.deepEqual(await w.where(conversation), { host: [], fallback: ["written once"] });
    assert.deepEqual(await listed(restarted, conversation), ["written once"]);
    // Writes go on where the session is, and the session's next life on the host is spared.
    await cacheNote(restarted, conversation, "written twice");
    assert.equal((await restarted.endSession(conversation)).status, "ended");
    await cacheNote(restarted, conversation, "next life");
    assert.deepEqual(await w.where(conversation), { host: ["next life"], fallback: [] });
  });

  it("a remembered host cleanup is sent before a new life's first write, even on a connection that is already open", async (t) => {
    const w = world(t, { installed: true });
    const writer = w.worker();
    assert.equal((await writer.status()).backend, "host"); // its port is open before the cleanup is remembered
    const conversation = session();
    // The host holds an earlier life of the session that another context couldn't end (its host was away).
    await w.hostStore.write({ sessionId: conversation, data: { old: true }, description: "earlier life" });
    await w.storage.set({ [PENDING_END_SESSION_PREFIXES.host + conversation]: Date.now() });
    await cacheNote(writer, conversation, "new life");
    assert.deepEqual(await w.where(conversation), { host: ["new life"], fallback: [] });
    assert.equal(w.storage.items.has(PENDING_END_SESSION_PREFIXES.host + conversation), false);
    // A later connection finds nothing left to send, so the new life stays.
    assert.deepEqual(await w.worker().cleanup.flushPending(), []);
    assert.deepEqual(await w.where(conversation), { host: ["new life"], fallback: [] });
  });

  it("an in-browser cleanup that met one transient IndexedDB failure runs before the resumed session's first write", async (t) => {
    const w = world(t, { installed: false });
    // With the host away (both backends in use), and with the in-browser backend alone.
    for (const choice of [{}, { backend: "indexeddb" as const }]) {
      const cache = w.worker(choice);
      const conversation = session();
      const first = await cache.client.write({ sessionId: conversation, data: { n: 1 }, description: "item 1" });
      w.failNextInBrowserChange();
      assert.equal((await cache.endSession(conversation)).status, "pending", JSON.stringify(choice));
      assert.ok(w.storage.items.has(PENDING_END_SESSION_PREFIXES.indexeddb + conversation), "the cleanup is remembered");
      // An update of the ended life's item finds it gone, rather than being acknowledged and removed later.
      await assert.rejects(cache.client.update({ sessionId: conversation, storageKey: first.storageKey, description: "changed" }), ItemNotFoundError);
      // Resumed under the same id, on the connection that outlived the failure: the write is acknowledged.
      await cacheNote(cache, conversation, "item 2");
      assert.equal(w.storage.items.has(PENDING_END_SESSION_PREFIXES.indexeddb + conversation), false, "the write sent it first");
      // A restarted worker's connection finds nothing left to send, so item 2 stays.
      const restarted = w.worker(choice);
      assert.deepEqual(await restarted.cleanup.flushPending(), []);
      assert.deepEqual(await listed(restarted, conversation), ["item 2"], JSON.stringify(choice));
      assert.deepEqual(await w.where(conversation), { host: [], fallback: ["item 2"] });
    }
  });

  it("a host cleanup answered with a full disk, its port still open, runs before the resumed session's next write", async (t) => {
    const w = world(t, { installed: true });
    // The host alone: its first write of the resumed session goes straight to it.
    // Both backends: the disk is still full when the resumed session's first write sends the cleanup, so that
    // write is refused and makes the host its route; the next write, with space back, is acknowledged.
    for (const [choice, failures] of [[{ fallback: false }, 1], [{}, 2]] as const) {
      const cache = w.worker(choice);
      assert.equal((await cache.status()).backend, "host");
      const conversation = session();
      await cacheNote(cache, conversation, "item 1");
      w.failHostEndSessions(failures);
      assert.equal((await cache.endSession(conversation)).status, "pending", JSON.stringify(choice));
      assert.ok(w.storage.items.has(PENDING_END_SESSION_PREFIXES.host + conversation), "the cleanup is remembered");
      if (failures > 1) assert.equal(await tryNote(cache, conversation, "refused"), false, "the cleanup failed again");
      await cacheNote(cache, conversation, "item 2");
      assert.equal(w.storage.items.has(PENDING_END_SESSION_PREFIXES.host + conversation), false, "the write sent it first");
      const restarted = w.worker(choice);
      assert.deepEqual(await restarted.cleanup.flushPending(), []);
      assert.deepEqual(await listed(restarted, conversation), ["item 2"], JSON.stringify(choice));
      assert.deepEqual(await w.where(conversation), { host: ["item 2"], fallback: [] });
    }
  });

  it("prunes the routes of sessions their backend no longer holds, and keeps those whose backend is down", async (t) => {
    const w = world(t, { installed: false });
    const cache = w.worker();
    const [inBrowserGone, inBrowserKept] = [session(), session()];
    await cacheNote(cache, inBrowserGone, "swept");
    await cacheNote(cache, inBrowserKept, "kept");
    w.install();
    w.clock.now += HOST_RECHECK_MS;
    const [onHostGone, onHostKept] = [session(), session()];
    await cacheNote(cache, onHostGone, "swept");
    await cacheNote(cache, onHostKept, "kept");
    // The backends remove two sessions as their orphan sweeps would, past every router.
    await w.fallbackStore.endSession(inBrowserGone);
    await w.hostStore.endSession(onHostGone);

    // While the host is down, only the in-browser backend's routes are looked at.
    await w.crash();
    const whileDown = w.worker();
    await whileDown.status();
    await whileDown.client.pruneRoutes();
    const routes = () => [...w.storage.items.keys()].filter((key) => key.startsWith(ROUTE_PREFIX)).sort();
    assert.deepEqual(routes(), [onHostGone, onHostKept, inBrowserKept].map((id) => ROUTE_PREFIX + id).sort());

    w.install();
    const back = w.worker();
    assert.equal((await back.status()).backend, "host");
    // Runs when the router is made and when the host connects, in the background; one more here is awaited.
    assert.deepEqual(await back.client.pruneRoutes(), { checked: 2, removed: 0 });
    assert.deepEqual(routes(), [onHostKept, inBrowserKept].map((id) => ROUTE_PREFIX + id).sort());
    assert.deepEqual(await listed(back, onHostKept), ["kept"]);
    assert.deepEqual(await listed(back, inBrowserKept), ["kept"]);
  });

  it("interleaved writes, ends and lists in several contexts, with the host crashing and coming back, lose nothing acknowledged", async (t) => {
    const w = world(t, { installed: true });
    const rng = new Rng(0x5eed23);
    const contexts = [w.worker(), w.worker(), w.worker()];
    const sessions = [session(), session(), session()];
    /** Per session: the acknowledged items of its current life that no end has covered. */
    const live = new Map<string, Set<string>>(sessions.map((id) => [id, new Set()]));
    /** Items whose fate is open: written together with an end, or whose write failed (it may have committed). */
    const maybe = new Set<string>();
    let written = 0;
    let hostUp = true;
    const STEPS = 200;
    for (let step = 0; step < STEPS; step++) {
      if (rng.chance(0.15)) {
        if (hostUp) await w.crash();
        else w.install();
        hostUp = !hostUp;
        w.clock.now += HOST_RECHECK_MS;
      }
      if (rng.chance(0.1)) contexts[rng.below(contexts.length)] = w.worker(); // a restarted service worker
      // One to three operations at once, from any contexts, on any sessions.
      const ops = Array.from({ length: 1 + rng.below(3) }, () => ({
        kind: rng.pick(["write", "write", "write", "end", "list"] as const),
        cache: rng.pick(contexts),
        sessionId: rng.pick(sessions),
        description: `note ${written++}`,
      }));
      const ending = new Set(ops.filter((op) => op.kind === "end").map((op) => op.sessionId));
      const before = new Map([...live].map(([id, items]) => [id, new Set(items)]));
      const outcomes = await Promise.all(
        ops.map(async (op) => {
          if (op.kind === "write") return tryNote(op.cache, op.sessionId, op.description);
          if (op.kind === "end") return op.cache.endSession(op.sessionId);
          return listedOrError(op.cache, op.sessionId);
        }),
      );
      for (const id of ending) live.get(id)?.clear();
      ops.forEach((op, n) => {
        const outcome = outcomes[n];
        if (op.kind === "write") {
          if (outcome === true && !ending.has(op.sessionId)) live.get(op.sessionId)?.add(op.description);
          else maybe.add(op.description);
        } else if (op.kind === "list" && Array.isArray(outcome) && !ending.has(op.sessionId)) {
          // Every item acknowledged before this list began, and not ended, is in it; a list may fail only honestly.
          const missing = [...(before.get(op.sessionId) ?? [])].filter((item) => !outcome.includes(item));
          assert.deepEqual(missing, [], `step ${step}: a list of ${op.sessionId} misses acknowledged items`);
          assert.equal(new Set(outcome).size, outcome.length, `step ${step}: an item is listed twice`);
        } else if (op.kind === "list" && !Array.isArray(outcome)) {
          assert.ok(outcome instanceof StorageUnavailableError, `step ${step}: list failed with ${String(outcome)}`);
        }
      });
    }

    // The host is back: a fresh context lists every acknowledged item of every session's current life.
    w.install();
    const last = w.worker();
    await last.cleanup.flushPending();
    for (const id of sessions) {
      const items = await listed(last, id);
      const missing = [...(live.get(id) ?? [])].filter((item) => !items.includes(item));
      assert.deepEqual(missing, [], `${id} misses acknowledged items at the end`);
      const unexpected = items.filter((item) => !live.get(id)?.has(item) && !maybe.has(item));
      assert.deepEqual(unexpected, [], `${id} lists items of an ended life`);
    }
  });
});
