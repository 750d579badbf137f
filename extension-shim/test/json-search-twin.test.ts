/**
 * The twin of the host's search (src/backends/indexeddb/json/search.ts): every case of the Rust unit tests in
 * src/json/search.rs, and the letters where JS and Rust lower-case differently.
 */

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { findIn, foldWord, isRustWhitespace, lower, MAX_SNIPPET_CHARS, Query } from "../src/backends/indexeddb/json/index.js";
import { MAX_QUERY_BYTES, MAX_QUERY_WORDS, MAX_SEARCH_POINTER_BYTES } from "../src/protocol.js";

function query(text: string): Query {
  const parsed = Query.parse(text);
  assert.ok(parsed instanceof Query, `${text}: ${JSON.stringify(parsed)}`);
  return parsed;
}

function search(data: string, text: string, skip = 0, max = 100) {
  const result = findIn(data, query(text), skip, max);
  assert.ok(result !== undefined, data);
  return result;
}

const pointers = (data: string, text: string) => search(data, text).found.map((found) => found.pointer);

describe("search", () => {
  it("finds every word ignoring case, with pointers to the strings", () => {
    const data =
      '{"emails":[{"subject":"Invoice 42 overdue","body":"Please pay the INVOICE"},{"subject":"Lunch"}],"a/b~":"invoice due"}';
    assert.deepEqual(pointers(data, "invoice"), ["/emails/0/subject", "/emails/0/body", "/a~1b~0"]);
    assert.deepEqual(pointers(data, "INVOICE due"), ["/emails/0/subject", "/a~1b~0"]);
    assert.deepEqual(pointers(data, "lunch"), ["/emails/1/subject"]);
    assert.deepEqual(pointers(data, "subject"), [], "names are not values");
    assert.deepEqual(pointers(String.raw`["Straße","\u00c9t\u00e9"]`, "été"), ["/1"]);
    assert.deepEqual(pointers('["ÉTÉ","été","Ete"]', "Été"), ["/0", "/1"]);
    assert.deepEqual(pointers('"just text"', "TEXT"), [""]);
    // Escapes are decoded before matching: `\/`, `\"` and `\b` are the characters they stand for.
    assert.deepEqual(pointers(String.raw`["a\/b","a/b",  "x\"y", "p\bq"]`, "A/B"), ["/0", "/1"]);
    assert.deepEqual(pointers(String.raw`["a\/b","x\"y"]`, 'x"Y'), ["/1"]);
    assert.deepEqual(pointers(String.raw`["p\bq"]`, "P\bq"), ["/0"]);
  });

  it("takes words that overlap, repeat or lie inside each other", () => {
    const data = '["abc","ab","bc","in an invoice","in"]';
    assert.deepEqual(pointers(data, "ab bc"), ["/0"]);
    assert.deepEqual(pointers(data, "bc ab ab abc"), ["/0"]);
    assert.deepEqual(pointers(data, "in invoice"), ["/3"]);
    const long = `aaab${"y".repeat(5000)}`;
    assert.ok(query("aa ab").matches(long));
    assert.ok(query("aa ab y").matches(long));
    assert.ok(!query("aa ab ya").matches(long));
    // The snippet is placed at the first word's first occurrence, though it lies inside another.
    const text = `in ${"x ".repeat(200)} invoice`;
    const { found } = search(`"${text}"`, "in invoice", 0, 1);
    assert.ok(found[0]?.snippet.startsWith("in x"), found[0]?.snippet);
  });

  it("never folds non-ASCII into ASCII", () => {
    const intoAscii: number[] = [];
    for (let c = 0x80; c <= 0x10ffff; c++) {
      if (c >= 0xd800 && c <= 0xdfff) continue;
      if ([...String.fromCodePoint(c).toLowerCase()].some((l) => l.charCodeAt(0) < 0x80)) intoAscii.push(c);
    }
    assert.deepEqual(intoAscii, [0x130, 0x212a]);
    assert.ok(intoAscii.every((c) => lower(c) === c));
    assert.deepEqual(pointers('["\u212Aelvin","kelvin","KELVIN"]', "kelvin"), ["/1", "/2"]);
    assert.deepEqual(pointers('["\u0130stanbul","istanbul"]', "\u0130STANBUL"), ["/0"]);
    assert.deepEqual(pointers('["\u0130stanbul","istanbul"]', "ISTANBUL"), ["/1"]);
  });

  it("lower-cases one character at a time, as Rust's char::to_lowercase", () => {
    const fold = (text: string) => foldWord(text);
    // é and É are one letter in two cases.
    assert.equal(fold("ÉTÉ"), "été");
    // ß has no single-letter upper case to meet; "SS" is two ASCII letters and stays so.
    assert.equal(fold("ß"), "ß");
    assert.deepEqual(pointers('["Straße","STRASSE","strasse"]', "straße"), ["/0"]);
    assert.deepEqual(pointers('["Straße","STRASSE","strasse"]', "STRASSE"), ["/1", "/2"]);
    // İ lower-cases to two characters (i and a combining dot): it stays İ.
    assert.equal(fold("İ"), "İ");
    // ǅ (title case) lower-cases to ǆ; Ǆ too.
    assert.equal(fold("ǅ"), "ǆ");
    assert.deepEqual(pointers('["\u01C4EMAL","\u01C5emal","\u01C6emal"]', "\u01C5EMAL"), ["/0", "/1", "/2"]);
    // Σ is always σ, never the final ς that JS's toLowerCase gives a word-final Σ; ς itself stays ς.
    assert.equal("ΟΔΟΣ".toLowerCase(), "οδος", "JS's string lower case has a final sigma");
    assert.equal(fold("ΟΔΟΣ"), "οδοσ");
    assert.deepEqual(pointers('["ΟΔΟΣ","οδος","οδοσ"]', "ΟΔΟΣ"), ["/0", "/2"]);
    assert.deepEqual(pointers('["ΟΔΟΣ","οδος","οδοσ"]', "οδος"), ["/1"]);
    // ﬃ has no case; ᾳ's upper cases are ᾼ (one letter, which folds back) and ΑΙ (two).
    assert.equal(fold("ﬃ"), "ﬃ");
    assert.deepEqual(pointers('["oﬃce","office"]', "ﬃ"), ["/0"]);
    assert.equal(fold("ᾼ"), "ᾳ");
    assert.deepEqual(pointers('["\u1FBC","\u1FB3","ΑΙ"]', "ᾳ"), ["/0", "/1"]);
    // 😀 has no case; a surrogate pair is one character, in words and in the snippet's count.
    assert.equal(fold("😀"), "😀");
    assert.deepEqual(pointers(String.raw`["a😀b","\ud83d\ude00"]`, "😀"), ["/0", "/1"]);
    // Deseret, outside the BMP, has case.
    assert.equal(fold("\u{10400}"), "\u{10428}");
    assert.deepEqual(pointers('["\u{10400}x"]', "\u{10428}X"), ["/0"]);
  });

  it("splits queries at Rust's white space, not JS's \\s", () => {
    assert.ok(isRustWhitespace(0x85) && !/\s/.test("\u0085"), "NEL is white space to Rust only");
    assert.ok(!isRustWhitespace(0xfeff) && /\s/.test("\ufeff"), "BOM is white space to JS only");
    assert.deepEqual(query("a\u0085b").words, ["a", "b"]);
    assert.deepEqual(query("a\ufeffb").words, ["a\ufeffb"]);
    assert.deepEqual(query(" \t\u3000x\u2028y ").words, ["x", "y"]);
  });

  it("pages through matches", () => {
    const data = '["x1","x2","x3","y","x4"]';
    const first = search(data, "x", 0, 2);
    assert.deepEqual([first.found.length, first.more], [2, true]);
    const rest = search(data, "x", 2, 2);
    assert.deepEqual([rest.found.map((found) => found.pointer), rest.more], [["/2", "/4"], false]);
    assert.deepEqual(search(data, "x", 0, 0), { found: [], more: true });
  });

  it("makes short snippets that hold the match", () => {
    const long = `${"a".repeat(500)} needle ${"b".repeat(500)}`;
    const snippet = search(`"${long}"`, "NEEDLE", 0, 1).found[0]?.snippet ?? "";
    assert.ok([...snippet].length <= MAX_SNIPPET_CHARS, snippet);
    assert.ok(snippet.includes("needle") && snippet.startsWith("…") && snippet.endsWith("…"), snippet);
    // Ⱥ is 2 bytes and one UTF-16 unit, ⱥ 3 bytes; the snippet still holds the match.
    const folded = `${"Ⱥ".repeat(500)} ÉTÉ ${"b".repeat(500)}`;
    assert.ok(search(`"${folded}"`, "été", 0, 1).found[0]?.snippet.includes("ÉTÉ"));
    // Snippets count characters: 😀 is one, and is never cut in half.
    const emoji = `${"😀".repeat(300)}x${"😀".repeat(300)}`;
    const around = search(`"${emoji}"`, "x", 0, 1).found[0]?.snippet ?? "";
    assert.equal([...around].length, MAX_SNIPPET_CHARS);
    assert.equal(around, `…${"😀".repeat(52)}x${"😀".repeat(105)}…`);
  });

  it("screens raw text without ever ruling out a match", () => {
    const q = query("invoice 42");
    assert.ok(q.mightMatch('{"s":"Invoice 42"}'));
    assert.ok(!q.mightMatch('{"s":"Invoice 41"}'));
    assert.ok(q.mightMatch(String.raw`{"s":"\u0049nvoice 42"}`), "escapes are never ruled out");
    assert.ok(query("a/b").mightMatch(String.raw`"a\/b"`), "`\\/` is a slash");
    assert.ok(query("a\bb").mightMatch(String.raw`"a\bb"`), "`\\b` is a backspace");
  });

  it("bounds queries", () => {
    assert.deepEqual(Query.parse("  "), { error: "noWords", count: 0 });
    const words = Array(MAX_QUERY_WORDS).fill("w");
    assert.ok(Query.parse(words.join(" ")) instanceof Query);
    assert.deepEqual(Query.parse(`${words.join(" ")} x`), { error: "tooManyWords", count: 33 });
    assert.ok(Query.parse("é".repeat(MAX_QUERY_BYTES / 2)) instanceof Query, "bytes, not UTF-16 units, are counted");
    assert.deepEqual(Query.parse("é".repeat(MAX_QUERY_BYTES / 2 + 1)), { error: "tooLong", count: 514 });
    assert.deepEqual(Query.parse("x".repeat(MAX_QUERY_BYTES + 1)), { error: "tooLong", count: 513 });
    assert.deepEqual(Query.parse("a ".repeat(50_000)), { error: "tooLong", count: 100_000 });
  });

  it("costs one pass for hostile queries and deep data", () => {
    const words = Array.from({ length: MAX_QUERY_WORDS - 2 }, (_, n) => "a".repeat(n + 1)).concat("b");
    const q = query(words.join(" "));
    assert.equal(q.words.length, 3, `words inside others (but the first) are implied by them: ${q.words}`);
    const run = "a".repeat(1_000_000);
    assert.ok(!q.matches(run));
    assert.ok(q.matches(`${run}b`));
    // 32 words: every bit of the mask is used.
    const letter = (n: number) => String.fromCharCode(0x61 + n);
    const all = query(Array.from({ length: 32 }, (_, n) => `w${letter(n % 26)}${letter(Math.floor(n / 26))}`).join(" "));
    assert.equal(all.words.length, 32);
    assert.ok(all.matches(all.words.join(" ")));
    assert.ok(!all.matches(all.words.slice(0, 31).join(" ")));
    // Non-ASCII words over a long non-ASCII string: folded as read, all words in one pass.
    assert.ok(query(Array(MAX_QUERY_WORDS).fill("é").join(" ")).matches("É".repeat(1_000_000)));
    // A match a million levels down: found, with its pointer cut to the budget.
    const depth = 1_000_000;
    const deep = `${"[".repeat(depth)}"an Invoice"${"]".repeat(depth)}`;
    const { found, more } = search(deep, "invoice", 0, 10);
    assert.equal(found.length, 1);
    assert.ok(!more);
    assert.deepEqual(found[0], { pointer: "/0".repeat(MAX_SEARCH_POINTER_BYTES / 2), pointerCut: true, snippet: "an Invoice" });
  });

  it("tests strings together", () => {
    const q = query("ana invoice");
    const together = q.together();
    together.add("Email from Ana");
    assert.ok(!together.all());
    together.addStrings(`${'{"a":['.repeat(300)}"INVOICE"${"]}".repeat(300)}`);
    assert.ok(together.all());
    assert.ok(!q.matches("Email from Ana"));
    // A million levels of customMetadata are one pass too.
    const deep = q.together();
    deep.add("ana");
    deep.addStrings(`${'{"a":['.repeat(1_000_000)}"an invoice"${"]}".repeat(1_000_000)}`);
    assert.ok(deep.all());
  });

  it("searches a string with a lone escaped surrogate as written, as the host can't decode it", () => {
    // The host's decoder refuses the string, so it searches the raw text: `\n` is a backslash and an n there.
    assert.deepEqual(pointers(String.raw`["x\ud800\ny","x\u00e9\ny"]`, "\\n"), ["/0"]);
    assert.equal(search(String.raw`["x\ud800 y"]`, "y").found[0]?.snippet, String.raw`x\ud800 y`);
  });
});
