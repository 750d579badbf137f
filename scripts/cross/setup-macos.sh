#!/usr/bin/env bash
# The one-time setup for the macOS cross build (scripts/cross/macos.sh), on Debian or Ubuntu: rustup's two
# Apple targets, and zig and cargo-zigbuild from PyPI at the versions pinned in requirements-macos.txt, in a
# virtualenv of their own (target/zig-venv) so that the system's Python is left alone. It needs python3
# with venv (Debian's python3-venv). Does nothing that is done already; .ci/run runs it every time.
set -euo pipefail
cd "$(dirname "$0")/../.."

installed=$(rustup target list --installed)
for target in x86_64-apple-darwin aarch64-apple-darwin; do
  grep -qx "$target" <<<"$installed" || rustup target add "$target"
done

venv=target/zig-venv
requirements=scripts/cross/requirements-macos.txt
# The virtualenv keeps a copy of the requirements it was made from, so that a changed pin remakes it.
if ! cmp -s "$requirements" "$venv/requirements-macos.txt" 2>/dev/null; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements"
  cp "$requirements" "$venv/requirements-macos.txt"
fi
