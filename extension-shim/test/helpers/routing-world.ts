/**
 * A world for routing tests: a real host that can be installed, removed and crashed mid-test, the IndexedDB
 * backend's IdbHost on its own fake-indexeddb, one chrome.storage.local, a clock the test moves, and any number
 * of extension contexts (`worker()`: a service worker, a restarted one, an extension page) sharing all of them,
 * plus a client on each store to see what it really holds.
 */

import { randomUUID } from "node:crypto";
import type { TestContext } from "node:test";
import { IDBDatabase, IDBFactory, IDBKeyRange } from "fake-indexeddb";
import { InProcessBackend } from "../../src/backends/in-process.js";
import { IdbHost } from "../../src/backends/indexeddb/host.js";
import { NativeCacheClient, type NativePort } from "../../src/backends/native.js";
import { DEMO_EXTENSION_ID } from "../../src/demo-extension.js";
import { createLlmCache, type LlmCache, type LlmCacheOptions } from "../../src/llm-cache.js";
import { HOST_BINARY, hostConnector, type ChromeNativePort, type HostConnector } from "./chrome-port.js";
import { MemoryStorage } from "./memory-storage.js";
import { tempDir } from "./temp.js";

/** A host binary path that doesn't exist: connectNative then fails as Chrome's does for a host not installed. */
export const MISSING = "/nonexistent/llm-cache-host";

// IdbHost names its key ranges with the global IDBKeyRange, as in a browser; only that is made global here.
(globalThis as { IDBKeyRange?: unknown }).IDBKeyRange ??= IDBKeyRange;

// Chrome gives an extension its id here; the status texts name it in the install command.
const global = globalThis as { chrome?: { runtime?: { id?: string } } };
global.chrome ??= {};
global.chrome.runtime ??= {};
global.chrome.runtime.id = DEMO_EXTENSION_ID;

/** An IdbHost that records the ops it was asked, to show which requests reached the in-browser backend. */
export class RecordingIdbServer {
  readonly ops: string[] = [];
  readonly #host: IdbHost;
  constructor(indexedDB: IDBFactory) {
    this.#host = new IdbHost({ indexedDB });
  }
  handleText(requestText: string): Promise<string> {
    this.ops.push(String((JSON.parse(requestText) as { op?: unknown }).op));
    return this.#host.handleText(requestText);
  }
  close(): void {
    this.#host.close();
  }
}

/** A conversationId as the agent makes them. */
export const session = () => `conv_${randomUUID()}`;

