// The mechanics, with stand-ins: a bare connectNative extension (fixtures/stand-in-extension) and a host
// manifest written by hand into the profile. Proves that this Chromium build starts the real host binary from
// <user-data-dir>/NativeMessagingHosts, passes it our environment, carries chunked replies, and what
// chrome.runtime.lastError says when something is wrong.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { launchWithExtension } from "../lib/browser.mjs";
import { launchOverPipe } from "../lib/cdp-pipe.mjs";
import { STAND_IN_EXTENSION_DIR, hostVersion, requireHostAndChromium } from "../lib/env.mjs";
import { createSandbox, hostManifestPath, writeHostManifest } from "../lib/sandbox.mjs";

const MAX_ITEM_BYTES = 5_242_880;
const MAX_REPLY_FRAME_BYTES = 1_048_576;

/** Opens a browser on a fresh profile prepared by `prepare(sandbox)`; closes and removes it afterwards. */
function withStandInBrowser(label, prepare) {
  const state = {};
  before(async () => {
    requireHostAndChromium();
    state.sandbox = createSandbox(label);
    prepare(state.sandbox);
    state.browser = await launchWithExtension(state.sandbox, STAND_IN_EXTENSION_DIR, { globalName: "standIn" });
  });
  after(async () => {
    await state.browser?.close();
    await state.sandbox?.cleanup();
  });
  return state;
}

describe("stand-in extension, host manifest written by hand into the profile", { timeout: 90_000 }, () => {
  const s = withStandInBrowser("standin", (sandbox) => writeHostManifest(sandbox));

  it("connectNative starts the host, which answers hello", async () => {
    const reply = await s.browser.run(() => globalThis.standIn.hello(), undefined, { what: "hello" });
    assert.equal(reply.id, 1);
    assert.equal(reply.ok, true);
    assert.equal(reply.result.protocolVersion, 1);
    assert.equal(reply.result.hostVersion, hostVersion());
    assert.equal(reply.result.limits.maxItemBytes, MAX_ITEM_BYTES);
  });

  it("the host got the browser's environment: its store is in our LLM_CACHE_DIR", () => {
    assert.ok(fs.existsSync(path.join(s.sandbox.dataDir, "store", "data.mdb")), `no store in ${s.sandbox.dataDir}`);
    assert.ok(fs.existsSync(path.join(s.sandbox.dataDir, "logs")));
  });

  it("a 5 MB item goes out in one message and comes back as chunk frames of at most 1 MiB", async (t) => {
    const seen = await s.browser.run(
      async ({ size }) => {
        const data = "x".repeat(size - 2); // dataSize counts the two quotes
        const sessionId = "conv_e2e-standin";
        const written = await globalThis.standIn.exchange([
          { id: "w", op: "write", sessionId, data, description: "5 MB of x" },
        ]);
        if (written.lastError) return { lastError: written.lastError };
        const write = written.replies[0];
        const read = await globalThis.standIn.exchange([
          { id: "r", op: "read", sessionId, storageKey: write.result?.storageKey },
          { id: "e", op: "endSession", sessionId },
        ]);
        const [readReply, endReply] = read.replies;
        return {
          write,
          readFrames: read.frames['"r"'],
          readOk: readReply?.ok,
          readDataSize: readReply?.result?.item?.dataSize,
          sameData: readReply?.result?.item?.data === data,
          end: endReply,
          lastError: read.lastError,
        };
      },
      { size: MAX_ITEM_BYTES },
      { what: "write and read back 5 MB", timeoutMs: 60_000 },
    );
    assert.equal(seen.lastError, null);
    t.diagnostic(`the 5 MB read arrived in ${seen.readFrames} frames`);
    assert.equal(seen.write.ok, true, JSON.stringify(seen.write));
    assert.equal(seen.write.result.dataSize, MAX_ITEM_BYTES);
    assert.equal(seen.readOk, true);
    assert.equal(seen.readDataSize, MAX_ITEM_BYTES);
    assert.equal(seen.sameData, true, "the reassembled data differs from what was written");
    // Chrome would drop the port on a frame over 1 MiB, so 5 MB can only have arrived in several frames.
    assert.ok(seen.readFrames > MAX_ITEM_BYTES / MAX_REPLY_FRAME_BYTES, `only ${seen.readFrames} frames`);
    assert.deepEqual(seen.end.result, { sessionId: "conv_e2e-standin", deletedItems: 1, freedBytes: MAX_ITEM_BYTES });
  });
});

