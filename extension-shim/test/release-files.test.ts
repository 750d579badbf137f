/**
 * The install page names the files the release writes. scripts/release.sh and the cross builds
 * (scripts/cross/*.sh) name every file with release_file, in scripts/release-files.sh; here that function is run
 * by bash for every download key and compared with the page's own names (src/pages/release-files.ts), and the
 * install steps for each OS and processor, given no download addresses, are checked to name exactly those files.
 */

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { DEMO_EXTENSION_ID } from "../src/demo-extension.js";
import { DOWNLOAD_KEYS, type Downloads } from "../src/pages/config.js";
import { HOST_RELEASE, installWays, type Machine } from "../src/pages/install-steps.js";
import { hostCommand } from "../src/install-command.js";
import { releaseFile } from "../src/pages/release-files.js";

const REPO = fileURLToPath(new URL("../../../", import.meta.url));
const SCRIPT = "scripts/release-files.sh";

/** The name scripts/release-files.sh's release_file gives, as release.sh would get it. */
function scriptName(key: string, command: string, version: string): string {
  return execFileSync("bash", ["-c", `. ${SCRIPT} && release_file "$@"`, "release_file", key, command, version], { cwd: REPO, encoding: "utf8" }).trimEnd();
}

/** The machine whose install steps offer each download. */
const MACHINES: Record<keyof Downloads, Machine> = {
  debAmd64: { os: "linux", arch: "x86-64", extensionId: DEMO_EXTENSION_ID },
  tarballX86_64: { os: "linux", arch: "x86-64", extensionId: DEMO_EXTENSION_ID },
  debArm64: { os: "linux", arch: "arm64", extensionId: DEMO_EXTENSION_ID },
  tarballAarch64: { os: "linux", arch: "aarch64", extensionId: DEMO_EXTENSION_ID },
  macosTarball: { os: "mac", arch: "arm64", extensionId: DEMO_EXTENSION_ID },
  windowsZip: { os: "win", arch: "x86-64", extensionId: DEMO_EXTENSION_ID },
};

describe("release file names", () => {
  it("are the release script's, for every download key, command and version", () => {
    for (const key of DOWNLOAD_KEYS) {
      for (const command of [hostCommand(), "com.example.mail-cache"]) {
        for (const version of [HOST_RELEASE, "2.10.0-rc.1"]) {
          assert.equal(releaseFile(key, version, command), scriptName(key, command, version), `${key} ${command} ${version}`);
        }
      }
    }
  });

  it("cover every file the release script names, and no other", () => {
    const script = readFileSync(new URL(`../../../${SCRIPT}`, import.meta.url), "utf8");
    const named = [...script.matchAll(/^ {4}(\w+)\) echo /gm)].map((match) => match[1]);
    assert.deepEqual(named.sort(), [...DOWNLOAD_KEYS].sort());
    assert.throws(() => scriptName("debAmd65", hostCommand(), HOST_RELEASE), /no release file debAmd65/);
  });

  it("are what the install steps give for each OS and processor, without download addresses", () => {
    for (const key of DOWNLOAD_KEYS) {
      const shown = installWays(MACHINES[key]).flatMap((way) => way.steps.flatMap((step) => [...step.words, step.command ?? ""]));
      const file = releaseFile(key, HOST_RELEASE);
      assert.ok(shown.includes(`Ask this extension's developer for `) && shown.includes(file), `${key}: ${file} is not in ${JSON.stringify(shown)}`);
    }
  });
});
