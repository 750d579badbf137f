/**
 * NativeCacheClient: the one place that talks to the native host, through a `chrome.runtime.connectNative` port.
 *
 * It owns the port's whole life: the `hello` handshake before anything else is sent, request ids and the
 * table of pending requests (so requests can be pipelined), a timeout on every request, and reassembly of
 * chunked and gzipped replies. When the port drops, everything pending is rejected and the next call connects
 * again, which starts a new host process. The typed calls and the mapping of error replies to typed errors are
 * ProtocolClient's (backend.ts), shared with every other backend.
 *
 * The port is injected (`connect`) so that tests can hand in a fake one that frames messages as Chrome does.
 */

import {
  ProtocolClient,
  SharedAttempt,
  messageOf,
  resultOf,
  unwritableRequestError,
  type ConnectionRequest,
  type RequestOptions,
} from "../backend.js";
import {
  CacheError,
  InvalidRequestError,
  MessageTooLargeError,
  RequestTimeoutError,
  StorageUnavailableError,
} from "../errors.js";
import {
  MAX_REQUEST_BYTES,
  NATIVE_HOST_NAME,
  isChunkFrame,
  utf8Length,
  type ChunkFrame,
  type HelloResult,
  type Reply,
} from "../protocol.js";
import { checkHostName } from "../host-name.js";
import { IdleTimer } from "../idle-timer.js";

/** The part of `chrome.runtime.Port` the client uses; a real port fits it, and so can a test's fake. */
export interface NativePort {
  postMessage(message: unknown): void;
  disconnect(): void;
  readonly onMessage: { addListener(callback: (message: any) => void): void };
  readonly onDisconnect: { addListener(callback: (port: any) => void): void };
  /** Firefox gives the reason for a disconnect here, where Chrome uses runtime.lastError. */
  readonly error?: { message?: string } | null | undefined;
}

export type ConnectNative = (hostName: string) => NativePort;

export interface ClientOptions {
  /** Opens a port to the host; `chrome.runtime.connectNative` by default. */
  connect?: ConnectNative;
  /** How long a request may wait for its reply before it fails; DEFAULT_TIMEOUT_MS by default. */
  timeoutMs?: number;
  /**
   * The registered host name; NATIVE_HOST_NAME by default. A name against the host's rule (host-name.ts) is a
   * TypeError here, since no host could be installed under it.
   */
  hostName?: string;
  /**
   * How long the port may stay open with nothing to do before the client closes it; DEFAULT_IDLE_CLOSE_MS by
   * default, 0 to keep it open. An open native port keeps an MV3 service worker alive, so a port that outlives
   * its work would keep the worker (and the host) running forever. The next call simply connects again.
   */
  idleCloseMs?: number;
  /**
   * Ask the host for gzip replies (PROTOCOL.md section 3.5): large replies then cross Chrome's transport in a
   * third to half of their bytes. On by default wherever DecompressionStream exists.
   */
  compression?: boolean;
}

/**
 * Generous on purpose: a 5 MB write takes tens of milliseconds, but requests on one port are answered one at a
 * time, so a request queued behind others waits for them too. The timeout is there to stop a lost reply from
 * hanging a caller forever, not to hurry the host.
 */
export const DEFAULT_TIMEOUT_MS = 30_000;

/** About Chrome's own idle limit for an extension service worker, so the port never keeps one alive by itself. */
export const DEFAULT_IDLE_CLOSE_MS = 30_000;

/**
 * Ids wrap before 2^31: Chrome writes a message's numbers through a double, and integers past the int32 range
 * can come out as "2147483648.0", which the host doesn't accept as an id (PROTOCOL.md section 3.1).
 */
const MAX_REQUEST_ID = 2 ** 31 - 1;

interface PendingRequest {
  op: string;
  resolve: (result: unknown) => void;
  reject: (error: CacheError) => void;
  timer: ReturnType<typeof setTimeout>;
}

/** An open port whose host has passed the handshake. */
interface Connection {
  port: NativePort;
  hello: HelloResult;
}

/** The parts of one chunked reply received so far. */
interface PartialReply {
  parts: string[];
  received: number;
}

export class NativeCacheClient extends ProtocolClient {
  override readonly kind = "host";
  readonly #connect: ConnectNative;
  readonly #hostName: string;
  readonly #timeoutMs: number;
  readonly #idleCloseMs: number;
  readonly #compression: boolean;
  /** Callers' calls under way; the port counts as idle only when there are none. */
  #calls = 0;
  /** Closes the port once no call has been under way for idleCloseMs (made in the constructor). */
  readonly #idle: IdleTimer;
  /** The open port, if any. Events from any other (older) port are ignored. */
  #port: NativePort | undefined;
  /** Settles when the current port's handshake does; every request waits for it before being sent. */
  readonly #ready = new SharedAttempt(() => this.#handshake());
  #hello: HelloResult | undefined;
  /** Requests sent on the current port and not yet answered, in the order they were sent. */
  readonly #pending = new Map<number, PendingRequest>();
  /** Chunked replies being put together, by request id. */
  readonly #partial = new Map<number | string | null, PartialReply>();
  #lastId = 0;

