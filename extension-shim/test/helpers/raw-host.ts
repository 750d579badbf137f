/**
 * The real host binary spoken to in raw JSON text: request texts go out exactly as written (numbers spelled
 * `1.50`, escapes as chosen, white space between tokens) and reply texts come back unparsed, so that a test can
 * compare the host's answers with the TypeScript twin's byte for byte. Chrome's port can't do either: it
 * serialises messages with JSON.stringify and parses replies.
 */

import { spawn, type ChildProcess } from "node:child_process";
import { endianness } from "node:os";
import { DEMO_EXTENSION_ID } from "../../src/demo-extension.js";
import { HOST_BINARY } from "./chrome-port.js";

export class RawHost {
  readonly #process: ChildProcess;
  #buffered = Buffer.alloc(0);
  /** Replies not yet taken, in the order they came. */
  readonly #replies: string[] = [];
  /** Who waits for the next reply. */
  #waiting: { resolve: (reply: string) => void; reject: (error: Error) => void } | undefined;
  #ended: Error | undefined;
  readonly #closed: Promise<void>;

  /** Starts the host for the demo extension with its store in `dataDir`. */
  constructor(dataDir: string, binary = HOST_BINARY) {
    this.#process = spawn(binary, [`chrome-extension://${DEMO_EXTENSION_ID}/`], {
      env: { ...process.env, LLM_CACHE_DIR: dataDir },
      stdio: ["pipe", "pipe", "ignore"],
    });
    this.#process.stdout?.on("data", (data: Buffer) => this.#onData(data));
    this.#closed = new Promise((resolve) => {
      this.#process.on("error", (error) => {
        this.#end(error);
        resolve();
      });
      this.#process.on("close", (code) => {
        this.#end(new Error(`the host exited (${code})`));
        resolve();
      });
    });
  }

  /** Sends request texts, each in its own frame, and resolves with their reply texts in order. */
  async requests(texts: string[]): Promise<string[]> {
    for (const text of texts) {
      const body = Buffer.from(text, "utf8");
      const header = Buffer.alloc(4);
      if (endianness() === "LE") header.writeUInt32LE(body.length);
      else header.writeUInt32BE(body.length);
      this.#process.stdin?.write(Buffer.concat([header, body]));
    }
    const replies: string[] = [];
    for (let i = 0; i < texts.length; i++) replies.push(await this.#next());
    return replies;
  }

  /**
   * Sends one request text and resolves with its reply's whole text: a reply over 1 MiB comes as chunk frames
   * (PROTOCOL.md section 2.2), whose parts are joined here as a client joins them.
   */
  async request(text: string): Promise<string> {
    const [first = ""] = await this.requests([text]);
    const chunk = chunkOf(first);
    if (chunk === undefined) return first;
    const parts = [chunk.part];
    while (parts.length < chunk.chunks) {
      const next = chunkOf(await this.#next());
      if (next === undefined) throw new Error("a reply's chunk frames were interrupted by another frame");
      parts.push(next.part);
    }
    return parts.join("");
  }

  /** Ends the host by closing its input, as Chrome does, and waits for it to exit. */
  async close(): Promise<void> {
    this.#process.stdin?.end();
    await this.#closed;
  }

  #next(): Promise<string> {
    const reply = this.#replies.shift();
    if (reply !== undefined) return Promise.resolve(reply);
    if (this.#ended) return Promise.reject(this.#ended);
    return new Promise((resolve, reject) => (this.#waiting = { resolve, reject }));
  }

  #onData(data: Buffer): void {
    this.#buffered = Buffer.concat([this.#buffered, data]);
    while (this.#buffered.length >= 4) {
      const size = endianness() === "LE" ? this.#buffered.readUInt32LE(0) : this.#buffered.readUInt32BE(0);
      if (this.#buffered.length < 4 + size) return;
      const text = this.#buffered.subarray(4, 4 + size).toString("utf8");
      this.#buffered = this.#buffered.subarray(4 + size);
      const waiting = this.#waiting;
      this.#waiting = undefined;
      if (waiting) waiting.resolve(text);
      else this.#replies.push(text);
    }
  }

  #end(error: Error): void {
    this.#ended ??= error;
    this.#waiting?.reject(error);
    this.#waiting = undefined;
  }
}

/** The chunk a frame holds, if it is a chunk frame (it has `part` and no `ok`). */
function chunkOf(frame: string): { chunks: number; part: string } | undefined {
  if (!frame.startsWith('{"id":') || /^\{"id":[^,]*,"ok":/.test(frame)) return undefined;
  const parsed = JSON.parse(frame) as { chunks?: unknown; part?: unknown };
  return typeof parsed.part === "string" && typeof parsed.chunks === "number" ? { chunks: parsed.chunks, part: parsed.part } : undefined;
}
