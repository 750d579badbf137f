# shellcheck shell=bash
# The names of the release files and how their archives are made, in one place for scripts/release.sh and the
# cross builds (scripts/cross/*.sh). The install page names the same files (extension-shim/src/pages/
# release-files.ts); extension-shim/test/release-files.test.ts runs release_file below to check they agree.

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
# own, so that the same commit gives the same bytes. Run from the repository's root.
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
