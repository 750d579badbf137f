// Routes that can't go stale, in real Chromium with the host installed: two contexts of the demo extension, its
// service worker and one of its pages (chrome-extension://<id>/lib/pages/viewer.html, with a cache of its own
// made there), race writes and endSession on the same two sessions, sharing chrome.storage.local, the Web
// Locks and the host. Afterwards, each session's every write acknowledged after its last endSession had ended
// is listed, by both contexts and by a third, fresh one, and a route record names the backend that holds it.
// What is asserted depends only on the order of the calls' start and end times, never on timing itself.
import assert from "node:assert/strict";
import crypto from "node:crypto";
import { after, describe, it } from "node:test";
import { demoBrowser } from "../lib/demo-browser.mjs";
import { EXTENSION_ID, demoScenarioSkipReason } from "../lib/env.mjs";
import { installHost } from "../lib/sandbox.mjs";

const SKIP = demoScenarioSkipReason() ?? false;
const PAGE = `chrome-extension://${EXTENSION_ID}/lib/pages/viewer.html`;
/** Rounds of the race; each writes ten items and ends each session once. */
const ROUNDS = 6;

/**
 * Runs in a context of the extension: this round's part of the race, as a list of calls, each with its start and
 * end on the clock both contexts share (performance.timeOrigin + performance.now()). `who` names the context.
 */
async function race({ who, plan }) {
  const cache = globalThis.routesCache;
  const clock = () => performance.timeOrigin + performance.now();
  const done = [];
  for (const step of plan) {
    const start = clock();
    if (step.op === "write") {
      try {
        await cache.client.write({ sessionId: step.sessionId, data: { who, n: step.description }, description: step.description });
        done.push({ ...step, start, end: clock(), ok: true });
      } catch (error) {
        done.push({ ...step, start, end: clock(), ok: false, error: String(error) });
      }
    } else {
      const outcome = await cache.endSession(step.sessionId);
      done.push({ ...step, start, end: clock(), ok: outcome.status === "ended", error: JSON.stringify(outcome) });
    }
  }
  return done;
}

/** Runs in a context: the descriptions its cache lists for each session, and each session's route record. */
async function listAndRoutes(sessionIds) {
  const cache = globalThis.routesCache;
  const result = {};
  for (const sessionId of sessionIds) {
    const items = (await cache.client.list({ sessionId, limit: 1000 })).items.map((item) => item.description).sort();
    const key = `llmCache.route.${sessionId}`;
    result[sessionId] = { items, route: (await chrome.storage.local.get(key))[key] ?? null };
  }
  return result;
}

