#!/usr/bin/env bash
# Linux arm64 (aarch64), cross-built on an x86_64 Debian with Debian's aarch64 gcc, and tested there under
# qemu-user. scripts/cross/linux-arm64.sh --help gives the interface, which every cross target shares
# (scripts/cross/target.sh); scripts/release.sh packs the binary as it packs its own (a .deb and a tarball).
#
# check proves the arm64 release on this machine, in two parts:
#  1. The Rust tests against arm64 code, under qemu-user. The unit tests are built for arm64 and run under
#     qemu through cargo's runner. The integration tests drive the arm64 release binary, the one the
#     release packages, which the kernel starts under qemu through binfmt_misc (LLM_CACHE_TEST_BINARY;
#     tests/common/mod.rs); the tests themselves run natively, because qemu-user 7.2 (Debian 12's) at times
#     hangs the child when a program with threads forks, as a test starting the host does: seen as a child
#     stuck on a futex before its exec, holding the host's stdin open, so the test never ends.
#     Both run optimized, as shipped: the debug build is so slow under emulation that the suite takes well
#     over half an hour (measured: the unit tests alone 5 min, against 19 s optimized). The integration tests
#     run are those of ARM64_TESTS below.
#  2. scripts/release.sh's arm64 .deb and tarball: the package's fields, the same files, modes and manifests
#     as the native .deb, the binary the tests drove, answering hello over pipes, Depends that name the
#     packages dpkg-shlibdeps names for the native binary, and the checksums; and with a developer's own
#     --host-name, the arm64 files named after it and the name baked into their binary.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/cross/target.sh
. scripts/cross/target.sh

CROSS_TARGET=linux-arm64
CROSS_TITLE="Linux arm64"
CROSS_BUILD_PARTS=(rust c linux-arm64)
CROSS_CHECK_PARTS=(rust c deb linux-arm64 linux-arm64-run)
ARM64_TARGET=aarch64-unknown-linux-gnu

# The integration tests run against the arm64 binary: those of what the processor and its memory model can change
# (the store's files, locks and durability under kills, framing, compression, concurrent hosts, the stack that deep
# input meets, the protocol's transcripts). The rest (the command line, installs, the fuzzer's and the memory
# bound's long runs) test the same Rust on any processor, and run natively in `cargo test`; under emulation they
# would add minutes for nothing the arm64 build could change. Fewer kills than natively, for the same reason.
ARM64_TESTS=(replay crash recovery store_faults store_quota verify concurrency compression stdout bounded)
ARM64_CRASH_ROUNDS=50

# arm64_cargo <cargo arguments>...: cargo for the arm64 target, with Debian's cross compiler as the linker
# and as LMDB's C compiler (lmdb-master-sys builds LMDB from source through the cc crate), and qemu-user
# as the runner of the test binaries that cargo test starts (any program those start in turn runs under
# qemu through binfmt_misc, which the setup registers).
arm64_cargo() {
  CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc \
    CC_aarch64_unknown_linux_gnu=aarch64-linux-gnu-gcc \
    CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER=qemu-aarch64-static \
    cargo "$@" --target "$ARM64_TARGET"
}

# It stays in cargo's default target folder whatever the host name: only the top crate is rebuilt for another
# name, and target/aarch64-unknown-linux-gnu is no default host anyone installs from.
cross_build() { # cross_build OUT COMMAND
  arm64_cargo build --release --locked --quiet >&2
  install -m 0755 "target/$ARM64_TARGET/release/llm-cache-host" "$1/$2"
  echo "$1/$2"
}