  constructor(options: ClientOptions = {}) {
    super();
    this.#connect = options.connect ?? ((hostName) => chrome.runtime.connectNative(hostName));
    this.#hostName = options.hostName === undefined ? NATIVE_HOST_NAME : checkHostName(options.hostName, "hostName");
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#idleCloseMs = options.idleCloseMs ?? DEFAULT_IDLE_CLOSE_MS;
    this.#compression = options.compression ?? true;
    this.#idle = new IdleTimer(
      this.#idleCloseMs,
      () => this.#calls > 0,
      () => {
        if (this.#port) this.#drop(this.#port, new StorageUnavailableError({ message: "the idle port to the native host was closed" }));
      },
    );
  }

  /** The name of the host this client connects to (`connectNative`'s argument). */
  get hostName(): string {
    return this.#hostName;
  }

  /** The host's `hello` result while a port is open; undefined before the first call and after a drop. */
  get hostInfo(): HelloResult | undefined {
    return this.#hello;
  }

  /** Connects (if not connected) and returns the host's `hello` result. */
  override hello(): Promise<HelloResult> {
    return this.#busy(async () => (await this.#open()).hello);
  }

  /**
   * Asks the host again, as of now: when no call is under way, the open port (if any) is closed and a new one
   * made, so a host installed, updated or removed since the last handshake is seen as it now is (a new port
   * starts the host binary the browser's manifest names today). While calls are under way their port is
   * evidently answering, so it is kept and its handshake's result returned.
   */
  recheck(): Promise<HelloResult> {
    const port = this.#port;
    if (port !== undefined && this.#calls === 0) {
      this.#drop(port, new StorageUnavailableError({ message: "the port to the native host was closed to ask the host again" }));
    }
    return this.hello();
  }

