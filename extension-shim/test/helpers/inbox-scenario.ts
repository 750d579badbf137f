/**
 * The spec's scenario, "read my 50 unread emails, summarise each, write the summaries into a doc", run through
 * the tools by a stand-in for the model, to count what the model has to read.
 *
 * The stand-in acts only on what it was shown: it learns how many emails there are from the listing (the
 * array, or the shape of the offloaded listing), summarises each email from the text read_email returned, and
 * finds keys and cached data in the tool's answers. Three ways to run it:
 * - "none": no cache. Every summary stays in context until the document is written with all of them.
 * - "today": the cache as it was before bounded reads and append (write, read, update; reads up to 256 KB).
 *   Adding a batch of 5 summaries to the running list means reading the list back and sending it whole.
 * - "new": append adds each batch; other tools' results over 10 KB are offloaded; the document's body is a
 *   reference to the running list, which write_doc receives resolved.
 *
 * What is counted is every byte of tool-call arguments (JSON text) and tool results (the text the model
 * reads). The peak is the most the model must hold at once: what it keeps from earlier steps (summaries not
 * yet cached, or the running list's one-line metadata) plus the current step's arguments and results.
 */

import type { LlmCache } from "../../src/llm-cache.js";
import { StorageTool } from "../../src/tool/storage-tool.js";

export type Mode = "none" | "today" | "new";

export interface Email {
  n: number;
  from: string;
  subject: string;
  date: string;
  body: string;
}

export interface Measured {
  /** Bytes of every tool-call argument and tool result. */
  total: number;
  /** The most the model held at once. */
  peak: number;
  /** The step that lists the unread emails. */
  listing: number;
  /** The 50 read_email steps together. */
  reading: number;
  /** Arguments and results of the steps that put the document together (reading the list, write_doc). */
  docStep: number;
  /** Arguments and results of each step that added a batch of summaries to the cache. */
  batchSteps: number[];
  /** The document write_doc received. */
  document: string;
}

/** Summaries are added to the running list in batches of this many. */
export const BATCH = 5;

const SENDERS = ["ana@example.com", "bo@example.com", "carla@example.com", "dev@example.com", "emma@example.com"];
const TOPICS = ["Q3 budget review", "Offsite agenda", "Contract renewal", "Hiring plan", "Customer escalation"];

/** `count` emails of about 4 KB each. */
export function inbox(count: number): Email[] {
  return Array.from({ length: count }, (_, i) => {
    const n = i + 1;
    const topic = TOPICS[n % TOPICS.length] as string;
    const sentence = `Point ${n} about the ${topic.toLowerCase()}: the figures changed again and we need a decision this week. `;
    return {
      n,
      from: SENDERS[n % SENDERS.length] as string,
      subject: `${topic} (${n})`,
      date: `2026-11-${String(1 + (n % 28)).padStart(2, "0")}`,
      body: `Hi team,\n\n${sentence.repeat(41)}\nThanks,\n${SENDERS[n % SENDERS.length]}`,
    };
  });
}

/** The stand-in's summary of an email it read: about 800 bytes, made only from that email's text. */
export function summarize(email: Email): string {
  return `Email ${email.n} from ${email.from}, "${email.subject}" (${email.date}): ${email.body.slice(10, 700).replace(/\s+/g, " ")}`;
}

/** The tools besides llm_cache, as plain handlers. */
function standInTools(emails: Email[], written: string[]) {
  return {
    listUnread: async () => emails.map(({ n, from, subject, date, body }) => ({ n, from, subject, date, snippet: body.slice(10, 200) })),
    readEmail: async (args: { n: number }) => emails[args.n - 1] as Email,
    writeDoc: async (args: { title: string; body: string }) => {
      written.push(args.body);
      return `wrote the document "${args.title}": ${args.body.length} characters`;
    },
  };
}

/** Counts bytes per step and the peak. */
class Counter {
  total = 0;
  peak = 0;
  #step = 0;

  /** One tool call: its arguments and the text the model reads back. */
  async call(args: unknown, run: () => Promise<unknown>): Promise<string> {
    const result = await run();
    const text = typeof result === "string" ? result : JSON.stringify(result);
    const bytes = Buffer.byteLength(JSON.stringify(args)) + Buffer.byteLength(text);
    this.total += bytes;
    this.#step += bytes;
    return text;
  }

