/**
 * offloadLargeResults through the real host: a result over the threshold is cached whole and the LLM gets a
 * few lines instead; smaller results, and results the cache can't take, pass through unchanged.
 */

import assert from "node:assert/strict";
import { it } from "node:test";
import { DEFAULT_OFFLOAD_THRESHOLD_BYTES, preview } from "../src/offload.js";
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
  const key = /^([a-z0-9]{8}_[a-z0-9]{8}) \| 39\.\dKB \| 0s \| object\{id,from,subject,body\} \| read_email result for \{"n":7\}$/.exec(lines[1] as string)?.[1];
  assert.ok(key, lines[1]);
  assert.match(lines[2] as string, /^preview: \{"id":"m7","from":"ana@example\.com","subject":"Q3 budget 7","body":"Hi team, .* …\[3\d\.\dKB more\]… .*Regards, Ana"\}$/);
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
  assert.match(shown.split("\n")[1] as string, /^a7b3c9d2_[a-z0-9]{8} \| 2\.9KB \| 0s \| string\(3006\) \| Page https:\/\/example\.com\/, raw HTML$/);
});

it("a preview keeps the head and the tail, never splits a character, and leaves short text whole", () => {
  assert.equal(preview("short", 10), "short");
  const text = `${"😀".repeat(100)}middle${"z".repeat(100)}`;
  const shown = preview(text, 11);
  assert.equal(shown, `${"😀".repeat(5)} …[${Buffer.byteLength(text) - 20 - 11}B more]… ${"z".repeat(11)}`);
});
