/**
 * The one sentence both pages open with: which backend keeps this extension's cache. Said calmly, since a cache
 * kept in the browser because the host isn't installed is the normal case for most users, not an error; the
 * install page gives the reason in full beneath it.
 */

import { hostCommand } from "../install-command.js";
import { IN_BROWSER_CHOSEN, type CacheStatus } from "../status.js";

/** How status.ts's reason begins when the browser found no host to start: the host isn't installed. */
const NOT_INSTALLED = "the native host is not installed";

/** Whether the host serves new sessions, and the sentence that says which backend does. */
export function servedBy(status: CacheStatus): { byHost: boolean; sentence: string } {
  if (status.backend === "host" && !status.hostProblem) {
    // The host by its command (`com.example.mail-cache` for com.example.mail_cache), as its user types it.
    const host = status.host ? `${hostCommand(status.hostName)} ${status.host.version}` : "The native host";
    return { byHost: true, sentence: `${host} serves this extension's cache.` };
  }
  if (status.backend === "host") {
    return { byHost: false, sentence: "This extension's cache is unavailable: the native host can't be used, and there is no in-browser cache to fall back to." };
  }
  const inBrowser = "This extension's cache is kept in the browser (IndexedDB)";
  if (status.hostProblem === undefined || status.hostProblem === IN_BROWSER_CHOSEN) return { byHost: false, sentence: `${inBrowser}.` };
  if (status.hostProblem.startsWith(NOT_INSTALLED)) return { byHost: false, sentence: `${inBrowser}; the native host isn't installed.` };
  return { byHost: false, sentence: `${inBrowser}; the native host can't be used.` };
}
