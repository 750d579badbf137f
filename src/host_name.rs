//! Which host this is: the name extensions pass to `connectNative`, and the names that follow from it.
//!
//! One source tree builds every vendor's host. The default, `com.browserx.llm_cache`, is named
//! `llm-cache-host` wherever a person types or sees it: its command, package and data folder. Any other
//! host name, `com.example.mail_cache` say, gives:
//! - the command and Debian package `com.example.mail-cache`: the whole name, `_` turned into `-`
//!   (Debian allows no `_` in package names, and no host name has a `-`, so two host names never
//!   share a command or a package: two vendors' packages install side by side);
//! - the data folder `com.example.mail_cache` (under `~/.local/share` and its kin, and as the install
//!   base of a system install): the whole name, so two vendors' hosts never share a store;
//! - the installed copy of the binary, `<data folder>/bin/com.example.mail_cache`: named so that the
//!   copy knows which host it is.
//!
//! A binary knows its host name at run time, because a browser starts it with nothing that says
//! which manifest named it. The name is, in this order:
//! 1. its own file name, when that is a host name (less `.exe` on Windows): this is how the copy
//!    `install --host-name` makes knows its name;
//! 2. the name baked in when it was built, from the `LLM_CACHE_HOST_NAME` variable (what
//!    `scripts/release.sh --host-name` does), checked when it compiles. The binary's own crate
//!    (`src/main.rs`) reads the variable and hands the name over with [`HostName::set_built_in`], so
//!    that building for another name recompiles only that small crate, not this library;
//! 3. the default.

use std::path::Path;
use std::sync::OnceLock;

use crate::paths::Os;

/// The demo's host name, which a build without `LLM_CACHE_HOST_NAME` has.
pub const DEFAULT_HOST_NAME: &str = "com.browserx.llm_cache";

/// The default host's command, Debian package, installed binary and data folder.
pub const DEFAULT_COMMAND: &str = "llm-cache-host";

/// The longest host name taken. Windows stops paths at `MAX_PATH`, 260 characters with the final
/// NUL, and a user install there writes the host name twice into its longest path, the manifest's
/// temporary file `%LOCALAPPDATA%\<name>\manifests\chromium\<name>.json.tmp<pid>`: with a typical
/// `%LOCALAPPDATA%` ([`TYPICAL_LOCAL_APP_DATA`]) this length keeps that path, and the copy
/// `%LOCALAPPDATA%\<name>\bin\<name>.exe`, within it. Chrome sets no limit of its own.
pub const MAX_HOST_NAME_BYTES: usize = 88;

/// The `%LOCALAPPDATA%` that [`MAX_HOST_NAME_BYTES`] is measured against: a user name of 20
/// characters, the longest Windows lets one be.
pub const TYPICAL_LOCAL_APP_DATA: &str = r"C:\Users\abcdefghijklmnopqrst\AppData\Local";

/// The names Windows keeps for devices: a file or folder named one of them, with any extension, is the
/// device, so no part of a host name (which names files and folders there) may be one.
pub const WINDOWS_DEVICE_NAMES: [&str; 24] = [
    "con", "prn", "aux", "nul", "com0", "com1", "com2", "com3", "com4", "com5", "com6", "com7", "com8", "com9", "lpt0",
    "lpt1", "lpt2", "lpt3", "lpt4", "lpt5", "lpt6", "lpt7", "lpt8", "lpt9",
];

/// The rule, in words, for the errors that refuse a name.
pub const HOST_NAME_RULE: &str = "a host name is Chrome's: lowercase letters, digits, '_' and '.', with no '.' at \
    either end and no '..'; here also a reverse domain name with at least one '.', at most 88 characters, that \
    starts with a letter or digit, whose last part starts with a letter or digit and is at least 2 characters, and \
    with no part that Windows keeps for a device (con, prn, aux, nul, com0 to com9, lpt0 to lpt9), \
    e.g. com.example.mail_cache";

/// The host name the binary was built with, set once as it starts ([`HostName::set_built_in`]).
static BUILT_IN: OnceLock<HostName> = OnceLock::new();

