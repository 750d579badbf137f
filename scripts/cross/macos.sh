#!/usr/bin/env bash
# macOS, built on Linux: one universal2 binary (x86_64 and arm64, minimum macOS 11), which scripts/release.sh packs
# in a tarball laid out as the Linux one is. scripts/cross/macos.sh --help gives the interface, which every cross
# target shares (scripts/cross/target.sh).
#
# No Apple SDK is needed: cargo-zigbuild links with zig, whose own macOS libc stubs stand in for the SDK, and zig
# also compiles LMDB's C. Both come from PyPI, pinned in scripts/cross/requirements-macos.txt, in target/zig-venv,
# and the two Rust targets from rustup (setup installs them). zig's linker signs each arm64 slice ad hoc as Apple's
# does (the kernel kills an unsigned arm64 process), so no separate codesign step is needed; check checks that
# signature, hashes included.
#
# check builds the release's macOS tarball with scripts/release.sh, then checks its name and contents and, in the
# binary itself (macho.py), both architectures, the minimum macOS (11.0) of each, the libraries they load, and the
# arm64 slice's ad hoc signature with every page hash; macho.py then breaks copies of the binary to show each check
# refuses them; and a release with a developer's own host name. Nothing here runs the binary: that needs a Mac
# (docs/distributing.md lists what to check by hand).
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/cross/target.sh
. scripts/cross/target.sh

CROSS_TARGET=macos
CROSS_TITLE="macOS"
CROSS_BUILD_PARTS=(rust c macos)
CROSS_CHECK_PARTS=(rust c deb macos)
UNIVERSAL2=target/universal2-apple-darwin/release/llm-cache-host

# It stays in cargo's default target folder whatever the host name: only the top crate is rebuilt for another
# name, and target/universal2-apple-darwin is no default host anyone installs from.
cross_build() { # cross_build OUT COMMAND
  export PATH=$PWD/target/zig-venv/bin:$PATH
  # The minimum macOS: without it zig writes its own default (13.0 with the pinned zig; newer zigs raise it),
  # and older Macs refuse the binary. 11 is the first macOS on arm64 Macs, and the oldest Rust's arm64 target
  # supports.
  export MACOSX_DEPLOYMENT_TARGET=11.0
  local log
  log=$(mktemp)
  cargo zigbuild --release --locked --quiet --target universal2-apple-darwin >"$log" 2>&1 \
    || { cat "$log" >&2; rm -f "$log"; cross_fail "the universal2 build failed (above)"; }
  # rustc asks xcrun for an SDK to pass the linker and warns when there is none; zig needs none, so that
  # warning is left out and anything else shown.
  grep -v -e 'invoking `"xcrun"' -e '^ *|' -e '^ *= \(note\|help\): .*SDK' -e '^$' "$log" >&2 || true
  rm -f "$log"
  install -m 0755 "$UNIVERSAL2" "$1/$2"
  echo "$1/$2"
}

cross_check() {
  local passed=0 failed=0
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  check() { # check <what> <command>...: runs the command, counting and saying whether it passed
    local what=$1
    shift
    if "$@"; then
      echo "ok: $what"
      passed=$((passed + 1))
    else
      echo "FAILED: $what" >&2
      failed=$((failed + 1))
    fi
  }

  # The release for a developer's own host name is built first (and checked below): what the check builds after it
  # is the default host's, which later builds (the end-to-end tests' release) then find made, rather than a build
  # for the other name.
  scripts/release.sh --targets linux,macos --host-name "$CROSS_VENDOR_HOST_NAME" --extension-id abcdefghijklmnopabcdefghijklmnop \
    --out "$work/vendor" >/dev/null

  local version name folder tarball
  version=$(release_version)
  name=$(release_file macosTarball llm-cache-host "$version")
  folder=${name%.tar.gz}
  tarball=$work/first/$name
  scripts/release.sh --targets linux,macos --out "$work/first" >/dev/null
  check "the tarball is named $name" test -f "$tarball"

  # The members, their modes and owners, in order: the same layout as the Linux tarball.
  listing() {
    tar -tvzf "$tarball" --numeric-owner | awk '{ print $1, $2, $NF }'
  }
  expected_listing() {
    printf '%s\n' "drwxr-xr-x 0/0 $folder/" "-rw-r--r-- 0/0 $folder/LICENSE" "-rw-r--r-- 0/0 $folder/LICENSE-APACHE" \
      "-rw-r--r-- 0/0 $folder/LICENSE-MIT" "-rw-r--r-- 0/0 $folder/README.md" "-rwxr-xr-x 0/0 $folder/llm-cache-host"
  }
  check "the tarball holds $folder/ with the binary, README.md and the licenses, owned by root" \
    diff <(expected_listing) <(listing)
  tar -xzf "$tarball" -C "$work"
  same_docs() {
    local file
    for file in README.md LICENSE LICENSE-MIT LICENSE-APACHE; do cmp -s "$file" "$work/$folder/$file" || return 1; done
  }
  check "README.md and the licenses are the repository's" same_docs
  check "the binary is the universal2 build" cmp -s "$work/$folder/llm-cache-host" "$UNIVERSAL2"
  scripts/release.sh --targets linux,macos --out "$work/second" >/dev/null
  check "a second build writes the same bytes" cmp -s "$tarball" "$work/second/$name"
  check "the binary: x86_64 and arm64, each for macOS 11.0, arm64 signed ad hoc, and each check refuses a broken copy" \
    python3 scripts/cross/macho.py "$work/$folder/llm-cache-host" --arches x86_64,arm64 --min-os 11.0 --signed arm64 --self-test

  # A developer's own host name (as release.sh --host-name builds it): the files named after it, the name baked
  # into both architectures' code (the binary can't run here to print it).
  local vendor vendor_binary
  vendor=$work/vendor/$(release_file macosTarball "$CROSS_VENDOR_COMMAND" "$version")
  check "with --host-name $CROSS_VENDOR_HOST_NAME the tarball is $CROSS_VENDOR_COMMAND's" test -f "$vendor"
  tar -xzf "$vendor" -C "$work/vendor"
  vendor_binary=$work/vendor/$(basename "$vendor" .tar.gz)/$CROSS_VENDOR_COMMAND
  check "both architectures of $CROSS_VENDOR_COMMAND hold $CROSS_VENDOR_HOST_NAME" \
    python3 -c 'import sys; data = open(sys.argv[1], "rb").read(); sys.exit(data.count(sys.argv[2].encode()) < 2)' "$vendor_binary" "$CROSS_VENDOR_HOST_NAME"
  echo "macOS release: $passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}

cross_main "$@"
