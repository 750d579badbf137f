//! The `sudo` mistake: a user install run as root (or as anyone else) into a person's home would
//! leave root-owned folders there, and a data directory the person's browser can't open. So a user
//! install refuses to write under a directory owned by someone other than the user running it.
//!
//! For each path to be written, the nearest folder that already exists is the one whose owner
//! decides: that is where a new folder or file would be created. Sticky world-writable folders such
//! as `/tmp` are shared by design, so their owner doesn't count.

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
}
