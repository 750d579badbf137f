/**
 * The spec's 50-email scenario through the real host, counted (helpers/inbox-scenario.ts): with append,
 * offloading and references, the document step costs under 1 KB whatever the number of summaries, adding a
 * batch costs that batch, and the document is exactly the summaries. `npm run measure` prints the table
 * in the README.
 */

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { BATCH, inbox, runScenario, summarize, type Mode } from "./helpers/inbox-scenario.js";
import { hostCache } from "./helpers/host-cache.js";

const EMAILS = inbox(50);
const SUMMARIES = EMAILS.map(summarize);

describe("the 50-email scenario", () => {
  it("has emails of about 4 KB and summaries of about 800 bytes", () => {
    for (const email of EMAILS) assert.ok(Math.abs(Buffer.byteLength(JSON.stringify(email)) - 4096) < 300);
    for (const summary of SUMMARIES) assert.ok(Math.abs(Buffer.byteLength(summary) - 800) < 60);
  });

  for (const mode of ["none", "today", "new"] as Mode[]) {
    it(`writes exactly the 50 summaries into the document (${mode})`, async (t) => {
      const { cache, sessionId } = hostCache(t);
      const measured = await runScenario(mode, cache, sessionId, EMAILS);
      assert.equal(measured.document, SUMMARIES.join("\n\n"));
      t.diagnostic(`${mode}: ${JSON.stringify({ ...measured, document: measured.document.length })}`);
    });
  }

  it("with append, offloading and references: the document step is under 1 KB for 10 or 50 summaries", async (t) => {
    const { cache, sessionId } = hostCache(t);
    const fifty = await runScenario("new", cache, sessionId, EMAILS);
    const ten = await runScenario("new", cache, `${sessionId}-10`, EMAILS.slice(0, 10));
    assert.ok(fifty.docStep < 1024, `${fifty.docStep} bytes`);
    assert.ok(Math.abs(fifty.docStep - ten.docStep) <= 2, "the document step doesn't grow with the summaries (but for digits)");
    assert.equal(ten.document, SUMMARIES.slice(0, 10).join("\n\n"));
  });

  it("with append, a batch costs the batch and a line; with today's tool it costs the whole list twice", async (t) => {
    const { cache, sessionId } = hostCache(t);
    const batchBytes = (from: number) => Buffer.byteLength(JSON.stringify(JSON.stringify(SUMMARIES.slice(from, from + BATCH))));
    const appended = await runScenario("new", cache, sessionId, EMAILS);
    assert.equal(appended.batchSteps.length, 10);
    appended.batchSteps.forEach((bytes, i) => {
      const overhead = bytes - batchBytes(i * BATCH);
      assert.ok(overhead > 0 && overhead < 400, `batch ${i + 1}: ${overhead} bytes beyond the batch`);
    });

    const today = await runScenario("today", cache, `${sessionId}-today`, EMAILS);
    const last = today.batchSteps.at(-1) as number;
    assert.ok(last > 2 * Buffer.byteLength(JSON.stringify(SUMMARIES.slice(0, 45))), `${last} bytes to add the last batch`);
  });

  it("costs less in all and at peak than no cache and today's tool", async (t) => {
    const { cache, sessionId } = hostCache(t);
    const [none, today, fresh] = [
      await runScenario("none", cache, `${sessionId}-none`, EMAILS),
      await runScenario("today", cache, `${sessionId}-today`, EMAILS),
      await runScenario("new", cache, `${sessionId}-new`, EMAILS),
    ];
    assert.ok(fresh.total < none.total && fresh.total < today.total);
    // The peak is one email and a batch in progress, not the 50 summaries.
    assert.ok(fresh.peak < 10 * 1024, `${fresh.peak} bytes`);
    assert.ok(none.peak > 40 * 1024 && today.peak > 40 * 1024);
  });
});