  /**
   * Sends one request and resolves with its `result`, or rejects with a CacheError. Any number of requests may
   * be in flight at once; each is matched to its reply by id.
   */
  override request<T>(op: string, fields: object, options: RequestOptions = {}): Promise<T> {
    return this.#busy(async () => {
      const { port } = await this.#open();
      return (await this.#send(port, op, fields, options.timeoutMs ?? this.#timeoutMs)) as T;
    });
  }

  /** Runs a caller's call with the idle close held off from its start until it has settled. */
  async #busy<T>(call: () => Promise<T>): Promise<T> {
    this.#calls++;
    try {
      return await call();
    } finally {
      this.#calls--;
      if (this.#calls === 0 && this.#idleCloseMs > 0 && this.#port !== undefined) this.#idle.used();
    }
  }

  /** Closes the port (the host then exits). Pending requests fail; the next call connects again. */
  override close(): void {
    if (this.#port) {
      this.#drop(this.#port, new StorageUnavailableError({ message: "the client closed its port to the native host" }));
    }
  }

  /**
   * Returns the open port, connecting and shaking hands first if there is none. (A drop after a successful
   * handshake forgets it in #drop.)
   */
  #open(): Promise<Connection> {
    return this.#ready.get();
  }

  async #handshake(): Promise<Connection> {
    let port: NativePort;
    try {
      port = this.#connect(this.#hostName);
    } catch (error) {
      // connectNative throws at once without the nativeMessaging permission or outside an extension.
      throw new StorageUnavailableError({ message: `can't connect to the native host: ${messageOf(error)}` });
    }
    this.#port = port;
    port.onMessage.addListener((message) => this.#receive(port, message));
    port.onDisconnect.addListener(() => {
      const reason = disconnectReason(port);
      this.#drop(port, new StorageUnavailableError({ message: `the native host disconnected: ${reason}` }));
    });

    // Nothing else is sent before the host has said which protocol it speaks.
    const request: ConnectionRequest = async (op, fields) =>
      (await this.#send(port, op, fields, this.#timeoutMs)) as never;
    let hello: HelloResult;
    try {
      // Large replies come gzipped when this context can decode them (PROTOCOL.md section 3.5).
      const fields = this.#compression && typeof DecompressionStream === "function" ? { encodings: ["gzip"] } : {};
      hello = await this.acceptConnection(await this.#send(port, "hello", fields, this.#timeoutMs), request);
    } catch (error) {
      // A port whose handshake failed is of no use; closing it also ends its host process.
      this.#drop(port, error as CacheError);
      throw error;
    }
    this.#hello = hello;
    return { port, hello };
  }

  #send(port: NativePort, op: string, fields: object, timeoutMs: number): Promise<unknown> {
    // Only the current port's requests are in #pending, which is what #drop fails; never send on another.
    if (port !== this.#port) {
      return Promise.reject(new StorageUnavailableError({ message: "the port to the native host was closed" }));
    }
    this.#lastId = this.#lastId >= MAX_REQUEST_ID ? 1 : this.#lastId + 1;
    const id = this.#lastId;
    const message = { ...fields, id, op };

    // Chrome measures the message's JSON text; measuring ours gives a typed error instead of a throw from
    // postMessage (or, in another browser, a message the host would have to skip). Serialising a 5 MB
    // payload only to measure it costs about 2 ms per MB, so a cheap upper bound comes first, and only a
    // message that might be over the limit is measured exactly.
    if (jsonBytesAtMost(message, MAX_REQUEST_BYTES) > MAX_REQUEST_BYTES) {
      let text: string;
      try {
        text = JSON.stringify(message);
      } catch (error) {
        return Promise.reject(unwritableRequestError(error));
      }
      const bytes = utf8Length(text);
      if (bytes > MAX_REQUEST_BYTES) return Promise.reject(new MessageTooLargeError(bytes));
    }

    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => this.#timeOut(port, id, timeoutMs), timeoutMs);
      this.#pending.set(id, { op, resolve, reject, timer });
      try {
        port.postMessage(message);
      } catch (error) {
        const reason = messageOf(error);
        if (/disconnected/i.test(reason)) {
          // Chrome and Firefox throw this when the port is already disconnected: everything on it is lost.
          this.#drop(port, new StorageUnavailableError({ message: `can't send to the native host: ${reason}` }));
          return;
        }
        // Anything else concerns this one message, which was never written to the host: Chrome can't serialise
        // data nested more than about 2,400 levels deep ("Could not serialize message."). So only this request
        // fails; the port and the requests on it carry on.
        clearTimeout(timer);
        this.#pending.delete(id);
        reject(
          new InvalidRequestError({
            message: `the browser couldn't send the request to the native host: ${reason}`,
            suggestion:
              "send the data less deeply nested (browsers can't send data nested a few thousand levels deep), " +
              "or as JSON text in a string",
          }),
        );
      }
    });
  }

  #receive(port: NativePort, message: unknown): void {
    if (port !== this.#port) return;
    let reply = message as Reply;
    if (isChunkFrame(message)) {
      const text = this.#collect(message);
      if (text === undefined) return;
      try {
        reply = JSON.parse(text) as Reply;
      } catch {
        this.#drop(port, new StorageUnavailableError({ message: "the native host sent a chunked reply that isn't JSON" }));
        return;
      }
    }
    if (reply.encoding === "gzip" && typeof reply.payload === "string") {
      gunzipReply(reply.payload).then(
        (decoded) => this.#settle(decoded),
        (error) =>
          this.#drop(port, new StorageUnavailableError({ message: `the native host sent a gzip reply that can't be read: ${messageOf(error)}` })),
      );
      return;
    }
    this.#settle(reply);
  }

  /** Adds a chunk; returns the reply's whole JSON text once every chunk of it is in. */
  #collect(frame: ChunkFrame): string | undefined {
    const partial = this.#partial.get(frame.id) ?? { parts: [], received: 0 };
    if (partial.parts[frame.chunk] === undefined) partial.received++;
    partial.parts[frame.chunk] = frame.part;
    if (partial.received < frame.chunks) {
      this.#partial.set(frame.id, partial);
      return undefined;
    }
    this.#partial.delete(frame.id);
    return partial.parts.join("");
  }

  #settle(reply: Reply): void {
    // The host answers "id": null when it couldn't read a request's id. Replies come in request order
    // (PROTOCOL.md section 3.1), so that reply belongs to the oldest request still waiting.
    const id = reply.id === null ? this.#pending.keys().next().value : reply.id;
    if (typeof id !== "number") return; // not an id this client sends
    const pending = this.#pending.get(id);
    if (!pending) return; // a reply to a request that already timed out
    this.#pending.delete(id);
    clearTimeout(pending.timer);
    try {
      pending.resolve(resultOf(reply));
    } catch (error) {
      pending.reject(error as CacheError);
    }
  }

  #timeOut(port: NativePort, id: number, timeoutMs: number): void {
    const pending = this.#pending.get(id);
    if (!pending) return;
    this.#pending.delete(id);
    pending.reject(new RequestTimeoutError(pending.op, timeoutMs));
    // The host answers in request order, so every request sent after this one is stuck behind it. Dropping
    // the port fails them now instead of one timeout later each, and the next call starts a fresh host.
    this.#drop(
      port,
      new StorageUnavailableError({
        message: `the native host stopped answering (${pending.op} got no reply within ${timeoutMs} ms), so the port was closed`,
      }),
    );
  }

  /** Forgets the port and fails everything that was waiting on it. Events from an older port change nothing. */
  #drop(port: NativePort, error: CacheError): void {
    if (port !== this.#port) return;
    this.#idle.cancel();
    this.#port = undefined;
    this.#ready.forget();
    this.#hello = undefined;
    this.#partial.clear();
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    for (const request of pending) {
      clearTimeout(request.timer);
      request.reject(error);
    }
    try {
      port.disconnect(); // has no effect on a port that is already disconnected
    } catch {
      // nothing more to release
    }
  }
}

