// Two vendors' hosts on one machine, installed for real: scripts/release.sh --host-name builds a .deb for each of
// two host names that end alike (com.example.mail_cache and org.example.mail_cache, so packages named by the last
// part alone would be one package to dpkg), `dpkg -i` installs both side by side, and
// two extensions with different ids (fresh keys) each call createLlmCache({ hostName }) in real Chromium:
// - each is served by its own package's binary (/proc says which process serves which origin), which keeps its
//   store in its own data directory (~/.local/share/<host name>), so neither host's CLI sees the other's session;
// - neither extension may use the other's host (its manifest allows only its own vendor's id);
// - `dpkg -r` of one removes exactly its files, and the other keeps working.
// It installs packages system-wide, so it needs root (CI and this machine run as root) and refuses to start if
// either package, or any file they would put in place, is already there: it never removes someone's install.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { launchWithExtension } from "../lib/browser.mjs";
import { DEMO_GLOBAL, checkDemoExtension, keysIn } from "../lib/demo-agent.mjs";
import { CHROMIUM, DEMO_EXTENSION_DIR, EXTENSION_ID, REPO_DIR } from "../lib/env.mjs";
import { createSandbox } from "../lib/sandbox.mjs";

/** The release build may compile everything from scratch (2-3 min on CI's two cores), once per host name. */
const RELEASE_TIMEOUT_MS = 600_000;

/**
 * An extension id of a fresh key, as Chrome derives it: the first 16 bytes of the SHA-256 of the public key (DER),
 * in hex with the digits 0-f written as a-p. Returns the key as a manifest's `key` and the id.
 */
function freshExtensionKey() {
  const { publicKey } = crypto.generateKeyPairSync("rsa", { modulusLength: 2048 });
  const der = publicKey.export({ type: "spki", format: "der" });
  const hex = crypto.createHash("sha256").update(der).digest("hex").slice(0, 32);
  const id = [...hex].map((digit) => String.fromCharCode(97 + parseInt(digit, 16))).join("");
  return { key: der.toString("base64"), id };
}

/** The two vendors: host name, the command and package release.sh names after it, and their extension. */
const VENDORS = [
  // The first vendor ships for Chrome and Firefox; the other for Chrome only.
  // The command and package of each are the whole host name with '_' as '-'.
  { hostName: "com.example.mail_cache", name: "com.example.mail-cache", addonId: "@mail-cache-e2e", ...freshExtensionKey() },
  { hostName: "org.example.mail_cache", name: "org.example.mail-cache", addonId: undefined, ...freshExtensionKey() },
].map((vendor) => ({
  ...vendor,
  origin: `chrome-extension://${vendor.id}/`,
  binary: `/usr/bin/${vendor.name}`,
  chromiumManifest: `/etc/chromium/native-messaging-hosts/${vendor.hostName}.json`,
}));
const [MAIL, OTHER] = VENDORS;

/** Runs a command to completion; fails with its output unless it exits 0. */
function run(command, args, options = {}) {
  const result = spawnSync(command, args, { encoding: "utf8", timeout: 120_000, ...options });
  const transcript = `$ ${command} ${args.join(" ")}\nexit: ${result.status ?? result.signal ?? result.error}\n${result.stdout}${result.stderr}`;
  assert.equal(result.status, 0, transcript);
  return result.stdout;
}

/** `dpkg-query`'s status of a package, or "" when dpkg has never heard of it. */
function packageStatus(name) {
  const query = spawnSync("dpkg-query", ["-W", "-f=${db:Status-Abbrev}", name], { encoding: "utf8" });
  return query.status === 0 ? query.stdout.trim() : "";
}

/** Why this machine can't run the test without harm, or null. */
function refusal() {
  if (process.getuid?.() !== 0) {
    return "this test installs .deb packages system-wide with dpkg -i, which needs root: run it as root (CI does)";
  }
  for (const { name } of VENDORS) {
    const status = packageStatus(name);
    if (status && !status.startsWith("un")) {
      return `the ${name} package is already on this machine (dpkg status "${status}"); this test would remove it, so it won't run`;
    }
  }
  const taken = VENDORS.flatMap((v) => [v.binary, v.chromiumManifest]).filter((file) => fs.existsSync(file));
  if (taken.length) return `${taken.join(", ")} already exist: installing the packages would overwrite them, so the test won't run`;
  return null;
}

