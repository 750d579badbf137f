// Runs the compiled test files (dist/test/*.test.js), at least two at a time. Node's own default is one fewer
// than the cores, so one at a time on CI's two; most files spend their time waiting on processes they start (the
// host, npm, tsc, Python), and two at a time halves the run there. Each file is its own process and works in its
// own temporary folders, so the files don't share state.
import { readdirSync } from "node:fs";
import { availableParallelism } from "node:os";
import { run } from "node:test";
import { tap } from "node:test/reporters";
import { fileURLToPath } from "node:url";

const dir = fileURLToPath(new URL("../dist/test/", import.meta.url));
const files = readdirSync(dir)
  .filter((name) => name.endsWith(".test.js"))
  .sort()
  .map((name) => dir + name);
const stream = run({ files, concurrency: Math.max(2, availableParallelism() - 1) });
stream.on("test:fail", () => {
  process.exitCode = 1;
});
stream.compose(tap).pipe(process.stdout);
