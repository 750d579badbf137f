#!/usr/bin/env bash
# Windows x86_64, cross-built on Linux with mingw-w64 into a self-installing .exe (double-clicked, it explains
# itself and offers to install), which scripts/release.sh packs in a zip. scripts/cross/windows.sh --help gives the
# interface, which every cross target shares (scripts/cross/target.sh).
#
# check proves the Windows build as far as Linux can, under Wine, in a throw-away prefix:
#  1. clippy for the Windows target; scripts/release.sh makes the release zip, and the .exe inside it is what
#     is checked.
#  2. Through that .exe over real pipes: --version, a native-messaging frame answered with hello.
#  3. install for every browser against Wine's registry: each HKCU key's default value is the
#     manifest's path, each manifest names the installed .exe and the ids, the install record is
#     there; doctor passes; uninstall typed as the installed .exe removes the keys, the manifests,
#     the record and its own running file (Windows can't delete a running .exe: it is moved to the
#     temp folder and deleted once it exits; see src/install/windows.rs).
#  4. The Rust tests that don't open the store, cross-compiled (optimized) and run under Wine.
#  5. With a developer's own host name (release.sh --host-name): the zip and the .exe named after it, and the
#     .exe's manifest naming that host.
#
# The store itself can't run under Wine: LMDB's Windows code maps a section larger than its data
# file (the file grows into it), and Wine refuses such a mapping, so every test that opens the store
# fails there for that reason alone. Those tests are not run here (the list is in WINE_TESTS below);
# a real Windows runs them all with `cargo test`.
#
# Wine needs one test-only stub: Rust's standard library calls ProcessPrng from bcryptprimitives.dll,
# which Debian's Wine 8 lacks. tests/wine/bcryptprimitives.c is built into the prefix's system32,
# never into a release artifact.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/cross/target.sh
. scripts/cross/target.sh

CROSS_TARGET=windows
CROSS_TITLE="Windows x86_64"
CROSS_BUILD_PARTS=(rust c windows)
CROSS_CHECK_PARTS=(rust c deb windows windows-run)
WINDOWS_TARGET=x86_64-pc-windows-gnu

# build.rs links advapi32 for this target (LMDB needs it; lmdb-master-sys adds it only on Windows hosts). It
# stays in cargo's default target folder whatever the host name, as the other cross builds do.
cross_build() { # cross_build OUT COMMAND
  cargo build --release --locked --quiet --target "$WINDOWS_TARGET" >&2
  install -m 0755 "target/$WINDOWS_TARGET/release/llm-cache-host.exe" "$1/$2.exe"
  echo "$1/$2.exe"
}

