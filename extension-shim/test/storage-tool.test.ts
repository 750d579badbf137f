/**
 * StorageTool against the real host: the text every action gives the LLM, data as JSON text, reads a page at
 * a time, append, search, what a 50-item list costs, and errors as text (with `ok: false` from `run`).
 */

import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import { NativeCacheClient } from "../src/client.js";
import { MAX_ITEM_BYTES } from "../src/protocol.js";
import { StorageTool, type StorageToolOptions, type ToolContext } from "../src/tool/storage-tool.js";
import { ContextTaint } from "../src/taint.js";
import { CHROME_ERRORS, hostConnector } from "./helpers/chrome-port.js";
import { tempDir } from "./helpers/temp.js";

/** A conversationId as the agent makes them: conv_ and a UUID. */
const SESSION = "conv_a3f8e2b4-5c6d-7e8f-9a0b-1c2d3e4f5a6b";
const CONTEXT: ToolContext = { sessionId: SESSION };

function hostTool(t: TestContext, options: StorageToolOptions & { binary?: string; storeQuotaBytes?: number } = {}) {
  const dir = tempDir();
  // The store-wide quota is the store owner's setting, in the data directory's config.json (docs/operations.md).
  if (options.storeQuotaBytes !== undefined) writeFileSync(join(dir.path, "config.json"), JSON.stringify({ storeQuotaBytes: options.storeQuotaBytes }));
  const connect = hostConnector({ dataDir: dir.path, binary: options.binary });
  const client = new NativeCacheClient({ connect });
  // An extension that reports everything its tools put in context: the model's own items are trusted.
  const tool = new StorageTool(client, { taint: new ContextTaint({ contextOrigins: [] }), ...options });
  t.after(async () => {
    client.close();
    await connect.closeAll();
    dir.remove();
  });
  return { tool, client, connect };
}

/** The short key at the start of a `cached …` / `updated …` answer. */
function keyOf(answer: string): string {
  const match = /^(?:cached|updated) ([a-z0-9]{8}_[a-z0-9]{8}) \| /.exec(answer);
  assert.ok(match, `no key in: ${answer}`);
  return match[1] as string;
}

const ITEM_LINE = /^[a-z0-9]{8}_[a-z0-9]{8} \| \d+(\.\d)?(B|KB|MB) \| \d+[smhd] \| you \| [^|]+ \| .+$/;

