/**
 * The twin of the host's rules (src/backends/indexeddb/json/rules.ts): every case of the Rust unit tests in
 * src/rules.rs but compact_json's (in json-twin.test.ts), with the host's error texts word for word.
 */

import assert from "node:assert/strict";
import { it } from "node:test";
import {
  checkSessionId,
  checkShortId,
  generateId,
  ID_ALPHABET,
  idChar,
  isRuleError,
  parseStorageKey,
  sessionOf,
  storageKey,
  truncateDescription,
} from "../src/backends/indexeddb/json/index.js";

it("checks session ids", () => {
  for (const good of ["conv_a", "conv_a3f8e2b4-5c6d-7e8f-9g0h-1i2j3k4l5m6n", `conv_${"Z".repeat(64)}`]) {
    assert.equal(checkSessionId("sessionId", good), undefined, good);
  }
  for (const bad of ["", "conv_", "conv", "abc_123", "conv_a_b", "conv_a b", "conv_é", `conv_${"Z".repeat(65)}`]) {
    const error = checkSessionId("sessionId", bad);
    assert.equal(error?.code, "InvalidKeyFormatError", bad);
    assert.ok(error?.message.startsWith("sessionId"), error?.message);
  }
  // The whole error body, field for field in the host's order, as the host serialises it.
  assert.equal(
    JSON.stringify(checkSessionId("sessionId", "conv_a b")),
    JSON.stringify({
      code: "InvalidKeyFormatError",
      message: "sessionId is not of the form `conv_` then 1 to 64 of [A-Za-z0-9-]",
      expected: "`conv_` then 1 to 64 of [A-Za-z0-9-]",
      actual: "conv_a b",
      suggestion:
        "use the storageKey exactly as a write or list returned it; sessionIds come from the conversation and taskIds/turnIds may be left out to have them generated",
    }),
  );
});

it("checks task and turn ids", () => {
  assert.equal(checkShortId("taskId", "a7b3c9d2"), undefined);
  for (const bad of ["a7b3c9d", "a7b3c9d2x", "A7B3C9D2", "a7b3-9d2", "a7b3_9d2", "", "a7b3c9dé"]) {
    assert.equal(checkShortId("taskId", bad)?.message, "taskId is not of the form exactly 8 of [a-z0-9]", bad);
  }
});

it("parses storage keys from the right", () => {
  const key = parseStorageKey("conv_a3f8-e2b4_a7b3c9d2_f4e8a1b6");
  assert.deepEqual(key, { sessionId: "conv_a3f8-e2b4", taskId: "a7b3c9d2", turnId: "f4e8a1b6" });
  assert.ok(!isRuleError(key));
  assert.equal(storageKey(key.sessionId, key.taskId, key.turnId), "conv_a3f8-e2b4_a7b3c9d2_f4e8a1b6");
  assert.equal(sessionOf("conv_a3f8-e2b4_a7b3c9d2_f4e8a1b6"), "conv_a3f8-e2b4");
  assert.equal(sessionOf("a_b"), "");
  assert.equal(sessionOf("__"), "");
});

it("names the wrong part of a storage key", () => {
  const cases = [
    ["conv_abc_a7b3c9d2", "storageKey's sessionId part"],
    ["nope_x_a7b3c9d2_f4e8a1b6", "storageKey's sessionId part"],
    ["conv_abc_A7B3C9D2_f4e8a1b6", "storageKey's taskId part"],
    ["conv_abc_a7b3c9d2_f4e8a1b", "storageKey's turnId part"],
    ["plain", "storageKey"],
    ["a_b", "storageKey"],
    ["_a_b", "storageKey's sessionId part"],
    ["_x", "storageKey"],
  ];
  for (const [key, part] of cases) {
    const error = parseStorageKey(key as string);
    assert.ok(isRuleError(error), key);
    assert.equal(error.code, "InvalidKeyFormatError");
    assert.ok(error.message.startsWith(`${part} is not`), `${key}: ${error.message}`);
  }
  const whole = parseStorageKey("plain");
  assert.ok(isRuleError(whole));
  assert.equal(whole.expected, "{sessionId}_{taskId}_{turnId}, e.g. conv_abc123_a7b3c9d2_f4e8g1h6");
});

it("echoes long bad values by their length in bytes only", () => {
  assert.equal(checkSessionId("sessionId", "x".repeat(5000))?.actual, "a string of 5000 bytes");
  assert.equal(checkSessionId("sessionId", "é".repeat(50))?.actual, "é".repeat(50), "100 bytes are echoed");
  assert.equal(checkSessionId("sessionId", "é".repeat(51))?.actual, "a string of 102 bytes");
});

it("generates ids of eight alphabet characters", () => {
  let counter = 0;
  const id = generateId((buffer) => {
    for (let i = 0; i < buffer.length; i++) buffer[i] = counter++ % 256;
  });
  assert.equal(id, "abcdefgh");
  assert.equal(checkShortId("turnId", id), undefined);
});

it("rejects biased bytes rather than folding them in", () => {
  let calls = 0;
  const id = generateId((buffer) => {
    calls++;
    buffer.fill(calls === 1 ? 255 : 35);
  });
  assert.equal(id, "99999999");
  assert.equal(calls, 2);
});

it("makes every id character equally likely", () => {
  const counts = new Map<string, number>();
  for (let byte = 0; byte <= 255; byte++) {
    const char = idChar(byte);
    if (char !== undefined) counts.set(char, (counts.get(char) ?? 0) + 1);
  }
  assert.deepEqual([...counts.keys()].sort().join(""), [...ID_ALPHABET].sort().join(""));
  assert.ok([...counts.values()].every((n) => n === 7), JSON.stringify([...counts]));
  assert.equal([...counts.values()].reduce((a, b) => a + b, 0), 252);
});

it("passes the random source's errors through", () => {
  assert.throws(
    () =>
      generateId(() => {
        throw new Error("no entropy");
      }),
    /no entropy/,
  );
});

it("cuts descriptions to 300 characters with an ellipsis", () => {
  assert.equal(truncateDescription("short"), "short");
  const exact = "a".repeat(300);
  assert.equal(truncateDescription(exact), exact);
  const cut = truncateDescription("é".repeat(301));
  assert.equal([...cut].length, 300);
  assert.ok(cut.endsWith("…"));
  assert.equal([...cut].filter((c) => c === "é").length, 299);
  // Characters outside the BMP are one character each and never split.
  const emoji = truncateDescription("😀".repeat(400));
  assert.equal([...emoji].length, 300);
  assert.equal(emoji, `${"😀".repeat(299)}…`);
  assert.equal(truncateDescription("😀".repeat(300)), "😀".repeat(300));
});
