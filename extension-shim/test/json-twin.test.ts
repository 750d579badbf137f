/**
 * The TypeScript twin of the host's JSON walks (src/backends/indexeddb/json/): every case of the Rust unit tests
 * in src/json/{scan,pointer,slice,shape,strings}.rs and of `rules::compact_json`, plus what differs in JS (UTF-16
 * indexes, UTF-8 byte counts) and each walk at a depth of a million.
 */

import assert from "node:assert/strict";
import { Rng } from "./helpers/rng.js";
import { describe, it } from "node:test";
import {
  arrayIndex,
  charCount,
  charStarts,
  checkPointer,
  compactJson,
  elements,
  find,
  MALFORMED,
  MAX_SHAPE_CHARS,
  members,
  nextOffset,
  shape,
  slice,
  Strings,
  utf8Length,
  valueEnd,
  type Window,
} from "../src/backends/indexeddb/json/index.js";

const DEEP = 1_000_000;

describe("scan", () => {
  it("counts characters as char_starts visits them", () => {
    const cases = ["", "plain", "é😀 naïve", String.raw`a\"b\\c\n`, String.raw`\u00e9\ud83d\ude00\ud83d x\udc00`, "\\", String.raw`end\u12`, "😀\\t😀"];
    for (const text of cases) assert.equal(charCount(text), [...charStarts(text)].length, text);
  });

  it("finds where values end", () => {
    const text = String.raw`{"a":[1,{"b":"]}\"x"}],"c":-1.5e3} tail`;
    assert.equal(valueEnd(text, 0), text.length - 5);
    assert.equal(valueEnd("true,", 0), 4);
    assert.equal(valueEnd("12", 0), 2);
    assert.equal(valueEnd(String.raw`"a\"b"`, 0), 6);
    assert.equal(valueEnd("[1,2", 0), undefined);
    assert.equal(valueEnd('"open', 0), undefined);
    // Escaped quotes after runs of backslashes: odd runs escape, even runs don't.
    assert.equal(valueEnd(String.raw`"\\"x`, 0), 4);
    assert.equal(valueEnd(String.raw`"\\\"x"`, 0), 7);
    assert.equal(valueEnd(String.raw`"\\\\"`, 0), 6);
    assert.equal(valueEnd("", 0), undefined);
  });

  it("lists elements and members in order, and stops at a fault", () => {
    const texts = (text: string) => {
      const out: string[] = [];
      if (!elements(text, (a, b) => void out.push(text.slice(a, b)))) out.push("<bad>");
      return out;
    };
    assert.deepEqual(texts(`[1, "two" ,{"x":[3]}, [], null]`), ["1", '"two"', '{"x":[3]}', "[]", "null"]);
    assert.deepEqual(texts("[]"), []);
    assert.deepEqual(texts("[1 2]"), ["<bad>"]);
    assert.deepEqual(texts("{}"), ["<bad>"]);
    // As in the host, a trailing comma reads as an empty last element; valid JSON never has one.
    assert.deepEqual(texts("[1,]"), ["1", ""]);

    const object = String.raw`{"b":1, "a" : {"c":"}"},"\ud800":2}`;
    const found: [string, string][] = [];
    assert.ok(members(object, (n0, n1, v0, v1) => void found.push([object.slice(n0, n1), object.slice(v0, v1)])));
    assert.deepEqual(found, [['"b"', "1"], ['"a"', '{"c":"}"}'], [String.raw`"\ud800"`, "2"]]);
    assert.ok(members("{}", () => assert.fail("no members")));
    assert.equal(members('{"a" 1}', () => assert.fail("no member before the fault")), false);
    // A visit that answers false stops the walk, which is then not a fault.
    const seen: number[] = [];
    assert.ok(elements("[1,2,3]", (a) => (seen.push(a), seen.length < 2)));
    assert.deepEqual(seen, [1, 3]);
  });

  it("finds the characters of raw string contents, in code units", () => {
    // a, é, 😀 (a surrogate pair), \n, \u00e9, an escaped pair, a lone escaped surrogate. The host's byte offsets
    // are [0, 1, 3, 7, 9, 15, 27]; in UTF-16 units they are these.
    const contents = String.raw`aé😀\n\u00e9\ud83d\ude00\ud800`;
    assert.deepEqual([...charStarts(contents)], [0, 1, 2, 4, 6, 12, 24]);
    assert.equal(charCount(contents), 7);
  });

  it("counts UTF-8 bytes of JS text as the host counts them", () => {
    assert.equal(utf8Length("aé😀\u20ac"), 1 + 2 + 4 + 3);
    assert.equal(utf8Length("x\ud800y"), 5, "a lone surrogate counts as the 3 bytes of U+FFFD");
    assert.equal(utf8Length("ab😀cd", 1, 4), 5);
    assert.equal(utf8Length("😀", 0, 1), 3, "a pair cut by the range is a lone surrogate");
  });

  it("counts long texts, and their ranges, as Node's UTF-8 encoder does, whichever way it counts them", () => {
    // Long texts take the native search for ASCII; these cover all-ASCII ones and every kind of character in any
    // place, ranges starting or ending inside a pair, and lengths around where counting by hand stops.
    const rng = new Rng(2026_11_25);
    const pieces = ["a", " ", "~", "\u007f", "\u0080", "é", "\u07ff", "\u0800", "€", "\uffff", "😀", "\ud800", "\udfff"];
    for (let n = 0; n < 300; n++) {
      const length = rng.pick([255, 256, 257, 1000, 70_000]);
      // ASCII with none, one or a few other characters at random places, or other characters throughout.
      let text = "";
      const dense = rng.chance(0.3);
      while (text.length < length) text += dense ? rng.pick(pieces) : "abc xyz";
      for (let odd = dense ? 0 : rng.below(4); odd > 0; odd--) {
        const at = rng.below(text.length);
        text = text.slice(0, at) + rng.pick(pieces) + text.slice(at);
      }
      const from = rng.chance(0.5) ? 0 : rng.below(text.length);
      const to = rng.chance(0.5) ? text.length : from + rng.below(text.length - from + 1);
      // Buffer counts a lone surrogate (also one a range cuts from its pair) as the 3 bytes of U+FFFD.
      assert.equal(utf8Length(text, from, to), Buffer.byteLength(text.slice(from, to)), `text ${n}, ${from}..${to}`);
      assert.equal(charCount(text, from, to), [...text.slice(from, to)].length, `text ${n}, ${from}..${to}`);
    }
    const escaped = `${"a".repeat(300)}\\n${"b".repeat(300)}`;
    assert.equal(charCount(escaped), 601, "an escape is one character, also in a long text");
  });

  it("walks a million levels in one pass", () => {
    const nested = `${"[".repeat(DEEP)}${"]".repeat(DEEP)}`;
    assert.equal(valueEnd(nested, 0), nested.length);
    const wrapped = `[1,${nested},2]`;
    const found: string[] = [];
    assert.ok(elements(wrapped, (a, b) => void found.push(b - a === nested.length ? "deep" : wrapped.slice(a, b))));
    assert.deepEqual(found, ["1", "deep", "2"]);
    const objects = `{"x":${'{"a":'.repeat(DEEP)}1${"}".repeat(DEEP)}}`;
    let value = 0;
    assert.ok(members(objects, (_n0, _n1, v0, v1) => void (value = v1 - v0)));
    assert.equal(value, objects.length - 6);
  });
});

