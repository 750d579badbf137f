/**
 * Every command the install page and `status()` show works as shown: the id rules are the browsers' own (the
 * host's, src/install/manifest.rs), the flag fits the id's browser, and the id is quoted for the OS's shell.
 * The POSIX commands are run for real by `sh`, against a temporary home, with the built host binary (as the
 * release tarball's binary, as an installed one on PATH, and as install.sh's build, with a stand-in cargo);
 * every one must register the host for the id it names. PowerShell is not on this machine (Debian has no
 * package of it), so its commands are checked against PowerShell's own rule for single-quoted strings: a
 * reader of that grammar below must give back the id exactly.
 */

import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { DEMO_EXTENSION_ID } from "../src/demo-extension.js";
import {
  browserOf,
  isChromeExtensionId,
  isFirefoxExtensionId,
  MAX_ADDON_ID_LENGTH,
  shellWord,
  sourceInstallCommand,
} from "../src/install-command.js";
import { ProtocolVersionError } from "../src/errors.js";
import { isHostName } from "../src/host-name.js";
import { createLlmCache } from "../src/llm-cache.js";
import { HOST_RELEASE, installWays } from "../src/pages/install-steps.js";
import { releaseFile, tarballFolder } from "../src/pages/release-files.js";
import { hostProblemText, osOfPlatform } from "../src/status.js";
import { HOST_BINARY, hostConnector } from "./helpers/chrome-port.js";
import { MemoryStorage } from "./helpers/memory-storage.js";

const GUID = "{4c2b7a4e-1d5e-4e8f-9a3b-2f1c0d9e8b7a}";
/** Ids Firefox accepts, one of each shape, and one starting with `-`. */
const FIREFOX_IDS = ["@addon-example", "@name", "a.b-c_d@x.y", GUID, "-x@y"];
/** Ids Firefox refuses. */
const NOT_FIREFOX_IDS = ["", "@", "name@", "{not-a-guid}", "{}", "a b@c", '"@x"', "'@x'", "$x@y", "`x`@y", "a;b@c", "a@b@c", "a+b@c", "é@x"];
/** Words a shell would make something of, for the quoting alone. */
const HOSTILE_WORDS = ["it's", "‘quoted’", "‚low‛", "$(rm -rf ~)", "`id`", "a;b", "a b", "@(1,2)", "{ x }", "$env:PATH", '"double"', "#hash", "-", "\\"];
const NOT_FOUND = new Error("the native host disconnected: Specified native messaging host not found.");

describe("extension ids", () => {
  it("follow Firefox's rule: a braced GUID, or name@domain with the name optional", () => {
    for (const id of FIREFOX_IDS) assert.ok(isFirefoxExtensionId(id), id);
    for (const id of NOT_FIREFOX_IDS) assert.ok(!isFirefoxExtensionId(id), id);
    assert.ok(isFirefoxExtensionId(`@${"a".repeat(MAX_ADDON_ID_LENGTH - 1)}`));
    assert.ok(!isFirefoxExtensionId(`@${"a".repeat(MAX_ADDON_ID_LENGTH)}`));
  });

  it("tell the browser apart: Chrome's ids are never Firefox's", () => {
    assert.ok(isChromeExtensionId(DEMO_EXTENSION_ID));
    assert.equal(browserOf(DEMO_EXTENSION_ID), "chromium");
    for (const id of FIREFOX_IDS) {
      assert.equal(browserOf(id), "firefox", id);
      assert.ok(!isChromeExtensionId(id), id);
    }
  });
});

/** The arguments the real `sh` makes of `typed`, as a command's arguments. */
function posixRead(typed: string): string[] {
  const out = execFileSync("sh", ["-c", `printf '%s\\0' ${typed}`], { encoding: "utf8" });
  return out.split("\0").slice(0, -1);
}

/**
 * What PowerShell reads from a single-quoted argument, by its language specification (about_Quoting_Rules;
 * the grammar's verbatim-string-literal): it runs from one single-quote character to the next, where the
 * single-quote characters are ' and U+2018 to U+201B, and two of them in a row inside stand for one. Returns
 * the string, and what follows the closing quote (which must be nothing for one argument).
 */
