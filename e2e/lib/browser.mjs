// Starts Debian's Chromium with one unpacked extension through playwright-core (which drives it over
// --remote-debugging-pipe), and runs functions in the extension's service worker.
import { chromium } from "playwright-core";
import { CHROMIUM, EXTENSION_ID } from "./env.mjs";
import { withTimeout } from "./timeout.mjs";
import { whenGlobalDefined } from "./worker-ready.mjs";

const LAUNCH_TIMEOUT_MS = 30_000;
const WORKER_TIMEOUT_MS = 15_000;

/** The command-line switches this harness adds to Playwright's own (see README.md, "What works"). */
export function chromiumArgs(extensionDir) {
  return [
    "--no-sandbox", // we run as root, where Chromium refuses to start with its sandbox
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    `--disable-extensions-except=${extensionDir}`,
    `--load-extension=${extensionDir}`,
  ];
}

/**
 * @typedef {object} Browser
 * @property {import('playwright-core').BrowserContext} context
 * @property {import('playwright-core').Worker} worker  the extension's service worker
 * @property {(fn: Function, arg?: unknown, opts?: {timeoutMs?: number, what?: string}) => Promise<any>} run
 *   evaluates `fn(arg)` in the service worker; awaits a returned promise; fails after timeoutMs
 * @property {() => Promise<void>} close
 */

/**
 * Launches headless Chromium on `sandbox.profile` with `extensionDir` loaded, and waits for that extension's
 * service worker to have run its script and defined `globalThis[globalName]`. The browser, and every native
 * host it starts, gets `sandbox.env`.
 * @returns {Promise<Browser>}
 */
export async function launchWithExtension(sandbox, extensionDir, { globalName, extensionId = EXTENSION_ID }) {
  const context = await chromium.launchPersistentContext(sandbox.profile, {
    executablePath: CHROMIUM,
    headless: true, // Playwright adds --headless: the new headless mode, the only one in this binary
    args: chromiumArgs(extensionDir),
    // Playwright's defaults include --disable-extensions; --disable-extensions-except wins over it in this
    // build, but don't rely on that.
    ignoreDefaultArgs: ["--disable-extensions"],
    env: sandbox.env,
    timeout: LAUNCH_TIMEOUT_MS,
  });
  try {
    const worker = await extensionServiceWorker(context, extensionId);
    try {
      await withTimeout(
        worker.evaluate(whenGlobalDefined, globalName),
        WORKER_TIMEOUT_MS,
        `the service worker's script defining globalThis.${globalName}`,
      );
    } catch (e) {
      if (!/closed/.test(e.message)) throw e;
      throw new Error(
        `the service worker ${worker.url()} went away before defining globalThis.${globalName}: its script ` +
          `threw or failed to import a module (${e.message})`,
      );
    }
    return {
      context,
      worker,
      run(fn, arg, { timeoutMs = 20_000, what = fn.name || "service worker function" } = {}) {
        return withTimeout(worker.evaluate(fn, arg), timeoutMs, `${what} (in the service worker)`);
      },
      close: () => withTimeout(context.close(), 20_000, "closing Chromium"),
    };
  } catch (e) {
    await context.close().catch(() => {});
    throw e;
  }
}

/** The service worker of `extensionId`: already running, or the next one to start. */
async function extensionServiceWorker(context, extensionId) {
  const prefix = `chrome-extension://${extensionId}/`;
  // Listen before looking, so a worker that starts in between is not missed.
  const next = context.waitForEvent("serviceworker", {
    predicate: (w) => w.url().startsWith(prefix),
    timeout: WORKER_TIMEOUT_MS,
  });
  next.catch(() => {});
  const running = context.serviceWorkers().find((w) => w.url().startsWith(prefix));
  if (running) return running;
  try {
    return await next;
  } catch (e) {
    const seen = context.serviceWorkers().map((w) => w.url());
    throw new Error(
      `no service worker of ${prefix} within ${WORKER_TIMEOUT_MS} ms (workers seen: ${seen.join(", ") || "none"}); ` +
        `is the extension's manifest valid and is its key the fixed one? (${e.message})`,
    );
  }
}
