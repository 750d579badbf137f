// The browserx adapter in a real Chromium: the demo extension's worker holds browserxTools(cache)
// (llmCache.browserx), and each handler is called as browserx's registry calls it. llm_cache goes through the
// real connectNative to the installed host; browser_storage goes to the real chrome.storage areas, so the
// old tool's answers are checked against Chrome's own storage (the shim's replay test uses an in-memory one).
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { launchWithExtension } from "../lib/browser.mjs";
import { DEMO_GLOBAL, checkDemoExtension } from "../lib/demo-agent.mjs";
import { DEMO_EXTENSION_DIR, demoScenarioSkipReason, requireHostAndChromium } from "../lib/env.mjs";

/**
 * An answer of browser_storage with what `get` found taken out of its fence, after checking that it is fenced:
 * its JSON text between `<untrusted-ID>` and `</untrusted-ID>`, since nothing says where a stored value came from.
 */
function unfenced(answer) {
  for (const name of ["value", "values"]) {
    const found = answer.data?.[name];
    if (found === undefined) continue;
    const body = /^<untrusted-([a-z0-9]{8})>(.*)<\/untrusted-\1>$/s.exec(found)?.[2];
    assert.ok(body !== undefined, `get's ${name} is fenced: ${JSON.stringify(answer)}`);
    answer.data[name] = JSON.parse(body);
  }
  return answer;
}
/** The same for an answer as JSON text (JSON.parse keeps a "__proto__" member as an own member). */
const unfencedText = (text) => JSON.stringify(unfenced(JSON.parse(text)));
import { createSandbox, installHost } from "../lib/sandbox.mjs";

const SKIP = demoScenarioSkipReason() ?? false;

/** Calls one handler in the worker as browserx's registry does: { resolved, value } or { resolved: false, error }. */
async function callHandler(browser, tool, parameters) {
  return browser.run(
    async ({ tool, parameters }) => {
      const context = { sessionId: "conv_e2e-browserx", turnId: `turn_${Date.now()}`, toolName: tool, metadata: undefined };
      const pair = tool === "llm_cache" ? globalThis.llmCache.browserx.llmCache : globalThis.llmCache.browserx.browserStorage;
      try {
        return { resolved: true, value: await pair.handler(parameters, context) };
      } catch (e) {
        return { resolved: false, error: `${e?.name}: ${e?.message}` };
      }
    },
    { tool, parameters },
    { what: `${tool} ${parameters.action}` },
  );
}

