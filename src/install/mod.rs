//! Registering the host with browsers: where each browser reads manifests, what `install` writes
//! there and records, and how `uninstall` removes it. The commands' flags are in [`crate::cli`], and
//! the checks of all this in [`crate::doctor`].
//!
//! What runs here runs for a person at a terminal, so unlike host mode it reports on stdout.
//!
//! # Layout
//! - [`browsers`]: the browsers, where each looks for host manifests on each OS (the tables, with
//!   their sources), and which are installed, natively or as Snap/Flatpak builds.
//! - [`layout`]: where `install` keeps its own files (the binary's copy, the record).
//! - [`manifest`]: the host manifest's contents, matching the templates in `manifest/`.
//! - [`record`]: the install record that `uninstall` undoes.
//! - [`package`]: the manifests a package (the .deb) installs for every user, written under its root.
//! - [`allowed`]: which extensions an install allows, united when an install adds one.
//! - [`install`], [`uninstall`]: writing and removing a registration.
//! - [`owner`]: who else could change what `install` writes: the refusal to write a user install into
//!   someone else's folders, and the warnings about folders on the way that others can write.
//! - [`dpkg`]: which files a Debian package owns, which a system install never takes over.
//! - [`policy`]: enterprise policies that block hosts.
//! - [`registry`]: the Windows registry through `reg.exe`.
//! - `windows` (Windows only): removing the running binary, and telling a double-click's console.

pub mod allowed;
pub mod browsers;
pub mod dpkg;
#[allow(clippy::module_inception)] // `install::install` is the `install` command, beside `uninstall`.
pub mod install;
pub mod layout;
pub mod manifest;
pub mod owner;
pub mod package;
pub mod policy;
pub mod record;
pub mod registry;
pub mod uninstall;
#[cfg(windows)]
pub mod windows;

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use browsers::{Browser, Build, Family, Location, Platform, Scope, Unresolved};

/// What the user asked for: which browsers and profiles, which extensions, whose install.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    /// `--browser`: empty means "the ones found installed".
    pub browsers: Vec<Browser>,
    /// `--user-data-dir`: custom Chromium profiles.
    pub user_data_dirs: Vec<PathBuf>,
    /// `--extension-id`: Chrome extension ids for `allowed_origins`.
    pub extension_ids: Vec<String>,
    /// `--firefox-extension-id`: add-on ids for Firefox's `allowed_extensions`.
    pub firefox_extension_ids: Vec<String>,
    /// `--system`: every user's browsers rather than the current user's.
    pub scope: Scope,
}

/// One place a manifest is registered: for a browser, or for a custom profile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Target {
    /// Who it is for, in reports: browser ids (`chrome`, or `chrome, brave` when they share a
    /// location), or `profile <dir>`.
    pub label: String,
    /// The browsers that read it (empty for a custom profile, which any Chromium build may use).
    pub browsers: Vec<Browser>,
    /// Which manifest shape it has.
    pub family: Family,
    /// Where it is.
    pub location: Location,
}

impl Target {
    /// Adds `other`'s browsers if it is the same location; tells whether it was.
    fn absorb(&mut self, other: &Target) -> bool {
        if self.location != other.location {
            return false;
        }
        for browser in &other.browsers {
            if !self.browsers.contains(browser) {
                self.browsers.push(*browser);
            }
        }
        // A custom profile's label names its folder, not browsers.
        if !self.browsers.is_empty() {
            self.label = self.browsers.iter().map(|b| b.id()).collect::<Vec<_>>().join(", ");
        }
        true
    }
}

/// Adds `target` to `targets` unless its location is there already (then the browsers join).
pub fn push_target(targets: &mut Vec<Target>, target: Target) {
    if !targets.iter_mut().any(|old| old.absorb(&target)) {
        targets.push(target);
    }
}

/// The target for `browser` at `scope`.
///
/// # Errors
/// As [`browsers::manifest_location`].
pub fn browser_target(browser: Browser, scope: Scope, platform: &Platform, base: &Path) -> Result<Target, Failure> {
    Ok(Target {
        label: browser.id().to_owned(),
        browsers: vec![browser],
        family: browser.family(),
        location: browsers::manifest_location(browser, scope, platform, base)?,
    })
}

