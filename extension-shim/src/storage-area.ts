/**
 * The key-value store the shim keeps its own small records in, and the one legacy calls go to: the promise
 * form of `chrome.storage.local`. Taken as a parameter so that tests can pass an in-memory one.
 */

export interface KeyValueStore {
  get(keys?: string | string[] | null): Promise<Record<string, unknown>>;
  set(items: Record<string, unknown>): Promise<void>;
  remove(keys: string | string[]): Promise<void>;
}

/** `chrome.storage.local`, looked up when first used so that the shim can be imported outside an extension. */
export function chromeLocalStorage(): KeyValueStore {
  return {
    get: (keys) => chrome.storage.local.get(keys ?? null),
    set: (items) => chrome.storage.local.set(items),
    remove: (keys) => chrome.storage.local.remove(keys),
  };
}
