#!/usr/bin/env bash
# Builds the Windows x86_64 host with mingw-w64 and packs it for people to download:
#   <out>/<name>-<version>-x86_64-windows.zip   at its top (Extract All makes the folder): <name>.exe (self-installing:
#                                               double-clicked it explains itself and offers to install),
#                                               README.md, LICENSE, LICENSE-MIT, LICENSE-APACHE
# and prints the zip's file name on stdout (scripts/release.sh adds it to SHA256SUMS).
#
# Usage: scripts/cross/windows.sh OUT_DIR [NAME]
#   NAME      the artifact's and the binary's name (default: llm-cache-host)
# Environment: SOURCE_DATE_EPOCH, the files' timestamps in the zip (default: the last commit's time),
# and whatever cargo reads (CARGO_TARGET_DIR, the host name's settings), passed through to the build.
#
# One-time setup (Debian; .ci/run does it when missing):
#   apt-get install gcc-mingw-w64-x86-64 && rustup target add x86_64-pc-windows-gnu
set -euo pipefail
cd "$(dirname "$0")/../.."

[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: scripts/cross/windows.sh OUT_DIR [NAME]" >&2; exit 2; }
out=$1
name=${2:-llm-cache-host}
target=x86_64-pc-windows-gnu
command -v x86_64-w64-mingw32-gcc >/dev/null \
  || { echo "windows.sh: x86_64-w64-mingw32-gcc is missing: apt-get install gcc-mingw-w64-x86-64" >&2; exit 2; }
rustup target list --installed 2>/dev/null | grep -qx "$target" \
  || { echo "windows.sh: the Rust target is missing: rustup target add $target" >&2; exit 2; }
command -v python3 >/dev/null || { echo "windows.sh: python3 is missing (it writes the zip)" >&2; exit 2; }

# build.rs links advapi32 for this target (LMDB needs it; lmdb-master-sys adds it only on Windows hosts).
cargo build --release --locked --quiet --target "$target"
target_dir=${CARGO_TARGET_DIR:-target}
binary=$target_dir/$target/release/llm-cache-host.exe
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
[ -n "$version" ] || { echo "windows.sh: found no version in Cargo.toml" >&2; exit 2; }
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}

mkdir -p "$out"
zip_base=$name-$version-x86_64-windows
# Python's zipfile writes the members in the order given, each with the one timestamp and fixed
# permissions, so the same commit gives the same bytes (zip(1) would take the files' own times and
# the local time zone).
python3 - "$out/$zip_base.zip" "$binary" "$name.exe" README.md LICENSE LICENSE-MIT LICENSE-APACHE <<'PY'
import os, sys, time, zipfile

zip_path, binary, exe_name, *docs = sys.argv[1:]
# A zip's timestamps are DOS times (from 1980, two-second steps), in no time zone: UTC here.
stamp = time.gmtime(max(int(os.environ["SOURCE_DATE_EPOCH"]), 315532800))[:6]
members = [(binary, exe_name, 0o755)] + [(doc, doc, 0o644) for doc in docs]
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
echo "$zip_base.zip"
