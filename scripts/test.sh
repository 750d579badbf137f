#!/usr/bin/env bash
# The test command. It sets up what the tests need where it is missing (scripts/setup.sh), then runs them all:
# formatting, lints, the Rust tests, the Linux arm64, macOS and Windows cross builds' checks, the shim's tests
# and the end-to-end tests in real browsers. CI runs exactly this (.ci/run), so what passes there is what the
# README's command runs. scripts/test.sh --help gives the options.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/setup.sh
. scripts/setup.sh

usage() {
  cat <<'USAGE'
Usage: scripts/test.sh [--quick]

Installs what the tests need where it is missing, then runs every test, stopping at the first that fails:
  cargo fmt --check, cargo clippy --all-targets -- -D warnings, cargo test,
  scripts/cross/linux-arm64.sh check, scripts/cross/macos.sh check, scripts/cross/windows.sh check,
  (cd extension-shim && npm ci && npm test), (cd e2e && npm ci && npm test)
What needs root (Debian's packages, the kernel's setting for arm64 programs) is installed as root, or through
sudo; without either, it stops before any test and says the one command that installs it.

Options:
  --quick     format, lints, the Rust tests and the shim's tests only: no cross builds, no browsers
  -h, --help  this text
USAGE
}

quick=false
case "${1:-}" in
  "") ;;
  --quick) quick=true ;;
  -h | --help) usage; exit 0 ;;
  *) echo "test.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
esac
[ $# -le 1 ] || { echo "test.sh: one option at most (see --help)" >&2; exit 2; }

# Everything is set up before the first test, so that a machine that can't be set up stops before any test
# rather than halfway through.
if "$quick"; then
  setup rust lint c node python || exit 2
else
  setup rust lint c deb node python browsers linux-arm64 linux-arm64-run macos windows windows-run || exit 2
fi

timings=()
# run <name> <command>...: one step, timed, so that the summary says where the time goes.
run() {
  local name=$1 start=$SECONDS
  shift
  echo "test.sh: $name: $*"
  "$@"
  timings+=("$(printf '%5ds  %s' $((SECONDS - start)) "$name")")
}
shim_tests() { (cd extension-shim && npm ci && npm test); }
browser_tests() { (cd e2e && npm ci && npm test); }

run "format" cargo fmt --check
run "lints" cargo clippy --all-targets -- -D warnings
run "Rust tests" cargo test
if ! "$quick"; then
  run "Linux arm64" scripts/cross/linux-arm64.sh check
  run "macOS" scripts/cross/macos.sh check
  run "Windows" scripts/cross/windows.sh check
fi
# The shim's npm test builds it into extension-shim/demo/lib/, which the browser tests load.
run "shim" shim_tests
if ! "$quick"; then
  run "browsers" browser_tests
fi
echo "test.sh: every test passed, in $((SECONDS / 60)) min $((SECONDS % 60)) s:"
printf '  %s\n' "${timings[@]}"
