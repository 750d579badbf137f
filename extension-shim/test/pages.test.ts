/**
 * The install and viewer pages' pure parts: the install commands per OS and processor with the extension's id
 * filled in, the developer's settings (download links, from source or not) and how they are checked, the
 * viewer's address (fragment) round trip and JSON-pointer steps, and that the built pages are in dist and in the
 * demo, where the demo's manifest names the install page. The pages themselves run in Chromium
 * (e2e/test/pages.e2e.test.mjs).
 */

import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { DEMO_EXTENSION_ID } from "../src/demo-extension.js";
import { MAX_HOST_NAME_CHARS } from "../src/host-name.js";
import { checkPagesConfig, DOWNLOAD_KEYS, PAGES_SETTINGS, MAX_DOWNLOAD_URL_CHARS, MAX_EXTENSION_NAME_CHARS, type Downloads, type PagesConfig } from "../src/pages/config.js";
import { HOST_RELEASE, installWays, type InstallStep, type Machine } from "../src/pages/install-steps.js";
import type { Provenance } from "../src/protocol.js";
import { originText, passes, trustWord } from "../src/pages/provenance-text.js";
import { childPointer, parseRoute, pointerTrail, routeHash } from "../src/pages/viewer-route.js";

const id = DEMO_EXTENSION_ID;
const commands = (machine: Partial<Machine> & { os: string }, config: PagesConfig = {}) =>
  installWays({ extensionId: id, ...machine }, config).flatMap((way) => way.steps.flatMap((step) => (step.command === undefined ? [] : [step.command])));
/** A step's words as the page shows them, a link as "[label](href)". */
const words = (step: InstallStep | undefined) => step?.words.map((word) => (typeof word === "string" ? word : `[${word.label}](${word.href})`)).join("");
const titles = (os: string, config: PagesConfig = {}) => installWays({ os, extensionId: id }, config).map((way) => way.title);

