# shellcheck shell=bash
# The extension id and host name rules for the shell scripts (install.sh, scripts/release.sh), which
# check them before they build so that a typo costs a second rather than a build. The binary checks them
# again by the same rules (src/install/manifest.rs, src/host_name.rs); both follow the browsers' own.

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

# A host name (src/host_name.rs, which says why each part of the rule is there): Chrome's rule
# (lowercase letters, digits, '_' and '.', no '.' at either end, no '..'), and here also at least one
# '.', at most MAX_HOST_NAME_CHARS characters (Windows' MAX_PATH), a letter or digit first (it starts the
# command and the Debian package), a last part of two characters or more that starts with a letter or
# digit, and no part that Windows keeps for a device.
MAX_HOST_NAME_CHARS=88
HOST_NAME_RULE="a host name is lowercase letters, digits, '_' and '.', with no '.' at either end and no '..', at least one '.', at most $MAX_HOST_NAME_CHARS characters, a letter or digit first, a last part of at least 2 characters starting with a letter or digit, and no part that Windows keeps for a device (con, prn, aux, nul, com0 to com9, lpt0 to lpt9), e.g. com.example.mail_cache"
DEFAULT_HOST_NAME=com.browserx.llm_cache
is_host_name() {
  local lower=${1,,}
  [ ${#1} -le $MAX_HOST_NAME_CHARS ] && [[ $1 =~ ^[a-z0-9][a-z0-9_]*(\.[a-z0-9_]+)*\.[a-z0-9][a-z0-9_]+$ ]] &&
    ! [[ .$lower. =~ \.(con|prn|aux|nul|com[0-9]|lpt[0-9])\. ]]
}

# The command, Debian package and tarball name of a host: llm-cache-host for the default host, else
# the whole host name with '_' turned into '-' (com.example.mail_cache: com.example.mail-cache), so that
# two host names never share a package.
host_command() {
  if [ "$1" = "$DEFAULT_HOST_NAME" ]; then
    echo llm-cache-host
  else
    echo "${1//_/-}"
  fi
}
