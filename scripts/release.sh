#!/usr/bin/env bash
# Builds the release binary and the artifacts people install it from, in one go:
#   dist/llm-cache-host-<version>-<arch>-linux.tar.gz   the binary, README.md and the license files
#   dist/llm-cache-host_<version>_<debian arch>.deb      the binary at /usr/bin/llm-cache-host and every
#                                                        browser's system-wide host manifest
#   dist/llm-cache-host-<version>-aarch64-linux.tar.gz  the same two for Linux arm64
#   dist/llm-cache-host_<version>_arm64.deb
#   dist/llm-cache-host-<version>-universal2-macos.tar.gz  the same tarball for macOS
#   dist/llm-cache-host-<version>-x86_64-windows.zip     the Windows .exe, README.md and the licenses
#   dist/SHA256SUMS                                      every file's checksum, for `sha256sum -c`
# Each file is named by scripts/release-files.sh. The other systems' binaries come from their cross targets
# (scripts/cross/<target>.sh build), and this script packs them as it packs its own. It sets up what each build
# needs first (scripts/setup.sh), so that a fresh clone needs no other step.
# With --host-name com.example.mail_cache the names are the developer's: each binary is built with that
# host name baked in (LLM_CACHE_HOST_NAME), and the command, package and files are com.example.mail-cache.
# The manifests in the .deb are printed by the binary itself (`llm-cache-host manifest`), so they are
# exactly what `llm-cache-host install` writes. Run scripts/release.sh --help for the options.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/extension-ids.sh
. scripts/extension-ids.sh
# shellcheck source=scripts/release-files.sh
. scripts/release-files.sh
# shellcheck source=scripts/setup.sh
. scripts/setup.sh

usage() {
  cat <<'USAGE'
Usage: scripts/release.sh [OPTIONS]

Builds target/release/llm-cache-host (cargo build --release --locked), then writes to the output folder:
  llm-cache-host-<version>-<arch>-linux.tar.gz   llm-cache-host, README.md, LICENSE, LICENSE-MIT, LICENSE-APACHE
  llm-cache-host_<version>_<debian arch>.deb     /usr/bin/llm-cache-host and the host manifest for Chrome, Chromium,
                                                 Edge, Brave, Vivaldi and Firefox, system-wide
  llm-cache-host-<version>-aarch64-linux.tar.gz  the same two for Linux arm64 (aarch64), cross-built
  llm-cache-host_<version>_arm64.deb             (scripts/cross/linux-arm64.sh)
  llm-cache-host-<version>-universal2-macos.tar.gz   the same for macOS 11 and later, Intel and Apple silicon
                                                 (scripts/cross/macos.sh)
  llm-cache-host-<version>-x86_64-windows.zip    llm-cache-host.exe (Windows x86_64, self-installing), README.md and
                                                 the licenses (scripts/cross/windows.sh)
  SHA256SUMS                                     checksums of them all (check with: cd dist && sha256sum -c SHA256SUMS)

What each build needs is installed first where missing (scripts/setup.sh): Debian's packages as root, or
through sudo; rustup's targets and the macOS build's zig as you. Where that can't be done (not root, and no
sudo), the files that need nothing more are written, and the end says the one command that adds the rest.

Options:
  --host-name NAME            the host name your extension passes to connectNative, e.g. com.example.mail_cache
                              (default: com.browserx.llm_cache). The binary is built with it baked in
                              (target/release stays the default host's build); the
                              command, the package and the files above are named by the whole name with
                              _ as - (com.example.mail-cache, com.example.mail-cache_<version>_<debian arch>.deb, /usr/bin/com.example.mail-cache),
                              the manifests NAME.json, and each user's data goes to ~/.local/share/NAME
  --extension-id ID           a Chrome extension id the .deb's manifests allow (repeatable)
  --firefox-extension-id ID   a Firefox add-on id the .deb's Firefox manifest allows (repeatable)
                              With ids of one kind only, the .deb registers the host with those browsers
                              only. With neither, the demo's: extension-shim/demo/EXTENSION_ID.txt and the
                              gecko id in extension-shim/demo/manifest.firefox.json
  --targets LIST              the files to write, comma separated: linux, linux-arm64, macos, windows (default:
                              all). The Linux files for this machine are written either way: their build checks
                              the ids and gives the version.
                              `--targets linux` skips the cross builds, for tests that check only the .deb
  --out DIR                   the output folder (default: dist)
  -h, --help                  this text

Environment (used when the matching flag is not given; ids separated by spaces or commas):
  RELEASE_EXTENSION_IDS, RELEASE_FIREFOX_EXTENSION_IDS, RELEASE_HOST_NAME, RELEASE_TARGETS
  RELEASE_MAINTAINER          the .deb's Maintainer field (default: llm-cache-host developers <llm-cache-host@browserx.dev>)
  SOURCE_DATE_EPOCH           the files' timestamps in the archives (default: the last commit's time)