/// The variable that moves the system-wide manifest folders and install record `doctor` and the
/// welcome look at (Linux and macOS) under another folder: for tests, which can't write `/etc`, and for
/// a mounted system image. `install` and `uninstall` don't read it.
pub const SYSTEM_ROOT_VAR: &str = "LLM_CACHE_SYSTEM_ROOT";

/// `path` under the folder [`SYSTEM_ROOT_VAR`] names, when it is set; else `path`.
pub fn under_system_root(platform: &Platform, path: &Path) -> PathBuf {
    match platform.var(SYSTEM_ROOT_VAR) {
        Some(root) if path.is_absolute() => root.join(path.strip_prefix("/").unwrap_or(path)),
        _ => path.to_owned(),
    }
}

/// The install base of a `--system` install, under the system root (see [`SYSTEM_ROOT_VAR`]).
///
/// # Errors
/// As [`layout::install_base`].
pub fn system_base(platform: &Platform) -> Result<PathBuf, Failure> {
    Ok(under_system_root(platform, &layout::install_base(Scope::System, platform)?))
}

/// The target for `browser` registered for every user where `install --system` writes it, its
/// manifest under the system root.
///
/// # Errors
/// As [`browsers::manifest_location`].
pub fn system_target(browser: Browser, platform: &Platform) -> Result<Target, Failure> {
    let mut targets = system_targets(browser, platform)?;
    Ok(targets.swap_remove(0))
}

/// Every target `browser` reads a manifest registered for every user from (each of its system
/// folders, see [`browsers::MANIFEST_FOLDERS`]), their manifests under the system root.
///
/// # Errors
/// As [`browsers::manifest_location`].
pub fn system_targets(browser: Browser, platform: &Platform) -> Result<Vec<Target>, Failure> {
    let locations = browsers::manifest_locations(browser, Scope::System, platform, &system_base(platform)?)?;
    let rooted = |location| match location {
        Location::File { manifest } => Location::File { manifest: under_system_root(platform, &manifest) },
        registry => registry,
    };
    let target = |location| Target {
        label: browser.id().to_owned(),
        browsers: vec![browser],
        family: browser.family(),
        location: rooted(location),
    };
    Ok(locations.into_iter().map(target).collect())
}

/// Whether a manifest is registered at `location`: the file is there (on Windows, the registry key too).
pub fn registered(location: &Location, os: crate::paths::Os) -> bool {
    let key = match location {
        Location::Registry { hive, key, .. } if os == crate::paths::Os::Windows => {
            registry::run(&registry::query_args(*hive, key)).is_ok()
        }
        Location::Registry { .. } => false,
        Location::File { .. } => true,
    };
    key && location.manifest().symlink_metadata().is_ok()
}

/// The manifests registered here for `browsers`: this user's (when `user_base`, the user install's
/// base, is given) and the system-wide ones in every folder a browser reads them from (a package's
/// and `install --system`'s), each location once.
///
/// # Errors
/// When a location can't be worked out.
pub fn registered_targets(
    browsers: &[Browser],
    platform: &Platform,
    user_base: Option<&Path>,
) -> Result<(Vec<Target>, Vec<Target>), Failure> {
    let (mut user, mut system) = (Vec::new(), Vec::new());
    for &browser in browsers {
        if let Some(base) = user_base {
            let target = browser_target(browser, Scope::User, platform, base)?;
            if registered(&target.location, platform.os) {
                push_target(&mut user, target);
            }
        }
        for target in system_targets(browser, platform)? {
            if registered(&target.location, platform.os) {
                push_target(&mut system, target);
            }
        }
    }
    Ok((user, system))
}

/// The target for a custom profile folder.
///
/// # Errors
/// On Windows, where browsers find hosts only through the registry.
pub fn profile_target(dir: &Path, platform: &Platform) -> Result<Target, Failure> {
    let dir = std::path::absolute(dir).map_err(|e| Failure(format!("{}: {e}", dir.display())))?;
    let location = browsers::profile_location(platform.os, &platform.host, &dir).ok_or_else(|| {
        Failure("--user-data-dir does nothing on Windows: browsers there find hosts only through the registry".into())
    })?;
    Ok(Target { label: format!("profile {}", dir.display()), browsers: Vec::new(), family: Family::Chromium, location })
}

