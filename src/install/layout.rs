//! Where `install` keeps its own files: the installed copy of the binary, the install record and, on
//! Windows, the manifest files the registry points at.
//!
//! A user install keeps them in the data directory ([`crate::paths`]), which already is a stable
//! per-user place on every OS: `bin/llm-cache-host` beside the `store/` and `logs/` folders. A system
//! install needs a place every user can read: `/usr/local/lib/llm-cache-host` on Linux,
//! `/Library/Application Support/llm-cache-host` on macOS, `%ProgramFiles%\llm-cache-host` on
//! Windows. Those are the default host's names; another host's come from its name
//! ([`crate::host_name`]): `com.example.mail_cache/bin/com.example.mail_cache`, and the command
//! `com.example.mail-cache`.
//!
//! It also says with which permissions `install` creates things. It sets them exactly, whatever the
//! umask: whoever can write a manifest, the binary, the command link or a folder on the way to one of
//! them can put their own program where the browser expects the host, and the browser runs it as you.

use std::path::{Path, PathBuf};

use super::browsers::{Platform, Scope, Unresolved};
use crate::host_name::HostName;
use crate::paths::Os;

/// The Unix mode of every folder `install` creates: 0700 for a user install (what XDG asks of the
/// folders it names, and all the person's browser and shell need), 0755 for a system one, whose
/// files every user's browser reads.
pub fn dir_mode(scope: Scope) -> u32 {
    match scope {
        Scope::User => 0o700,
        Scope::System => 0o755,
    }
}

/// The mode of a manifest: browsers of every user must be able to read a system manifest, and
/// nothing in one is secret.
pub const MANIFEST_MODE: u32 = 0o644;

/// The mode of the installed binary and of the temporary file it is copied into.
pub const BINARY_MODE: u32 = 0o755;

/// The mode of the install record: owner-only in a user install, where it sits in the private data
/// directory; readable by every user in a system install, so that their `doctor` can read it.
pub fn record_mode(scope: Scope) -> u32 {
    match scope {
        Scope::User => 0o600,
        Scope::System => 0o644,
    }
}

/// The folder `install` keeps its own files in.
///
/// # Errors
/// When the variables that locate it are missing (`HOME`, `LOCALAPPDATA`, `ProgramFiles`).
pub fn install_base(scope: Scope, platform: &Platform) -> Result<PathBuf, Unresolved> {
    match (scope, platform.os) {
        (Scope::User, _) => platform
            .data_dir()
            .ok_or_else(|| Unresolved("no data directory: set LLM_CACHE_DIR or HOME (LOCALAPPDATA on Windows)".into())),
        (Scope::System, Os::Linux) => Ok(PathBuf::from("/usr/local/lib").join(platform.host.folder())),
        (Scope::System, Os::MacOs) => Ok(PathBuf::from("/Library/Application Support").join(platform.host.folder())),
        (Scope::System, Os::Windows) => platform
            .var("ProgramFiles")
            .map(|dir| dir.join(platform.host.folder()))
            .ok_or_else(|| Unresolved("ProgramFiles is not set".into())),
    }
}

/// The installed copy of the binary.
///
/// # Errors
/// As [`install_base`].
pub fn binary_path(scope: Scope, platform: &Platform) -> Result<PathBuf, Unresolved> {
    Ok(binary_in(&install_base(scope, platform)?, platform))
}

/// The installed copy of `platform`'s host binary in the install base `base`.
pub fn binary_in(base: &Path, platform: &Platform) -> PathBuf {
    base.join("bin").join(platform.host.binary_file(platform.os))
}

/// Where `install` links the host's command (`llm-cache-host`, or `com.example.mail-cache` for
/// `com.example.mail_cache`) so that a shell finds it: `~/.local/bin` for a user install (the XDG
/// folder for a user's executables, on PATH in most Linux shells), `/usr/local/bin` for a system one.
/// None on Windows, where the installed binary's full path is printed instead.
pub fn command_link(scope: Scope, platform: &Platform) -> Option<PathBuf> {
    let dir = match (scope, platform.os) {
        (_, Os::Windows) => return None,
        (Scope::User, _) => platform.home()?.join(".local").join("bin"),
        (Scope::System, _) => PathBuf::from("/usr/local/bin"),
    };
    Some(dir.join(platform.host.command()))
}

