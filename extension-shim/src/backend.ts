/**
 * The one interface every layer above the cache talks to (the tool, offloading, references, session cleanup,
 * the adapters), and the base class that implements its typed calls once.
 *
 * A backend is anything that answers protocol v1's requests: the native host over a port
 * (backends/native.ts), a protocol server in the extension itself (backends/in-process.ts, which the
 * IndexedDB backend uses), or a RoutingBackend that picks one of those per session (routing.ts). The typed
 * calls (`write`, `read`, `list`, …) are written here, over one abstract `request`, and every error reply
 * becomes a typed error through `resultOf`; so every backend takes the same requests and gives the same
 * results and the same errors by construction.
 */

import { CacheError, InvalidRequestError, ProtocolVersionError, StorageUnavailableError, errorFromReply } from "./errors.js";
import { PROTOCOL_VERSION } from "./protocol.js";
import type {
  AppendRequest,
  CacheMetadata,
  CachedItem,
  DeleteResult,
  EndorseRequest,
  EndSessionResult,
  HelloResult,
  KeyRequest,
  ListRequest,
  ListResult,
  ReadManyEntry,
  ReadManyRequest,
  ReadRequest,
  Reply,
  SearchRequest,
  SearchResult,
  SessionsRequest,
  SessionsResult,
  Slice,
  StatsResult,
  UpdateRequest,
  WriteRequest,
} from "./protocol.js";

/** Which store answers: the native host, or the in-browser IndexedDB backend. */
export type BackendKind = "host" | "indexeddb";

/** A result the RoutingBackend has marked with the backend that answered it (`hello`, `stats`, each of `sessions`). */
export type Served<T> = T & { backend: BackendKind };

export interface RequestOptions {
  /** Overrides the backend's timeout for this one request, e.g. for ending a very large session. */
  timeoutMs?: number;
}

/**
 * Runs on every new connection after the handshake and before any caller's request is sent on it. `request`
 * sends on that connection; what the setup sends is therefore settled before anything else goes out.
 * `backend` says which backend connected, since one setup may be registered with several (routing.ts).
 */
export type ConnectSetup = (connection: {
  backend: BackendKind;
  hello: HelloResult;
  request: ConnectionRequest;
}) => Promise<void> | void;
export type ConnectionRequest = <T>(op: string, fields: object) => Promise<T>;

/** The protocol's calls, typed, as every layer above the backends uses them. */
export interface CacheBackend {
  /** Which store answers; for a RoutingBackend, the one new sessions go to now. */
  readonly kind: BackendKind;
  /** Connects (if not connected) and returns the backend's `hello` result. */
  hello(): Promise<HelloResult>;
  /**
   * Like `hello`, but makes a new connection where that shows more than the open one (the native client: a
   * host installed, updated or removed since). Backends without one are asked with `hello`.
   */
  recheck?(): Promise<HelloResult>;
  write(request: WriteRequest, options?: RequestOptions): Promise<CacheMetadata>;
  /** The item, with `slice` on it when the data is a slice (PROTOCOL.md section 4.3). */
  read(request: ReadRequest, options?: RequestOptions): Promise<CachedItem>;
  /**
   * Several items in one round trip and one snapshot, in the order asked: each entry is the item (with
   * `slice` when cut to `maxBytes`), or `{storageKey, error}` for a key that names nothing.
   */
  readMany(request: ReadManyRequest, options?: RequestOptions): Promise<ReadManyEntry[]>;
  list(request: ListRequest, options?: RequestOptions): Promise<ListResult>;
  update(request: UpdateRequest, options?: RequestOptions): Promise<CacheMetadata>;
  append(request: AppendRequest, options?: RequestOptions): Promise<CacheMetadata>;
  search(request: SearchRequest, options?: RequestOptions): Promise<SearchResult>;
  /**
   * Raises an item's trust (PROTOCOL.md section 4.12): for the extension's own code, after its user or its
   * rules vouched for the item. The LLM's tool has no such action.
   */
  endorse(request: EndorseRequest, options?: RequestOptions): Promise<CacheMetadata>;
  delete(request: KeyRequest, options?: RequestOptions): Promise<DeleteResult>;
  endSession(sessionId: string, options?: RequestOptions): Promise<EndSessionResult>;
  stats(sessionId: string, options?: RequestOptions): Promise<StatsResult>;
  /**
   * A page of the extension's sessions that hold items, in sessionId order, with their totals (PROTOCOL.md
   * section 4.11); pass `nextCursor` back as `cursor` for the next page. For extension pages such as a cache
   * viewer: the LLM's tool has no such action. Hosts older than the op answer InvalidRequestError.
   */
  sessions(request?: SessionsRequest, options?: RequestOptions): Promise<SessionsResult>;
  /** Sends one request and resolves with its `result`, or rejects with a CacheError. */
  request<T>(op: string, fields: object, options?: RequestOptions): Promise<T>;
  /**
   * Registers a setup for every new connection (the first and every reconnect). It runs after the handshake
   * and before any other request is sent; if it throws, the connection fails and the next call tries again.
   */
  onConnect(setup: ConnectSetup): void;
  /** Lets go of the connection; the next call connects again. Requests still waiting fail. */
  close(): void;
}

