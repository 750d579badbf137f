/**
 * What the install page tells a person to run, per OS and processor, with this extension's id filled in: with its
 * browser's flag, and quoted for the OS's shell (install-command.ts); for the host the extension connects to,
 * whose release files and command are named by it as scripts/release.sh names them. Each release file is linked where the
 * extension's developer gave its address (config.ts), and asked of the developer where they didn't. Pure: the
 * page (install.ts) asks the browser for the OS and the id and renders these steps; the tests check the commands
 * themselves, and run the POSIX ones.
 */

import { browserOf, hostCommand, hostNameArgument, idArguments, shellOf, shellWord, sourceInstallCommand, type BrowserFamily, type Shell } from "../install-command.js";
import { NATIVE_HOST_NAME } from "../protocol.js";
import type { Downloads, PagesConfig } from "./config.js";
import { isReleaseFile, releaseFile, tarballFolder } from "./release-files.js";

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
 * (`com.example.mail-cache_<version>_amd64.deb`, `com.example.mail-cache`), and each `install` names it with `--host-name`, so that any
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
      const deb = fileName(downloads[arch.deb], ".deb", releaseFile(arch.deb, version, name));
      const tarball = fileName(downloads[arch.tarball], ".tar.gz", releaseFile(arch.tarball, version, name));
      const folder = heldFolder(arch.tarball, tarball);
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
              command: `tar xzf ${shellWord(tarball, shell)} && ${cdInto(folder, tarball, shell)} && ${register(`./${name}`)}`,
            },
          ],
        },
        ...fromSource,
      ];
    }
    case "mac": {
      // One universal2 binary serves Intel and Apple silicon Macs. It is signed ad hoc, not notarized by Apple,
      // so macOS refuses to run it while it carries the quarantine mark a browser puts on what it downloads,
      // which tar and Archive Utility pass on to what they unpack: `xattr -c` clears it (and fails on no file).
      const tarball = fileName(downloads.macosTarball, ".tar.gz", releaseFile("macosTarball", version, name));
      const folder = heldFolder("macosTarball", tarball);
      return [
        {
          title: "macOS (Intel or Apple silicon)",
          steps: [
            {
              words: [
                ...get(downloads.macosTarball, tarball),
                ", then in Terminal, in its folder (xattr -c clears the quarantine mark your browser put on the download: macOS won't run a program Apple hasn't notarized while it has that mark):",
              ],
              command: `xattr -c ${shellWord(tarball, shell)} && tar xzf ${shellWord(tarball, shell)} && ${cdInto(folder, tarball, shell)} && ${register(`./${name}`)}`,
            },
            {
              words: [`If your browser unpacked it already, in Terminal, in the folder ${folder ?? "it unpacked"}:`],
              command: `xattr -c ${name} && ${register(`./${name}`)}`,
            },
          ],
        },
        ...fromSource,
      ];
    }
    case "win": {
      // The zip's files are at its top, so that Extract All's folder, named like the zip, holds the .exe.
      const zip = fileName(downloads.windowsZip, ".zip", releaseFile("windowsZip", version, name));
      return [
        {
          title: "Windows",
          steps: [
            {
              words: [
                ...get(downloads.windowsZip, zip),
                ` and unpack it (right-click it, Extract All). In the unpacked folder, double-click ${name}.exe, answer y, and give it this extension's id, ${extensionId} (if Windows says it protected your PC: More info, Run anyway). Or, in PowerShell in that folder:`,
              ],
              command: register(`.\\${name}.exe`),
            },
          ],
        },
        ...fromSource,
      ];
    }
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

/**
 * The folder a tarball called `tarball` holds: its name less `.tar.gz` when it is named as the release names such
 * a file (release_tarball packs one folder named like the file), else unknown (null): a download address of another name,
 * such as a stable `...-latest.tar.gz`, says nothing of the version in the folder's name.
 */
function heldFolder(key: keyof Downloads, tarball: string): string | null {
  return isReleaseFile(key, tarball) ? tarballFolder(tarball) : null;
}

/** The `cd` into the folder the tarball holds: by name when it is known, else the folder `tar` lists first. */
function cdInto(folder: string | null, tarball: string, shell: Shell): string {
  return folder === null ? `cd "$(tar tzf ${shellWord(tarball, shell)} | head -n 1)"` : `cd ${shellWord(folder, shell)}`;
}

/** The OS as the page names it. */
export function osName(os: string): string {
  return { linux: "Linux", mac: "macOS", win: "Windows", cros: "ChromeOS", android: "Android" }[os] ?? os;
}
