#!/usr/bin/env bash
# Builds llm-cache-host and registers it with your browsers. The binary's own `install` command does
# the per-OS work (it copies itself to a stable place, writes each browser's manifest and checks it);
# this script only builds it first. Run ./install.sh --help for the options.
set -euo pipefail
cd "$(dirname "$0")"
# Cargo builds into this checkout's target/, whatever CARGO_TARGET_DIR or a cargo config names elsewhere: the
# binary installed below is the one just built there, never an older one left in target/.
export CARGO_TARGET_DIR="$PWD/target"
# shellcheck source=scripts/extension-ids.sh
. scripts/extension-ids.sh

usage() {
  cat <<'USAGE'
Usage: ./install.sh [OPTIONS]

Builds the release binary (cargo build --release), then runs
`target/release/llm-cache-host install [OPTIONS]`, which copies the binary to a stable place
and registers it with browsers:
  user install (default)  <data dir>/bin/llm-cache-host, where <data dir> is
                          Linux ~/.local/share/llm-cache-host, macOS ~/Library/Application Support/
                          llm-cache-host, Windows %LOCALAPPDATA%\llm-cache-host (LLM_CACHE_DIR overrides)
  --system                /usr/local/lib/llm-cache-host/bin (Linux), /Library/Application Support/
                          llm-cache-host/bin (macOS); this script then asks for sudo for that step only

Options (passed to `llm-cache-host install`; a value follows its option as the next word or after
'=', as in --host-name=NAME, and every one is checked before the build starts):
  --browser BROWSER           chrome, chromium, edge, brave, vivaldi or firefox (repeatable);
                              default: every browser found installed, or all of them if none is found
  --extension-id ID           a Chrome extension id to allow (repeatable);
                              default: the demo extension, pahabgfbcdcnaidcniaebibdihehiphn
  --firefox-extension-id ID   a Firefox add-on id to allow (repeatable); default: llm-cache-demo@browserx.dev
  --system                    register for every user (system folders; needs root)
  --user-data-dir DIR         also register with a Chromium started with --user-data-dir=DIR (repeatable)
  --host-name NAME            register the host under your own name, e.g. com.example.mail_cache: its
                              manifests are NAME.json, its data directory and install folder are named NAME,
                              its command is NAME with _ as - (com.example.mail-cache); default:
                              com.browserx.llm_cache (docs/distributing.md)
  -h, --help                  this text

Afterwards:
  llm-cache-host doctor       checks every step a browser takes to start the host (same options)
  llm-cache-host uninstall    removes exactly what install wrote (add --system for a system install)
Both are the installed binary's commands (with --host-name, its own command: com.example.mail-cache doctor);
`llm-cache-host install --help` lists every browser's folders.
USAGE
}

# Options are checked before the build, which takes a minute or more: a typo should cost a second.
fail() {
  echo "install.sh: $1" >&2
  echo "Run ./install.sh --help for the options." >&2
  exit 2
}
# check_value <option> <value>: fails with the option's rule when the value breaks it.
check_value() {
  [ -n "$2" ] || fail "$1 needs a value"
  case "$1" in
    --browser)
      case "$2" in chrome | chromium | edge | brave | vivaldi | firefox) ;;
        *) fail "--browser $2: the browsers are chrome, chromium, edge, brave, vivaldi and firefox" ;;
      esac ;;
    --extension-id)
      is_chrome_extension_id "$2" || fail "--extension-id $2: $CHROME_ID_RULE" ;;
    --firefox-extension-id)
      is_firefox_extension_id "$2" || fail "--firefox-extension-id $2: $FIREFOX_ID_RULE" ;;
    --host-name)
      is_host_name "$2" || fail "--host-name $2: $HOST_NAME_RULE" ;;
  esac
}
system=false
args=("$@")
i=0
while [ $i -lt ${#args[@]} ]; do
  arg=${args[$i]}
  case "$arg" in
    -h | --help) usage; exit 0 ;;
    --system) system=true ;;
    --browser | --extension-id | --firefox-extension-id | --user-data-dir | --host-name)
      i=$((i + 1))
      # A word starting with -- is the next option, not a value; except that a Firefox add-on id may
      # start with - (--x@y is one), and the binary takes the word after its flag as the id whatever it is.
      [ $i -lt ${#args[@]} ] && [ -n "${args[$i]}" ] &&
        { [ "${args[$i]#--}" = "${args[$i]}" ] || [ "$arg" = --firefox-extension-id ]; } ||
        fail "$arg needs a value"
      check_value "$arg" "${args[$i]}" ;;
    # The binary takes --option=value as clap does: the value is everything after the first '='.
    --browser=* | --extension-id=* | --firefox-extension-id=* | --user-data-dir=* | --host-name=*)
      check_value "${arg%%=*}" "${arg#*=}" ;;
    *) fail "unknown option $arg" ;;
  esac
  i=$((i + 1))
done

command -v cargo >/dev/null || { echo "install.sh: cargo is missing: install Rust with rustup (https://rustup.rs)" >&2; exit 1; }
cargo build --release
built=target/release/llm-cache-host

# A file downloaded by a browser carries macOS's quarantine attribute, and a copy keeps it; a
# quarantined host is refused by Gatekeeper when the browser starts it. Clear it before copying.
if [ "$(uname -s)" = Darwin ]; then
  xattr -d com.apple.quarantine "$built" 2>/dev/null || true
fi

if $system && [ "$(id -u)" -ne 0 ]; then
  output=$(sudo "$built" install "$@") || { printf '%s\n' "$output"; exit 1; }
else
  output=$("$built" install "$@") || { printf '%s\n' "$output"; exit 1; }
fi
printf '%s\n' "$output"

if [ "$(uname -s)" = Darwin ]; then
  installed=$(printf '%s\n' "$output" | sed -n 's/^OK   host binary: //p')
  if [ -n "$installed" ]; then
    if $system; then sudo xattr -d com.apple.quarantine "$installed" 2>/dev/null || true
    else xattr -d com.apple.quarantine "$installed" 2>/dev/null || true; fi
  fi
fi
