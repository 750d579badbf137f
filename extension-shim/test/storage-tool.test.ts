/**
 * StorageTool against the real host: the text every action gives the LLM, data as JSON text, what a 50-item
 * list costs, and errors as text (with `ok: false` from `run`).
 */

import assert from "node:assert/strict";
import { describe, it, type TestContext } from "node:test";
import { NativeCacheClient } from "../src/client.js";
import { MAX_ITEM_BYTES } from "../src/protocol.js";
import { StorageTool, type StorageToolOptions, type ToolContext } from "../src/tool/storage-tool.js";
import { CHROME_ERRORS, hostConnector } from "./helpers/chrome-port.js";
import { tempDir } from "./helpers/temp.js";

/** A conversationId as the agent makes them: conv_ and a UUID. */
const SESSION = "conv_a3f8e2b4-5c6d-7e8f-9a0b-1c2d3e4f5a6b";
const CONTEXT: ToolContext = { sessionId: SESSION };

function hostTool(t: TestContext, options: StorageToolOptions & { binary?: string } = {}) {
  const dir = tempDir();
  const connect = hostConnector({ dataDir: dir.path, binary: options.binary });
  const client = new NativeCacheClient({ connect });
  const tool = new StorageTool(client, options);
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

const ITEM_LINE = /^[a-z0-9]{8}_[a-z0-9]{8} \| \d+(\.\d)?(B|KB|MB) \| \d+[smhd] \| .+$/;

describe("actions", () => {
  it("write answers with metadata only: key, size, age and description", async (t) => {
    const { tool } = hostTool(t);
    const answer = await tool.execute(
      { action: "write", data: { body: "SECRET-BODY-TEXT" }, description: "Summary of email 1/3" },
      CONTEXT,
    );
    assert.match(answer, /^cached [a-z0-9]{8}_[a-z0-9]{8} \| 27B \| \d+s \| Summary of email 1\/3$/);
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

  it("read describes data bigger than one read returns instead of returning it", async (t) => {
    const { tool } = hostTool(t, { maxReadBytes: 1000 });
    const rows = Array.from({ length: 100 }, (_, n) => ({ n, text: "row text" }));
    const key = keyOf(await tool.execute({ action: "write", data: { rows, title: "t" }, description: "100 rows" }, CONTEXT));
    const whole = await tool.execute({ action: "read", storageKey: key }, CONTEXT);
    assert.match(
      whole,
      /the data is 2\.\dKB, more than one read returns \(1000B\)\. It is an object with the keys rows, title: read one with a pointer such as "\/rows"\.$/,
    );
    assert.ok(!whole.includes("row text"));
    const rowsOnly = await tool.execute({ action: "read", storageKey: key, pointer: "/rows" }, CONTEXT);
    assert.match(rowsOnly, /the data at \/rows is .* an array of 100 elements: read them a few at a time with pointers such as "\/rows\/0"\.$/);
    const one = await tool.execute({ action: "read", storageKey: key, pointer: "/rows/42" }, CONTEXT);
    assert.match(one, /data at \/rows\/42: \{"n":42,"text":"row text"\}$/);
    const text = keyOf(await tool.execute({ action: "write", data: "y".repeat(2000), description: "long text" }, CONTEXT));
    assert.match(
      await tool.execute({ action: "read", storageKey: text }, CONTEXT),
      /It is one string of 2000 characters, and a pointer can't read part of a string: store text this long as several smaller items\.$/,
    );
  });

  it("list shows one line per item, newest first, and a cursor while more follow", async (t) => {
    const { tool } = hostTool(t);
    assert.equal(await tool.execute({ action: "list" }, CONTEXT), "the cache of this session is empty");
    for (const n of [1, 2, 3]) await tool.execute({ action: "write", data: n, description: `item ${n}` }, CONTEXT);

    const page1 = (await tool.execute({ action: "list", limit: 2 }, CONTEXT)).split("\n");
    assert.equal(page1[0], "2 of 3 items, 3B in all, newest first (key | size | age | description):");
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
    assert.match(updated, new RegExp(`^updated ${key} \\| 7B \\| \\d+s \\| 15 of 15 done$`));
    assert.match(await tool.execute({ action: "stats" }, CONTEXT), /^1 item, 7B used, 50MB of 50MB free; created \d+s ago, last used \d+s ago$/);
    assert.equal(await tool.execute({ action: "delete", storageKey: key }, CONTEXT), `deleted ${key}, freed 7B`);
    assert.equal(await tool.execute({ action: "stats" }, CONTEXT), "the cache of this session is empty; 50MB free");
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
    assert.match(lines[0] as string, /^50 items, \d+\.\dKB in all, newest first \(key \| size \| age \| description\):$/);
    for (const line of lines.slice(1)) {
      assert.match(line, ITEM_LINE);
      assert.match(line, / \| \d+B \| 3m \| Summary of email \d+\/50: /);
    }
    assert.ok(!list.includes(SESSION), "the session id is not repeated on every line");

    const bytes = Buffer.byteLength(list, "utf8");
    t.diagnostic(`a 50-item list is ${bytes} bytes (${Math.round(bytes / 50)} per item)`);
    assert.ok(bytes < 50 * 500, `${bytes} bytes is over the spec's 500 bytes per item`);
    // The lines are descriptions plus 33 bytes: key (17), size, age and separators.
    const descriptions = lines.slice(1).reduce((sum, line) => sum + (line.split(" | ")[3] as string).length, 0);
    assert.ok(bytes - descriptions < 50 * 40 + 100, "no more than ~40 bytes per item besides the description");
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
