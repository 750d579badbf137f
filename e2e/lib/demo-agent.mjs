// The scenario's vocabulary, mapped onto the demo extension's service worker. Everything the e2e test assumes
// about the shim's API is in this file, so that a change in the shim means adjusting here, not in the test.
//
// What it relies on (extension-shim/src: llm-cache.ts, storage-tool.ts, client.ts, session.ts, keys.ts):
//   globalThis.llmCache = { client, tool, endSession, ... }         set by demo/background.js
//   await llmCache.tool.execute(args, { sessionId })  -> string     never rejects: failures come back as text
//     args = { action: "write", data, description } | { action: "read", storageKey, pointer? }
//          | { action: "list", limit?, cursor? } | { action: "update", storageKey, data?, description? }
//          | { action: "delete", storageKey } | { action: "stats" }
//     Items are shown as `key | size | age | description`, the key either whole (`conv_…_taskid_turnid`) or
//     short (`taskid_turnid`, the session left out); the tool takes either form back. A read returns at most
//     256 KB of data; a bigger value is described instead.
//   await llmCache.client.read({ sessionId, storageKey }) -> CachedItem, whole, reassembled from chunk frames
//   await llmCache.endSession(sessionId) -> { status: "ended", deletedItems, freedBytes }
//                                         | { status: "pending", reason } | { status: "failed", error }
import fs from "node:fs";
import path from "node:path";
import { DEMO_EXTENSION_DIR, STAND_IN_EXTENSION_DIR } from "./env.mjs";

/** The global the demo's service worker defines. */
export const DEMO_GLOBAL = "llmCache";

const BUILD_HINT = "build the shim first: cd extension-shim && npm ci && npm run build (it fills demo/lib/)";

/**
 * Throws, saying what to do, if the demo extension is there but can't load: unbuilt (a module its service
 * worker imports is missing; Chrome would only say the worker failed to register), another key, or a
 * missing permission.
 */
