#!/usr/bin/env bash
# CI's proof of the Linux arm64 release on an x86_64 machine, in two parts:
#  1. The Rust tests against arm64 code, under qemu-user. The unit tests are built for arm64 and run under
#     qemu through cargo's runner. The integration tests drive the arm64 release binary, the one the
#     release packages, which the kernel starts under qemu through binfmt_misc (LLM_CACHE_TEST_BINARY;
#     tests/common/mod.rs); the tests themselves run natively, because qemu-user 7.2 (Debian 12's) now and
#     then hangs the child when a program with threads forks, as a test starting the host does: seen here
#     as a child stuck on a futex before its exec, holding the host's stdin open, so the test never ended.
#     Both run optimized, as shipped: the debug build is so slow under emulation that the suite takes well
#     over half an hour (measured: the unit tests alone 5 min, against 19 s optimized).
#  2. scripts/release.sh's arm64 .deb and tarball: the package's fields, the same files, modes and manifests
#     as the native .deb, the binary the tests drove, answering hello over pipes, Depends that name the
#     packages dpkg-shlibdeps names for the native binary, and the checksums; and with a developer's own
#     --host-name, the arm64 files named after it and the name baked into their binary.
# The machine needs scripts/cross/setup-linux-arm64.sh once.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/cross/linux-arm64.sh
. scripts/cross/linux-arm64.sh

fail() {
  echo "test-linux-arm64: $1" >&2
  exit 1
}

arm64_check_setup || fail "see above"
grep -qx enabled /proc/sys/fs/binfmt_misc/qemu-aarch64 2>/dev/null \
  || fail "the kernel hands arm64 programs to no emulator (binfmt_misc): run scripts/cross/setup-linux-arm64.sh"
[ -e /etc/qemu-binfmt/aarch64/lib/ld-linux-aarch64.so.1 ] \
  || fail "qemu finds no arm64 C library under /etc/qemu-binfmt/aarch64: run scripts/cross/setup-linux-arm64.sh"

echo "test-linux-arm64: the unit tests, built for arm64, under qemu-user"
arm64_cargo test --release --locked --quiet --lib --bins
echo "test-linux-arm64: the integration tests, against the arm64 release binary under qemu-user"
tested=$(unset LLM_CACHE_HOST_NAME; arm64_build)
LLM_CACHE_TEST_BINARY=$PWD/$tested cargo test --locked --quiet --test '*'

echo "test-linux-arm64: the release's arm64 files"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
scripts/release.sh --targets linux,linux-arm64 --out "$out/dist" >/dev/null
version=$(target/release/llm-cache-host --version | sed -n 's/^llm-cache-host //p')
deb=$out/dist/llm-cache-host_${version}_arm64.deb
native_deb=$out/dist/llm-cache-host_${version}_$(dpkg --print-architecture).deb
tarball=$out/dist/llm-cache-host-$version-aarch64-linux.tar.gz
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

binary=$out/arm64/usr/bin/llm-cache-host
readelf -h "$binary" | grep -q 'Machine: *AArch64' || fail "$binary is not an arm64 ELF: $(readelf -h "$binary" | grep Machine)"
cmp "$binary" "$tested" || fail "the package's binary is not the one the tests drove ($tested)"
tar -xzf "$tarball" -C "$out"
cmp "$binary" "$out/llm-cache-host-$version-aarch64-linux/llm-cache-host" || fail "the tarball's binary is not the package's"
for file in README.md LICENSE LICENSE-MIT LICENSE-APACHE; do
  cmp "$file" "$out/llm-cache-host-$version-aarch64-linux/$file" || fail "the tarball's $file is not the repository's"
done
# The packaged binary itself, started as a browser starts it: one hello frame in (a native-endian length,
# little-endian on both), one reply out.
reply=$(printf '\025\000\000\000{"id":1,"op":"hello"}' | LLM_CACHE_DIR=$out/data "$binary" chrome-extension://testextensionaaaaaaaaaaaaaaaaaa/ | tail -c +5)
grep -q '"ok":true' <<<"$reply" || fail "the packaged arm64 binary did not answer hello: $reply"

# Depends: symbol_depends (which gives the arm64 package its Depends) must agree with dpkg-shlibdeps on the
# native binary, the packages the same and no version lower, and the arm64 package must name the same packages.
as_lines() { tr ',' '\n' | sed -n 's/^ *\([^ ]*\) (>= \([^)]*\))$/\1 \2/p'; }
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
scripts/release.sh --targets linux,linux-arm64 --host-name com.example.mail_cache --extension-id abcdefghijklmnopabcdefghijklmnop \
  --out "$out/vendor" >/dev/null
vendor_deb=$out/vendor/mail-cache_${version}_arm64.deb
[ -f "$vendor_deb" ] && [ -f "$out/vendor/mail-cache-$version-aarch64-linux.tar.gz" ] \
  || fail "release.sh --host-name com.example.mail_cache wrote $(ls "$out/vendor"), not mail-cache's arm64 files"
dpkg-deb -x "$vendor_deb" "$out/vendor-arm64"
vendor_binary=$out/vendor-arm64/usr/bin/mail-cache
readelf -h "$vendor_binary" | grep -q 'Machine: *AArch64' || fail "$vendor_binary is not an arm64 ELF"
"$vendor_binary" manifest --browser chromium --path /usr/bin/mail-cache --extension-id abcdefghijklmnopabcdefghijklmnop \
  | grep -qF '"name": "com.example.mail_cache",' || fail "the arm64 mail-cache binary was not built for com.example.mail_cache"
[ -f "$out/vendor-arm64/etc/chromium/native-messaging-hosts/com.example.mail_cache.json" ] \
  || fail "$vendor_deb has no com.example.mail_cache.json manifest"

echo "test-linux-arm64: ok: $(basename "$deb") ($(dpkg-deb -f "$deb" Depends)), $(basename "$tarball") and mail-cache's"
