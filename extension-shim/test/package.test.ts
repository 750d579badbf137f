/**
 * The package as an extension developer gets it: `npm pack` of this folder (as built by `npm test`), checked for
 * what it holds (the compiled shim, its types, the pages' HTML, CSS and modules, README and licences) and what it
 * must not (tests, the demo, examples, TypeScript sources, build scripts); then installed from the tarball into a
 * fresh project with npm offline, where every `exports` entry resolves and type-checks.
 */

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { tempDir } from "./helpers/temp.js";

const SHIM = fileURLToPath(new URL("../..", import.meta.url));
const PACKAGE = JSON.parse(readFileSync(join(SHIM, "package.json"), "utf8")) as {
  name: string;
  version: string;
  dependencies?: object;
  repository?: { type?: string; url?: string; directory?: string };
};

/** The most the packed tarball may weigh: about 200 KB today, so a stray folder (the demo's lib/ alone is 250 KB) shows. */
const MAX_TARBALL_BYTES = 300 * 1024;

/** Files an extension imports or ships, which the tarball must hold. */
const REQUIRED = [
  "package.json",
  "README.md",
  "LICENSE-MIT",
  "LICENSE-APACHE",
  "dist/src/index.js",
  "dist/src/index.d.ts",
  "dist/src/pages/install.html",
  "dist/src/pages/install.js",
  "dist/src/pages/install.d.ts",
  "dist/src/pages/viewer.html",
  "dist/src/pages/viewer.js",
  "dist/src/pages/viewer.d.ts",
  "dist/src/pages/pages.css",
];

interface Packed {
  filename: string;
  size: number;
  files: Array<{ path: string }>;
}

const work = tempDir();
let packed: Packed;

before(() => {
  // --ignore-scripts: prepack would rebuild dist/src while the other test files run from it; npm test built it.
  const out = execFileSync("npm", ["pack", "--json", "--ignore-scripts", "--pack-destination", work.path], { cwd: SHIM, encoding: "utf8" });
  packed = (JSON.parse(out) as Packed[])[0]!;
});
after(() => work.remove());

