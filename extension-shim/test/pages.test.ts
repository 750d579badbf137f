/**
 * The install and viewer pages' pure parts: the install commands per OS with the extension's id filled in, the
 * viewer's address (fragment) round trip and JSON-pointer steps, and that the built pages are in dist and in the
 * demo, where the demo's manifest names the install page. The pages themselves run in Chromium
 * (e2e/test/pages.e2e.test.mjs).
 */

import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { DEMO_EXTENSION_ID } from "../src/demo-extension.js";
import { HOST_RELEASE, installWays } from "../src/pages/install-steps.js";
import { childPointer, parseRoute, pointerTrail, routeHash } from "../src/pages/viewer-route.js";

const id = DEMO_EXTENSION_ID;
const commands = (os: string, browser?: "chromium" | "firefox") =>
  installWays(os, id, browser).flatMap((way) => way.steps.flatMap((step) => (step.command === undefined ? [] : [step.command])));

describe("install steps", () => {
  it("name the host release the shim goes with: Cargo.toml's version", () => {
    const cargo = readFileSync(new URL("../../../Cargo.toml", import.meta.url), "utf8");
    assert.equal(HOST_RELEASE, /^version = "([^"]+)"/m.exec(cargo)?.[1]);
  });

  it("on Linux: the .deb, then install for this id; or the tarball; or the source", () => {
    assert.deepEqual(commands("linux"), [
      `sudo apt install ./llm-cache-host_${HOST_RELEASE}_amd64.deb`,
      `llm-cache-host install --extension-id ${id}`,
      `tar xzf llm-cache-host-${HOST_RELEASE}-x86_64-linux.tar.gz && cd llm-cache-host-${HOST_RELEASE}-x86_64-linux && ./llm-cache-host install --extension-id ${id}`,
      `./install.sh --extension-id ${id}`,
    ]);
  });

  it("on macOS and Windows: the binary's install for this id", () => {
    assert.deepEqual(commands("mac"), [`./llm-cache-host install --extension-id ${id}`, `./install.sh --extension-id ${id}`]);
    assert.deepEqual(commands("win"), [
      `.\\llm-cache-host.exe install --extension-id ${id}`,
      `cargo build --release; if ($?) { .\\target\\release\\llm-cache-host.exe install --extension-id ${id} }`,
    ]);
  });

  it("in Firefox, with the add-on id's own flag", () => {
    assert.deepEqual(installWays("linux", "addon@example.org", "firefox")[1]?.steps[0]?.command,
      `tar xzf llm-cache-host-${HOST_RELEASE}-x86_64-linux.tar.gz && cd llm-cache-host-${HOST_RELEASE}-x86_64-linux && ./llm-cache-host install --firefox-extension-id 'addon@example.org'`);
  });

  it("for a host of the developer's own name: its release files and command, and --host-name in every install", () => {
    const ways = (os: string) =>
      installWays(os, id, "chromium", HOST_RELEASE, "com.example.mail_cache").flatMap((way) =>
        way.steps.flatMap((step) => (step.command === undefined ? [] : [step.command])),
      );
    const args = `--extension-id ${id} --host-name com.example.mail_cache`;
    assert.deepEqual(ways("linux"), [
      `sudo apt install ./mail-cache_${HOST_RELEASE}_amd64.deb`,
      `mail-cache install ${args}`,
      `tar xzf mail-cache-${HOST_RELEASE}-x86_64-linux.tar.gz && cd mail-cache-${HOST_RELEASE}-x86_64-linux && ./mail-cache install ${args}`,
      `./install.sh ${args}`,
    ]);
    assert.deepEqual(ways("mac"), [`./mail-cache install ${args}`, `./install.sh ${args}`]);
    assert.deepEqual(ways("win"), [
      `.\\mail-cache.exe install ${args}`,
      `cargo build --release; if ($?) { .\\target\\release\\llm-cache-host.exe install ${args} }`,
    ]);
    // The default host's commands name no host.
    assert.ok(commands("linux").every((command) => !command.includes("--host-name")));
  });

  it("none where browsers can't start native hosts", () => {
    assert.deepEqual(installWays("cros", id), []);
    assert.deepEqual(installWays("android", id), []);
  });
});

describe("the viewer's address", () => {
  it("round-trips sessions, keys and pointers with any characters in them", () => {
    const routes = [
      {},
      { session: "conv_a" },
      { session: "conv_a", key: "conv_a_b_c" },
      { session: "conv_a&b=c #x", key: "conv_a_b_c", pointer: "/a b/~0/~1/ü&=#" },
    ];
    for (const route of routes) assert.deepEqual(parseRoute(routeHash(route)), route);
    assert.equal(routeHash({}), "#");
  });

  it("ignores a key without a session, and a pointer without a key", () => {
    assert.deepEqual(parseRoute("#key=conv_a_b_c&pointer=/x"), {});
    assert.deepEqual(parseRoute("#session=conv_a&pointer=/x"), { session: "conv_a" });
  });

  it("escapes member names in pointers, and shows them unescaped in the trail", () => {
    assert.equal(childPointer("/emails", 3), "/emails/3");
    assert.equal(childPointer("", "a/b~c"), "/a~1b~0c");
    assert.deepEqual(pointerTrail("/a~1b~0c/3"), [
      { label: "data", pointer: "" },
      { label: "a/b~c", pointer: "/a~1b~0c" },
      { label: "3", pointer: "/a~1b~0c/3" },
    ]);
    assert.deepEqual(pointerTrail(""), [{ label: "data", pointer: "" }]);
  });
});

describe("the built pages", () => {
  const demo = new URL("../../demo/", import.meta.url);
  it("are in dist/src/pages and the demo's lib/pages, each with the module and stylesheet it loads", () => {
    for (const folder of [new URL("../src/pages/", import.meta.url), new URL("lib/pages/", demo)]) {
      for (const page of ["install", "viewer"]) {
        const html = readFileSync(new URL(`${page}.html`, folder), "utf8");
        assert.match(html, new RegExp(`<script type="module" src="${page}.js"></script>`));
        assert.ok(existsSync(new URL(`${page}.js`, folder)), `${folder.pathname}${page}.js is missing`);
        assert.ok(existsSync(new URL("pages.css", folder)), `${folder.pathname}pages.css is missing`);
      }
    }
  });

  it("the demo's manifests open the install page as the options page", () => {
    for (const name of ["manifest.json", "manifest.firefox.json"]) {
      const manifest = JSON.parse(readFileSync(new URL(name, demo), "utf8"));
      assert.deepEqual(manifest.options_ui, { page: "lib/pages/install.html", open_in_tab: true });
    }
  });
});
