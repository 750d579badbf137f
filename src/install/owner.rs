//! Who else could change what `install` writes.
//!
//! The `sudo` mistake: a user install run as root (or as anyone else) into a person's home would
//! leave root-owned folders there, and a data directory the person's browser can't open. So a user
//! install refuses to write under a directory owned by someone other than the user running it.
//! For each path to be written, the nearest folder that already exists is the one whose owner
//! decides: that is where a new folder or file would be created. Sticky world-writable folders such
//! as `/tmp` are shared by design, so their owner doesn't count.
//!
//! Folders others can write: whoever can write a folder on the way to a manifest or to the binary
//! can rename it away and put their own in its place, and the browser then runs their program as
//! you. `install` makes what it creates writable by its owner only, but the folders it finds (`$HOME`,
//! `~/.config`, a profile) are the person's, so `install` and `doctor` name each one that is group-
//! or world-writable, or belongs to a user other than you or root, with the command that fixes it.
//! This is the rule OpenSSH applies to `authorized_keys`, except that a sticky folder (`/tmp`) passes:
//! there others can't rename or remove what isn't theirs, and the folders inside it are checked too.

use std::path::Path;

/// The nearest existing ancestor of `path` (or `path` itself).
pub fn nearest_existing(path: &Path) -> Option<&Path> {
    path.ancestors().find(|dir| dir.symlink_metadata().is_ok())
}

/// Checks that each of `paths` would be created in a folder the current user owns.
///
/// # Errors
/// A sentence naming the folder, its owner and the current user, and what to do instead.
#[cfg(unix)]
pub fn check_user_owned(paths: &[&Path]) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;

    // SAFETY: geteuid has no preconditions and can't fail.
    let euid = unsafe { libc::geteuid() };
    for path in paths {
        let Some(dir) = nearest_existing(path) else { continue };
        let Ok(meta) = std::fs::metadata(dir) else { continue };
        let shared = meta.mode() & 0o1000 != 0;
        if meta.uid() != euid && !shared {
            let who = if euid == 0 { "root (uid 0)".to_owned() } else { format!("uid {euid}") };
            return Err(format!(
                "refusing a user install: {} is owned by uid {}, but this runs as {who}; files written there \
                 would belong to the wrong user and the browser's host couldn't use them. Run it as the user \
                 who owns that folder (without sudo), or pass --system to install for every user",
                dir.display(),
                meta.uid(),
            ));
        }
    }
    Ok(())
}

/// Windows has no such mistake to catch: a user install writes under `%LOCALAPPDATA%` and `HKCU`.
#[cfg(not(unix))]
pub fn check_user_owned(_paths: &[&Path]) -> Result<(), String> {
    Ok(())
}

/// The warnings for `paths` and every folder above them, up to `/`: one sentence for each that
/// someone other than the current user (and root) could change. A path that doesn't exist yet is
/// skipped; its folders are still checked. A link is followed: the folders on the way to what it
/// points at count too (a link's own mode means nothing, and its folder is checked).
#[cfg(unix)]
pub fn exposed(paths: &[&Path]) -> Vec<String> {
    use std::collections::BTreeSet;
    use std::os::unix::fs::MetadataExt;
    use std::path::PathBuf;

    // SAFETY: geteuid has no preconditions and can't fail.
    let euid = unsafe { libc::geteuid() };
    let mut seen: BTreeSet<PathBuf> = BTreeSet::new();
    let mut warnings = Vec::new();
    for path in paths {
        let real = nearest_existing(path).and_then(|dir| dir.canonicalize().ok());
        for dir in path.ancestors().chain(real.iter().flat_map(|real| real.ancestors())) {
            if dir.as_os_str().is_empty() || !seen.insert(dir.to_owned()) {
                continue;
            }
            let Ok(meta) = std::fs::symlink_metadata(dir) else { continue };
            if meta.file_type().is_symlink() {
                continue;
            }
            warnings.extend(exposure(dir, meta.mode(), meta.is_dir(), meta.uid(), euid));
        }
    }
    warnings
}

