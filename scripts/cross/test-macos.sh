#!/usr/bin/env bash
# Checks the macOS release as far as a Linux machine can: builds it with scripts/cross/macos.sh (as
# scripts/release.sh does), then checks the tarball's name and contents and, in the binary itself (macho.py),
# both architectures, the minimum macOS (11.0) of each, the libraries they load, and the arm64 slice's ad hoc
# signature with every page hash; macho.py then breaks copies of the binary to show each check refuses them;
# and a build with a developer's own host name.
# Nothing here runs the binary: that needs a Mac (docs/distributing.md lists what to check by hand).
# Needs the one-time setup, scripts/cross/setup-macos.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/release-files.sh
. scripts/release-files.sh

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0
failed=0
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

tarball=$(scripts/cross/macos.sh --out "$work/first")
version=$(cargo pkgid --quiet)
version=${version##*[#@]}
name=$(release_file macosTarball llm-cache-host "$version")
folder=${name%.tar.gz}
check "the tarball is named $name" test "$(basename "$tarball")" = "$name"

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
check "the binary is the universal2 build" cmp -s "$work/$folder/llm-cache-host" target/universal2-apple-darwin/release/llm-cache-host
check "a second build writes the same bytes" \
  cmp -s "$tarball" "$(scripts/cross/macos.sh --out "$work/second")"
check "the binary: x86_64 and arm64, each for macOS 11.0, arm64 signed ad hoc, and each check refuses a broken copy" \
  python3 scripts/cross/macho.py "$work/$folder/llm-cache-host" --arches x86_64,arm64 --min-os 11.0 --signed arm64 --self-test

# A developer's own host name (as release.sh --host-name builds it): the files named after it, the name baked
# into both architectures' code (the binary can't run here to print it).
vendor=$(LLM_CACHE_HOST_NAME=org.vendor_test.mail_cache scripts/cross/macos.sh --out "$work/vendor" --command mail-cache)
check "with --host-name org.vendor_test.mail_cache the tarball is mail-cache's" \
  test "$(basename "$vendor")" = "$(release_file macosTarball mail-cache "$version")"
tar -xzf "$vendor" -C "$work/vendor"
vendor_binary=$work/vendor/$(basename "$vendor" .tar.gz)/mail-cache
check "both architectures of mail-cache hold org.vendor_test.mail_cache" \
  python3 -c 'import sys; data = open(sys.argv[1], "rb").read(); sys.exit(data.count(b"org.vendor_test.mail_cache") < 2)' "$vendor_binary"
echo "macOS release: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
