/**
 * A `chrome.runtime.Port` to the real host binary that behaves as Chrome's native messaging does, so the shim's
 * tests exercise exactly what an extension would see:
 * - one host process per connect, started as `<binary> chrome-extension://<id>/`;
 * - postMessage writes JSON.stringify of the message after a native-endian u32 length, and throws as Chrome
 *   does for a message over 64 MiB or on a disconnected port;
 * - each stdout frame is parsed and delivered to onMessage listeners; a frame over 1 MiB or one that isn't
 *   JSON ends the port with Chrome's error;
 * - when the process ends, onDisconnect fires with chrome.runtime.lastError set to Chrome's text for the
 *   reason, and only while the listeners run;
 * - disconnect() closes the host's stdin and fires no onDisconnect on this side;
 * - an extension whose origin the manifest doesn't allow gets a port that starts no process and disconnects
 *   with Chrome's "forbidden" text.
 */

import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { endianness } from "node:os";
import { fileURLToPath } from "node:url";
import type { ConnectNative, NativePort } from "../../src/client.js";
import { DEMO_EXTENSION_ID } from "../../src/demo-extension.js";

/** The debug build of the host at the repository root, or LLM_CACHE_HOST_BIN. */
export const HOST_BINARY =
  process.env.LLM_CACHE_HOST_BIN ?? fileURLToPath(new URL("../../../../target/debug/llm-cache-host", import.meta.url));

/** Chrome's own texts, so tests see what an extension sees. */
export const CHROME_ERRORS = {
  exited: "Native host has exited.",
  notFound: "Specified native messaging host not found.",
  forbidden: "Access to the specified native messaging host is forbidden.",
  communication: "Error when communicating with the native messaging host.",
  tooLong: "Message length exceeded maximum allowed length.",
  disconnected: "Attempting to use a disconnected port object",
};

const MAX_MESSAGE_TO_HOST = 64 * 1024 * 1024;
const MAX_MESSAGE_FROM_HOST = 1024 * 1024;

