/**
 * What the install page tells a person to run, per OS, with this extension's id filled in: with its browser's
 * flag, and quoted for the OS's shell (install-command.ts). Pure: the page (install.ts) asks the browser for the
 * OS and the id and renders these steps as text; the tests check the commands themselves, and run the POSIX
 * ones.
 */

import { browserOf, hostCommand, hostNameArgument, idArguments, sourceInstallCommand, type BrowserFamily } from "../install-command.js";
import { NATIVE_HOST_NAME } from "../protocol.js";

export type { BrowserFamily } from "../install-command.js";

/**
 * The host release this shim goes with, whose package names the steps give. The shim and the host are
 * released together at one version (Cargo.toml's; test/pages.test.ts checks they agree).
 */
export const HOST_RELEASE = "0.1.0";

/** `chrome.runtime.getPlatformInfo().os`: the OSes the browsers report. */
export type PlatformOs = "linux" | "mac" | "win" | "android" | "cros" | "openbsd" | "fuchsia";

/** One thing to do: words, and the command to type when there is one. */
export interface InstallStep {
  text: string;
  command?: string;
}

/** One way to install (a package, a tarball, from source), as steps in order. */
export interface InstallWay {
  title: string;
  steps: InstallStep[];
}

/** Where to get the release files and the source. */
export const RELEASES_HINT = "from the llm-cache-host release";

/**
 * The ways to install the host on `os` for the extension `extensionId`, most usual first. Empty on an OS with
 * no native messaging (ChromeOS, Android): the extension then keeps its cache in the browser. `hostName` is the
 * host the extension connects to: its release files and its command are named by it as scripts/release.sh
 * names them (`com.example.mail_cache`: `mail-cache_<version>_amd64.deb`, `mail-cache`), and each `install`
 * names it with `--host-name`, so that any build of the binary registers under it.
 */
export function installWays(
  os: string,
  extensionId: string,
  browser: BrowserFamily = browserOf(extensionId),
  version = HOST_RELEASE,
  hostName: string = NATIVE_HOST_NAME,
): InstallWay[] {
  const name = hostCommand(hostName);
  const register = (binary: string) => `${binary} install ${idArguments(extensionId, os, browser)}${hostNameArgument(hostName)}`;
  const deb = `${name}_${version}_amd64.deb`;
  const tarballFolder = `${name}-${version}-x86_64-linux`;
  const tarball = `${tarballFolder}.tar.gz`;
  const fromSource: InstallWay = {
    title: "From source (needs Rust)",
    steps: [
      {
        text: `In a checkout of llm-cache-host, build the release binary and install it for this extension${os === "win" ? ", in PowerShell" : ""}:`,
        command: sourceInstallCommand(extensionId, os, browser, hostName),
      },
    ],
  };
  switch (os) {
    case "linux":
      return [
        {
          title: "Debian or Ubuntu (x86_64)",
          steps: [
            { text: `Download ${deb} ${RELEASES_HINT}, then in its folder:`, command: `sudo apt install ./${deb}` },
            {
              text: "If this page still says the host isn't used, the package was built for other extensions; register it for this one:",
              command: register(name),
            },
          ],
        },
        {
          title: "Any Linux (x86_64)",
          steps: [
            { text: `Download ${tarball} ${RELEASES_HINT}, then in its folder:`, command: `tar xzf ${tarball} && cd ${tarballFolder} && ${register(`./${name}`)}` },
          ],
        },
        fromSource,
      ];
    case "mac":
      return [
        {
          title: "macOS",
          steps: [
            { text: `Download the ${name} binary ${RELEASES_HINT} (or build it: cargo build --release), then in its folder:`, command: register(`./${name}`) },
          ],
        },
        fromSource,
      ];
    case "win":
      return [
        {
          title: "Windows",
          steps: [
            { text: `Download ${name}.exe ${RELEASES_HINT}, then in its folder, in PowerShell:`, command: register(`.\\${name}.exe`) },
          ],
        },
        fromSource,
      ];
    default:
      return [];
  }
}

/** The OS as the page names it. */
export function osName(os: string): string {
  return { linux: "Linux", mac: "macOS", win: "Windows", cros: "ChromeOS", android: "Android" }[os] ?? os;
}
