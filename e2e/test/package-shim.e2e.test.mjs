// The shim as an extension developer gets it, in real Chromium: the README's "Your own extension" walkthrough
// (extension-shim/README.md), run as written. The shim is packed (`npm pack`) into a stand-in checkout,
// `llm-cache-host/extension-shim/`, in an empty folder; the section's first `sh` block runs in that folder (it
// makes `my-extension/` and moves the tarball beside it), and then every file the section shows is written under
// its name in `my-extension/` and every later `sh` block is run there, in order, with npm offline: the tarball
// installs with nothing from the registry, since the shim has no runtime dependencies. The one change: `npm
// install --save-dev esbuild` installs this folder's own esbuild (a devDependency of e2e/ for this test) instead
// of the registry's.
//
// Then the built `extension/` is loaded in Chromium: its id is the one the README's command prints for the key
// the walkthrough made (the manifest it shows carries none, so nobody copies one); with no host, the cache is on
// IndexedDB (write, list, read) and the packaged viewer page shows the item; both pages find the walkthrough's
// `llm-cache-pages.json` (no failed request, the install page links the downloads it names and asks the user to
// ask the developer for nothing); with the host installed for that id into the sandbox's profile, the same calls
// are served by the host, which its CLI (`llm-cache-host sessions`) confirms, and the viewer shows them too. The
// build is checked to hold the shim once.
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { launchWithExtension } from "../lib/browser.mjs";
import { E2E_DIR, HOST_BIN, REPO_DIR, requireHostAndChromium } from "../lib/env.mjs";
import { createSandbox, installHost } from "../lib/sandbox.mjs";

const SHIM_DIR = path.join(REPO_DIR, "extension-shim");
const README = path.join(SHIM_DIR, "README.md");
const SECTION = "## Your own extension";
/** The one line run differently from the README: esbuild from this folder, offline, not from the registry. */
const ESBUILD_INSTALL = "npm install --save-dev esbuild";
/** The first line of the walkthrough's first block, which runs beside the checkout and makes the project. */
const MAKE_PROJECT = "mkdir my-extension && mv llm-cache-host/extension-shim/";
/** Every wait on a page has this limit. */
const DOM_TIMEOUT_MS = 15_000;

/** Why the test can't run here, or null. */
function skipReason() {
  if (!fs.existsSync(path.join(SHIM_DIR, "dist", "src", "index.js"))) return "the shim isn't built: cd extension-shim && npm run build";
  if (!fs.existsSync(path.join(E2E_DIR, "node_modules", "esbuild"))) return "esbuild isn't installed: cd e2e && npm ci";
  return null;
}
const SKIP = skipReason() ?? false;

/**
 * The walkthrough's steps, in order: `{ file, text }` for a fence whose info string names a file
 * (```js src/background.js), `{ sh }` for a ```sh block. Other fences (a manifest fragment) are prose.
 */
function walkthroughSteps() {
  const readme = fs.readFileSync(README, "utf8");
  const start = readme.indexOf(`\n${SECTION}\n`);
  assert.ok(start >= 0, `extension-shim/README.md has no "${SECTION}" section`);
  const end = readme.indexOf("\n## ", start + SECTION.length + 2);
  const section = readme.slice(start, end < 0 ? undefined : end);
  const steps = [];
  for (const [, info, body] of section.matchAll(/^```([^\n]*)\n([\s\S]*?)^```$/gm)) {
    const [lang, file] = info.trim().split(/\s+/);
    if (file) steps.push({ file, text: body });
    else if (lang === "sh") steps.push({ sh: body });
  }
  return steps;
}

/** Runs one sh block in `cwd` with npm offline; returns its stdout. Fails with the block's whole output. */
function runSh(script, cwd) {
  const env = { ...process.env, npm_config_offline: "true", npm_config_audit: "false", npm_config_fund: "false", npm_config_update_notifier: "false" };
  const run = spawnSync("sh", ["-e", "-c", script], { cwd, env, encoding: "utf8", timeout: 120_000 });
  assert.equal(run.status, 0, `this README block failed (exit ${run.status ?? run.signal}):\n${script}\n--- stdout\n${run.stdout}\n--- stderr\n${run.stderr}`);
  return run.stdout;
}

/** The service worker's calls: write an item, list the session, read the item back; and the status. */
async function useCache(browser, sessionId) {
  return browser.run(
    async ({ sessionId }) => {
      const cache = globalThis.cache;
      const status = await cache.status({ recheck: true });
      const context = { sessionId };
      const write = await cache.tool.run({ action: "write", data: JSON.stringify({ subject: "Q3 plan", n: 7 }), description: "the Q3 plan email" }, context);
      const list = await cache.tool.run({ action: "list" }, context);
      const key = (write.text.match(/\b([a-z0-9]{8}_[a-z0-9]{8})\b/) ?? [])[1];
      const read = await cache.tool.run({ action: "read", storageKey: key, pointer: "/subject" }, context);
      return { status, write, list, read, key, id: chrome.runtime.id };
    },
    { sessionId },
    { what: "write, list and read through the packaged shim" },
  );
}