/// A checked host name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostName(String);

impl HostName {
    /// `name` if it follows [`HOST_NAME_RULE`]; the error says why not.
    ///
    /// # Errors
    /// A sentence with the rule when it doesn't.
    pub fn parse(name: &str) -> Result<HostName, String> {
        if !is_host_name(name) {
            return Err(format!("\"{}\" is not a host name: {HOST_NAME_RULE}", name.escape_debug()));
        }
        Ok(HostName(name.to_owned()))
    }

    /// The default host, `com.browserx.llm_cache`.
    pub fn default_host() -> HostName {
        HostName(DEFAULT_HOST_NAME.to_owned())
    }

    /// Records the name the binary was built with (`src/main.rs` passes `LLM_CACHE_HOST_NAME`, which it
    /// checked with [`is_host_name`] as it compiled), before anything asks which host this is. Only the
    /// first call counts.
    pub fn set_built_in(name: &str) {
        let _ = BUILT_IN.set(HostName(name.to_owned()));
    }

    /// The name this binary was built with: `LLM_CACHE_HOST_NAME` at build time, else the default.
    pub fn built_in() -> HostName {
        BUILT_IN.get().cloned().unwrap_or_else(HostName::default_host)
    }

    /// The host a binary at `path` is: its file name when that is a host name, else the built-in one.
    pub fn of_executable(path: &Path, os: Os) -> HostName {
        let name = path.file_name().and_then(|name| name.to_str()).unwrap_or_default();
        let name = if os == Os::Windows { name.strip_suffix(".exe").unwrap_or(name) } else { name };
        HostName::parse(name).unwrap_or_else(|_| HostName::built_in())
    }

    /// The host this process is, worked out once.
    pub fn current() -> HostName {
        static CURRENT: OnceLock<HostName> = OnceLock::new();
        CURRENT
            .get_or_init(|| {
                // The real file, not a link to it: `~/.local/bin/com.example.mail-cache` links to the
                // named copy.
                match std::env::current_exe().and_then(|exe| exe.canonicalize()) {
                    Ok(exe) => HostName::of_executable(&exe, Os::current()),
                    Err(_) => HostName::built_in(),
                }
            })
            .clone()
    }

    /// The name itself.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether this is the default host, whose command, folders and files are named `llm-cache-host`
    /// rather than after its host name.
    pub fn is_default(&self) -> bool {
        self.0 == DEFAULT_HOST_NAME
    }

    /// The command people type, which is also the Debian package's name: `llm-cache-host` for the
    /// default, else the whole host name with `_` turned into `-`. It follows Debian's rule for a
    /// package name (`[a-z0-9][a-z0-9+.-]+`), and it is never another host's: a host name has no `-`,
    /// and the default's command has no `.`.
    pub fn command(&self) -> String {
        if self.is_default() {
            return DEFAULT_COMMAND.to_owned();
        }
        self.0.replace('_', "-")
    }

    /// The folder the host's data goes in under the OS's data directory, and a system install's base.
    pub fn folder(&self) -> &str {
        if self.is_default() { DEFAULT_COMMAND } else { &self.0 }
    }

    /// The installed binary's file name: the host name, so that the copy knows which host it is;
    /// `llm-cache-host` for the default host when this binary is a default build, like its command.
    pub fn binary_file(&self, os: Os) -> String {
        let stem = if self.is_default() && HostName::built_in().is_default() { DEFAULT_COMMAND } else { &self.0 };
        if os == Os::Windows { format!("{stem}.exe") } else { stem.to_owned() }
    }

    /// `subcommand` (`install`, `doctor`, `uninstall`, `config`: those that take `--host-name`) run by `program`
    /// as a person types it: with `--host-name` when this isn't the default host, so that the line
    /// sets up or checks this host whichever binary runs it.
    pub fn invocation(&self, program: &str, subcommand: &str) -> String {
        if self.is_default() {
            format!("{program} {subcommand}")
        } else {
            format!("{program} {subcommand} --host-name {}", self.0)
        }
    }