describe("compact", () => {
  it("removes white space outside strings only", () => {
    assert.equal(compactJson('{"a":[1,2]}'), '{"a":[1,2]}');
    assert.equal(compactJson('{ "a b" : [ 1 ,\n\t2 ] }'), '{"a b":[1,2]}');
    assert.equal(compactJson(String.raw`[ "x \" y", "\\", " " ]`), String.raw`["x \" y","\\"," "]`);
    assert.equal(compactJson(' "é 😀" '), '"é 😀"');
    assert.equal(compactJson(String.raw`{"a b":"c d \" e \\","f":[1,2]}`), String.raw`{"a b":"c d \" e \\","f":[1,2]}`);
    assert.equal(compactJson('[1,\n\n   "x\\\\" , "y "]'), String.raw`[1,"x\\","y "]`);
    assert.equal(compactJson('"unterminated \\'), '"unterminated \\');
    // Numbers and escapes stay as written; only the four JSON white space characters are removed.
    assert.equal(compactJson('[ 1.50 , 1e400 , -0 , "\\u00e9" ,\u00a0]'), '[1.50,1e400,-0,"\\u00e9",\u00a0]');
  });

  it("compacts a million levels", () => {
    const spaced = `${"[ ".repeat(DEEP)}${" ]".repeat(DEEP)}`;
    assert.equal(compactJson(spaced), `${"[".repeat(DEEP)}${"]".repeat(DEEP)}`);
  });
});

