/**
 * `cache.status()`: which backend serves, the host's version and protocol when it answers, and, when it isn't
 * used, why, in words a person can act on (docs/operations.md's troubleshooting table, said from the extension's side).
 *
 * The reasons come from what the browser says when a native port fails. Chrome's texts are fixed strings in
 * its native messaging code; Firefox's not-found text names the host. The failures this tells apart are the
 * ones with different remedies: not installed, installed for other extension ids, an incompatible protocol
 * version, crashed at start, and the extension lacking the `nativeMessaging` permission.
 */

import type { BackendKind } from "./backend.js";
import { ProtocolVersionError, RequestTimeoutError } from "./errors.js";
import { browserOf, hostCommand, hostNameArgument, sourceInstallCommand } from "./install-command.js";
import { NATIVE_HOST_NAME } from "./protocol.js";

export interface CacheStatus {
  /** The backend new sessions go to now. (A session already under way stays where its first item went.) */
  backend: BackendKind;
  /**
   * The native host's name, which the cache connects to (`createLlmCache({ hostName })`, `com.browserx.llm_cache`
   * by default); absent when the extension chose the in-browser backend and no host is asked.
   */
  hostName?: string;
  /** The host's release and protocol version, when it answered its handshake. */
  host?: { version: string; protocolVersion: number };
  /** Why new sessions don't go to the host, and what to do about it; absent when they do. */
  hostProblem?: string;
}

export interface StatusOptions {
  /**
   * Make a new handshake with the host even while a port to it is open, so that a host installed, updated or
   * removed since is seen as it is now (an install page does this when the user comes back to it). Without it,
   * an open port's handshake answers, and a host that was down is asked again anyway.
   */
  recheck?: boolean;
  /**
   * Whom `hostProblem`'s remedy is for. "source" (the default) is the extension's developer, who has the host's
   * source: it gives the command that builds and installs the host from a checkout. "install page" is the
   * extension's user, reading the install page, whose own steps (release files, each with its command) are the
   * remedy: it points at them instead.
   */
  advice?: "source" | "install page";
}

/** What browsers say when a native port can't be used, by the remedy each calls for. */
const BROWSER_TEXTS = {
  /** Chrome's, and Firefox's (which adds the host's name). */
  notFound: ["Specified native messaging host not found.", "No such native application"],
  forbidden: ["Access to the specified native messaging host is forbidden."],
  /** The host started and stopped, or broke the framing rules, or couldn't be started at all. */
  crashed: ["Native host has exited.", "Error when communicating with the native messaging host.", "Failed to start native messaging host."],
};

/** The status text when the extension chose the in-browser backend itself. */
export const IN_BROWSER_CHOSEN =
  'the extension chose the in-browser backend (backend: "indexeddb"), so the native host is not asked';

/**
 * Why the host isn't used, from the error its handshake failed with, with what to do next. `extensionId` is
 * the extension's id (chrome.runtime.id by default), which the install command needs with its browser's flag
 * (an add-on id in Firefox, whose shape says so); `os` is the OS the command is typed on
 * (`chrome.runtime.getPlatformInfo().os`'s names; by default the one `navigator.platform` names), whose shell
 * the id is quoted for; `hostName` is the host the cache connects to, which the texts and commands name; `advice`
 * says whom the remedy is for (StatusOptions.advice).
 */
export function hostProblemText(
  error: unknown,
  extensionId = currentExtensionId(),
  os = currentOs(),
  hostName: string = NATIVE_HOST_NAME,
  advice: StatusOptions["advice"] = "source",
): string {
  const message = error instanceof Error ? error.message : String(error);
  const id = extensionId ?? "<this extension's id>";
  const firefox = extensionId !== undefined && browserOf(extensionId) === "firefox";
  const install =
    extensionId === undefined
      ? `./install.sh --extension-id ${id}${hostNameArgument(hostName)}`
      : sourceInstallCommand(extensionId, os, undefined, hostName);
  const command = hostCommand(hostName);
  const onPage = advice === "install page";
  // Firefox's manifests list add-on ids, Chrome's extension origins.
  const [allowList, allowed] = firefox ? ["allowed_extensions", id] : ["allowed_origins", `chrome-extension://${id}/`];
  if (error instanceof ProtocolVersionError) {
    const hostVersion = error.actual;
    const older = typeof hostVersion === "number" && hostVersion < Number(error.expected);
    return older
      ? `the native host is too old: it speaks protocol version ${hostVersion} and this extension needs version ${error.expected}; ` +
          (onPage ? `update it with the steps below` : `update it (pull llm-cache-host's source, then run ${install} again)`)
      : `the native host speaks protocol version ${String(hostVersion)}, which this extension (version ${error.expected}) doesn't know; ` +
          `update the extension, or install the host of the extension's release`;
  }
  if (includesAny(message, BROWSER_TEXTS.notFound)) {
    return (
      // Firefox says "not found" too when a manifest is there but doesn't allow the add-on.
      `the native host is not installed: the browser found no manifest for ${hostName}` +
      (firefox ? ` whose ${allowList} lists ${allowed}` : "") +
      ", or the binary it names is missing. " +
      (onPage ? "Install it with the steps below" : `Install it from llm-cache-host's source with ${install}`) +
      `; \`${command} doctor\` then checks each step`
    );
  }
  if (includesAny(message, BROWSER_TEXTS.forbidden)) {
    return (
      `the native host is installed but not allowed for this extension's id (${id}): its manifest's ${allowList} doesn't list ${allowed}. ` +
      (onPage ? "Register it for this extension with the steps below" : `Install it again with ${install}`)
    );
  }
  if (includesAny(message, BROWSER_TEXTS.crashed)) {
    return (
      `the native host crashed at start (the browser said: ${quoted(message)}). Run \`${command} doctor\`, which checks ` +
      "that it answers hello; its log (<data dir>/logs/host.<date>.log) says why it stopped"
    );
  }
  if (error instanceof RequestTimeoutError) {
    return `the native host didn't answer its handshake (${message}). Run \`${command} doctor\` to see where it hangs`;
  }
  if (message.startsWith("can't connect to the native host")) {
    return `the extension can't use native messaging (${message}): add "nativeMessaging" to the permissions in its manifest.json`;
  }
  return `the native host can't be used: ${message}`;
}

function includesAny(message: string, texts: string[]): boolean {
  return texts.some((text) => message.includes(text));
}

/** The browser's own words, without the client's prefix ("the native host disconnected: "). */
function quoted(message: string): string {
  const colon = message.lastIndexOf(": ");
  return `"${colon === -1 ? message : message.slice(colon + 2)}"`;
}

function currentExtensionId(): string | undefined {
  return typeof chrome === "undefined" ? undefined : chrome.runtime?.id;
}

/**
 * The OS as `chrome.runtime.getPlatformInfo().os` names it, from `navigator.platform` ("Win32", "MacIntel",
 * "Linux x86_64"), which pages and workers read at once in both browsers.
 */
export function osOfPlatform(platform: string | undefined): string {
  if (platform?.startsWith("Win")) return "win";
  if (platform?.startsWith("Mac")) return "mac";
  return "linux";
}

function currentOs(): string {
  return osOfPlatform(typeof navigator === "undefined" ? undefined : navigator.platform);
}