describe("install steps", () => {
  it("name the host release the shim goes with: Cargo.toml's version", () => {
    const cargo = readFileSync(new URL("../../../Cargo.toml", import.meta.url), "utf8");
    assert.equal(HOST_RELEASE, /^version = "([^"]+)"/m.exec(cargo)?.[1]);
  });

  it("on Linux: the .deb, then install for this id; or the tarball", () => {
    assert.deepEqual(commands({ os: "linux" }), [
      `sudo apt install ./llm-cache-host_${HOST_RELEASE}_amd64.deb`,
      `llm-cache-host install --extension-id ${id}`,
      `tar xzf llm-cache-host-${HOST_RELEASE}-x86_64-linux.tar.gz && cd llm-cache-host-${HOST_RELEASE}-x86_64-linux && ./llm-cache-host install --extension-id ${id}`,
    ]);
  });

  it("on 64-bit ARM Linux (Chrome's arm64, Firefox's aarch64): the arm64 .deb and the aarch64 tarball", () => {
    for (const arch of ["arm64", "aarch64"]) {
      assert.deepEqual(commands({ os: "linux", arch }), [
        `sudo apt install ./llm-cache-host_${HOST_RELEASE}_arm64.deb`,
        `llm-cache-host install --extension-id ${id}`,
        `tar xzf llm-cache-host-${HOST_RELEASE}-aarch64-linux.tar.gz && cd llm-cache-host-${HOST_RELEASE}-aarch64-linux && ./llm-cache-host install --extension-id ${id}`,
      ]);
    }
    assert.deepEqual(installWays({ os: "linux", arch: "aarch64", extensionId: id }).map((way) => way.title), ["Debian or Ubuntu (aarch64)", "Any Linux (aarch64)"]);
  });

  it("on macOS: the universal2 tarball, its quarantine mark cleared, unpacked, and its binary's install for this id", () => {
    const folder = `llm-cache-host-${HOST_RELEASE}-universal2-macos`;
    assert.deepEqual(commands({ os: "mac" }), [
      `xattr -c ${folder}.tar.gz && tar xzf ${folder}.tar.gz && cd ${folder} && ./llm-cache-host install --extension-id ${id}`,
      `xattr -c llm-cache-host && ./llm-cache-host install --extension-id ${id}`,
    ]);
    assert.deepEqual(titles("mac"), ["macOS (Intel or Apple silicon)"]);
    assert.equal(words(installWays({ os: "mac", extensionId: id })[0]?.steps[1]), `If your browser unpacked it already, in Terminal, in the folder ${folder}:`);
  });

  it("on Windows: the zip, then the .exe double-clicked or its install for this id in PowerShell", () => {
    assert.deepEqual(commands({ os: "win" }), [`.\\llm-cache-host.exe install --extension-id ${id}`]);
    assert.match(words(installWays({ os: "win", extensionId: id })[0]?.steps[0]) ?? "", new RegExp(`double-click llm-cache-host\\.exe, answer y, and give it this extension's id, ${id} `));
  });

  it("show building from source only when the developer asks for it", () => {
    assert.deepEqual(titles("linux"), ["Debian or Ubuntu (x86_64)", "Any Linux (x86_64)"]);
    assert.deepEqual(titles("linux", { showFromSource: true }), ["Debian or Ubuntu (x86_64)", "Any Linux (x86_64)", "From source (needs Rust)"]);
    assert.deepEqual(commands({ os: "mac" }, { showFromSource: true }).at(-1), `./install.sh --extension-id ${id}`);
    assert.deepEqual(commands({ os: "win" }, { showFromSource: true })[1],
      `cargo build --release; if ($?) { .\\target\\release\\llm-cache-host.exe install --extension-id ${id} }`);
    for (const os of ["linux", "mac", "win"]) {
      const shown = JSON.stringify(installWays({ os, extensionId: id }));
      assert.doesNotMatch(shown, /source|Rust|cargo|install\.sh/, os);
    }
  });

  it("without download addresses, say to ask the extension's developer for each file, never a release nobody can find", () => {
    const [deb, tarball] = installWays({ os: "linux", extensionId: id });
    assert.equal(words(deb?.steps[0]), `Ask this extension's developer for llm-cache-host_${HOST_RELEASE}_amd64.deb, then in its folder:`);
    assert.equal(words(tarball?.steps[0]), `Ask this extension's developer for llm-cache-host-${HOST_RELEASE}-x86_64-linux.tar.gz, then in its folder:`);
    assert.match(words(installWays({ os: "mac", extensionId: id })[0]?.steps[0]) ?? "", new RegExp(`^Ask this extension's developer for llm-cache-host-${HOST_RELEASE}-universal2-macos\\.tar\\.gz, then in Terminal, in its folder \\(xattr -c clears`));
    assert.match(words(installWays({ os: "win", extensionId: id })[0]?.steps[0]) ?? "", new RegExp(`^Ask this extension's developer for llm-cache-host-${HOST_RELEASE}-x86_64-windows\\.zip and unpack it \\(right-click it, Extract All\\)\\.`));
    for (const os of ["linux", "mac", "win"]) assert.doesNotMatch(JSON.stringify(installWays({ os, extensionId: id })), /llm-cache-host release/, os);
  });

  it("link each file to the developer's address, and use the file name at its end in the commands", () => {
    const downloads: Downloads = {
      debAmd64: "https://mail.example/dl/mail-cache_2.1.0_amd64.deb",
      tarballX86_64: "https://mail.example/dl/mail-cache-2.1.0-x86_64-linux.tar.gz?token=1",
      debArm64: "https://mail.example/releases/latest",
      windowsZip: "https://mail.example/dl/mail%20cache.zip",
      macosTarball: "https://mail.example/dl/mail-cache-macos.tar.gz",
    };
    const [deb, tarball] = installWays({ os: "linux", extensionId: id }, { downloads });
    assert.equal(words(deb?.steps[0]), "Download [mail-cache_2.1.0_amd64.deb](https://mail.example/dl/mail-cache_2.1.0_amd64.deb), then in its folder:");
    assert.equal(deb?.steps[0]?.command, "sudo apt install ./mail-cache_2.1.0_amd64.deb");
    assert.equal(words(tarball?.steps[0]), "Download [mail-cache-2.1.0-x86_64-linux.tar.gz](https://mail.example/dl/mail-cache-2.1.0-x86_64-linux.tar.gz?token=1), then in its folder:");
    assert.equal(tarball?.steps[0]?.command, `tar xzf mail-cache-2.1.0-x86_64-linux.tar.gz && cd mail-cache-2.1.0-x86_64-linux && ./llm-cache-host install --extension-id ${id}`);
    // An address that doesn't end in the file (a release page) is linked, and the commands keep the release's name.
    const [arm] = installWays({ os: "linux", arch: "arm64", extensionId: id }, { downloads });
    assert.equal(words(arm?.steps[0]), `Download [llm-cache-host_${HOST_RELEASE}_arm64.deb](https://mail.example/releases/latest), then in its folder:`);
    assert.equal(arm?.steps[0]?.command, `sudo apt install ./llm-cache-host_${HOST_RELEASE}_arm64.deb`);
    // A name with characters file names don't usually have is not put in a command.
    assert.match(words(installWays({ os: "win", extensionId: id }, { downloads })[0]?.steps[0]) ?? "",
      new RegExp(`^Download \\[llm-cache-host-${HOST_RELEASE}-x86_64-windows\\.zip\\]\\(https://mail\\.example/dl/mail%20cache\\.zip\\) and unpack it`));
    const mac = installWays({ os: "mac", extensionId: id }, { downloads })[0];
    assert.match(words(mac?.steps[0]) ?? "", /^Download \[mail-cache-macos\.tar\.gz\]\(https:\/\/mail\.example\/dl\/mail-cache-macos\.tar\.gz\), then in Terminal/);
    // A file not named like the release's says nothing of the folder it holds: tar names it.
    assert.equal(mac?.steps[0]?.command, `xattr -c mail-cache-macos.tar.gz && tar xzf mail-cache-macos.tar.gz && cd "$(tar tzf mail-cache-macos.tar.gz | head -n 1)" && ./llm-cache-host install --extension-id ${id}`);
    assert.equal(words(mac?.steps[1]), "If your browser unpacked it already, in Terminal, in the folder it unpacked:");
  });

  it("in Firefox, with the add-on id's own flag", () => {
    assert.deepEqual(installWays({ os: "linux", extensionId: "addon@example.org", browser: "firefox" })[1]?.steps[0]?.command,
      `tar xzf llm-cache-host-${HOST_RELEASE}-x86_64-linux.tar.gz && cd llm-cache-host-${HOST_RELEASE}-x86_64-linux && ./llm-cache-host install --firefox-extension-id 'addon@example.org'`);
  });

  it("for a host of the developer's own name: its release files and command, and --host-name in every install", () => {
    const hostName = "com.example.mail_cache";
    const ways = (os: string) => commands({ os }, { hostName, showFromSource: true });
    const args = `--extension-id ${id} --host-name com.example.mail_cache`;
    assert.deepEqual(ways("linux"), [
      `sudo apt install ./com.example.mail-cache_${HOST_RELEASE}_amd64.deb`,
      `com.example.mail-cache install ${args}`,
      `tar xzf com.example.mail-cache-${HOST_RELEASE}-x86_64-linux.tar.gz && cd com.example.mail-cache-${HOST_RELEASE}-x86_64-linux && ./com.example.mail-cache install ${args}`,
      `./install.sh ${args}`,
    ]);
    const macFolder = `com.example.mail-cache-${HOST_RELEASE}-universal2-macos`;
    assert.deepEqual(ways("mac"), [
      `xattr -c ${macFolder}.tar.gz && tar xzf ${macFolder}.tar.gz && cd ${macFolder} && ./com.example.mail-cache install ${args}`,
      `xattr -c com.example.mail-cache && ./com.example.mail-cache install ${args}`,
      `./install.sh ${args}`,
    ]);
    assert.deepEqual(ways("win"), [
      `.\\com.example.mail-cache.exe install ${args}`,
      `cargo build --release; if ($?) { .\\target\\release\\llm-cache-host.exe install ${args} }`,
    ]);
    // The files the user is asked for are the developer's, on ARM too.
    const [deb, tarball] = installWays({ os: "linux", arch: "arm64", extensionId: id }, { hostName });
    assert.equal(words(deb?.steps[0]), `Ask this extension's developer for com.example.mail-cache_${HOST_RELEASE}_arm64.deb, then in its folder:`);
    assert.equal(words(tarball?.steps[0]), `Ask this extension's developer for com.example.mail-cache-${HOST_RELEASE}-aarch64-linux.tar.gz, then in its folder:`);
    assert.match(words(installWays({ os: "win", extensionId: id }, { hostName })[0]?.steps[0]) ?? "",
      new RegExp(`^Ask this extension's developer for com\\.example\\.mail-cache-${HOST_RELEASE}-x86_64-windows\\.zip and unpack it \\(right-click it, Extract All\\)\\. In the unpacked folder, double-click com\\.example\\.mail-cache\\.exe,`));
    // The default host's commands name no host.
    assert.ok(commands({ os: "linux" }, { showFromSource: true }).every((command) => !command.includes("--host-name")));
  });

  it("none where browsers can't start native hosts", () => {
    assert.deepEqual(installWays({ os: "cros", extensionId: id }), []);
    assert.deepEqual(installWays({ os: "android", extensionId: id }), []);
  });
});

