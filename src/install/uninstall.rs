//! `uninstall`: remove exactly what the install record says `install` wrote: the manifests, the
//! registry keys, the binary's copy and its command link, the folders it created (once empty again)
//! and the record. The data directory's `store/` and `logs/` are the user's data and stay, unless
//! `--purge` asks for them to go too.

use std::io::{self, Write};
use std::path::Path;

use super::browsers::{Location, Platform, Scope};
use super::record::Record;
use super::{Failure, layout, registry, say};
use crate::paths::Os;

/// Uninstalls the `scope` install on `platform`, reporting on `out`.
///
/// # Errors
/// When the record can't be read, or something it names couldn't be removed (everything else is
/// still removed, and the record is kept listing what is left).
pub fn uninstall(scope: Scope, purge: bool, platform: &Platform, out: &mut dyn Write) -> Result<(), Failure> {
    let record_path = layout::record_path(scope, platform)?;
    let Some(mut record) = Record::load(&record_path).map_err(|e| Failure(e.to_string()))? else {
        say(out, format!("Nothing to uninstall: there is no install record at {}.", record_path.display()));
        return data_left(purge, platform, out);
    };
    let mut failures = Vec::new();
    record.entries.retain(|target| match remove_target(&target.location, platform.os) {
        Ok(()) => {
            say(out, format!("OK   {}: removed {}", target.label, target.location));
            false
        }
        Err(why) => {
            say(out, format!("FAIL {}: {why}", target.label));
            failures.push(why);
            true
        }
    });
    if let Some(link) = record.link.take() {
        // Only a link that still points at the binary install copied; anything else there is not ours.
        let ours = std::fs::read_link(&link).is_ok_and(|target| record.binary.as_ref().is_none_or(|b| *b == target));
        if ours {
            match remove_file(&link) {
                Ok(()) => say(out, format!("OK   removed the command link {}", link.display())),
                Err(error) => say(out, format!("NOTE can't remove {}: {error}", link.display())),
            }
        }
    }
    if let Some(binary) = record.binary.take() {
        match remove_file(&binary) {
            Ok(()) => say(out, format!("OK   removed the host binary {}", binary.display())),
            Err(error) => {
                let why = format!("can't remove {}: {error}", binary.display());
                say(out, format!("FAIL {why}"));
                failures.push(why);
                record.binary = Some(binary);
            }
        }
    }
    if failures.is_empty() {
        remove_file(&record_path).map_err(|e| Failure(format!("can't remove {}: {e}", record_path.display())))?;
        // Innermost first; a folder that has anything else in it now is not ours to remove.
        let mut dirs = std::mem::take(&mut record.created_dirs);
        dirs.sort_by_key(|dir| std::cmp::Reverse(dir.components().count()));
        for dir in dirs {
            let _ = std::fs::remove_dir(&dir);
        }
        let host = &platform.host;
        let doctor = if host.is_default() { String::new() } else { format!(" --host-name {host}") };
        say(
            out,
            format!(
                "Uninstalled. The `{}` command went with it: from the source folder, \
                 `target/release/llm-cache-host doctor{doctor}` checks that no browser still finds the host.",
                host.command()
            ),
        );
        data_left(purge, platform, out)
    } else {
        record.save(&record_path).map_err(|e| Failure(format!("can't update {}: {e}", record_path.display())))?;
        Err(Failure(format!("{} of the installed files or keys could not be removed", failures.len())))
    }
}

/// Removes the cached data with `purge`; otherwise says where it is.
fn data_left(purge: bool, platform: &Platform, out: &mut dyn Write) -> Result<(), Failure> {
    let Some(data_dir) = platform.data_dir() else { return Ok(()) };
    let folders = [crate::paths::store_dir(&data_dir), crate::paths::log_dir(&data_dir)];
    if !purge {
        if folders.iter().any(|folder| folder.exists()) {
            say(
                out,
                format!(
                    "The cached data, logs and settings stay in {}; `{} uninstall --purge` (or deleting that folder) removes them.",
                    data_dir.display(),
                    platform.host.command()
                ),
            );
        }
        return Ok(());
    }
    for folder in &folders {
        match std::fs::remove_dir_all(folder) {
            Ok(()) => say(out, format!("OK   removed {}", folder.display())),
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(error) => return Err(Failure(format!("can't remove {}: {error}", folder.display()))),
        }
    }
    // The settings (the store-wide quota) bound the data just removed, so they go with it.
    let config = crate::config::config_path(&data_dir);
    match remove_file(&config) {
        Ok(()) => {}
        Err(error) => return Err(Failure(format!("can't remove {}: {error}", config.display()))),
    }
    // The data directory itself goes when nothing else is left in it.
    let _ = std::fs::remove_dir(&data_dir);
    Ok(())
}

/// Removes a manifest, and on Windows its registry key.
fn remove_target(location: &Location, os: Os) -> Result<(), String> {
    if let Location::Registry { hive, key, .. } = location
        && os == Os::Windows
    {
        // A key someone already deleted is as good as removed.
        let exists = registry::run(&registry::query_args(*hive, key)).is_ok();
        if exists {
            registry::run(&registry::delete_args(*hive, key))?;
        }
    }
    let manifest = location.manifest();
    remove_file(manifest).map_err(|error| format!("can't remove {}: {error}", manifest.display()))
}

/// Removes a file; one that is gone already counts as removed.
fn remove_file(path: &Path) -> io::Result<()> {
    match std::fs::remove_file(path) {
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}