/** The processes of either vendor's binary whose HOME is `home`, as { exe, args }. */
function hostProcesses(home) {
  const binaries = VENDORS.map((v) => v.binary);
  const found = [];
  for (const pid of fs.readdirSync("/proc").filter((name) => /^\d+$/.test(name))) {
    try {
      const exe = fs.readlinkSync(`/proc/${pid}/exe`);
      if (!binaries.includes(exe)) continue;
      if (!`\0${fs.readFileSync(`/proc/${pid}/environ`, "latin1")}`.includes(`\0HOME=${home}\0`)) continue;
      found.push({ exe, args: fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").slice(1, -1) });
    } catch {
      // The process ended while we looked.
    }
  }
  return found.sort((a, b) => a.exe.localeCompare(b.exe));
}

/**
 * In the extension's service worker, `createLlmCache({ hostName })` with no in-browser fallback and a port that
 * stays open (so the host process can be seen): writes one item, reads it back, and returns both texts and the
 * cache's status. Without `write`, only the status.
 */
function throughHost(browser, hostName, sessionId, write = true) {
  return browser.run(
    async ({ hostName, sessionId, write }) => {
      const cache = globalThis.llmCache.createLlmCache({ hostName, fallback: false, idleCloseMs: 0 });
      (globalThis.hostNameCaches ??= []).push(cache);
      if (!write) return { status: await cache.status() };
      const context = { sessionId };
      const written = await cache.tool.execute({ action: "write", data: { hostName }, description: "host-names e2e note" }, context);
      const key = written.match(/\b[a-z0-9]{8}_[a-z0-9]{8}\b/)?.[0];
      const read = key ? await cache.tool.execute({ action: "read", storageKey: key }, context) : "(no key in the answer)";
      return { written, read, status: await cache.status() };
    },
    { hostName, sessionId, write },
    { timeoutMs: 30_000, what: `a write and a read through ${hostName}` },
  );
}

/** Closes every port the worker's caches hold, so their hosts exit. */
function closeCaches(browser) {
  return browser.run(() => {
    for (const cache of globalThis.hostNameCaches ?? []) cache.client.close();
    globalThis.hostNameCaches = [];
  });
}

/** The session ids `binary sessions --json` lists, with the sandbox's environment. */
function sessionsOf(vendor, env) {
  return JSON.stringify(JSON.parse(run(vendor.binary, ["sessions", "--json"], { env })));
}

const newSessionId = () => `conv_hostnames-${crypto.randomBytes(6).toString("hex")}`;

describe("two hosts of different names, each from its own .deb, side by side", { timeout: 2 * RELEASE_TIMEOUT_MS + 300_000 }, () => {
  const state = { installed: new Set(), browsers: [] };

  before(
    () => {
      const why = refusal();
      if (why) throw new Error(why);
      checkDemoExtension();
      assert.ok(fs.existsSync(CHROMIUM), `${CHROMIUM} is missing: apt-get install -y chromium`);
      state.root = fs.mkdtempSync(path.join(os.tmpdir(), "llm-cache-host-names-"));
      for (const vendor of VENDORS) {
        const out = path.join(state.root, `dist-${vendor.name}`);
        // Only the Linux files, which are what this test installs: the macOS build is checked by
        // `scripts/cross/macos.sh check` and the package e2e, and building it for each vendor costs minutes.
        const args = ["--host-name", vendor.hostName, "--extension-id", vendor.id, "--out", out, "--targets", "linux"];
        if (vendor.addonId) args.push("--firefox-extension-id", vendor.addonId);
        vendor.releaseOutput = run(path.join(REPO_DIR, "scripts", "release.sh"), args, { timeout: RELEASE_TIMEOUT_MS });
        vendor.deb = path.join(out, fs.readdirSync(out).find((file) => file.endsWith(".deb")));
        vendor.tarball = fs.readdirSync(out).find((file) => file.endsWith("-linux.tar.gz"));
        // The developer's extension: the demo's files, under the vendor's own key (so its own id).
        vendor.extensionDir = path.join(state.root, `extension-${vendor.name}`);
        fs.cpSync(DEMO_EXTENSION_DIR, vendor.extensionDir, { recursive: true, dereference: true });
        const manifestFile = path.join(vendor.extensionDir, "manifest.json");
        const manifest = JSON.parse(fs.readFileSync(manifestFile, "utf8"));
        fs.writeFileSync(manifestFile, JSON.stringify({ ...manifest, name: `${vendor.name} extension`, key: vendor.key }, null, 2));
      }
    },
    { timeout: 2 * RELEASE_TIMEOUT_MS + 60_000 },
  );

  after(async () => {
    // Whatever failed, the machine gets its state back: the packages removed, the temp dirs gone.
    for (const browser of state.browsers) await browser.close().catch(() => {});
    for (const vendor of VENDORS) {
      if (packageStatus(vendor.name).startsWith("ii")) spawnSync("dpkg", ["-r", vendor.name], { encoding: "utf8" });
    }
    await state.sandbox?.cleanup();
    if (state.root) fs.rmSync(state.root, { recursive: true, force: true });
  });

  it("release.sh names each package, binary, tarball and manifest after its host name", () => {
    const version = run(path.join(REPO_DIR, "target", "debug", "llm-cache-host"), ["--version"]).trim().split(" ")[1];
    for (const vendor of VENDORS) {
      assert.equal(path.basename(vendor.deb).split("_")[0], vendor.name, vendor.releaseOutput);
      assert.equal(vendor.tarball, `${vendor.name}-${version}-${os.machine()}-linux.tar.gz`, vendor.releaseOutput);
      // `--targets linux`: the Linux files and their checksums, no cross build's.
      const written = fs.readdirSync(path.dirname(vendor.deb)).sort();
      assert.deepEqual(written, [path.basename(vendor.deb), vendor.tarball, "SHA256SUMS"].sort(), vendor.releaseOutput);
      const control = run("dpkg-deb", ["--field", vendor.deb]);
      assert.match(control, new RegExp(`^Package: ${vendor.name}$`, "m"), control);
      const contents = run("dpkg-deb", ["--contents", vendor.deb]);
      for (const file of [`./usr/bin/${vendor.name}`, `.${vendor.chromiumManifest}`]) {
        assert.ok(contents.includes(` ${file}\n`), `${file} in:\n${contents}`);
      }
      // A Firefox manifest only for the vendor that named an add-on: never the demo add-on's.
      const firefoxManifest = `./usr/lib/mozilla/native-messaging-hosts/${vendor.hostName}.json`;
      assert.equal(contents.includes(` ${firefoxManifest}\n`), vendor.addonId !== undefined, contents);
      assert.ok(!contents.includes("llm-cache-host") && !contents.includes("com.browserx.llm_cache"), contents);
      const tarList = run("tar", ["tzf", path.join(path.dirname(vendor.deb), vendor.tarball)]);
      assert.ok(tarList.split("\n").includes(`${vendor.tarball.replace(/\.tar\.gz$/, "")}/${vendor.name}`), tarList);
    }
  });

  it("both install with dpkg -i, each manifest naming its host and binary and allowing its own extension", () => {
    for (const vendor of VENDORS) {
      state.installed.add(vendor.name);
      run("dpkg", ["-i", vendor.deb]);
      assert.equal(packageStatus(vendor.name), "ii");
      vendor.files = run("dpkg", ["-L", vendor.name]).trim().split("\n").filter((p) => p !== "/." && fs.statSync(p).isFile());
      const manifest = JSON.parse(fs.readFileSync(vendor.chromiumManifest, "utf8"));
      assert.deepEqual([manifest.name, manifest.path, manifest.allowed_origins], [vendor.hostName, vendor.binary, [vendor.origin]]);
    }
  });

  it("serves each extension from its own host, with its own store", async () => {
    assert.equal(state.installed.size, 2, "the packages were not installed");
    const sandbox = (state.sandbox = createSandbox("host-names"));
    // No LLM_CACHE_DIR: each host picks its data directory by its own name, as on a user's machine.
    delete sandbox.env.LLM_CACHE_DIR;
    const dataHome = sandbox.env.XDG_DATA_HOME;
    for (const vendor of VENDORS) {
      const profile = path.join(sandbox.root, `profile-${vendor.name}`);
      vendor.browser = await launchWithExtension({ ...sandbox, profile }, vendor.extensionDir, { globalName: DEMO_GLOBAL, extensionId: vendor.id });
      state.browsers.push(vendor.browser);
      vendor.sessionId = newSessionId();
      vendor.outcome = await throughHost(vendor.browser, vendor.hostName, vendor.sessionId);
    }
    for (const vendor of VENDORS) {
      const { outcome } = vendor;
      assert.equal(outcome.status.backend, "host", JSON.stringify(outcome.status));
      assert.equal(outcome.status.hostName, vendor.hostName, JSON.stringify(outcome.status));
      assert.equal(outcome.status.hostProblem, undefined, JSON.stringify(outcome.status));
      assert.equal(keysIn(outcome.written, vendor.sessionId).length, 1, outcome.written);
      assert.ok(outcome.read.includes(vendor.hostName), outcome.read);
      assert.ok(fs.existsSync(path.join(dataHome, vendor.hostName, "store", "data.mdb")), `no store of ${vendor.hostName}`);
    }
    // Both ports are open: each origin is served, right now, by its own vendor's binary.
    assert.deepEqual(hostProcesses(sandbox.home), VENDORS.map((v) => ({ exe: v.binary, args: [v.origin] })));
    // Each host's store holds its own extension's session and not the other's.
    for (const [vendor, other] of [[MAIL, OTHER], [OTHER, MAIL]]) {
      const sessions = sessionsOf(vendor, sandbox.env);
      assert.ok(sessions.includes(vendor.sessionId) && !sessions.includes(other.sessionId), `${vendor.name} sessions: ${sessions}`);
    }
    assert.ok(!fs.existsSync(path.join(dataHome, "llm-cache-host")), "the default host's data directory was made");

    // The user's plain `doctor` (the command each package installs, no arguments) checks that package's own
    // manifests and ids and proves its store: every check passes, and neither the demo's id nor another
    // vendor's name is mentioned.
    for (const [vendor, other] of [[MAIL, OTHER], [OTHER, MAIL]]) {
      const report = run(vendor.binary, ["doctor"], { env: sandbox.env });
      assert.match(report, /OK {3}store:/, report);
      assert.ok(report.includes(vendor.id), report);
      for (const absent of [EXTENSION_ID, "llm-cache-demo@", "FAIL", other.id, other.hostName, "llm-cache-host "]) {
        assert.ok(!report.includes(absent), `${vendor.name} doctor mentions ${absent}:\n${report}`);
      }
    }

    // Neither extension may use the other vendor's host: its manifest allows only its own extension.
    const { status } = await throughHost(MAIL.browser, OTHER.hostName, newSessionId(), false);
    assert.match(status.hostProblem ?? "", /not allowed for this extension's id/, JSON.stringify(status));
    for (const vendor of VENDORS) await closeCaches(vendor.browser);
  });

  it("dpkg -r of one removes its files only; the other extension is still served by its host", async () => {
    assert.ok(OTHER.browser && MAIL.browser, "the browsers did not start");
    run("dpkg", ["-r", OTHER.name]);
    state.installed.delete(OTHER.name);
    for (const file of OTHER.files) assert.equal(fs.existsSync(file), false, `${file} is still there`);
    for (const file of MAIL.files) assert.ok(fs.existsSync(file), `${file} went with the other package`);

    const stillServed = await throughHost(MAIL.browser, MAIL.hostName, newSessionId());
    assert.equal(stillServed.status.backend, "host", JSON.stringify(stillServed.status));
    assert.ok(stillServed.read.includes(MAIL.hostName), stillServed.read);
    const { status } = await throughHost(OTHER.browser, OTHER.hostName, newSessionId(), false);
    assert.match(status.hostProblem ?? "", /^the native host is not installed: the browser found no manifest for org\.example\.mail_cache/, JSON.stringify(status));
    assert.match(status.hostProblem ?? "", /--host-name org\.example\.mail_cache;/, status.hostProblem);
    for (const vendor of VENDORS) await closeCaches(vendor.browser);

    run("dpkg", ["-r", MAIL.name]);
    state.installed.delete(MAIL.name);
    for (const file of MAIL.files) assert.equal(fs.existsSync(file), false, `${file} is still there`);
  });
});