describe("pointer", () => {
  const at = (text: string, pointer: string) => {
    assert.equal(checkPointer(pointer), undefined, pointer);
    const found = find(text, pointer);
    assert.notEqual(found, MALFORMED, pointer);
    return found === null || found === MALFORMED ? null : text.slice(found[0], found[1]);
  };

  it("finds what the pointer names", () => {
    const doc = '{"emails":[{"subject":"Q3","to":["a","b"]},{"subject":"x"}],"a/b":1,"m~n":2,"":3,"n":null}';
    assert.equal(at(doc, ""), doc);
    assert.equal(at(doc, "/emails/0/subject"), '"Q3"');
    assert.equal(at(doc, "/emails/0/to/1"), '"b"');
    assert.equal(at(doc, "/emails/1"), '{"subject":"x"}');
    assert.equal(at(doc, "/a~1b"), "1");
    assert.equal(at(doc, "/m~0n"), "2");
    assert.equal(at(doc, "/"), "3");
    assert.equal(at(doc, "/n"), "null");
    for (const missing of ["/emails/2", "/emails/01", "/emails/-", "/emails/0/subject/x", "/nope", "/n/0", "/emails/x"]) {
      assert.equal(at(doc, missing), null, missing);
    }
    assert.equal(at(" [ 1 , [ 2 ] ] ", "/1/0"), "2");
    assert.equal(at("[[],{}]", "/1"), "{}");
  });

  it("returns the exact stored text", () => {
    const doc = String.raw`{"b":1.50,"a":{"x/y":[10,{"z~":"\u00e9\ud800"}],"":0},"n":123456789012345678901234567890}`;
    assert.equal(at(doc, "/b"), "1.50");
    assert.equal(at(doc, "/n"), "123456789012345678901234567890");
    assert.equal(at(doc, "/a/x~1y/0"), "10");
    assert.equal(at(doc, "/a/x~1y/1/z~0"), String.raw`"\u00e9\ud800"`);
    assert.equal(at(doc, "/a/"), "0");
    assert.equal(at(doc, "/a/x~1y/1"), String.raw`{"z~":"\u00e9\ud800"}`);
    for (const missing of ["/c", "/a/x~1y/2", "/a/x~1y/01", "/a/x~1y/-", "/b/0", "/a/x~1y/+1"]) assert.equal(at(doc, missing), null, missing);
  });

  it("takes the last of duplicate names", () => {
    assert.equal(at('{"a":1,"a":2}', "/a"), "2");
    assert.equal(at('{"a":{"b":1},"a":{"b":2}}', "/a/b"), "2");
    assert.equal(at('{"a":{"b":1},"a":{"c":2}}', "/a/b"), null);
    assert.equal(at('{"a":{"b":1,"b":3}}', "/a/b"), "3");
  });

  it("reads a lone surrogate name as intact data that no pointer names", () => {
    assert.equal(at(String.raw`{"\ud800":1,"x":2}`, "/x"), "2");
    assert.equal(at(String.raw`{"\u0078":1}`, "/x"), "1");
    assert.equal(at(String.raw`{"\ud800":1}`, "/\ud800"), null, "not even by a JS string holding the same surrogate");
    assert.equal(at(String.raw`{"\ud83d\ude00":1,"é":2}`, "/😀"), "1");
    assert.equal(at('{"😀":1,"é":2}', "/\u00e9"), "2");
  });

  it("reports malformed text and invalid pointers", () => {
    assert.equal(find("[1,", "/5"), MALFORMED);
    assert.equal(find('{"a" 1}', "/a"), MALFORMED);
    assert.equal(checkPointer("a"), "noLeadingSlash");
    assert.equal(checkPointer("/~"), "badEscape");
    assert.equal(checkPointer("/a~2"), "badEscape");
    assert.equal(checkPointer("/~01~1/x"), undefined);
    assert.equal(at('{"~1":5,"~":6}', "/~01"), "5");
  });

  it("costs what the walk reaches, however long the pointer", () => {
    const many = "/0".repeat(5_000_000);
    assert.equal(at("[[1]]", many), null);
    assert.equal(at("[[1]]", many.slice(0, 4)), "1");
    const wide = `[${Array(200_000).fill("0").join(",")}]`;
    assert.equal(at(wide, `/${"1".repeat(1_000_000)}`), null);
    const object = `{${Array.from({ length: 100_000 }, (_, n) => `"k${n}":0`).join(",")}}`;
    assert.equal(at(object, `/${"k".repeat(1_000_000)}`), null);
    assert.equal(at(object, "/k99999"), "0");
    assert.equal(arrayIndex("12345678901234567890"), 12345678901234567890);
    assert.equal(arrayIndex("18446744073709551615"), 18446744073709551615);
    assert.equal(arrayIndex("18446744073709551616"), undefined, "past the host's u64");
    assert.equal(arrayIndex("123456789012345678901"), undefined);
    assert.equal(arrayIndex("0"), 0);
    assert.equal(arrayIndex("00"), undefined);
    assert.equal(arrayIndex(""), undefined);
  });

  it("follows a path a million levels deep in one pass", () => {
    const arrays = `${"[".repeat(DEEP)}${"]".repeat(DEEP)}`;
    assert.equal(at(arrays, "/0".repeat(DEEP - 1)), "[]");
    assert.equal(at(arrays, "/0".repeat(DEEP)), null);
    const objects = `${'{"a":'.repeat(DEEP)}1${"}".repeat(DEEP)}`;
    assert.equal(at(objects, "/a".repeat(DEEP)), "1");
    // Off the path, a deep value is skipped by its text.
    assert.equal(at(`[${arrays},7]`, "/1"), "7");
  });
});

