/**
 * A port with no host behind it: a script decides what, if anything, answers each message. For the cases a
 * real host won't produce on demand: a reply that never comes, another protocol version, an id-less reply.
 */

import type { ConnectNative, NativePort } from "../../src/client.js";
import { FakeEvent, withLastError } from "./chrome-port.js";

export type Script = (message: { id: number; op: string; [field: string]: unknown }) => unknown;

/** Answers `hello` as a v1 host does. */
export const HELLO_V1 = {
  protocolVersion: 1,
  hostVersion: "0.0.0-test",
  limits: {
    maxItemBytes: 5242880,
    sessionQuotaBytes: 52428800,
    maxDescriptionChars: 300,
    maxReplyFrameBytes: 1048576,
    maxRequestFrameBytes: 67108864,
  },
};

export class ScriptedPort implements NativePort {
  readonly onMessage = new FakeEvent<(message: any) => void>();
  readonly onDisconnect = new FakeEvent<(port: ScriptedPort) => void>();
  readonly posted: Array<{ id: number; op: string }> = [];
  disconnected = false;
  readonly #script: Script;

  constructor(script: Script) {
    this.#script = script;
  }

  postMessage(message: unknown): void {
    // As Chrome does, so that a message the client should have refused shows up as a different failure.
    if (Buffer.byteLength(JSON.stringify(message)) > 64 * 1024 * 1024) {
      throw new Error("Message length exceeded maximum allowed length.");
    }
    const request = message as { id: number; op: string };
    this.posted.push(request);
    const reply = this.#script(request);
    // A real reply is never delivered inside postMessage.
    if (reply !== undefined) queueMicrotask(() => this.onMessage.dispatch(reply));
  }

  disconnect(): void {
    this.disconnected = true;
  }

  /** The other end goes away, as when the host exits. */
  drop(reason: string): void {
    withLastError(reason, () => this.onDisconnect.dispatch(this));
  }
}

/** A `connect` that makes a ScriptedPort per call and keeps them for inspection. */
export function scriptedConnector(script: Script): ConnectNative & { ports: ScriptedPort[] } {
  const ports: ScriptedPort[] = [];
  const connect = (_hostName: string) => {
    const port = new ScriptedPort(script);
    ports.push(port);
    return port;
  };
  return Object.assign(connect, { ports });
}

/** Answers hello with `hello`, and everything else with `{ok: true, result: {}}` unless `reply` says otherwise. */
export function replyingScript(options: { hello?: unknown; reply?: Script } = {}): Script {
  return (message) => {
    if (message.op === "hello") return { id: message.id, ok: true, result: options.hello ?? HELLO_V1 };
    return options.reply ? options.reply(message) : { id: message.id, ok: true, result: {} };
  };
}
