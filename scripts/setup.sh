# shellcheck shell=bash
# What building and testing need on a Debian or Ubuntu machine, and the one place that installs it. Sourced by
# scripts/test.sh, scripts/release.sh and scripts/cross/*.sh, each of which calls `setup PART...` before it
# builds anything, so that a fresh clone needs no step a document has to list. Run from the repository's root.
#
# The parts:
#   rust             cargo (from rustup: Debian's own Rust is older than the 1.89 this builds with)
#   lint             rustup's clippy and rustfmt
#   c                a C compiler and C library headers (LMDB is built from source by lmdb-master-sys)
#   deb              dpkg-dev, whose dpkg-shlibdeps gives the .deb its Depends
#   node             Node.js 20 or later and npm, for the shim's and the end-to-end tests
#   python           Python 3 with venv and ensurepip: the shim's test/python-validators.test.ts makes a
#                    virtualenv with the providers' Python SDKs, and the macOS build keeps zig in one
#   browsers         Chromium and Firefox ESR, where the end-to-end tests look for them (/usr/bin)
#   linux-arm64      Debian's aarch64 cross compiler and C library, readelf, rustup's arm64 target
#   linux-arm64-run  qemu-user, and the kernel set to start arm64 programs under it (binfmt_misc), for the tests
#   macos            rustup's two Apple targets, and zig and cargo-zigbuild at the versions pinned in
#                    scripts/cross/requirements-macos.txt, in target/zig-venv
#   windows          mingw-w64 and rustup's Windows target; Python writes the zip
#   windows-run      Wine, which runs the .exe and the tests that don't open the store
#
# What needs root (Debian's packages, and the kernel's binfmt_misc setting) is done first, and in one go: as
# root directly; otherwise through sudo when sudo can ask (a terminal) or needs no password; otherwise not at all,
# and `setup` says the one command that does it. What doesn't (rustup's targets and components, the zig
# virtualenv) is done as the user who runs it, since rustup's toolchains are per user.

