/**
 * The protocol's conformance suite (tests/transcripts/*.txt, which tests/replay.rs runs against the real host)
 * run against the IndexedDB backend's IdbHost under Node, on fake-indexeddb. Each transcript gets a database of its
 * own, with the store quota the transcript sets (`!store-quota`) or the host's default; a `!restart` starts a new IdbHost on the same databases (running its orphan sweep first, as the host does at
 * start), another origin's is another database, and `!unavailable` gives an IndexedDB that refuses to open.
 */

import "fake-indexeddb/auto";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { IDBFactory } from "fake-indexeddb";
import { IdbHost } from "../src/backends/indexeddb/host.js";
import { STORE_QUOTA_BYTES } from "../src/protocol.js";
import { replayTranscript, type ReplayHooks } from "./helpers/transcript.js";

const TRANSCRIPTS = new URL("../../../tests/transcripts/", import.meta.url);

/** An IndexedDB that refuses to open any database, as a browser that denies it (private browsing) does. */
const REFUSING = {
  open() {
    throw new DOMException("IndexedDB is not available here", "InvalidStateError");
  },
} as unknown as IDBFactory;

/** Hooks that run a transcript against IdbHosts on one fresh fake IndexedDB. */
function idbHooks(): ReplayHooks {
  const factory = new IDBFactory();
  return {
    async start(origin, unavailable, storeQuotaBytes) {
      const host = new IdbHost({
        indexedDB: unavailable ? REFUSING : factory,
        databaseName: `llm-cache ${origin}`,
        storeQuotaBytes: storeQuotaBytes ?? STORE_QUOTA_BYTES,
      });
      if (!unavailable) await host.maintain();
      return host;
    },
    stop(server) {
      (server as IdbHost).close();
    },
  };
}

const names = readdirSync(TRANSCRIPTS)
  .filter((file) => file.endsWith(".txt"))
  .map((file) => file.slice(0, -4))
  .sort();

describe("the transcripts, against IdbHost", () => {
  for (const name of names) {
    it(name, async () => {
      const text = readFileSync(new URL(`${name}.txt`, TRANSCRIPTS), "utf8");
      const report = await replayTranscript(name, text, idbHooks());
      assert.ok(report.compared > 0, `${name} compared no reply`);
    });
  }
});

it("finds every transcript", () => {
  assert.ok(names.length >= 19, names.join(", "));
  assert.ok(names.includes("write_and_read") && names.includes("search"));
});

it("fails a transcript whose reply differs, and says where", async () => {
  const text = [
    `> {"id": 1, "op": "write", "sessionId": "conv_t1", "taskId": "task0001", "turnId": "turn0001", "data": [1], "description": "d"}`,
    `< {"id": 1, "ok": true, "result": {"storageKey": "conv_t1_task0001_turn0001", "description": "d", "timestamp": "*", "dataSize": 4, "shape": "*", "sessionId": "conv_t1", "taskId": "task0001", "turnId": "turn0001"}}`,
  ].join("\n");
  await assert.rejects(replayTranscript("wrong", text, idbHooks()), /wrong:2: the reply to line 1 does not match \(\/result\/dataSize: expected 4, got 3\)/);
  await assert.rejects(replayTranscript("wrong", "> {\"id\": 1, \"op\": \"hello\"}\n", idbHooks()), /have no reply line/);
});
