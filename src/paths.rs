//! Where the host keeps its files: the data directory, the store and the logs inside it.
//!
//! The data directory is `$LLM_CACHE_DIR` if set, else the OS's per-user data directory plus the
//! host's folder: `llm-cache-host` for the default host, the host name for any other
//! ([`crate::host_name`]), so that two vendors' hosts never share a store. The choice is a pure
//! function of the OS, the folder and the environment, so the rules for all three OSes are tested on
//! any of them.

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};

use crate::host_name::HostName;

/// The variable that overrides the data directory.
pub const DATA_DIR_VAR: &str = "LLM_CACHE_DIR";

/// The operating systems whose conventions the host knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Os {
    /// Linux and other Unix-likes that follow XDG.
    Linux,
    /// macOS.
    MacOs,
    /// Windows.
    Windows,
}

impl Os {
    /// The OS this binary was built for.
    pub fn current() -> Os {
        if cfg!(target_os = "macos") {
            Os::MacOs
        } else if cfg!(windows) {
            Os::Windows
        } else {
            Os::Linux
        }
    }
}

/// The data directory for `os` and the host's `folder` ([`HostName::folder`]), reading variables
/// through `var`.
///
/// Returns `None` when neither the override nor the OS's own variables are set.
pub fn data_dir_for(os: Os, folder: &str, var: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let set = |name: &str| var(name).filter(|value| !value.is_empty()).map(PathBuf::from);
    if let Some(dir) = set(DATA_DIR_VAR) {
        return Some(dir);
    }
    let base = match os {
        Os::Linux => set("XDG_DATA_HOME")
            .filter(|dir| is_linux_absolute(dir))
            .or_else(|| set("HOME").map(|home| home.join(".local").join("share")))?,
        Os::MacOs => set("HOME")?.join("Library").join("Application Support"),
        Os::Windows => set("LOCALAPPDATA")?,
    };
    Some(base.join(folder))
}

/// Whether `path` is absolute by Linux's rule: it starts at the root. On Linux this is
/// `Path::is_absolute`; Windows' rule also wants a drive, and tests describe a Linux machine on
/// Windows too.
pub fn is_linux_absolute(path: &Path) -> bool {
    path.has_root()
}

/// The data directory of this process, for the host it is ([`HostName::current`]).
///
/// # Errors
/// `NotFound` when no variable says where the user's data lives; `InvalidInput` when
/// `LLM_CACHE_DIR` is relative, since a browser starts the host in whatever folder it likes.
pub fn data_dir() -> io::Result<PathBuf> {
    let dir =
        data_dir_for(Os::current(), HostName::current().folder(), |name| std::env::var_os(name)).ok_or_else(|| {
            io::Error::new(io::ErrorKind::NotFound, format!("no data directory: set {DATA_DIR_VAR} or HOME"))
        })?;
    if !dir.is_absolute() {
        let why = format!("{DATA_DIR_VAR} is {}, a relative path: set it to an absolute one", dir.display());
        return Err(io::Error::new(io::ErrorKind::InvalidInput, why));
    }
    Ok(dir)
}

/// The LMDB environment's folder inside the data directory.
pub fn store_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("store")
}

/// The log folder inside the data directory.
pub fn log_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("logs")
}

/// Creates `dir` and its missing parents readable by the owner only (0700 on Unix), and narrows an
/// existing `dir` to that too: it holds people's emails and documents.
///
/// # Errors
/// Whatever creating the folders or setting their permissions returns.
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
    }
    #[cfg(not(unix))]
    {
        std::fs::create_dir_all(dir)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn lookup(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let vars: HashMap<String, OsString> = vars.iter().map(|(k, v)| (k.to_string(), OsString::from(v))).collect();
        move |name| vars.get(name).cloned()
    }

    #[test]
    fn override_wins_on_every_os() {
        for os in [Os::Linux, Os::MacOs, Os::Windows] {
            let vars = lookup(&[(DATA_DIR_VAR, "/custom"), ("HOME", "/home/u"), ("LOCALAPPDATA", "C:\\L")]);
            assert_eq!(data_dir_for(os, "llm-cache-host", vars), Some(PathBuf::from("/custom")));
        }
    }

    #[test]
    fn per_os_defaults() {
        let cases = [
            (Os::Linux, vec![("HOME", "/home/u")], Some("/home/u/.local/share/llm-cache-host")),
            (Os::Linux, vec![("HOME", "/home/u"), ("XDG_DATA_HOME", "/xdg")], Some("/xdg/llm-cache-host")),
            // XDG says a relative XDG_DATA_HOME is invalid and must be ignored.
            (
                Os::Linux,
                vec![("HOME", "/home/u"), ("XDG_DATA_HOME", "rel")],
                Some("/home/u/.local/share/llm-cache-host"),
            ),
            (Os::Linux, vec![("HOME", "/home/u"), (DATA_DIR_VAR, "")], Some("/home/u/.local/share/llm-cache-host")),
            (Os::MacOs, vec![("HOME", "/Users/u")], Some("/Users/u/Library/Application Support/llm-cache-host")),
            (
                Os::Windows,
                vec![("LOCALAPPDATA", "C:/Users/u/AppData/Local")],
                Some("C:/Users/u/AppData/Local/llm-cache-host"),
            ),
            (Os::Linux, vec![], None),
            (Os::Windows, vec![("HOME", "/home/u")], None),
        ];
        for (os, vars, expected) in cases {
            assert_eq!(
                data_dir_for(os, "llm-cache-host", lookup(&vars)),
                expected.map(PathBuf::from),
                "{os:?} {vars:?}"
            );
        }
    }

    #[test]
    fn each_host_has_its_own_folder() {
        let mail = HostName::parse("com.example.mail_cache").unwrap();
        let home = lookup(&[("HOME", "/home/u")]);
        assert_eq!(
            data_dir_for(Os::Linux, mail.folder(), &home),
            Some("/home/u/.local/share/com.example.mail_cache".into())
        );
        let default = HostName::default_host();
        assert_eq!(
            data_dir_for(Os::Linux, default.folder(), &home),
            Some("/home/u/.local/share/llm-cache-host".into())
        );
        // The override is one folder, whichever host reads it.
        let both = lookup(&[(DATA_DIR_VAR, "/custom"), ("HOME", "/home/u")]);
        assert_eq!(data_dir_for(Os::Linux, mail.folder(), both), Some("/custom".into()));
    }

    #[cfg(unix)]
    #[test]
    fn private_dirs_are_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("a").join("b");
        create_private_dir(&dir).unwrap();
        for path in [tmp.path().join("a"), dir.clone()] {
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o700, "{path:?}");
        }
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        create_private_dir(&dir).unwrap();
        assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
    }
}