export function world(t: TestContext, options: { installed: boolean }) {
  const hostDir = tempDir();
  const fallbackDb = new IDBFactory();
  let binary = options.installed ? HOST_BINARY : MISSING;
  /** Whether the next write reply from the host is lost: see loseNextWriteReply. */
  let losing = false;
  /** How many more endSession requests the host answers as a full disk does: see failHostEndSessions. */
  let endSessionsFailing = 0;
  /** One connector per connectNative call, so a test can count how often the host was asked. */
  const connectors: HostConnector[] = [];
  const connect = (hostName: string): NativePort => {
    const connector = hostConnector({ dataDir: hostDir.path, binary });
    connectors.push(connector);
    return replyLosing(connector(hostName) as ChromeNativePort);
  };
  /**
   * The port, except that while `losing`, a write's reply never arrives: the host is removed and killed first;
   * and while `endSessionsFailing`, an endSession gets the reply a host on a full disk gives, its port left open.
   */
  const replyLosing = (port: ChromeNativePort): NativePort => {
    const writes = new Set<unknown>();
    const listeners: Array<(message: any) => void> = [];
    return {
      postMessage: (message: { op?: unknown; id?: unknown }) => {
        if (message.op === "endSession" && endSessionsFailing > 0) {
          endSessionsFailing--;
          const reply = { id: message.id, ok: false, error: diskFull(hostDir.path) };
          setImmediate(() => listeners.forEach((listener) => listener(reply)));
          return;
        }
        if (message.op === "write") writes.add(message.id);
        port.postMessage(message);
      },
      disconnect: () => port.disconnect(),
      onDisconnect: port.onDisconnect,
      onMessage: {
        addListener: (listener: (message: any) => void) => {
          listeners.push(listener);
          port.onMessage.addListener((message: { id?: unknown }) => {
            if (!(losing && writes.has(message.id))) return listener(message);
            losing = false;
            binary = MISSING;
            port.kill();
          });
        },
      },
    };
  };
  const servers: RecordingIdbServer[] = [];
  const fallbackServer = () => {
    const server = new RecordingIdbServer(fallbackDb);
    servers.push(server);
    return server;
  };
  const storage = new MemoryStorage();
  const clock = { now: Date.now() };
  const caches: LlmCache[] = [];
  /** A context's cache: a service worker's (a new one after a restart) or a page's, with the same chrome.storage.local. */
  const worker = (more: LlmCacheOptions = {}) => {
    const cache = createLlmCache({
      storage,
      connect,
      indexedDb: () => new InProcessBackend(fallbackServer(), "indexeddb"),
      now: () => clock.now,
      ...more,
    });
    caches.push(cache);
    return cache;
  };
  const hostStore = new NativeCacheClient({ connect: hostConnector({ dataDir: hostDir.path }) });
  const fallbackStore = new InProcessBackend(fallbackServer(), "indexeddb");
  t.after(async () => {
    for (const cache of caches) cache.client.close();
    hostStore.close();
    fallbackStore.close();
    await Promise.all(connectors.map((connector) => connector.closeAll()));
    hostDir.remove();
  });
  /** Descriptions of a session's items in each store: where its items really are. */
  const where = async (sessionId: string) => ({
    host: (await hostStore.list({ sessionId })).items.map((item) => item.description).sort(),
    fallback: (await fallbackStore.list({ sessionId })).items.map((item) => item.description).sort(),
  });
  return {
    worker,
    storage,
    clock,
    connectors,
    servers,
    where,
    /** Clients straight to each store, past every router. */
    hostStore,
    fallbackStore,
    install: () => {
      binary = HOST_BINARY;
    },
    uninstall: () => {
      binary = MISSING;
    },
    /** The host goes away under every context: removed, and each process killed as a crash would. */
    crash: async () => {
      binary = MISSING;
      const ports = connectors.flatMap((connector) => connector.ports).filter((port) => port.connected);
      for (const port of ports) port.kill();
      await Promise.all(ports.map((port) => port.closed));
    },
    /**
     * The host commits the next write it is sent, and then goes away before its reply arrives: removed, and its
     * process killed, so that the writer finds it down.
     */
    loseNextWriteReply: () => {
      losing = true;
    },
    /**
     * The next `count` endSession requests to the host fail as they do while its disk is full: the host answers
     * StorageUnavailableError, removes nothing, and its port stays open. (Filling a disk needs a mount, which the
     * shim's tests can't count on; the host's own full-disk reply is tested in tests/store_faults.rs.)
     */
    failHostEndSessions: (count: number) => {
      endSessionsFailing = count;
    },
    /**
     * The in-browser backend's next read-write IndexedDB transaction aborts, as one does on a transient failure
     * (an I/O error, the browser shutting down); the ones after it work again.
     */
    failNextInBrowserChange: () => {
      const transaction = IDBDatabase.prototype.transaction;
      IDBDatabase.prototype.transaction = function (this: IDBDatabase, ...args: Parameters<typeof transaction>) {
        const tx = transaction.apply(this, args);
        if (args[1] === "readwrite") {
          IDBDatabase.prototype.transaction = transaction;
          tx.abort();
        }
        return tx;
      };
    },
  };
}

/** The error a host answers with while the disk under its store is full (its text as src/store.rs words it). */
function diskFull(dataDir: string) {
  return {
    code: "StorageUnavailableError",
    message: `the disk that holds the cache store (${dataDir}/store) is full: No space left on device (os error 28)`,
    suggestion: "free space on that disk, or delete items or sessions you no longer need, then try again; items already cached can still be read",
  };
}