  /** Runs one step's calls; `held` is what the model keeps besides them. Returns the step's bytes. */
  async step(held: number, calls: () => Promise<void>): Promise<number> {
    this.#step = 0;
    await calls();
    this.peak = Math.max(this.peak, held + this.#step);
    return this.#step;
  }
}

const bytesOf = (texts: string[]) => texts.reduce((sum, text) => sum + Buffer.byteLength(text), 0);

/** The first line of an llm_cache answer that is an item line, for the model to keep. */
function keyLine(answer: string): { key: string; line: string } {
  const match = /^(?:cached|updated|appended; now) (([a-z0-9]{8}_[a-z0-9]{8}) \|.*)$/m.exec(answer);
  if (!match) throw new Error(`no item line in: ${answer}`);
  return { key: match[2] as string, line: match[1] as string };
}

/** The data a read answer shows, parsed: between its fences when the item is untrusted. */
function readData(answer: string): unknown {
  const match = /^data: (?:<untrusted-([a-z0-9]{8})>(.*)<\/untrusted-\1>|(.*))$/m.exec(answer);
  if (!match) throw new Error(`no data in: ${answer}`);
  return JSON.parse((match[2] ?? match[3]) as string);
}

export async function runScenario(mode: Mode, cache: LlmCache, sessionId: string, emails: Email[]): Promise<Measured> {
  const written: string[] = [];
  const plain = standInTools(emails, written);
  const tools =
    mode === "new"
      ? {
          listUnread: cache.offloadLargeResults("list_unread", plain.listUnread),
          readEmail: cache.offloadLargeResults("read_email", plain.readEmail),
          writeDoc: cache.withReferences(plain.writeDoc),
        }
      : plain;
  // Today's tool: the same actions, but reads returned up to 256 KB whole.
  const storage = mode === "today" ? new StorageTool(cache.client, { maxReadBytes: 256 * 1024 }) : cache.tool;
  const context = { sessionId };
  const counter = new Counter();
  const cacheCall = (args: Record<string, unknown>) => counter.call(args, () => storage.execute(args, context));

  let pending: string[] = []; // summaries written but not yet cached
  let kept = ""; // the running list's metadata line
  let key: string | undefined;
  const batchSteps: number[] = [];

  let count = 0;
  let reading = 0;
  const listing = await counter.step(0, async () => {
    const listing = await counter.call({}, () => tools.listUnread(undefined as never, context));
    // The listing itself, or (offloaded) its item line, whose shape (quoted: a tool's result) says how many there are.
    const offloaded = / \| "?array\[(\d+)\] of /.exec(listing);
    count = offloaded ? Number(offloaded[1]) : (JSON.parse(listing) as unknown[]).length;
  });

  for (let n = 1; n <= count; n++) {
    reading += await counter.step(bytesOf([...pending, kept]), async () => {
      const email = JSON.parse(await counter.call({ n }, () => tools.readEmail({ n }, context))) as Email;
      pending.push(summarize(email));
    });
    if (mode === "none" || (pending.length < BATCH && n < count)) continue;

    const batch = pending;
    pending = [];
    const description = `Summaries of unread emails 1-${n} of ${count}, one string each`;
    batchSteps.push(
      await counter.step(bytesOf([kept]), async () => {
        let answer: string;
        if (key === undefined) {
          answer = await cacheCall({ action: "write", data: JSON.stringify(batch), description });
        } else if (mode === "today") {
          const list = readData(await cacheCall({ action: "read", storageKey: key })) as string[];
          answer = await cacheCall({ action: "update", storageKey: key, data: JSON.stringify([...list, ...batch]), description });
        } else {
          answer = await cacheCall({ action: "append", storageKey: key, data: JSON.stringify(batch), description });
        }
        ({ key, line: kept } = keyLine(answer));
      }),
    );
  }

  const title = `Summaries of ${count} unread emails`;
  const docStep = await counter.step(bytesOf([kept]), async () => {
    if (mode === "none") {
      const body = pending.join("\n\n");
      pending = [];
      await counter.call({ title, body }, () => tools.writeDoc({ title, body }, context));
    } else if (mode === "today") {
      const list = readData(await cacheCall({ action: "read", storageKey: key })) as string[];
      const body = list.join("\n\n");
      await counter.call({ title, body }, () => tools.writeDoc({ title, body }, context));
    } else {
      const body = `{{llm_cache:${key}}}`;
      await counter.call({ title, body }, () => tools.writeDoc({ title, body }, context));
    }
  });

  return { total: counter.total, peak: counter.peak, listing, reading, docStep, batchSteps, document: written[0] ?? "" };
}
