/**
 * What the install page tells a person to run, per OS and processor, with this extension's id filled in: with its
 * browser's flag, and quoted for the OS's shell (install-command.ts); for the host the extension connects to,
 * whose release files and command are named by it as scripts/release.sh names them. Each release file is linked where the
 * extension's developer gave its address (config.ts), and asked of the developer where they didn't. Pure: the
 * page (install.ts) asks the browser for the OS and the id and renders these steps; the tests check the commands
 * themselves, and run the POSIX ones.
 */

import { browserOf, hostCommand, hostNameArgument, idArguments, shellOf, shellWord, sourceInstallCommand, type BrowserFamily } from "../install-command.js";
import { NATIVE_HOST_NAME } from "../protocol.js";
import type { Downloads, PagesConfig } from "./config.js";

export type { BrowserFamily } from "../install-command.js";

/**
 * The host release this shim goes with, whose package names the steps give. The shim and the host are
 * released together at one version (Cargo.toml's; test/pages.test.ts checks they agree).
 */
export const HOST_RELEASE = "0.1.0";

/** `chrome.runtime.getPlatformInfo().os`: the OSes the browsers report. */
export type PlatformOs = "linux" | "mac" | "win" | "android" | "cros" | "openbsd" | "fuchsia";

/** A link in a step's words: to a release file. */
export interface Link {
  href: string;
  label: string;
}

/** One thing to do: words (some of them a link), and the command to type when there is one. */
export interface InstallStep {
  words: Array<string | Link>;
  command?: string;
}

/** One way to install (a package, a tarball, from source), as steps in order. */
export interface InstallWay {
  title: string;
  steps: InstallStep[];
}

/** The machine and the extension the steps are for. */
export interface Machine {
  /** `chrome.runtime.getPlatformInfo().os`. */
  os: string;
  /** `chrome.runtime.getPlatformInfo().arch`: "x86-64", "arm64" (Chrome) or "aarch64" (Firefox), …; x86-64 if unknown. */
  arch?: string;
  extensionId: string;
  browser?: BrowserFamily;
}

/** The two processors the host's Linux releases are built for, as Debian and as `uname -m` name them. */
const LINUX_ARCHES = {
  x86_64: { debian: "amd64", uname: "x86_64", deb: "debAmd64", tarball: "tarballX86_64" },
  arm64: { debian: "arm64", uname: "aarch64", deb: "debArm64", tarball: "tarballAarch64" },
} as const satisfies Record<string, { debian: string; uname: string; deb: keyof Downloads; tarball: keyof Downloads }>;

/**
 * The ways to install the host on the machine for the extension, most usual first; building from source only
 * when the developer asks for it (`showFromSource`). Empty on an OS with no native messaging (ChromeOS,
 * Android): the extension then keeps its cache in the browser. For a host of the developer's own name
 * (`hostName`, e.g. `com.example.mail_cache`) the release files and the command are its own
 * (`mail-cache_<version>_amd64.deb`, `mail-cache`), and each `install` names it with `--host-name`, so that any
 * build of the binary registers under it.
 */
export function installWays(machine: Machine, config: PagesConfig = {}, version = HOST_RELEASE): InstallWay[] {
  const { os, extensionId } = machine;
  const browser = machine.browser ?? browserOf(extensionId);
  const downloads = config.downloads ?? {};
  const shell = shellOf(os);
  const hostName = config.hostName ?? NATIVE_HOST_NAME;
  const name = hostCommand(hostName);
  const register = (binary: string) => `${binary} install ${idArguments(extensionId, os, browser)}${hostNameArgument(hostName)}`;
  const fromSource: InstallWay[] = config.showFromSource
    ? [
        {
          title: "From source (needs Rust)",
          steps: [
            {
              words: [`In a checkout of llm-cache-host, build the release binary and install it for this extension${os === "win" ? ", in PowerShell" : ""}:`],
              command: sourceInstallCommand(extensionId, os, browser, hostName),
            },
          ],
        },
      ]
    : [];
  switch (os) {
    case "linux": {
      const arch = LINUX_ARCHES[machine.arch === "arm64" || machine.arch === "aarch64" ? "arm64" : "x86_64"];
      const deb = fileName(downloads[arch.deb], ".deb", `${name}_${version}_${arch.debian}.deb`);
      const tarball = fileName(downloads[arch.tarball], ".tar.gz", `${name}-${version}-${arch.uname}-linux.tar.gz`);
      // The release's tarball holds one folder of its own name (scripts/release.sh).
      const folder = tarball.slice(0, -".tar.gz".length);
      return [
        {
          title: `Debian or Ubuntu (${arch.uname})`,
          steps: [
            { words: [...get(downloads[arch.deb], deb), ", then in its folder:"], command: `sudo apt install ./${shellWord(deb, shell)}` },
            {
              words: ["If this page still says the host isn't used, the package was built for other extensions; register it for this one:"],
              command: register(name),
            },
          ],
        },
        {
          title: `Any Linux (${arch.uname})`,
          steps: [
            {
              words: [...get(downloads[arch.tarball], tarball), ", then in its folder:"],
              command: `tar xzf ${shellWord(tarball, shell)} && cd ${shellWord(folder, shell)} && ${register(`./${name}`)}`,
            },
          ],
        },
        ...fromSource,
      ];
    }
    case "mac":
      return [
        {
          title: "macOS",
          steps: [
            {
              words: [...get(downloads.macosTarball, fileName(downloads.macosTarball, ".tar.gz", `the macOS tarball of ${name}`)), " and unpack it, then in its folder:"],
              command: register(`./${name}`),
            },
          ],
        },
        ...fromSource,
      ];
    case "win":
      return [
        {
          title: "Windows",
          steps: [
            {
              words: [...get(downloads.windowsZip, fileName(downloads.windowsZip, ".zip", `the zip of ${name}.exe`)), " and unpack it, then in its folder, in PowerShell:"],
              command: register(`.\\${name}.exe`),
            },
          ],
        },
        ...fromSource,
      ];
    default:
      return [];
  }
}

/**
 * How the user gets a release file: a link to it where the developer gave its address, else a request to ask the
 * developer for it (the host has no public download the page could name).
 */
function get(url: string | undefined, file: string): Array<string | Link> {
  return url === undefined ? ["Ask this extension's developer for ", file] : ["Download ", { href: url, label: file }];
}

/**
 * The file a download address names: the last part of its path when that ends as the file must (".deb") and
 * has only the characters file names usually have, else `fallback`, the release's own name (an address may be
 * a release page, or a link that redirects).
 */
export function fileName(url: string | undefined, suffix: string, fallback: string): string {
  if (url === undefined || !URL.canParse(url)) return fallback;
  const last = new URL(url).pathname.split("/").pop() ?? "";
  let name: string;
  try {
    name = decodeURIComponent(last);
  } catch {
    return fallback;
  }
  return name.endsWith(suffix) && name.length > suffix.length && /^[\w.+~-]+$/.test(name) ? name : fallback;
}

/** The OS as the page names it. */
export function osName(os: string): string {
  return { linux: "Linux", mac: "macOS", win: "Windows", cros: "ChromeOS", android: "Android" }[os] ?? os;
}
