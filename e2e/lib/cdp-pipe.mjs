// The fallback without Playwright: Chromium's DevTools protocol over --remote-debugging-pipe. Chromium reads
// NUL-terminated JSON commands on fd 3 and writes NUL-terminated JSON replies and events on fd 4.
import { spawn } from "node:child_process";
import { CHROMIUM, EXTENSION_ID } from "./env.mjs";
import { chromiumArgs } from "./browser.mjs";
import { withTimeout } from "./timeout.mjs";
import { whenGlobalDefined } from "./worker-ready.mjs";

/**
 * Starts headless Chromium with `extensionDir` loaded, attaches to the extension's service worker and waits
 * until its script has defined `globalThis[globalName]`.
 * Returns { evaluate(expression) -> value (awaits promises), command(method, params) -> result (in the worker's
 * session), close() }.
 */
export async function launchOverPipe(sandbox, extensionDir, { globalName, extensionId = EXTENSION_ID, timeoutMs = 30_000 }) {
  const proc = spawn(
    CHROMIUM,
    ["--headless", ...chromiumArgs(extensionDir), `--user-data-dir=${sandbox.profile}`, "--remote-debugging-pipe", "about:blank"],
    { env: sandbox.env, stdio: ["ignore", "ignore", "pipe", "pipe", "pipe"] },
  );
  let stderr = "";
  proc.stderr.on("data", (d) => {
    stderr = (stderr + d).slice(-4000);
  });
  const exited = new Promise((resolve) => proc.once("exit", (code, signal) => resolve({ code, signal })));

  const toBrowser = proc.stdio[3];
  const fromBrowser = proc.stdio[4];
  const pending = new Map();
  const eventListeners = new Set();
  let nextId = 1;
  let buffer = "";
  fromBrowser.on("data", (data) => {
    buffer += data.toString("utf8");
    for (let end = buffer.indexOf("\0"); end >= 0; end = buffer.indexOf("\0")) {
      const message = JSON.parse(buffer.slice(0, end));
      buffer = buffer.slice(end + 1);
      const waiter = message.id !== undefined && pending.get(message.id);
      if (waiter) {
        pending.delete(message.id);
        if (message.error) waiter.reject(new Error(`${waiter.method}: ${message.error.message}`));
        else waiter.resolve(message.result);
      } else {
        for (const listener of eventListeners) listener(message);
      }
    }
  });
  exited.then(({ code, signal }) => {
    for (const waiter of pending.values()) {
      waiter.reject(new Error(`Chromium exited (${code ?? signal}) before answering ${waiter.method}:\n${stderr}`));
    }
    pending.clear();
  });

  const send = (method, params = {}, sessionId = undefined) =>
    new Promise((resolve, reject) => {
      const id = nextId++;
      pending.set(id, { resolve, reject, method });
      toBrowser.write(`${JSON.stringify({ id, method, params, sessionId })}\0`);
    });

  const close = async () => {
    if (proc.exitCode === null && proc.signalCode === null) {
      send("Browser.close").catch(() => {});
      try {
        await withTimeout(exited, 10_000, "Chromium exiting after Browser.close");
      } catch {
        proc.kill("SIGKILL");
        await exited;
      }
    }
  };

  try {
    const prefix = `chrome-extension://${extensionId}/`;
    const workerTarget = new Promise((resolve) => {
      eventListeners.add((m) => {
        const info = m.method === "Target.targetCreated" && m.params.targetInfo;
        if (info && info.type === "service_worker" && info.url.startsWith(prefix)) resolve(info);
      });
    });
    await withTimeout(send("Target.setDiscoverTargets", { discover: true }), timeoutMs, "Target.setDiscoverTargets");
    const target = await withTimeout(workerTarget, timeoutMs, `the service worker of ${prefix}`);
    const { sessionId } = await withTimeout(
      send("Target.attachToTarget", { targetId: target.targetId, flatten: true }),
      timeoutMs,
      "Target.attachToTarget",
    );
    const evaluate = async (expression, { timeoutMs: ms = 20_000, what = expression } = {}) => {
      const reply = await withTimeout(
        send("Runtime.evaluate", { expression, awaitPromise: true, returnByValue: true }, sessionId),
        ms,
        `${what} (in the service worker)`,
      );
      if (reply.exceptionDetails) {
        throw new Error(reply.exceptionDetails.exception?.description ?? reply.exceptionDetails.text);
      }
      return reply.result.value;
    };
    // Any other command of the protocol, sent to the service worker's session (the profiler's Profiler.*).
    const command = (method, params = {}, { timeoutMs: ms = 20_000 } = {}) => withTimeout(send(method, params, sessionId), ms, method);
    await evaluate(`(${whenGlobalDefined})(${JSON.stringify(globalName)})`, {
      timeoutMs,
      what: `the service worker's script defining globalThis.${globalName}`,
    });
    return { evaluate, command, close };
  } catch (e) {
    await close();
    throw e;
  }
}
