// Starts Debian's Firefox ESR headless with the demo extension installed as a temporary add-on, over WebDriver
// BiDi (no geckodriver): Firefox listens on --remote-debugging-port, `session.new` opens a session and
// `webExtension.install` loads the unpacked add-on. BiDi doesn't reach an add-on's background, so the harness
// adds one page to its copy of the add-on, opened by the background, and runs functions in that page: the same
// shim, the same `llmCache` global, the same `chrome.runtime.connectNative` to the host Firefox starts.
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import WebSocket from "ws";
import { DEMO_EXTENSION_DIR } from "./env.mjs";
import { withTimeout } from "./timeout.mjs";

/** Debian's Firefox ESR (override: FIREFOX_PATH). */
export const FIREFOX = process.env.FIREFOX_PATH || "/usr/bin/firefox-esr";

/** The demo's add-on id, from its manifest.firefox.json; the installer allows it by default. */
export const FIREFOX_ADDON_ID = "llm-cache-demo@browserx.dev";

/** Fixed through the profile's extensions.webextensions.uuids, so the page's URL is known in advance. */
const ADDON_UUID = "8f2c6d7e-1b3a-4c5d-9e8f-0a1b2c3d4e5f";
const PAGE = "e2e.html";
const LAUNCH_TIMEOUT_MS = 30_000;

/** Throws, with what to do, when Firefox is missing. */
export function requireFirefox() {
  if (!fs.existsSync(FIREFOX)) throw new Error(`${FIREFOX} is missing: apt-get install -y firefox-esr (or set FIREFOX_PATH)`);
}

/**
 * The demo packaged for Firefox in `dir`: the built demo with manifest.firefox.json as its manifest, plus the
 * harness's page (which loads background.js as a module, so it defines the same global) and a background
 * script that opens it; its add-on id is the demo's unless `addonId` says otherwise.
 */
export function firefoxExtension(dir, addonId = FIREFOX_ADDON_ID) {
  fs.cpSync(DEMO_EXTENSION_DIR, dir, { recursive: true });
  const manifest = JSON.parse(fs.readFileSync(path.join(dir, "manifest.firefox.json"), "utf8"));
  manifest.browser_specific_settings.gecko.id = addonId;
  manifest.background.scripts.push("e2e-open-page.js");
  fs.writeFileSync(path.join(dir, "manifest.json"), JSON.stringify(manifest, null, 2));
  fs.writeFileSync(path.join(dir, PAGE), '<!doctype html><meta charset="utf-8"><script type="module" src="background.js"></script>\n');
  fs.writeFileSync(path.join(dir, "e2e-open-page.js"), `browser.tabs.create({ url: browser.runtime.getURL(${JSON.stringify(PAGE)}) });\n`);
  return dir;
}

/** A WebDriver BiDi connection: commands answered by id, events handed to listeners. */
class Bidi {
  constructor(ws) {
    this.ws = ws;
    this.nextId = 1;
    this.pending = new Map();
    this.listeners = new Set();
    ws.on("message", (data) => {
      const message = JSON.parse(data.toString());
      if (message.id !== undefined && this.pending.has(message.id)) {
        const { resolve, reject, method } = this.pending.get(message.id);
        this.pending.delete(message.id);
        if (message.type === "error") reject(new Error(`${method}: ${message.error}: ${message.message}`));
        else resolve(message.result);
      } else if (message.type === "event") {
        for (const listener of this.listeners) listener(message);
      }
    });
    ws.on("close", () => {
      for (const { reject, method } of this.pending.values()) reject(new Error(`${method}: the BiDi connection closed`));
      this.pending.clear();
    });
  }

  send(method, params, timeoutMs = 20_000) {
    const id = this.nextId++;
    const answer = new Promise((resolve, reject) => this.pending.set(id, { resolve, reject, method }));
    this.ws.send(JSON.stringify({ id, method, params }));
    return withTimeout(answer, timeoutMs, method);
  }

  /** The first event of `method` for which `accept` holds. */
  event(method, accept, timeoutMs, what) {
    let listener;
    const seen = new Promise((resolve) => {
      listener = (message) => {
        if (message.method === method && accept(message.params)) resolve(message.params);
      };
      this.listeners.add(listener);
    });
    return withTimeout(seen, timeoutMs, what).finally(() => this.listeners.delete(listener));
  }
}