/// The record of what `install` wrote, which `uninstall` removes.
///
/// # Errors
/// As [`install_base`].
pub fn record_path(scope: Scope, platform: &Platform) -> Result<PathBuf, Unresolved> {
    Ok(record_in(&install_base(scope, platform)?, &platform.host))
}

/// The install record of `host` in the install base `base`: `install.json` in a base of the host's
/// own (named after it) and for the default host, `install.<host name>.json` for another host in a
/// folder it may share (`LLM_CACHE_DIR`), so that one host's install never reads or rewrites
/// another's record, and with it the other's manifests.
pub fn record_in(base: &Path, host: &HostName) -> PathBuf {
    base.join(own_file(base, host, "json"))
}

/// The lock file `install` and `uninstall` of `host` hold in the install base `base` while they run,
/// named as [`record_in`] names the record: `install.lock`, or `install.<host name>.lock`.
pub fn lock_in(base: &Path, host: &HostName) -> PathBuf {
    base.join(own_file(base, host, "lock"))
}

/// `install.<extension>` in a base of `host`'s own, else `install.<host name>.<extension>`.
fn own_file(base: &Path, host: &HostName, extension: &str) -> String {
    let own = host.is_default() || base.file_name().is_some_and(|name| name == host.folder());
    if own { format!("install.{extension}") } else { format!("install.{host}.{extension}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_os_and_scope() {
        let linux = Platform::new(Os::Linux, &[("HOME", "/home/u")]);
        let mac = Platform::new(Os::MacOs, &[("HOME", "/Users/u")]);
        let windows =
            Platform::new(Os::Windows, &[("LOCALAPPDATA", "C:/Users/u/AppData/Local"), ("ProgramFiles", "C:/PF")]);
        let cases = [
            (&linux, Scope::User, "/home/u/.local/share/llm-cache-host/bin/llm-cache-host"),
            (&linux, Scope::System, "/usr/local/lib/llm-cache-host/bin/llm-cache-host"),
            (&mac, Scope::User, "/Users/u/Library/Application Support/llm-cache-host/bin/llm-cache-host"),
            (&mac, Scope::System, "/Library/Application Support/llm-cache-host/bin/llm-cache-host"),
            (&windows, Scope::User, "C:/Users/u/AppData/Local/llm-cache-host/bin/llm-cache-host.exe"),
            (&windows, Scope::System, "C:/PF/llm-cache-host/bin/llm-cache-host.exe"),
        ];
        for (platform, scope, binary) in cases {
            assert_eq!(binary_path(scope, platform).unwrap(), PathBuf::from(binary), "{:?} {scope:?}", platform.os);
        }
        assert_eq!(
            record_path(Scope::User, &Platform::new(Os::Linux, &[("LLM_CACHE_DIR", "/d")])).unwrap(),
            PathBuf::from("/d/install.json")
        );
        assert!(install_base(Scope::User, &Platform::new(Os::Linux, &[])).is_err());

        let mail = crate::host_name::HostName::parse("com.example.mail_cache").unwrap();
        let cases = [
            (&linux, Scope::User, "/home/u/.local/share/com.example.mail_cache/bin/com.example.mail_cache"),
            (&linux, Scope::System, "/usr/local/lib/com.example.mail_cache/bin/com.example.mail_cache"),
            (&windows, Scope::System, "C:/PF/com.example.mail_cache/bin/com.example.mail_cache.exe"),
        ];
        for (platform, scope, binary) in cases {
            let platform = platform.clone().with_host(mail.clone());
            assert_eq!(binary_path(scope, &platform).unwrap(), PathBuf::from(binary), "{:?} {scope:?}", platform.os);
        }
        let shared = Platform::new(Os::Linux, &[("LLM_CACHE_DIR", "/d")]).with_host(mail.clone());
        assert_eq!(record_path(Scope::User, &shared).unwrap(), PathBuf::from("/d/install.com.example.mail_cache.json"));
        assert_eq!(
            record_path(Scope::User, &linux.clone().with_host(mail.clone())).unwrap(),
            PathBuf::from("/home/u/.local/share/com.example.mail_cache/install.json")
        );
        let linux_mail = linux.clone().with_host(mail);
        assert_eq!(command_link(Scope::User, &linux_mail), Some("/home/u/.local/bin/com.example.mail-cache".into()));
        assert_eq!(command_link(Scope::User, &linux), Some("/home/u/.local/bin/llm-cache-host".into()));
        assert!(install_base(Scope::System, &Platform::new(Os::Windows, &[])).is_err());
    }
}
