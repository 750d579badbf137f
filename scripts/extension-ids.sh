# shellcheck shell=bash
# The extension id rules for the shell scripts (install.sh, scripts/release.sh), which check ids before
# they build so that a typo costs a second rather than a build. The binary checks them again by the same
# rules (src/install/manifest.rs); both follow the browsers' own.

# A Chrome extension id: 32 letters from a to p, as chrome://extensions shows it.
CHROME_ID_RULE="a Chrome extension id is 32 letters from a to p, as chrome://extensions shows it"
is_chrome_extension_id() {
  [[ $1 =~ ^[a-p]{32}$ ]]
}

# Firefox's add-on id rule (its add-on manager's gIDTest, case-insensitive): a braced GUID, or
# name@domain where the name may be empty (@addon-example is MDN's own example). At most 255
# characters, as the host's store keys allow.
FIREFOX_ID_RULE="a Firefox add-on id is a {GUID} (8-4-4-4-12 hex digits in braces) or name@domain, where the name may be empty (@name) and both parts use only letters, digits, '-', '.' and '_'"
is_firefox_extension_id() {
  local hex='[0-9A-Fa-f]' word='[0-9A-Za-z._-]'
  [ ${#1} -le 255 ] &&
    [[ $1 =~ ^(\{$hex{8}-$hex{4}-$hex{4}-$hex{4}-$hex{12}\}|$word*@$word+)$ ]]
}
