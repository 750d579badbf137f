/**
 * NativeCacheClient against the real host binary, through a port that frames messages as Chrome does; and,
 * for what a real host won't do on demand (lose a reply, speak another version), against scripted ports.
 */

import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import { NativeCacheClient, jsonBytesAtMost, type ClientOptions } from "../src/client.js";
import {
  DataTooLargeError,
  InvalidKeyFormatError,
  InvalidRequestError,
  ItemNotFoundError,
  MessageTooLargeError,
  ProtocolVersionError,
  QuotaExceededError,
  RequestTimeoutError,
  StorageUnavailableError,
} from "../src/errors.js";
import {
  MAX_DERIVED_FROM,
  MAX_ITEM_BYTES,
  MAX_QUERY_BYTES,
  MAX_QUERY_WORDS,
  MAX_READ_MANY_BYTES,
  MAX_REQUEST_BYTES,
  MAX_SEARCH_POINTER_BYTES,
  MAX_SOURCE_TOOL_CHARS,
  MAX_SOURCE_URL_CHARS,
  SESSION_QUOTA_BYTES,
  STORE_QUOTA_BYTES,
  utf8Length,
} from "../src/protocol.js";
import { CHROME_ERRORS, hostConnector, type HostConnector } from "./helpers/chrome-port.js";
import { HELLO_V1, replyingScript, scriptedConnector } from "./helpers/scripted-port.js";
import { tempDir } from "./helpers/temp.js";

const SESSION = "conv_client-test";

/** A client on a real host with its own data directory; everything is closed and removed after the test. */
function hostClient(t: TestContext, options: ClientOptions & { dataDir?: string; binary?: string } = {}) {
  const dir = tempDir();
  const connect = hostConnector({ dataDir: options.dataDir ?? dir.path, binary: options.binary });
  const client = new NativeCacheClient({ ...options, connect });
  t.after(async () => {
    client.close();
    await connect.closeAll();
    dir.remove();
  });
  return { client, connect, dir: dir.path };
}

/** A string item whose compact JSON (the quotes included) is exactly `bytes` long. */
function stringOfSize(bytes: number): string {
  return "x".repeat(bytes - 2);
}

function chunkFrames(connect: HostConnector): unknown[] {
  return connect.ports.flatMap((port) => port.received.filter((m) => typeof m === "object" && m !== null && "chunk" in m));
}

describe("handshake", () => {
  it("sends hello first and nothing else until the host has answered it", async (t) => {
    const { client, connect } = hostClient(t);
    const [meta, stats] = await Promise.all([
      client.write({ sessionId: SESSION, data: { a: 1 }, description: "first" }),
      client.stats(SESSION),
    ]);
    assert.equal(meta.description, "first");
    assert.equal(stats.itemCount, 1);
    assert.deepEqual(connect.ports[0]?.log, ["> hello", "< 1", "> write", "> stats", "< 2", "< 3"]);
    assert.equal(client.hostInfo?.protocolVersion, 1);
  });

  it("returns the host's limits", async (t) => {
    const { client } = hostClient(t);
    const hello = await client.hello();
    assert.equal(hello.protocolVersion, 1);
    assert.deepEqual(hello.limits, {
      maxItemBytes: MAX_ITEM_BYTES,
      sessionQuotaBytes: SESSION_QUOTA_BYTES,
      storeQuotaBytes: STORE_QUOTA_BYTES,
      maxDescriptionChars: 300,
      maxReplyFrameBytes: 1_048_576,
      maxRequestFrameBytes: MAX_REQUEST_BYTES,
      maxReadManyBytes: MAX_READ_MANY_BYTES,
      maxQueryWords: MAX_QUERY_WORDS,
      maxQueryBytes: MAX_QUERY_BYTES,
      maxSearchPointerBytes: MAX_SEARCH_POINTER_BYTES,
      maxSourceUrlChars: MAX_SOURCE_URL_CHARS,
      maxSourceToolChars: MAX_SOURCE_TOOL_CHARS,
      maxDerivedFrom: MAX_DERIVED_FROM,
    });
  });

  it("refuses a host that speaks another protocol version, and sends it nothing else", async () => {
    const connect = scriptedConnector(replyingScript({ hello: { ...HELLO_V1, protocolVersion: 2 } }));
    const client = new NativeCacheClient({ connect });
    const write = client.write({ sessionId: SESSION, data: 1, description: "d" });
    await assert.rejects(write, (error: unknown) => {
      assert.ok(error instanceof ProtocolVersionError);
      assert.ok(error instanceof StorageUnavailableError);
      assert.match(error.message, /protocol version 2, but this shim speaks version 1/);
      return true;
    });
    assert.deepEqual(connect.ports[0]?.posted.map((m) => m.op), ["hello"]);
    assert.equal(connect.ports[0]?.disconnected, true);
    // It doesn't stick to the refused port: the next call asks a new one, which is refused the same way.
    await assert.rejects(client.stats(SESSION), ProtocolVersionError);
    assert.equal(connect.ports.length, 2);
  });
});

