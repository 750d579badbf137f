# shellcheck shell=bash
# The Linux arm64 (aarch64) build, cross-compiled on an x86_64 Debian: sourced by scripts/release.sh, which
# packages the binary as it packages its own (package_linux), and by scripts/cross/test-linux-arm64.sh.
# The toolchain comes from scripts/cross/setup-linux-arm64.sh, once per machine.

ARM64_TARGET=aarch64-unknown-linux-gnu

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

# arm64_check_setup: says what is missing for the arm64 build, and fails, before anything is built.
arm64_check_setup() {
  local missing=()
  command -v aarch64-linux-gnu-gcc >/dev/null || missing+=("aarch64-linux-gnu-gcc (gcc-aarch64-linux-gnu)")
  [ -e /usr/aarch64-linux-gnu/lib/libc.so.6 ] || missing+=("the arm64 C library (libc6-dev-arm64-cross)")
  command -v readelf >/dev/null || missing+=("readelf (binutils)")
  rustup target list --installed 2>/dev/null | grep -qx "$ARM64_TARGET" || missing+=("rustup's $ARM64_TARGET target")
  if [ ${#missing[@]} -gt 0 ]; then
    echo "the arm64 build needs $(printf '%s, ' "${missing[@]}" | sed 's/, $//'): run scripts/cross/setup-linux-arm64.sh once" >&2
    return 2
  fi
}

# arm64_build: builds the arm64 release binary and prints its path. The environment goes to cargo as it is,
# so LLM_CACHE_HOST_NAME bakes a host name in as for the native build. It stays in cargo's default target
# folder whatever the name: only the top crate is rebuilt for another name, and
# target/aarch64-unknown-linux-gnu is no default host anyone installs from.
arm64_build() {
  arm64_cargo build --release --locked --quiet >&2
  echo "target/$ARM64_TARGET/release/llm-cache-host"
}

# symbol_depends <binary>: the .deb's Depends for a glibc binary of any architecture, from the ELF itself.
# dpkg-shlibdeps can't do it for a foreign architecture on this machine: it finds the libraries only in the
# cross packages (with -l/usr/aarch64-linux-gnu/lib), whose shlibs name them libc6:arm64 (>= 2.36) and
# libgcc-s1-arm64-cross, a package no arm64 system has. Debian's symbols files for libc6 and libgcc-s1 give
# each symbol the release that brought in its version node (GLIBC_2.34@GLIBC_2.34 2.34, GCC_3.0 3.0), so
# the newest node the binary needs from a library is the version its package must have, which is what
# dpkg-shlibdeps computes from them. Every library the binary links must be one of those two packages':
# any other is refused, so that a new dependency is never left out. scripts/cross/test-linux-arm64.sh
# checks this against dpkg-shlibdeps on the native binary.
symbol_depends() {
  local binary=$1 needed
  needed=$(readelf -d "$binary" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p') || return 2
  local soname libc=false libgcc=false
  for soname in $needed; do
    case "$soname" in
      libc.so.6 | libm.so.6 | libpthread.so.0 | libdl.so.2 | librt.so.1 | libutil.so.1 | ld-linux-*) libc=true ;;
      libgcc_s.so.1) libgcc=true ;;
      *)
        echo "symbol_depends: $binary needs $soname, which is in neither libc6 nor libgcc-s1: give its package here" >&2
        return 2
        ;;
    esac
  done
  # The newest version node with the prefix that the binary needs (readelf -V lists them as "Name: GLIBC_2.34").
  local versions depends=() version
  versions=$(readelf -V "$binary" | sed -n 's/.*Name: \(GLIBC\|GCC\)_\([0-9.]*\) .*/\1 \2/p' | sort -V)
  if "$libc"; then
    version=$(sed -n 's/^GLIBC //p' <<<"$versions" | tail -n 1)
    depends+=("libc6${version:+ (>= $version)}")
  fi
  if "$libgcc"; then
    version=$(sed -n 's/^GCC //p' <<<"$versions" | tail -n 1)
    depends+=("libgcc-s1${version:+ (>= $version)}")
  fi
  [ ${#depends[@]} -gt 0 ] || { echo "symbol_depends: $binary links no library" >&2; return 2; }
  printf '%s, ' "${depends[@]}" | sed 's/, $//'
}
