# shellcheck shell=bash
# The one interface of every cross target's script (scripts/cross/linux-arm64.sh, macos.sh, windows.sh):
#
#   scripts/cross/<target>.sh setup                               installs what building and checking it need
#   scripts/cross/<target>.sh build --out DIR [--host-name NAME]  builds its release binary into DIR, prints its path
#   scripts/cross/<target>.sh check                               builds it and checks it as far as this machine can
#
# scripts/release.sh builds every target through `build` and packs each binary as scripts/release-files.sh says;
# scripts/test.sh runs every `check`. A target's script sets CROSS_TARGET, CROSS_BUILD_PARTS and CROSS_CHECK_PARTS
# (scripts/setup.sh's parts that its build and its check need) and CROSS_TITLE (the system's name in messages),
# defines cross_build and cross_check, and ends
# with `cross_main "$@"`. Each of the three sets up what it needs first, so any of them works on a fresh clone.

# shellcheck source=scripts/setup.sh
. scripts/setup.sh
# shellcheck source=scripts/extension-ids.sh
. scripts/extension-ids.sh
# shellcheck source=scripts/release-files.sh
. scripts/release-files.sh

# The developer's host name every check builds a release for, besides the default host: not com.example.mail_cache,
# which the binary's help text holds already, so that finding this one in a binary proves it was baked in.
# shellcheck disable=SC2034 # read by the targets' checks
CROSS_VENDOR_HOST_NAME=org.vendor_test.mail_cache
# Its command, package and file names, by the one rule (scripts/extension-ids.sh).
# shellcheck disable=SC2034 # read by the targets' checks
CROSS_VENDOR_COMMAND=$(host_command "$CROSS_VENDOR_HOST_NAME")

cross_usage() {
  cat <<USAGE
Usage: scripts/cross/$CROSS_TARGET.sh setup
       scripts/cross/$CROSS_TARGET.sh build --out DIR [--host-name NAME]
       scripts/cross/$CROSS_TARGET.sh check

  setup   installs what building and checking the $CROSS_TITLE build need, where missing (scripts/setup.sh:
          Debian's packages as root or through sudo, rustup's targets as you)
  build   builds the $CROSS_TITLE release binary and writes it to DIR, named as the host's command
          (llm-cache-host, or for --host-name com.example.mail_cache com.example.mail-cache; .exe for Windows),
          with the host name baked in; prints the binary's path
  check   builds the $CROSS_TITLE release files as scripts/release.sh does and checks them as far as this
          machine can
USAGE
}

cross_fail() {
  echo "$CROSS_TARGET.sh: $1" >&2
  exit 2
}

# cross_build_as OUT HOST_NAME: the target's release binary for that host, written into OUT as the host's command,
# and its path printed. The host name is baked in at build time (LLM_CACHE_HOST_NAME), as for the Linux build;
# the default host's build has none, so that it is the same build whatever the caller's environment holds.
cross_build_as() {
  local out=$1 host_name=$2
  mkdir -p "$out"
  out=$(cd "$out" && pwd)
  (
    if [ "$host_name" = "$DEFAULT_HOST_NAME" ]; then unset LLM_CACHE_HOST_NAME; else export LLM_CACHE_HOST_NAME=$host_name; fi
    # Built without SOURCE_DATE_EPOCH (release.sh sets it for the archives): LMDB's build reruns when it changes,
    # so a release after a check would otherwise build everything again.
    unset SOURCE_DATE_EPOCH
    cross_build "$out" "$(host_command "$host_name")"
  )
}

cross_main() {
  local command=${1:-}
  [ $# -gt 0 ] && shift
  case "$command" in
    setup)
      [ $# -eq 0 ] || cross_fail "setup takes no options (see --help)"
      setup "${CROSS_CHECK_PARTS[@]}" || exit 2
      ;;
    build)
      local out='' host_name=$DEFAULT_HOST_NAME
      while [ $# -gt 0 ]; do
        case "$1" in
          --out | --host-name)
            [ $# -ge 2 ] && [ -n "$2" ] || cross_fail "$1 needs a value (see --help)"
            if [ "$1" = --out ]; then out=$2; else host_name=$2; fi
            shift 2
            ;;
          *) cross_fail "unknown option $1 (see --help)" ;;
        esac
      done
      [ -n "$out" ] || cross_fail "build needs --out DIR (see --help)"
      is_host_name "$host_name" || cross_fail "\"$host_name\" is not a host name: $HOST_NAME_RULE"
      setup "${CROSS_BUILD_PARTS[@]}" || exit 2
      cross_build_as "$out" "$host_name"
      ;;
    check)
      [ $# -eq 0 ] || cross_fail "check takes no options (see --help)"
      setup "${CROSS_CHECK_PARTS[@]}" || exit 2
      cross_check
      ;;
    -h | --help) cross_usage ;;
    *)
      cross_usage >&2
      exit 2
      ;;
  esac
}