// What chrome.runtime.lastError says in onDisconnect when the host can't be used. The shim's
// StorageUnavailableError carries this text, and `doctor` exists to explain the first one.
const NOT_FOUND = "Specified native messaging host not found.";
const FORBIDDEN = "Access to the specified native messaging host is forbidden.";
const EXITED = "Native host has exited.";
const COMMUNICATION = "Error when communicating with the native messaging host.";
const brokenSetups = [
  { label: "nomanifest", name: "no host manifest in the profile", prepare: () => {}, lastErrors: [NOT_FOUND] },
  {
    label: "badpath",
    name: "the manifest's path does not exist",
    prepare: (sb) => writeHostManifest(sb, { path: "/nonexistent/llm-cache-host" }),
    lastErrors: [NOT_FOUND],
  },
  {
    // Chromium's user-level manifest dir is <user-data-dir>/NativeMessagingHosts: with --user-data-dir, the
    // default profile's ~/.config/chromium/NativeMessagingHosts is not looked at.
    label: "homeonly",
    name: "the manifest only in ~/.config/chromium, the default profile's dir",
    prepare: (sb) => {
      writeHostManifest(sb);
      const dir = path.join(sb.env.XDG_CONFIG_HOME, "chromium", "NativeMessagingHosts");
      fs.mkdirSync(dir, { recursive: true });
      fs.renameSync(hostManifestPath(sb), path.join(dir, path.basename(hostManifestPath(sb))));
    },
    lastErrors: [NOT_FOUND],
  },
  {
    label: "forbidden",
    name: "the manifest does not allow our origin",
    prepare: (sb) => writeHostManifest(sb, { allowed_origins: ["chrome-extension://aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/"] }),
    lastErrors: [FORBIDDEN],
  },
  {
    label: "exits",
    name: "the host exits at once, nothing sent",
    prepare: (sb) => writeHostManifest(sb, { path: "/bin/false" }),
    send: false,
    lastErrors: [EXITED],
  },
  {
    // Which one depends on whether Chrome sees the failed write to the host's stdin or its exit first.
    label: "exits-send",
    name: "the host exits at once, a message sent",
    prepare: (sb) => writeHostManifest(sb, { path: "/bin/false" }),
    lastErrors: [EXITED, COMMUNICATION],
  },
];

for (const setup of brokenSetups) {
  describe(`stand-in extension, ${setup.name}`, { timeout: 60_000 }, () => {
    const s = withStandInBrowser(setup.label, setup.prepare);
    it(`the port drops with lastError ${setup.lastErrors.map((e) => `"${e}"`).join(" or ")}`, async () => {
      const reason = await s.browser.run((opts) => globalThis.standIn.disconnectReason(opts), { send: setup.send ?? true }, {
        what: "connect and wait for the disconnect",
      });
      assert.ok(setup.lastErrors.includes(reason), `lastError was ${JSON.stringify(reason)}`);
      assert.equal(fs.existsSync(s.sandbox.dataDir), false, "no host of ours should have started");
    });
  });
}

describe("without Playwright: the DevTools protocol over --remote-debugging-pipe", { timeout: 60_000 }, () => {
  it("reaches the service worker and gets hello's reply", async () => {
    requireHostAndChromium();
    const sandbox = createSandbox("pipe");
    writeHostManifest(sandbox);
    const browser = await launchOverPipe(sandbox, STAND_IN_EXTENSION_DIR, { globalName: "standIn" });
    try {
      const reply = await browser.evaluate("globalThis.standIn.hello()");
      assert.equal(reply.ok, true);
      assert.equal(reply.result.protocolVersion, 1);
    } finally {
      await browser.close();
      await sandbox.cleanup();
    }
  });
});