describe("actions", () => {
  it("write answers with metadata only: key, size, age, shape and description", async (t) => {
    const { tool } = hostTool(t);
    const answer = await tool.execute(
      { action: "write", data: { body: "SECRET-BODY-TEXT" }, description: "Summary of email 1/3" },
      CONTEXT,
    );
    assert.match(answer, /^cached [a-z0-9]{8}_[a-z0-9]{8} \| 27B \| \d+s \| you \| object\{body\} \| Summary of email 1\/3$/);
    assert.ok(!answer.includes("SECRET-BODY-TEXT"));
  });

  it("writes under the agent's taskId, hashed when it isn't 8 of [a-z0-9], and never replaces within a turn", async (t) => {
    const { tool, client } = hostTool(t);
    const plain = keyOf(await tool.execute({ action: "write", data: 1, description: "a" }, { ...CONTEXT, taskId: "a7b3c9d2" }));
    assert.match(plain, /^a7b3c9d2_/);

    const uuidTask = { ...CONTEXT, taskId: "9f1c2d3e-aaaa-bbbb-cccc-1234567890ab", turnId: "turn-7" };
    const first = keyOf(await tool.execute({ action: "write", data: 1, description: "first of the turn" }, uuidTask));
    const second = keyOf(await tool.execute({ action: "write", data: 2, description: "second of the turn" }, uuidTask));
    assert.equal(first.split("_")[0], second.split("_")[0], "one task, one taskId");
    assert.notEqual(first, second, "a second write in the same turn is a new item");
    assert.equal((await client.stats(SESSION)).itemCount, 3);
  });

  it("read returns the data, one part by pointer, and customMetadata; short and full keys both work", async (t) => {
    const { tool } = hostTool(t);
    const key = keyOf(
      await tool.execute(
        {
          action: "write",
          data: { emails: [{ subject: "Q3 budget" }, { subject: "Offsite" }] },
          description: "2 emails",
          customMetadata: { source: "gmail" },
        },
        CONTEXT,
      ),
    );
    const whole = await tool.execute({ action: "read", storageKey: key }, CONTEXT);
    assert.deepEqual(whole.split("\n").slice(1), [
      'customMetadata: {"source":"gmail"}',
      'data: {"emails":[{"subject":"Q3 budget"},{"subject":"Offsite"}]}',
    ]);
    assert.match(whole.split("\n")[0] as string, ITEM_LINE);

    const part = await tool.execute({ action: "read", storageKey: `${SESSION}_${key}`, pointer: "/emails/1/subject" }, CONTEXT);
    assert.equal(part.split("\n")[2], 'data at /emails/1/subject: "Offsite"');
  });

  it("read returns a long value a page at a time, each page within the budget and naming the next", async (t) => {
    const { tool } = hostTool(t, { maxReadBytes: 1000 });
    const rows = Array.from({ length: 100 }, (_, n) => ({ n, text: "row text" }));
    const key = keyOf(await tool.execute({ action: "write", data: { rows, title: "t" }, description: "100 rows" }, CONTEXT));

    // The whole item is over the budget: its first member alone is too, so the page says to point inside.
    const whole = (await tool.execute({ action: "read", storageKey: key }, CONTEXT)).split("\n");
    assert.equal(whole[1], "member 0 of 2 alone is over the 1000B one read returns: read it by name with a longer pointer (list or the item's shape shows the names)");
    assert.match(whole[0] as string, /\| object\{rows,title\} \| 100 rows$/);

    // Paging through the array: every element comes back once, in order, and no page is over the budget.
    const seen: number[] = [];
    let offset: number | undefined;
    let pages = 0;
    do {
      const answer = await tool.execute({ action: "read", storageKey: key, pointer: "/rows", offset }, CONTEXT);
      const page = /^data at \/rows, elements (\d+)-(\d+) of 100 \((?:next page: offset (\d+)|the end)\): (.*)$/.exec(
        answer.split("\n")[1] as string,
      );
      assert.ok(page, answer);
      const elements = JSON.parse(page[4] as string) as Array<{ n: number }>;
      assert.ok(Buffer.byteLength(page[4] as string) <= 1000);
      assert.equal(elements.length, Number(page[2]) - Number(page[1]) + 1);
      seen.push(...elements.map((row) => row.n));
      offset = page[3] === undefined ? undefined : Number(page[3]);
      pages++;
    } while (offset !== undefined);
    assert.deepEqual(seen, rows.map((row) => row.n));
    assert.ok(pages > 2 && pages < 10, `${pages} pages`);

    // A limit asks for fewer; an element by pointer is whole; past the end says how many there are.
    assert.match(
      await tool.execute({ action: "read", storageKey: key, pointer: "/rows", offset: 10, limit: 2 }, CONTEXT),
      /\ndata at \/rows, elements 10-11 of 100 \(next page: offset 12\): \[\{"n":10,"text":"row text"\},\{"n":11,"text":"row text"\}\]$/,
    );
    assert.match(await tool.execute({ action: "read", storageKey: key, pointer: "/rows/42" }, CONTEXT), /\ndata at \/rows\/42: \{"n":42,"text":"row text"\}$/);
    assert.match(
      await tool.execute({ action: "read", storageKey: key, pointer: "/rows", offset: 500 }, CONTEXT),
      /\ndata at \/rows: nothing from offset 500; it has 100 elements$/,
    );

    // Text: characters, and an array element too big for a page says to read inside it.
    const text = keyOf(await tool.execute({ action: "write", data: ["é".repeat(2000)], description: "long text" }, CONTEXT));
    assert.equal(
      (await tool.execute({ action: "read", storageKey: text }, CONTEXT)).split("\n")[1],
      'element 0 of 1 alone is over the 1000B one read returns: read inside it with pointer "/0"',
    );
    const chars = await tool.execute({ action: "read", storageKey: text, pointer: "/0", offset: 1990 }, CONTEXT);
    assert.match(chars, /\ndata at \/0, characters 1990-1999 of 2000 \(the end\): "é{10}"$/);
    const first = await tool.execute({ action: "read", storageKey: text, pointer: "/0" }, CONTEXT);
    assert.match(first, /\ndata at \/0, characters 0-498 of 2000 \(next page: offset 499\): "é{499}"$/);
  });

  it("append adds a batch to a running array or text in place, and says what the item is now", async (t) => {
    const { tool, client } = hostTool(t);
    const key = keyOf(
      await tool.execute({ action: "write", data: '{"summaries":["s1","s2"],"log":"a"}', description: "2 summaries" }, CONTEXT),
    );
    const appended = await tool.execute(
      { action: "append", storageKey: key, pointer: "/summaries", data: '["s3","s4","s5"]', description: "5 summaries" },
      CONTEXT,
    );
    assert.match(appended, new RegExp(`^appended; now ${key} \\| 50B \\| \\d+s \\| you \\| object\\{summaries,log\\} \\| 5 summaries$`));
    // Plain text, and text that would parse as a number, are added as text.
    await tool.execute({ action: "append", storageKey: key, pointer: "/log", data: "b c" }, CONTEXT);
    await tool.execute({ action: "append", storageKey: key, pointer: "/log", data: "42" }, CONTEXT);
    const item = await client.read({ sessionId: SESSION, storageKey: `${SESSION}_${key}` });
    assert.deepEqual(item.data, { summaries: ["s1", "s2", "s3", "s4", "s5"], log: "ab c42" });

    const wrongType = await tool.run({ action: "append", storageKey: key, pointer: "/log", data: '["x"]' }, CONTEXT);
    assert.equal(wrongType.ok, false);
    assert.match(wrongType.text, /^llm_cache append failed: InvalidRequestError: .*is a string.*Next: /);
    assert.match(
      await tool.execute({ action: "append", storageKey: "aaaaaaaa_bbbbbbbb", data: "[1]" }, CONTEXT),
      /^llm_cache append failed: ItemNotFoundError: /,
    );
  });

  it("search finds words inside the data: key, pointer and snippet per match, paged with a cursor", async (t) => {
    const { tool, client } = hostTool(t);
    const emails = keyOf(
      await tool.execute(
        {
          action: "write",
          data: JSON.stringify([
            { subject: "Lunch", body: "see you at noon" },
            { subject: "Invoice 2231", body: "the March invoice is attached\nplease pay" },
          ]),
          description: "2 emails",
        },
        CONTEXT,
      ),
    );
    const note = keyOf(await tool.execute({ action: "write", data: "Invoice for March, paid", description: "note" }, CONTEXT));
    // Search walks items in list's order: newest first, and the greater key first among items written in the same
    // millisecond, as these two may be.
    const listed = (await client.list({ sessionId: SESSION })).items.map((item) => item.storageKey.slice(SESSION.length + 1));
    const matches = {
      [note]: [`${note} | you | "" | Invoice for March, paid`],
      [emails]: [`${emails} | you | /1/subject | Invoice 2231`, `${emails} | you | /1/body | the March invoice is attached please pay`],
    };
    assert.deepEqual([...listed].sort(), [emails, note].sort());
    const all = (await tool.execute({ action: "search", query: "march INVOICE" }, CONTEXT)).split("\n");
    assert.deepEqual(all, [
      '2 matches for "march INVOICE" (key | from | pointer | snippet):',
      ...listed.map((key) => (matches[key] as string[]).at(-1) as string),
    ]);
    const page = (await tool.execute({ action: "search", query: "invoice", limit: 1 }, CONTEXT)).split("\n");
    const [first, second] = listed as [string, string];
    assert.equal(page[1], (matches[first] as string[])[0]);
    const cursor = /^more: search with cursor "(.+)"$/.exec(page[2] as string)?.[1];
    assert.ok(cursor, page.join("\n"));
    const next = (await tool.execute({ action: "search", query: "invoice", limit: 5, cursor }, CONTEXT)).split("\n");
    assert.deepEqual(next.slice(1), [...(matches[first] as string[]).slice(1), ...(matches[second] as string[])]);
    assert.equal(await tool.execute({ action: "search", query: "zebra" }, CONTEXT), 'no cached text contains "zebra"');
    assert.match(await tool.execute({ action: "search" }, CONTEXT), /^llm_cache search failed: InvalidRequestError: .*query/);
  });

  it("a match nested past the host's pointer limit is shown with an ancestor's pointer, marked as such", async (t) => {
    const { tool } = hostTool(t);
    const depth = 600;
    const key = keyOf(
      await tool.execute({ action: "write", data: `${"[".repeat(depth)}"deep invoice"${"]".repeat(depth)}`, description: "deep" }, CONTEXT),
    );
    const lines = (await tool.execute({ action: "search", query: "invoice" }, CONTEXT)).split("\n");
    const [, shown, pointer, snippet] = /^(\S+) \| you \| (\S+) \(an ancestor: the match is deeper\) \| (.*)$/.exec(lines[1] as string) ?? [];
    assert.equal(shown, key, lines.join("\n"));
    assert.match(pointer as string, /^(\/0)+$/);
    assert.ok((pointer as string).length <= 1024 && (pointer as string).length < 2 * depth, pointer);
    assert.equal(snippet, "deep invoice");
  });

  it("list with a query shows only the items whose description has every word", async (t) => {
    const { tool } = hostTool(t);
    for (const description of ["Summary of email 1: invoice from Acme", "Summary of email 2: lunch", "Acme contract"]) {
      await tool.execute({ action: "write", data: 1, description }, CONTEXT);
    }
    const lines = (await tool.execute({ action: "list", query: "ACME invoice" }, CONTEXT)).split("\n");
    assert.equal(lines[0], '1 item matching "ACME invoice", 1B in all, newest first (key | size | age | from | shape | description):');
    assert.match(lines[1] as string, /\| number \| Summary of email 1: invoice from Acme$/);
    assert.equal(await tool.execute({ action: "list", query: "zebra" }, CONTEXT), 'no items matching "zebra"');
    assert.match(
      await tool.execute({ action: "list", limit: 500 }, CONTEXT),
      /^llm_cache list failed: InvalidRequestError: limit is more than 100 results per page \(got 500\)\. Next: .*cursor/,
    );
  });

  it("list shows one line per item, newest first, and a cursor while more follow", async (t) => {
    const { tool, client } = hostTool(t);
    assert.equal(await tool.execute({ action: "list" }, CONTEXT), "the cache of this session is empty");
    // Written with ids in the order of writing: two writes in one millisecond tie on their timestamp, and list
    // then puts the greater key first, so the newest comes first either way.
    for (const n of [1, 2, 3]) {
      // The extension's own items, which it says are the user's: trusted, so shown plain.
      const provenance = { origin: "user" as const };
      await client.write({ sessionId: CONTEXT.sessionId, taskId: `task000${n}`, turnId: "turn0001", data: n, description: `item ${n}`, provenance });
    }

    const page1 = (await tool.execute({ action: "list", limit: 2 }, CONTEXT)).split("\n");
    assert.equal(page1[0], "2 of 3 items, 3B in all, newest first (key | size | age | from | shape | description):");
    assert.match(page1[1] as string, / \| item 3$/);
    assert.match(page1[2] as string, / \| item 2$/);
    const cursor = /^more: list with cursor "(.+)"$/.exec(page1[3] as string)?.[1];
    assert.ok(cursor);

    const page2 = (await tool.execute({ action: "list", limit: 2, cursor }, CONTEXT)).split("\n");
    assert.equal(page2.length, 2);
    assert.match(page2[1] as string, / \| item 1$/);
  });

  it("update, delete and stats", async (t) => {
    const { tool } = hostTool(t);
    const key = keyOf(await tool.execute({ action: "write", data: [1, 2], description: "10 of 15 done" }, CONTEXT));
    const updated = await tool.execute(
      { action: "update", storageKey: key, data: [1, 2, 3], description: "15 of 15 done" },
      CONTEXT,
    );
    assert.match(updated, new RegExp(`^updated ${key} \\| 7B \\| \\d+s \\| you \\| array\\[3\\] of number \\| 15 of 15 done$`));
    assert.match(await tool.execute({ action: "stats" }, CONTEXT), /^1 item, 7B used, 49.9MB of 50MB free; created \d+s ago, last used \d+s ago$/);
    assert.equal(await tool.execute({ action: "delete", storageKey: key }, CONTEXT), `deleted ${key}, freed 7B`);
    assert.equal(await tool.execute({ action: "stats" }, CONTEXT), "the cache of this session is empty; 50MB free");
  });

  it("stats never rounds free space up, and says the store-wide limit when it binds first", async (t) => {
    // A store of 3000 bytes: what the session may still write is what the store has left, not its own 50MB.
    const { tool } = hostTool(t, { storeQuotaBytes: 3000 });
    assert.equal(await tool.execute({ action: "stats" }, CONTEXT), "the cache of this session is empty; 2.9KB free (store-wide limit)");
    await tool.execute({ action: "write", data: "x".repeat(998), description: "a thousand bytes" }, CONTEXT);
    // 3000 - 1000 = 2000 bytes, 1.95KB: rounded down, 1.9KB, not the 2KB it would round to.
    assert.match(await tool.execute({ action: "stats" }, CONTEXT), /^1 item, 1000B used, 1.9KB free \(store-wide limit\); created /);
  });

  it("caches any JSON value sent as JSON text, plain text as it is, and takes null as not given", async (t) => {
    const { tool, client } = hostTool(t);
    const cases: Array<[string, unknown]> = [
      ['{"from":"ana@example.com","tags":["q3"]}', { from: "ana@example.com", tags: ["q3"] }],
      ["[1, 2, 3]", [1, 2, 3]],
      ['"a quoted string"', "a quoted string"],
      ["42", 42],
      ["true", true],
      ["Ana asks for the Q3 numbers by Friday.", "Ana asks for the Q3 numbers by Friday."],
      // Numbers JSON would change stay text: nothing the LLM wrote is lost.
      ["123456789012345678901234567890", "123456789012345678901234567890"],
      ["1".repeat(400), "1".repeat(400)],
      ["42.0", "42.0"],
      [" 7 ", 7],
    ];
    for (const [data, stored] of cases) {
      // What a strict definition makes the LLM send: every parameter, null where unused.
      const answer = await tool.execute(
        { action: "write", data, description: "one value", storageKey: null, pointer: null, limit: null, cursor: null, customMetadata: null },
        CONTEXT,
      );
      const item = await client.read({ sessionId: SESSION, storageKey: `${SESSION}_${keyOf(answer)}` });
      assert.deepEqual(item.data, stored, data);
    }
    const withMeta = keyOf(
      await tool.execute({ action: "write", data: "[]", description: "m", customMetadata: '{"source":"gmail"}' }, CONTEXT),
    );
    assert.match(await tool.execute({ action: "read", storageKey: withMeta }, CONTEXT), /^customMetadata: \{"source":"gmail"\}$/m);
    const refused = await tool.run({ action: "write", data: "[]", description: "m", customMetadata: "[1]" }, CONTEXT);
    assert.equal(refused.ok, false);
    assert.match(refused.text, /^llm_cache write failed: InvalidRequestError: customMetadata must be the JSON text of an object/);
  });

  it("accepts its arguments as the JSON text function calling delivers", async (t) => {
    const { tool } = hostTool(t);
    assert.equal(await tool.execute('{"action":"list"}', CONTEXT), "the cache of this session is empty");
  });
});

