// One demo extension in a fresh Chromium profile per `describe`: the node:test hooks that start it before the
// suite's tests and close it, and remove its temp dir, after them.
import { after, before } from "node:test";
import { launchWithExtension } from "./browser.mjs";
import { DEMO_GLOBAL, checkDemoExtension } from "./demo-agent.mjs";
import { DEMO_EXTENSION_DIR, requireHostAndChromium } from "./env.mjs";
import { createSandbox } from "./sandbox.mjs";

/**
 * A fresh profile with the demo extension running in Chromium. `install(sandbox)`, when given, puts the host
 * into the profile before the browser starts; what it returns is kept as `state.installed`. Returns the state
 * the hooks fill in: `{ sandbox, browser, installed }`.
 */
export function demoBrowser(label, { install } = {}) {
  const state = {};
  before(async () => {
    requireHostAndChromium();
    checkDemoExtension();
    state.sandbox = createSandbox(label);
    if (install) state.installed = install(state.sandbox);
    state.browser = await launchWithExtension(state.sandbox, DEMO_EXTENSION_DIR, { globalName: DEMO_GLOBAL });
  });
  after(async () => {
    await state.browser?.close();
    await state.sandbox?.cleanup();
  });
  return state;
}
