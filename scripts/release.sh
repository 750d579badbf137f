#!/usr/bin/env bash
# Builds the release binary and the Linux artifacts people install it from, in one go:
#   dist/llm-cache-host-<version>-<arch>-linux.tar.gz   the binary, README.md and the license files
#   dist/llm-cache-host_<version>_<debian arch>.deb      the binary at /usr/bin/llm-cache-host and every
#                                                        browser's system-wide host manifest
#   dist/llm-cache-host-<version>-x86_64-windows.zip     the Windows .exe, README.md and the licenses
#                                                        (scripts/cross/windows.sh)
#   dist/SHA256SUMS                                      every file's checksum, for `sha256sum -c`
# The manifests in the .deb are printed by the binary itself (`llm-cache-host manifest`), so they are
# exactly what `llm-cache-host install` writes. Run scripts/release.sh --help for the options.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/extension-ids.sh
. scripts/extension-ids.sh

usage() {
  cat <<'USAGE'
Usage: scripts/release.sh [OPTIONS]

Builds target/release/llm-cache-host (cargo build --release --locked), then writes to the output folder:
  llm-cache-host-<version>-<arch>-linux.tar.gz   llm-cache-host, README.md, LICENSE, LICENSE-MIT, LICENSE-APACHE
  llm-cache-host_<version>_<debian arch>.deb     /usr/bin/llm-cache-host and the host manifest for Chrome, Chromium,
                                                 Edge, Brave, Vivaldi and Firefox, system-wide
  llm-cache-host-<version>-x86_64-windows.zip    llm-cache-host.exe (Windows x86_64, self-installing), README.md and
                                                 the licenses (scripts/cross/windows.sh; needs gcc-mingw-w64-x86-64
                                                 and `rustup target add x86_64-pc-windows-gnu`)
  SHA256SUMS                                     checksums of them all (check with: cd dist && sha256sum -c SHA256SUMS)

Options:
  --extension-id ID           a Chrome extension id the .deb's manifests allow (repeatable); default: the demo
                              extension's, from extension-shim/demo/EXTENSION_ID.txt
  --firefox-extension-id ID   a Firefox add-on id the .deb's Firefox manifest allows (repeatable); default: the
                              demo add-on's, from extension-shim/demo/manifest.firefox.json
  --out DIR                   the output folder (default: dist)
  -h, --help                  this text

Environment (used when the matching flag is not given; ids separated by spaces or commas):
  RELEASE_EXTENSION_IDS, RELEASE_FIREFOX_EXTENSION_IDS
  RELEASE_MAINTAINER          the .deb's Maintainer field (default: llm-cache-host developers <llm-cache-host@browserx.dev>)
  SOURCE_DATE_EPOCH           the files' timestamps in both archives (default: the last commit's time)
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
while [ $# -gt 0 ]; do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --extension-id | --firefox-extension-id | --out)
      [ $# -ge 2 ] && [ -n "$2" ] || fail "$1 needs a value (see --help)"
      case "$1" in
        --extension-id) chrome_ids+=("$2") ;;
        --firefox-extension-id) firefox_ids+=("$2") ;;
        --out) out=$2 ;;
      esac
      shift 2
      ;;
    *) fail "unknown option $1 (see --help)" ;;
  esac