/**
 * Chrome's reason for a disconnect ("Native host has exited.", "Specified native messaging host not found.")
 * is readable as runtime.lastError only while onDisconnect listeners run, so it is read there. Reading it also
 * keeps Chrome from logging it as unchecked.
 */
function disconnectReason(port: NativePort): string {
  const chromeError = typeof chrome === "undefined" ? undefined : chrome.runtime?.lastError?.message;
  return port.error?.message ?? chromeError ?? "the port was closed";
}

/** The reply a gzip-encoded reply stands for: base64, then gzip, then JSON text (PROTOCOL.md section 3.5). */
async function gunzipReply(payload: string): Promise<Reply> {
  const bytes = base64Bytes(payload);
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return JSON.parse(await new Response(stream).text()) as Reply;
}

/** Base64 text's bytes: with Uint8Array.fromBase64 where the runtime has it (recent Chrome and Firefox do), which
 * is several times faster than decoding through atob a character at a time. */
function base64Bytes(text: string): Uint8Array<ArrayBuffer> {
  const fromBase64 = (Uint8Array as unknown as { fromBase64?: (text: string) => Uint8Array<ArrayBuffer> }).fromBase64;
  if (fromBase64) return fromBase64.call(Uint8Array, text);
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/** Past this depth the size bound gives up: the value may be a cycle, which only JSON.stringify can tell. */
const MAX_BOUNDED_DEPTH = 1000;

/** A character that JSON text or UTF-8 writes in more than one byte. */
const ESCAPED_OR_MULTIBYTE = /[^\x20\x21\x23-\x5b\x5d-\x7e]/;

/**
 * An upper bound on the UTF-8 bytes of `value`'s JSON text, found without building it: a string's
 * characters can take at most 6 bytes each (`\u001f`), a number at most 24. Its cost is one visit per
 * value, whatever the strings' lengths, and it stops as soon as the bound passes `limit`. Anything JSON can't
 * be sure of (a bigint, a function, a toJSON, an object nested past 1000 levels, which may be a cycle) gives
 * Infinity, and so does a bound past `limit`; the caller then measures exactly. The walk keeps its own stack,
 * so no nesting can overflow the call stack, and a cycle ends at the depth limit.
 */
export function jsonBytesAtMost(value: unknown, limit = Infinity): number {
  let bytes = 0;
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [next, depth] = stack.pop() as [unknown, number];
    if (depth > MAX_BOUNDED_DEPTH) return Infinity;
    switch (typeof next) {
      case "string":
        // A long string of printable ASCII without quotes or backslashes (most text) takes exactly its length, which
        // one native regex test confirms; anything else is bounded by the longest escape, six bytes a unit.
        bytes += (next.length > 1024 && !ESCAPED_OR_MULTIBYTE.test(next) ? next.length : 6 * next.length) + 2;
        break;
      case "number":
        bytes += 24;
        break;
      case "boolean":
        bytes += 5;
        break;
      case "undefined":
        bytes += 4; // left out of an object, null in an array
        break;
      case "object":
        if (next === null) {
          bytes += 4;
        } else if (typeof (next as { toJSON?: unknown }).toJSON === "function") {
          return Infinity;
        } else if (Array.isArray(next)) {
          bytes += 2 + next.length; // brackets, and a comma (at most) per element
          for (const element of next) stack.push([element, depth + 1]);
        } else {
          bytes += 2;
          for (const [key, member] of Object.entries(next)) {
            bytes += 6 * key.length + 4; // the quoted key, its colon and a comma
            stack.push([member, depth + 1]);
          }
        }
        break;
      default:
        return Infinity;
    }
    if (bytes > limit) return Infinity;
  }
  return bytes;
}
