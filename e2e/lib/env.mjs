// Where things are, and what the e2e tests can find on this machine. Every path is absolute.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const E2E_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const REPO_DIR = path.resolve(E2E_DIR, "..");

/** The host binary `cargo build` makes (override: LLM_CACHE_HOST_BIN). */
export const HOST_BIN = process.env.LLM_CACHE_HOST_BIN
  ? path.resolve(process.env.LLM_CACHE_HOST_BIN)
  : path.join(REPO_DIR, "target", "debug", "llm-cache-host");

/** Debian's chromium launcher (override: CHROMIUM_PATH). */
export const CHROMIUM = process.env.CHROMIUM_PATH || "/usr/bin/chromium";

export const HOST_NAME = "com.browserx.llm_cache";
/** Fixed by the `key` in both extensions' manifests (the base64 public key; its id is derived from it). */
export const EXTENSION_ID = "pahabgfbcdcnaidcniaebibdihehiphn";
export const EXTENSION_ORIGIN = `chrome-extension://${EXTENSION_ID}/`;

export const STAND_IN_EXTENSION_DIR = path.join(E2E_DIR, "fixtures", "stand-in-extension");
/** The shim's demo extension, built (override: E2E_DEMO_DIR, e.g. a built copy of extension-shim/demo). */
export const DEMO_EXTENSION_DIR = process.env.E2E_DEMO_DIR
  ? path.resolve(process.env.E2E_DEMO_DIR)
  : path.join(REPO_DIR, "extension-shim", "demo");

/** Throws, with what to do, when the host binary or Chromium is missing: those are set-up errors, not skips. */
export function requireHostAndChromium() {
  if (!isExecutable(HOST_BIN)) {
    throw new Error(`${HOST_BIN} is missing: build it first (cargo build, from ${REPO_DIR}); npm test does it in pretest`);
  }
  if (!isExecutable(CHROMIUM)) {
    throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (or set CHROMIUM_PATH)`);
  }
}

/** `llm-cache-host --version`'s version, e.g. "0.1.0". */
export function hostVersion() {
  const out = spawnSync(HOST_BIN, ["--version"], { encoding: "utf8", timeout: 10_000 });
  const match = /^llm-cache-host (\S+)/.exec(out.stdout ?? "");
  if (out.status !== 0 || !match) throw new Error(`${HOST_BIN} --version failed: ${out.stderr || out.error}`);
  return match[1];
}

/**
 * Why the demo scenario can't run yet, or null when it can. It needs the shim's demo extension and the host's
 * `install` subcommand (`llm-cache-host install --help` exits 0 once it exists).
 */
export function demoScenarioSkipReason() {
  const missing = [];
  if (!fs.existsSync(path.join(DEMO_EXTENSION_DIR, "manifest.json"))) {
    const shown = DEMO_EXTENSION_DIR.startsWith(`${REPO_DIR}/`) ? path.relative(REPO_DIR, DEMO_EXTENSION_DIR) : DEMO_EXTENSION_DIR;
    missing.push(`${shown}/manifest.json is missing (the shim's demo extension has not landed)`);
  }
  if (!isExecutable(HOST_BIN)) {
    missing.push(`${HOST_BIN} is missing (cargo build)`);
  } else {
    const help = spawnSync(HOST_BIN, ["install", "--help"], { encoding: "utf8", timeout: 10_000 });
    if (help.status !== 0) {
      missing.push(`\`llm-cache-host install --help\` exits ${help.status ?? help.signal} (the installer has not landed)`);
    }
  }
  return missing.length ? `not ready: ${missing.join("; ")}` : null;
}

function isExecutable(file) {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}