describe("slice", () => {
  const capped = (text: string, window: Window) => {
    const sliced = slice(text, window);
    assert.ok(typeof sliced === "object" && "text" in sliced, `${text}: ${JSON.stringify(sliced)}`);
    return [sliced.text, sliced.count, sliced.total, nextOffset(sliced)];
  };
  const s = (text: string, offset: number, limit?: number) => capped(text, { offset, limit });

  it("slices arrays, objects and strings", () => {
    assert.deepEqual(s("[1,2,3,4,5]", 1, 2), ["[2,3]", 2, 5, 3]);
    assert.deepEqual(s("[1,2,3,4,5]", 3, 10), ["[4,5]", 2, 5, null]);
    assert.deepEqual(s("[1,2,3]", 7, 2), ["[]", 0, 3, null]);
    assert.deepEqual(s("[]", 0), ["[]", 0, 0, null]);
    assert.deepEqual(s('{"b":1,"a":[2],"c":"x"}', 1, 1), ['{"a":[2]}', 1, 3, 2]);
    assert.deepEqual(s(String.raw`"héllo😀 \"q\""`, 1, 5), ['"éllo😀"', 5, 10, 6]);
    assert.deepEqual(s(String.raw`"\ud83d\ude00ab"`, 0, 1), [String.raw`"\ud83d\ude00"`, 1, 3, 1]);
    assert.deepEqual(s('"abc"', 5, 1), ['""', 0, 3, null]);
    assert.deepEqual(s('"abc"', 0), ['"abc"', 3, 3, null]);
    assert.deepEqual(slice("42", { offset: 0 }), { notSliceable: "a number" });
    assert.deepEqual(slice("true", { offset: 0 }), { notSliceable: "a boolean" });
    assert.deepEqual(slice("null", { offset: 0 }), { notSliceable: "null" });
    assert.equal(slice("[1,", { offset: 0 }), MALFORMED);
  });

  it("copies only the slice of a big array", () => {
    const big = `[${'"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",'.repeat(100_000)}1]`;
    const sliced = slice(big, { offset: 99_990, limit: 20 });
    assert.ok(typeof sliced === "object" && "text" in sliced);
    assert.deepEqual([sliced.count, sliced.total, nextOffset(sliced)], [11, 100_001, null]);
    assert.ok(sliced.text.length < 500);
  });

  it("ends the slice before what does not fit the byte budget", () => {
    const cap = (offset: number, limit: number | undefined, maxBytes: number): Window => ({ offset, limit, maxBytes });
    assert.deepEqual(capped("[10,11,12]", cap(0, undefined, 7)), ["[10,11]", 2, 3, 2]);
    assert.deepEqual(capped("[10,11,12]", cap(0, undefined, 6)), ["[10]", 1, 3, 1]);
    assert.deepEqual(capped("[10,11,12]", cap(1, 1, 100)), ["[11]", 1, 3, 2]);
    assert.deepEqual(capped('["a much longer element",1]', cap(0, undefined, 10)), ["[]", 0, 2, 0]);
    assert.deepEqual(capped('{"a":1,"b":2}', cap(0, undefined, 9)), ['{"a":1}', 1, 2, 1]);
    assert.deepEqual(capped('"abcdef"', cap(1, undefined, 5)), ['"bcd"', 3, 6, 4]);
    assert.deepEqual(capped('"héllo"', cap(0, undefined, 4)), ['"h"', 1, 5, 1]);
    assert.deepEqual(capped(String.raw`"\ud83d\ude00ab"`, cap(0, undefined, 13)), ['""', 0, 3, 0]);
    assert.deepEqual(capped(String.raw`"\ud83d\ude00ab"`, cap(0, undefined, 14)), [String.raw`"\ud83d\ude00"`, 1, 3, 1]);
    assert.deepEqual(capped('"abc"', cap(0, 2, 100)), ['"ab"', 2, 3, 2]);
    assert.deepEqual(capped('"abc"', cap(0, undefined, 5)), ['"abc"', 3, 3, null]);
  });

  it("counts the budget in UTF-8 bytes, not UTF-16 units", () => {
    // "😀" is 2 units but 4 bytes; "é" 1 unit, 2 bytes.
    assert.deepEqual(capped('"😀😀"', { offset: 0, maxBytes: 9 }), ['"😀"', 1, 2, 1]);
    assert.deepEqual(capped('"😀😀"', { offset: 0, maxBytes: 10 }), ['"😀😀"', 2, 2, null]);
    assert.deepEqual(capped('["é","é"]', { offset: 0, maxBytes: 10 }), ['["é"]', 1, 2, 1]);
    assert.deepEqual(capped('["é","é"]', { offset: 0, maxBytes: 11 }), ['["é","é"]', 2, 2, null]);
  });

  it("slices around values a million levels deep", () => {
    const deep = `${"[".repeat(DEEP)}${"]".repeat(DEEP)}`;
    assert.deepEqual(s(`[1,${deep},2]`, 2, 1), ["[2]", 1, 3, null]);
    const [text, count] = s(`[${deep}]`, 0, 1);
    assert.equal(count, 1);
    assert.equal(text, `[${deep}]`);
  });
});

