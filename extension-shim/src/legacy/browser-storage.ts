/**
 * The old `browser_storage` tool, kept whole for the LLM calls that still use it: the same name, the same
 * parameter schema, every action on every chrome.storage area, and the same answers, as browserx's
 * src/tools/StorageTool.ts defines them. That file is the contract; this is a separate implementation of it.
 *
 * What the old tool does, and so what this does:
 * - `action` is get, set, remove, clear, keys, getBytesInUse, migrate or sync; `storageType` is local, session,
 *   sync or managed (managed is read-only: Chrome refuses writes with "This is a read-only store.").
 * - `options.namespace` prefixes keys as `<namespace>:<key>` and limits get, keys and clear to them.
 * - With a namespace or a `ttl` (ms), a value is stored wrapped as `{value, timestamp, ttl?, namespace?}`, and
 *   get hides it once `now > timestamp + ttl`. Without either, the value is stored as it is.
 * - The answer is BaseTool's envelope: `{success: true, data, metadata: {duration, toolName}}`, or
 *   `{success: false, error: "Error: Failed to …: Error: …", metadata: {duration, toolName, errorType}}`.
 *   A failure resolves rather than rejects, as it always did, so the LLM reads the same JSON as before.
 *
 * Options the old tool declared but never used (retryCount, compress, encrypt, syncPriority) are accepted and
 * ignored, as before.
 *
 * One answer differs from the old tool's, on purpose: what `get` finds is text of unknown origin (a page's
 * content the LLM stored, or anything else that wrote to chrome.storage), so it comes back as a string, its JSON
 * text between `<untrusted-ID>` and `</untrusted-ID>` as every untrusted body the cache shows (provenance.ts).
 *
 * Every key is an ordinary key, as it is to chrome.storage: `__proto__`, `constructor` or `toString` is stored,
 * found and removed like any other. So the objects handed to chrome.storage and to the LLM are built with
 * Object.fromEntries, which defines each key as the object's own member (an assignment `items["__proto__"] = v`
 * would set the object's prototype instead), and a key is looked up only among an object's own members.
 */

import type { BrowserxJsonSchema, BrowserxToolDefinition } from "../adapters/browserx-types.js";
import { assembleReply, fence } from "../provenance.js";

export const BROWSER_STORAGE_TOOL_NAME = "browser_storage";

export const BROWSER_STORAGE_ACTIONS = ["get", "set", "remove", "clear", "keys", "getBytesInUse", "migrate", "sync"] as const;
export const STORAGE_AREA_NAMES = ["local", "session", "sync", "managed"] as const;
export type StorageAreaName = (typeof STORAGE_AREA_NAMES)[number];

/** The promise form of a chrome.storage area; chrome.storage.local and its siblings fit it. */
export interface StorageAreaLike {
  get(keys: string | string[] | null): Promise<Record<string, any>>;
  set(items: Record<string, any>): Promise<void>;
  remove(keys: string | string[]): Promise<void>;
  clear(): Promise<void>;
  getBytesInUse(keys: string | string[] | null): Promise<number>;
}

export type StorageAreas = Record<StorageAreaName, StorageAreaLike>;

/** The definition exactly as browserx registers it (its createToolDefinition drops the enums and defaults). */
export function browserStorageDefinition(): BrowserxToolDefinition {
  return {
    type: "function",
    function: {
      name: BROWSER_STORAGE_TOOL_NAME,
      description: "Manage Chrome storage - get, set, remove, clear data across local, session, sync, and managed storage",
      strict: false,
      parameters: {
        type: "object",
        properties: {
          action: { type: "string", description: "The storage action to perform" },
          storageType: { type: "string", description: "Type of storage to use" },
          key: { type: "string", description: "Storage key for single-key operations" },
          keys: { type: "array", items: { type: "string" }, description: "Array of storage keys for multi-key operations" },
          value: { type: "string", description: "Value to store (will be JSON serialized)" },
          // browserx's JsonSchema type has no description on objects, though its tool sent one; `properties: {}`
          // means what the old bare {type: "object"} meant, any object, to browserx's check and to the API.
          data: described({ type: "object", properties: {} }, "Object with key-value pairs for batch operations"),
          options: described(
            {
              type: "object",
              properties: {
              timeout: { type: "number", description: "Operation timeout (ms)" },
              retryCount: { type: "number", description: "Number of retry attempts" },
              compress: { type: "boolean", description: "Compress data before storage" },
              encrypt: { type: "boolean", description: "Encrypt sensitive data" },
              ttl: { type: "number", description: "Time to live (ms)" },
              namespace: { type: "string", description: "Storage namespace for key isolation" },
              syncPriority: { type: "string", description: "Sync priority for sync storage" },
              },
            },
            "Additional options for storage operations",
          ),
        },
        required: ["action", "storageType"],
        additionalProperties: false,
      },
    },
  };
}