describe("browserx's tools in Chromium", { skip: SKIP, timeout: 120_000 }, () => {
  const s = {};
  before(async () => {
    requireHostAndChromium();
    checkDemoExtension();
    s.sandbox = createSandbox("browserx");
    installHost(s.sandbox);
    s.browser = await launchWithExtension(s.sandbox, DEMO_EXTENSION_DIR, { globalName: DEMO_GLOBAL });
  });
  after(async () => {
    await s.browser?.close();
    await s.sandbox?.cleanup();
  });

  it("llm_cache resolves with the compact text, and rejects a failure with the next step in its message", async () => {
    const written = await callHandler(s.browser, "llm_cache", {
      action: "write",
      data: '{"from":"ana@example.com","subject":"Q3 budget"}',
      description: "Summary of email 1/1",
    });
    assert.equal(written.resolved, true, written.error);
    const key = /^cached ([a-z0-9]{8}_[a-z0-9]{8}) \|/.exec(written.value)?.[1];
    assert.ok(key, written.value);
    const read = await callHandler(s.browser, "llm_cache", { action: "read", storageKey: key, pointer: "/subject" });
    // The demo reports no context origins, so the model's own items are untrusted and their data fenced.
    assert.match(read.value, /\ndata at \/subject: <untrusted-([a-z0-9]{8})>"Q3 budget"<\/untrusted-\1>$/);
    const missing = await callHandler(s.browser, "llm_cache", { action: "read", storageKey: "aaaaaaaa_bbbbbbbb" });
    assert.equal(missing.resolved, false);
    assert.match(missing.error, /^Error: llm_cache read failed: ItemNotFoundError: .* Next: list the session's items/);
  });

  it("browser_storage answers as the old tool did, on Chrome's own storage areas", async () => {
    const replay = [
      [{ action: "set", storageType: "local", key: "greeting", value: "hello" }, { success: true, data: { success: true } }],
      [{ action: "get", storageType: "local", key: "greeting" }, { success: true, data: { value: "hello" } }],
      [{ action: "set", storageType: "session", key: "greeting", value: "from session" }, { success: true, data: { success: true } }],
      [{ action: "get", storageType: "session", key: "greeting" }, { success: true, data: { value: "from session" } }],
      [{ action: "set", storageType: "sync", data: { theme: "dark" }, options: { namespace: "ui" } }, { success: true, data: { success: true } }],
      [{ action: "get", storageType: "sync", options: { namespace: "ui" } }, { success: true, data: { values: { theme: "dark" } } }],
      [{ action: "keys", storageType: "sync" }, { success: true, data: { keys: ["ui:theme"] } }],
      [{ action: "remove", storageType: "session", keys: ["greeting"] }, { success: true, data: { success: true } }],
      [{ action: "get", storageType: "session", key: "greeting" }, { success: true, data: {} }],
      [
        { action: "set", storageType: "managed", key: "k", value: "v" },
        { success: false, error: "Error: Failed to set storage value: Error: This is a read-only store." },
      ],
      [{ action: "sync", storageType: "sync" }, { success: true, data: { success: true, synced: 1 } }],
    ];
    for (const [request, expected] of replay) {
      const outcome = await callHandler(s.browser, "browser_storage", request);
      assert.equal(outcome.resolved, true, outcome.error);
      // What the LLM reads is the JSON of the answer, so a `value: undefined` is compared as browserx sends it.
      const { metadata, ...answer } = JSON.parse(JSON.stringify(outcome.value));
      assert.deepEqual(unfenced(answer), expected, JSON.stringify(request));
      assert.equal(metadata.toolName, "browser_storage");
    }
    const bytes = await callHandler(s.browser, "browser_storage", { action: "getBytesInUse", storageType: "sync" });
    assert.equal(bytes.value.data.quota.total, 102_400);
    assert.ok(bytes.value.data.bytesInUse > 0, JSON.stringify(bytes.value));
  });

  it("browser_storage and chrome.storage agree that __proto__ and constructor are ordinary keys", async () => {
    // Everything is made and compared inside the worker, and comes back as JSON text: an object whose own
    // member is "__proto__" is exactly what could be lost on the way out through DevTools.
    const seen = await s.browser.run(
      async () => {
        const local = chrome.storage.local;
        const handler = globalThis.llmCache.browserx.browserStorage.handler;
        const context = { sessionId: "conv_e2e-keys", turnId: "turn_1", toolName: "browser_storage" };
        const call = async (json) => JSON.stringify(await handler(JSON.parse(json), context), (k, v) => (k === "duration" ? 0 : v));
        const own = (object) => ["__proto__", "constructor", "toString"].filter((key) => Object.hasOwn(object, key));
        const keys = ["__proto__", "constructor", "toString"];

        // Chrome's own storage, asked directly.
        await local.clear();
        const unsetDirect = await local.get(keys);
        await local.set(Object.fromEntries([["__proto__", "P"], ["constructor", { c: 1 }]]));
        const direct = await local.get(keys);
        const directAll = await local.get(null);

        // The same through the old tool, with the LLM's arguments as parsed JSON.
        await local.clear();
        const unsetLegacy = await call('{"action":"get","storageType":"local","key":"constructor"}');
        const setProto = await call('{"action":"set","storageType":"local","key":"__proto__","value":"P"}');
        const setConstructor = await call('{"action":"set","storageType":"local","data":{"constructor":{"c":1}}}');
        const legacyStored = await local.get(null);
        const legacy = await call('{"action":"get","storageType":"local","keys":["__proto__","constructor","toString"]}');
        const legacyProto = await call('{"action":"get","storageType":"local","key":"__proto__"}');
        const legacyKeys = await call('{"action":"keys","storageType":"local"}');
        await local.clear();
        return {
          unsetDirect: [JSON.stringify(unsetDirect), own(unsetDirect)],
          direct: [JSON.stringify(direct), own(direct), Object.getPrototypeOf(direct) === Object.prototype],
          directAll: JSON.stringify(directAll),
          unsetLegacy,
          setProto,
          setConstructor,
          legacyStored: JSON.stringify(legacyStored),
          legacy,
          legacyProto,
          legacyKeys,
        };
      },
      {},
      { what: "__proto__ and constructor through chrome.storage and browser_storage" },
    );
    const answer = (data) => `{"success":true,"data":${data},"metadata":{"duration":0,"toolName":"browser_storage"}}`;
    // What Chrome does: each is an own member of an ordinary object; a key never set is simply absent.
    assert.deepEqual(seen.unsetDirect, ["{}", []]);
    assert.deepEqual(seen.direct, ['{"__proto__":"P","constructor":{"c":1}}', ["__proto__", "constructor"], true]);
    // And the old tool agrees: it stores what Chrome stores, and reads back what Chrome reads back.
    assert.equal(seen.unsetLegacy, answer("{}"));
    assert.equal(seen.setProto, answer('{"success":true}'));
    assert.equal(seen.setConstructor, answer('{"success":true}'));
    assert.equal(seen.legacyStored, seen.directAll);
    assert.equal(unfencedText(seen.legacy), answer(`{"values":${seen.direct[0]}}`));
    assert.equal(unfencedText(seen.legacyProto), answer('{"value":"P"}'));
    assert.equal(seen.legacyKeys, answer('{"keys":["__proto__","constructor"]}'));
  });

  it("data nested deeper than Chrome can send fails alone, with what to do; the port and its other requests carry on", async () => {
    const outcome = await s.browser.run(
      async () => {
        const cache = globalThis.llmCache;
        const context = { sessionId: "conv_e2e-deep", turnId: "turn_1", toolName: "llm_cache" };
        const call = (parameters) => cache.browserx.llmCache.handler(parameters, context);
        await call({ action: "stats" });
        const hostBefore = cache.client.hostInfo;
        // Chrome's postMessage to a native port can't serialise this ("Could not serialize message.").
        const deep = `${"[".repeat(3000)}"bottom"${"]".repeat(3000)}`;
        const [before, refused, after] = await Promise.allSettled([
          call({ action: "write", data: '["before"]', description: "before" }),
          call({ action: "write", data: deep, description: "deep" }),
          call({ action: "write", data: '["after"]', description: "after" }),
        ]);
        const list = await call({ action: "list" });
        await cache.endSession(context.sessionId);
        return {
          before: before.status,
          refused: refused.status === "rejected" ? refused.reason.message : refused.value,
          after: after.status,
          samePort: cache.client.hostInfo === hostBefore,
          list,
        };
      },
      {},
      { what: "a write nested 3000 deep" },
    );
    assert.equal(outcome.before, "fulfilled");
    assert.match(
      outcome.refused,
      /^llm_cache write failed: InvalidRequestError: the browser couldn't send the request to the native host: Could not serialize message\. Next: send the data less deeply nested/,
    );
    assert.equal(outcome.after, "fulfilled");
    assert.equal(outcome.samePort, true, "the port was kept");
    assert.match(outcome.list, /^2 items,/);
  });

  it("keeps bulk data out of the context: append, search, an offloaded result and a reference, in the worker", async () => {
    const outcome = await s.browser.run(
      async () => {
        const cache = globalThis.llmCache;
        const context = { sessionId: "conv_e2e-flow", turnId: "turn_1", toolName: "llm_cache" };
        const call = (parameters) => cache.browserx.llmCache.handler(parameters, context);
        // Summaries, written and appended in two batches, then found by a word inside them.
        const written = await call({ action: "write", data: '["Ana: Q3 numbers by Friday."]', description: "1 summary" });
        const key = /^cached ([a-z0-9]{8}_[a-z0-9]{8}) \|/.exec(written)[1];
        const appended = await call({ action: "append", storageKey: key, data: '["Bo: the invoice is late."]', description: "2 summaries" });
        const found = await call({ action: "search", query: "invoice" });
        // A 40 KB result from another tool, offloaded; then a document whose body is a reference.
        const readEmail = cache.offloadLargeResults("read_email", async () => ({ body: "x".repeat(40_000) }));
        const shown = await readEmail({ n: 1 }, context);
        const documents = [];
        const writeDoc = cache.withReferences(async (args) => {
          documents.push(args.body);
          return "written";
        });
        await writeDoc({ body: `{{llm_cache:${key}}}` }, context);
        await cache.endSession(context.sessionId);
        return { appended, found, shown, documents };
      },
      {},
      { what: "append, search, offload and reference" },
    );
    // Written before any tool was wrapped, the model's items are from "you, from unknown"; the offloaded result is the tool's.
    assert.match(outcome.appended, /^appended; now [a-z0-9_]+ \| \d+B \| \d+s \| you, from unknown \| "array\[2\] of string" \| "2 summaries"$/);
    assert.match(outcome.found, /^1 match for "invoice" \(key \| from \| pointer \| snippet\):\n[a-z0-9_]+ \| you, from unknown \| "\/1" \| "Bo: the invoice is late\."$/);
    assert.match(outcome.shown, /^read_email's result \(39\.1KB\) was cached instead of shown:\n[a-z0-9_]+ \| 39\.1KB \| \d+s \| tool read_email \| "object\{body\}" \| /);
    assert.ok(Buffer.byteLength(outcome.shown) < 1024, outcome.shown);
    assert.deepEqual(outcome.documents, ["Ana: Q3 numbers by Friday.\n\nBo: the invoice is late."]);
  });
});