describe("operations", () => {
  it("writes, reads (whole and by pointer), lists by pages, updates, deletes, counts and ends a session", async (t) => {
    const { client } = hostClient(t);
    const data = { emails: [{ subject: "Q3 budget", unread: true }, { subject: "Offsite", unread: false }] };
    const written = await client.write({
      sessionId: SESSION,
      taskId: "a7b3c9d2",
      turnId: "f4e8a1b6",
      data,
      description: "2 emails",
      customMetadata: { source: "gmail" },
    });
    assert.equal(written.storageKey, `${SESSION}_a7b3c9d2_f4e8a1b6`);
    assert.equal(written.dataSize, JSON.stringify(data).length);
    assert.equal("data" in written, false, "a write returns metadata only");

    const item = await client.read({ sessionId: SESSION, storageKey: written.storageKey });
    assert.deepEqual(item.data, data);
    assert.deepEqual(item.customMetadata, { source: "gmail" });
    const part = await client.read({ sessionId: SESSION, storageKey: written.storageKey, pointer: "/emails/1/subject" });
    assert.equal(part.data, "Offsite");

    // Ids in the order of writing: writes in one millisecond tie, and list then puts the greater key first.
    const second = await client.write({ sessionId: SESSION, taskId: "task0002", turnId: "turn0001", data: [1, 2, 3], description: "numbers" });
    const third = await client.write({ sessionId: SESSION, taskId: "task0003", turnId: "turn0001", data: "text", description: "a string" });
    const page1 = await client.list({ sessionId: SESSION, limit: 2 });
    assert.deepEqual(
      page1.items.map((i) => i.storageKey),
      [third.storageKey, second.storageKey],
    );
    assert.equal(page1.itemCount, 3);
    assert.ok(page1.nextCursor !== null);
    const page2 = await client.list({ sessionId: SESSION, limit: 2, cursor: page1.nextCursor });
    assert.deepEqual(page2.items.map((i) => i.storageKey), [written.storageKey]);
    assert.equal(page2.nextCursor, null);

    const updated = await client.update({ sessionId: SESSION, storageKey: second.storageKey, description: "numbers, checked" });
    assert.equal(updated.description, "numbers, checked");
    assert.equal(updated.dataSize, second.dataSize);

    const deleted = await client.delete({ sessionId: SESSION, storageKey: third.storageKey });
    assert.deepEqual(deleted, { storageKey: third.storageKey, deleted: true, freedBytes: third.dataSize });

    const stats = await client.stats(SESSION);
    assert.equal(stats.itemCount, 2);
    // The quota counts customMetadata too (PROTOCOL.md section 5.7).
    assert.equal(stats.totalSize, written.dataSize + JSON.stringify({ source: "gmail" }).length + second.dataSize);
    assert.equal(stats.remainingBytes, SESSION_QUOTA_BYTES - stats.totalSize);

    const ended = await client.endSession(SESSION);
    assert.deepEqual(ended, { sessionId: SESSION, deletedItems: 2, freedBytes: stats.totalSize });
    assert.equal((await client.stats(SESSION)).itemCount, 0);
  });

  it("reads a 5 MB item back whole, reassembled from chunk frames", async (t) => {
    const { client, connect } = hostClient(t, { compression: false });
    const data = stringOfSize(MAX_ITEM_BYTES);
    const meta = await client.write({ sessionId: SESSION, data, description: "5 MB of x" });
    assert.equal(meta.dataSize, MAX_ITEM_BYTES);
    const item = await client.read({ sessionId: SESSION, storageKey: meta.storageKey });
    assert.equal(item.data, data);
    assert.ok(chunkFrames(connect).length >= 5, "a 5 MB reply comes as at least 5 frames of at most 1 MiB");
  });

  it("reassembles chunks whose split points fall inside escapes and multi-byte characters", async (t) => {
    const { client, connect } = hostClient(t, { compression: false });
    // Quotes, backslashes, line breaks and control characters grow when escaped; é and 😀 are 2 and 4 bytes.
    const data = { text: `"\\\n\u0001é😀<>`.repeat(150_000), list: ["a\"b", "\\", "😀"] };
    const meta = await client.write({ sessionId: SESSION, data, description: "awkward text" });
    const item = await client.read({ sessionId: SESSION, storageKey: meta.storageKey });
    assert.deepEqual(item.data, data);
    assert.ok(chunkFrames(connect).length >= 2);
  });
});

