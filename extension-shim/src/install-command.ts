/**
 * Extension ids, and the command words that install the host for one: the flag that fits the id's browser,
 * and the id quoted for the shell of the OS the command is shown on. The install page (pages/install-steps.ts)
 * and `status()`'s reasons (status.ts) build their commands from these, so that every command either shows
 * works as shown.
 *
 * The id rules are the browsers' own, as the host checks them (src/install/manifest.rs): Chrome's ids are 32
 * letters from a to p; Firefox's are a braced GUID or `name@domain`, where the name may be empty
 * (`@addon-example` is MDN's own example). The two never overlap, so an extension's id says which browser
 * it runs in.
 */

import { NATIVE_HOST_NAME } from "./protocol.js";

/** Chrome and the browsers built on Chromium take an extension id; Firefox an add-on id, with another flag. */
export type BrowserFamily = "chromium" | "firefox";

/** The longest Firefox add-on id the host takes (its store keys hold at most this much of one). */
export const MAX_ADDON_ID_LENGTH = 255;

/** A Chrome extension id: 32 letters from a to p (a key's hash, its hex digits shifted to letters). */
export function isChromeExtensionId(id: string): boolean {
  return /^[a-p]{32}$/.test(id);
}

/**
 * A Firefox add-on id, by Firefox's own rule (its add-on manager's `gIDTest`, case-insensitive): a braced
 * GUID, or `name@domain` with an optional name, in letters, digits, `-`, `.` and `_`.
 */
export function isFirefoxExtensionId(id: string): boolean {
  return (
    id.length <= MAX_ADDON_ID_LENGTH &&
    /^(\{[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\}|[a-z0-9._-]*@[a-z0-9._-]+)$/i.test(id)
  );
}

/** The browser an extension with this id runs in: Firefox's ids have an `@` or braces, Chrome's never do. */
export function browserOf(extensionId: string): BrowserFamily {
  return isFirefoxExtensionId(extensionId) ? "firefox" : "chromium";
}

/** The host's `install` flag for an id of this browser. */
export function idFlag(browser: BrowserFamily): string {
  return browser === "firefox" ? "--firefox-extension-id" : "--extension-id";
}

/** The shell a command is typed into: PowerShell on Windows, a POSIX shell elsewhere. */
export type Shell = "posix" | "powershell";

/** `chrome.runtime.getPlatformInfo().os`'s OS names, by the shell the install steps are typed into there. */
export function shellOf(os: string): Shell {
  return os === "win" ? "powershell" : "posix";
}

/**
 * `word` as one argument in `shell`, as typed: as it is when it has only letters, digits, `_`, `.`, `/` and `-`
 * (nothing either shell reads specially), else in single quotes, which both shells read literally. Inside them
 * a POSIX shell can't escape a quote, so one ends the quoting, is escaped, and starts it again (`'\''`);
 * PowerShell takes a quote doubled, and counts the typographic single quotes (U+2018 to U+201B) as quotes
 * too. PowerShell needs the quotes for `{GUID}` (a script block, whose braces it would drop) and `@name`
 * (splatting); `$` and the backtick are literal inside them.
 */
export function shellWord(word: string, shell: Shell): string {
  if (/^[A-Za-z0-9_./-]+$/.test(word)) return word;
  return shell === "powershell" ? `'${word.replace(/['\u2018-\u201b]/g, "$&$&")}'` : `'${word.replace(/'/g, "'\\''")}'`;
}

/** The `install` arguments for this id on `os`: its browser's flag and the id quoted for that OS's shell. */
export function idArguments(extensionId: string, os: string, browser: BrowserFamily = browserOf(extensionId)): string {
  return `${idFlag(browser)} ${shellWord(extensionId, shellOf(os))}`;
}

/**
 * The command a host registered as `hostName` is typed as, which is also its package's name, by the host's own
 * rule (src/host_name.rs): `llm-cache-host` for the default host, else the whole name with `_` as `-`
 * (`com.example.mail_cache`: `com.example.mail-cache`), so that no two hosts share a command or a package.
 */
export function hostCommand(hostName: string = NATIVE_HOST_NAME): string {
  if (hostName === NATIVE_HOST_NAME) return "llm-cache-host";
  return hostName.replace(/_/g, "-");
}

/**
 * The `install` argument that names a host other than the default (` --host-name com.example.mail_cache`, with
 * its leading space), or "" for the default. Given every time, it makes any build of the binary register under
 * that name, whatever name it was built with.
 */
export function hostNameArgument(hostName: string = NATIVE_HOST_NAME): string {
  return hostName === NATIVE_HOST_NAME ? "" : ` --host-name ${hostName}`;
}

/**
 * The command that builds the host from a checkout of its source and installs it for this id (as `hostName`),
 * as typed on `os`: install.sh (bash) on Linux and macOS; on Windows, in PowerShell, cargo and then, if the
 * build succeeded, the built binary's own `install` (install.sh needs bash, which Windows lacks; `if ($?)`
 * rather than `&&`, which Windows PowerShell 5.1 doesn't have).
 */
export function sourceInstallCommand(
  extensionId: string,
  os: string,
  browser: BrowserFamily = browserOf(extensionId),
  hostName: string = NATIVE_HOST_NAME,
): string {
  const args = `${idArguments(extensionId, os, browser)}${hostNameArgument(hostName)}`;
  return os === "win" ? `cargo build --release; if ($?) { .\\target\\release\\llm-cache-host.exe install ${args} }` : `./install.sh ${args}`;
}
