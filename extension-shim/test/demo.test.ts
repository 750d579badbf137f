/**
 * The demo extension: its key gives the fixed id, everything its service worker imports is built, and the
 * service worker works when run with a chrome global that reaches the real host.
 */

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { it } from "node:test";
import { DEMO_EXTENSION_ID } from "../src/demo-extension.js";
import { hostConnector } from "./helpers/chrome-port.js";
import { MemoryStorage } from "./helpers/memory-storage.js";
import { tempDir } from "./helpers/temp.js";

const demo = new URL("../../demo/", import.meta.url);
const manifest = JSON.parse(readFileSync(new URL("manifest.json", demo), "utf8"));

/** Chrome's rule: the first 128 bits of SHA-256 of the public key, each hex digit 0-f written as a-p. */
function extensionIdOf(base64Key: string): string {
  const hex = createHash("sha256").update(Buffer.from(base64Key, "base64")).digest("hex").slice(0, 32);
  return [...hex].map((digit) => String.fromCharCode(97 + parseInt(digit, 16))).join("");
}

it("has a manifest key that gives the fixed extension id, also written in EXTENSION_ID.txt", () => {
  assert.equal(extensionIdOf(manifest.key), DEMO_EXTENSION_ID);
  assert.equal(readFileSync(new URL("EXTENSION_ID.txt", demo), "utf8"), DEMO_EXTENSION_ID);
});

it("is an MV3 extension with nativeMessaging and storage and a module service worker", () => {
  assert.equal(manifest.manifest_version, 3);
  assert.deepEqual(manifest.permissions, ["nativeMessaging", "storage"]);
  assert.deepEqual(manifest.background, { service_worker: "background.js", type: "module" });
});

it("has every module its service worker imports in lib/, and each of those modules' imports", () => {
  const seen = new Set<string>();
  const visit = (file: URL) => {
    if (seen.has(file.href)) return;
    seen.add(file.href);
    assert.ok(existsSync(file), `${file.pathname} is missing; run npm run build`);
    const source = readFileSync(file, "utf8");
    for (const match of source.matchAll(/^(?:import|export)[^;]*? from "(\.[^"]+)";/gms)) {
      visit(new URL(match[1] as string, file));
    }
  };
  visit(new URL(manifest.background.service_worker, demo));
  assert.ok(seen.size > 5, "background.js imports the shim");
});

it("its service worker drives the real host through chrome.runtime.connectNative and chrome.storage.local", async (t) => {
  const dir = tempDir();
  const connect = hostConnector({ dataDir: dir.path });
  const global = globalThis as unknown as { chrome?: unknown; llmCache?: Record<string, any> };
  global.chrome = { runtime: { connectNative: connect }, storage: { local: new MemoryStorage() } };
  t.after(async () => {
    global.llmCache?.client.close();
    await connect.closeAll();
    dir.remove();
    delete global.chrome;
    delete global.llmCache;
  });

  await import(new URL("background.js", demo).href);
  const llmCache = global.llmCache;
  assert.ok(llmCache, "background.js sets globalThis.llmCache");
  assert.equal(llmCache.extensionId, DEMO_EXTENSION_ID);
  assert.equal(llmCache.hostName, "com.browserx.llm_cache");

  const transcript: string = await llmCache.demo("conv_demo-test");
  // The demo reports no context origins, so the model's items are untrusted: from "you, from unknown", quoted and fenced.
  assert.match(transcript, /^cached [a-z0-9]{8}_[a-z0-9]{8} \| \d+B \| \d+s \| you, from unknown \| "object\{from,subject,words\}" \| "Summary of email 1\/3"$/m);
  assert.match(transcript, /^3 items, \d+B in all, newest first/m);
  assert.match(transcript, /^data at \/subject: <untrusted-([a-z0-9]{8})>"Subject 3"<\/untrusted-\1>$/m);
  assert.match(transcript, /"status":"ended","deletedItems":3/);
  assert.equal(await llmCache.tool.execute({ action: "list" }, { sessionId: "conv_demo-test" }), "the cache of this session is empty");
  assert.equal(connect.ports.length, 1, "one port for the whole scenario");
});
