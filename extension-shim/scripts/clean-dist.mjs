// Empties dist/src before a build, so that a module whose source was renamed or removed can't linger there and
// be packed: the package ships dist/src as it is (package.json "files").
import { rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

rmSync(join(dirname(fileURLToPath(import.meta.url)), "..", "dist", "src"), { recursive: true, force: true });