done
if [ ${#chrome_ids[@]} -eq 0 ]; then
  if [ -n "${RELEASE_EXTENSION_IDS:-}" ]; then
    read -r -a chrome_ids <<<"${RELEASE_EXTENSION_IDS//,/ }"
  else
    chrome_ids=("$(tr -d '[:space:]' <extension-shim/demo/EXTENSION_ID.txt)")
  fi
fi
if [ ${#firefox_ids[@]} -eq 0 ]; then
  if [ -n "${RELEASE_FIREFOX_EXTENSION_IDS:-}" ]; then
    read -r -a firefox_ids <<<"${RELEASE_FIREFOX_EXTENSION_IDS//,/ }"
  else
    # The demo's gecko id is the only "id" key in its Firefox manifest.
    demo_id=$(sed -n 's/^ *"id": *"\([^"]*\)".*/\1/p' extension-shim/demo/manifest.firefox.json)
    [ -n "$demo_id" ] || fail "found no add-on id in extension-shim/demo/manifest.firefox.json: pass --firefox-extension-id"
    firefox_ids=("$demo_id")
  fi
fi
[ ${#chrome_ids[@]} -gt 0 ] && [ ${#firefox_ids[@]} -gt 0 ] || fail "no ids in RELEASE_EXTENSION_IDS or RELEASE_FIREFOX_EXTENSION_IDS"
# The binary checks both kinds of id again when it prints the manifests.
for id in "${chrome_ids[@]}"; do
  is_chrome_extension_id "$id" || fail "\"$id\" is not a Chrome extension id: $CHROME_ID_RULE"
done
for id in "${firefox_ids[@]}"; do
  is_firefox_extension_id "$id" || fail "\"$id\" is not a Firefox add-on id: $FIREFOX_ID_RULE"
done
maintainer=${RELEASE_MAINTAINER:-llm-cache-host developers <llm-cache-host@browserx.dev>}
for tool in cargo dpkg dpkg-deb dpkg-shlibdeps sha256sum tar gzip; do
  command -v "$tool" >/dev/null || fail "$tool is missing (dpkg-shlibdeps is in Debian's dpkg-dev package: apt-get install dpkg-dev)"
done

id_flags=()
for id in "${chrome_ids[@]}"; do id_flags+=(--extension-id "$id"); done
for id in "${firefox_ids[@]}"; do id_flags+=(--firefox-extension-id "$id"); done

cargo build --release --locked --quiet
binary=target/release/llm-cache-host
# The binary's own check of every id, before anything is written.
"$binary" manifest --browser firefox --path /usr/bin/llm-cache-host "${id_flags[@]}" >/dev/null \
  || fail "the ids above are refused (the binary said why)"
version=$("$binary" --version | sed -n 's/^llm-cache-host \(.*\)$/\1/p')
[ -n "$version" ] || fail "$binary --version printed no version"
arch=$(uname -m)
deb_arch=$(dpkg --print-architecture)
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}

mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Both archives list their files in name order, owned by root, with one timestamp, and gzip leaves
# out its own, so the same commit gives the same bytes.
archive() { # archive <dir> <output.tar.gz> <member>...
  local dir=$1 output=$2
  shift 2
  tar -C "$dir" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$SOURCE_DATE_EPOCH" -cf - "$@" \
    | gzip -n -9 >"$output"
}

# The tarball: one folder named like the file, so that extracting it beside other things is tidy.
tar_name=llm-cache-host-$version-$arch-linux
mkdir -m 0755 "$work/$tar_name"
install -m 0755 "$binary" "$work/$tar_name/llm-cache-host"
install -m 0644 README.md LICENSE LICENSE-MIT LICENSE-APACHE "$work/$tar_name/"
archive "$work" "$out/$tar_name.tar.gz" "$tar_name"

# The .deb's tree, staged where dpkg-shlibdeps expects a package's files (debian/<package>/).
root=$work/debian/llm-cache-host
install -d -m 0755 "$root/DEBIAN" "$root/usr/bin" "$root/usr/share/doc/llm-cache-host"
install -m 0755 "$binary" "$root/usr/bin/llm-cache-host"
install -m 0644 README.md LICENSE LICENSE-MIT LICENSE-APACHE "$root/usr/share/doc/llm-cache-host/"
# Where each browser looks for hosts registered for every user. Chrome, Chromium, Edge and Firefox
# document theirs. Brave and Vivaldi document none: Chromium's source (chrome/common/chrome_paths.cc)
# gives builds that are not Google Chrome /etc/chromium, which is what `install --system` writes for
# them; other packages also use /etc/opt/brave and /etc/opt/vivaldi, so the manifest is there too.
# A manifest for a browser that isn't installed is never read.
manifest_dirs=(
  chrome:/etc/opt/chrome/native-messaging-hosts
  chromium:/etc/chromium/native-messaging-hosts
  edge:/etc/opt/edge/native-messaging-hosts
  brave:/etc/opt/brave/native-messaging-hosts
  vivaldi:/etc/opt/vivaldi/native-messaging-hosts
  firefox:/usr/lib/mozilla/native-messaging-hosts
)
for entry in "${manifest_dirs[@]}"; do
  browser=${entry%%:*}
  dir=$root${entry#*:}
  install -d -m 0755 "$dir"
  "$binary" manifest --browser "$browser" --path /usr/bin/llm-cache-host "${id_flags[@]}" >"$dir/com.browserx.llm_cache.json"
  chmod 0644 "$dir/com.browserx.llm_cache.json"
done
# mktemp made the staging folders 0700; the package's folders are 0755 like the ones above.
chmod 0755 "$work/debian" "$root"

depends=$(cd "$work" && printf 'Source: llm-cache-host\n\nPackage: llm-cache-host\nArchitecture: any\n' >debian/control \
  && dpkg-shlibdeps -O debian/llm-cache-host/usr/bin/llm-cache-host | sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || fail "dpkg-shlibdeps found no dependencies for $binary"
installed_size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
# The manifests are not conffiles: conffiles stay after `dpkg -r`, and a manifest left behind would
# point browsers at a binary that is gone. They are generated, and nobody should edit them in place.
{
  echo "Package: llm-cache-host"
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
  echo " This package registers the host for every user with Chrome, Chromium, Edge,"
  echo " Brave, Vivaldi and Firefox. Extensions allowed: ${chrome_ids[*]}."
  echo " Firefox add-ons allowed: ${firefox_ids[*]}."
} >"$root/DEBIAN/control"
chmod 0644 "$root/DEBIAN/control"
deb=$out/llm-cache-host_${version}_$deb_arch.deb
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null

# Windows x86_64: the zip with the self-installing .exe (mingw-w64; the script says what to install).
windows_zip=$(scripts/cross/windows.sh "$out" | tail -n 1)

(cd "$out" && sha256sum "$tar_name.tar.gz" "$(basename "$deb")" "$windows_zip" >SHA256SUMS)
echo "release.sh: wrote, in $out:"
(cd "$out" && ls -l "$tar_name.tar.gz" "$(basename "$deb")" "$windows_zip" SHA256SUMS)