/**
 * Opens one of the packaged pages, runs `look` on it once `ready` holds, and checks that nothing failed on the
 * way: no error thrown, no request failed and no error logged (a missing `llm-cache-pages.json` is both).
 */
async function onPage(browser, url, ready, look) {
  const page = await browser.context.newPage();
  const errors = [];
  page.on("pageerror", (error) => errors.push(error.message));
  page.on("requestfailed", (request) => errors.push(`${request.url()}: ${request.failure()?.errorText}`));
  page.on("console", (message) => {
    if (message.type() === "error") errors.push(message.text());
  });
  try {
    await page.goto(url);
    await page.waitForFunction(ready, null, { timeout: DOM_TIMEOUT_MS });
    const seen = await look(page);
    assert.deepEqual(errors, [], `${url} logged errors`);
    return seen;
  } finally {
    await page.close();
  }
}

/** Opens the packaged viewer on `sessionId` and returns the descriptions in its items table. */
function viewerDescriptions(browser, extensionId, sessionId) {
  return onPage(
    browser,
    `chrome-extension://${extensionId}/llm-cache/viewer.html#session=${sessionId}`,
    () => document.querySelectorAll("#items tbody tr").length > 0,
    (page) => page.$$eval("#items tbody tr", (rows) => rows.map((row) => row.textContent)),
  );
}

/** Opens the packaged install page and returns its steps' text and the addresses they link to. */
function installSteps(browser, extensionId) {
  return onPage(
    browser,
    `chrome-extension://${extensionId}/llm-cache/install.html`,
    () => document.querySelector("[data-checks]") !== null,
    (page) =>
      page.$eval("#steps", (steps) => ({
        text: steps.textContent,
        links: [...steps.querySelectorAll("a[href]")].map((link) => link.href),
      })),
  );
}

