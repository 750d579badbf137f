/**
 * What the extension's developer tells the pages: the extension's name, the host it connects to, where its users
 * download the host, and whether to show building it from source. The pages are static files the developer copies into the extension,
 * so the settings live in a file of the developer's own at the extension's root, `llm-cache-pages.json`, which
 * no update of the shim overwrites; a page inside the extension's own UI passes the same fields to
 * `mountInstallPage` or `mountViewer` instead. Without the file, every setting has its default.
 *
 * Each setting is checked where it enters (`checkPagesConfig`), so that a typo in a key or a link that isn't a
 * web address is a clear error on the page for the developer, not a setting silently ignored.
 */

import { checkHostName } from "../host-name.js";

/** The file the pages read their settings from, at the extension's root. */
export const PAGES_CONFIG_FILE = "llm-cache-pages.json";

/** The longest settings file the pages read: a few links and a name need far less. */
export const MAX_PAGES_CONFIG_BYTES = 64 * 1024;

/** The longest extension name the pages show (Chrome's own limit for a manifest's `name` is 75). */
export const MAX_EXTENSION_NAME_CHARS = 200;

/** The longest download address the pages take. */
export const MAX_DOWNLOAD_URL_CHARS = 2048;

/**
 * Where the host's release files are downloaded from, one address per file. Each names a file the release
 * makes (scripts/release.sh for Linux); the install page links to it and uses the file name at the end of the
 * address in its commands. A file without an address is one the user is told to ask the developer for.
 */
export interface Downloads {
  /** The Debian and Ubuntu package for x86_64 (`llm-cache-host_<version>_amd64.deb`). */
  debAmd64?: string;
  /** The Debian and Ubuntu package for 64-bit ARM (`llm-cache-host_<version>_arm64.deb`). */
  debArm64?: string;
  /** The tarball for any Linux on x86_64 (`llm-cache-host-<version>-x86_64-linux.tar.gz`). */
  tarballX86_64?: string;
  /** The tarball for any Linux on 64-bit ARM (`llm-cache-host-<version>-aarch64-linux.tar.gz`). */
  tarballAarch64?: string;
  /** A zip holding `llm-cache-host.exe`, for Windows. */
  windowsZip?: string;
  /** A tarball holding the `llm-cache-host` binary, for macOS. */
  macosTarball?: string;
}

/** The download keys, in the order the install page offers them. */
export const DOWNLOAD_KEYS = ["debAmd64", "debArm64", "tarballX86_64", "tarballAarch64", "windowsZip", "macosTarball"] as const satisfies ReadonlyArray<keyof Downloads>;

/** The developer's settings for the pages: every field optional. */
export interface PagesConfig {
  /** The extension's name as the pages say it: in their titles and headings. The manifest's `name` by default. */
  extensionName?: string;
  /**
   * The native host the extension connects to, as it passes `hostName` to `createLlmCache` (`com.browserx.llm_cache`
   * by default): the pages' own cache connects to it, and the install page's commands name its release files, its
   * command and `--host-name`. The host's rule (host-name.ts), e.g. com.example.mail_cache.
   */
  hostName?: string;
  /** Where the install page's download links go. */
  downloads?: Downloads;
  /**
   * Whether the install page also shows building the host from its source (which needs Rust and a checkout).
   * Off by default: the page is for the extension's users, who install a release file.
   */
  showFromSource?: boolean;
}

/** Checks for each setting: the value, or a TypeError saying what was expected. */
const CHECKS: { [K in keyof Required<PagesConfig>]: (value: unknown, where: string) => PagesConfig[K] } = {
  extensionName: (value, where) => {
    if (typeof value !== "string" || value.trim() === "" || value.length > MAX_EXTENSION_NAME_CHARS) {
      throw new TypeError(`${where}: extensionName must be a non-empty string of at most ${MAX_EXTENSION_NAME_CHARS} characters, not ${describe(value)}`);
    }
    return value;
  },
  hostName: (value, where) => checkHostName(value, `${where}: hostName`),
  downloads: (value, where) => {
    if (!isPlainObject(value)) throw new TypeError(`${where}: downloads must be an object of download addresses, not ${describe(value)}`);
    const downloads: Downloads = {};
    for (const [key, url] of Object.entries(value)) {
      if (!(DOWNLOAD_KEYS as readonly string[]).includes(key)) {
        throw new TypeError(`${where}: downloads has no key ${JSON.stringify(key)}; the keys are ${DOWNLOAD_KEYS.join(", ")}`);
      }
      downloads[key as keyof Downloads] = downloadUrl(url, `${where}: downloads.${key}`);
    }
    return downloads;
  },
  showFromSource: (value, where) => {
    if (typeof value !== "boolean") throw new TypeError(`${where}: showFromSource must be true or false, not ${describe(value)}`);
    return value;
  },
};

