/** The README's browserx integration and provenance samples are the ones `npm test` type-checks (examples/), word for word. */

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { it } from "node:test";

const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
const sample = readFileSync(new URL("../../examples/browserx-integration.ts", import.meta.url), "utf8");

it("shows examples/browserx-integration.ts as it is", () => {
  assert.ok(readme.includes("```ts\n" + sample + "```\n"), "README.md's browserx sample differs from examples/browserx-integration.ts");
});

it("shows examples/provenance.ts's sample as it is", () => {
  const example = readFileSync(new URL("../../examples/provenance.ts", import.meta.url), "utf8");
  const shown = example.split("// README sample begins\n")[1]?.split("// README sample ends\n")[0];
  assert.ok(shown, "examples/provenance.ts marks its sample");
  assert.ok(readme.includes("```ts\n" + shown + "```\n"), "README.md's provenance sample differs from examples/provenance.ts");
});