/**
 * The typed calls, once, over an abstract `request` and `hello`. A subclass says how a request travels
 * and how a connection is made; what the requests and results are is decided here.
 */
export abstract class ProtocolClient implements CacheBackend {
  abstract readonly kind: BackendKind;
  abstract request<T>(op: string, fields: object, options?: RequestOptions): Promise<T>;
  abstract close(): void;
  /** Run after every handshake, e.g. to send session cleanups that couldn't be sent before. */
  readonly #connectSetups: ConnectSetup[] = [];

  /**
   * Registers a setup for every new connection (the first and every reconnect). It runs after the handshake
   * and before any other request is sent; if it throws, the connection fails and the next call tries again.
   */
  onConnect(setup: ConnectSetup): void {
    this.#connectSetups.push(setup);
  }

  /**
   * What every new connection passes before a caller's request goes out on it: its `hello` says this
   * protocol version, and every onConnect setup has run, with `request` sending on this connection. A setup's
   * failure that isn't a CacheError becomes StorageUnavailableError.
   *
   * @throws ProtocolVersionError, or the setup's error.
   */
  protected async acceptConnection(hello: unknown, request: ConnectionRequest): Promise<HelloResult> {
    const version = (hello as Partial<HelloResult> | undefined)?.protocolVersion;
    if (version !== PROTOCOL_VERSION) throw new ProtocolVersionError(PROTOCOL_VERSION, version);
    const accepted = hello as HelloResult;
    try {
      for (const setup of this.#connectSetups) await setup({ backend: this.kind, hello: accepted, request });
    } catch (error) {
      throw error instanceof CacheError ? error : new StorageUnavailableError({ message: `connection setup failed: ${messageOf(error)}` });
    }
    return accepted;
  }
  /** Connects if not connected, and returns the `hello` result of the connection's handshake. */
  abstract hello(): Promise<HelloResult>;

  write(request: WriteRequest, options?: RequestOptions): Promise<CacheMetadata> {
    return this.request("write", request, options);
  }

  async read(request: ReadRequest, options?: RequestOptions): Promise<CachedItem> {
    const result = await this.request<{ item: CachedItem; slice?: Slice }>("read", request, options);
    return result.slice === undefined ? result.item : { ...result.item, slice: result.slice };
  }

  async readMany(request: ReadManyRequest, options?: RequestOptions): Promise<ReadManyEntry[]> {
    const result = await this.request<{ items: ReadManyEntry[] }>("read", request, options);
    return result.items;
  }

  list(request: ListRequest, options?: RequestOptions): Promise<ListResult> {
    return this.request("list", request, options);
  }

  update(request: UpdateRequest, options?: RequestOptions): Promise<CacheMetadata> {
    return this.request("update", request, options);
  }

  append(request: AppendRequest, options?: RequestOptions): Promise<CacheMetadata> {
    return this.request("append", request, options);
  }

  search(request: SearchRequest, options?: RequestOptions): Promise<SearchResult> {
    return this.request("search", request, options);
  }

  endorse(request: EndorseRequest, options?: RequestOptions): Promise<CacheMetadata> {
    return this.request("endorse", request, options);
  }

  delete(request: KeyRequest, options?: RequestOptions): Promise<DeleteResult> {
    return this.request("delete", request, options);
  }

  endSession(sessionId: string, options?: RequestOptions): Promise<EndSessionResult> {
    return this.request("endSession", { sessionId }, options);
  }

  stats(sessionId: string, options?: RequestOptions): Promise<StatsResult> {
    return this.request("stats", { sessionId }, options);
  }

  sessions(request: SessionsRequest = {}, options?: RequestOptions): Promise<SessionsResult> {
    return this.request("sessions", request, options);
  }
}

/**
 * A reply's `result`, or its error as a typed error: the one place a reply becomes what a caller sees,
 * whichever backend sent it.
 *
 * # Errors
 * Throws the CacheError class of the reply's error code (errors.ts) when the reply is not `ok`.
 */
export function resultOf(reply: Reply): unknown {
  if (reply.ok === true) return reply.result;
  throw errorFromReply(reply.error);
}

/** The error for a request JSON can't write (a cycle, a BigInt): it is never sent, whatever the backend. */
export function unwritableRequestError(error: unknown): InvalidRequestError {
  return new InvalidRequestError({
    message: `the request can't be sent as JSON: ${messageOf(error)}`,
    suggestion: "send JSON data only: no cycles or BigInts, nested at most a few thousand levels deep",
  });
}

/**
 * A connection being made, shared by every call that arrives while it is: `get()` starts it when there is none.
 * A failed one is forgotten at once, so the next call tries again; `forget()` drops a good one (the connection
 * went away). The catch only marks the promise handled here; callers get the error.
 */
export class SharedAttempt<T> {
  readonly #start: () => Promise<T>;
  #current: Promise<T> | undefined;

  constructor(start: () => Promise<T>) {
    this.#start = start;
  }

  get(): Promise<T> {
    if (!this.#current) {
      const current = this.#start();
      this.#current = current;
      current.catch(() => {
        if (this.#current === current) this.#current = undefined;
      });
    }
    return this.#current;
  }

  forget(): void {
    this.#current = undefined;
  }
}

/** An error's message, or the thrown value as text. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
