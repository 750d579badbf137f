/**
 * InProcessBackend, the seam the IndexedDB backend plugs into, against real replies: its server forwards each
 * request's text to a real host process (helpers/host-server.ts). The same calls go to the native client on a
 * second host, and both must give the same results and the same typed errors, field for field.
 */

import assert from "node:assert/strict";
import { describe, it, type TestContext } from "node:test";
import type { CacheBackend } from "../src/backend.js";
import { InProcessBackend, stringifyRequest, type ProtocolServer } from "../src/backends/in-process.js";
import { NativeCacheClient } from "../src/backends/native.js";
import { CacheError, InvalidRequestError, ProtocolVersionError, QuotaExceededError, StorageUnavailableError } from "../src/errors.js";
import { MAX_ITEM_BYTES } from "../src/protocol.js";
import { hostConnector } from "./helpers/chrome-port.js";
import { HostProcessServer } from "./helpers/host-server.js";
import { HELLO_V1 } from "./helpers/scripted-port.js";
import { tempDir } from "./helpers/temp.js";

const SESSION = "conv_in-process-test";

/** An InProcessBackend over a real host, and a NativeCacheClient over another, each in its own data directory. */
function twoBackends(t: TestContext) {
  const nativeDir = tempDir();
  const inProcessDir = tempDir();
  const connect = hostConnector({ dataDir: nativeDir.path });
  const native = new NativeCacheClient({ connect, compression: false });
  const server = new HostProcessServer(inProcessDir.path);
  const inProcess = new InProcessBackend(server, "indexeddb");
  t.after(async () => {
    native.close();
    await connect.closeAll();
    await server.stop();
    nativeDir.remove();
    inProcessDir.remove();
  });
  return { native, inProcess, server };
}

/** What differs between two stores by design: generated key parts and times. Everything else must match. */
function normalized(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value), (key, member) =>
    ["storageKey", "taskId", "turnId", "timestamp", "createdAt", "lastAccessedAt", "nextCursor"].includes(key) && member !== null
      ? "*"
      : member,
  );
}

/** An error's class and every field a caller can read. */
function errorFields(error: unknown) {
  assert.ok(error instanceof CacheError, String(error));
  const { name, code, message, expected, actual, suggestion } = error;
  const quota = error instanceof QuotaExceededError ? { current: error.current, requested: error.requested, limit: error.limit } : {};
  return { name, code, message, expected, actual, suggestion, ...quota };
}

async function outcome(call: Promise<unknown>): Promise<unknown> {
  try {
    return { ok: normalized(await call) };
  } catch (error) {
    return { error: errorFields(error) };
  }
}

/** The same steps on a backend: every op, and the failures a caller must be able to tell apart. */
async function steps(backend: CacheBackend): Promise<unknown[]> {
  const seen: unknown[] = [];
  const data = { emails: [{ from: "ana", subject: "Q3" }], n: 1 };
  const written = await backend.write({ sessionId: SESSION, taskId: "task0001", data, description: "inbox" });
  seen.push(normalized(written));
  const key = written.storageKey;
  const missing = `${SESSION}_aaaaaaaa_bbbbbbbb`;
  seen.push(await outcome(backend.read({ sessionId: SESSION, storageKey: key, pointer: "/emails/0/subject" })));
  seen.push(await outcome(backend.readMany({ sessionId: SESSION, storageKeys: [key, missing] })));
  seen.push(await outcome(backend.append({ sessionId: SESSION, storageKey: key, pointer: "/emails", data: [{ from: "bo", subject: "invoice" }] })));
  seen.push(await outcome(backend.update({ sessionId: SESSION, storageKey: key, description: "inbox, 2 emails" })));
  seen.push(await outcome(backend.search({ sessionId: SESSION, query: "invoice" })));
  seen.push(await outcome(backend.list({ sessionId: SESSION, limit: 10 })));
  seen.push(await outcome(backend.stats(SESSION)));
  seen.push(await outcome(backend.read({ sessionId: SESSION, storageKey: missing })));
  seen.push(await outcome(backend.read({ sessionId: SESSION, storageKey: "not-a-key" })));
  seen.push(await outcome(backend.list({ sessionId: SESSION, limit: 0 })));
  seen.push(await outcome(backend.write({ sessionId: SESSION, data: "x".repeat(MAX_ITEM_BYTES - 1), description: "5 MB and a byte" })));
  seen.push(await outcome(backend.delete({ sessionId: SESSION, storageKey: key })));
  seen.push(await outcome(backend.endSession(SESSION)));
  return seen;
}

