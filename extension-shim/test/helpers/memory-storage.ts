/**
 * In-memory chrome.storage areas: values are copied through JSON on the way in and out, as Chrome does, and
 * every key is an ordinary key: a result holds `__proto__` or `constructor` as its own member, as Chrome's do
 * (e2e/test/browserx.e2e.test.mjs checks that in Chromium). A
 * read-only area refuses writes with Chrome's message, as chrome.storage.managed does; getBytesInUse counts
 * each key's length plus its value's JSON length, as Chrome's storage does (0 for managed).
 */

import type { StorageAreaLike, StorageAreaName } from "../../src/legacy/browser-storage.js";
import type { KeyValueStore } from "../../src/storage-area.js";

export const READ_ONLY_ERROR = "This is a read-only store.";

export class MemoryStorage implements KeyValueStore, StorageAreaLike {
  readonly items = new Map<string, string>();
  readonly #readOnly: boolean;

  constructor(options: { readOnly?: boolean } = {}) {
    this.#readOnly = options.readOnly ?? false;
  }

  async get(keys?: string | string[] | null): Promise<Record<string, any>> {
    const found: Array<[string, unknown]> = [];
    for (const key of this.#select(keys)) {
      const text = this.items.get(key);
      if (text !== undefined) found.push([key, JSON.parse(text)]);
    }
    // Object.fromEntries defines members, so "__proto__" becomes a member rather than the prototype.
    return Object.fromEntries(found);
  }

  async set(items: Record<string, unknown>): Promise<void> {
    this.#writable();
    for (const [key, value] of Object.entries(items)) this.items.set(key, JSON.stringify(value));
  }

  async remove(keys: string | string[]): Promise<void> {
    this.#writable();
    for (const key of typeof keys === "string" ? [keys] : keys) this.items.delete(key);
  }

  async clear(): Promise<void> {
    this.#writable();
    this.items.clear();
  }

  async getBytesInUse(keys?: string | string[] | null): Promise<number> {
    if (this.#readOnly) return 0;
    return this.#select(keys).reduce((sum, key) => sum + (this.items.has(key) ? key.length + (this.items.get(key) as string).length : 0), 0);
  }

  #select(keys: string | string[] | null | undefined): string[] {
    return keys === undefined || keys === null ? [...this.items.keys()] : typeof keys === "string" ? [keys] : keys;
  }

  #writable(): void {
    if (this.#readOnly) throw new Error(READ_ONLY_ERROR);
  }
}

/** chrome.storage's four areas, in memory. */
export function memoryAreas(): Record<StorageAreaName, MemoryStorage> {
  return { local: new MemoryStorage(), session: new MemoryStorage(), sync: new MemoryStorage(), managed: new MemoryStorage({ readOnly: true }) };
}