describe("errors", () => {
  it("ItemNotFoundError for a key the session doesn't hold", async (t) => {
    const { client } = hostClient(t);
    await assert.rejects(client.read({ sessionId: SESSION, storageKey: `${SESSION}_aaaaaaaa_bbbbbbbb` }), (error: unknown) => {
      assert.ok(error instanceof ItemNotFoundError);
      assert.equal(error.code, "ItemNotFoundError");
      assert.equal(error.actual, `${SESSION}_aaaaaaaa_bbbbbbbb`);
      assert.ok(error.suggestion.length > 0);
      return true;
    });
  });

  it("InvalidKeyFormatError for a malformed key", async (t) => {
    const { client } = hostClient(t);
    await assert.rejects(client.read({ sessionId: SESSION, storageKey: "not-a-key" }), (error: unknown) => {
      assert.ok(error instanceof InvalidKeyFormatError);
      assert.equal(error.actual, "not-a-key");
      return true;
    });
  });

  it("DataTooLargeError for an item over 5 MB, with the limit and the size", async (t) => {
    const { client } = hostClient(t);
    await assert.rejects(
      client.write({ sessionId: SESSION, data: stringOfSize(MAX_ITEM_BYTES + 1), description: "too big" }),
      (error: unknown) => {
        assert.ok(error instanceof DataTooLargeError);
        assert.equal(error.expected, MAX_ITEM_BYTES);
        assert.equal(error.actual, MAX_ITEM_BYTES + 1);
        return true;
      },
    );
  });

  it("InvalidRequestError for a field out of range", async (t) => {
    const { client } = hostClient(t);
    await assert.rejects(client.list({ sessionId: SESSION, limit: 0 }), (error: unknown) => {
      assert.ok(error instanceof InvalidRequestError);
      assert.equal(error.actual, 0);
      return true;
    });
  });

  it("QuotaExceededError once the session holds 50 MB, with the quota numbers", async (t) => {
    const { client } = hostClient(t);
    const full = Array.from({ length: 10 }, (_, n) =>
      client.write({ sessionId: SESSION, data: stringOfSize(MAX_ITEM_BYTES), description: `part ${n + 1}/10` }),
    );
    await Promise.all(full);
    await assert.rejects(client.write({ sessionId: SESSION, data: 1, description: "one more" }), (error: unknown) => {
      assert.ok(error instanceof QuotaExceededError);
      assert.equal(error.current, SESSION_QUOTA_BYTES);
      assert.equal(error.requested, 1);
      assert.equal(error.limit, SESSION_QUOTA_BYTES);
      return true;
    });
  });

  it("StorageUnavailableError when the host can't open its store, while hello still works", async (t) => {
    const dir = tempDir();
    t.after(() => dir.remove());
    const file = join(dir.path, "a-file");
    writeFileSync(file, "");
    const { client } = hostClient(t, { dataDir: join(file, "cache") });
    assert.equal((await client.hello()).protocolVersion, 1);
    await assert.rejects(client.write({ sessionId: SESSION, data: 1, description: "d" }), (error: unknown) => {
      assert.ok(error instanceof StorageUnavailableError);
      assert.match(error.message, /unavailable/);
      return true;
    });
  });

  it("StorageUnavailableError with Chrome's text when the host isn't installed", async (t) => {
    const { client } = hostClient(t, { binary: "/nonexistent/llm-cache-host" });
    await assert.rejects(client.stats(SESSION), (error: unknown) => {
      assert.ok(error instanceof StorageUnavailableError);
      assert.ok(error.message.includes(CHROME_ERRORS.notFound), error.message);
      return true;
    });
  });

  it("rejects what is pending with Chrome's text when the host dies, then connects again on the next call", async (t) => {
    const { client, connect } = hostClient(t);
    const kept = await client.write({ sessionId: SESSION, data: { kept: true }, description: "written before the crash" });
    const first = connect.ports[0]!;
    // Stopped, the host can't answer, so the request is certainly pending when the host is killed.
    first.kill("SIGSTOP");
    const pending = client.stats(SESSION);
    first.kill("SIGKILL");
    await assert.rejects(pending, (error: unknown) => {
      assert.ok(error instanceof StorageUnavailableError);
      assert.ok(error.message.includes(CHROME_ERRORS.exited), error.message);
      return true;
    });
    const item = await client.read({ sessionId: SESSION, storageKey: kept.storageKey });
    assert.deepEqual(item.data, { kept: true });
    assert.equal(connect.ports.length, 2);
  });

  it("StorageUnavailableError when connectNative itself throws, and tries again on the next call", async () => {
    let calls = 0;
    const working = scriptedConnector(replyingScript());
    const client = new NativeCacheClient({
      connect: (name) => {
        calls++;
        if (calls === 1) throw new Error("Access to the specified native messaging host is forbidden.");
        return working(name);
      },
    });
    await assert.rejects(client.hello(), /forbidden/);
    assert.equal((await client.hello()).protocolVersion, 1);
  });
});

