// This package's own scripts build the host into the checkout's target/ and run what they built there, whatever
// CARGO_TARGET_DIR names elsewhere (a shared build folder many Rust developers export), as install.sh and
// scripts/setup.sh do (tests/install.rs): `npm test` drives target/debug/llm-cache-host and the benches
// target/release/llm-cache-host, which would otherwise be an older build, or none. cargo here is a stand-in that
// reports its arguments and fails, which stops each script before it runs anything else.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, it } from "node:test";
import { E2E_DIR, REPO_DIR } from "../lib/env.mjs";

describe("the package's scripts", () => {
  for (const script of ["pretest", "bench", "bench:three"]) {
    it(`npm run ${script} builds into the checkout's target/, whatever CARGO_TARGET_DIR says`, (t) => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "llm-cache-npm-scripts-"));
      t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
      const report = path.join(dir, "cargo-was-given");
      fs.mkdirSync(path.join(dir, "bin"));
      fs.writeFileSync(path.join(dir, "bin", "cargo"), `#!/bin/sh\nprintf '%s\\n' "$@" >"${report}"\nexit 3\n`, { mode: 0o755 });
      const run = spawnSync("npm", ["run", "--silent", script], {
        cwd: E2E_DIR,
        encoding: "utf8",
        env: { ...process.env, PATH: `${path.join(dir, "bin")}:${process.env.PATH}`, CARGO_TARGET_DIR: path.join(dir, "shared-target") },
      });
      assert.notEqual(run.status, 0, `the stand-in's failure stops the script: ${run.stdout}${run.stderr}`);
      const args = fs.readFileSync(report, "utf8").trimEnd().split("\n");
      const at = args.indexOf("--target-dir");
      assert.ok(at >= 0, `cargo was given ${JSON.stringify(args)}`);
      assert.equal(path.resolve(E2E_DIR, args[at + 1]), path.join(REPO_DIR, "target"));
    });
  }
});
