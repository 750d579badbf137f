#!/usr/bin/env bash
# The one-time setup for the Linux arm64 build (scripts/cross/linux-arm64.sh) and for its tests under
# emulation (scripts/cross/test-linux-arm64.sh), on an x86_64 Debian or Ubuntu, as root: Debian's cross
# compiler and arm64 C library, qemu-user, rustup's arm64 target, and two settings of the machine that
# let the kernel start arm64 programs. Does nothing that is done already; .ci/run runs it every time.
set -euo pipefail

missing=()
command -v aarch64-linux-gnu-gcc >/dev/null || missing+=(gcc-aarch64-linux-gnu)
[ -e /usr/aarch64-linux-gnu/lib/libc.so.6 ] || missing+=(libc6-dev-arm64-cross)
command -v qemu-aarch64-static >/dev/null || missing+=(qemu-user-static)
command -v update-binfmts >/dev/null || missing+=(binfmt-support)
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup-linux-arm64: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
rustup target list --installed | grep -qx aarch64-unknown-linux-gnu || rustup target add aarch64-unknown-linux-gnu

# The tests start the host binary as a program (CARGO_BIN_EXE_*), so the kernel itself must hand arm64
# programs to qemu: binfmt_misc, which qemu-user-static's package describes but can't register where no
# init system runs binfmt-support's service (a container). update-binfmts mounts binfmt_misc if needed.
grep -qx enabled /proc/sys/fs/binfmt_misc/qemu-aarch64 2>/dev/null || update-binfmts --enable qemu-aarch64
# qemu looks for an arm64 program's dynamic loader and libraries under its built-in prefix,
# /etc/qemu-binfmt/aarch64, unless QEMU_LD_PREFIX says otherwise; pointing the prefix at the cross
# C library lets programs started with an empty environment run too (tests/readme.rs starts one so).
[ -e /etc/qemu-binfmt/aarch64 ] || { mkdir -p /etc/qemu-binfmt && ln -s /usr/aarch64-linux-gnu /etc/qemu-binfmt/aarch64; }
