/**
 * The text the pages show, under Node: the viewer's JSON printer (pretty.ts) lays out any item, however deep, in
 * text proportional to the page and as `JSON.stringify(data, null, 2)` did for ordinary data; and the characters
 * the pages escape (visible.ts) are exactly the command line's (src/terminal.rs), read from that file. The pages
 * themselves run in Chromium (e2e/test/pages.e2e.test.mjs).
 */

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import type { JsonValue } from "../src/protocol.js";
import { jsonText, MAX_INDENT_LEVELS } from "../src/pages/pretty.js";
import { escapeControls, isUnsafe } from "../src/pages/visible.js";
import { Rng } from "./helpers/rng.js";

const repoFile = (path: string) => readFileSync(new URL(`../../../${path}`, import.meta.url), "utf8");

/** `n` arrays, one inside the other, around `inner`: as JSON text. */
const deep = (n: number, inner = "") => `${"[".repeat(n)}${inner}${"]".repeat(n)}`;

/** The most characters a line of `jsonText` has beyond its token: the deepest indentation. */
const WIDEST_INDENT = 2 * MAX_INDENT_LEVELS;

/** A random value of ordinary data (no character the pages escape), a few levels deep. Bounded test data. */
function ordinary(rng: Rng, depth = 0): JsonValue {
  switch (rng.below(depth >= 4 ? 4 : 6)) {
    case 0:
      return rng.pick(["", "Q3 budget", 'say "hi"', "a\\b", "é😀", "line\nbreak\ttab", "\u0000", "\ud800", "</script>"]);
    case 1:
      return rng.pick([0, -0, 1.5, -12.25e-3, 1e21, 123456789, 2 ** 60]);
    case 2:
      return rng.pick([true, false]);
    case 3:
      return null;
    case 4:
      return Array.from({ length: rng.below(5) }, () => ordinary(rng, depth + 1));
    default: {
      const object: { [key: string]: JsonValue } = {};
      for (let i = rng.below(5); i > 0; i--) object[rng.pick(["a", "subject", "", "2", "10", "x y", "é", "__proto__x"])] = ordinary(rng, depth + 1);
      return object;
    }
  }
}

describe("the viewer's JSON printer", () => {
  it("lays out ordinary data exactly as JSON.stringify(data, null, 2) did, and compact as JSON.stringify(data)", () => {
    const rng = new Rng(23);
    const values: JsonValue[] = [
      { emails: [{ from: "dana@northwind.example", subject: "Q3", unread: true, to: ["a", "b"], n: null }, {}], e: [], total: 2 },
      [1, [2, [3, [4]]], { a: { b: { c: -1 } } }],
      "just a string",
      42,
      [],
      {},
      { 10: "a", 2: "b", x: [[]], y: [{}] },
    ];
    for (let i = 0; i < 2000; i++) values.push(ordinary(rng));
    for (const value of values) {
      assert.equal(jsonText(value), JSON.stringify(value, null, 2));
      assert.equal(jsonText(value, 0), JSON.stringify(value));
      assert.equal(jsonText(value, 4), JSON.stringify(value, null, 4));
    }
  });

  it("prints an item nested 7,000 deep (JSON.stringify throws), and one nested 200,000 deep", () => {
    const text = deep(7000, '"x"');
    const data = JSON.parse(text) as JsonValue;
    assert.throws(() => JSON.stringify(data, null, 2), RangeError);
    for (const [depth, value] of [[7000, data] as const, [200_000, JSON.parse(deep(200_000, '"x"')) as JsonValue] as const]) {
      const lines = jsonText(value).split("\n");
      assert.equal(lines.length, 2 * depth + 1);
      assert.equal(lines[3], "      [");
      assert.equal(lines[depth], `${" ".repeat(WIDEST_INDENT)}"x"`);
      assert.equal(lines[2 * depth], "]");
      assert.ok(lines.every((line) => line.length <= WIDEST_INDENT + 3));
    }
    assert.equal(jsonText(data, 0), text);
  });

  it("gives a 15 KB page of [deep(3900), deep(3900)] text within a fixed multiple of its size, not 60 MB", (t) => {
    const text = `[${deep(3900)},${deep(3900)}]`;
    const page = JSON.parse(text) as JsonValue;
    const out = jsonText(page);
    // Each line is its token and at most the deepest indentation: one opening bracket, one line.
    assert.ok(out.length <= (WIDEST_INDENT + 2) * text.length, `${out.length} characters for ${text.length}`);
    assert.equal(jsonText(JSON.parse(out) as JsonValue, 0), text);
    const old = JSON.stringify(page, null, 2).length;
    t.diagnostic(`${text.length} characters of JSON: ${out.length} laid out (${(out.length / text.length).toFixed(1)} times), against ${old} with JSON.stringify(data, null, 2)`);
    assert.ok(old > 1000 * text.length);
  });

  it("escapes bidi, invisible and control characters in strings and member names; the text is still the same JSON", () => {
    const value = { "k\u202e": ["report\u202Efdp.exe", "\u200b\ufeff\u0085\u009b\u007f", "👨\u200d👩\u200d👧"], n: "\u2028" };
    const out = jsonText(value);
    assert.equal(
      out,
      '{\n  "k\\u202e": [\n    "report\\u202efdp.exe",\n    "\\u200b\\ufeff\\u0085\\u009b\\u007f",\n    "👨\u200d👩\u200d👧"\n  ],\n  "n": "\\u2028"\n}',
    );
    assert.deepEqual(JSON.parse(out), value);
    assert.equal(jsonText(value, 0), escapeControls(JSON.stringify(value)));
  });

  it("indents no further than the command line's printer (src/json/pretty.rs)", () => {
    const rust = /pub const MAX_INDENT_LEVELS: usize = (\d+);/.exec(repoFile("src/json/pretty.rs"));
    assert.equal(MAX_INDENT_LEVELS, Number(rust?.[1]));
  });
});