/// The browsers found on this machine, with their builds.
pub fn found_browsers(platform: &Platform) -> Vec<(Browser, Vec<Build>)> {
    Browser::ALL
        .into_iter()
        .map(|browser| (browser, browsers::detect(browser, platform, &|path: &Path| path.exists())))
        .filter(|(_, builds)| !builds.is_empty())
        .collect()
}

/// The targets a selection names: its browsers and profiles; with neither, every browser found with
/// a build that can start hosts, or every browser when none is found (a browser installed later then
/// finds the host at once; a manifest for a missing browser is inert).
///
/// # Errors
/// When a location can't be worked out.
pub fn selected_targets(
    selection: &Selection,
    platform: &Platform,
    base: &Path,
    found: &[(Browser, Vec<Build>)],
) -> Result<Vec<Target>, Failure> {
    let mut browsers = selection.browsers.clone();
    if browsers.is_empty() && selection.user_data_dirs.is_empty() {
        browsers = found
            .iter()
            .filter(|(_, builds)| builds.iter().any(Build::can_start_hosts))
            .map(|(browser, _)| *browser)
            .collect();
        if browsers.is_empty() {
            browsers = Browser::ALL.to_vec();
        }
    }
    let mut targets = Vec::new();
    for browser in browsers {
        push_target(&mut targets, browser_target(browser, selection.scope, platform, base)?);
    }
    for dir in &selection.user_data_dirs {
        push_target(&mut targets, profile_target(dir, platform)?);
    }
    Ok(targets)
}

/// The warnings for browsers found only as Snap or Flatpak builds: those among the targets, or every
/// one found when nothing was selected (they were left out for that reason).
pub fn sandbox_warnings(selection: &Selection, targets: &[Target], found: &[(Browser, Vec<Build>)]) -> Vec<String> {
    let by_default = selection.browsers.is_empty() && selection.user_data_dirs.is_empty();
    found
        .iter()
        .filter(|(browser, _)| by_default || targets.iter().any(|t| t.browsers.contains(browser)))
        .filter_map(|(browser, builds)| browsers::sandbox_warning(*browser, builds))
        .collect()
}

/// The lock one host's `install` or `uninstall` holds while it runs (see [`layout::lock_in`]), so
/// that two at once can't both read the record, each add an id, and one write over the other's.
/// It is released when dropped.
pub struct InstallLock {
    /// The open lock file; the lock lasts as long as it is open.
    file: File,
    /// Where it is, for [`InstallLock::remove`].
    path: PathBuf,
}

impl InstallLock {
    /// Takes the lock of `platform`'s host in the install base `base` (which must exist), waiting for
    /// another install or uninstall that holds it, and saying so on `out`.
    ///
    /// # Errors
    /// When the lock file can't be opened or locked.
    pub fn take(base: &Path, platform: &Platform, scope: Scope, out: &mut dyn Write) -> Result<InstallLock, Failure> {
        let path = layout::lock_in(base, &platform.host);
        loop {
            let mut options = OpenOptions::new();
            options.read(true).write(true).create(true).truncate(false);
            // Owner-only where the record is; a Windows file takes its folder's permissions.
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut options, layout::record_mode(scope));
            #[cfg(not(unix))]
            let _ = scope;
            let file = options.open(&path).map_err(io_failure("open", &path))?;
            if !lock_file(&file, false).map_err(io_failure("lock", &path))? {
                say(
                    out,
                    format!(
                        "waiting for another install or uninstall of {} to finish (it holds {})",
                        platform.host,
                        path.display()
                    ),
                );
                lock_file(&file, true).map_err(io_failure("lock", &path))?;
            }
            // An uninstall removes the lock file as it finishes; a lock on a file no longer at the path
            // guards nothing, so the next one is taken on the file there now.
            if is_at(&file, &path) {
                return Ok(InstallLock { file, path });
            }
        }
    }

    /// Removes the lock file while still holding the lock: for an uninstall that removes its folder.
    pub fn remove(self) {
        let _ = std::fs::remove_file(&self.path);
        drop(self.file);
    }
}

/// Takes an exclusive lock on `file` (`flock` on Unix, `LockFileEx` on Windows, which the system lets
/// go when the file is closed or the process ends, however it ends), waiting for it when `wait`; tells
/// whether it was taken.
fn lock_file(file: &File, wait: bool) -> io::Result<bool> {
    if wait {
        file.lock()?;
        return Ok(true);
    }
    match file.try_lock() {
        Ok(()) => Ok(true),
        Err(std::fs::TryLockError::WouldBlock) => Ok(false),
        Err(std::fs::TryLockError::Error(error)) => Err(error),
    }
}

