/**
 * The names of the host's release files, as scripts/release.sh writes them: the install page gives these names
 * where the developer gave no download address that ends in one. The names are made in one place on each side,
 * scripts/release-files.sh for the release and this module for the page; test/release-files.test.ts runs the
 * script and checks that both give the same name for every file.
 */

import { hostCommand } from "../install-command.js";
import type { Downloads } from "./config.js";

/** Each release file's name, from the binary's name and the version: release_file's table, line for line. */
const RELEASE_FILES: Record<keyof Downloads, (command: string, version: string) => string> = {
  debAmd64: (command, version) => `${command}_${version}_amd64.deb`,
  debArm64: (command, version) => `${command}_${version}_arm64.deb`,
  tarballX86_64: (command, version) => `${command}-${version}-x86_64-linux.tar.gz`,
  tarballAarch64: (command, version) => `${command}-${version}-aarch64-linux.tar.gz`,
  windowsZip: (command, version) => `${command}-${version}-x86_64-windows.zip`,
  macosTarball: (command, version) => `${command}-${version}-universal2-macos.tar.gz`,
};

/**
 * The release file for a download key, at `version`, for the binary `command`: the host's command
 * (install-command.ts's hostCommand), which names its release files too.
 */
export function releaseFile(key: keyof Downloads, version: string, command: string = hostCommand()): string {
  return RELEASE_FILES[key](command, version);
}

/**
 * Whether `file` is named as the release names the file for a download key, for any command and version (a
 * version starts with a digit, as Cargo's do): only then does its name say which folder a tarball holds, since
 * release_tarball packs one folder named like the file.
 */
export function isReleaseFile(key: keyof Downloads, file: string): boolean {
  const escaped = RELEASE_FILES[key]("\u0001", "\u0002").replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const source = escaped.replace("\u0001", "[a-z0-9][a-z0-9.+-]*").replace("\u0002", "[0-9][0-9A-Za-z.+~-]*");
  return new RegExp(`^${source}$`).test(file);
}

/**
 * The folder a release tarball unpacks to: its name without `.tar.gz`, since each holds one folder named like
 * itself (scripts/release-files.sh's release_tarball).
 */
export function tarballFolder(tarball: string): string {
  return tarball.endsWith(".tar.gz") ? tarball.slice(0, -".tar.gz".length) : tarball;
}