describe("shape", () => {
  it("says how data is built", () => {
    const emails = '[{"from":"a","subject":"b","summary":"c"},{"from":"d","subject":"e","summary":"f"}]';
    assert.equal(shape(emails), "array[2] of {from,subject,summary}");
    assert.equal(shape('{"emails":[],"total":2}'), "object{emails,total}");
    assert.equal(shape('"héllo"'), "string(5)");
    assert.equal(shape("[1,2,3]"), "array[3] of number");
    assert.equal(shape('[1,"a"]'), "array[2] of mixed");
    assert.equal(shape("[]"), "array[0]");
    assert.equal(shape("{}"), "object{}");
    assert.deepEqual([shape("42"), shape("true"), shape("null")], ["number", "boolean", "null"]);
    assert.equal(shape("[1,"), "?");
    assert.equal(shape(""), "?");
    // Characters are scalar values: an escaped pair and an emoji are one each; names keep their escapes.
    assert.equal(shape(String.raw`"\ud83d\ude00😀\n"`), "string(3)");
    assert.equal(shape(String.raw`{"\u00e9":1,"😀":2}`), String.raw`object{\u00e9,😀}`);
    // As in the host, an empty first name doesn't count as written, so the next has no comma before it.
    assert.equal(shape('{"":1,"a":2}'), "object{a}");
  });

  it("cuts long name lists to fit", () => {
    const wide = `{${Array.from({ length: 100 }, (_, n) => `"field_number_${n}":${n}`).join(",")}}`;
    const object = shape(wide);
    assert.ok([...object].length <= MAX_SHAPE_CHARS, object);
    assert.ok(object.startsWith("object{field_number_0,field_number_1,") && object.endsWith(",…}"), object);
    const array = shape(`[${wide}]`);
    assert.ok([...array].length <= MAX_SHAPE_CHARS && array.endsWith(",…}"), array);
    // Names are counted in characters: 😀 is one, as in the host, so as many fit as of a one-unit letter.
    const emoji = shape(`{${Array.from({ length: 100 }, (_, n) => `"😀${n}":0`).join(",")}}`);
    const letters = shape(`{${Array.from({ length: 100 }, (_, n) => `"x${n}":0`).join(",")}}`);
    assert.equal([...emoji].length, [...letters].length);
  });

  it("shapes a million levels", () => {
    assert.equal(shape(`[${"[".repeat(DEEP)}${"]".repeat(DEEP)},1]`), "array[2] of mixed");
    assert.equal(shape(`{"a":${'{"a":'.repeat(DEEP)}1${"}".repeat(DEEP)}}`), "object{a}");
  });
});

