// Puts the pages' HTML and CSS (src/pages/) beside their compiled modules in dist/src/pages/, which tsc doesn't
// do. dist/src is then the whole shim an extension ships: copy it into the extension once, and
// <that folder>/pages/install.html and viewer.html are extension pages that load their modules from beside them.
import { cpSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const from = join(root, "src", "pages");
const to = join(root, "dist", "src", "pages");

for (const name of readdirSync(from)) {
  if (name.endsWith(".html") || name.endsWith(".css")) cpSync(join(from, name), join(to, name));
}