# setup [--partial] PART...: makes this machine ready for the parts, or fails before changing anything, having
# said what is missing and the one command that installs it (status 2). With --partial it sets up every part it
# can instead, and leaves the others in SETUP_UNMET, with the command that would add them in SETUP_COMMAND and
# what they lack in SETUP_LACKS, for the caller to say when it has done the rest.
setup() {
  local partial=false
  if [ "${1:-}" = --partial ]; then
    partial=true
    shift
  fi
  SETUP_UNMET=()
  SETUP_COMMAND=
  SETUP_LACKS=
  _setup_plan "$@" || return 2
  if [ ${#_setup_root_parts[@]} -gt 0 ] && ! _setup_as_root; then
    SETUP_COMMAND=$(_setup_root_command "$(_setup_sudo_prefix)")
    SETUP_LACKS=$(_setup_lacks)
    if ! "$partial"; then
      echo "$(basename "$0"): this machine lacks $SETUP_LACKS. This one command installs it; then run $0 again:" >&2
      echo "  $SETUP_COMMAND" >&2
      return 2
    fi
    SETUP_UNMET=("${_setup_root_parts[@]}")
    # The parts that need nothing of root get their own steps, as if they had been asked for alone.
    local part met=()
    for part in "$@"; do
      [[ " ${SETUP_UNMET[*]} " == *" $part "* ]] || met+=("$part")
    done
    [ ${#met[@]} -gt 0 ] || return 0
    _setup_plan "${met[@]}" || return 2
  fi
  # A distribution's own Node.js may be older than the tests need (Debian 12's is 18).
  if [[ " $* " == *" node "* ]] && ! _setup_node_is_new_enough; then
    echo "$(basename "$0"): $(_setup_node_too_old)" >&2
    return 2
  fi
  _setup_as_user
}

# The oldest Node.js the shim and the end-to-end tests run on (their package.json's engines).
SETUP_NODE_MAJOR=20

_setup_node_is_new_enough() {
  local version
  version=$(node --version 2>/dev/null) || return 1
  version=${version#v}
  [ "${version%%.*}" -ge "$SETUP_NODE_MAJOR" ] 2>/dev/null
}

_setup_node_too_old() {
  echo "Node.js $(node --version 2>/dev/null || echo "(none)") is older than the $SETUP_NODE_MAJOR or later that the shim's and the end-to-end tests need: install a newer one (https://nodejs.org), then run $0 again"
}

# Cargo builds into this checkout's target/, whatever CARGO_TARGET_DIR or a cargo config names elsewhere: the
# scripts and the tests run the binaries they find there, which must be the ones just built.
export CARGO_TARGET_DIR="$PWD/target"

# What the last plan found missing, each list without repeats.
_setup_debs=()            # Debian packages, installed with their recommended packages
_setup_bare_debs=()       # Debian packages whose recommended ones nothing here needs (Wine's fonts, sound, desktop)
_setup_root_steps=()      # other commands for root, run after the packages are in
_setup_root_parts=()      # the parts that need any of the three above
_setup_components=()      # rustup components
_setup_targets=()         # rustup targets
_setup_zig=false          # whether target/zig-venv is missing or made from other pins

# _setup_plan PART...: finds what the parts lack, changing nothing. Fails, saying so, when something is
# missing that this script doesn't install (Rust itself).
_setup_plan() {
  _setup_debs=()
  _setup_bare_debs=()
  _setup_root_steps=()
  _setup_root_parts=()
  _setup_components=()
  _setup_targets=()
  _setup_zig=false
  local part fatal=()
  # rustup's targets, read once: every cross part asks.
  local installed_targets=
  if command -v rustup >/dev/null; then installed_targets=$(rustup target list --installed 2>/dev/null); fi
  for part in "$@"; do
    case "$part" in
      rust)
        command -v cargo >/dev/null \
          || fatal+=("cargo is missing: install Rust 1.89 or later with rustup (https://rustup.rs), then open a new shell")
        ;;
      lint)
        cargo clippy --version >/dev/null 2>&1 || _setup_add _setup_components clippy
        cargo fmt --version >/dev/null 2>&1 || _setup_add _setup_components rustfmt
        ;;
      c) command -v cc >/dev/null || _setup_deb "$part" gcc libc6-dev ;;
      deb) command -v dpkg-shlibdeps >/dev/null || _setup_deb "$part" dpkg-dev ;;
      node)
        if ! command -v npm >/dev/null; then
          _setup_deb "$part" nodejs npm
        elif ! _setup_node_is_new_enough; then
          fatal+=("$(_setup_node_too_old)")
        fi
        ;;
      python) python3 -c 'import venv, ensurepip' 2>/dev/null || _setup_deb "$part" python3 python3-venv ;;
      browsers)
        [ -x /usr/bin/chromium ] || _setup_deb "$part" chromium
        [ -x /usr/bin/firefox-esr ] || _setup_deb "$part" firefox-esr
        ;;
      linux-arm64)
        command -v aarch64-linux-gnu-gcc >/dev/null || _setup_bare_deb "$part" gcc-aarch64-linux-gnu
        [ -e /usr/aarch64-linux-gnu/lib/libc.so.6 ] || _setup_bare_deb "$part" libc6-dev-arm64-cross
        command -v readelf >/dev/null || _setup_bare_deb "$part" binutils
        grep -qx aarch64-unknown-linux-gnu <<<"$installed_targets" || _setup_add _setup_targets aarch64-unknown-linux-gnu
        ;;
      linux-arm64-run)
        command -v qemu-aarch64-static >/dev/null || _setup_bare_deb "$part" qemu-user-static
        command -v update-binfmts >/dev/null || _setup_bare_deb "$part" binfmt-support
        # The tests start the host binary as a program (CARGO_BIN_EXE_*), so the kernel itself must hand arm64
        # programs to qemu. qemu-user-static's package registers that only outside containers; update-binfmts
        # does it anywhere (it mounts binfmt_misc if needed), and says so without failing if it is done already.
        if ! grep -qx enabled /proc/sys/fs/binfmt_misc/qemu-aarch64 2>/dev/null; then
          _setup_root_step "$part" "update-binfmts --enable qemu-aarch64"
        fi
        # qemu looks for an arm64 program's dynamic loader and libraries under /etc/qemu-binfmt/aarch64 unless
        # QEMU_LD_PREFIX says otherwise; pointing it at the cross C library lets programs started with an empty
        # environment run too (tests/readme.rs starts one so). -n replaces a link rather than writing into it.
        if [ ! -e /etc/qemu-binfmt/aarch64 ]; then
          _setup_root_step "$part" "mkdir -p /etc/qemu-binfmt"
          _setup_root_step "$part" "ln -sfn /usr/aarch64-linux-gnu /etc/qemu-binfmt/aarch64"
        fi
        ;;
      macos)
        python3 -c 'import venv, ensurepip' 2>/dev/null || _setup_deb "$part" python3 python3-venv
        grep -qx x86_64-apple-darwin <<<"$installed_targets" || _setup_add _setup_targets x86_64-apple-darwin
        grep -qx aarch64-apple-darwin <<<"$installed_targets" || _setup_add _setup_targets aarch64-apple-darwin
        # The virtualenv keeps a copy of the pins it was made from, so that changed pins remake it.
        cmp -s scripts/cross/requirements-macos.txt target/zig-venv/requirements-macos.txt 2>/dev/null || _setup_zig=true
        ;;
      windows)
        command -v x86_64-w64-mingw32-gcc >/dev/null || _setup_bare_deb "$part" gcc-mingw-w64-x86-64
        command -v python3 >/dev/null || _setup_deb "$part" python3
        grep -qx x86_64-pc-windows-gnu <<<"$installed_targets" || _setup_add _setup_targets x86_64-pc-windows-gnu
        ;;
      windows-run)
        # wine runs the programs, wine64 is its 64-bit half (wineboot, wineserver, winepath).
        command -v wine >/dev/null && command -v wineserver >/dev/null || _setup_bare_deb "$part" wine wine64
        ;;
      *)
        echo "setup: no part $part (scripts/setup.sh lists them)" >&2
        return 2
        ;;
    esac
  done
  # Without cargo the message above says to install rustup already.
  if [ $((${#_setup_components[@]} + ${#_setup_targets[@]})) -gt 0 ] && command -v cargo >/dev/null \
    && ! command -v rustup >/dev/null; then
    fatal+=("rustup is missing, which adds Rust's $(printf '%s, ' "${_setup_components[@]}" "${_setup_targets[@]}" | sed 's/, $//'): install Rust with rustup (https://rustup.rs)")
  fi
  if [ ${#_setup_root_parts[@]} -gt 0 ] && [ $((${#_setup_debs[@]} + ${#_setup_bare_debs[@]})) -gt 0 ] \
    && ! command -v apt-get >/dev/null; then
    fatal+=("apt-get is missing, so this is not Debian or Ubuntu: install what stands for $(_setup_lacks) here")
  fi
  if [ ${#fatal[@]} -gt 0 ]; then
    local message via=
    for message in "${fatal[@]}"; do echo "$(basename "$0"): $message" >&2; done
    # What needs root is said too, so that one round of installing is enough.
    if [ ${#_setup_root_parts[@]} -gt 0 ] && command -v apt-get >/dev/null; then
      [ "$(id -u)" -eq 0 ] || via=$(_setup_sudo_prefix)
      echo "$(basename "$0"): it also lacks $(_setup_lacks), which this one command installs:" >&2
      echo "  $(_setup_root_command "$via")" >&2
    fi
    return 2
  fi
}

# _setup_add ARRAY WORD: adds the word to the named array unless it is there already.
_setup_add() {
  local -n list=$1
  [[ " ${list[*]} " == *" $2 "* ]] || list+=("$2")
}

_setup_deb() { # _setup_deb PART PACKAGE...
  local part=$1 package
  shift
  _setup_add _setup_root_parts "$part"
  for package; do _setup_add _setup_debs "$package"; done
}

_setup_bare_deb() { # _setup_bare_deb PART PACKAGE...
  local part=$1 package
  shift
  _setup_add _setup_root_parts "$part"
  for package; do _setup_add _setup_bare_debs "$package"; done
}

_setup_root_step() { # _setup_root_step PART COMMAND
  _setup_add _setup_root_parts "$1"
  _setup_root_steps+=("$2")
}

# _setup_lacks: what the plan found missing that needs root, in words.
_setup_lacks() {
  local packages=("${_setup_debs[@]}" "${_setup_bare_debs[@]}") lacks=()
  if [ ${#packages[@]} -eq 1 ]; then
    lacks+=("the Debian package ${packages[*]}")
  elif [ ${#packages[@]} -gt 1 ]; then
    lacks+=("the Debian packages ${packages[*]}")
  fi
  [ ${#_setup_root_steps[@]} -eq 0 ] || lacks+=("the kernel's setting that starts arm64 programs under qemu (binfmt_misc)")
  printf '%s and ' "${lacks[@]}" | sed 's/ and $//'
}

# _setup_root_commands: the commands that do the root work of the plan, one a line, in order.
_setup_root_commands() {
  if [ $((${#_setup_debs[@]} + ${#_setup_bare_debs[@]})) -gt 0 ]; then
    echo "apt-get update"
    [ ${#_setup_debs[@]} -eq 0 ] || echo "apt-get install -y ${_setup_debs[*]}"
    [ ${#_setup_bare_debs[@]} -eq 0 ] || echo "apt-get install -y --no-install-recommends ${_setup_bare_debs[*]}"
  fi
  [ ${#_setup_root_steps[@]} -eq 0 ] || printf '%s\n' "${_setup_root_steps[@]}"
}

# _setup_root_command PREFIX: the root work as one command line. PREFIX is sudo (each command through sudo), su
# (the whole line given to `su -c`, for a machine without sudo) or nothing (run by root).
_setup_root_command() {
  local commands=() line
  mapfile -t commands < <(_setup_root_commands)
  [ "${1:-}" != sudo ] || commands=("${commands[@]/#/sudo }")
  line=$(printf '%s && ' "${commands[@]}")
  line=${line% && }
  if [ "${1:-}" = su ]; then line="su -c '$line'"; fi
  echo "$line"
}

# _setup_sudo_prefix: how a user who isn't root gets root here.
_setup_sudo_prefix() {
  if command -v sudo >/dev/null; then echo sudo; else echo su; fi
}

# _setup_as_root: does the plan's root work, as root or through sudo. Fails when neither can be used (having run
# nothing) or sudo refuses, leaving the rest to the one command, which is safe to run again; exits when a command
# run as root fails (its own message is above).
_setup_as_root() {
  local via command words
  if [ "$(id -u)" -eq 0 ]; then
    via=
  elif command -v sudo >/dev/null && { [ -t 0 ] || sudo -n true 2>/dev/null; }; then
    via=sudo
  else
    return 1
  fi
  echo "$(basename "$0"): installing $(_setup_lacks): $(_setup_root_command "$via")" >&2
  # The commands are read from descriptor 3, so that sudo and apt keep the caller's input.
  while read -r command <&3; do
    read -r -a words <<<"$command"
    if [ -z "$via" ]; then
      # CI's log needs apt's errors, not its progress, and nobody answers its questions there.
      [ "${words[0]}" != apt-get ] || words+=(-qq)
      env DEBIAN_FRONTEND=noninteractive "${words[@]}" >&2 || {
        echo "$(basename "$0"): \`$command\` failed (above)" >&2
        exit 2
      }
    else
      # A refusal (no such right, or no password given) leaves the rest to the one command.
      sudo "${words[@]}" >&2 || return 1
    fi
  done 3< <(_setup_root_commands)
}

# _setup_as_user: the plan's rustup components and targets, and the zig virtualenv.
_setup_as_user() {
  if [ ${#_setup_components[@]} -gt 0 ]; then rustup component add "${_setup_components[@]}" >&2; fi
  if [ ${#_setup_targets[@]} -gt 0 ]; then rustup target add "${_setup_targets[@]}" >&2; fi
  if "$_setup_zig"; then
    local venv=target/zig-venv requirements=scripts/cross/requirements-macos.txt
    echo "$(basename "$0"): installing zig and cargo-zigbuild from PyPI in $venv ($requirements)" >&2
    rm -rf "$venv"
    mkdir -p target
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements" >&2
    cp "$requirements" "$venv/requirements-macos.txt"
  fi
}
