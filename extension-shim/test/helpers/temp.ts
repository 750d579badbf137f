/** Temporary data directories, one per test, removed afterwards. */

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export function tempDir(): { path: string; remove(): void } {
  const path = mkdtempSync(join(tmpdir(), "llm-cache-shim-"));
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}