describe("the characters the pages make visible", () => {
  it("are written as the command line writes them", () => {
    // src/terminal.rs's own cases.
    const hostile = "\u001b]0;PWNED\u0007\u001b[2J \u001b]52;c;aGk=\u0007 \u009b31m \u0085\u007f \u202ecod.exe \u2066x\u2069";
    assert.equal(
      escapeControls(hostile),
      String.raw`\u001b]0;PWNED\u0007\u001b[2J \u001b]52;c;aGk=\u0007 \u009b31m \u0085\u007f \u202ecod.exe \u2066x\u2069`,
    );
    assert.equal(escapeControls("a\tb\nc\rd\b\f\0"), String.raw`a\tb\nc\rd\b\f\u0000`);
    assert.equal(escapeControls("\u200b\ufeff\u2028\u061c\u200f"), String.raw`\u200b\ufeff\u2028\u061c\u200f`);
    assert.equal(escapeControls("report\u202Efdp.exe"), String.raw`report\u202efdp.exe`);
    for (const kept of ["Summary of email 1", "é😀 naïve", "👨\u200d👩\u200d👧", "ن\u200cا", String.raw`C:\temp \u001b`, "\u00a0\u00a0", "\ud800"]) {
      assert.equal(escapeControls(kept), kept);
    }
  });

  it("are exactly src/terminal.rs's is_unsafe, code point for code point", () => {
    const source = repoFile("src/terminal.rs");
    const body = /pub fn is_unsafe\(c: char\) -> bool \{\s*matches!\(\s*c,([^)]*)\)/.exec(source)?.[1];
    assert.ok(body, "src/terminal.rs has no `is_unsafe` of the form `matches!(c, ...)`");
    const char = (literal: string): number => {
      const escape = /^'\\u\{([0-9a-fA-F]+)\}'$/.exec(literal);
      if (escape) return parseInt(escape[1] ?? "", 16);
      if (literal === "'\\0'") return 0;
      assert.fail(`a char literal this test doesn't read: ${literal}`);
    };
    const ranges = body.split("|").map((pattern) => {
      const [first, last = first] = pattern.trim().split("..=");
      return [char(first ?? ""), char(last ?? "")] as const;
    });
    assert.ok(ranges.length >= 8, body);
    for (let code = 0; code <= 0x10ffff; code++) {
      const rust = ranges.some(([first, last]) => code >= first && code <= last);
      if (isUnsafe(code) !== rust) assert.fail(`U+${code.toString(16)}: src/terminal.rs says ${rust}, visible.ts ${!rust}`);
      if (code < 0xd800 || code > 0xdfff) {
        const text = String.fromCodePoint(code);
        assert.equal(escapeControls(text) !== text, rust, `U+${code.toString(16)}`);
      }
    }
  });
});