function described<T extends BrowserxJsonSchema>(schema: T, description: string): T & { description: string } {
  return Object.assign(schema, { description });
}

/** BaseTool's result envelope, which is what the LLM read from the old tool (as JSON). */
export type LegacyToolResult =
  | { success: true; data: unknown; metadata: { duration: number; toolName: string } }
  | { success: false; error: string; metadata: { duration: number; toolName: string; errorType: string } };

interface StorageOptions {
  timeout?: number;
  ttl?: number;
  namespace?: string;
}

interface LegacyRequest {
  action?: string;
  storageType?: string;
  key?: string;
  keys?: string[];
  value?: unknown;
  data?: Record<string, any>;
  options?: StorageOptions;
}

/** The old tool's timeout for one chrome.storage call, unless `options.timeout` says otherwise. */
const DEFAULT_TIMEOUT_MS = 5000;

/** The old tool's idea of each area's quota, reported by getBytesInUse. */
const QUOTA_BYTES: Record<StorageAreaName, number> = { local: 5_242_880, session: 10_485_760, sync: 102_400, managed: 5_242_880 };

export interface BrowserStorageOptions {
  /** The areas to use; chrome.storage's by default, looked up when a call needs them. */
  areas?: StorageAreas;
  /** The clock for ttl; Date.now by default. */
  now?: () => number;
}

export class BrowserStorageTool {
  readonly name = BROWSER_STORAGE_TOOL_NAME;
  readonly definition: BrowserxToolDefinition = browserStorageDefinition();
  readonly #areas: StorageAreas | undefined;
  readonly #now: () => number;

  constructor(options: BrowserStorageOptions = {}) {
    this.#areas = options.areas;
    this.#now = options.now ?? Date.now;
  }

  /** Runs one call and resolves with the old tool's envelope, failures included. */
  async execute(parameters: Record<string, any>): Promise<LegacyToolResult> {
    const started = Date.now();
    try {
      const data = await this.#run(parameters as LegacyRequest);
      return { success: true, data, metadata: { duration: Date.now() - started, toolName: this.name } };
    } catch (error) {
      const errorType = (error as object | null | undefined)?.constructor?.name ?? "Error";
      return { success: false, error: formatError(error), metadata: { duration: Date.now() - started, toolName: this.name, errorType } };
    }
  }

  async #run(request: LegacyRequest): Promise<unknown> {
    const areas = await this.#resolveAreas();
    const area = areaOf(areas, request.storageType);
    const options = request.options ?? {};
    const timeout = options.timeout || DEFAULT_TIMEOUT_MS;
    const keyed = (key: string) => (options.namespace ? `${options.namespace}:${key}` : key);
    // One key, a list of keys, or (null) neither: everything for get and getBytesInUse, an error for remove.
    const selection = () => (request.key ? keyed(request.key) : request.keys ? request.keys.map(keyed) : null);

