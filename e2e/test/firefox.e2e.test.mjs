// The demo add-on in a real Firefox ESR: the installer's Firefox manifest (allowed_extensions), Firefox's launch
// line (manifest path and add-on id) and its 1 MiB limit on messages from a host, through the same scenario as
// Chromium's: cache summaries, list them, read one field, write and read back a 5 MB item through chunk frames,
// end the session.
import assert from "node:assert/strict";
import crypto from "node:crypto";
import { after, before, describe, it } from "node:test";
import { DEMO_GLOBAL, DemoAgent, checkDemoExtension, keysIn } from "../lib/demo-agent.mjs";
import { demoScenarioSkipReason, requireHostAndChromium } from "../lib/env.mjs";
import { FIREFOX_ADDON_ID, launchFirefoxWithExtension, requireFirefox } from "../lib/firefox.mjs";
import { createSandbox, hostLogs, installHostForFirefox } from "../lib/sandbox.mjs";

const SKIP = demoScenarioSkipReason() ?? false;
const MAX_ITEM_BYTES = 5 * 1024 * 1024;

describe("the demo add-on in Firefox, host installed for Firefox", { skip: SKIP, timeout: 150_000 }, () => {
  const s = {};
  const sessionId = `conv_e2e-firefox-${crypto.randomBytes(4).toString("hex")}`;
  let agent;
  before(async () => {
    requireHostAndChromium();
    requireFirefox();
    checkDemoExtension();
    s.sandbox = createSandbox("firefox");
    s.install = installHostForFirefox(s.sandbox);
    s.browser = await launchFirefoxWithExtension(s.sandbox, { globalName: DEMO_GLOBAL });
    agent = new DemoAgent(s.browser, sessionId);
  });
  after(async () => {
    await s.browser?.close();
    await s.sandbox?.cleanup();
  });
  const keys = [];

  it("was registered with Firefox's manifest: allowed_extensions names the add-on", () => {
    assert.deepEqual(s.install.manifest.allowed_extensions, [FIREFOX_ADDON_ID]);
    assert.equal(s.install.manifest.allowed_origins, undefined);
  });

  it("caches summaries and lists them", async () => {
    for (let i = 0; i < 5; i++) {
      const outcome = await agent.write({ from: `sender${i}@example.com`, subject: `Subject ${i}` }, `Summary of email ${i}/5`);
      assert.equal(outcome.resolved, true, outcome.error);
      const found = keysIn(outcome.text, sessionId);
      assert.equal(found.length, 1, outcome.text);
      keys.push(found[0]);
    }
    const list = await agent.list(10);
    assert.match(list.text, /^5 items, /, list.text);
    assert.deepEqual(new Set(keysIn(list.text, sessionId)), new Set(keys));
    const part = await agent.read(keys[3], "/subject");
    assert.match(part.text, /\ndata at \/subject: <untrusted-([a-z0-9]{8})>"Subject 3"<\/untrusted-\1>$/, part.text);
  });

  it("writes a 5 MB item and reads it back whole, through chunk frames under Firefox's 1 MiB limit", async () => {
    const written = await agent.writeBig("7", MAX_ITEM_BYTES, "5 MB block");
    assert.equal(written.resolved, true, written.error);
    const [key] = keysIn(written.text, sessionId);
    const whole = await agent.readBigWhole(key, "7", MAX_ITEM_BYTES);
    assert.equal(whole.resolved, true, whole.error);
    assert.equal(whole.dataSize, MAX_ITEM_BYTES);
    assert.equal(whole.same, true, "the data read back differs from the data written");
  });

  it("ends the session, and the host was started as Firefox starts it", async () => {
    const ended = await agent.endSession();
    assert.equal(ended.status, "ended", JSON.stringify(ended));
    assert.equal(ended.deletedItems, 6);
    const list = await agent.list(10);
    assert.deepEqual(keysIn(list.text, sessionId), []);
    const text = hostLogs(s.sandbox);
    assert.match(text, new RegExp(`host started origin=moz-extension:${FIREFOX_ADDON_ID.replace(".", "\\.")}`), "the host's origin is Firefox's add-on id");
  });
});

// Firefox's rule makes the name before `@` optional (`@addon-example` is MDN's own example): an add-on with such
// an id is installed for by the installer, started by Firefox, and served.
describe("an add-on whose id has no name before its @, host installed for it", { skip: SKIP, timeout: 90_000 }, () => {
  const addonId = "@llm-cache-e2e";
  const s = {};
  const sessionId = `conv_e2e-firefox-at-${crypto.randomBytes(4).toString("hex")}`;
  before(async () => {
    requireHostAndChromium();
    requireFirefox();
    checkDemoExtension();
    s.sandbox = createSandbox("firefox-at");
    s.install = installHostForFirefox(s.sandbox, [addonId]);
    s.browser = await launchFirefoxWithExtension(s.sandbox, { globalName: DEMO_GLOBAL, addonId });
  });
  after(async () => {
    await s.browser?.close();
    await s.sandbox?.cleanup();
  });

  it("writes and lists through the host Firefox started for it", async () => {
    assert.deepEqual(s.install.manifest.allowed_extensions, [addonId]);
    const agent = new DemoAgent(s.browser, sessionId);
    const outcome = await agent.write({ subject: "at" }, "An item of an add-on named @llm-cache-e2e");
    assert.equal(outcome.resolved, true, outcome.error);
    const [key] = keysIn(outcome.text, sessionId);
    assert.deepEqual(keysIn((await agent.list(10)).text, sessionId), [key]);
    assert.match(hostLogs(s.sandbox), /host started origin=moz-extension:@llm-cache-e2e/, "the host served the add-on's own id");
  });
});