/** A minimal chrome.events.Event. */
export class FakeEvent<Listener extends (...args: any[]) => void> {
  readonly #listeners: Listener[] = [];
  addListener(listener: Listener): void {
    this.#listeners.push(listener);
  }
  dispatch(...args: Parameters<Listener>): void {
    for (const listener of [...this.#listeners]) listener(...args);
  }
}

/** Runs `fn` with chrome.runtime.lastError set, as Chrome does around onDisconnect listeners. */
export function withLastError(message: string, fn: () => void): void {
  const global = globalThis as { chrome?: { runtime?: { lastError?: { message: string } } } };
  global.chrome ??= {};
  global.chrome.runtime ??= {};
  global.chrome.runtime.lastError = { message };
  try {
    fn();
  } finally {
    delete global.chrome.runtime.lastError;
  }
}

export class ChromeNativePort implements NativePort {
  readonly onMessage = new FakeEvent<(message: any, port: ChromeNativePort) => void>();
  readonly onDisconnect = new FakeEvent<(port: ChromeNativePort) => void>();
  /** Every message posted, in order: tests count them to see what was (not) sent. */
  readonly posted: unknown[] = [];
  /** Every message delivered, in order. */
  readonly received: unknown[] = [];
  /** Both directions in the order they happened: "> op" for a message posted, "< id" for one delivered. */
  readonly log: string[] = [];
  readonly process: ChildProcess;
  /** Settles once the host process has ended and its pipes are closed. */
  readonly closed: Promise<void>;
  #connected = true;
  #parts: Buffer[] = [];
  #length = 0;

  constructor(binary: string, extensionId: string, env: NodeJS.ProcessEnv) {
    this.process = spawn(binary, [`chrome-extension://${extensionId}/`], { env, stdio: ["pipe", "pipe", "pipe"] });
    // Writes to a host that has gone fail with EPIPE; Chrome notices that through the exit, and so do we.
    this.process.stdin?.on("error", () => {});
    this.process.stderr?.resume();
    this.process.stdout?.on("data", (data: Buffer) => this.#onData(data));
    this.closed = new Promise((resolve) => {
      this.process.on("error", () => {
        this.#end(CHROME_ERRORS.notFound);
        resolve();
      });
      this.process.on("close", () => {
        this.#end(CHROME_ERRORS.exited);
        resolve();
      });
    });
  }

  get connected(): boolean {
    return this.#connected;
  }

  postMessage(message: unknown): void {
    if (!this.#connected) throw new Error(CHROME_ERRORS.disconnected);
    const body = Buffer.from(JSON.stringify(message), "utf8");
    if (body.length > MAX_MESSAGE_TO_HOST) throw new Error(CHROME_ERRORS.tooLong);
    const header = Buffer.alloc(4);
    if (endianness() === "LE") header.writeUInt32LE(body.length);
    else header.writeUInt32BE(body.length);
    this.process.stdin?.write(header);
    this.process.stdin?.write(body);
    this.posted.push(message);
    this.log.push(`> ${(message as { op?: string }).op}`);
  }

  disconnect(): void {
    if (!this.#connected) return;
    this.#connected = false;
    this.process.stdin?.end();
  }

  /** Kills the host, as a crash would. */
  kill(signal: NodeJS.Signals = "SIGKILL"): void {
    this.process.kill(signal);
  }

  #onData(data: Buffer): void {
    this.#parts.push(data);
    this.#length += data.length;
    while (this.#connected && this.#length >= 4) {
      if ((this.#parts[0] as Buffer).length < 4) this.#parts = [Buffer.concat(this.#parts)];
      const head = this.#parts[0] as Buffer;
      const size = endianness() === "LE" ? head.readUInt32LE(0) : head.readUInt32BE(0);
      if (size > MAX_MESSAGE_FROM_HOST) return this.#fail();
      if (this.#length < 4 + size) return; // wait for the rest of the frame
      const all = Buffer.concat(this.#parts, this.#length);
      const body = all.subarray(4, 4 + size).toString("utf8");
      const rest = all.subarray(4 + size);
      this.#parts = rest.length > 0 ? [rest] : [];
      this.#length = rest.length;
      let message: unknown;
      try {
        message = JSON.parse(body);
      } catch {
        return this.#fail();
      }
      this.received.push(message);
      this.log.push(`< ${JSON.stringify((message as { id?: unknown }).id)}`);
      this.onMessage.dispatch(message, this);
    }
  }

  /** Chrome closes the port when the host breaks the framing rules. */
  #fail(): void {
    this.#end(CHROME_ERRORS.communication);
    this.process.kill("SIGKILL");
  }

  #end(reason: string): void {
    if (!this.#connected) return;
    this.#connected = false;
    withLastError(reason, () => this.onDisconnect.dispatch(this));
  }
}

/**
 * The port Chrome gives an extension the manifest doesn't allow: no process is started, messages posted before
 * the disconnect go nowhere, and onDisconnect fires soon after, with Chrome's text.
 */
export class RefusedPort implements NativePort {
  readonly onMessage = new FakeEvent<(message: any) => void>();
  readonly onDisconnect = new FakeEvent<(port: RefusedPort) => void>();
  readonly posted: unknown[] = [];
  #connected = true;

  constructor(reason: string) {
    setImmediate(() => {
      this.#connected = false;
      withLastError(reason, () => this.onDisconnect.dispatch(this));
    });
  }

  postMessage(message: unknown): void {
    if (!this.#connected) throw new Error(CHROME_ERRORS.disconnected);
    this.posted.push(message);
  }

  disconnect(): void {
    this.#connected = false;
  }
}

export interface HostOptions {
  /** LLM_CACHE_DIR for the host processes. */
  dataDir: string;
  binary?: string;
  extensionId?: string;
  /** The manifest's allowed_origins; every origin by default. */
  allowedOrigins?: string[];
  /** The name the host is registered as (its manifest's); com.browserx.llm_cache by default. */
  hostName?: string;
}

/** A `connect` that starts a real host per call, as connectNative does, and remembers the ports it made. */
export interface HostConnector extends ConnectNative {
  ports: ChromeNativePort[];
  /** Closes every port it made and waits for their processes to end. */
  closeAll(): Promise<void>;
}

export function hostConnector(options: HostOptions): HostConnector {
  const binary = options.binary ?? HOST_BINARY;
  if (options.binary === undefined && !existsSync(binary)) {
    throw new Error(`no host binary at ${binary}: run \`cargo build\` at the repository root, or set LLM_CACHE_HOST_BIN`);
  }
  const ports: ChromeNativePort[] = [];
  const extensionId = options.extensionId ?? DEMO_EXTENSION_ID;
  const connect = (hostName: string): NativePort => {
    // Chrome finds no manifest for any other name.
    if (hostName !== (options.hostName ?? "com.browserx.llm_cache")) return new RefusedPort(CHROME_ERRORS.notFound);
    if (options.allowedOrigins && !options.allowedOrigins.includes(`chrome-extension://${extensionId}/`)) {
      return new RefusedPort(CHROME_ERRORS.forbidden);
    }
    const port = new ChromeNativePort(binary, extensionId, {
      ...process.env,
      LLM_CACHE_DIR: options.dataDir,
    });
    ports.push(port);
    return port;
  };
  const closeAll = async () => {
    for (const port of ports) port.disconnect();
    await Promise.all(ports.map((port) => port.closed));
  };
  return Object.assign(connect, { ports, closeAll });
}
