//! The manifests a package installs for every user (a .deb's): one in each system folder of
//! [`MANIFEST_FOLDERS`], written under the package's staging root by `manifest --root`, so that the
//! package holds exactly the folders `doctor` checks, with the bytes `install` writes.

use std::path::{Path, PathBuf};

use super::allowed::Allowed;
use super::browsers::{Browser, Location, MANIFEST_FOLDERS, Platform, Scope, manifest_locations};
use super::layout::{MANIFEST_MODE, dir_mode};
use super::manifest::HostManifest;
use super::{Failure, Target, create_dirs, io_failure, push_target, write_atomically};
use crate::paths::Os;

/// Every system folder of `os` in the table, once each, with the browsers that read it, for the
/// host of `platform`: the manifests a package for `os` installs.
///
/// # Errors
/// On Windows, where browsers find hosts through the registry, not in folders.
pub fn package_targets(platform: &Platform) -> Result<Vec<Target>, Failure> {
    if platform.os == Os::Windows {
        return Err(Failure(
            "browsers on Windows find hosts through the registry, so there are no folders to write a package's \
             manifests into"
                .into(),
        ));
    }
    let mut targets = Vec::new();
    for browser in MANIFEST_FOLDERS.iter().filter(|row| row.os == platform.os).map(|row| row.browser) {
        for location in manifest_locations(browser, Scope::System, platform, Path::new("/"))? {
            let target =
                Target { label: browser.id().to_owned(), browsers: vec![browser], family: browser.family(), location };
            push_target(&mut targets, target);
        }
    }
    Ok(targets)
}

/// Writes the manifests a package installs, for the host of `platform` started from `binary` and
/// allowing `allowed`, under the staging root `root`: each file at its system path below `root`,
/// readable by everyone, its missing folders made as a system install makes them. A browser family
/// with no id allowed gets no manifest, as the host isn't registered with those browsers. Returns
/// what it wrote: each file's path on the installed system, and the browsers that read it.
///
/// # Errors
/// As [`package_targets`], and when a folder or file can't be written.
pub fn write_package_manifests(
    root: &Path,
    binary: &Path,
    allowed: &Allowed,
    platform: &Platform,
) -> Result<Vec<(PathBuf, Vec<Browser>)>, Failure> {
    let mut written = Vec::new();
    for target in package_targets(platform)? {
        if allowed.of(target.family).is_empty() {
            continue;
        }
        let Location::File { manifest: installed } = target.location else { continue };
        let staged = root.join(installed.strip_prefix("/").unwrap_or(&installed));
        if let Some(folder) = staged.parent() {
            create_dirs(folder, dir_mode(Scope::System), &mut Vec::new())
                .map_err(io_failure("create the folder", folder))?;
        }
        let text =
            HostManifest::new(&platform.host, target.family, binary, &allowed.chrome, &allowed.firefox).to_text();
        write_atomically(&staged, text.as_bytes(), MANIFEST_MODE).map_err(io_failure("write", &staged))?;
        written.push((installed, target.browsers));
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(os: Os, allowed: &Allowed) -> Vec<(String, Vec<&'static str>)> {
        let root = tempfile::tempdir().unwrap();
        let platform = Platform::new(os, &[]);
        write_package_manifests(root.path(), Path::new("/usr/bin/llm-cache-host"), allowed, &platform)
            .unwrap()
            .into_iter()
            .map(|(path, browsers)| {
                let staged = root.path().join(path.strip_prefix("/").unwrap());
                let text = std::fs::read_to_string(&staged).unwrap();
                let binary = Path::new("/usr/bin/llm-cache-host");
                let family = browsers[0].family();
                let expected =
                    HostManifest::new(&platform.host, family, binary, &allowed.chrome, &allowed.firefox).to_text();
                assert_eq!(text, expected, "{}", path.display());
                #[cfg(unix)]
                {
                    use std::os::unix::fs::PermissionsExt;
                    let mode = std::fs::metadata(&staged).unwrap().permissions().mode() & 0o777;
                    assert_eq!(mode, 0o644, "{}", path.display());
                    let folder = std::fs::metadata(staged.parent().unwrap()).unwrap().permissions().mode() & 0o777;
                    assert_eq!(folder, 0o755, "{}", path.display());
                }
                (path.display().to_string(), browsers.iter().map(|b| b.id()).collect())
            })
            .collect()
    }

    fn both() -> Allowed {
        Allowed { chrome: vec!["abcdefghijklmnopabcdefghijklmnop".into()], firefox: vec!["a@b".into()] }
    }

    // Exact paths: a package is staged on the system it is for (Windows would join them with a backslash).
    #[cfg(unix)]
    #[test]
    fn a_linux_package_has_a_manifest_in_every_system_folder_once() {
        let name = "com.browserx.llm_cache.json";
        let expected: Vec<(String, Vec<&str>)> = [
            ("/etc/opt/chrome/native-messaging-hosts", vec!["chrome"]),
            ("/etc/chromium/native-messaging-hosts", vec!["chromium", "brave", "vivaldi"]),
            ("/etc/opt/edge/native-messaging-hosts", vec!["edge"]),
            ("/etc/opt/brave/native-messaging-hosts", vec!["brave"]),
            ("/etc/opt/vivaldi/native-messaging-hosts", vec!["vivaldi"]),
            ("/usr/lib/mozilla/native-messaging-hosts", vec!["firefox"]),
        ]
        .into_iter()
        .map(|(dir, browsers)| (format!("{dir}/{name}"), browsers))
        .collect();
        assert_eq!(written(Os::Linux, &both()), expected);
    }

    #[test]
    fn a_family_without_ids_gets_no_manifest() {
        let chrome_only = Allowed { firefox: Vec::new(), ..both() };
        let files = written(Os::Linux, &chrome_only);
        assert_eq!(files.len(), 5);
        assert!(files.iter().all(|(_, browsers)| !browsers.contains(&"firefox")), "{files:?}");
        let firefox_only = Allowed { chrome: Vec::new(), ..both() };
        assert_eq!(written(Os::Linux, &firefox_only).len(), 1);
    }

    #[test]
    fn a_mac_package_and_no_windows_one() {
        let files = written(Os::MacOs, &both());
        assert_eq!(files.len(), 4, "{files:?}");
        assert!(package_targets(&Platform::new(Os::Windows, &[])).is_err());
    }
}
