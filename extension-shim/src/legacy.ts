/**
 * The old StorageTool's plain key-value calls on chrome.storage.local, kept so that existing callers don't
 * break: `get`, `set` and `remove` with a `key` (and a `value` for `set`).
 *
 * They don't go through the native host, so they keep working when it isn't installed. Their output is marked
 * legacy so the LLM can tell it apart from the cache.
 */

import { InvalidRequestError } from "./errors.js";
import type { KeyValueStore } from "./storage-area.js";

export const LEGACY_ACTIONS = ["get", "set", "remove"] as const;
export type LegacyAction = (typeof LEGACY_ACTIONS)[number];

/** Starts every legacy answer, so that it can't be mistaken for an answer from the cache. */
const MARK = "[legacy chrome.storage.local]";

export function isLegacyAction(action: unknown): action is LegacyAction {
  return (LEGACY_ACTIONS as readonly unknown[]).includes(action);
}

export async function runLegacy(
  storage: KeyValueStore,
  action: LegacyAction,
  args: { key?: unknown; value?: unknown },
): Promise<string> {
  switch (action) {
    case "get": {
      const keys = legacyKeys(args.key);
      const found = await storage.get(keys);
      const lines = keys.map((key) =>
        key in found ? `${key} = ${JSON.stringify(found[key])}` : `${key} is not set`,
      );
      return `${MARK} ${lines.join("\n")}`;
    }
    case "set": {
      const key = legacyKeys(args.key, true)[0] as string;
      if (args.value === undefined) {
        throw new InvalidRequestError({
          message: "set needs a value",
          suggestion: 'call set with "key" and "value"; for cached results use "write" instead',
        });
      }
      await storage.set({ [key]: args.value });
      return `${MARK} set ${key}`;
    }
    case "remove": {
      const keys = legacyKeys(args.key);
      await storage.remove(keys);
      return `${MARK} removed ${keys.join(", ")}`;
    }
  }
}

/** The old tool took one key or a list of them (except for set), as chrome.storage.local does. */
function legacyKeys(key: unknown, single = false): string[] {
  const keys = Array.isArray(key) && !single ? key : [key];
  if (keys.length === 0 || !keys.every((k) => typeof k === "string" && k !== "")) {
    throw new InvalidRequestError({
      message: single ? "set needs a key: a non-empty string" : "get and remove need a key: a non-empty string or a list of them",
      expected: "a non-empty string",
      actual: describeType(key),
      suggestion: 'pass "key" as a non-empty string',
    });
  }
  return keys as string[];
}

function describeType(value: unknown): string {
  if (value === undefined) return "nothing";
  if (value === null) return "null";
  return Array.isArray(value) ? "an array" : `a ${typeof value}`;
}
