/**
 * offloadLargeResults through the real host: a result over the threshold is cached whole and the LLM gets a
 * few lines instead; smaller results, and results the cache can't take, pass through unchanged.
 */

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { DEFAULT_OFFLOAD_THRESHOLD_BYTES, preview } from "../src/offload.js";
import { MAX_ITEM_BYTES } from "../src/protocol.js";
import { formatSize } from "../src/tool/format.js";
import { hostCache } from "./helpers/host-cache.js";

/** A fetched email of `bytes` bytes or so, as a tool like read_email returns it. */
function email(n: number, bytes: number) {
  const words = "The quarterly numbers are in, and the budget needs another look before Friday. ";
  return { id: `m${n}`, from: "ana@example.com", subject: `Q3 budget ${n}`, body: `Hi team, ${words.repeat(Math.ceil(bytes / words.length))}Regards, Ana` };
}

it("a result over 10 KB is cached as it is; the LLM sees its key, shape, size, a head-and-tail preview and what to do", async (t) => {
  const { cache, sessionId } = hostCache(t);
  const big = email(7, 40_000);
  const calls: unknown[] = [];
  const readEmail = cache.offloadLargeResults("read_email", async (args: { n: number }, context: { sessionId: string }) => {
    calls.push([args, context.sessionId]);
    return big;
  });

  const shown = await readEmail({ n: 7 }, { sessionId });
  assert.deepEqual(calls, [[{ n: 7 }, sessionId]], "the tool ran once, with its own arguments");
  assert.equal(typeof shown, "string");
  const lines = (shown as string).split("\n");
  assert.match(lines[0] as string, /^read_email's result \(39\.\dKB\) was cached instead of shown:$/);
  const key = /^([a-z0-9]{8}_[a-z0-9]{8}) \| 39\.\dKB \| 0s \| tool read_email \| "object\{id,from,subject,body\}" \| "read_email result for \{\\"n\\":7\}"$/.exec(lines[1] as string)?.[1];
  assert.ok(key, lines[1]);
  // A tool's result is other people's text: its preview is fenced.
  assert.match(lines[2] as string, /^preview: <untrusted-([a-z0-9]{8})>\{"id":"m7","from":"ana@example\.com","subject":"Q3 budget 7","body":"Hi team, .* …\[3\d\.\dKB more\]… .*Regards, Ana"\}<\/untrusted-\1>$/);
  assert.match(lines[3] as string, new RegExp(`llm_cache read \\(storageKey "${key}".*search.*\\{\\{llm_cache:${key}\\}\\}`));
  const bytes = Buffer.byteLength(shown as string);
  t.diagnostic(`a 40 KB result is shown in ${bytes} bytes`);
  assert.ok(bytes < 1024, `${bytes} bytes shown`);

  // The cached item is the result exactly.
  const item = await cache.client.read({ sessionId, storageKey: `${sessionId}_${key}` });
  assert.deepEqual(item.data, big);
});

it("results up to the threshold, and every result while the host is missing, pass through unchanged", async (t) => {
  const { cache, sessionId } = hostCache(t);
  const small = email(1, 4_000);
  const tool = cache.offloadLargeResults("read_email", () => small);
  assert.equal(await tool({}, { sessionId }), small);
  const atThreshold = "x".repeat(DEFAULT_OFFLOAD_THRESHOLD_BYTES - 2); // JSON text: two quotes more
  assert.equal(await cache.offloadLargeResults("t", () => atThreshold)({}, { sessionId }), atThreshold);
  assert.equal((await cache.client.stats(sessionId)).itemCount, 0, "nothing was cached");

  const { cache: missing } = hostCache(t, { connect: () => { throw new Error("Specified native messaging host not found."); } });
  const big = email(2, 20_000);
  assert.equal(await missing.offloadLargeResults("read_email", () => big)({}, { sessionId }), big);
});

it("takes a threshold, a description and the agent's task id", async (t) => {
  const { cache, sessionId } = hostCache(t);
  const tool = cache.offloadLargeResults("fetch_page", () => "<html>" + "p".repeat(3000), {
    thresholdBytes: 1000,
    describe: (args: { url: string }) => `Page ${args.url}, raw HTML`,
    taskId: () => "a7b3c9d2",
  });
  const shown = (await tool({ url: "https://example.com/" }, { sessionId })) as string;
  assert.match(shown.split("\n")[1] as string, /^a7b3c9d2_[a-z0-9]{8} \| 2\.9KB \| 0s \| tool fetch_page \| "string\(3006\)" \| "Page https:\/\/example\.com\/, raw HTML"$/);
});

it("a preview keeps the head and the tail, never splits a character, and leaves short text whole", () => {
  assert.equal(preview("short", 10), "short");
  const text = `${"😀".repeat(100)}middle${"z".repeat(100)}`;
  const shown = preview(text, 11);
  assert.equal(shown, `${"😀".repeat(5)} …[${Buffer.byteLength(text) - 20 - 11}B more]… ${"z".repeat(11)}`);
});

describe("offloading never makes a tool fail by itself", () => {
  it("a result JSON can't write (a cycle, a BigInt, a throwing toJSON) is returned unchanged", async (t) => {
    const { cache, sessionId } = hostCache(t);
    const cyclic: { body: string; self?: unknown } = { body: "x".repeat(20_000) };
    cyclic.self = cyclic;
    const bigint = { body: "x".repeat(20_000), id: 10n ** 30n };
    const throwing = { body: "x".repeat(20_000), toJSON: () => { throw new Error("no JSON for you"); } };
    for (const result of [cyclic, bigint, throwing, 10n]) {
      assert.equal(await cache.offloadLargeResults("t", () => result)({}, { sessionId }), result);
    }
    assert.equal((await cache.client.stats(sessionId)).itemCount, 0, "nothing was cached");
  });

  it("arguments JSON can't write, and a describe or taskId that throws, still offload", async (t) => {
    const { cache, sessionId } = hostCache(t);
    const big = email(1, 20_000);
    const cyclicArgs: { self?: unknown } = {};
    cyclicArgs.self = cyclicArgs;
    for (const [args, options, description] of [
      [{ id: 10n }, {}, "t result for arguments JSON can't show"],
      [cyclicArgs, {}, "t result for arguments JSON can't show"],
      [{}, { describe: () => { throw new Error("oops"); } }, "t result"],
      [{}, { describe: () => 42 as unknown as string }, "42"],
      [{}, { describe: () => `a ${"very ".repeat(1_000_000)}long one` }, `a ${"very ".repeat(59)}ve…`],
      [{}, { taskId: () => { throw new Error("oops"); } }, 't result for {}'],
    ] as const) {
      const shown = (await cache.offloadLargeResults("t", () => big, options as object)(args, { sessionId })) as string;
      assert.equal(typeof shown, "string", description);
      assert.ok(shown.split("\n")[1]?.endsWith(` | ${JSON.stringify(description)}`), `${shown.split("\n")[1]} should end with ${description}`);
    }
  });
});

describe("a result over one item's limit (5 MB) never reaches the LLM whole", () => {
  const MB = 1024 * 1024;

  /** Reads every part named in the text the LLM got, in order; checks each is within the item limit. */
  async function readParts(cache: ReturnType<typeof hostCache>["cache"], sessionId: string, shown: string) {
    const keys = [...shown.matchAll(/^([a-z0-9]{8}_[a-z0-9]{8}) \| /gm)].map((match) => match[1] as string);
    const parts = [];
    for (const key of keys) {
      const item = await cache.client.read({ sessionId, storageKey: `${sessionId}_${key}` });
      assert.ok(item.dataSize <= MAX_ITEM_BYTES, `${key}: ${item.dataSize} bytes`);
      parts.push(item);
    }
    return parts;
  }

  it("an array is cached in parts, by elements, each at most 5 MB; the LLM reads one line per part", async (t) => {
    const { cache, sessionId } = hostCache(t, { compression: false });
    const emails = Array.from({ length: 3000 }, (_, n) => email(n, 4_000)); // 12 MB of JSON
    const bytes = Buffer.byteLength(JSON.stringify(emails));
    const shown = (await cache.offloadLargeResults("list_emails", () => emails, { taskId: () => "a7b3c9d2" })({ folder: "inbox" }, { sessionId })) as string;
    const lines = shown.split("\n");
    assert.equal(lines[0], `list_emails's result (${formatSize(bytes)}) is more than one item holds (5MB), so it was cached in 3 parts instead of shown (key | size | from | shape | part):`);
    for (const [i, line] of lines.slice(1, 4).entries()) {
      assert.match(line, /^a7b3c9d2_[a-z0-9]{8} \| \d(\.\d)?MB \| tool list_emails \| "array\[\d+\] of \{id,from,subject,body\}" \| elements \d+-\d+ of 3000$/, `part ${i + 1}`);
    }
    assert.match(lines[4] as string, /^preview: <untrusted-([a-z0-9]{8})>\[\{"id":"m0",.* …\[11\.\dMB more\]… .*Regards, Ana"\}\]<\/untrusted-\1>$/);
    assert.match(lines[5] as string, /^Read a part a page at a time with llm_cache read \(storageKey "a7b3c9d2_[a-z0-9]{8}"/);
    assert.equal(lines.length, 6);
    t.diagnostic(`a ${formatSize(bytes)} array is shown in ${Buffer.byteLength(shown)} bytes`);
    assert.ok(Buffer.byteLength(shown) < 1500, `${Buffer.byteLength(shown)} bytes shown`);

    const parts = await readParts(cache, sessionId, shown);
    assert.deepEqual(parts.flatMap((part) => part.data as unknown[]), emails, "the parts, in order, are the result");
    assert.match(parts[1]?.description as string, /^list_emails result for \{"folder":"inbox"\} \(part 2 of 3: elements \d+-\d+ of 3000\)$/);
  });

  it("a string is cached in parts by characters, never splitting one, whatever JSON escapes; an object by members", async (t) => {
    const { cache, sessionId } = hostCache(t, { compression: false });
    // Quotes, backslashes, line breaks and control characters take 2 or 6 bytes in JSON; é 2, € 3, 😀 4.
    const text = `"\\\n\u0001é€😀<abc>`.repeat(450_000); // 26 bytes of JSON each: 11.2 MB
    const shown = (await cache.offloadLargeResults("fetch_page", () => text)({}, { sessionId })) as string;
    assert.match(shown.split("\n")[0] as string, /^fetch_page's result \(11\.2MB\) is more than one item holds \(5MB\), so it was cached in 3 parts/);
    assert.match(shown.split("\n")[1] as string, / \| tool fetch_page \| "string\(\d+\)" \| characters 0-\d+ of 5400000$/);
    const parts = await readParts(cache, sessionId, shown);
    assert.equal(parts.length, 3);
    assert.ok(parts.slice(0, 2).every((part) => part.dataSize > MAX_ITEM_BYTES - 16), "each part but the last is full");
    assert.equal(parts.map((part) => part.data).join(""), text);

    const inbox = Object.fromEntries(Array.from({ length: 1500 }, (_, n) => [`m${n}`, email(n, 4_000)]));
    const shownObject = (await cache.offloadLargeResults("inbox", () => inbox)({}, { sessionId })) as string;
    assert.match(shownObject.split("\n")[1] as string, / \| tool [a-z_]+ \| "object\{m0,m1,m2,.*" \| members 0-\d+ of 1500$/);
    const objectParts = await readParts(cache, sessionId, shownObject);
    assert.deepEqual(Object.assign({}, ...objectParts.map((part) => part.data)), inbox);
  });

  it("what can't be cut into parts, or doesn't fit the session, is shown as a preview with a note; nothing is left behind", async (t) => {
    const { cache, sessionId } = hostCache(t, { compression: false });
    const huge = { body: "y".repeat(6 * MB) };
    const shown = (await cache.offloadLargeResults("read_email", () => huge)({}, { sessionId })) as string;
    assert.equal(
      unfenced(shown),
      `read_email's result (6MB) is too big to show, and was not cached: its member 0 alone is 6MB, more than one item holds (5MB).\n` +
        `preview: <F>{"body":"${"y".repeat(191)} …[6MB more]… ${"y".repeat(198)}"}</F>\n` +
        "Next: call read_email again for less (a page, a narrower query, fewer fields).",
    );

    // 40 MB already cached: a 12 MB result doesn't fit the 50 MB quota, and its parts written so far go again.
    const filler = "z".repeat(MAX_ITEM_BYTES - 2);
    await Promise.all(Array.from({ length: 8 }, (_, i) => cache.client.write({ sessionId, data: filler, description: `filler ${i}` })));
    const before = await cache.client.stats(sessionId);
    const emails = Array.from({ length: 3000 }, (_, n) => email(n, 4_000));
    const refused = (await cache.offloadLargeResults("list_emails", () => emails)({}, { sessionId })) as string;
    const lines = refused.split("\n");
    assert.match(lines[0] as string, /^list_emails's result \(11\.\dMB\) is too big to show, and was not cached: QuotaExceededError: /);
    assert.match(lines[1] as string, /^preview: <untrusted-[a-z0-9]{8}>\[\{"id":"m0",/);
    assert.match(lines[2] as string, /^Next: call list_emails again for less \(a page, a narrower query, fewer fields\), or free space in the cache/);
    assert.ok(Buffer.byteLength(refused) < 1024, refused);
    const after = await cache.client.stats(sessionId);
    assert.deepEqual([after.itemCount, after.totalSize], [before.itemCount, before.totalSize], "the parts written were deleted");

    // More than a whole session holds is not even tried.
    const writes = cache.client.write.bind(cache.client);
    let tried = 0;
    cache.client.write = (request) => (tried++, writes(request));
    const tooMuch = (await cache.offloadLargeResults("t", () => "w".repeat(51 * MB))({}, { sessionId })) as string;
    assert.match(tooMuch, /^t's result \(51MB\) is too big to show, and was not cached: it is more than a session's whole cache \(50MB\)\.\n/);
    assert.equal(tried, 0);
  });

  it("while the host is missing, a result over 5 MB is shown as a preview with a note", async (t) => {
    const { cache, sessionId } = hostCache(t, { connect: () => { throw new Error("Specified native messaging host not found."); } });
    const shown = (await cache.offloadLargeResults("t", () => "v".repeat(6 * MB))({}, { sessionId })) as string;
    assert.equal(
      unfenced(shown),
      "t's result (6MB) is too big to show, and was not cached: StorageUnavailableError: can't connect to the native host: Specified native messaging host not found.\n" +
        `preview: <F>"${"v".repeat(200)} …[6MB more]… ${"v".repeat(200)}"</F>\n` +
        "Next: call t again for less (a page, a narrower query, fewer fields).",
    );
  });
});

/** A reply with its one fence id written as F, after checking that every tag in it has that id. */
function unfenced(reply: string): string {
  const ids = new Set([...reply.matchAll(/<\/?untrusted-([a-z0-9]{8})>/g)].map((match) => match[1]));
  assert.equal(ids.size, 1, reply);
  return reply.replace(/<(\/?)untrusted-[a-z0-9]{8}>/g, "<$1F>");
}