describe("pipelining", () => {
  it("sends many requests before the first reply and matches each reply to its request", async (t) => {
    const { client, connect } = hostClient(t);
    await client.hello();
    const writes = Array.from({ length: 20 }, (_, n) =>
      client.write({ sessionId: SESSION, data: { n }, description: `item ${n}` }),
    );
    const results = await Promise.all(writes);
    assert.deepEqual(
      results.map((r) => r.description),
      Array.from({ length: 20 }, (_, n) => `item ${n}`),
    );
    const log = connect.ports[0]!.log;
    assert.deepEqual(log.slice(0, 2), ["> hello", "< 1"]);
    assert.deepEqual(log.slice(2, 22), Array(20).fill("> write"), "all 20 sent before any reply came back");
  });

  it("routes an id-less error reply to the oldest request waiting, as replies come in order", async () => {
    const connect = scriptedConnector(
      replyingScript({
        reply: () => ({
          id: null,
          ok: false,
          error: { code: "InvalidRequestError", message: "the frame is not JSON", suggestion: "send JSON" },
        }),
      }),
    );
    const client = new NativeCacheClient({ connect });
    await assert.rejects(client.stats(SESSION), InvalidRequestError);
  });
});

describe("lost replies and the request size limit", () => {
  it("times out a request whose reply never comes, fails what waits behind it, and reconnects", async () => {
    let answerStats = false;
    const connect = scriptedConnector(
      replyingScript({ reply: (m) => (answerStats ? { id: m.id, ok: true, result: { itemCount: 0 } } : undefined) }),
    );
    const client = new NativeCacheClient({ connect, timeoutMs: 50 });
    const lost = client.stats(SESSION);
    const behind = client.stats(SESSION);
    await assert.rejects(lost, (error: unknown) => {
      assert.ok(error instanceof RequestTimeoutError);
      assert.equal(error.code, "StorageUnavailableError");
      return true;
    });
    await assert.rejects(behind, (error: unknown) => {
      assert.ok(error instanceof StorageUnavailableError && !(error instanceof RequestTimeoutError));
      assert.match(error.message, /stopped answering/);
      return true;
    });
    assert.equal(connect.ports[0]?.disconnected, true);

    answerStats = true;
    assert.deepEqual(await client.stats(SESSION), { itemCount: 0 });
    assert.equal(connect.ports.length, 2);
  });

  it("times out a handshake that gets no answer", async () => {
    const connect = scriptedConnector(() => undefined);
    const client = new NativeCacheClient({ connect, timeoutMs: 50 });
    await assert.rejects(client.hello(), RequestTimeoutError);
    assert.equal(connect.ports[0]?.disconnected, true);
  });

  it("refuses a message over the host's request limit before sending it, and keeps the port", async (t) => {
    const { client, connect } = hostClient(t);
    await client.hello();
    await assert.rejects(
      client.write({ sessionId: SESSION, data: "x".repeat(MAX_REQUEST_BYTES), description: "8 MiB" }),
      (error: unknown) => {
        assert.ok(error instanceof MessageTooLargeError);
        assert.ok(error instanceof DataTooLargeError);
        assert.equal(error.expected, MAX_REQUEST_BYTES);
        return true;
      },
    );
    assert.deepEqual(connect.ports[0]!.log, ["> hello", "< 1"], "nothing was sent");
    assert.equal((await client.stats(SESSION)).itemCount, 0);
    assert.equal(connect.ports.length, 1);
  });

  it("measures the limit in UTF-8 bytes of the JSON text, exactly at the boundary", async () => {
    const connect = scriptedConnector(replyingScript());
    const client = new NativeCacheClient({ connect });
    await client.hello();
    const fields = (n: number, char = "x") => ({ sessionId: SESSION, description: "d", data: char.repeat(n) });
    // The next request gets id 2 and the one after it id 3: the same number of digits.
    const overhead = JSON.stringify({ ...fields(0), id: 2, op: "write" }).length;

    await client.request("write", fields(MAX_REQUEST_BYTES - overhead));
    await assert.rejects(client.request("write", fields(MAX_REQUEST_BYTES - overhead + 1)), MessageTooLargeError);
    // Half as many characters, but é is 2 bytes in UTF-8: over the limit all the same.
    await assert.rejects(client.request("write", fields(MAX_REQUEST_BYTES / 2, "é")), MessageTooLargeError);
    assert.deepEqual(connect.ports[0]!.posted.map((m) => m.op), ["hello", "write"]);
  });
});