USAGE
}

fail() {
  echo "release.sh: $1" >&2
  exit 2
}

# Options are read and checked before the build, which takes a minute or more: a typo should cost a second.
chrome_ids=()
firefox_ids=()
out=dist
host_name=${RELEASE_HOST_NAME:-$DEFAULT_HOST_NAME}
targets=${RELEASE_TARGETS:-linux,linux-arm64,macos,windows}
while [ $# -gt 0 ]; do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --extension-id | --firefox-extension-id | --out | --host-name | --targets)
      [ $# -ge 2 ] && [ -n "$2" ] || fail "$1 needs a value (see --help)"
      case "$1" in
        --extension-id) chrome_ids+=("$2") ;;
        --firefox-extension-id) firefox_ids+=("$2") ;;
        --out) out=$2 ;;
        --host-name) host_name=$2 ;;
        --targets) targets=$2 ;;
      esac
      shift 2
      ;;
    *) fail "unknown option $1 (see --help)" ;;
  esac
done
if [ ${#chrome_ids[@]} -eq 0 ] && [ -n "${RELEASE_EXTENSION_IDS:-}" ]; then
  read -r -a chrome_ids <<<"${RELEASE_EXTENSION_IDS//,/ }"
fi
if [ ${#firefox_ids[@]} -eq 0 ] && [ -n "${RELEASE_FIREFOX_EXTENSION_IDS:-}" ]; then
  read -r -a firefox_ids <<<"${RELEASE_FIREFOX_EXTENSION_IDS//,/ }"
fi
# The demo's ids only for a release that names none: a developer's package for a Chrome extension must not
# let the demo add-on use its host in Firefox.
if [ ${#chrome_ids[@]} -eq 0 ] && [ ${#firefox_ids[@]} -eq 0 ]; then
  [ -z "${RELEASE_EXTENSION_IDS:-}${RELEASE_FIREFOX_EXTENSION_IDS:-}" ] \
    || fail "no ids in RELEASE_EXTENSION_IDS or RELEASE_FIREFOX_EXTENSION_IDS"
  chrome_ids=("$(tr -d '[:space:]' <extension-shim/demo/EXTENSION_ID.txt)")
  # The demo's gecko id is the only "id" key in its Firefox manifest.
  demo_id=$(sed -n 's/^ *"id": *"\([^"]*\)".*/\1/p' extension-shim/demo/manifest.firefox.json)
  [ -n "$demo_id" ] || fail "found no add-on id in extension-shim/demo/manifest.firefox.json: pass --firefox-extension-id"
  firefox_ids=("$demo_id")
fi
# The binary checks both kinds of id again when it prints the manifests.
for id in "${chrome_ids[@]}"; do
  is_chrome_extension_id "$id" || fail "\"$id\" is not a Chrome extension id: $CHROME_ID_RULE"
done
for id in "${firefox_ids[@]}"; do
  is_firefox_extension_id "$id" || fail "\"$id\" is not a Firefox add-on id: $FIREFOX_ID_RULE"
done
is_host_name "$host_name" || fail "\"$host_name\" is not a host name: $HOST_NAME_RULE"
name=$(host_command "$host_name")
arm64=false
macos=false
windows=false
for target in ${targets//,/ }; do
  case "$target" in
    linux) ;;
    linux-arm64) arm64=true ;;
    macos) macos=true ;;
    windows) windows=true ;;
    *) fail "unknown target \"$target\" in --targets or RELEASE_TARGETS: the targets are linux, linux-arm64, macos and windows" ;;
  esac
done
maintainer=${RELEASE_MAINTAINER:-llm-cache-host developers <llm-cache-host@browserx.dev>}
command -v dpkg >/dev/null || fail "dpkg is missing: the release is made on Debian or Ubuntu"
deb_arch=$(dpkg --print-architecture)
# On an arm64 machine the native build is the arm64 one.
[ "$deb_arch" != arm64 ] || arm64=false
cross=()
if "$arm64"; then cross+=(linux-arm64); fi
if "$macos"; then cross+=(macos); fi
if "$windows"; then cross+=(windows); fi
# Every build's needs, installed in one go. A cross target this machine can't be set up for is left out, and
# named at the end with the command that adds it; without this machine's own build there is nothing to release.
setup --partial rust c deb "${cross[@]}" || exit 2
unmet=("${SETUP_UNMET[@]}")
for part in "${unmet[@]}"; do
  case "$part" in
    linux-arm64) arm64=false ;;
    macos) macos=false ;;
    windows) windows=false ;;
    *) fail "this machine lacks $SETUP_LACKS. This one command installs it; then run scripts/release.sh again:
  $SETUP_COMMAND" ;;
  esac