# The check is the last thing its process does, so its settings for Wine and its exit trap need no undoing.
cross_check() {
  work=$(mktemp -d)
  export WINEPREFIX=$work/prefix WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
  # The host must find its data and install places where Wine puts them, not where this shell does.
  unset LLM_CACHE_DIR XDG_DATA_HOME XDG_CONFIG_HOME
  cleanup() {
    wineserver -k 2>/dev/null || true
    rm -rf "$work"
  }
  trap cleanup EXIT
  fail() {
    echo "windows.sh check: FAIL $1" >&2
    exit 1
  }
  step() { echo "windows.sh check: $1"; }

  chrome_id=abcdefghijklmnopabcdefghijklmnop
  firefox_id=wine-test@example.org

  step "clippy for the Windows target (the code under cfg(windows) is compiled nowhere else)"
  # Not --all-targets: the benchmark measures with Linux-only calls (schedstat, pipe sizes).
  cargo clippy --locked --quiet --target "$WINDOWS_TARGET" --lib --bins --tests -- -D warnings

  # The release for a developer's own host name is built first (and checked below): what the check builds after it
  # is the default host's, which later builds (the end-to-end tests' release) then find made, rather than a build
  # for the other name.
  scripts/release.sh --targets linux,windows --host-name "$CROSS_VENDOR_HOST_NAME" --extension-id "$chrome_id" \
    --out "$work/vendor" >/dev/null

  step "the release zip, as scripts/release.sh writes it"
  version=$(release_version)
  scripts/release.sh --targets linux,windows --out "$work/dist" >/dev/null
  zip=$work/dist/$(release_file windowsZip llm-cache-host "$version")
  [ -f "$zip" ] || fail "release.sh wrote $(ls "$work/dist"), not $(basename "$zip")"
  # Exactly these members (so never the test-only stub DLL), at the zip's top: Extract All puts them in a folder
  # named like the zip, which is what the install page tells people to open.
  python3 - "$zip" "$work/unzipped" <<'PY' || fail "the zip's members"
import sys, zipfile
archive = zipfile.ZipFile(sys.argv[1])
expected = ["llm-cache-host.exe", "README.md", "LICENSE", "LICENSE-MIT", "LICENSE-APACHE"]
assert archive.namelist() == expected, archive.namelist()
archive.extractall(sys.argv[2])
PY
  folder=$work/unzipped
  exe=$folder/llm-cache-host.exe

  step "a throw-away Wine prefix (no display needed: console programs only)"
  wineboot -i >/dev/null 2>&1 || fail "wineboot -i could not make the prefix"
  system32=$WINEPREFIX/drive_c/windows/system32
  [ -d "$system32" ] || fail "the prefix has no system32"
  x86_64-w64-mingw32-gcc -O2 -shared -o "$system32/bcryptprimitives.dll" tests/wine/bcryptprimitives.c -ladvapi32

  step "--version"
  said=$(wine "$exe" --version | tr -d '\r')
  [ "$said" = "llm-cache-host $version" ] || fail "--version said \"$said\", not \"llm-cache-host $version\""

  step "framing and hello over real pipes"
  data_dir=$(wine cmd.exe /c 'echo %LOCALAPPDATA%' | tr -d '\r')\\llm-cache-host
  # A length-prefixed request in, a length-prefixed reply out (PROTOCOL.md section 2), byte for byte.
  python3 - "$exe" <<'PY' || fail "hello over pipes"
import json, struct, subprocess, sys
request = json.dumps({"id": 1, "op": "hello"}).encode()
frame = struct.pack("<I", len(request)) + request
done = subprocess.run(["wine", sys.argv[1], "chrome-extension://abcdefghijklmnopabcdefghijklmnop/"],
                      input=frame, capture_output=True, timeout=120)
out = done.stdout
assert done.returncode == 0, f"exit {done.returncode}: {done.stderr[-2000:]!r}"
assert len(out) >= 4, f"no reply frame: {out!r}"
(length,) = struct.unpack("<I", out[:4])
assert len(out) == 4 + length, f"one frame of {length} bytes expected, got {len(out)} bytes in all"
reply = json.loads(out[4:])
assert reply["id"] == 1 and reply["ok"] is True, reply
assert "hello" in reply["result"]["ops"], reply
PY

  step "install for every browser, into Wine's registry"
  wine "$exe" install --extension-id "$chrome_id" --firefox-extension-id "$firefox_id" >"$work/install.out" 2>&1 \
    || { cat "$work/install.out"; fail "install"; }
  base=$(winepath -u "$data_dir" | tr -d '\r')
  installed_win="$data_dir\\bin\\llm-cache-host.exe"
  [ -f "$base/bin/llm-cache-host.exe" ] || fail "install copied no binary to $base/bin"
  [ -f "$base/install.json" ] || fail "install wrote no record at $base/install.json"
  # Brave and Vivaldi read Chrome's key; each family has one manifest file.
  for entry in 'Google\Chrome:chromium' 'Chromium:chromium' 'Microsoft\Edge:chromium' 'Mozilla:firefox'; do
    key="HKCU\\Software\\${entry%%:*}\\NativeMessagingHosts\\com.browserx.llm_cache"
    family=${entry#*:}
    manifest_win="$data_dir\\manifests\\$family\\com.browserx.llm_cache.json"
    value=$(wine reg query "$key" /ve 2>/dev/null | tr -d '\r' | sed -n 's/^ *(Default) *REG_SZ *//p')
    [ "$value" = "$manifest_win" ] || fail "$key's default value is \"$value\", not \"$manifest_win\""
    python3 - "$(winepath -u "$manifest_win" | tr -d '\r')" "$installed_win" "$family" "$chrome_id" "$firefox_id" <<'PY' \
      || fail "the $family manifest"
import json, sys
path, binary, family, chrome_id, firefox_id = sys.argv[1:]
manifest = json.load(open(path))
assert manifest["name"] == "com.browserx.llm_cache" and manifest["type"] == "stdio", manifest
assert manifest["path"] == binary, (manifest["path"], binary)
if family == "chromium":
    assert f"chrome-extension://{chrome_id}/" in manifest["allowed_origins"], manifest
else:
    assert firefox_id in manifest["allowed_extensions"], manifest
PY
  done
  grep -q "$chrome_id" "$base/install.json" || fail "the install record doesn't list the extension"

  step "doctor"
  # Every browser's checks pass; the store's is the one that fails, for Wine's reason above, and fails
  # the command with it.
  if wine "$exe" doctor >"$work/doctor.out" 2>&1; then doctor_code=0; else doctor_code=$?; fi
  tr -d '\r' <"$work/doctor.out" >"$work/doctor.txt"
  for label in 'chrome, brave, vivaldi' chromium edge firefox; do
    grep -q "^OK   $label: host $version registered" "$work/doctor.txt" || { cat "$work/doctor.txt"; fail "doctor on $label"; }
  done
  [ "$(grep -c '^FAIL' "$work/doctor.txt")" = 1 ] && grep -q '^FAIL store: .*StorageUnavailableError' "$work/doctor.txt" \
    || { cat "$work/doctor.txt"; fail "doctor failed more than the store's check"; }
  [ "$doctor_code" = 1 ] || fail "doctor exited $doctor_code with a failed check, not 1"

  step "uninstall, typed as the installed .exe"
  wine "$installed_win" uninstall >"$work/uninstall.out" 2>&1 || { cat "$work/uninstall.out"; fail "uninstall"; }
  grep -q "removed the host binary" "$work/uninstall.out" || { cat "$work/uninstall.out"; fail "uninstall said nothing of the binary"; }
  # Every Wine process of the prefix has ended, the helper that deletes the moved binary included.
  wineserver -w
  for key in 'Google\Chrome' 'Chromium' 'Microsoft\Edge' 'Mozilla'; do
    ! wine reg query "HKCU\\Software\\$key\\NativeMessagingHosts\\com.browserx.llm_cache" /ve >/dev/null 2>&1 \
      || fail "uninstall left HKCU\\Software\\$key\\NativeMessagingHosts\\com.browserx.llm_cache"
  done
  [ ! -e "$base/install.json" ] || fail "uninstall left the install record"
  [ ! -e "$base/manifests" ] || fail "uninstall left $base/manifests"
  [ ! -e "$base/bin" ] || fail "uninstall left $base/bin: $(ls -A "$base/bin")"
  temp=$(winepath -u "$(wine cmd.exe /c 'echo %TEMP%' | tr -d '\r')" | tr -d '\r')
  leftovers=$(find "$temp" -maxdepth 1 -name 'llm-cache-host-*' | head -n 3)
  [ -z "$leftovers" ] || fail "the running binary moved away at uninstall was never deleted: $leftovers"

  # 4. The tests that don't open the store (see the top), with the Wine prefix above.
  step "the Rust tests that don't open the store, under Wine"
  export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER=wine
  # The store file's unit tests make a real LMDB store to check, so they are skipped like the tests below.
  WINE_TESTS=(
    "--lib --bins -- --skip store_file::tests::"
    "--test cli"
    "--test replay -- --exact hello unavailable every_transcript_is_run"
    "--test inspect -- --exact unframed_json_gets_a_hint"
    "--test recovery -- --exact a_closed_stdout_ends_the_host_cleanly"
  )
  # Optimized, as shipped and as the arm64 check runs them: they reuse the release build's dependencies, where a
  # debug build would compile every one of them again for Windows.
  for tests in "${WINE_TESTS[@]}"; do
    # shellcheck disable=SC2086 # each entry is a list of words
    cargo test --release --locked --quiet --target "$WINDOWS_TARGET" $tests
  done

  step "a developer's own host name: the zip and the .exe named after it, the name baked in"
  vendor_zip=$work/vendor/$(release_file windowsZip "$CROSS_VENDOR_COMMAND" "$version")
  [ -f "$vendor_zip" ] || fail "release.sh --host-name $CROSS_VENDOR_HOST_NAME wrote $(ls "$work/vendor"), not $(basename "$vendor_zip")"
  python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extract(sys.argv[3], sys.argv[2])' \
    "$vendor_zip" "$work/vendor" "$CROSS_VENDOR_COMMAND.exe" || fail "the vendor's zip holds no $CROSS_VENDOR_COMMAND.exe"
  wine "$work/vendor/$CROSS_VENDOR_COMMAND.exe" manifest --browser chromium --path "C:\\$CROSS_VENDOR_COMMAND.exe" --extension-id "$chrome_id" \
    | grep -qF "\"name\": \"$CROSS_VENDOR_HOST_NAME\"," || fail "$CROSS_VENDOR_COMMAND.exe was not built for $CROSS_VENDOR_HOST_NAME"
  step "OK"
}

cross_main "$@"