describe("the pages' settings (llm-cache-pages.json)", () => {
  it("take every setting, checked", () => {
    const config = {
      extensionName: "Mail Agent",
      hostName: "com.example.mail_cache",
      showFromSource: true,
      downloads: Object.fromEntries(DOWNLOAD_KEYS.map((key) => [key, `https://mail.example/${key}`])),
    };
    assert.deepEqual(checkPagesConfig(config), config);
    assert.deepEqual(checkPagesConfig({}), {});
    for (const hostName of ["com.browserx.llm_cache", "a.bc", `com.${"a".repeat(MAX_HOST_NAME_CHARS - 4)}`]) assert.deepEqual(checkPagesConfig({ hostName }), { hostName });
  });

  it("refuse a misspelt key, a link that isn't a web address, and wrong types, saying what is expected", () => {
    const refusals: Array<[unknown, RegExp]> = [
      [[], /^llm-cache-pages\.json must hold a JSON object, not \[\]$/],
      [{ downlods: {} }, /no setting "downlods"; the settings are extensionName, hostName, downloads, showFromSource$/],
      // The host's own rule, as createLlmCache({ hostName }) checks it.
      [{ hostName: "Com.Example.Mail" }, /^llm-cache-pages\.json: hostName must be a host name, a host name is Chrome's: lowercase letters, .*e\.g\. com\.example\.mail_cache; it is "Com\.Example\.Mail"$/],
      [{ hostName: "mail_cache" }, /hostName must be a host name/],
      [{ hostName: "com.example.mail-cache" }, /hostName must be a host name/],
      [{ hostName: "_other.example.cache" }, /hostName must be a host name/],
      [{ hostName: `com.${"a".repeat(MAX_HOST_NAME_CHARS - 3)}` }, /hostName must be a host name/],
      [{ hostName: 7 }, /hostName must be a host name, .*; it is number$/],
      [{ downloads: { deb: "https://x.example/a.deb" } }, /downloads has no key "deb"; the keys are debAmd64, debArm64, /],
      [{ downloads: { debAmd64: "javascript:alert(1)" } }, /downloads\.debAmd64 must be an https:\/\/ address .*, not "javascript:alert\(1\)"$/],
      [{ downloads: { debAmd64: "file:///etc/passwd" } }, /downloads\.debAmd64 must be an https:\/\/ address/],
      // Plain http is refused, saying why: the page has users install what it downloads.
      [{ downloads: { tarballX86_64: "http://x.example/llm-cache-host-0.1.0-x86_64-linux.tar.gz" } },
        /^llm-cache-pages\.json: downloads\.tarballX86_64 must be an https:\/\/ address of at most 2048 characters \(the page has users run what they download, so it takes no plain http:\/\/ address\), not "http:\/\/x\.example\/llm-cache-host-0\.1\.0-x86_64-linux\.tar\.gz"$/],
      [{ downloads: { debAmd64: "HTTP://x.example/a.deb" } }, /downloads\.debAmd64 must be an https:\/\/ address .*no plain http/],
      [{ downloads: { debAmd64: `https://x.example/${"a".repeat(MAX_DOWNLOAD_URL_CHARS)}` } }, /downloads\.debAmd64 must be an https:\/\/ address of at most 2048 characters, not "https:\/\/x\.example\/a+…$/],
      [{ downloads: "https://x.example" }, /downloads must be an object of download addresses/],
      [{ showFromSource: "yes" }, /showFromSource must be true or false, not "yes"$/],
      [{ extensionName: "" }, /extensionName must be a non-empty string/],
      [{ extensionName: "x".repeat(MAX_EXTENSION_NAME_CHARS + 1) }, /extensionName must be a non-empty string of at most 200 characters/],
    ];
    for (const [value, message] of refusals) assert.throws(() => checkPagesConfig(value), (error: unknown) => error instanceof TypeError && message.test(error.message), JSON.stringify(value).slice(0, 80));
  });
});

describe("the README's pages settings", () => {
  const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
  const section = readme.slice(readme.indexOf("### Making the pages your extension's"));

  it("shows an example the pages take as it is, with every download", () => {
    const example = /```json\n([\s\S]*?)```/.exec(section)?.[1];
    assert.ok(example, "no JSON example in the section");
    const config = checkPagesConfig(JSON.parse(example));
    assert.deepEqual(Object.keys(config.downloads ?? {}), [...DOWNLOAD_KEYS]);
  });

  it("describes every setting and every download key", () => {
    const table = section.slice(0, section.indexOf("\n\n", section.indexOf("| Setting |")));
    assert.deepEqual([...table.matchAll(/^\| `(\w+)` \|/gm)].map((match) => match[1]), PAGES_SETTINGS);
    for (const key of DOWNLOAD_KEYS) assert.ok(table.includes(`\`${key}\``), `the table doesn't name ${key}`);
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

  it("round-trips a session's filters by origin and trust, and drops unknown values and filters on an item", () => {
    const route = { session: "conv_a", origin: "web", trust: "untrusted" } as const;
    assert.deepEqual(parseRoute(routeHash(route)), route);
    assert.deepEqual(parseRoute("#session=conv_a&origin=gossip&trust=maybe"), { session: "conv_a" });
    assert.deepEqual(parseRoute("#session=conv_a&key=conv_a_b_c&origin=web&trust=trusted"), { session: "conv_a", key: "conv_a_b_c" });
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

describe("the viewer's words for where an item came from", () => {
  it("names the origin with the page's host (punycode) or the tool, and what the item was made from", () => {
    assert.equal(originText({ origin: "web", source: { url: "https://bücher.example/a?b=c" } }), "web · xn--bcher-kva.example");
    assert.equal(originText({ origin: "web", source: { url: "not a url" } }), "web · not a url");
    assert.equal(originText({ origin: "tool", source: { tool: "fetch_page" } }), "tool · fetch_page");
    assert.equal(originText({ origin: "agent", upstream: ["web", "email", "agent"] }), "agent, made from web and email");
    assert.equal(originText({ origin: "agent", upstream: ["web", "email", "user"] }), "agent, made from web, email and user");
    assert.equal(originText({ origin: "unknown" }), "unknown");
  });

  it("calls an item trusted only when endorsed or made only of the user's, the extension's and the agent's text", () => {
    assert.equal(trustWord({ origin: "user" }), "trusted");
    assert.equal(trustWord({ origin: "agent", upstream: ["user", "extension"] }), "trusted");
    assert.equal(trustWord({ origin: "agent", upstream: ["web"] }), "untrusted");
    assert.equal(trustWord({ origin: "user", upstream: ["unknown"] }), "untrusted");
    assert.equal(trustWord({ origin: "unknown" }), "untrusted");
    assert.equal(trustWord({ origin: "web", endorsed: { at: 1, reason: "the user checked it" } }), "endorsed");
  });

  it("filters by origin and by trust, endorsed items counting as trusted", () => {
    const web: Provenance = { origin: "web" };
    const endorsed: Provenance = { origin: "web", endorsed: { at: 1, reason: "checked" } };
    const mine: Provenance = { origin: "agent", upstream: ["web"] };
    assert.deepEqual([web, endorsed, mine].map((p) => passes(p, "web", undefined)), [true, true, false]);
    assert.deepEqual([web, endorsed, mine].map((p) => passes(p, undefined, "trusted")), [false, true, false]);
    assert.deepEqual([web, endorsed, mine].map((p) => passes(p, undefined, "untrusted")), [true, false, true]);
    assert.deepEqual([web, endorsed, mine].map((p) => passes(p, undefined, undefined)), [true, true, true]);
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
