// One demo extension in a fresh Chromium profile per `describe`: the node:test hooks that start it before the
// suite's tests and close it, and remove its temp dir, after them.
import fs from "node:fs";
import path from "node:path";
import { after, before } from "node:test";
import { launchWithExtension } from "./browser.mjs";
import { DEMO_GLOBAL, checkDemoExtension } from "./demo-agent.mjs";
import { DEMO_EXTENSION_DIR, requireHostAndChromium } from "./env.mjs";
import { createSandbox } from "./sandbox.mjs";

/**
 * A fresh profile with the demo extension running in Chromium. `install(sandbox)`, when given, puts the host
 * into the profile before the browser starts; what it returns is kept as `state.installed`. `pagesConfig`, when
 * given, is the developer's `llm-cache-pages.json` for the shim's pages: the browser then loads a copy of the
 * demo (same key, so the same id) with that file at its root. Returns the state the hooks fill in:
 * `{ sandbox, browser, installed }`.
 */
export function demoBrowser(label, { install, pagesConfig } = {}) {
  const state = {};
  before(async () => {
    requireHostAndChromium();
    checkDemoExtension();
    state.sandbox = createSandbox(label);
    if (install) state.installed = install(state.sandbox);
    let extensionDir = DEMO_EXTENSION_DIR;
    if (pagesConfig) {
      extensionDir = path.join(state.sandbox.root, "extension");
      fs.cpSync(DEMO_EXTENSION_DIR, extensionDir, { recursive: true });
      fs.writeFileSync(path.join(extensionDir, "llm-cache-pages.json"), JSON.stringify(pagesConfig, null, 2));
    }
    state.browser = await launchWithExtension(state.sandbox, extensionDir, { globalName: DEMO_GLOBAL });
  });
  after(async () => {
    await state.browser?.close();
    await state.sandbox?.cleanup();
  });
  return state;
}