/// Whether the open `file` is the one at `path`.
fn is_at(file: &File, path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let (Ok(open), Ok(there)) = (file.metadata(), std::fs::metadata(path)) else { return false };
        (open.dev(), open.ino()) == (there.dev(), there.ino())
    }
    #[cfg(not(unix))]
    {
        let _ = file;
        path.exists()
    }
}

/// A set-up command that couldn't finish, with the sentence that says why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure(pub String);

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<Unresolved> for Failure {
    fn from(unresolved: Unresolved) -> Failure {
        Failure(unresolved.0)
    }
}

/// Turns an IO error into a failure that names what was being done to which path.
fn io_failure<'a>(doing: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> Failure + 'a {
    move |error| {
        let hint = if error.kind() == io::ErrorKind::PermissionDenied {
            " (a --system install needs root: run it with sudo)"
        } else {
            ""
        };
        Failure(format!("can't {doing} {}: {error}{hint}", path.display()))
    }
}

/// Writes `bytes` to `path` through a temporary file beside it and a rename, so readers see the old
/// file or the new one, never half of one. The file has permissions `mode` (on Unix) from the start.
///
/// # Errors
/// Whatever writing or renaming returns.
pub fn write_atomically(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(format!(".tmp{}", std::process::id()));
    let temporary = PathBuf::from(temporary);
    let written = create_file(&temporary, mode)
        .and_then(|mut file| file.write_all(bytes))
        .and_then(|()| std::fs::rename(&temporary, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written
}

/// Creates `path` as a new file with permissions `mode` (on Unix), replacing a stale one.
///
/// The mode passed to `open` is narrowed by the umask, so it is set again on the open file: under
/// `umask 077` a system manifest must still be readable by everyone. The file never exists with
/// looser permissions than `mode`, and `create_new` won't follow a link planted in its place.
///
/// # Errors
/// Whatever removing the stale file, creating or setting permissions returns.
fn create_file(path: &Path, mode: u32) -> io::Result<File> {
    match std::fs::remove_file(path) {
        Err(error) if error.kind() != io::ErrorKind::NotFound => return Err(error),
        _ => {}
    }
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        let file = options.mode(mode).open(path)?;
        file.set_permissions(std::fs::Permissions::from_mode(mode))?;
        Ok(file)
    }
    #[cfg(not(unix))]
    {
        let _ = mode;
        options.open(path)
    }
}

/// Creates `dir` and its missing parents with permissions `mode` (on Unix, whatever the umask),
/// noting each one created in `created` (outermost first).
///
/// # Errors
/// Whatever creating a folder or setting its permissions returns.
fn create_dirs(dir: &Path, mode: u32, created: &mut Vec<PathBuf>) -> io::Result<()> {
    let missing: Vec<&Path> = dir.ancestors().take_while(|d| !d.as_os_str().is_empty() && !d.exists()).collect();
    for dir in missing.into_iter().rev() {
        // Only Unix sets a mode on the builder; elsewhere it is used as made.
        #[cfg_attr(not(unix), allow(unused_mut))]
        let mut builder = std::fs::DirBuilder::new();
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, mode);
        match builder.create(dir) {
            Ok(()) => created.push(dir.to_owned()),
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(error) => return Err(error),
        }
        // As for files, the umask may have narrowed the mode: set it exactly.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode))?;
        }
    }
    #[cfg(not(unix))]
    let _ = mode;
    Ok(())
}