describe("routes in Chromium: the worker and a page race writes and endSession", { skip: SKIP, timeout: 120_000 }, () => {
  const s = demoBrowser("routes", { install: installHost });
  const pages = [];
  after(() => Promise.all(pages.map((page) => page.close().catch(() => {}))));

  /** A page of the extension with a cache of its own (its own port to the host, the same storage and locks). */
  const openContext = async () => {
    const page = await s.browser.context.newPage();
    pages.push(page);
    await page.goto(PAGE);
    await page.evaluate(async (url) => {
      globalThis.routesCache = (await import(url)).createLlmCache();
    }, `chrome-extension://${EXTENSION_ID}/lib/index.js`);
    return page;
  };

  it("the worker keeps its first write's hold only until a page reads the session", { timeout: 60_000 }, async () => {
    const page = await openContext();
    const sessionId = `conv_e2e-kept-${crypto.randomBytes(6).toString("hex")}`;
    const idleMs = await page.evaluate(async (url) => (await import(url)).LEASE_IDLE_MS, `chrome-extension://${EXTENSION_ID}/lib/locks.js`);
    // The worker's leases are never let go for being idle here (LEASE_IDLE_MS's timers don't start), so the page's
    // read is answered only if its request for the session's lock asks the worker's exclusive lease to let go.
    const held = await s.browser.run(async ({ sessionId, idleMs }) => {
      const realSetTimeout = globalThis.setTimeout;
      globalThis.restoreSetTimeout = () => (globalThis.setTimeout = realSetTimeout);
      globalThis.setTimeout = (run, ms, ...rest) => (ms === idleMs ? 0 : realSetTimeout(run, ms, ...rest));
      await globalThis.llmCache.client.write({ sessionId, data: "by the worker", description: "kept" });
      const { held } = await navigator.locks.query();
      return held.filter((lock) => lock.name === `llmCache.route.${sessionId}`).map((lock) => lock.mode);
    }, { sessionId, idleMs });
    try {
      assert.deepEqual(held, ["exclusive"], "the worker holds the session's lock exclusively after its first write");
      const listed = await page.evaluate(async (sessionId) => (await globalThis.routesCache.client.list({ sessionId })).items.map((item) => item.description), sessionId);
      assert.deepEqual(listed, ["kept"]);
      const after = await s.browser.run(async (sessionId) => {
        await globalThis.llmCache.client.write({ sessionId, data: "again", description: "after the page's read" });
        const { held } = await navigator.locks.query();
        return held.filter((lock) => lock.name === `llmCache.route.${sessionId}`).map((lock) => lock.mode).sort();
      }, sessionId);
      assert.deepEqual(after, ["shared", "shared"], "then both hold it shared: the worker's next call took a lease beside the page's");
    } finally {
      await s.browser.run(() => globalThis.restoreSetTimeout());
    }
  });

  it("every write acknowledged after a session's last endSession is listed, and has its route", async () => {
    const page = await openContext();
    await s.browser.run(() => {
      globalThis.routesCache = globalThis.llmCache;
    });
    const sessions = [0, 1].map(() => `conv_e2e-routes-${crypto.randomBytes(6).toString("hex")}`);
    const events = [];
    let n = 0;
    const write = (sessionId, who) => ({ op: "write", sessionId, description: `${who} ${n++}` });
    for (let round = 0; round < ROUNDS; round++) {
      const [one, other] = round % 2 === 0 ? sessions : [...sessions].reverse();
      // The worker keeps writing to both sessions while the page ends them, writing before and between the ends.
      const workerPlan = [write(one, "worker"), write(other, "worker"), write(one, "worker"), write(other, "worker"), write(one, "worker"), write(other, "worker")];
      const pagePlan = [write(one, "page"), { op: "end", sessionId: one }, write(other, "page"), { op: "end", sessionId: other }];
      const [fromWorker, fromPage] = await Promise.all([
        s.browser.run(race, { who: "worker", plan: workerPlan }, { what: "the worker's part of the race" }),
        page.evaluate(race, { who: "page", plan: pagePlan }),
      ]);
      events.push(...fromWorker, ...fromPage);
      // Then the worker writes once more to each: on today's routes, a write after the page's end.
      events.push(...(await s.browser.run(race, { who: "worker", plan: [write(one, "worker"), write(other, "worker")] })));
    }
    const failed = events.filter((event) => !event.ok);
    assert.deepEqual(failed, [], "every call succeeds while the host is up");

    const fresh = await openContext();
    const seen = {
      worker: await s.browser.run(listAndRoutes, sessions, { what: "the worker's lists" }),
      page: await page.evaluate(listAndRoutes, sessions),
      fresh: await fresh.evaluate(listAndRoutes, sessions),
    };
    for (const sessionId of sessions) {
      const lastEnd = Math.max(...events.filter((event) => event.op === "end" && event.sessionId === sessionId).map((event) => event.end));
      const mustList = events
        .filter((event) => event.op === "write" && event.sessionId === sessionId && event.start > lastEnd)
        .map((event) => event.description)
        .sort();
      assert.ok(mustList.length >= 1, "the last round's last write comes after the last end");
      for (const [context, lists] of Object.entries(seen)) {
        const { items, route } = lists[sessionId];
        const missing = mustList.filter((description) => !items.includes(description));
        assert.deepEqual(missing, [], `${context} misses writes acknowledged after the last endSession of ${sessionId}`);
        assert.equal(route, "host", `${context}: the session's items are on the host, and its route record says so`);
      }
    }
  });
});
