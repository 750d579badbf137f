#!/usr/bin/env bash
# Builds the macOS release on Linux: one universal2 binary (x86_64 and arm64, minimum macOS 11) and its
# tarball, <command>-<version>-universal2-macos.tar.gz, laid out as the Linux tarball is. Called by
# scripts/release.sh; scripts/cross/test-macos.sh checks what it writes. Prints the tarball's path.
#
# Usage: scripts/cross/macos.sh --out DIR [--command NAME] [--target-dir DIR]
#        scripts/cross/macos.sh --check-setup   (only checks that the one-time setup was done)
#   --command     the binary's name in the tarball and the files' prefix (default llm-cache-host)
#   --target-dir  cargo's target folder (default target); LLM_CACHE_HOST_NAME, when set, is baked in as
#                 for the Linux build
#
# No Apple SDK is needed: cargo-zigbuild links with zig, whose own macOS libc stubs stand in for the SDK,
# and zig also compiles LMDB's C. Both come from PyPI, pinned in scripts/cross/requirements-macos.txt, and
# the two Rust targets from rustup: scripts/cross/setup-macos.sh installs them once. zig's linker signs
# each arm64 slice ad hoc as Apple's does (the kernel kills an unsigned arm64 process), so no separate
# codesign step is needed; test-macos.sh checks that signature, hashes included.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/release-files.sh
. scripts/release-files.sh

fail() {
  echo "macos.sh: $1" >&2
  exit 2
}

out=
command=llm-cache-host
target_dir=target
check_only=false
while [ $# -gt 0 ]; do
  case "$1" in
    --check-setup) check_only=true; shift ;;
    --out | --command | --target-dir)
      [ $# -ge 2 ] && [ -n "$2" ] || fail "$1 needs a value"
      case "$1" in
        --out) out=$2 ;;
        --command) command=$2 ;;
        --target-dir) target_dir=$2 ;;
      esac
      shift 2
      ;;
    *) fail "unknown option $1 (see the comment at the top of scripts/cross/macos.sh)" ;;
  esac
done

# The one-time setup's virtualenv, when that is where zig and cargo-zigbuild are.
venv=$PWD/target/zig-venv
[ -x "$venv/bin/cargo-zigbuild" ] && export PATH=$venv/bin:$PATH
command -v cargo-zigbuild >/dev/null || fail "cargo-zigbuild is missing: run scripts/cross/setup-macos.sh once"
for target in x86_64-apple-darwin aarch64-apple-darwin; do
  rustup target list --installed | grep -qx "$target" || fail "the Rust target $target is missing: run scripts/cross/setup-macos.sh once"
done
"$check_only" && exit 0
[ -n "$out" ] || fail "--out DIR is needed"

# The minimum macOS: without it zig writes its own default (13.0 with the pinned zig; newer zigs raise it),
# and older Macs refuse the binary. 11 is the first macOS on arm64 Macs, and the oldest Rust's arm64 target
# supports.
export MACOSX_DEPLOYMENT_TARGET=11.0
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# Built without SOURCE_DATE_EPOCH (release.sh sets it for the archives, after its own build), since LMDB's
# build reruns when it changes: a release after test-macos.sh then reuses that build.
env -u SOURCE_DATE_EPOCH cargo zigbuild --release --locked --quiet --target universal2-apple-darwin --target-dir "$target_dir" >"$log" 2>&1 \
  || { cat "$log" >&2; fail "the universal2 build failed (above)"; }
# rustc asks xcrun for an SDK to pass the linker and warns when there is none; zig needs none, so that
# warning is left out and anything else shown.
grep -v -e 'invoking `"xcrun"' -e '^ *|' -e '^ *= \(note\|help\): .*SDK' -e '^$' "$log" >&2 || true
binary=$target_dir/universal2-apple-darwin/release/llm-cache-host

version=$(cargo pkgid --quiet)
version=${version##*[#@]}
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
mkdir -p "$out"
tarball=$(cd "$out" && pwd)/$(release_file macosTarball "$command" "$version")
release_tarball "$binary" "$command" "$tarball"
echo "$tarball"