describe("what a 50-item list costs", () => {
  it("is one short line per item, well inside the spec's 500 bytes per item", async (t) => {
    const now = { value: 0 };
    const { tool } = hostTool(t, { now: () => now.value });
    const senders = ["Ana Lopez", "Bo Chen", "Carla Rossi", "Dev Patel", "Emma Wilson"];
    const subjects = ["Q3 budget review", "Offsite agenda", "Contract renewal", "Hiring plan", "Customer escalation"];
    for (let n = 1; n <= 50; n++) {
      const summary = {
        from: senders[n % 5],
        subject: subjects[n % 5],
        summary: "A paragraph summarising the email, as the LLM wrote it. ".repeat(8),
      };
      await tool.execute(
        {
          action: "write",
          data: summary,
          description: `Summary of email ${n}/50: ${senders[n % 5]} re ${subjects[n % 5]}, needs a reply (120 words)`,
        },
        CONTEXT,
      );
    }
    now.value = Date.now() + 3 * 60_000; // three minutes after the writes: every age reads "3m"

    const list = await tool.execute({ action: "list" }, CONTEXT);
    const lines = list.split("\n");
    assert.equal(lines.length, 51, "a header and 50 items, no cursor");
    assert.match(lines[0] as string, /^50 items, \d+\.\dKB in all, newest first \(key \| size \| age \| from \| shape \| description\):$/);
    for (const line of lines.slice(1)) {
      assert.match(line, ITEM_LINE);
      assert.match(line, / \| \d+B \| 3m \| you \| object\{from,subject,summary\} \| Summary of email \d+\/50: /);
    }
    assert.ok(!list.includes(SESSION), "the session id is not repeated on every line");

    const bytes = Buffer.byteLength(list, "utf8");
    t.diagnostic(`a 50-item list is ${bytes} bytes (${Math.round(bytes / 50)} per item)`);
    assert.ok(bytes < 50 * 500, `${bytes} bytes is over the spec's 500 bytes per item`);
    // Besides description and shape, a line is 42 bytes: key (17), size, age, from ("you") and separators.
    const described = lines.slice(1).reduce((sum, line) => sum + (line.split(" | ")[4] as string).length + (line.split(" | ")[5] as string).length, 0);
    assert.ok(bytes - described < 50 * 46 + 100, "no more than ~46 bytes per item besides shape and description");
  });
});

