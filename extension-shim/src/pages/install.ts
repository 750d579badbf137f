/**
 * The install page (install.html): which backend serves this extension's cache, the host's version or why the
 * host isn't used (`cache.status()`), and, for the user's OS, the commands that install the host for this
 * extension, with its id filled in. When the user comes back to the page (after running them in a terminal,
 * say), it asks the host again over a new port: `status({ recheck: true })`.
 *
 * install.html loads this module, which mounts the page on its `#llm-cache-install` element. An extension that
 * wants the page inside its own UI calls `mountInstallPage` with its own element and cache.
 */

import { createLlmCache, type LlmCache } from "../llm-cache.js";
import type { CacheStatus } from "../status.js";
import { button, el, errorLine, localTime, show } from "./dom.js";
import { browserOf, hostCommand } from "../install-command.js";
import { NATIVE_HOST_NAME } from "../protocol.js";
import { installWays, osName, type BrowserFamily, type InstallWay } from "./install-steps.js";

export interface InstallPageOptions {
  /** The cache whose status is shown; a `createLlmCache({ hostName })` of the page's own by default. */
  cache?: LlmCache;
  /**
   * The native host the extension connects to, as it passes `hostName` to `createLlmCache`
   * (`com.browserx.llm_cache` by default): the page's cache connects to it, and the install commands name its
   * release files, its command and `--host-name`. With `cache` given, the name its status reports is used.
   */
  hostName?: string;
  /** Where the "cache viewer" link goes; the viewer page beside this one by default. */
  viewerUrl?: string;
}

/** What the page knows of the browser it runs in. */
interface Environment {
  extensionId: string;
  os: string;
  browser: BrowserFamily;
  hostName: string;
}

/**
 * Renders the page into `root` and keeps its status current: it checks once now, and again with a new
 * handshake whenever the page becomes visible or gets the focus, or the user presses "Check again".
 */
export async function mountInstallPage(root: HTMLElement, options: InstallPageOptions = {}): Promise<void> {
  const cache = options.cache ?? createLlmCache(options.hostName === undefined ? {} : { hostName: options.hostName });
  const environment: Environment = {
    extensionId: chrome.runtime.id,
    os: (await chrome.runtime.getPlatformInfo()).os,
    browser: browserOf(chrome.runtime.id),
    hostName: options.hostName ?? NATIVE_HOST_NAME,
  };

  const statusBox = el("section", { id: "status", class: "status", "aria-live": "polite" }, el("p", {}, "Checking…"));
  const stepsBox = el("section", { id: "steps" });
  const checkButton = button("Check again", () => check(true), { id: "check-again" });
  show(
    root,
    el("h1", {}, "LLM cache: native host"),
    statusBox,
    el("p", { class: "actions" }, checkButton, " ", el("a", { href: options.viewerUrl ?? "viewer.html", id: "viewer-link" }, "Open the cache viewer")),
    stepsBox,
  );

  // One check at a time: a focus and a visibilitychange arrive together when the user switches back.
  let running: Promise<void> | undefined;
  const check = (recheck: boolean): Promise<void> => {
    running ??= (async () => {
      root.dataset.checking = "true";
      let status: CacheStatus | undefined;
      let failure: unknown;
      try {
        status = await cache.status({ recheck });
      } catch (error) {
        failure = error;
      }
      // A cache the extension made says which host it connects to.
      if (options.hostName === undefined && status?.hostName !== undefined) environment.hostName = status.hostName;
      renderStatus(statusBox, status, failure);
      renderSteps(stepsBox, environment, status?.backend === "host" && !status.hostProblem);
      delete root.dataset.checking;
      root.dataset.checks = String(Number(root.dataset.checks ?? 0) + 1);
    })().finally(() => {
      running = undefined;
    });
    return running;
  };

  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "visible") void check(true);
  });
  window.addEventListener("focus", () => void check(true));
  await check(false);
}

function renderStatus(box: HTMLElement, status: CacheStatus | undefined, failure: unknown): void {
  const checked = el("p", { class: "checked" }, `Checked ${localTime(Date.now())}.`);
  if (!status) {
    box.dataset.backend = "unknown";
    show(box, el("h2", {}, "Status"), el("p", { id: "status-summary" }, "The status could not be read: ", errorLine(failure)), checked);
    return;
  }
  box.dataset.backend = status.backend;
  const servedByHost = status.backend === "host" && !status.hostProblem;
  const summary = servedByHost
    ? "The native host serves this extension's cache."
    : status.backend === "indexeddb"
      ? "This extension's cache is kept in the browser (IndexedDB), since the native host isn't used."
      : "This extension's cache is unavailable: the native host can't be used, and there is no in-browser cache to fall back to.";
  const rows: Array<[string, string]> = [["Cache", status.backend === "host" ? "native host" : "in the browser (IndexedDB)"]];
  if (status.host) {
    const name = status.hostName ?? NATIVE_HOST_NAME;
    rows.push(["Host", `${hostCommand(name)} ${status.host.version}, protocol version ${status.host.protocolVersion} (${name})`]);
  }
  if (status.hostProblem) rows.push(["Why not the host", status.hostProblem]);
  show(
    box,
    el("h2", {}, "Status"),
    el("p", { id: "status-summary", class: servedByHost ? "good" : "warn" }, summary),
    el("dl", { id: "status-details" }, ...rows.flatMap(([name, value]) => [el("dt", {}, name), el("dd", {}, value)])),
    checked,
  );
}

function renderSteps(box: HTMLElement, environment: Environment, installed: boolean): void {
  const ways = installWays(environment.os, environment.extensionId, environment.browser, undefined, environment.hostName);
  box.dataset.os = environment.os;
  const idLine = el("p", {}, "This extension's id: ", el("code", { id: "extension-id" }, environment.extensionId));
  if (ways.length === 0) {
    show(
      box,
      el("h2", {}, `The host on ${osName(environment.os)}`),
      el("p", {}, `Browsers on ${osName(environment.os)} can't start native hosts, so the cache stays in the browser.`),
    );
    return;
  }
  const heading = installed ? `Update or reinstall the host on ${osName(environment.os)}` : `Install the host on ${osName(environment.os)}`;
  const content = [
    idLine,
    ...ways.map(wayElement),
    el(
      "p",
      {},
      "Then come back to this page: it checks again. If the host is still not used, ",
      el("code", {}, `${hostCommand(environment.hostName)} doctor`),
      " checks each step a browser takes to start it.",
    ),
  ];
  // Once the host serves, the steps are only for updates: folded away, one click from view.
  show(box, installed ? el("details", {}, el("summary", {}, heading), ...content) : el("div", {}, el("h2", {}, heading), ...content));
}

function wayElement(way: InstallWay): HTMLElement {
  return el(
    "div",
    { class: "way" },
    el("h3", {}, way.title),
    el(
      "ol",
      {},
      ...way.steps.map((step) =>
        el("li", {}, step.text, step.command === undefined ? null : el("pre", {}, el("code", { class: "command" }, step.command))),
      ),
    ),
  );
}

const pageRoot = typeof document === "undefined" ? null : document.getElementById("llm-cache-install");
if (pageRoot) {
  mountInstallPage(pageRoot).catch((error: unknown) => {
    show(pageRoot, el("h1", {}, "LLM cache: native host"), el("p", { class: "warn" }, "This page failed: ", errorLine(error)));
  });
}