export function checkDemoExtension() {
  const manifest = JSON.parse(fs.readFileSync(path.join(DEMO_EXTENSION_DIR, "manifest.json"), "utf8"));
  const worker = manifest.background?.service_worker;
  const workerFile = worker && path.join(DEMO_EXTENSION_DIR, worker);
  if (!workerFile || !fs.existsSync(workerFile)) {
    throw new Error(`${DEMO_EXTENSION_DIR}/manifest.json names the service worker ${JSON.stringify(worker)}, which is missing`);
  }
  const source = fs.readFileSync(workerFile, "utf8");
  for (const [, specifier] of source.matchAll(/^\s*import\b[^"']*["'](\.{1,2}\/[^"']+)["']/gm)) {
    const imported = path.resolve(path.dirname(workerFile), specifier);
    if (!fs.existsSync(imported)) throw new Error(`${workerFile} imports ${specifier}, which is missing: ${BUILD_HINT}`);
  }
  const standIn = JSON.parse(fs.readFileSync(path.join(STAND_IN_EXTENSION_DIR, "manifest.json"), "utf8"));
  if (manifest.key !== standIn.key) {
    throw new Error("the demo's manifest key is not the fixed one (the stand-in's): its extension id would differ");
  }
  for (const permission of ["nativeMessaging", "storage"]) {
    if (!manifest.permissions?.includes(permission)) throw new Error(`the demo's manifest lacks the ${permission} permission`);
  }
}

/**
 * The storage keys of `sessionId` that a tool's text names, whole or short, each returned whole
 * (`{sessionId}_{taskId}_{turnId}`), in order of first mention.
 */
export function keysIn(text, sessionId) {
  // A sessionId is `conv_` + [A-Za-z0-9-]: nothing in it is special in a RegExp.
  const pattern = new RegExp(`(?<![A-Za-z0-9_-])(?:${sessionId}_)?([a-z0-9]{8}_[a-z0-9]{8})(?![A-Za-z0-9_-])`, "g");
  return [...new Set([...text.matchAll(pattern)].map((m) => `${sessionId}_${m[1]}`))];
}

/**
 * One agent session in the demo's service worker. Tool calls return what the extension received:
 * { resolved: true, text } when execute resolved with a string, otherwise { resolved: false, error }
 * (the tool must never throw). Big data is made and compared inside the worker, never sent over DevTools.
 */
export class DemoAgent {
  constructor(browser, sessionId) {
    this.browser = browser;
    this.sessionId = sessionId;
  }

  /** llmCache.tool.execute(args, { sessionId }): the text the LLM would see. */
  execute(args, { timeoutMs = 30_000 } = {}) {
    return this.browser.run(executeInWorker, { args, context: { sessionId: this.sessionId } }, {
      timeoutMs,
      what: `llmCache.tool.execute({ action: ${JSON.stringify(args.action)} })`,
    });
  }

  write(data, description) {
    return this.execute({ action: "write", data, description });
  }

  read(storageKey, pointer) {
    return this.execute(pointer === undefined ? { action: "read", storageKey } : { action: "read", storageKey, pointer });
  }

  list(limit) {
    return this.execute({ action: "list", limit });
  }

  update(storageKey, changes) {
    return this.execute({ action: "update", storageKey, ...changes });
  }

  stats() {
    return this.execute({ action: "stats" });
  }

  /** Writes, through the tool, a string of `dataSize - 2` copies of `fill` (its JSON is `dataSize` bytes). */
  writeBig(fill, dataSize, description) {
    return this.browser.run(
      executeInWorker,
      { args: { action: "write", description }, bigData: { fill, dataSize }, context: { sessionId: this.sessionId } },
      { timeoutMs: 60_000, what: `tool write of ${dataSize} bytes` },
    );
  }

  /**
   * Reads `storageKey` whole through llmCache.client.read (the tool itself returns at most 256 KB) and compares
   * it, in the worker, with what writeBig(fill, dataSize) wrote. Returns { resolved, dataSize, same } or
   * { resolved: false, error }.
   */
  readBigWhole(storageKey, fill, dataSize, { compression = false } = {}) {
    return this.browser.run(
      async ({ sessionId, storageKey, fill, dataSize, compression }) => {
        // Without compression the reply crosses as chunk frames of at most 1 MiB; with it, as one gzip envelope.
        const cache = globalThis.llmCache.createLlmCache({ compression, idleCloseMs: 0 });
        try {
          const item = await cache.client.read({ sessionId, storageKey });
          return { resolved: true, dataSize: item.dataSize, same: item.data === fill.repeat(dataSize - 2), gzip: cache.client.hostInfo?.encoding === "gzip" };
        } catch (e) {
          return { resolved: false, error: `${e?.name}: ${e?.message}` };
        } finally {
          cache.client.close();
        }
      },
      { sessionId: this.sessionId, storageKey, fill, dataSize, compression },
      { timeoutMs: 60_000, what: `llmCache.client.read of ${dataSize} bytes${compression ? ", gzip" : ""}` },
    );
  }

  /** llmCache.demo(sessionId), the scenario a person runs from the console: { resolved, text } or { resolved: false, error }. */
  demo() {
    return this.browser.run(
      async (sessionId) => {
        try {
          return { resolved: true, text: await globalThis.llmCache.demo(sessionId) };
        } catch (e) {
          return { resolved: false, error: `${e?.name}: ${e?.message}` };
        }
      },
      this.sessionId,
      { timeoutMs: 30_000, what: "llmCache.demo()" },
    );
  }

  /** llmCache.endSession(sessionId): its outcome ({ status, ... }), or { status: "threw", error }. */
  endSession() {
    return this.browser.run(
      async (sessionId) => {
        try {
          const outcome = await globalThis.llmCache.endSession(sessionId);
          return { ...outcome, error: outcome?.error ? `${outcome.error.name}: ${outcome.error.message}` : undefined };
        } catch (e) {
          return { status: "threw", error: `${e?.name}: ${e?.message}` };
        }
      },
      this.sessionId,
      { what: "llmCache.endSession" },
    );
  }
}

// Runs in the service worker: Playwright sends its source, so it must not use anything from this module.
async function executeInWorker({ args, context, bigData }) {
  const data = bigData ? bigData.fill.repeat(bigData.dataSize - 2) : undefined;
  let result;
  try {
    result = await globalThis.llmCache.tool.execute(data === undefined ? args : { ...args, data }, context);
  } catch (e) {
    return { resolved: false, error: `execute threw ${e?.name}: ${e?.message}` };
  }
  if (typeof result !== "string") return { resolved: false, error: `execute resolved with a ${typeof result}, not text` };
  return { resolved: true, text: result };
}
