// The release artifacts, installed for real: scripts/release.sh builds the tarball, the .deb and SHA256SUMS;
// - the .deb goes in with `dpkg -i`, and Chromium, with no manifest in its profile, finds the host through the
//   package's system-wide manifest in /etc/chromium/native-messaging-hosts and starts /usr/bin/llm-cache-host;
//   then `dpkg -r` must leave nothing of the package behind;
// - the tarball's binary, run from where it was extracted with no cargo on PATH, installs itself for a profile,
//   and Chromium then uses the installed copy.
// It installs a package system-wide, so it needs root (CI and this machine run as root) and refuses to start if
// the package, or any file it would put in place, is already there: it never removes someone's install.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { launchWithExtension } from "../lib/browser.mjs";
import { DEMO_GLOBAL, checkDemoExtension, keysIn } from "../lib/demo-agent.mjs";
import { CHROMIUM, DEMO_EXTENSION_DIR, EXTENSION_ID, EXTENSION_ORIGIN, HOST_BIN, HOST_NAME, REPO_DIR } from "../lib/env.mjs";
import { createSandbox, hostManifestPath } from "../lib/sandbox.mjs";

const PACKAGE = "llm-cache-host";
const PACKAGED_BINARY = "/usr/bin/llm-cache-host";
/** A second extension the release command is told to allow, beside the demo's. */
const OTHER_EXTENSION_ID = "abcdefghijklmnopabcdefghijklmnop";
/** The demo's add-on, another, and one whose id has no name before its `@`, as Firefox allows. */
const FIREFOX_IDS = ["llm-cache-demo@browserx.dev", "other-addon@example.org", "@addon-example"];
/**
 * The manifests a package installs for every user, from the host's own table of the folders browsers read them
 * from (the table `doctor` checks): `manifest --root` writes them and prints each file's path and the browsers that
 * read it. Each is { browser: one that reads it, whose manifest shape it has, file }.
 */
function systemManifests() {
  if (!systemManifests.found) {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "llm-cache-manifests-"));
    try {
      const listed = run(HOST_BIN, ["manifest", "--root", root, "--path", PACKAGED_BINARY]).trim().split("\n");
      systemManifests.found = listed.map((line) => {
        const at = line.lastIndexOf(" ");
        return { browser: line.slice(at + 1).split(",")[0], file: line.slice(0, at) };
      });
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  }
  return systemManifests.found;
}
/**
 * The release build may compile everything from scratch: 1-2 min on CI's two cores, and 4-7 more for the macOS
 * build when `scripts/cross/macos.sh check`, which CI runs first, hasn't built it already.
 */
const RELEASE_TIMEOUT_MS = 900_000;

/** Runs a command to completion; fails with its output unless it exits 0. */
function run(command, args, options = {}) {
  const result = spawnSync(command, args, { encoding: "utf8", timeout: 120_000, ...options });
  const transcript = `$ ${command} ${args.join(" ")}\nexit: ${result.status ?? result.signal ?? result.error}\n${result.stdout}${result.stderr}`;
  assert.equal(result.status, 0, transcript);
  return result.stdout;
}

/** `dpkg-query`'s status of the package, or "" when dpkg has never heard of it. */
function packageStatus() {
  const query = spawnSync("dpkg-query", ["-W", "-f=${db:Status-Abbrev}", PACKAGE], { encoding: "utf8" });
  return query.status === 0 ? query.stdout.trim() : "";
}

/** Why this machine can't run the test without harm, or null. */
function refusal() {
  if (process.getuid?.() !== 0) {
    return "this test installs a .deb system-wide with dpkg -i, which needs root: run it as root (CI does)";
  }
  const status = packageStatus();
  if (status && !status.startsWith("un")) {
    return `the ${PACKAGE} package is already on this machine (dpkg status "${status}"); this test would remove it, so it won't run: remove it yourself (dpkg -r ${PACKAGE}) first`;
  }
  const taken = [PACKAGED_BINARY, ...systemManifests().map((m) => m.file)].filter((file) => fs.existsSync(file));
  if (taken.length) {
    return `${taken.join(", ")} already exist${taken.length === 1 ? "s" : ""} (a system install, perhaps: llm-cache-host uninstall --system); installing the package would overwrite ${taken.length === 1 ? "it" : "them"} and removing it would delete ${taken.length === 1 ? "it" : "them"}, so the test won't run`;
  }
  return null;
}

