/** An in-memory chrome.storage.local: values are copied through JSON on the way in and out, as Chrome does. */

import type { KeyValueStore } from "../../src/storage-area.js";

export class MemoryStorage implements KeyValueStore {
  readonly items = new Map<string, string>();

  async get(keys?: string | string[] | null): Promise<Record<string, unknown>> {
    const wanted = keys === undefined || keys === null ? [...this.items.keys()] : typeof keys === "string" ? [keys] : keys;
    const found: Record<string, unknown> = {};
    for (const key of wanted) {
      const text = this.items.get(key);
      if (text !== undefined) found[key] = JSON.parse(text);
    }
    return found;
  }

  async set(items: Record<string, unknown>): Promise<void> {
    for (const [key, value] of Object.entries(items)) this.items.set(key, JSON.stringify(value));
  }

  async remove(keys: string | string[]): Promise<void> {
    for (const key of typeof keys === "string" ? [keys] : keys) this.items.delete(key);
  }
}
