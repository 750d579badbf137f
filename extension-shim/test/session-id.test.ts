/**
 * The sessionId rule at the API: a malformed id from the extension's own code (tool.run's context, endSession,
 * attachToSession, the contexts of wrapped tools) is a TypeError that says the rule, before any request reaches
 * the real host; browserx's own ids (`conv_` + a UUID) and every id the rule allows go through.
 */

import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { describe, it, type TestContext } from "node:test";
import { createLlmCache } from "../src/llm-cache.js";
import { hostConnector, type HostConnector } from "./helpers/chrome-port.js";
import { MemoryStorage } from "./helpers/memory-storage.js";
import { tempDir } from "./helpers/temp.js";

/** What the TypeError must say: the rule, where it is written, and the id it was given. */
const RULE = /must be a session id, `conv_` then 1 to 64 of \[A-Za-z0-9-\] \(PROTOCOL\.md 5\.1\)/;

/** Ids the rule refuses, with what the error shows of each. */
const MALFORMED: Array<[unknown, string]> = [
  ["conv_mail_1", '"conv_mail_1"'],
  ["mail-1", '"mail-1"'],
  ["conv_", '"conv_"'],
  [`conv_${"a".repeat(65)}`, `"conv_${"a".repeat(65)}"`],
  [`conv_${"a".repeat(100)}`, `"conv_${"a".repeat(75)}"…`],
  ["conv_é", '"conv_é"'],
  [undefined, "undefined"],
  [42, "number"],
];

/** A cache on a real host in a temporary store, with a count of the requests every host process was sent. */
async function cacheOnHost(t: TestContext) {
  const dir = tempDir();
  const connect: HostConnector = hostConnector({ dataDir: dir.path });
  const storage = new MemoryStorage();
  const cache = createLlmCache({ storage, connect, fallback: false });
  t.after(async () => {
    cache.client.close();
    await connect.closeAll();
    dir.remove();
  });
  // The first connection's own requests (hello, route pruning) are made before counting starts.
  assert.equal((await cache.status()).backend, "host");
  const sent = () => connect.ports.flatMap((port) => port.log.filter((entry) => entry.startsWith(">"))).length;
  return { cache, storage, sent };
}

describe("a malformed sessionId from the extension's code", () => {
  it("is a TypeError from tool.run and tool.execute that says the rule and shows the id, and sends nothing", async (t) => {
    const { cache, storage, sent } = await cacheOnHost(t);
    const before = sent();
    const routes = storage.items.size;
    for (const [sessionId, shown] of MALFORMED) {
      const context = { sessionId } as { sessionId: string };
      for (const call of [() => cache.tool.run({ action: "list" }, context), () => cache.tool.execute({ action: "list" }, context)]) {
        await assert.rejects(call, (error: unknown) => {
          assert.ok(error instanceof TypeError, String(error));
          assert.match(error.message, /^llm_cache tool\.run: context\.sessionId /);
          assert.match(error.message, RULE);
          assert.ok(error.message.includes(`but is ${shown};`), error.message);
          return true;
        });
      }
    }
    assert.equal(sent(), before, "a request went out for a malformed sessionId");
    assert.equal(storage.items.size, routes, "a route was recorded for a malformed sessionId");

    // The same calls with a well-formed id do reach the host, so the count above could have moved.
    assert.equal((await cache.tool.run({ action: "write", data: "{}", description: "d" }, { sessionId: "conv_mail-1" })).ok, true);
    assert.ok(sent() > before);
  });

  it("is a TypeError from endSession, sending nothing and remembering nothing", async (t) => {
    const { cache, storage, sent } = await cacheOnHost(t);
    const before = sent();
    const records = storage.items.size;
    for (const [sessionId] of MALFORMED) {
      await assert.rejects(cache.endSession(sessionId as string), (error: unknown) => error instanceof TypeError && /^endSession: sessionId /.test(error.message) && RULE.test(error.message));
    }
    assert.equal(sent(), before);
    assert.equal(storage.items.size, records);
  });

  it("is a TypeError from attachToSession, which then wraps nothing", async (t) => {
    const { cache } = await cacheOnHost(t);
    const reset = () => undefined;
    const session = { conversationId: "conv_mail_1", reset, close: reset };
    assert.throws(() => cache.attachToSession(session), (error: unknown) => error instanceof TypeError && RULE.test(error.message) && error.message.includes('"conv_mail_1"'));
    assert.equal(session.reset, reset);
  });

  it("never breaks reset() of a class attachToSessionClass wrapped: a malformed id has nothing to end", async (t) => {
    // The wrapper sends no endSession for a malformed id; one that rejected with the TypeError would be an
    // unhandled rejection, which fails this file's run.
    const { cache } = await cacheOnHost(t);
    class Session {
      conversationId = "conv_mail_1";
      resets = 0;
      reset() {
        this.resets += 1;
      }
      close() {}
    }
    const detach = cache.attachToSessionClass(Session);
    t.after(detach);
    const session = new Session();
    session.reset();
    assert.equal(session.resets, 1);
  });

  it("is a TypeError from the wrapped tools of offloadLargeResults and withReferences, before their handler runs", async (t) => {
    const { cache, sent } = await cacheOnHost(t);
    const before = sent();
    let ran = 0;
    const handler = async () => {
      ran += 1;
      return "x".repeat(20_000);
    };
    const wrapped = [cache.offloadLargeResults("list_emails", handler), cache.withReferences(handler)];
    for (const tool of wrapped) {
      await assert.rejects(tool({}, { sessionId: "conv_mail_1" }), (error: unknown) => error instanceof TypeError && RULE.test(error.message));
    }
    await assert.rejects(cache.resolveReferences({}, { sessionId: "mail" }), TypeError);
    assert.equal(ran, 0);
    assert.equal(sent(), before);
  });
});

describe("a well-formed sessionId", () => {
  it("goes through, including browserx's conv_ + UUID and the longest the rule allows", async (t) => {
    const { cache } = await cacheOnHost(t);
    for (const sessionId of [`conv_${randomUUID()}`, `conv_${"A".repeat(64)}`, "conv_a", "conv_-"]) {
      const outcome = await cache.tool.run({ action: "write", data: '{"n":1}', description: "one" }, { sessionId });
      assert.equal(outcome.ok, true, outcome.text);
      assert.equal((await cache.endSession(sessionId)).status, "ended");
    }
  });
});