    switch (request.action) {
      case "get":
        return failsAs("Failed to get storage value", async () => {
          const found = await withTimeout(area.get(selection()), timeout);
          const values = this.#visible(found, options.namespace);
          if (request.key) return { value: Object.hasOwn(values, request.key) ? fenced(values[request.key]) : undefined };
          return { values: fenced(values) };
        });
      case "set":
        return failsAs("Failed to set storage value", async () => {
          let items: Array<[string, unknown]>;
          if (request.key && request.value !== undefined) {
            items = [[keyed(request.key), this.#entry(request.value, options)]];
          } else if (request.data) {
            items = Object.entries(request.data).map(([key, value]) => [keyed(key), this.#entry(value, options)]);
          } else {
            throw new Error("Either key+value or data object is required for set action");
          }
          await withTimeout(area.set(Object.fromEntries(items)), timeout);
          return { success: true };
        });
      case "remove":
        return failsAs("Failed to remove storage value", async () => {
          const keys = selection();
          if (keys === null) throw new Error("Either key or keys is required for remove action");
          await withTimeout(area.remove(keys), timeout);
          return { success: true };
        });
      case "clear":
        return failsAs("Failed to clear storage", async () => {
          if (options.namespace) {
            const prefix = `${options.namespace}:`;
            const keys = Object.keys(await area.get(null)).filter((key) => key.startsWith(prefix));
            if (keys.length > 0) await area.remove(keys);
          } else {
            await withTimeout(area.clear(), timeout);
          }
          return { success: true };
        });
      case "keys":
        return failsAs("Failed to get storage keys", async () => {
          const keys = Object.keys(await withTimeout(area.get(null), timeout));
          if (!options.namespace) return { keys };
          const prefix = `${options.namespace}:`;
          return { keys: keys.filter((key) => key.startsWith(prefix)).map((key) => key.slice(prefix.length)) };
        });
      case "getBytesInUse":
        return failsAs("Failed to get bytes in use", async () => {
          const used = await withTimeout(area.getBytesInUse(selection()), timeout);
          const total = QUOTA_BYTES[request.storageType as StorageAreaName];
          return { bytesInUse: used, quota: { available: total - used, used, total, percentage: (used / total) * 100 } };
        });
      case "migrate":
        return this.#migrate(areas, request);
      case "sync":
        if (request.storageType !== "sync") throw new Error("Sync action is only available for sync storage type");
        return failsAs("Failed to sync storage", async () => {
          await areas.sync.get(null);
          return { success: true, synced: 1 };
        });
      default:
        throw new Error(`Unsupported storage action: ${request.action}`);
    }
  }

  /** Copies all of one area (or the listed keys, under any namespace) into another. */
  async #migrate(areas: StorageAreas, request: LegacyRequest): Promise<unknown> {
    const { fromType, toType, removeFromSource } = request.data ?? {};
    if (!fromType || !toType) throw new Error("Migration requires fromType and toType in data object");
    return failsAs("Failed to migrate data", async () => {
      const from = areaOf(areas, fromType);
      const to = areaOf(areas, toType);
      const source = await from.get(null);
      const wanted = request.keys ?? [];
      const keys = Object.keys(source).filter(
        (key) => wanted.length === 0 || wanted.some((name) => key === name || key.endsWith(`:${name}`)),
      );
      await to.set(Object.fromEntries(keys.map((key) => [key, source[key]])));
      if (removeFromSource) await from.remove(keys);
      return { migrated: keys.length, success: true };
    });
  }

  /** What get shows of stored items: the namespace's own (prefix removed), unwrapped, expired ones left out. */
  #visible(found: Record<string, any>, namespace: string | undefined): Record<string, unknown> {
    const prefix = namespace ? `${namespace}:` : "";
    const values: Array<[string, unknown]> = [];
    for (const [key, stored] of Object.entries(found)) {
      if (!key.startsWith(prefix)) continue;
      let value = stored;
      if (isWrapped(stored)) {
        if (stored.ttl && this.#now() > stored.timestamp + stored.ttl) continue;
        value = stored.value;
      }
      values.push([key.slice(prefix.length), value]);
    }
    return Object.fromEntries(values);
  }

  /** A value as the old tool stored it: as it is, or wrapped when it has a ttl or a namespace. */
  #entry(value: unknown, options: StorageOptions): unknown {
    if (!options.ttl && !options.namespace) return value;
    return {
      value,
      timestamp: this.#now(),
      ...(options.ttl ? { ttl: options.ttl } : {}),
      ...(options.namespace ? { namespace: options.namespace } : {}),
    };
  }

  async #resolveAreas(): Promise<StorageAreas> {
    if (this.#areas) return this.#areas;
    if (typeof chrome === "undefined" || !chrome.storage) throw new Error("Chrome extension APIs not available");
    if (chrome.permissions && !(await chrome.permissions.contains({ permissions: ["storage"] }))) {
      throw new Error("Missing required permissions: storage");
    }
    return {
      local: chrome.storage.local,
      session: chrome.storage.session,
      sync: chrome.storage.sync,
      managed: chrome.storage.managed,
    } as StorageAreas;
  }
}

function areaOf(areas: StorageAreas, name: unknown): StorageAreaLike {
  if (!(STORAGE_AREA_NAMES as readonly unknown[]).includes(name)) throw new Error(`Unsupported storage type: ${name}`);
  return areas[name as StorageAreaName];
}

function isWrapped(value: unknown): value is { value: unknown; timestamp: number; ttl?: number } {
  return typeof value === "object" && value !== null && Object.hasOwn(value, "value") && Object.hasOwn(value, "timestamp");
}

/** Runs `body`, and words its failure as the old tool did: "<what>: Error: <reason>". */
async function failsAs<T>(what: string, body: () => Promise<T>): Promise<T> {
  try {
    return await body();
  } catch (error) {
    throw new Error(`${what}: ${String(error)}`);
  }
}

function withTimeout<T>(operation: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Operation timed out after ${ms}ms`)), ms);
  });
  return Promise.race([operation, timeout]).finally(() => clearTimeout(timer));
}

/** BaseTool's formatError: an Error as "Name: message". */
function formatError(error: unknown): string {
  if (typeof error === "string") return error;
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return "Unknown error occurred";
}

/**
 * What `get` found, as the LLM may read it: its JSON text fenced with an id drawn for this answer. Nothing stored
 * records where a chrome.storage value came from, so every value is fenced, as an item of unknown origin is.
 */
function fenced(value: unknown): string | undefined {
  return value === undefined ? undefined : assembleReply([fence(value)]);
}