describe("the README's own extension, built from the packed shim", { skip: SKIP, timeout: 300_000 }, () => {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "llm-cache-e2e-package-shim-"));
  const project = path.join(work, "my-extension");
  const extension = path.join(project, "extension");
  const printed = [];
  /** What the walkthrough's files say: the manifest and the pages' settings, as shown. */
  const shown = {};
  let extensionId;

  before(() => {
    requireHostAndChromium();
    const pkg = JSON.parse(fs.readFileSync(path.join(SHIM_DIR, "package.json"), "utf8"));
    // The tarball where the README's Install step leaves it: in the checkout's extension-shim/.
    const checkout = path.join(work, "llm-cache-host", "extension-shim");
    fs.mkdirSync(checkout, { recursive: true });
    // --ignore-scripts: the shim is built already (the skip check), and prepack would build it again.
    const [packed] = JSON.parse(execFileSync("npm", ["pack", "--json", "--ignore-scripts", "--pack-destination", checkout], { cwd: SHIM_DIR, encoding: "utf8" }));
    assert.equal(packed.filename, `browserx-llm-cache-shim-${pkg.version}.tgz`);
    const steps = walkthroughSteps();
    assert.ok(steps[0]?.sh?.startsWith(`${MAKE_PROJECT}${packed.filename} . && cd my-extension\n`), `the README's first step doesn't make the project beside the tarball:\n${steps[0]?.sh}`);
    assert.ok(steps.some((step) => step.sh?.includes(`npm install ../${packed.filename}`)), `the README's steps don't install ../${packed.filename}`);
    assert.ok(steps.some((step) => step.sh?.includes(ESBUILD_INSTALL)), `the README's steps no longer say "${ESBUILD_INSTALL}"`);
    for (const [n, step] of steps.entries()) {
      if (step.file) {
        fs.mkdirSync(path.dirname(path.join(project, step.file)), { recursive: true });
        fs.writeFileSync(path.join(project, step.file), step.text);
        if (step.file.endsWith(".json")) shown[step.file] = JSON.parse(step.text);
      } else {
        const script = step.sh.replace(ESBUILD_INSTALL, `npm install --save-dev ${path.join(E2E_DIR, "node_modules", "esbuild")}`);
        printed.push(runSh(script, n === 0 ? work : project));
      }
    }
    // The id the README's command printed: 32 letters a-p.
    extensionId = printed.join("\n").match(/^[a-p]{32}$/m)?.[0];
    assert.ok(extensionId, `no README block printed an extension id:\n${printed.join("\n")}`);
  });
  after(() => fs.rmSync(work, { recursive: true, force: true }));

  it("gives the extension a key of the developer's own: the manifest shown has none, the one built has it", () => {
    assert.equal(shown["extension/manifest.json"].key, undefined, "the README's manifest has a key, so everyone who copies it gets one id");
    const built = JSON.parse(fs.readFileSync(path.join(extension, "manifest.json"), "utf8"));
    assert.match(built.key, /^MII[A-Za-z0-9+/=]+$/);
    const made = execFileSync("openssl", ["rsa", "-in", path.join(project, "key.pem"), "-pubout", "-outform", "DER"], { stdio: ["ignore", "pipe", "ignore"] });
    assert.equal(built.key, made.toString("base64"), "the manifest's key is the public half of key.pem");
  });

  it("builds an extension that holds the shim once: one chunk the worker and both pages import", () => {
    const files = fs.readdirSync(extension, { recursive: true }).map(String);
    for (const file of ["manifest.json", "background.js", "llm-cache/install.html", "llm-cache/install.js", "llm-cache/viewer.html", "llm-cache/viewer.js", "llm-cache/pages.css"]) {
      assert.ok(files.includes(file), `extension/${file} is missing; it has ${files.join(", ")}`);
    }
    // RoutingBackend's route prefix is in the shim's code once, wherever the bundler put it.
    const holding = files.filter((file) => file.endsWith(".js") && fs.readFileSync(path.join(extension, file), "utf8").includes("llmCache.route."));
    assert.equal(holding.length, 1, `the shim's code is in ${holding.join(", ")}`);
    assert.ok(!fs.existsSync(path.join(extension, "node_modules")));
  });

  /**
   * Hooks that start Chromium with the built extension in a fresh sandbox (the host installed into it for the
   * extension's id first, when `install`) and close and remove it afterwards. `.browser` is set once started.
   */
  const chromiumWithExtension = (label, { install }) => {
    const sandbox = createSandbox(label);
    const started = { sandbox, browser: undefined };
    before(async () => {
      if (install) installHost(sandbox, { extensionId });
      started.browser = await launchWithExtension(sandbox, extension, { globalName: "cache", extensionId });
    });
    after(async () => {
      await started.browser?.close();
      await sandbox.cleanup();
    });
    return started;
  };

  describe("with no host: the cache on IndexedDB", () => {
    const s = chromiumWithExtension("package-shim-idb", { install: false });

    it("has the id the README's command printed, and writes, lists and reads on IndexedDB", async () => {
      const sessionId = `conv_${crypto.randomUUID()}`;
      const result = await useCache(s.browser, sessionId);
      assert.equal(result.id, extensionId);
      assert.equal(result.status.backend, "indexeddb");
      assert.match(result.status.hostProblem, /not installed/);
      assert.equal(result.write.ok, true, result.write.text);
      assert.ok(result.list.ok && result.list.text.includes(result.key) && result.list.text.includes("the Q3 plan email"), result.list.text);
      assert.ok(result.read.ok && result.read.text.includes('"Q3 plan"'), result.read.text);
      const rows = await viewerDescriptions(s.browser, extensionId, sessionId);
      assert.ok(rows.some((row) => row.includes("the Q3 plan email")), rows.join("\n"));
    });

    it("finds llm-cache-pages.json: the install page links the downloads it names and sends users to the developer for none", async () => {
      const downloads = Object.values(shown["extension/llm-cache-pages.json"]?.downloads ?? {});
      const steps = await installSteps(s.browser, extensionId);
      assert.ok(!steps.text.includes("Ask this extension's developer"), steps.text);
      assert.ok(steps.links.some((link) => downloads.includes(link)), `the install page links none of ${downloads.join(", ")}: ${steps.links.join(", ")}`);
    });

    it("refuses a malformed sessionId in the worker with a TypeError that says the rule", async () => {
      const error = await s.browser.run(() => globalThis.cache.tool.run({ action: "list" }, { sessionId: "conv_mail_1" }).then(() => null, (e) => `${e.name}: ${e.message}`));
      assert.match(error, /^TypeError: .*`conv_` then 1 to 64 of \[A-Za-z0-9-\]/);
    });
  });

  describe("with the host installed for the extension's id", () => {
    const s = chromiumWithExtension("package-shim-host", { install: true });

    it("serves the same calls from the host, whose CLI lists the session, and the viewer shows them", async () => {
      const sessionId = `conv_${crypto.randomUUID()}`;
      const result = await useCache(s.browser, sessionId);
      assert.equal(result.status.backend, "host", JSON.stringify(result.status));
      assert.equal(result.status.hostProblem, undefined);
      assert.equal(result.write.ok, true, result.write.text);
      assert.ok(result.list.text.includes(result.key), result.list.text);
      assert.ok(result.read.text.includes('"Q3 plan"'), result.read.text);

      const sessions = JSON.parse(execFileSync(HOST_BIN, ["sessions", "--json"], { env: s.sandbox.env, encoding: "utf8" }));
      const mine = JSON.stringify(sessions);
      assert.ok(mine.includes(sessionId) && mine.includes(`chrome-extension://${extensionId}/`), mine);
      const rows = await viewerDescriptions(s.browser, extensionId, sessionId);
      assert.ok(rows.some((row) => row.includes("the Q3 plan email")), rows.join("\n"));
    });
  });
});
