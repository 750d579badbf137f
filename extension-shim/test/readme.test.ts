/** The README's browserx integration is the sample `npm test` type-checks (examples/), word for word. */

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { it } from "node:test";

const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
const sample = readFileSync(new URL("../../examples/browserx-integration.ts", import.meta.url), "utf8");

it("shows examples/browserx-integration.ts as it is", () => {
  assert.ok(readme.includes("```ts\n" + sample + "```\n"), "README.md's browserx sample differs from examples/browserx-integration.ts");
});
