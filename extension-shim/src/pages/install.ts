/**
 * The install page (install.html): which backend serves this extension's cache, the host's version or why the
 * host isn't used (`cache.status()`), and, for the user's OS, the commands that install the host for this
 * extension, with its id filled in. When the user comes back to the page (after running them in a terminal,
 * say), it asks the host again over a new port: `status({ recheck: true })`.
 *
 * The extension's developer makes the page theirs (config.ts): its name in the title, the host it connects to
 * (named in every command), links to their release files, building from source shown or not. Every command has a
 * Copy button beside it. Where the host isn't used, the reason points at the steps on the page, which are for the
 * extension's users, not at a checkout of the host's source as `status()` does for developers.
 *
 * install.html loads this module, which reads the developer's `llm-cache-pages.json` and mounts the page on its
 * `#llm-cache-install` element. An extension that wants the page inside its own UI calls `mountInstallPage` with
 * its own element, cache and settings.
 */

import { createLlmCache, type LlmCache } from "../llm-cache.js";
import type { CacheStatus } from "../status.js";
import { servedBy } from "./backend-text.js";
import { checkPagesConfig, extensionName, loadPagesConfig, type PagesConfig } from "./config.js";
import { button, el, errorLine, localTime, show } from "./dom.js";
import { browserOf, hostCommand } from "../install-command.js";
import { NATIVE_HOST_NAME } from "../protocol.js";
import { installWays, osName, type InstallWay, type Machine } from "./install-steps.js";

/** The developer's settings (config.ts), and the page's cache and links. */
export interface InstallPageOptions extends PagesConfig {
  /**
   * The cache whose status is shown; a `createLlmCache({ hostName })` of the page's own by default. With a cache
   * given and no `hostName` setting, the host its status names is the one the steps install.
   */
  cache?: LlmCache;
  /** Where the "cache viewer" link goes; the viewer page beside this one by default. */
  viewerUrl?: string;
}

/** How long a Copy button says "Copied" before it offers to copy again. */
const COPIED_MS = 2000;

/**
 * Renders the page into `root` and keeps its status current: it checks once now, and again with a new
 * handshake whenever the page becomes visible or gets the focus, or the user presses "Check again".
 */
export async function mountInstallPage(root: HTMLElement, options: InstallPageOptions = {}): Promise<void> {
  const { cache: given, viewerUrl, ...settings } = options;
  const config = checkPagesConfig(settings, "mountInstallPage's options");
  const cache = given ?? createLlmCache(config.hostName === undefined ? {} : { hostName: config.hostName });
  const platform = await chrome.runtime.getPlatformInfo();
  const machine: Machine = { os: platform.os, arch: platform.arch, extensionId: chrome.runtime.id, browser: browserOf(chrome.runtime.id) };
  const name = extensionName(config);
  document.title = `${name}: LLM cache host`;

  const statusBox = el("section", { id: "status", class: "status", "aria-live": "polite" }, el("p", {}, "Checking…"));
  const stepsBox = el("section", { id: "steps" });
  const checkButton = button("Check again", () => check(true), { id: "check-again" });
  show(
    root,
    el("h1", {}, `${name}: LLM cache host`),
    statusBox,
    el("p", { class: "actions" }, checkButton, " ", el("a", { href: viewerUrl ?? "viewer.html", id: "viewer-link" }, "Open the cache viewer")),
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
        status = await cache.status({ recheck, advice: "install page" });
      } catch (error) {
        failure = error;
      }
      renderStatus(statusBox, status, failure);
      // A cache the extension made says which host it connects to.
      const hostName = config.hostName ?? status?.hostName;
      renderSteps(stepsBox, machine, hostName === undefined ? config : { ...config, hostName }, status !== undefined && servedBy(status).byHost);
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
  const { byHost, sentence } = servedBy(status);
  const rows: Array<[string, string]> = [["Cache", status.backend === "host" ? "native host" : "in the browser (IndexedDB)"]];
  if (status.host) {
    const name = status.hostName ?? NATIVE_HOST_NAME;
    rows.push(["Host", `${hostCommand(name)} ${status.host.version}, protocol version ${status.host.protocolVersion} (${name})`]);
  }
  if (status.hostProblem) rows.push(["Why not the host", status.hostProblem]);
  show(
    box,
    el("h2", {}, "Status"),
    el("p", { id: "status-summary", class: byHost ? "good" : "calm" }, sentence),
    el("dl", { id: "status-details" }, ...rows.flatMap(([name, value]) => [el("dt", {}, name), el("dd", {}, value)])),
    checked,
  );
}

function renderSteps(box: HTMLElement, machine: Machine, config: PagesConfig, installed: boolean): void {
  const ways = installWays(machine, config);
  box.dataset.os = machine.os;
  const os = osName(machine.os);
  if (ways.length === 0) {
    show(box, el("h2", {}, `The host on ${os}`), el("p", {}, `Browsers on ${os} can't start native hosts, so the cache stays in the browser.`));
    return;
  }
  const heading = installed ? `Update or reinstall the host on ${os}` : `Install the host on ${os}`;
  const content = [
    el("p", {}, "This extension's id: ", el("code", { id: "extension-id" }, machine.extensionId)),
    ...ways.map(wayElement),
    el(
      "p",
      {},
      "Then come back to this page: it checks again. If the host is still not used, ",
      el("code", {}, `${hostCommand(config.hostName)} doctor`),
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
        el(
          "li",
          {},
          ...step.words.map((word) => (typeof word === "string" ? word : el("a", { href: word.href, class: "download" }, word.label))),
          step.command === undefined ? null : commandBlock(step.command),
        ),
      ),
    ),
  );
}

/** A command as the user copies it: in a block of its own, with a Copy button that says when it has copied. */
function commandBlock(command: string): HTMLElement {
  const copy = button("Copy", async () => {
    try {
      await navigator.clipboard.writeText(command);
      copy.textContent = "Copied";
      copy.dataset.copied = "true";
      setTimeout(() => {
        copy.textContent = "Copy";
        delete copy.dataset.copied;
      }, COPIED_MS);
    } catch (error) {
      copy.textContent = "Select the command to copy it";
      copy.title = errorLine(error);
    }
  }, { class: "copy" });
  return el("div", { class: "command-block" }, el("pre", {}, el("code", { class: "command" }, command)), copy);
}

const pageRoot = typeof document === "undefined" ? null : document.getElementById("llm-cache-install");
if (pageRoot) {
  loadPagesConfig()
    .then((config) => mountInstallPage(pageRoot, config))
    .catch((error: unknown) => {
      show(pageRoot, el("h1", {}, "LLM cache host"), el("p", { class: "warn" }, "This page failed: ", errorLine(error)));
    });
}