/// Prints a line; a closed stdout is no reason to stop installing.
pub fn say(out: &mut dyn Write, line: impl fmt::Display) {
    let _ = writeln!(out, "{line}");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paths::Os;

    fn selection(browsers: &[Browser], scope: Scope) -> Selection {
        Selection {
            browsers: browsers.to_vec(),
            user_data_dirs: Vec::new(),
            extension_ids: vec![manifest::DEFAULT_EXTENSION_ID.into()],
            firefox_extension_ids: vec![manifest::DEFAULT_FIREFOX_EXTENSION_ID.into()],
            scope,
        }
    }

    #[test]
    fn shared_locations_become_one_target() {
        let windows = Platform::new(Os::Windows, &[("LOCALAPPDATA", "C:/L")]);
        let picked = selection(&[Browser::Chrome, Browser::Brave, Browser::Vivaldi, Browser::Edge], Scope::User);
        let targets = selected_targets(&picked, &windows, Path::new("C:/L/llm-cache-host"), &[]).unwrap();
        assert_eq!(targets.iter().map(|t| t.label.as_str()).collect::<Vec<_>>(), ["chrome, brave, vivaldi", "edge"]);

        let linux = Platform::new(Os::Linux, &[("HOME", "/home/u")]);
        let picked = selection(&[Browser::Chromium, Browser::Brave, Browser::Chrome], Scope::System);
        let targets = selected_targets(&picked, &linux, Path::new("/b"), &[]).unwrap();
        assert_eq!(targets.iter().map(|t| t.label.as_str()).collect::<Vec<_>>(), ["chromium, brave", "chrome"]);
    }

    #[test]
    fn defaults_follow_what_is_installed() {
        let linux = Platform::new(Os::Linux, &[("HOME", "/home/u")]);
        let none = selection(&[], Scope::User);
        let all = selected_targets(&none, &linux, Path::new("/b"), &[]).unwrap();
        assert_eq!(all.len(), Browser::ALL.len(), "nothing found: every browser");
        let found = [
            (Browser::Chromium, vec![Build::Native("/usr/bin/chromium".into())]),
            (Browser::Firefox, vec![Build::Snap("/snap/bin/firefox".into())]),
        ];
        let targets = selected_targets(&none, &linux, Path::new("/b"), &found).unwrap();
        assert_eq!(
            targets.iter().map(|t| t.label.as_str()).collect::<Vec<_>>(),
            ["chromium"],
            "sandboxed builds skipped"
        );
        // A folder that is absolute on the machine running the test: the profile's folder is made
        // absolute by that machine's rules, as it is where that machine's browser is started.
        let profile = std::env::temp_dir().join("p");
        let mut profile_only = none.clone();
        profile_only.user_data_dirs = vec![profile.clone()];
        let targets = selected_targets(&profile_only, &linux, Path::new("/b"), &found).unwrap();
        let label = format!("profile {}", profile.display());
        assert_eq!(targets.iter().map(|t| t.label.as_str()).collect::<Vec<_>>(), [label.as_str()]);
        let windows = Platform::new(Os::Windows, &[("LOCALAPPDATA", "C:/L")]);
        assert!(selected_targets(&profile_only, &windows, Path::new("C:/b"), &[]).unwrap_err().0.contains("registry"));
    }

    #[test]
    fn sandboxed_browsers_are_named() {
        let found = [
            (Browser::Chromium, vec![Build::Native("/usr/bin/chromium".into())]),
            (Browser::Firefox, vec![Build::Snap("/snap/bin/firefox".into())]),
        ];
        let linux = Platform::new(Os::Linux, &[("HOME", "/home/u")]);
        let by_default = selection(&[], Scope::User);
        let targets = selected_targets(&by_default, &linux, Path::new("/b"), &found).unwrap();
        let warnings = sandbox_warnings(&by_default, &targets, &found);
        assert!(warnings.len() == 1 && warnings[0].starts_with("firefox is installed only as a Snap"), "{warnings:?}");
        let chromium = selection(&[Browser::Chromium], Scope::User);
        let targets = selected_targets(&chromium, &linux, Path::new("/b"), &found).unwrap();
        assert!(sandbox_warnings(&chromium, &targets, &found).is_empty(), "firefox was not asked for");
    }

    #[test]
    fn created_dirs_are_noted_outermost_first() {
        let tmp = tempfile::tempdir().unwrap();
        let mut created = Vec::new();
        create_dirs(&tmp.path().join("a/b/c"), 0o700, &mut created).unwrap();
        create_dirs(&tmp.path().join("a/b"), 0o700, &mut created).unwrap();
        assert_eq!(created, [tmp.path().join("a"), tmp.path().join("a/b"), tmp.path().join("a/b/c")]);
    }

    #[test]
    fn atomic_writes_leave_no_temporary() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("m.json");
        write_atomically(&path, b"one", 0o600).unwrap();
        write_atomically(&path, b"two", 0o644).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 1);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o7777, 0o644);
        }
    }
}