/**
 * The llm-cache-host processes that serve `dataDir`: every process whose environment has LLM_CACHE_DIR=dataDir,
 * other than Chromium's own (which has the same environment), as { exe, args }.
 */
function hostProcesses(dataDir) {
  const marker = `\0LLM_CACHE_DIR=${dataDir}\0`;
  const found = [];
  for (const pid of fs.readdirSync("/proc").filter((name) => /^\d+$/.test(name))) {
    try {
      const environ = `\0${fs.readFileSync(`/proc/${pid}/environ`, "latin1")}`;
      if (!environ.includes(marker)) continue;
      const exe = fs.readlinkSync(`/proc/${pid}/exe`);
      if (exe.startsWith(path.dirname(fs.realpathSync("/usr/lib/chromium/chromium")))) continue;
      found.push({ exe, args: fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").slice(1, -1) });
    } catch {
      // The process ended while we looked.
    }
  }
  return found;
}

/**
 * In the demo's service worker, a cache with no in-browser fallback and a port that stays open (idleCloseMs 0):
 * writes one item, reads it back, and returns the text of both and the cache's status. The open port keeps the
 * host process alive, so the caller can see which binary it is.
 */
function writeAndReadThroughHost(browser, sessionId, note) {
  return browser.run(
    async ({ sessionId, note }) => {
      const cache = globalThis.llmCache.createLlmCache({ fallback: false, idleCloseMs: 0 });
      globalThis.packageTestCache = cache;
      const context = { sessionId };
      const written = await cache.tool.execute({ action: "write", data: { note }, description: "package e2e note" }, context);
      const key = written.match(/\b[a-z0-9]{8}_[a-z0-9]{8}\b/)?.[0];
      const read = key ? await cache.tool.execute({ action: "read", storageKey: key }, context) : "(no key in the answer)";
      return { written, read, status: await cache.status() };
    },
    { sessionId, note },
    { timeoutMs: 30_000, what: "a write and a read through the host" },
  );
}

/** Checks that the item went through the host at `binary`, whose store is the sandbox's. */
function assertServedBy(outcome, sandbox, sessionId, note, binary) {
  assert.equal(outcome.status.backend, "host", JSON.stringify(outcome.status));
  assert.equal(outcome.status.host?.protocolVersion, 1, JSON.stringify(outcome.status));
  assert.equal(keysIn(outcome.written, sessionId).length, 1, outcome.written);
  assert.ok(outcome.read.includes(note), outcome.read);
  // The host opened its store in the sandbox's LLM_CACHE_DIR, and its own CLI finds the session there.
  assert.ok(fs.existsSync(path.join(sandbox.dataDir, "store")), `no store in ${sandbox.dataDir}`);
  const sessions = run(binary, ["sessions", "--json"], { env: sandbox.env });
  assert.ok(sessions.includes(sessionId), sessions);
  // The process serving it right now is `binary`, started by Chromium for the demo's origin.
  const hosts = hostProcesses(sandbox.dataDir);
  assert.deepEqual(hosts, [{ exe: binary, args: [EXTENSION_ORIGIN] }], JSON.stringify(hosts));
}

const newSessionId = () => `conv_package-${crypto.randomBytes(6).toString("hex")}`;

describe("release artifacts from scripts/release.sh, installed for real", { timeout: RELEASE_TIMEOUT_MS + 300_000 }, () => {
  const state = { installed: false };

  before(
    () => {
      const why = refusal();
      if (why) throw new Error(why);
      checkDemoExtension();
      assert.ok(fs.existsSync(CHROMIUM), `${CHROMIUM} is missing: apt-get install -y chromium`);
      state.out = fs.mkdtempSync(path.join(os.tmpdir(), "llm-cache-release-"));
      const args = ["--out", state.out, "--extension-id", EXTENSION_ID, "--extension-id", OTHER_EXTENSION_ID];
      state.releaseOutput = run(path.join(REPO_DIR, "scripts", "release.sh"), args, {
        env: { ...process.env, RELEASE_FIREFOX_EXTENSION_IDS: FIREFOX_IDS.join(",") },
        timeout: RELEASE_TIMEOUT_MS,
      });
      // The release also holds other machines' files (Linux arm64, macOS, Windows): these are this machine's.
      const files = (state.files = fs.readdirSync(state.out).sort());
      const debArch = run("dpkg", ["--print-architecture"]).trim();
      state.deb = files.find((name) => name.endsWith(`_${debArch}.deb`));
      state.tarball = files.find((name) => name.endsWith(`-${os.machine()}-linux.tar.gz`));
      state.windowsZip = files.find((name) => name.endsWith("-windows.zip"));
    },
    { timeout: RELEASE_TIMEOUT_MS + 60_000 },
  );

  after(async () => {
    // Whatever failed, the machine gets its state back: the package removed, the temp dirs gone.
    if (state.installed && packageStatus().startsWith("ii")) spawnSync("dpkg", ["-r", PACKAGE], { encoding: "utf8" });
    for (const browser of [state.debBrowser, state.tarBrowser]) await browser?.close().catch(() => {});
    for (const sandbox of [state.debSandbox, state.tarSandbox]) await sandbox?.cleanup();
    if (state.out) fs.rmSync(state.out, { recursive: true, force: true });
  });

  it("writes the tarball, the .deb and the Windows zip, named by version and architecture, with SHA256SUMS that sha256sum -c accepts", () => {
    const version = JSON.parse(run("cargo", ["metadata", "--no-deps", "--format-version", "1", "--manifest-path", path.join(REPO_DIR, "Cargo.toml")]))
      .packages.find((p) => p.name === PACKAGE).version;
    const debArch = run("dpkg", ["--print-architecture"]).trim();
    assert.equal(state.tarball, `llm-cache-host-${version}-${os.machine()}-linux.tar.gz`, state.releaseOutput);
    assert.equal(state.deb, `llm-cache-host_${version}_${debArch}.deb`, state.releaseOutput);
    // The Windows zip's .exe is checked under Wine by `scripts/cross/windows.sh check`; here, its name and sum.
    assert.equal(state.windowsZip, `llm-cache-host-${version}-x86_64-windows.zip`, state.releaseOutput);
    const sums = fs.readFileSync(path.join(state.out, "SHA256SUMS"), "utf8");
    // One SHA256SUMS for every file the release writes, the other OSes' included.
    for (const other of [`llm-cache-host-${version}-universal2-macos.tar.gz`, `llm-cache-host-${version}-aarch64-linux.tar.gz`, `llm-cache-host_${version}_arm64.deb`]) {
      assert.ok(state.files.includes(other), `${other} is not among ${state.files.join(" ")}`);
    }
    assert.deepEqual(sums.trim().split("\n").map((line) => line.split(/\s+\*?/)[1]).sort(), state.files.filter((name) => name !== "SHA256SUMS"), sums);
    assert.match(run("sha256sum", ["-c", "SHA256SUMS"], { cwd: state.out }), new RegExp(`${state.deb}: OK`));

    const control = run("dpkg-deb", ["--field", path.join(state.out, state.deb)]);
    assert.match(control, new RegExp(`^Package: ${PACKAGE}$`, "m"), control);
    assert.match(control, new RegExp(`^Version: ${version}$`, "m"), control);
    assert.match(control, new RegExp(`^Architecture: ${debArch}$`, "m"), control);
    assert.match(control, /^Depends: .*\blibc6 \(>= [\d.]+\)/m, control);
    assert.match(control, /^Maintainer: .+<.+@.+>$/m, control);
    assert.match(control, /^Description: .+\n .+/m, control);
  });

  describe("the .deb", () => {
    it("installs with dpkg -i: the binary at /usr/bin and every browser's manifest, root-owned, with the chosen ids", () => {
      // What the package holds, and which of its folders exist already (those dpkg -r must leave alone).
      state.debPaths = run("dpkg-deb", ["--contents", path.join(state.out, state.deb)])
        .trim()
        .split("\n")
        .map((line) => line.split(/\s+/).slice(5).join(" ").replace(/^\.\//, "/").replace(/(.)\/$/, "$1"))
        .filter((p) => p !== "/");
      state.existedBefore = new Set(state.debPaths.filter((p) => fs.existsSync(p)));

      state.installed = true;
      run("dpkg", ["-i", path.join(state.out, state.deb)]);
      assert.equal(packageStatus(), "ii", "dpkg says the package is installed");
      const listed = run("dpkg", ["-L", PACKAGE]).trim().split("\n");
      for (const file of [PACKAGED_BINARY, ...systemManifests().map((m) => m.file)]) {
        assert.ok(listed.includes(file), `dpkg -L lacks ${file}`);
      }
      state.packageFiles = listed.filter((p) => p !== "/." && fs.statSync(p).isFile());

      const binary = fs.statSync(PACKAGED_BINARY);
      assert.deepEqual([binary.mode & 0o7777, binary.uid, binary.gid], [0o755, 0, 0]);
      assert.equal(run(PACKAGED_BINARY, ["--version"]).trim(), `llm-cache-host ${state.deb.split("_")[1]}`);
      for (const { browser, file } of systemManifests()) {
        const stat = fs.statSync(file);
        assert.deepEqual([stat.mode & 0o7777, stat.uid, stat.gid], [0o644, 0, 0], file);
        const manifest = JSON.parse(fs.readFileSync(file, "utf8"));
        assert.equal(manifest.name, HOST_NAME, file);
        assert.equal(manifest.type, "stdio", file);
        assert.equal(manifest.path, PACKAGED_BINARY, file);
        if (browser === "firefox") {
          assert.deepEqual(manifest.allowed_extensions, FIREFOX_IDS, file);
          assert.equal(manifest.allowed_origins, undefined, file);
        } else {
          assert.deepEqual(manifest.allowed_origins, [EXTENSION_ORIGIN, `chrome-extension://${OTHER_EXTENSION_ID}/`], file);
          assert.equal(manifest.allowed_extensions, undefined, file);
        }
        // Byte for byte what `install` would write for this browser: the package printed it with the binary.
        const expected = run(PACKAGED_BINARY, [
          "manifest", "--browser", browser, "--path", PACKAGED_BINARY,
          "--extension-id", EXTENSION_ID, "--extension-id", OTHER_EXTENSION_ID,
          ...FIREFOX_IDS.flatMap((id) => ["--firefox-extension-id", id]),
        ]);
        assert.equal(fs.readFileSync(file, "utf8"), expected, file);
      }
    });

    it("is found by Chromium through /etc/chromium/native-messaging-hosts, with no manifest in the profile", async () => {
      assert.equal(state.packageFiles?.length > 0, true, "the package was not installed");
      const sandbox = (state.debSandbox = createSandbox("package-deb"));
      const doctor = spawnSync(PACKAGED_BINARY, ["doctor", "--system", "--browser", "chromium"], { env: sandbox.env, encoding: "utf8" });
      assert.equal(doctor.status, 0, `doctor --system:\n${doctor.stdout}${doctor.stderr}`);
      // Plain doctor checks the package's manifests with the ids built into them, and proves the store.
      const plain = spawnSync(PACKAGED_BINARY, ["doctor"], { env: sandbox.env, encoding: "utf8" });
      assert.equal(plain.status, 0, `doctor:\n${plain.stdout}${plain.stderr}`);
      assert.match(plain.stdout, new RegExp(`^OK   chromium, brave, vivaldi \\(system\\): host .* registered for 2 extensions \\(${EXTENSION_ID}, ${OTHER_EXTENSION_ID}\\)`, "m"), plain.stdout);
      // Every folder the package wrote is checked, those only Brave and Vivaldi read included.
      for (const browser of ["brave", "vivaldi"]) {
        assert.match(plain.stdout, new RegExp(`^OK   ${browser} \\(system\\): host .* registered for 2 extensions`, "m"), plain.stdout);
      }
      assert.match(plain.stdout, /^OK   store: the host wrote, read back and deleted an item/m, plain.stdout);
      assert.doesNotMatch(plain.stdout, /^WARN /m, plain.stdout);

      state.debBrowser = await launchWithExtension(sandbox, DEMO_EXTENSION_DIR, { globalName: DEMO_GLOBAL });
      // Nothing user-level: Chromium can only have found the system manifest. (Chromium makes the profile's
      // NativeMessagingHosts folder itself when it starts, empty.)
      const userLevel = path.dirname(hostManifestPath(sandbox));
      assert.deepEqual(fs.existsSync(userLevel) ? fs.readdirSync(userLevel) : [], [], `${userLevel} is not empty`);
      const sessionId = newSessionId();
      const note = `served from the .deb ${crypto.randomBytes(4).toString("hex")}`;
      const outcome = await writeAndReadThroughHost(state.debBrowser, sessionId, note);
      assertServedBy(outcome, sandbox, sessionId, note, PACKAGED_BINARY);
      await state.debBrowser.close();
      state.debBrowser = undefined;
    });

    it("is removed by dpkg -r, leaving no file of the package and no manifest", () => {
      assert.equal(state.packageFiles?.length > 0, true, "the package was not installed");
      run("dpkg", ["-r", PACKAGE]);
      state.installed = false;
      assert.ok(!packageStatus().startsWith("ii"), `dpkg status after dpkg -r: ${packageStatus()}`);
      const left = state.debPaths.filter((p) => !state.existedBefore.has(p) && fs.existsSync(p));
      assert.deepEqual(left, [], "paths the package created are still there");
      for (const file of [...state.packageFiles, ...systemManifests().map((m) => m.file)]) {
        assert.equal(fs.existsSync(file), false, `${file} is still there`);
      }
    });
  });

  describe("the tarball", () => {
    it("extracts, and its binary installs itself with no cargo on PATH; Chromium then uses the installed copy", async () => {
      const sandbox = (state.tarSandbox = createSandbox("package-tar"));
      const extracted = path.join(sandbox.root, "download");
      fs.mkdirSync(extracted);
      run("tar", ["xzf", path.join(state.out, state.tarball)], { cwd: extracted });
      const folder = path.join(extracted, state.tarball.replace(/\.tar\.gz$/, ""));
      assert.deepEqual(fs.readdirSync(folder).sort(), ["LICENSE", "LICENSE-APACHE", "LICENSE-MIT", "README.md", "llm-cache-host"]);

      // As someone who downloaded it: the sandbox's HOME and data dir, and a PATH without cargo or the repo.
      const env = { ...sandbox.env, PATH: "/usr/bin:/bin" };
      const args = ["install", "--browser", "chromium", "--user-data-dir", sandbox.profile, "--extension-id", EXTENSION_ID];
      const install = run("./llm-cache-host", args, { cwd: folder, env });
      const installed = path.join(sandbox.dataDir, "bin", "llm-cache-host");
      const manifest = JSON.parse(fs.readFileSync(hostManifestPath(sandbox), "utf8"));
      assert.equal(manifest.path, installed, install);
      assert.deepEqual(manifest.allowed_origins, [EXTENSION_ORIGIN], install);
      assert.ok(fs.readFileSync(installed).equals(fs.readFileSync(path.join(folder, "llm-cache-host"))), "the installed copy differs");
      const doctor = run(installed, ["doctor", "--browser", "chromium", "--user-data-dir", sandbox.profile], { env });
      assert.match(doctor, /doctor: all \d+ checks passed/, doctor);

      state.tarBrowser = await launchWithExtension(sandbox, DEMO_EXTENSION_DIR, { globalName: DEMO_GLOBAL });
      const sessionId = newSessionId();
      const note = `served from the tarball ${crypto.randomBytes(4).toString("hex")}`;
      const outcome = await writeAndReadThroughHost(state.tarBrowser, sessionId, note);
      assertServedBy(outcome, sandbox, sessionId, note, installed);
    });
  });
});
