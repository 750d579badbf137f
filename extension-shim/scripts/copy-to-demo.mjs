// Copies the compiled shim into demo/lib/, where the demo extension's service worker imports it from.
// A browser loads an unpacked extension's files from its own directory only, so the demo can't reach ../dist.
import { cpSync, rmSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const from = join(root, "dist", "src");
const to = join(root, "demo", "lib");

rmSync(to, { recursive: true, force: true });
// The modules and the pages' HTML and CSS (lib/pages/install.html, viewer.html): folders are walked,
// declaration files and maps left behind.
const shipped = [".js", ".html", ".css"];
cpSync(from, to, { recursive: true, filter: (path) => statSync(path).isDirectory() || shipped.some((ending) => path.endsWith(ending)) });