describe("strings", () => {
  /** Every string value with its pointer (and `…` after a cut one). */
  const walk = (text: string, budget: number) => {
    const strings = new Strings(text, budget);
    const out: [string, string][] = [];
    for (;;) {
      const next = strings.nextString();
      assert.notEqual(next, MALFORMED, text);
      if (next === null || next === MALFORMED) return out;
      const { pointer, cut } = strings.pointer();
      out.push([text.slice(next[0], next[1]), `${pointer}${cut ? "…" : ""}`]);
    }
  };

  it("visits every string value with its pointer", () => {
    const doc = ' { "a" : [ "x" , 1 , { "b" : "y" , "c" : [ ] , "d" : { } } , "z" ] , "e/~" : "w" , "n" : null } ';
    assert.deepEqual(walk(doc, 100), [["x", "/a/0"], ["y", "/a/2/b"], ["z", "/a/3"], ["w", "/e~1~0"]]);
    assert.deepEqual(walk('"top"', 100), [["top", ""]]);
    assert.deepEqual(walk('[[],[[]],"s"]', 100), [["s", "/2"]]);
    assert.deepEqual(walk(String.raw`{"\u0041\/":"v","":"e"}`, 100), [["v", "/A~1"], ["e", "/"]]);
    assert.deepEqual(walk(String.raw`["a\"b","\u00e9"]`, 100), [[String.raw`a\"b`, "/0"], [String.raw`\u00e9`, "/1"]]);
    assert.deepEqual(walk("[1,true,null,{}]", 100), []);
  });

  it("keeps the longest prefix of whole tokens that fits the budget", () => {
    const doc = '{"abc":{"defgh":["x",["y"]],"de":"z"}}';
    assert.deepEqual(walk(doc, 12), [["x", "/abc/defgh/0"], ["y", "/abc/defgh/1…"], ["z", "/abc/de"]]);
    assert.deepEqual(walk(doc, 11), [["x", "/abc/defgh…"], ["y", "/abc/defgh…"], ["z", "/abc/de"]]);
    assert.deepEqual(walk(doc, 7), [["x", "/abc…"], ["y", "/abc…"], ["z", "/abc/de"]]);
    assert.deepEqual(walk(doc, 6), [["x", "/abc…"], ["y", "/abc…"], ["z", "/abc…"]]);
    assert.deepEqual(walk(doc, 0), [["x", "…"], ["y", "…"], ["z", "…"]]);
    const wide = `[${Array(12).fill('"s"').join(",")}]`;
    assert.deepEqual(walk(wide, 2).slice(9).map(([, p]) => p), ["/9", "…", "…"]);
    assert.deepEqual(walk(String.raw`{"o":{"\ud800":"s","t":"u"}}`, 100), [["s", "/o…"], ["u", "/o/t"]]);
    // The budget counts UTF-8 bytes: "é" is 2, "😀" 4.
    assert.deepEqual(walk('{"é":{"😀":"s"}}', 7), [["s", "/é…"]]);
    assert.deepEqual(walk('{"é":{"😀":"s"}}', 8), [["s", "/é/😀"]]);
  });

  it("walks a million levels in one pass", () => {
    const arrays = `${"[".repeat(DEEP)}"deep"${"]".repeat(DEEP)}`;
    let strings = new Strings(arrays, 1024);
    const found = strings.nextString();
    assert.ok(Array.isArray(found));
    assert.equal(arrays.slice(found[0], found[1]), "deep");
    assert.deepEqual(strings.pointer(), { pointer: "/0".repeat(512), cut: true });
    assert.equal(strings.nextString(), null);
    assert.ok(strings.steps <= arrays.length + 1, `${strings.steps} steps for ${arrays.length} units`);

    const objects = `${'{"a":'.repeat(DEEP)}"deep"${"}".repeat(DEEP)}`;
    strings = new Strings(objects, Infinity);
    assert.ok(Array.isArray(strings.nextString()));
    assert.deepEqual(strings.pointer(), { pointer: "/a".repeat(DEEP), cut: false });
    assert.equal(strings.nextString(), null);
    assert.ok(strings.steps <= objects.length + 1);
  });

  it("walks many deep nests in one pass", () => {
    const nest = `${"[".repeat(20_000)}"invoice"${"]".repeat(20_000)}`;
    const doc = `[${Array(125).fill(nest).join(",")}]`;
    const strings = new Strings(doc, 1024);
    let found = 0;
    for (let next = strings.nextString(); Array.isArray(next); next = strings.nextString()) found++;
    assert.equal(found, 125);
    assert.ok(strings.steps <= doc.length + 1, `${strings.steps} steps for ${doc.length} units`);
  });

  it("reports malformed text", () => {
    for (const bad of ["[1,", '{"a" 1}', '{"a":1]', "[1}", '["open', "", "{1:2}", '{"a":}', "[,]", "[1,]"]) {
      const strings = new Strings(bad, 100);
      let next = strings.nextString();
      while (Array.isArray(next)) next = strings.nextString();
      assert.equal(next, MALFORMED, bad);
    }
  });
});
