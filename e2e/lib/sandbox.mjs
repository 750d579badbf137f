// A throw-away world for one browser: HOME, XDG dirs, a Chromium user-data-dir and the host's data dir, all
// under one temp dir. Chromium inherits `env`, and passes it on to the native host it starts.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { EXTENSION_ID, EXTENSION_ORIGIN, HOST_BIN, HOST_NAME } from "./env.mjs";

/**
 * @typedef {object} Sandbox
 * @property {string} root        the temp dir holding everything below
 * @property {string} home        HOME
 * @property {string} profile     Chromium's --user-data-dir
 * @property {string} dataDir     LLM_CACHE_DIR: the host's store and logs
 * @property {Record<string,string>} env  the environment for Chromium (and so the host) and for the installer
 * @property {() => Promise<void>} cleanup  removes root (kept when E2E_KEEP=1)
 */

/** @returns {Sandbox} */
export function createSandbox(label) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), `llm-cache-e2e-${label}-`));
  const home = path.join(root, "home");
  const profile = path.join(root, "profile");
  const dataDir = path.join(root, "llm-cache");
  for (const dir of [home, profile, path.join(root, "xdg-runtime")]) fs.mkdirSync(dir, { recursive: true, mode: 0o700 });

  const env = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (name === "HOME" || name.startsWith("XDG_") || name.startsWith("LLM_CACHE_") || name === "DISPLAY") continue;
    env[name] = value;
  }
  Object.assign(env, {
    HOME: home,
    XDG_CONFIG_HOME: path.join(home, ".config"),
    XDG_DATA_HOME: path.join(home, ".local", "share"),
    XDG_CACHE_HOME: path.join(home, ".cache"),
    XDG_STATE_HOME: path.join(home, ".local", "state"),
    XDG_RUNTIME_DIR: path.join(root, "xdg-runtime"),
    LLM_CACHE_DIR: dataDir,
    LLM_CACHE_LOG: process.env.LLM_CACHE_LOG || "debug",
  });

  return {
    root,
    home,
    profile,
    dataDir,
    env,
    async cleanup() {
      if (process.env.E2E_KEEP === "1") {
        console.error(`# E2E_KEEP=1: kept ${root}`);
        return;
      }
      await fs.promises.rm(root, { recursive: true, force: true, maxRetries: 3 });
    },
  };
}

/** Where Chromium started with --user-data-dir=<profile> looks for the host manifest (Linux). */
export function hostManifestPath(sandbox) {
  return path.join(sandbox.profile, "NativeMessagingHosts", `${HOST_NAME}.json`);
}

/** Writes the host manifest by hand, as the stand-in tests do; `overrides` can break it on purpose. */
export function writeHostManifest(sandbox, overrides = {}) {
  const manifest = {
    name: HOST_NAME,
    description: "llm-cache-host (e2e stand-in manifest)",
    path: HOST_BIN,
    type: "stdio",
    allowed_origins: [EXTENSION_ORIGIN],
    ...overrides,
  };
  const file = hostManifestPath(sandbox);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, `${JSON.stringify(manifest, null, 2)}\n`);
  return manifest;
}

/**
 * Runs the real installer into the sandbox's profile, with the sandbox's HOME and XDG dirs, and returns the
 * manifest it wrote (parsed). Throws with the installer's output when it fails or writes nothing there.
 */
export function installHost(sandbox, { extensionId = EXTENSION_ID } = {}) {
  const args = ["install", "--browser", "chromium", "--user-data-dir", sandbox.profile, "--extension-id", extensionId];
  return runInstaller(sandbox, args, hostManifestPath(sandbox));
}

/**
 * Runs the real installer for Firefox with the sandbox's HOME (Firefox looks in ~/.mozilla/native-messaging-hosts),
 * allowing `addonIds` (the demo add-on when none is given), and returns the manifest it wrote.
 */
export function installHostForFirefox(sandbox, addonIds = []) {
  const file = path.join(sandbox.home, ".mozilla", "native-messaging-hosts", `${HOST_NAME}.json`);
  return runInstaller(sandbox, ["install", "--browser", "firefox", ...addonIds.flatMap((id) => ["--firefox-extension-id", id])], file);
}

/** Runs `llm-cache-host <args>` with the sandbox's environment and reads the manifest it must have written to `file`. */
function runInstaller(sandbox, args, file) {
  const run = spawnSync(HOST_BIN, args, { env: sandbox.env, encoding: "utf8", timeout: 60_000 });
  const transcript = `$ llm-cache-host ${args.join(" ")}\nexit: ${run.status ?? run.signal ?? run.error}\n${run.stdout}${run.stderr}`;
  if (run.status !== 0) throw new Error(`the installer failed:\n${transcript}`);
  if (!fs.existsSync(file)) throw new Error(`the installer exited 0 but wrote no ${file}:\n${transcript}`);
  return { manifest: JSON.parse(fs.readFileSync(file, "utf8")), file, transcript };
}

/** The text of every log file the host wrote in the sandbox's data directory. */
export function hostLogs(sandbox) {
  const dir = path.join(sandbox.dataDir, "logs");
  return fs.readdirSync(dir).map((name) => fs.readFileSync(path.join(dir, name), "utf8")).join("");
}