/// Windows keeps no Unix modes; its folders under `%LOCALAPPDATA%` are the user's own.
#[cfg(not(unix))]
pub fn exposed(_paths: &[&Path]) -> Vec<String> {
    Vec::new()
}

/// The warning for one file or folder with this `mode` and owner `uid`, when someone other than
/// `euid` and root could change it.
#[cfg(unix)]
fn exposure(path: &Path, mode: u32, is_dir: bool, uid: u32, euid: u32) -> Option<String> {
    const RISK: &str = "so another user could put their own program where the browser expects the host";
    let sticky = is_dir && mode & 0o1000 != 0;
    if mode & 0o022 != 0 && !sticky {
        let who = if mode & 0o002 != 0 { "everyone" } else { "its group" };
        return Some(format!(
            "{} (mode {:04o}) is writable by {who}, {RISK}: run `chmod go-w {}`",
            path.display(),
            mode & 0o7777,
            shell_quoted(path)
        ));
    }
    if uid != euid && uid != 0 {
        return Some(format!(
            "{} belongs to uid {uid}, neither you nor root, {RISK}: have it owned by you or root, or install elsewhere",
            path.display()
        ));
    }
    None
}

/// `path` as a shell word: bare when it holds only characters no shell treats specially, else in
/// single quotes.
#[cfg(unix)]
fn shell_quoted(path: &Path) -> String {
    let text = path.to_string_lossy();
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_alphanumeric() || b"/._-+,:@%".contains(&b)) {
        text.into_owned()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_existing_folder() {
        let tmp = tempfile::tempdir().unwrap();
        let deep = tmp.path().join("a/b/c.json");
        assert_eq!(nearest_existing(&deep), Some(tmp.path()));
        assert_eq!(nearest_existing(tmp.path()), Some(tmp.path()));
    }

    #[cfg(unix)]
    #[test]
    fn own_and_sticky_folders_pass() {
        let tmp = tempfile::tempdir().unwrap();
        let inside = tmp.path().join("x/y.json");
        check_user_owned(&[&inside]).unwrap();
        // /tmp is sticky and world-writable: its owner doesn't count.
        check_user_owned(&[Path::new("/tmp/llm-cache-host-owner-test/never/made")]).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn who_else_can_change_a_path() {
        let path = Path::new("/h/a b/it's");
        let cases = [
            (0o40755, true, 1000, None),
            (0o40700, true, 0, None),
            // /tmp: world-writable but sticky, owned by root.
            (0o41777, true, 0, None),
            (0o40777, true, 1000, Some("(mode 0777) is writable by everyone")),
            (0o40775, true, 1000, Some("(mode 0775) is writable by its group")),
            (0o100666, false, 1000, Some("(mode 0666) is writable by everyone")),
            // The sticky bit means nothing on a file.
            (0o101666, false, 1000, Some("(mode 1666) is writable by everyone")),
            (0o40755, true, 1001, Some("belongs to uid 1001, neither you nor root")),
            (0o41777, true, 1001, Some("belongs to uid 1001, neither you nor root")),
        ];
        for (mode, is_dir, uid, expected) in cases {
            let warning = exposure(path, mode, is_dir, uid, 1000);
            match expected {
                None => assert_eq!(warning, None, "{mode:o}"),
                Some(part) => {
                    let warning = warning.unwrap_or_default();
                    assert!(warning.starts_with("/h/a b/it's ") && warning.contains(part), "{mode:o}: {warning}");
                }
            }
        }
        let loose = exposure(path, 0o40777, true, 1000, 1000).unwrap();
        assert!(loose.ends_with(r#"run `chmod go-w '/h/a b/it'\''s'`"#), "{loose}");
        assert_eq!(shell_quoted(Path::new("/home/u/.config")), "/home/u/.config");
    }
}