describe("the packed tarball", () => {
  it("holds the compiled shim, its types, the pages, the README and the licences", () => {
    const paths = new Set(packed.files.map((file) => file.path));
    for (const path of REQUIRED) assert.ok(paths.has(path), `${path} is missing from the tarball`);
  });

  it("holds nothing an extension doesn't import or ship: no tests, demo, examples, sources or scripts", () => {
    const allowed = /^(package\.json|README\.md|LICENSE-MIT|LICENSE-APACHE|dist\/src\/.+\.(js|d\.ts)|dist\/src\/pages\/[^/]+\.(html|css))$/;
    const stray = packed.files.map((file) => file.path).filter((path) => !allowed.test(path));
    assert.deepEqual(stray, []);
  });

  it("has a compiled module for each source file and no other, so nothing stale is shipped", () => {
    const modules = packed.files.map((file) => file.path).filter((path) => path.endsWith(".js"));
    for (const path of modules) {
      const source = join(SHIM, path.replace(/^dist\//, "").replace(/\.js$/, ".ts"));
      assert.ok(existsSync(source), `${path} has no source (${source})`);
    }
  });

  it(`weighs at most ${MAX_TARBALL_BYTES / 1024} KB and has no runtime dependencies`, () => {
    assert.ok(packed.size <= MAX_TARBALL_BYTES, `the tarball is ${packed.size} bytes`);
    assert.equal(PACKAGE.dependencies, undefined);
  });

  it("names its repository, and its README links nothing outside the package but by that repository's address", () => {
    assert.equal(PACKAGE.repository?.type, "git");
    assert.equal(PACKAGE.repository?.directory, "extension-shim");
    const repository = /^git\+(https:\/\/github\.com\/[^/]+\/[^/]+)\.git$/.exec(PACKAGE.repository?.url ?? "")?.[1];
    assert.ok(repository, `package.json's repository.url is ${PACKAGE.repository?.url}`);
    // The README in the package is this folder's; on npm's page a relative link leads nowhere.
    const readme = readFileSync(join(SHIM, "README.md"), "utf8");
    const targets = [...readme.matchAll(/\]\(([^)\s]+)\)/g)].map((match) => match[1] as string);
    assert.ok(targets.length > 0);
    const dead = targets.filter((target) => !target.startsWith("#") && !target.startsWith("https://"));
    assert.deepEqual(dead, [], "README links that lead out of the package by a relative path");
    const elsewhere = targets.filter((target) => target.startsWith("https://github.com/") && !target.startsWith(`${repository}/`));
    assert.deepEqual(elsewhere, [], `README links into a GitHub repository other than ${repository}`);
    // Each link into the repository names a file it has.
    for (const target of targets.filter((target) => target.startsWith(`${repository}/`))) {
      const file = /^[^/]+\/main\/([^#]+)/.exec(target.slice(repository.length + 1))?.[1];
      assert.ok(file && existsSync(join(SHIM, "..", file)), `${target} names no file of this repository`);
    }
  });

  it("carries the repository's licence texts as they are", () => {
    for (const name of ["LICENSE-MIT", "LICENSE-APACHE"]) {
      assert.equal(readFileSync(join(SHIM, name), "utf8"), readFileSync(join(SHIM, "..", name), "utf8"), `${name} differs from the repository root's`);
    }
  });
});

describe("installed from the tarball into a fresh project", () => {
  const project = () => join(work.path, "project");

  before(() => {
    execFileSync("mkdir", ["-p", project()]);
    writeFileSync(join(project(), "package.json"), JSON.stringify({ name: "my-extension", private: true, type: "module" }));
    // Offline: the shim has no runtime dependencies, so the tarball alone must do.
    execFileSync("npm", ["install", "--offline", "--no-audit", "--no-fund", join(work.path, packed.filename)], { cwd: project(), stdio: "pipe" });
  });

  it("resolves every exports entry to a file in the package", () => {
    const script = [
      `"${PACKAGE.name}"`,
      `"${PACKAGE.name}/pages/install.js"`,
      `"${PACKAGE.name}/pages/viewer.js"`,
      `"${PACKAGE.name}/pages/install.html"`,
      `"${PACKAGE.name}/pages/viewer.html"`,
      `"${PACKAGE.name}/pages/pages.css"`,
      `"${PACKAGE.name}/package.json"`,
    ]
      .map((specifier) => `console.log(import.meta.resolve(${specifier}));`)
      .join("\n");
    const resolved = execFileSync("node", ["--input-type=module", "-e", script], { cwd: project(), encoding: "utf8" }).trim().split("\n");
    const base = `node_modules/${PACKAGE.name}/`;
    const relative = resolved.map((url) => fileURLToPath(url).split(base)[1]);
    assert.deepEqual(relative, [
      "dist/src/index.js",
      "dist/src/pages/install.js",
      "dist/src/pages/viewer.js",
      "dist/src/pages/install.html",
      "dist/src/pages/viewer.html",
      "dist/src/pages/pages.css",
      "package.json",
    ]);
    for (const url of resolved) assert.ok(existsSync(fileURLToPath(url)), url);
  });

  it("imports in Node and gives the API's names", () => {
    const script = `const shim = await import("${PACKAGE.name}"); console.log(typeof shim.createLlmCache, typeof shim.NativeCacheClient, typeof shim.assertSessionId);`;
    assert.equal(execFileSync("node", ["--input-type=module", "-e", script], { cwd: project(), encoding: "utf8" }).trim(), "function function function");
  });

  it("type-checks an import of the package and of a page module, with the types its exports name", () => {
    writeFileSync(
      join(project(), "check.ts"),
      [
        `import { createLlmCache, type LlmCache, type ToolOutcome } from "${PACKAGE.name}";`,
        `import { mountViewer } from "${PACKAGE.name}/pages/viewer.js";`,
        `const cache: LlmCache = createLlmCache();`,
        `export const outcome: Promise<ToolOutcome> = cache.tool.run({ action: "stats" }, { sessionId: "conv_mail-1" });`,
        `export const mount: typeof mountViewer = mountViewer;`,
        // A wrong type must be an error, so that the check can fail: the context's sessionId is a string.
        `// @ts-expect-error`,
        `cache.tool.run({}, { sessionId: 1 });`,
      ].join("\n"),
    );
    writeFileSync(
      join(project(), "tsconfig.json"),
      JSON.stringify({
        compilerOptions: { module: "nodenext", moduleResolution: "nodenext", target: "ES2022", lib: ["ES2022", "DOM"], strict: true, noEmit: true, skipLibCheck: true, types: [] },
        files: ["check.ts"],
      }),
    );
    const tsc = join(SHIM, "node_modules", ".bin", "tsc");
    execFileSync(tsc, ["-p", "."], { cwd: project(), stdio: "pipe" });
  });
});