describe("compressed replies", () => {
  it("asks for gzip in hello, and decodes large replies to exactly the data, in a fraction of the bytes", async (t) => {
    const { client, connect } = hostClient(t);
    assert.equal((await client.hello()).encoding, "gzip");
    const words = ["budget", "quarter", "meeting", "invoice", "numbers", "Friday", "review"];
    const prose = Array.from({ length: 400_000 }, (_, n) => words[(n * 7 + (n >> 3)) % words.length]).join(" ");
    const item = await client.write({ sessionId: SESSION, data: { prose, tricky: "é😀\"\\\n" }, description: "prose" });
    const frames: number[] = [];
    connect.ports[0]!.onMessage.addListener((message) => frames.push(JSON.stringify(message).length));
    const read = await client.read({ sessionId: SESSION, storageKey: item.storageKey });
    assert.deepEqual(read.data, { prose, tricky: "é😀\"\\\n" });
    const sent = frames.reduce((sum, n) => sum + n, 0);
    assert.ok(sent < item.dataSize / 2, `${sent} bytes crossed for ${item.dataSize} of data`);

    const { client: plain } = hostClient(t, { compression: false });
    assert.equal((await plain.hello()).encoding, undefined);
  });
});

describe("readMany", () => {
  it("reads several items in one request, in order, with a missing key as an entry with its error", async (t) => {
    const { client, connect } = hostClient(t);
    const keys = [];
    for (const n of [1, 2, 3]) keys.push((await client.write({ sessionId: SESSION, data: { n, text: `summary ${n}` }, description: "d" })).storageKey);
    const before = connect.ports[0]!.log.length;
    const entries = await client.readMany({
      sessionId: SESSION,
      storageKeys: [keys[2]!, { storageKey: keys[0]!, pointer: "/text" }, `${SESSION}_aaaaaaaa_bbbbbbbb`],
    });
    assert.deepEqual(connect.ports[0]!.log.slice(before), ["> read", "< 5"], "one request, one reply");
    assert.deepEqual(entries.map((entry) => ("item" in entry ? entry.item.data : entry.error.code)), [
      { n: 3, text: "summary 3" },
      "summary 1",
      "ItemNotFoundError",
    ]);
  });
});