describe("errors come back as text that says what to do next", () => {
  it("item not found: list to see the keys", async (t) => {
    const { tool } = hostTool(t);
    const answer = await tool.execute({ action: "read", storageKey: "aaaaaaaa_bbbbbbbb" }, CONTEXT);
    assert.match(answer, /^llm_cache read failed: ItemNotFoundError: .+\. Next: list /);
  });

  it("data too large: split it into parts", async (t) => {
    const { tool } = hostTool(t);
    const answer = await tool.execute(
      { action: "write", data: "x".repeat(MAX_ITEM_BYTES), description: "too big" },
      CONTEXT,
    );
    assert.match(answer, /^llm_cache write failed: DataTooLargeError: .*Next: split the data into chunks of at most 5 MB/);
  });

  it("quota exceeded: delete items the task no longer needs", async (t) => {
    const { tool } = hostTool(t);
    const fiveMb = "x".repeat(MAX_ITEM_BYTES - 2);
    for (let n = 1; n <= 10; n++) {
      assert.match(await tool.execute({ action: "write", data: fiveMb, description: `part ${n}/10` }, CONTEXT), /^cached /);
    }
    const answer = await tool.execute({ action: "write", data: 1, description: "one more" }, CONTEXT);
    assert.match(answer, /^llm_cache write failed: QuotaExceededError: .*Next: delete items/);
  });

  it("host not installed: carry on in context, with Chrome's reason", async (t) => {
    const { tool } = hostTool(t, { binary: "/nonexistent/llm-cache-host" });
    const answer = await tool.execute({ action: "write", data: 1, description: "d" }, CONTEXT);
    assert.ok(answer.includes("StorageUnavailableError"), answer);
    assert.ok(answer.includes(CHROME_ERRORS.notFound), answer);
    assert.ok(!answer.includes(".."), answer);
    assert.match(answer, /Next: continue without the cache: process the data in your context/);
  });

  it("a host-side check names the bad value", async (t) => {
    const { tool } = hostTool(t);
    assert.match(
      await tool.execute({ action: "list", limit: 0 }, CONTEXT),
      /^llm_cache list failed: InvalidRequestError: `limit` is not an integer from 1 to 1000 \(got 0\)\. Next: /,
    );
    assert.match(
      await tool.execute({ action: "write", data: 1 }, CONTEXT),
      /^llm_cache write failed: InvalidRequestError: .*description/,
    );
  });

  it("a bad call: unknown action, arguments that aren't an object or aren't JSON", async (t) => {
    const { tool, connect } = hostTool(t);
    assert.match(
      await tool.execute({ action: "fetch" }, CONTEXT),
      /^llm_cache fetch failed: InvalidRequestError: action must be one of the tool's actions \(got fetch\)\. Next: call llm_cache again/,
    );
    assert.match(await tool.execute([1], CONTEXT), /^llm_cache call failed: InvalidRequestError: the tool's arguments must be a JSON object/);
    assert.match(await tool.execute("{action", CONTEXT), /^llm_cache call failed: InvalidRequestError: the tool's arguments are not valid JSON/);
    assert.deepEqual(
      { ...(await tool.run({ action: "fetch" }, CONTEXT)), error: undefined },
      { ok: false, text: await tool.execute({ action: "fetch" }, CONTEXT), error: undefined },
    );
    assert.equal(connect.ports.length, 0, "nothing was sent to the host");
  });
});

describe("odd arguments get a short, clear answer", () => {
  it("a description of any length is cut as the host cuts it, without sending megabytes for 300 characters", async (t) => {
    const { tool, connect } = hostTool(t);
    const cut = (text: string) => `${[...text].slice(0, 299).join("")}…`;
    for (const description of ["d".repeat(70 * 1024 * 1024), "é".repeat(3 * 1024 * 1024), `${"😀".repeat(700)}x`]) {
      const answer = await tool.run({ action: "write", data: "[1]", description }, CONTEXT);
      assert.equal(answer.ok, true, answer.text.slice(0, 300));
      assert.ok(answer.text.endsWith(` | ${cut(description)}`), answer.text.slice(0, 400));
      const key = keyOf(answer.text);
      const updated = await tool.run({ action: "update", storageKey: key, description }, CONTEXT);
      assert.ok(updated.text.endsWith(` | ${cut(description)}`), updated.text.slice(0, 400));
      const appended = await tool.run({ action: "append", storageKey: key, data: "[2]", description }, CONTEXT);
      assert.ok(appended.text.endsWith(` | ${cut(description)}`), appended.text.slice(0, 400));
    }
    const sent = connect.ports.flatMap((port) => port.posted as Array<{ description?: string }>);
    assert.ok(sent.every((message) => (message.description?.length ?? 0) <= 1200), "no description sent longer than 1200 units");
  });

  it("the answer never echoes a long query whole", async (t) => {
    const { tool } = hostTool(t);
    const query = "invoice ".repeat(250_000); // 2 MB
    for (const action of ["list", "search"]) {
      const answer = await tool.run({ action, query }, CONTEXT);
      t.diagnostic(`${action} with a 2 MB query: ${Buffer.byteLength(answer.text)} bytes`);
      assert.ok(Buffer.byteLength(answer.text) < 512, answer.text.slice(0, 600));
    }
  });

  it("data JSON can't write, or nests too deep to send, says so", async (t) => {
    const { tool } = hostTool(t);
    const deep = `${"[".repeat(100_000)}${"]".repeat(100_000)}`;
    for (const data of [deep, { id: 10n }]) {
      const answer = await tool.run({ action: "write", data, description: "d" }, CONTEXT);
      assert.match(answer.text, /^llm_cache write failed: InvalidRequestError: the request can't be sent as JSON: .* Next: send JSON data only: no cycles or BigInts, nested at most a few thousand levels deep/);
    }
  });
});