function powershellRead(token: string): { value: string; rest: string } {
  const quote = /['\u2018-\u201b]/;
  assert.ok(quote.test(token[0] ?? ""), `${token} doesn't start with a quote`);
  let value = "";
  let i = 1;
  for (;;) {
    const c = token[i];
    if (c === undefined) throw new Error(`${token}: no closing quote`);
    if (quote.test(c)) {
      if (quote.test(token[i + 1] ?? "")) {
        value += c;
        i += 2;
        continue;
      }
      return { value, rest: token.slice(i + 1) };
    }
    value += c;
    i += 1;
  }
}

/**
 * Characters PowerShell reads specially in an unquoted argument, anywhere in it or at its start (about_Parsing:
 * argument mode): an unquoted word must have none of them.
 */
function powershellPlain(word: string): boolean {
  return !/[\s'"`$@{}();,|&<>#\u2018-\u201e]/.test(word);
}

describe("shell words", () => {
  it("leave a plain word as it is, in both shells", () => {
    for (const shell of ["posix", "powershell"] as const) {
      assert.equal(shellWord(DEMO_EXTENSION_ID, shell), DEMO_EXTENSION_ID);
      assert.equal(shellWord("a.b-c_d/x", shell), "a.b-c_d/x");
    }
  });

  it("quote Firefox ids for PowerShell, so {GUID} keeps its braces and @name isn't splatting", () => {
    assert.equal(shellWord(GUID, "powershell"), `'${GUID}'`);
    assert.equal(shellWord("@name", "powershell"), "'@name'");
    assert.equal(shellWord("it's", "powershell"), "'it''s'");
    assert.equal(shellWord("‘x’", "powershell"), "'‘‘x’’'");
    assert.equal(shellWord("it's", "posix"), "'it'\\''s'");
  });

  it("give back the word exactly, read by the real sh", () => {
    for (const word of [...FIREFOX_IDS, ...NOT_FIREFOX_IDS.filter((id) => id !== ""), ...HOSTILE_WORDS]) {
      assert.deepEqual(posixRead(shellWord(word, "posix")), [word], word);
    }
  });

  it("give back the word exactly, read by PowerShell's quoting rules, as one argument", () => {
    for (const word of [...FIREFOX_IDS, ...NOT_FIREFOX_IDS.filter((id) => id !== ""), ...HOSTILE_WORDS]) {
      const typed = shellWord(word, "powershell");
      if (typed === word) {
        assert.ok(powershellPlain(word), `${word} is left unquoted, but PowerShell reads it specially`);
        continue;
      }
      assert.deepEqual(powershellRead(typed), { value: word, rest: "" }, word);
    }
  });
});

/** Every command of every way on `os`, building from source included. */
const commands = (os: string, id: string) =>
  installWays({ os, extensionId: id }, { showFromSource: true }).flatMap((way) => way.steps.flatMap((step) => (step.command === undefined ? [] : [step.command])));

describe("the install page's commands", () => {
  it("take the flag of the id's browser, with the id quoted for each OS's shell", () => {
    const tarball = `llm-cache-host-${HOST_RELEASE}-x86_64-linux`;
    assert.deepEqual(commands("linux", "@name"), [
      `sudo apt install ./llm-cache-host_${HOST_RELEASE}_amd64.deb`,
      "llm-cache-host install --firefox-extension-id '@name'",
      `tar xzf ${tarball}.tar.gz && cd ${tarball} && ./llm-cache-host install --firefox-extension-id '@name'`,
      "./install.sh --firefox-extension-id '@name'",
    ]);
    const macos = `llm-cache-host-${HOST_RELEASE}-universal2-macos`;
    assert.deepEqual(commands("mac", GUID), [
      `xattr -c ${macos}.tar.gz && tar xzf ${macos}.tar.gz && cd ${macos} && ./llm-cache-host install --firefox-extension-id '${GUID}'`,
      `xattr -c llm-cache-host && ./llm-cache-host install --firefox-extension-id '${GUID}'`,
      `./install.sh --firefox-extension-id '${GUID}'`,
    ]);
    assert.deepEqual(commands("win", GUID), [
      `.\\llm-cache-host.exe install --firefox-extension-id '${GUID}'`,
      `cargo build --release; if ($?) { .\\target\\release\\llm-cache-host.exe install --firefox-extension-id '${GUID}' }`,
    ]);
    assert.deepEqual(commands("win", "@name"), [
      ".\\llm-cache-host.exe install --firefox-extension-id '@name'",
      "cargo build --release; if ($?) { .\\target\\release\\llm-cache-host.exe install --firefox-extension-id '@name' }",
    ]);
    assert.deepEqual(commands("win", DEMO_EXTENSION_ID), [
      `.\\llm-cache-host.exe install --extension-id ${DEMO_EXTENSION_ID}`,
      `cargo build --release; if ($?) { .\\target\\release\\llm-cache-host.exe install --extension-id ${DEMO_EXTENSION_ID} }`,
    ]);
  });
});

describe("status()'s advice", () => {
  it("names Firefox's flag for an add-on id, and its manifest's allowed_extensions", () => {
    const text = hostProblemText(NOT_FOUND, "@name", "linux");
    assert.ok(text.includes("Install it from llm-cache-host's source with ./install.sh --firefox-extension-id '@name';"), text);
    assert.ok(text.includes("whose allowed_extensions lists @name"), text);
    const forbidden = hostProblemText(new Error("Access to the specified native messaging host is forbidden."), GUID, "mac");
    assert.ok(forbidden.includes(`allowed_extensions doesn't list ${GUID}. Install it again with ./install.sh --firefox-extension-id '${GUID}'`), forbidden);
  });

  it("on the install page, points at its steps rather than a checkout of the host's source", () => {
    const forbidden = new Error("Access to the specified native messaging host is forbidden.");
    const older = new ProtocolVersionError(1, 0);
    for (const os of ["linux", "mac", "win"]) {
      for (const error of [NOT_FOUND, forbidden, older]) {
        const forDeveloper = hostProblemText(error, DEMO_EXTENSION_ID, os);
        const forUser = hostProblemText(error, DEMO_EXTENSION_ID, os, undefined, "install page");
        assert.match(forDeveloper, /source|install\.sh|cargo/, forDeveloper);
        assert.doesNotMatch(forUser, /source|install\.sh|cargo|checkout/, forUser);
        assert.match(forUser, /with the steps below/, forUser);
      }
    }
    assert.ok(hostProblemText(forbidden, DEMO_EXTENSION_ID, "linux", undefined, "install page").endsWith(
      `doesn't list chrome-extension://${DEMO_EXTENSION_ID}/. Register it for this extension with the steps below`));
  });

  it("gives Windows the PowerShell command, with the id quoted", () => {
    const text = hostProblemText(NOT_FOUND, GUID, "win");
    assert.ok(text.includes(`with cargo build --release; if ($?) { .\\target\\release\\llm-cache-host.exe install --firefox-extension-id '${GUID}' };`), text);
    const chrome = hostProblemText(NOT_FOUND, DEMO_EXTENSION_ID, "linux");
    assert.ok(chrome.includes(`with ./install.sh --extension-id ${DEMO_EXTENSION_ID};`), chrome);
    assert.ok(!chrome.includes("allowed_extensions"), chrome);
  });

  it("knows the OS from navigator.platform", () => {
    assert.deepEqual(["Win32", "MacIntel", "Linux x86_64", undefined].map(osOfPlatform), ["win", "mac", "linux", "linux"]);
  });

  it("in Firefox, says so through status() itself: the add-on id comes from chrome.runtime.id", async (t) => {
    const global = globalThis as { chrome?: { runtime?: { id?: string } } };
    global.chrome ??= {};
    global.chrome.runtime ??= {};
    global.chrome.runtime.id = "@name";
    t.after(() => delete global.chrome);
    const dir = mkdtempSync(join(tmpdir(), "llm-cache-status-"));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const connect = hostConnector({ dataDir: dir, binary: "/nonexistent/llm-cache-host" });
    const cache = createLlmCache({ storage: new MemoryStorage(), connect, fallback: false });
    t.after(() => cache.client.close());
    const status = await cache.status();
    assert.ok(status.hostProblem?.includes("./install.sh --firefox-extension-id '@name'"), status.hostProblem);
  });
});

/**
 * A temporary machine: a home, a data directory, and on PATH the host binary as `llm-cache-host` (an installed
 * one), a stand-in `cargo` that builds nothing, so that install.sh's build is the binary already built, and a
 * stand-in for macOS's `xattr` that takes only what the macOS steps need, `-c` and a file that is there.
 */
function machine(): { root: string; env: NodeJS.ProcessEnv; remove: () => void } {
  const root = mkdtempSync(join(tmpdir(), "llm-cache-commands-"));
  const bin = join(root, "bin");
  mkdirSync(bin);
  mkdirSync(join(root, "home"));
  writeFileSync(join(bin, "llm-cache-host"), `#!/bin/sh\nexec '${HOST_BINARY}' "$@"\n`);
  writeFileSync(join(bin, "cargo"), "#!/bin/sh\n# The release binary is already in place.\nexit 0\n");
  writeFileSync(join(bin, "xattr"), '#!/bin/sh\n[ $# -eq 2 ] && [ "$1" = -c ] && [ -f "$2" ] || { echo "xattr: expected -c FILE, got: $*" >&2; exit 1; }\n');
  for (const name of ["llm-cache-host", "cargo", "xattr"]) chmodSync(join(bin, name), 0o755);
  const env = {
    PATH: `${bin}:/usr/bin:/bin`,
    HOME: join(root, "home"),
    XDG_DATA_HOME: join(root, "home/.local/share"),
    LLM_CACHE_DIR: join(root, "data"),
  };
  return { root, env, remove: () => rmSync(root, { recursive: true, force: true }) };
}

describe("the host-name rule", () => {
  it("takes and refuses the shared cases as the host and the scripts do", () => {
    // tests/host_names.txt holds the cases src/host_name.rs and scripts/extension-ids.sh check too.
    const cases = readFileSync(fileURLToPath(new URL("../../../tests/host_names.txt", import.meta.url)), "utf8");
    const lines = cases.split("\n").filter((line) => line !== "" && !line.startsWith("#"));
    assert.ok(lines.length > 20);
    for (const line of lines) {
      const [want, name] = [line.slice(0, line.indexOf(" ")), line.slice(line.indexOf(" ") + 1)];
      assert.equal(isHostName(name) ? "ok" : "no", want, line);
    }
  });
});

/**
 * The folders the commands run in, as a person has them: the Linux and macOS release tarballs (each holding the
 * binary in a folder of its name), the folder a browser unpacked the macOS tarball in, and a checkout with
 * install.sh, its id rules and the built binary.
 */
function stage(root: string): void {
  const repo = fileURLToPath(new URL("../../../", import.meta.url));
  for (const key of ["tarballX86_64", "macosTarball"] as const) {
    const name = tarballFolder(releaseFile(key, HOST_RELEASE));
    const folder = join(root, "downloads", name);
    mkdirSync(folder, { recursive: true });
    writeFileSync(join(folder, "llm-cache-host"), `#!/bin/sh\nexec '${HOST_BINARY}' "$@"\n`, { mode: 0o755 });
    execFileSync("tar", ["czf", `${folder}.tar.gz`, "-C", join(root, "downloads"), name]);
    rmSync(folder, { recursive: true });
  }
  copyFileSync(join(root, "bin/llm-cache-host"), join(root, "downloads/llm-cache-host"));
  chmodSync(join(root, "downloads/llm-cache-host"), 0o755);
  const checkout = join(root, "checkout");
  mkdirSync(join(checkout, "scripts"), { recursive: true });
  mkdirSync(join(checkout, "target/release"), { recursive: true });
  copyFileSync(join(repo, "install.sh"), join(checkout, "install.sh"));
  copyFileSync(join(repo, "scripts/extension-ids.sh"), join(checkout, "scripts/extension-ids.sh"));
  copyFileSync(join(root, "bin/llm-cache-host"), join(checkout, "target/release/llm-cache-host"));
  chmodSync(join(checkout, "install.sh"), 0o755);
  chmodSync(join(checkout, "target/release/llm-cache-host"), 0o755);
}

/** The manifest a browser of the id's family reads in `home`: allowed_extensions (Firefox) or allowed_origins. */
function allowed(home: string, id: string): unknown {
  const file =
    browserOf(id) === "firefox"
      ? join(home, ".mozilla/native-messaging-hosts/com.browserx.llm_cache.json")
      : join(home, ".config/chromium/NativeMessagingHosts/com.browserx.llm_cache.json");
  if (!existsSync(file)) return `no manifest at ${file}`;
  const manifest = JSON.parse(readFileSync(file, "utf8")) as { allowed_extensions?: string[]; allowed_origins?: string[] };
  return browserOf(id) === "firefox" ? manifest.allowed_extensions : manifest.allowed_origins;
}

describe("the POSIX commands, run by sh as shown", { skip: existsSync(HOST_BINARY) ? false : `no host binary at ${HOST_BINARY}: run cargo build` }, () => {
  for (const id of [DEMO_EXTENSION_ID, ...FIREFOX_IDS]) {
    it(`register the host for ${id}`, () => {
      const shown = new Set([...commands("linux", id), ...commands("mac", id), sourceInstallCommand(id, "linux")]);
      for (const command of shown) {
        assert.equal(spawnSync("sh", ["-n", "-c", command]).status, 0, `sh -n: ${command}`);
        // The package's own install needs root and a .deb; its syntax is all that is checked.
        if (command.startsWith("sudo apt install")) continue;
        const m = machine();
        try {
          stage(m.root);
          const cwd = join(m.root, command.startsWith("./install.sh") ? "checkout" : "downloads");
          const run = spawnSync("sh", ["-c", command], { cwd, env: m.env, encoding: "utf8" });
          assert.equal(run.status, 0, `${command}\n${run.stdout}${run.stderr}`);
          const expected = browserOf(id) === "firefox" ? [id] : [`chrome-extension://${id}/`];
          assert.deepEqual(allowed(m.env.HOME ?? "", id), expected, command);
        } finally {
          m.remove();
        }
      }
    });
  }
  it("cd into the folder a tarball holds when its download address isn't named like the release file", () => {
    // A stable address for the newest release: its folder's name has a version the page can't know.
    // The tarball's way is the second on Linux (after the .deb) and the first on macOS.
    for (const [os, key, way, held] of [
      ["linux", "tarballX86_64", 1, "llm-cache-host-9.9.9-x86_64-linux"],
      ["mac", "macosTarball", 0, "llm-cache-host-9.9.9-universal2-macos"],
    ] as const) {
      const file = `llm-cache-host-${os}-latest.tar.gz`;
      const ways = installWays({ os, arch: "x86_64", extensionId: DEMO_EXTENSION_ID }, { downloads: { [key]: `https://x.example/dl/${file}` } });
      const command = ways[way]?.steps[0]?.command ?? "";
      assert.ok(command.includes(`tar xzf ${file} && cd "$(tar tzf ${file} | head -n 1)" && `), command);
      const m = machine();
      try {
        const downloads = join(m.root, "downloads");
        mkdirSync(join(downloads, held), { recursive: true });
        writeFileSync(join(downloads, held, "llm-cache-host"), `#!/bin/sh\nexec '${HOST_BINARY}' "$@"\n`, { mode: 0o755 });
        execFileSync("tar", ["czf", join(downloads, file), "-C", downloads, held]);
        rmSync(join(downloads, held), { recursive: true });
        const run = spawnSync("sh", ["-c", command], { cwd: downloads, env: m.env, encoding: "utf8" });
        assert.equal(run.status, 0, `${command}\n${run.stdout}${run.stderr}`);
        assert.deepEqual(allowed(m.env.HOME ?? "", DEMO_EXTENSION_ID), [`chrome-extension://${DEMO_EXTENSION_ID}/`], command);
      } finally {
        m.remove();
      }
    }
  });
});