/** Starts Firefox and reads the BiDi address it prints on stderr. */
async function startFirefox(sandbox, profile) {
  const firefox = spawn(FIREFOX, ["--headless", "--no-remote", "--profile", profile, "--remote-debugging-port", "0"], {
    env: { ...sandbox.env, MOZ_CRASHREPORTER_DISABLE: "1" },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let log = "";
  const address = new Promise((resolve, reject) => {
    firefox.stderr.on("data", (chunk) => {
      log += chunk;
      const match = /WebDriver BiDi listening on (ws:\/\/\S+)/.exec(log);
      if (match) resolve(match[1]);
    });
    firefox.on("exit", (code) => reject(new Error(`Firefox exited (${code}) before listening:\n${log}`)));
  });
  try {
    return { firefox, address: await withTimeout(address, LAUNCH_TIMEOUT_MS, "Firefox's WebDriver BiDi address") };
  } catch (e) {
    firefox.kill("SIGKILL");
    throw e;
  }
}

/**
 * Launches headless Firefox ESR on a fresh profile in the sandbox, installs the demo add-on (with the id
 * `addonId`, the demo's by default) and waits for its
 * page to load (its module has then run and defined `globalThis[globalName]`). Firefox, and every native host
 * it starts, gets `sandbox.env`. The result has the Chromium harness's shape: `run(fn, arg)` and `close()`.
 */
export async function launchFirefoxWithExtension(sandbox, { globalName, addonId = FIREFOX_ADDON_ID }) {
  const profile = path.join(sandbox.root, "firefox-profile");
  fs.mkdirSync(profile, { recursive: true });
  const uuids = JSON.stringify({ [addonId]: ADDON_UUID });
  fs.writeFileSync(path.join(profile, "user.js"), `user_pref("extensions.webextensions.uuids", ${JSON.stringify(uuids)});\n`);
  const extension = firefoxExtension(path.join(sandbox.root, "firefox-addon"), addonId);

  const { firefox, address } = await startFirefox(sandbox, profile);
  const exited = new Promise((resolve) => firefox.on("exit", resolve));
  try {
    // Firefox refuses a WebSocket handshake that carries an Origin header; `ws` sends none.
    const ws = new WebSocket(`${address}/session`);
    await withTimeout(new Promise((resolve, reject) => ws.once("open", resolve).once("error", reject)), 10_000, "the BiDi WebSocket");
    const bidi = new Bidi(ws);
    await bidi.send("session.new", { capabilities: {} });
    // Firefox reports an add-on page's navigation but no load event for it: wait for the commit, then, in
    // the page, for its load (module scripts have run by then).
    await bidi.send("session.subscribe", { events: ["browsingContext.navigationCommitted"] });
    const url = `moz-extension://${ADDON_UUID}/${PAGE}`;
    const committed = bidi.event("browsingContext.navigationCommitted", (params) => params.url === url, 20_000, `the add-on's page ${url}`);
    await bidi.send("webExtension.install", { extensionData: { type: "path", path: extension } });
    const { context } = await committed;
    const defined = await bidi.send("script.evaluate", {
      expression:
        "new Promise((resolve) => document.readyState === 'complete' ? resolve() : addEventListener('load', () => resolve()))" +
        `.then(() => typeof globalThis[${JSON.stringify(globalName)}])`,
      target: { context },
      awaitPromise: true,
    });
    if (defined.result?.value !== "object") {
      throw new Error(`the add-on's page loaded, but its script did not define globalThis.${globalName} (${JSON.stringify(defined)})`);
    }
    return {
      /** Evaluates `fn(arg)` in the add-on's page and returns its result (JSON values only). */
      async run(fn, arg, { timeoutMs = 20_000, what = fn.name || "add-on function" } = {}) {
        const expression = `(async () => JSON.stringify(await (${fn.toString()})(${JSON.stringify(arg)})))()`;
        const answer = await bidi.send("script.evaluate", { expression, target: { context }, awaitPromise: true }, timeoutMs);
        if (answer.type === "exception") throw new Error(`${what} (in Firefox) threw: ${answer.exceptionDetails?.text}`);
        return answer.result?.type === "string" ? JSON.parse(answer.result.value) : undefined;
      },
      async close() {
        await bidi.send("session.end", {}).catch(() => {});
        ws.close();
        firefox.kill("SIGTERM");
        await withTimeout(exited, 20_000, "closing Firefox");
      },
    };
  } catch (e) {
    firefox.kill("SIGKILL");
    throw e;
  }
}
