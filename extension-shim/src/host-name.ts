/**
 * The host-name rule where a host name enters the shim from the developer: `createLlmCache({ hostName })` and the
 * pages' `hostName` setting (pages/config.ts). It is the host's own rule (src/host_name.rs's `HOST_NAME_RULE`),
 * so a name the shim takes is one `install --host-name` and `scripts/release.sh --host-name` take too: a
 * misspelt name is a TypeError where it is given, not a "host not found" for the extension's users to puzzle over.
 */

/**
 * The longest host name taken (the host's MAX_HOST_NAME_BYTES): on Windows the name is a folder and, twice, in the
 * path of the host's files, which must stay within MAX_PATH.
 */
export const MAX_HOST_NAME_CHARS = 88;

/** The names Windows keeps for devices, which no part of a host name (a file and folder name there) may be. */
const WINDOWS_DEVICE_PART = /(^|\.)(con|prn|aux|nul|com[0-9]|lpt[0-9])(\.|$)/i;

/** The rule, in the host's words. */
export const HOST_NAME_RULE =
  "a host name is Chrome's: lowercase letters, digits, '_' and '.', with no '.' at either end and no '..'; here also " +
  `a reverse domain name with at least one '.', at most ${MAX_HOST_NAME_CHARS} characters, that starts with a letter or digit, ` +
  "whose last part starts with a letter or digit and is at least 2 characters, and with no part that Windows keeps for a device " +
  "(con, prn, aux, nul, com0 to com9, lpt0 to lpt9), e.g. com.example.mail_cache";

/** Whether `name` follows HOST_NAME_RULE. */
export function isHostName(name: string): boolean {
  if (name.length > MAX_HOST_NAME_CHARS || !/^[a-z0-9][a-z0-9_]*(\.[a-z0-9_]+)+$/.test(name)) return false;
  if (WINDOWS_DEVICE_PART.test(name)) return false;
  const last = name.slice(name.lastIndexOf(".") + 1);
  return last.length >= 2 && !last.startsWith("_");
}

/** `value` when it is a host name, else a TypeError saying the rule; `where` names the option. */
export function checkHostName(value: unknown, where: string): string {
  if (typeof value === "string" && isHostName(value)) return value;
  const actual = typeof value === "string" ? JSON.stringify(value.slice(0, MAX_HOST_NAME_CHARS + 1)) : typeof value;
  throw new TypeError(`${where} must be a host name, ${HOST_NAME_RULE}; it is ${actual}`);
}
