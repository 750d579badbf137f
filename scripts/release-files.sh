# shellcheck shell=bash
# The release files: their version, their names and how each is made, in one place for scripts/release.sh and the
# cross targets' checks (scripts/cross/*.sh). The install page names the same files (extension-shim/src/pages/
# release-files.ts); extension-shim/test/release-files.test.ts runs release_file below to check they agree.
# Run from the repository's root.

# release_version: the version the release files are named with: the package's, in Cargo.toml's [package] table,
# which cargo also builds into the binary's --version. Read here without cargo, so that it is the same text
# whichever toolchain, target or build folder is in use.
release_version() {
  local version
  version=$(sed -n '/^\[package\]/,/^\[/ s/^version = "\(.*\)"$/\1/p' Cargo.toml)
  [ -n "$version" ] || { echo "release_version: Cargo.toml's [package] has no version" >&2; return 2; }
  echo "$version"
}

# release_file <download key> <command> <version>: the file a release target is written as. The keys are the
# install page's download settings (extension-shim/src/pages/config.ts); the command is the binary's name
# (llm-cache-host). Each archive holds one folder named like the file without its extension, except the
# Windows zip, whose files are at its top: Windows' "Extract All" and Expand-Archive unpack a zip into a
# folder named like it already.
release_file() {
  local command=$2 version=$3
  case "$1" in
    debAmd64) echo "${command}_${version}_amd64.deb" ;;
    debArm64) echo "${command}_${version}_arm64.deb" ;;
    tarballX86_64) echo "$command-$version-x86_64-linux.tar.gz" ;;
    tarballAarch64) echo "$command-$version-aarch64-linux.tar.gz" ;;
    windowsZip) echo "$command-$version-x86_64-windows.zip" ;;
    macosTarball) echo "$command-$version-universal2-macos.tar.gz" ;;
    *) echo "release_file: no release file $1" >&2; return 2 ;;
  esac
}

# release_tarball <binary> <command> <output.tar.gz>: the tarball of one binary, as every tarball target
# makes it: a folder named like the file holding the binary (as <command>), README.md and the licenses, its
# members in name order, owned by root, with one timestamp (SOURCE_DATE_EPOCH), and gzip leaving out its
# own, so that the same commit gives the same bytes.
release_tarball() {
  local binary=$1 command=$2 output=$3
  local folder staging
  folder=$(basename "$output" .tar.gz)
  staging=$(mktemp -d)
  mkdir -m 0755 "$staging/$folder"
  install -m 0755 "$binary" "$staging/$folder/$command"
  install -m 0644 README.md LICENSE LICENSE-MIT LICENSE-APACHE "$staging/$folder/"
  tar -C "$staging" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@${SOURCE_DATE_EPOCH:?}" -cf - "$folder" \
    | gzip -n -9 >"$output"
  rm -rf "$staging"
}

# release_zip <binary> <name in the zip> <output.zip>: the Windows zip: the binary, README.md and the licenses at
# its top (Windows' "Extract All" makes the folder), each with one timestamp (SOURCE_DATE_EPOCH) and fixed
# permissions, in this order, so that the same commit gives the same bytes (zip(1) would take the files' own
# times and the local time zone).
release_zip() {
  local binary=$1 member=$2 output=$3
  python3 - "$output" "${SOURCE_DATE_EPOCH:?}" "$binary" "$member" README.md LICENSE LICENSE-MIT LICENSE-APACHE <<'PY'
import os, sys, time, zipfile

zip_path, epoch, binary, member, *docs = sys.argv[1:]
# A zip's timestamps are DOS times (from 1980, two-second steps), in no time zone: UTC here.
stamp = time.gmtime(max(int(epoch), 315532800))[:6]
members = [(binary, member, 0o755)] + [(doc, doc, 0o644) for doc in docs]
with zipfile.ZipFile(zip_path + ".partial", "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
    for source, name, mode in members:
        info = zipfile.ZipInfo(name, date_time=stamp)
        info.compress_type = zipfile.ZIP_DEFLATED
        info.create_system = 3  # Unix, so that the mode below is read by unzip on Linux and macOS.
        info.external_attr = (0o100000 | mode) << 16
        with open(source, "rb") as data:
            archive.writestr(info, data.read(), compresslevel=9)
os.replace(zip_path + ".partial", zip_path)
PY
}

# symbol_depends <binary>: the .deb's Depends for a glibc binary of any architecture, from the ELF itself.
# dpkg-shlibdeps can't do it for a foreign architecture on this machine: it finds the libraries only in the
# cross packages (with -l/usr/aarch64-linux-gnu/lib), whose shlibs name them libc6:arm64 (>= 2.36) and
# libgcc-s1-arm64-cross, a package no arm64 system has. Debian's symbols files for libc6 and libgcc-s1 give
# each symbol the release that brought in its version node (GLIBC_2.34@GLIBC_2.34 2.34, GCC_3.0 3.0), so
# the newest node the binary needs from a library is the version its package must have, which is what
# dpkg-shlibdeps computes from them. Every library the binary links must be one of those two packages':
# any other is refused, so that a new dependency is never left out. `scripts/cross/linux-arm64.sh check`
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