done

id_flags=()
for id in "${chrome_ids[@]}"; do id_flags+=(--extension-id "$id"); done
for id in "${firefox_ids[@]}"; do id_flags+=(--firefox-extension-id "$id"); done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The host name is baked in at build time: the binary then knows it wherever it is copied and whatever
# its file is called. Only the binary's own crate (src/main.rs) reads it, so another name recompiles that
# one file. Its binary is copied out, and target/release/llm-cache-host built back as the default host's
# for ./install.sh and everyone else.
if [ "$host_name" = "$DEFAULT_HOST_NAME" ]; then
  env -u LLM_CACHE_HOST_NAME cargo build --release --locked --quiet
  binary=target/release/llm-cache-host
else
  LLM_CACHE_HOST_NAME=$host_name cargo build --release --locked --quiet
  binary=$work/native/$name
  install -D -m 0755 target/release/llm-cache-host "$binary"
  env -u LLM_CACHE_HOST_NAME cargo build --release --locked --quiet
fi
# The binary's own check of every id, before anything is written, and of the name it was built with.
check_browser=chromium
[ ${#chrome_ids[@]} -gt 0 ] || check_browser=firefox
baked=$("$binary" manifest --browser "$check_browser" --path "/usr/bin/$name" "${id_flags[@]}") \
  || fail "the ids above are refused (the binary said why)"
grep -qF "\"name\": \"$host_name\"," <<<"$baked" || fail "$binary was not built for $host_name: $baked"
version=$(release_version)
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}

mkdir -p "$out"
out=$(cd "$out" && pwd)

# The tarball and the .deb of one Linux binary, for its Debian architecture. The native binary prints the
# manifests whatever the package's architecture: their text names the installed path and the ids, nothing
# of the processor. Each file is named as scripts/release-files.sh says, which the install page follows.
artifacts=()
package_linux() { # package_linux <binary> <debian arch>
  local ship=$1 deb_arch=$2
  local tarball_key deb_key tarball root depends installed_size deb
  case "$deb_arch" in
    amd64) tarball_key=tarballX86_64 deb_key=debAmd64 ;;
    arm64) tarball_key=tarballAarch64 deb_key=debArm64 ;;
    *) fail "no release files are named for $deb_arch (scripts/release-files.sh)" ;;
  esac
  # The tarball: one folder named like the file, so that extracting it beside other things is tidy.
  tarball=$(release_file "$tarball_key" "$name" "$version")
  release_tarball "$ship" "$name" "$out/$tarball"
  artifacts+=("$tarball")

  # The .deb's tree, staged where dpkg-shlibdeps expects a package's files (debian/<package>/).
  root=$work/$deb_arch/debian/$name
  install -d -m 0755 "$root/DEBIAN" "$root/usr/bin" "$root/usr/share/doc/$name"
  install -m 0755 "$ship" "$root/usr/bin/$name"
  install -m 0644 README.md LICENSE LICENSE-MIT LICENSE-APACHE "$root/usr/share/doc/$name/"
  # Every browser's manifest for every user, in each folder the binary's own table says a browser reads them
  # from (the folders `doctor` checks), for the ids given: a family with none gets no manifest, as the host is
  # not registered with those browsers. The files are the bytes `install` writes, readable by everyone.
  "$binary" manifest --root "$root" --path "/usr/bin/$name" "${id_flags[@]}" >/dev/null
  # mktemp made the staging folders 0700; the package's folders are 0755 like the ones above.
  chmod 0755 "$work/$deb_arch" "$work/$deb_arch/debian" "$root"

  # dpkg-shlibdeps reads this machine's libraries, so it serves the native binary; a cross-built one's
  # Depends come from its own ELF (symbol_depends in scripts/release-files.sh says why).
  if [ "$ship" = "$binary" ]; then
    depends=$(cd "$work/$deb_arch" && printf 'Source: %s\n\nPackage: %s\nArchitecture: any\n' "$name" "$name" >debian/control \
      && dpkg-shlibdeps -O "debian/$name/usr/bin/$name" | sed -n 's/^shlibs:Depends=//p')
  else
    depends=$(symbol_depends "$ship") || fail "no Depends for $ship (said above)"
  fi
  [ -n "$depends" ] || fail "found no dependencies for $ship"
  installed_size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
  # The manifests are not conffiles: conffiles stay after `dpkg -r`, and a manifest left behind would
  # point browsers at a binary that is gone. They are generated, and nobody should edit them in place.
  {
    echo "Package: $name"
    echo "Version: $version"
    echo "Architecture: $deb_arch"
    echo "Maintainer: $maintainer"
    echo "Installed-Size: $installed_size"
    echo "Depends: $depends"
    echo "Section: utils"
    echo "Priority: optional"
    echo "Description: local cache for LLM agents in browser extensions (native messaging host)"
    echo " llm-cache-host keeps an LLM browser agent's intermediate results out of its"
    echo " context window: extensions store and read them through native messaging, and"
    echo " the host keeps them in a local LMDB store in each user's data directory."
    echo " ."
    echo " This package registers the host $host_name for every user"
    [ ${#chrome_ids[@]} -gt 0 ] && echo " with Chrome, Chromium, Edge, Brave and Vivaldi, for extensions ${chrome_ids[*]}."
    [ ${#firefox_ids[@]} -gt 0 ] && echo " with Firefox, for add-ons ${firefox_ids[*]}."
    true
  } >"$root/DEBIAN/control"
  chmod 0644 "$root/DEBIAN/control"
  deb=$(release_file "$deb_key" "$name" "$version")
  dpkg-deb --root-owner-group -Zxz --build "$root" "$out/$deb" >/dev/null
  artifacts+=("$deb")
}
package_linux "$binary" "$deb_arch"

# The other systems' binaries, each built by its cross target with the same host name baked in, and packed as
# scripts/release-files.sh says.
cross_binary() { # cross_binary TARGET: builds the target's binary into the work folder and prints its path
  scripts/cross/"$1".sh build --out "$work/$1" --host-name "$host_name"
}
if "$arm64"; then
  arm64_binary=$(cross_binary linux-arm64)
  package_linux "$arm64_binary" arm64
fi
if "$macos"; then
  macos_binary=$(cross_binary macos)
  macos_tarball=$(release_file macosTarball "$name" "$version")
  release_tarball "$macos_binary" "$name" "$out/$macos_tarball"
  artifacts+=("$macos_tarball")
fi
if "$windows"; then
  windows_binary=$(cross_binary windows)
  windows_zip=$(release_file windowsZip "$name" "$version")
  release_zip "$windows_binary" "$name.exe" "$out/$windows_zip"
  artifacts+=("$windows_zip")
fi

(cd "$out" && sha256sum "${artifacts[@]}" >SHA256SUMS)
echo "release.sh: wrote, in $out:"
(cd "$out" && ls -l "${artifacts[@]}" SHA256SUMS)
if [ ${#unmet[@]} -gt 0 ]; then
  echo "release.sh: left out the ${unmet[*]} files: this machine lacks $SETUP_LACKS. This one command installs it; then run scripts/release.sh again:" >&2
  echo "  $SETUP_COMMAND" >&2
  exit 1
fi