cross_check() {
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
  fail() {
    echo "linux-arm64.sh check: $1" >&2
    exit 1
  }

  # The arm64 files are compared with this machine's own, which are amd64's.
  [ "$(dpkg --print-architecture)" = amd64 ] || fail "runs on an x86_64 (amd64) machine, not $(dpkg --print-architecture)"

  # The release for a developer's own host name is built first (and checked below): what the check builds after it
  # is the default host's, which later builds (the end-to-end tests' release) then find made, rather than a build
  # for the other name.
  scripts/release.sh --targets linux,linux-arm64 --host-name "$CROSS_VENDOR_HOST_NAME" --extension-id abcdefghijklmnopabcdefghijklmnop \
    --out "$out/vendor" >/dev/null

  echo "linux-arm64.sh check: the unit tests, built for arm64, under qemu-user"
  arm64_cargo test --release --locked --quiet --lib --bins
  echo "linux-arm64.sh check: the integration tests of the store and the protocol, against the arm64 release binary under qemu-user"
  local tested name tests=()
  tested=$(cross_build_as "$out/tested" "$DEFAULT_HOST_NAME")
  for name in "${ARM64_TESTS[@]}"; do tests+=(--test "$name"); done
  LLM_CACHE_TEST_BINARY=$tested LLM_CACHE_CRASH_ROUNDS=$ARM64_CRASH_ROUNDS cargo test --locked --quiet "${tests[@]}"

  echo "linux-arm64.sh check: the release's arm64 files"
  scripts/release.sh --targets linux,linux-arm64 --out "$out/dist" >/dev/null
  local version deb native_deb tarball folder
  version=$(release_version)
  deb=$out/dist/$(release_file debArm64 llm-cache-host "$version")
  native_deb=$out/dist/$(release_file debAmd64 llm-cache-host "$version")
  tarball=$out/dist/$(release_file tarballAarch64 llm-cache-host "$version")
  folder=$out/$(basename "$tarball" .tar.gz)
  [ -f "$deb" ] && [ -f "$tarball" ] || fail "release.sh wrote no $(basename "$deb") or $(basename "$tarball")"

  [ "$(dpkg-deb -f "$deb" Package)" = llm-cache-host ] || fail "$deb: Package is not llm-cache-host"
  [ "$(dpkg-deb -f "$deb" Architecture)" = arm64 ] || fail "$deb: Architecture is $(dpkg-deb -f "$deb" Architecture)"
  [ "$(dpkg-deb -f "$deb" Version)" = "$version" ] || fail "$deb: Version is not $version"
  # The same files with the same modes and owners as the native package (sizes and times aside).
  listing() { dpkg-deb -c "$1" | awk '{ print $1, $2, $6 }'; }
  diff <(listing "$native_deb") <(listing "$deb") || fail "$deb holds other files than $(basename "$native_deb") (above)"
  dpkg-deb -x "$deb" "$out/arm64"
  dpkg-deb -x "$native_deb" "$out/native"
  # The manifests: the same bytes, since the native binary printed both.
  diff -r "$out/native/etc" "$out/arm64/etc" && diff -r "$out/native/usr/lib" "$out/arm64/usr/lib" \
    || fail "the arm64 package's manifests differ from the native one's (above)"

  local binary=$out/arm64/usr/bin/llm-cache-host
  readelf -h "$binary" | grep -q 'Machine: *AArch64' || fail "$binary is not an arm64 ELF: $(readelf -h "$binary" | grep Machine)"
  cmp "$binary" "$tested" || fail "the package's binary is not the one the tests drove ($tested)"
  tar -xzf "$tarball" -C "$out"
  cmp "$binary" "$folder/llm-cache-host" || fail "the tarball's binary is not the package's"
  local file
  for file in README.md LICENSE LICENSE-MIT LICENSE-APACHE; do
    cmp "$file" "$folder/$file" || fail "the tarball's $file is not the repository's"
  done
  # The packaged binary itself, started as a browser starts it: one hello frame in (a native-endian length,
  # little-endian on both), one reply out.
  local reply
  reply=$(printf '\025\000\000\000{"id":1,"op":"hello"}' | LLM_CACHE_DIR=$out/data "$binary" chrome-extension://testextensionaaaaaaaaaaaaaaaaaa/ | tail -c +5)
  grep -q '"ok":true' <<<"$reply" || fail "the packaged arm64 binary did not answer hello: $reply"

  # Depends: symbol_depends (which gives the arm64 package its Depends) must agree with dpkg-shlibdeps on the
  # native binary, the packages the same and no version lower, and the arm64 package must name the same packages.
  as_lines() { tr ',' '\n' | sed -n 's/^ *\([^ ]*\) (>= \([^)]*\))$/\1 \2/p'; }
  local shlibdeps symbols package least theirs
  shlibdeps=$(dpkg-deb -f "$native_deb" Depends | as_lines)
  symbols=$(symbol_depends target/release/llm-cache-host | as_lines)
  [ "$(cut -d' ' -f1 <<<"$shlibdeps")" = "$(cut -d' ' -f1 <<<"$symbols")" ] \
    || fail "symbol_depends names other packages than dpkg-shlibdeps for the native binary: $symbols, against $shlibdeps"
  while read -r package least; do
    theirs=$(sed -n "s/^$package //p" <<<"$shlibdeps")
    dpkg --compare-versions "$least" ge "$theirs" \
      || fail "symbol_depends asks $package >= $least for the native binary, lower than dpkg-shlibdeps' $theirs"
  done <<<"$symbols"
  [ "$(dpkg-deb -f "$deb" Depends | as_lines | cut -d' ' -f1)" = "$(cut -d' ' -f1 <<<"$shlibdeps")" ] \
    || fail "$deb depends on $(dpkg-deb -f "$deb" Depends), not on the native package's $(dpkg-deb -f "$native_deb" Depends)"

  (cd "$out/dist" && sha256sum --quiet -c SHA256SUMS) || fail "SHA256SUMS doesn't match the files"
  for file in "$deb" "$tarball"; do
    grep -q " $(basename "$file")\$" "$out/dist/SHA256SUMS" || fail "SHA256SUMS has no line for $(basename "$file")"
  done

  # A developer's own host name reaches the arm64 files too: named after it, with it baked into the binary.
  local vendor_deb vendor_tarball
  vendor_deb=$out/vendor/$(release_file debArm64 "$CROSS_VENDOR_COMMAND" "$version")
  vendor_tarball=$out/vendor/$(release_file tarballAarch64 "$CROSS_VENDOR_COMMAND" "$version")
  [ -f "$vendor_deb" ] && [ -f "$vendor_tarball" ] \
    || fail "release.sh --host-name $CROSS_VENDOR_HOST_NAME wrote $(ls "$out/vendor"), not $CROSS_VENDOR_COMMAND's arm64 files"
  dpkg-deb -x "$vendor_deb" "$out/vendor-arm64"
  local vendor_binary=$out/vendor-arm64/usr/bin/$CROSS_VENDOR_COMMAND
  readelf -h "$vendor_binary" | grep -q 'Machine: *AArch64' || fail "$vendor_binary is not an arm64 ELF"
  "$vendor_binary" manifest --browser chromium --path "/usr/bin/$CROSS_VENDOR_COMMAND" --extension-id abcdefghijklmnopabcdefghijklmnop \
    | grep -qF "\"name\": \"$CROSS_VENDOR_HOST_NAME\"," || fail "the arm64 $CROSS_VENDOR_COMMAND binary was not built for $CROSS_VENDOR_HOST_NAME"
  [ -f "$out/vendor-arm64/etc/chromium/native-messaging-hosts/$CROSS_VENDOR_HOST_NAME.json" ] \
    || fail "$vendor_deb has no $CROSS_VENDOR_HOST_NAME.json manifest"

  echo "linux-arm64.sh check: ok: $(basename "$deb") ($(dpkg-deb -f "$deb" Depends)), $(basename "$tarball") and $CROSS_VENDOR_COMMAND's"
}

cross_main "$@"