    /// The manifest's file name: the host name and `.json`, as browsers look it up.
    pub fn manifest_file(&self) -> String {
        format!("{}.json", self.0)
    }
}

impl std::fmt::Display for HostName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Whether `name` follows [`HOST_NAME_RULE`]; a `const fn`, so that the baked-in name is checked when
/// the binary compiles.
pub const fn is_host_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    // The first character starts the command and the Debian package, which must start with a letter
    // or digit.
    if bytes.is_empty()
        || bytes.len() > MAX_HOST_NAME_BYTES
        || !(bytes[0].is_ascii_lowercase() || bytes[0].is_ascii_digit())
        || bytes[bytes.len() - 1] == b'.'
    {
        return false;
    }
    let mut dots = 0;
    let mut last_start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'.' {
            if bytes[i - 1] == b'.' {
                return false;
            }
            dots += 1;
            last_start = i + 1;
        } else if !(b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_') {
            return false;
        }
        i += 1;
    }
    // The last part is what people read as the host's own name: a letter or digit first, and two
    // characters at least.
    dots > 0 && bytes.len() - last_start >= 2 && bytes[last_start] != b'_' && !has_device_part(bytes)
}

/// Whether a `.`-separated part of `name` is one of [`WINDOWS_DEVICE_NAMES`], in any case.
const fn has_device_part(name: &[u8]) -> bool {
    let mut start = 0;
    while start <= name.len() {
        let mut end = start;
        while end < name.len() && name[end] != b'.' {
            end += 1;
        }
        let mut d = 0;
        while d < WINDOWS_DEVICE_NAMES.len() {
            let device = WINDOWS_DEVICE_NAMES[d].as_bytes();
            if end - start == device.len() {
                let mut i = 0;
                while i < device.len() && name[start + i].to_ascii_lowercase() == device[i] {
                    i += 1;
                }
                if i == device.len() {
                    return true;
                }
            }
            d += 1;
        }
        start = end + 1;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chromes_rule_and_ours() {
        for good in [DEFAULT_HOST_NAME, "com.example.mail_cache", "a.bc", "x1.y_2.z3", "com.example.9lives"] {
            assert!(HostName::parse(good).is_ok(), "{good}");
        }
        let long = format!("com.{}", "a".repeat(MAX_HOST_NAME_BYTES - 4));
        assert!(HostName::parse(&long).is_ok());
        for bad in [
            "",
            "mail_cache",
            ".com.example",
            "com.example.",
            "com..example",
            "Com.Example.Mail",
            "com.example.mail-cache",
            "com.example/x",
            "com.example.x y",
            "com.example.a",
            "com.example._mail",
            "com.example.\u{e9}t\u{e9}",
            "com.example.x\n",
            &format!("{long}a"),
        ] {
            let error = HostName::parse(bad).unwrap_err();
            assert!(error.contains("lowercase letters") && error.contains("com.example.mail_cache"), "{bad}: {error}");
        }
    }

    #[test]
    fn each_host_names_its_own_command_and_package_by_debians_rule() {
        // Two vendors' hosts that end alike, and one that ends like the default's command.
        let commands: Vec<String> = ["com.example.mail_cache", "org.other.mail_cache", "com.other.llm_cache_host"]
            .into_iter()
            .map(|name| HostName::parse(name).unwrap().command())
            .collect();
        assert_eq!(commands, ["com.example.mail-cache", "org.other.mail-cache", "com.other.llm-cache-host"]);
        let debian = |name: &str| {
            let b = name.as_bytes();
            b.len() >= 2
                && (b[0].is_ascii_lowercase() || b[0].is_ascii_digit())
                && b.iter().all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || b"+.-".contains(&c))
        };
        let cases = include_str!("../tests/host_names.txt");
        for name in cases.lines().filter_map(|line| line.strip_prefix("ok ")).chain([DEFAULT_HOST_NAME]) {
            let command = HostName::parse(name).unwrap().command();
            assert!(debian(&command), "{name}: {command}");
        }
        // A name starting with '_' would give a package starting with '-'.
        assert!(HostName::parse("_x.example.ab").is_err());
    }

    #[test]
    fn the_shared_cases() {
        // The cases every checker of the rule runs: the scripts' and the shim's too.
        for line in include_str!("../tests/host_names.txt").lines().filter(|line| !line.starts_with('#')) {
            let (want, name) = line.split_once(' ').unwrap();
            assert_eq!(HostName::parse(name).is_ok(), want == "ok", "{line}");
        }
    }

    #[test]
    fn the_rule_names_its_limit_and_a_windows_path_stays_within_max_path() {
        assert!(HOST_NAME_RULE.contains(&format!("at most {MAX_HOST_NAME_BYTES} characters")), "{HOST_NAME_RULE}");
        // Windows' MAX_PATH counts the final NUL; a process id is at most 10 digits.
        let name = "n".repeat(MAX_HOST_NAME_BYTES);
        let longest = [
            format!(r"{TYPICAL_LOCAL_APP_DATA}\{name}\manifests\chromium\{name}.json.tmp4294967295"),
            format!(r"{TYPICAL_LOCAL_APP_DATA}\{name}\bin\{name}.exe.new"),
        ];
        for path in longest {
            assert!(path.len() < 260, "{} characters: {path}", path.len());
        }
    }

    #[test]
    fn windows_device_names_are_refused_as_any_part() {
        for device in WINDOWS_DEVICE_NAMES {
            for name in [format!("{device}.example.app"), format!("com.{device}.app"), format!("com.example.{device}")]
            {
                let error = HostName::parse(&name).unwrap_err();
                assert!(error.contains("Windows keeps for a device"), "{name}: {error}");
            }
            assert!(has_device_part(device.to_uppercase().as_bytes()), "{device}");
            assert!(is_host_name(&format!("com.{device}x.app")), "{device}x");
        }
    }

    #[test]
    fn names_that_follow() {
        let default = HostName::default_host();
        assert_eq!((default.command(), default.folder()), ("llm-cache-host".to_owned(), "llm-cache-host"));
        assert_eq!(default.binary_file(Os::Linux), "llm-cache-host");
        assert_eq!(default.binary_file(Os::Windows), "llm-cache-host.exe");
        assert_eq!(default.manifest_file(), "com.browserx.llm_cache.json");

        let mail = HostName::parse("com.example.mail_cache").unwrap();
        assert_eq!(mail.command(), "com.example.mail-cache");
        assert_eq!(mail.folder(), "com.example.mail_cache");
        assert_eq!(mail.binary_file(Os::Linux), "com.example.mail_cache");
        assert_eq!(mail.binary_file(Os::Windows), "com.example.mail_cache.exe");
        assert_eq!(mail.manifest_file(), "com.example.mail_cache.json");
        assert_eq!(
            mail.invocation("com.example.mail-cache", "doctor"),
            "com.example.mail-cache doctor --host-name com.example.mail_cache"
        );
        assert_eq!(default.invocation("llm-cache-host", "doctor"), "llm-cache-host doctor");
    }

    #[test]
    fn an_executable_named_for_a_host_is_that_host() {
        let cases = [
            (
                "/home/u/.local/share/com.example.mail_cache/bin/com.example.mail_cache",
                Os::Linux,
                "com.example.mail_cache",
            ),
            ("C:/L/com.example.mail_cache/bin/com.example.mail_cache.exe", Os::Windows, "com.example.mail_cache"),
            ("/usr/bin/com.example.mail_cache", Os::Linux, "com.example.mail_cache"),
        ];
        for (path, os, expected) in cases {
            assert_eq!(HostName::of_executable(Path::new(path), os).as_str(), expected, "{path}");
        }
        // A file named otherwise is the host it was built for.
        for path in [
            "/usr/bin/llm-cache-host",
            "/usr/bin/com.example.mail-cache",
            "/tmp/llm_cache_host-0123abcd",
            "/x/mail_cache",
        ] {
            assert_eq!(HostName::of_executable(Path::new(path), Os::Linux), HostName::built_in(), "{path}");
        }
    }
}
