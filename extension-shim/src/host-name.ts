/**
 * The host-name rule where a host name enters the shim from the developer: `createLlmCache({ hostName })` and the
 * pages' `hostName` setting (pages/config.ts). It is the host's own rule (src/host_name.rs's `HOST_NAME_RULE`),
 * so a name the shim takes is one `install --host-name` and `scripts/release.sh --host-name` take too: a
 * misspelt name is a TypeError where it is given, not a "host not found" for the extension's users to puzzle over.
 */

import { NATIVE_HOST_NAME } from "./protocol.js";

/** The longest host name taken (the host's MAX_HOST_NAME_BYTES: the name becomes file, folder and key names). */
export const MAX_HOST_NAME_CHARS = 128;

/** The rule, in the host's words. */
export const HOST_NAME_RULE =
  "a host name is Chrome's: lowercase letters, digits, '_' and '.', with no '.' at either end and no '..'; here also " +
  "a reverse domain name with at least one '.', at most 128 characters, whose last part (which names the command) " +
  "starts with a letter or digit and is at least 2 characters, e.g. com.example.mail_cache";

/** The default host's command, which no other host may have. */
const DEFAULT_COMMAND = "llm-cache-host";

/** Whether `name` follows HOST_NAME_RULE and, if it isn't the default host, doesn't take the default's command. */
export function isHostName(name: string): boolean {
  if (name.length > MAX_HOST_NAME_CHARS || !/^[a-z0-9_]+(\.[a-z0-9_]+)+$/.test(name)) return false;
  const last = name.slice(name.lastIndexOf(".") + 1);
  if (last.length < 2 || last.startsWith("_")) return false;
  return name === NATIVE_HOST_NAME || last.replace(/_/g, "-") !== DEFAULT_COMMAND;
}

/** `value` when it is a host name, else a TypeError saying the rule; `where` names the option. */
export function checkHostName(value: unknown, where: string): string {
  if (typeof value === "string" && isHostName(value)) return value;
  const actual = typeof value === "string" ? JSON.stringify(value.slice(0, MAX_HOST_NAME_CHARS + 1)) : typeof value;
  throw new TypeError(`${where} must be a host name, ${HOST_NAME_RULE}; it is ${actual}`);
}
