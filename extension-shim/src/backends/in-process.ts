/**
 * InProcessBackend: a backend whose protocol server runs in the extension itself, such as the IndexedDB
 * backend's `IdbHost`.
 *
 * The server takes a request's JSON text and answers with the reply's JSON text, exactly as the native host
 * does over its pipe. So this backend sends what the native client would post (`{...fields, id, op}`, refused
 * before sending when JSON can't write it or it is over the host's request limit), shakes hands with `hello`
 * before anything else, runs the connect setups (remembered session cleanups) first, and turns the reply into a
 * result or a typed error with the same function as the native client (`resultOf` in backend.ts). Everything
 * above it sees the same calls, results and errors whichever backend serves.
 *
 * A "connection" here is the first use after the backend was made or closed: that is when the handshake and
 * the setups run. There is no port to lose, so nothing reconnects by itself.
 */

import { ProtocolClient, SharedAttempt, messageOf, resultOf, unwritableRequestError, type BackendKind } from "../backend.js";
import { MessageTooLargeError, StorageUnavailableError } from "../errors.js";
import { CONTROL_CHARACTER, MAX_REQUEST_BYTES, SURROGATE, utf8Length, type HelloResult, type Reply } from "../protocol.js";

/** A protocol server in the extension: request text in, reply text out, as the host reads and writes them. */
export interface ProtocolServer {
  /**
   * Answers one request's JSON text with its reply's JSON text. Requests may overlap. `options.stringified` says
   * that JSON.stringify wrote the text in this context, so the server may skip checks that it guarantees, and
   * `options.bytes`, given with it, is the text's UTF-8 length (`utf8Length`), which the server needn't count again.
   */
  handleText(requestText: string, options?: { stringified?: boolean; bytes?: number | undefined }): Promise<string>;
  /**
   * What JSON.parse makes of the reply `handleText` would give for a text JSON.stringify wrote in this context, made
   * more cheaply if the server can (IdbHost doesn't copy a read's data again); undefined for a reply that isn't JSON.
   * `bytes` as for `handleText`.
   */
  handleParsed?(requestText: string, bytes?: number): Promise<unknown>;
  /** Lets go of what the server holds (a database connection). Requests may still come afterwards. */
  close?(): void;
}

/** Ids wrap where the native client's do (below 2^31), so a request's text is the same whichever backend gets it. */
const MAX_REQUEST_ID = 2 ** 31 - 1;

export class InProcessBackend extends ProtocolClient {
  override readonly kind: BackendKind;
  readonly #server: ProtocolServer;
  /** Settles when the current connection's handshake and setups have; every request waits for it. */
  readonly #ready = new SharedAttempt(() => this.#handshake());
  #lastId = 0;

  /** `kind` is what the RoutingBackend and `status()` call this backend: "indexeddb" for the IndexedDB one. */
  constructor(server: ProtocolServer, kind: BackendKind = "indexeddb") {
    super();
    this.#server = server;
    this.kind = kind;
  }

  override hello(): Promise<HelloResult> {
    return this.#open();
  }

  /** `options.timeoutMs` is not used: a server in the extension has no port whose replies could get lost. */
  override async request<T>(op: string, fields: object): Promise<T> {
    await this.#open();
    return (await this.#send(op, fields)) as T;
  }

  /** The next call shakes hands (and runs the setups) again. */
  override close(): void {
    this.#ready.forget();
    this.#server.close?.();
  }

  #open(): Promise<HelloResult> {
    return this.#ready.get();
  }

  async #handshake(): Promise<HelloResult> {
    const hello = await this.#send("hello", {});
    return this.acceptConnection(hello, async <T>(op: string, fields: object) => (await this.#send(op, fields)) as T);
  }

  async #send(op: string, fields: object): Promise<unknown> {
    this.#lastId = this.#lastId >= MAX_REQUEST_ID ? 1 : this.#lastId + 1;
    const message = { ...fields, id: this.#lastId, op };
    let text: string;
    try {
      text = stringifyRequest(message);
    } catch (error) {
      throw unwritableRequestError(error);
    }
    // A UTF-8 byte is at most 3 per UTF-16 unit, so only a text over a third of the limit needs counting; the
    // server is told the count, and so doesn't make it again.
    const bytes = text.length > MAX_REQUEST_BYTES / 3 ? utf8Length(text) : undefined;
    if (bytes !== undefined && bytes > MAX_REQUEST_BYTES) throw new MessageTooLargeError(bytes);
    let reply: unknown;
    try {
      if (this.#server.handleParsed) {
        reply = await this.#server.handleParsed(text, bytes);
      } else {
        const replyText = await this.#server.handleText(text, { stringified: true, bytes });
        try {
          reply = JSON.parse(replyText);
        } catch {
          reply = undefined;
        }
      }
    } catch (error) {
      throw new StorageUnavailableError({ message: `the ${this.kind} backend failed: ${messageOf(error)}` });
    }
    if (typeof reply !== "object" || reply === null) {
      throw new StorageUnavailableError({ message: `the ${this.kind} backend sent a reply that isn't a JSON object` });
    }
    return resultOf(reply as Reply);
  }
}

/**
 * JSON.stringify(message), character for character, made faster for what requests carry: a long string. JSON.stringify
 * copies a string through its escaping at a few milliseconds a megabyte; a string with nothing to escape (no quote,
 * backslash, control character or surrogate, which four native searches rule out in a fraction of that) is its own
 * JSON text between quotes, copied once, into the joined text. Every other value is JSON.stringify's own text for that member
 * (toJSON called with its key, as in the whole), and a member it leaves out (undefined, a function) is left out.
 *
 * @throws whatever JSON.stringify throws (a BigInt, a cycle).
 */
export function stringifyRequest(message: Record<string, unknown>): string {
  const members: string[] = [];
  for (const key of Object.keys(message)) {
    const value = message[key];
    const name = JSON.stringify(key);
    if (typeof value === "string" && !value.includes('"') && !value.includes("\\") && !CONTROL_CHARACTER.test(value) && !SURROGATE.test(value)) {
      members.push(`${name}:"${value}"`);
      continue;
    }
    // The member as JSON.stringify writes it inside an object: `{name:value}`, or `{}` when it is left out.
    const member = JSON.stringify({ [key]: value });
    if (member !== "{}") members.push(member.slice(1, -1));
  }
  // The braces go on the first and last members, so that the one join makes the whole text: `{${join}}` would be a
  // rope of three pieces, which V8 copies whole into one string (a megabyte a millisecond or so) at the first
  // search over it, such as the backend's count of a large request.
  if (members.length === 0) return "{}";
  members[0] = `{${members[0]}`;
  members[members.length - 1] += "}";
  return members.join(",");
}
