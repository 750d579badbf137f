/**
 * A ProtocolServer (src/backends/in-process.ts) that forwards each request's text to a real host process over
 * pipes, framed as the host speaks (a native-endian u32 length, then the UTF-8 JSON text), and answers with the
 * reply's text: the frame's text as the host wrote it, or a chunked reply's parts joined. So InProcessBackend
 * is tested against real replies, and, until the IndexedDB backend exists, a second host in another data
 * directory stands in for it behind the in-process seam.
 *
 * One host process serves every request until `close()` (or its exit); the next request starts a new one.
 * The host answers in request order, so each reply goes to the oldest request waiting.
 */

import { spawn, type ChildProcess } from "node:child_process";
import { endianness } from "node:os";
import type { ProtocolServer } from "../../src/backends/in-process.js";
import { DEMO_EXTENSION_ID } from "../../src/demo-extension.js";
import { HOST_BINARY } from "./chrome-port.js";

interface Waiting {
  resolve: (text: string) => void;
  reject: (error: Error) => void;
}

/** One host process, with the requests waiting for its replies and what it has written so far. */
interface HostProcess {
  child: ChildProcess;
  waiting: Waiting[];
  buffer: Buffer;
  /** The parts of the chunked reply being received, if any. */
  parts: string[];
}

export class HostProcessServer implements ProtocolServer {
  /** Every request's op, in the order sent, across processes: tests read what was (not) sent. */
  readonly ops: string[] = [];
  /** How many host processes were started. */
  started = 0;
  readonly #dataDir: string;
  readonly #binary: string;
  #current: HostProcess | undefined;
  readonly #exits: Array<Promise<void>> = [];

  constructor(dataDir: string, binary = HOST_BINARY) {
    this.#dataDir = dataDir;
    this.#binary = binary;
  }

  handleText(requestText: string): Promise<string> {
    const host = this.#current ?? this.#start();
    this.ops.push(String((JSON.parse(requestText) as { op?: unknown }).op));
    const body = Buffer.from(requestText, "utf8");
    const header = Buffer.alloc(4);
    if (endianness() === "LE") header.writeUInt32LE(body.length);
    else header.writeUInt32BE(body.length);
    return new Promise((resolve, reject) => {
      host.waiting.push({ resolve, reject });
      host.child.stdin?.write(Buffer.concat([header, body]));
    });
  }

  /** Closes the host's stdin; it exits, and the next request starts another. */
  close(): void {
    this.#current?.child.stdin?.end();
    this.#current = undefined;
  }

  /** Closes the host and waits for every process started to exit. */
  async stop(): Promise<void> {
    this.close();
    await Promise.all(this.#exits);
  }

  #start(): HostProcess {
    const child = spawn(this.#binary, [`chrome-extension://${DEMO_EXTENSION_ID}/`], {
      env: { ...process.env, LLM_CACHE_DIR: this.#dataDir },
      stdio: ["pipe", "pipe", "pipe"],
    });
    const host: HostProcess = { child, waiting: [], buffer: Buffer.alloc(0), parts: [] };
    this.started++;
    this.#current = host;
    child.stdin?.on("error", () => {});
    child.stderr?.resume();
    child.stdout?.on("data", (data: Buffer) => this.#onData(host, data));
    this.#exits.push(
      new Promise((resolve) => {
        const end = () => {
          if (this.#current === host) this.#current = undefined;
          for (const request of host.waiting.splice(0)) request.reject(new Error("the host process exited"));
          resolve();
        };
        child.on("error", end);
        child.on("close", end);
      }),
    );
    return host;
  }

  #onData(host: HostProcess, data: Buffer): void {
    host.buffer = Buffer.concat([host.buffer, data]);
    while (host.buffer.length >= 4) {
      const size = endianness() === "LE" ? host.buffer.readUInt32LE(0) : host.buffer.readUInt32BE(0);
      if (host.buffer.length < 4 + size) return;
      const text = host.buffer.subarray(4, 4 + size).toString("utf8");
      host.buffer = host.buffer.subarray(4 + size);
      const reply = reassemble(host, text);
      if (reply !== undefined) host.waiting.shift()?.resolve(reply);
    }
  }
}

/** A whole reply's text, or undefined while a chunked reply still has parts to come (PROTOCOL.md 2.2). */
function reassemble(host: HostProcess, text: string): string | undefined {
  const frame = JSON.parse(text) as { ok?: unknown; chunk?: number; chunks?: number; part?: string };
  if ("ok" in frame) return text;
  host.parts[frame.chunk as number] = frame.part as string;
  if (host.parts.filter((part) => part !== undefined).length < (frame.chunks as number)) return undefined;
  const whole = host.parts.join("");
  host.parts = [];
  return whole;
}