describe("InProcessBackend", () => {
  it("gives the native client's results and typed errors, field for field, for every op", async (t) => {
    const { native, inProcess } = twoBackends(t);
    const fromNative = await steps(native);
    const fromInProcess = await steps(inProcess);
    assert.deepEqual(fromInProcess, fromNative);
    // The steps did reach the failures they are about.
    const codes = fromNative.flatMap((step) => {
      const error = (step as { error?: { code: string } }).error;
      return error ? [error.code] : [];
    });
    assert.deepEqual(codes, ["ItemNotFoundError", "InvalidKeyFormatError", "InvalidRequestError", "DataTooLargeError"]);
  });

  it("shakes hands first and runs the connect setups before any caller's request, once per connection", async (t) => {
    const { inProcess, server } = twoBackends(t);
    const setups: string[] = [];
    inProcess.onConnect(async ({ backend, hello, request }) => {
      setups.push(`${backend} v${hello.protocolVersion}`);
      await request("endSession", { sessionId: SESSION });
    });
    const [stats, hello] = await Promise.all([inProcess.stats(SESSION), inProcess.hello()]);
    assert.equal(stats.itemCount, 0);
    assert.equal(hello.protocolVersion, 1);
    assert.deepEqual(server.ops, ["hello", "endSession", "stats"]);
    assert.deepEqual(setups, ["indexeddb v1"]);

    inProcess.close(); // a new connection: the handshake and the setups run again
    await inProcess.stats(SESSION);
    assert.deepEqual(server.ops, ["hello", "endSession", "stats", "hello", "endSession", "stats"]);
    assert.equal(server.started, 2);
  });

  it("returns a value over the host's 1 MiB frame whole", async (t) => {
    const { inProcess } = twoBackends(t);
    const data = { text: `"\\\n\u0001é😀`.repeat(100_000) };
    const written = await inProcess.write({ sessionId: SESSION, data, description: "big" });
    assert.deepEqual((await inProcess.read({ sessionId: SESSION, storageKey: written.storageKey })).data, data);
  });

  it("refuses what it can't send, as the native client does, and sends nothing for it", async (t) => {
    const { inProcess, server } = twoBackends(t);
    await inProcess.hello();
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    await assert.rejects(inProcess.write({ sessionId: SESSION, data: cycle, description: "d" }), (error: unknown) => {
      assert.ok(error instanceof InvalidRequestError);
      assert.match(error.message, /^the request can't be sent as JSON: /);
      return true;
    });
    await assert.rejects(inProcess.write({ sessionId: SESSION, data: 10n, description: "d" }), InvalidRequestError);
    assert.deepEqual(server.ops, ["hello"]);
  });
});

describe("InProcessBackend with a server that misbehaves", () => {
  /** A server that answers `hello` with `hello` and everything else with `answer`. */
  const scripted = (hello: unknown, answer: (request: { id: number; op: string }) => string): ProtocolServer & { ops: string[] } => {
    const ops: string[] = [];
    return {
      ops,
      async handleText(text) {
        const request = JSON.parse(text) as { id: number; op: string };
        ops.push(request.op);
        return request.op === "hello" ? JSON.stringify({ id: request.id, ok: true, result: hello }) : answer(request);
      },
    };
  };

  it("refuses a server of another protocol version and sends it nothing else", async () => {
    const server = scripted({ ...HELLO_V1, protocolVersion: 2 }, () => "{}");
    const backend = new InProcessBackend(server);
    await assert.rejects(backend.stats(SESSION), ProtocolVersionError);
    assert.deepEqual(server.ops, ["hello"]);
  });

  it("turns a thrown error or a reply that isn't a JSON object into StorageUnavailableError", async () => {
    const thrower = new InProcessBackend(
      scripted(HELLO_V1, () => {
        throw new Error("the database couldn't be opened");
      }),
    );
    await assert.rejects(thrower.stats(SESSION), (error: unknown) => {
      assert.ok(error instanceof StorageUnavailableError);
      assert.equal(error.message, "the indexeddb backend failed: the database couldn't be opened");
      return true;
    });
    for (const text of ["not json", "null", "42"]) {
      await assert.rejects(new InProcessBackend(scripted(HELLO_V1, () => text)).stats(SESSION), StorageUnavailableError);
    }
  });

  it("maps an error reply with the same mapper as the native client", async () => {
    const error = { code: "QuotaExceededError", message: "full", suggestion: "free some", current: 10, requested: 2, limit: 11 };
    const backend = new InProcessBackend(scripted(HELLO_V1, (request) => JSON.stringify({ id: request.id, ok: false, error })));
    await assert.rejects(backend.write({ sessionId: SESSION, data: 1, description: "d" }), (thrown: unknown) => {
      assert.deepEqual(errorFields(thrown), {
        name: "QuotaExceededError",
        code: "QuotaExceededError",
        message: "full",
        expected: undefined,
        actual: undefined,
        suggestion: "free some",
        current: 10,
        requested: 2,
        limit: 11,
      });
      return true;
    });
  });
});

describe("stringifyRequest", () => {
  it("writes what JSON.stringify writes, for every kind of member", () => {
    const long = "plain text, long enough to matter ".repeat(40);
    const keyed = { toJSON: (key: string) => `written as ${key}` };
    const requests: Array<Record<string, unknown>> = [
      { sessionId: "conv_a", data: long, description: "d", id: 1, op: "write" },
      // Each character JSON.stringify escapes, in a long string and a short one: a quote, a backslash, every control
      // character, a lone surrogate of each kind; and a pair and other non-ASCII, which it doesn't escape.
      ...['"', "\\", ...Array.from({ length: 32 }, (_, c) => String.fromCharCode(c)), "\ud800", "\udfff", "😀", "é", "\u2028", "\u007f"].flatMap(
        (odd) => [{ data: `${long}${odd}${long}`, id: 2, op: "write" }, { data: odd, id: 3, op: "write" }],
      ),
      { data: "", id: 4, op: "write" },
      { data: { nested: [long, 1, null, true, { deeper: "x\ny" }] }, id: 5, op: "write" },
      { data: [-0, 1e21, 1.5e-7, Number.NaN, Number.POSITIVE_INFINITY, 0.1], id: 6, op: "write" },
      { data: undefined, pointer: () => 1, taskId: Symbol("s"), id: 7, op: "read" },
      { data: keyed, customMetadata: keyed, id: 8, op: "write" },
      { data: new Date(0), description: new String("boxed"), id: 9, op: "write" },
      { 2: "two", 1: "one", b: "b", a: "a", id: 10, op: "x" },
      JSON.parse('{"__proto__": "own", "id": 11, "op": "x"}') as Record<string, unknown>,
      { "key\"with\\odd\u0001\ud800": long, id: 12, op: "x" },
      {},
      { gone: undefined, fn: () => 1 },
      { id: 13, last: undefined },
    ];
    for (const request of requests) assert.equal(stringifyRequest(request), JSON.stringify(request));
  });

  it("throws where JSON.stringify throws", () => {
    const cycle: Record<string, unknown> = { id: 1 };
    cycle.self = cycle;
    assert.throws(() => stringifyRequest({ data: 1n, id: 1 }), TypeError);
    assert.throws(() => stringifyRequest({ data: cycle, id: 1 }), TypeError);
  });
});