describe("the size check before sending", () => {
  it("bounds a message's JSON bytes from above without serialising it, and gives up on what it can't be sure of", () => {
    const values: unknown[] = [
      "plain",
      "é😀\u0000\n\"\\",
      "\u001f".repeat(1000),
      [1.5e-300, -0, 12345678901234567890, null, true, undefined, "x"],
      { a: { b: [{ c: "d" }] }, "ké\ny": [], skipped: undefined },
      Array.from({ length: 200 }, (_, n) => ({ n, text: "t".repeat(n) })),
      // Long strings: plain ASCII is counted exactly, anything that escapes or is multi-byte is bounded.
      "x".repeat(5000),
      `${"x".repeat(5000)}"`,
      `${"x".repeat(5000)}\u0001`,
      `${"x".repeat(5000)}é`,
      "\u007f".repeat(5000),
    ];
    for (const value of values) {
      const exact = utf8Length(JSON.stringify(value) ?? "");
      assert.ok(jsonBytesAtMost(value) >= exact, `${JSON.stringify(value).slice(0, 40)}: bound below ${exact}`);
    }
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    for (const unsure of [10n, () => 1, cycle, new Date(0)]) assert.equal(jsonBytesAtMost(unsure), Infinity);
    // A 5 MB string is well under 8 MiB by the bound alone: no serialising just to measure it.
    assert.ok(jsonBytesAtMost({ data: "x".repeat(5 * 1024 * 1024) }) < MAX_REQUEST_BYTES);
  });
});

describe("odd data a caller hands the client", () => {
  // A cycle that branches makes a bound that recurses visit 2^1000 values: a hang, so the test has a limit.
  it("a branching cycle fails at once instead of hanging", { timeout: 60_000 }, async (t) => {
    const { client } = hostClient(t);
    const branching: unknown[] = [];
    branching.push(branching, branching);
    assert.equal(jsonBytesAtMost(branching), Infinity);
    await assert.rejects(client.write({ sessionId: SESSION, data: branching, description: "d" }), (error: InvalidRequestError) => {
      assert.equal(error.code, "InvalidRequestError");
      assert.match(error.message, /^the request can't be sent as JSON: .*circular/);
      return true;
    });
    assert.equal((await client.write({ sessionId: SESSION, data: [1], description: "d" })).dataSize, 3, "the port carries on");
  });

  it("arrays nested 200,000 deep are bounded without overflowing the stack", () => {
    let deep: unknown = "x";
    for (let i = 0; i < 200_000; i++) deep = [deep];
    assert.equal(jsonBytesAtMost(deep), Infinity, "past 1000 levels the bound gives up and JSON.stringify decides");
    let shallow: unknown = "x";
    for (let i = 0; i < 1000; i++) shallow = [shallow];
    assert.equal(jsonBytesAtMost(shallow), 6 + 2 + 1000 * 3);
  });

  it("a message the browser can't serialise fails alone; the port and the requests on it carry on", async () => {
    const connect = scriptedConnector(replyingScript({ reply: (m) => ({ id: m.id, ok: true, result: { op: m.op } }) }));
    // Chrome's postMessage throws this for data nested about 2,400 levels deep (e2e checks it in Chromium).
    const refusing = Object.assign((name: string) => {
      const port = connect(name);
      const post = port.postMessage.bind(port);
      port.postMessage = (message: unknown) => {
        if ((message as { op: string }).op === "refused") throw new Error("Could not serialize message.");
        post(message);
      };
      return port;
    });
    const client = new NativeCacheClient({ connect: refusing });
    const outcomes = await Promise.allSettled([client.request("stats", {}), client.request("refused", {}), client.request("list", {})]);
    assert.deepEqual(outcomes[0], { status: "fulfilled", value: { op: "stats" } });
    assert.equal(outcomes[1]?.status, "rejected");
    const error = (outcomes[1] as PromiseRejectedResult).reason as InvalidRequestError;
    assert.ok(error instanceof InvalidRequestError, String(error));
    assert.equal(error.message, "the browser couldn't send the request to the native host: Could not serialize message.");
    assert.match(error.suggestion, /less deeply nested/);
    assert.deepEqual(outcomes[2], { status: "fulfilled", value: { op: "list" } });
    assert.deepEqual(await client.request("stats", {}), { op: "stats" });
    assert.equal(connect.ports.length, 1, "one port throughout");
    assert.equal(connect.ports[0]?.disconnected, false);
    client.close();
  });
});

describe("a handshake the host refuses", () => {
  it("closes that port, so no host process is left behind, and tries a new one next time", async () => {
    const connect = scriptedConnector((m) => ({
      id: m.id,
      ok: false,
      error: { code: "StorageUnavailableError", message: "broken", suggestion: "s" },
    }));
    const client = new NativeCacheClient({ connect });
    await assert.rejects(client.hello(), StorageUnavailableError);
    assert.equal(connect.ports[0]?.disconnected, true);
    await assert.rejects(client.hello(), StorageUnavailableError);
    assert.equal(connect.ports.length, 2);
  });
});