/** Every setting's name, in the order the README's table gives them. */
export const PAGES_SETTINGS = Object.keys(CHECKS) as Array<keyof PagesConfig>;

/**
 * `value` as the pages' settings, or a TypeError naming the first setting that is wrong and what it must be.
 * `where` says where the settings came from, for the message. Settings the pages don't know are refused, so that
 * a misspelt key is found.
 */
export function checkPagesConfig(value: unknown, where = PAGES_CONFIG_FILE): PagesConfig {
  if (!isPlainObject(value)) throw new TypeError(`${where} must hold a JSON object, not ${describe(value)}`);
  const config: PagesConfig = {};
  for (const [key, setting] of Object.entries(value)) {
    if (setting === undefined) continue;
    if (!(PAGES_SETTINGS as string[]).includes(key)) {
      throw new TypeError(`${where}: no setting ${JSON.stringify(key)}; the settings are ${PAGES_SETTINGS.join(", ")}`);
    }
    const name = key as keyof PagesConfig;
    (config as Record<string, unknown>)[name] = CHECKS[name](setting, where);
  }
  return config;
}

/**
 * The settings in the extension's `llm-cache-pages.json`, checked; `{}` when the extension has no such file.
 * Throws a TypeError when the file is there but too long, not JSON, or wrong.
 */
export async function loadPagesConfig(url = chrome.runtime.getURL(PAGES_CONFIG_FILE)): Promise<PagesConfig> {
  let response: Response;
  try {
    response = await fetch(url);
  } catch {
    // A file the extension doesn't have can't be fetched at all (Chrome and Firefox reject the request): the
    // developer chose the defaults.
    return {};
  }
  if (!response.ok) return {};
  const text = await response.text();
  if (text.length > MAX_PAGES_CONFIG_BYTES) throw new TypeError(`${PAGES_CONFIG_FILE} is longer than ${MAX_PAGES_CONFIG_BYTES} bytes`);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new TypeError(`${PAGES_CONFIG_FILE} is not JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  return checkPagesConfig(value);
}

/**
 * The extension's name as the pages say it: the developer's setting, else the manifest's `name`, read through
 * `chrome.i18n` when it is a `__MSG_name__` placeholder, else "This extension".
 */
export function extensionName(config: PagesConfig): string {
  if (config.extensionName) return config.extensionName;
  const name = typeof chrome === "undefined" ? undefined : chrome.runtime?.getManifest?.().name;
  const placeholder = name === undefined ? null : /^__MSG_(\w+)__$/.exec(name);
  const shown = placeholder ? chrome.i18n?.getMessage(placeholder[1] ?? "") : name;
  return shown ? shown.slice(0, MAX_EXTENSION_NAME_CHARS) : "This extension";
}

/**
 * A download address: an https URL, at most MAX_DOWNLOAD_URL_CHARS long. Never plain http: the install page has
 * its users run what they download, with sudo for a package, and a file that came over http could be anyone's.
 */
function downloadUrl(value: unknown, where: string): string {
  const parsed = typeof value === "string" && value.length <= MAX_DOWNLOAD_URL_CHARS && URL.canParse(value) ? new URL(value) : null;
  if (parsed?.protocol === "https:") return value as string;
  const why = parsed?.protocol === "http:" ? " (the page has users run what they download, so it takes no plain http:// address)" : "";
  throw new TypeError(`${where} must be an https:// address of at most ${MAX_DOWNLOAD_URL_CHARS} characters${why}, not ${describe(value)}`);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A wrong value, named briefly for a message: its JSON text, cut to 60 characters. */
function describe(value: unknown): string {
  const text = value === undefined ? "undefined" : JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 59)}…` : text;
}
