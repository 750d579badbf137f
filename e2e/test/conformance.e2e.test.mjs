// The protocol's conformance suite (tests/transcripts/*.txt, which tests/replay.rs runs against the real host and
// extension-shim/test/conformance.test.ts against IdbHost on fake-indexeddb) run against the shim's IdbHost in a
// real Chromium, on its real IndexedDB. The extension is fixtures/conformance-extension plus copies of the built
// shim, assembled in the test's sandbox; each transcript replays in its service worker on databases of its own,
// which it deletes afterwards.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { launchWithExtension } from "../lib/browser.mjs";
import { CHROMIUM, E2E_DIR, REPO_DIR } from "../lib/env.mjs";
import { createSandbox } from "../lib/sandbox.mjs";

const TRANSCRIPTS_DIR = path.join(REPO_DIR, "tests", "transcripts");
const SHIM_DIST = path.join(REPO_DIR, "extension-shim", "dist");
const FIXTURE_DIR = path.join(E2E_DIR, "fixtures", "conformance-extension");
/** The quota transcript writes many 5 MB items; under Node the whole suite takes about 10 s. */
const RUN_TIMEOUT_MS = 120_000;

const names = fs
  .readdirSync(TRANSCRIPTS_DIR)
  .filter((file) => file.endsWith(".txt"))
  .map((file) => file.slice(0, -4))
  .sort();

/** Throws, with what to do, when the built shim or Chromium is missing: those are set-up errors, not skips. */
function requireShimAndChromium() {
  for (const file of [path.join(SHIM_DIST, "src", "backends", "indexeddb", "host.js"), path.join(SHIM_DIST, "test", "helpers", "transcript.js")]) {
    if (!fs.existsSync(file)) {
      throw new Error(`${file} is missing: build the shim and its tests (cd extension-shim && npm run build && npx tsc -p test/tsconfig.json)`);
    }
  }
  try {
    fs.accessSync(CHROMIUM, fs.constants.X_OK);
  } catch {
    throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (or set CHROMIUM_PATH)`);
  }
}

/**
 * Writes the conformance extension into `dir`: the fixture's manifest and worker, the shim's compiled modules
 * (only the .js files of dist/src/) as lib/, and the replay runner beside the worker. Returns `dir`.
 */
function assembleExtension(dir) {
  fs.cpSync(FIXTURE_DIR, dir, { recursive: true });
  fs.cpSync(path.join(SHIM_DIST, "src"), path.join(dir, "lib"), {
    recursive: true,
    filter: (source) => fs.statSync(source).isDirectory() || source.endsWith(".js"),
  });
  fs.copyFileSync(path.join(SHIM_DIST, "test", "helpers", "transcript.js"), path.join(dir, "transcript.js"));
  return dir;
}

/** Replays `text` in the worker; resolves with what the worker's `conformance.run` resolved. */
function replay(browser, name, text) {
  return browser.run(({ name, text }) => globalThis.conformance.run(name, text), { name, text }, {
    timeoutMs: RUN_TIMEOUT_MS,
    what: `replaying ${name}`,
  });
}

describe("the transcripts, against IdbHost in Chromium's IndexedDB", () => {
  const s = {};
  before(async () => {
    requireShimAndChromium();
    s.sandbox = createSandbox("conformance");
    const extensionDir = assembleExtension(path.join(s.sandbox.root, "extension"));
    s.browser = await launchWithExtension(s.sandbox, extensionDir, { globalName: "conformance" });
  });
  after(async () => {
    await s.browser?.close();
    await s.sandbox?.cleanup();
  });

  for (const name of names) {
    it(name, async (t) => {
      const text = fs.readFileSync(path.join(TRANSCRIPTS_DIR, `${name}.txt`), "utf8");
      const outcome = await replay(s.browser, name, text);
      assert.deepEqual(outcome.left, [], `${name}'s databases were not all deleted`);
      if (outcome.error !== undefined) assert.fail(outcome.error);
      assert.ok(outcome.report.compared > 0, `${name} compared no reply`);
      t.diagnostic(`${outcome.report.compared} replies compared; databases: ${outcome.databases.join(" | ") || "none"}`);
      for (const { line, why } of outcome.report.skipped) t.diagnostic(`skipped ${name}:${line}: ${why}`);
    });
  }

  it("keeps each origin's data in a database of its own", async () => {
    // isolation.txt restarts for another Chromium extension and for a Firefox add-on, then comes back.
    const text = fs.readFileSync(path.join(TRANSCRIPTS_DIR, "isolation.txt"), "utf8");
    const outcome = await replay(s.browser, "isolation", text);
    assert.equal(outcome.error, undefined);
    assert.deepEqual(
      outcome.databases.map((databaseName) => databaseName.replace(/^conformance \d+ isolation: /, "")),
      [
        "llm-cache chrome-extension://otherextensionbbbbbbbbbbbbbbbbbb/",
        "llm-cache chrome-extension://testextensionaaaaaaaaaaaaaaaaaa/",
        "llm-cache moz-extension:cache@browserx.dev",
      ],
    );
  });

  it("fails a transcript whose reply differs, and says where", async () => {
    const wrong = [
      `> {"id": 1, "op": "write", "sessionId": "conv_t1", "taskId": "task0001", "turnId": "turn0001", "data": [1], "description": "d"}`,
      `< {"id": 1, "ok": true, "result": {"storageKey": "conv_t1_task0001_turn0001", "description": "d", "timestamp": "*", "dataSize": 4, "shape": "*", "sessionId": "conv_t1", "taskId": "task0001", "turnId": "turn0001"}}`,
    ].join("\n");
    const mismatch = await replay(s.browser, "wrong", wrong);
    assert.match(mismatch.error ?? "", /^wrong:2: the reply to line 1 does not match \(\/result\/dataSize: expected 4, got 3\)/);
    assert.equal(mismatch.databases.length, 1);
    assert.deepEqual(mismatch.left, []);

    const unanswered = await replay(s.browser, "wrong", `> {"id": 1, "op": "hello"}\n`);
    assert.match(unanswered.error ?? "", /wrong: requests on lines 1 have no reply line/);
  });
});

it("finds every transcript", () => {
  assert.ok(names.length >= 19, names.join(", "));
  assert.ok(names.includes("write_and_read") && names.includes("search"));
});
