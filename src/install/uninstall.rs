//! `uninstall`: remove exactly what the install record says `install` wrote: the manifests, the
//! registry keys, the binary's copy and its command link, the folders it created (once empty again)
//! and the record. The data directory's `store/` and `logs/` are the user's data and stay, unless
//! `--purge` asks for them to go too.
//!
//! `uninstall --extension-id ID` removes one extension instead: the manifests are written again
//! without it, those of a browser family left with no extension go, and the whole install goes with
//! the last extension.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::allowed::Allowed;
use super::browsers::{Location, Platform, Scope};
use super::install::{allowed_phrase, package_owner, write_target};
use super::manifest::HostManifest;
use super::record::Record;
use super::{Failure, InstallLock, layout, registry, say};
use crate::host_name::HostName;
use crate::paths::Os;

/// Uninstalls the `scope` install on `platform`, or only the extensions `only` names, reporting on
/// `out`.
///
/// # Errors
/// When the record can't be read, an extension named isn't allowed, or something the record names
/// couldn't be removed (everything else is still removed, and the record is kept listing what is
/// left).
pub fn uninstall(
    scope: Scope,
    purge: bool,
    only: &Allowed,
    platform: &Platform,
    out: &mut dyn Write,
) -> Result<(), Failure> {
    let base = std::path::absolute(layout::install_base(scope, platform)?)
        .map_err(|e| Failure(format!("no install folder: {e}")))?;
    // With no install folder there is no install to guard, and none is made just for the lock.
    let mut lock = if base.is_dir() { Some(InstallLock::take(&base, platform, scope, out)?) } else { None };
    let result = remove_install(scope, purge, only, platform, &base, &mut lock, out);
    release(&mut lock);
    result
}

/// Removes the lock file, still held, so that a folder it is in can go.
fn release(lock: &mut Option<InstallLock>) {
    if let Some(lock) = lock.take() {
        lock.remove();
    }
}

/// [`uninstall`] for the install in `base`, holding `lock`.
fn remove_install(
    scope: Scope,
    purge: bool,
    only: &Allowed,
    platform: &Platform,
    base: &Path,
    lock: &mut Option<InstallLock>,
    out: &mut dyn Write,
) -> Result<(), Failure> {
    let record_path = layout::record_in(base, &platform.host);
    let mut record = match Record::load(&record_path) {
        Ok(Some(record)) => record,
        // Without a record, this host's files where install puts them are still this host's to remove.
        loaded => {
            let recovered = Record::recovered(scope, platform, base);
            let why = match loaded {
                Err(error) => error.to_string(),
                _ if recovered.is_empty() => {
                    say(out, format!("Nothing to uninstall: there is no install record at {}.", record_path.display()));
                    release(lock);
                    return data_left(purge, platform, &platform.program(), out);
                }
                _ => format!("there is no install record at {}", record_path.display()),
            };
            say(out, format!("NOTE {why}: removing this host's files found where install puts them"));
            recovered
        }
    };
    // The record is the one of the scope asked for, wherever its file says otherwise.
    record.scope = scope;
    for stray in record.keep_own(platform, base) {
        say(out, format!("NOTE left {stray} alone: the install record names it, but it is none of this host's files"));
    }
    if !only.is_empty() {
        let left = without(&record, only)?;
        if !left.is_empty() {
            return narrow(&mut record, &record_path, &left, platform, lock, out);
        }
        say(
            out,
            format!("NOTE that was the last extension allowed ({}): the whole install goes", allowed_phrase(only)),
        );
    }
    let mut failures = Vec::new();
    record.entries.retain(|target| {
        let Some(package) = package_owner(target, scope, platform.os) else { return true };
        say(out, format!("NOTE {}: left {} alone: package {package} owns it", target.label, target.location));
        false
    });
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
    let removed_link = record.link.clone();
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
        match remove_binary(&binary) {
            Ok(None) => say(out, format!("OK   removed the host binary {}", binary.display())),
            Ok(Some(moved)) => say(
                out,
                format!(
                    "OK   removed the host binary {} (it is this program, so Windows keeps the file until it exits: \
                     moved to {}, deleted then)",
                    binary.display(),
                    moved.display()
                ),
            ),
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
        release(lock);
        // Innermost first; a folder that has anything else in it now is not ours to remove.
        let mut dirs = std::mem::take(&mut record.created_dirs);
        dirs.sort_by_key(|dir| std::cmp::Reverse(dir.components().count()));
        for dir in dirs {
            let _ = std::fs::remove_dir(&dir);
        }
        let host = &platform.host;
        let command = host.command();
        let runner = match command_left(platform, removed_link.as_deref()) {
            // Another install (a package's /usr/bin/llm-cache-host, a --system install) still answers
            // to the command: saying it went would be false.
            Some(other) => {
                say(
                    out,
                    format!(
                        "Uninstalled. {} is still on your PATH (another install: a package or a --system install), so \
                         `{command}` now runs it; `{}` checks what browsers still find.",
                        other.display(),
                        host.invocation(&command, "doctor")
                    ),
                );
                command
            }
            None => {
                let (runner, place) = installed_from(platform);
                say(
                    out,
                    format!(
                        "Uninstalled. The `{command}` command went with it: `{}`{place} checks that no browser still \
                         finds the host.",
                        host.invocation(&runner, "doctor")
                    ),
                );
                runner
            }
        };
        data_left(purge, platform, &runner, out)
    } else {
        record.save(&record_path).map_err(|e| Failure(format!("can't update {}: {e}", record_path.display())))?;
        Err(Failure(format!("{} of the installed files or keys could not be removed", failures.len())))
    }
}

/// What the install allows once the extensions `only` names are taken away.
///
/// # Errors
/// When one of them isn't allowed: nothing is changed then.
fn without(record: &Record, only: &Allowed) -> Result<Allowed, Failure> {
    let mut left = record.allowed();
    for (ids, remove, flag) in [
        (&mut left.chrome, &only.chrome, "--extension-id"),
        (&mut left.firefox, &only.firefox, "--firefox-extension-id"),
    ] {
        if let Some(stray) = remove.iter().find(|id| !ids.contains(id)) {
            let allowed = if ids.is_empty() { "none".to_owned() } else { ids.join(", ") };
            return Err(Failure(format!(
                "{flag} {stray}: this install doesn't allow it (it allows {allowed}), so nothing was changed"
            )));
        }
        ids.retain(|id| !remove.contains(id));
    }
    Ok(left)
}

/// Writes the record's manifests again allowing only `left`; removes those of a family left with no
/// extension, and the whole install when that was every manifest.
fn narrow(
    record: &mut Record,
    record_path: &Path,
    left: &Allowed,
    platform: &Platform,
    lock: &mut Option<InstallLock>,
    out: &mut dyn Write,
) -> Result<(), Failure> {
    let base = record_path.parent().expect("the record is in the install base");
    let binary = layout::binary_in(base, platform);
    if record.entries.iter().all(|target| left.of(target.family).is_empty()) {
        // Only extensions of a family with no manifest here are left: nothing would let them in.
        say(out, "NOTE no manifest of this install would allow an extension any more: the whole install goes");
        return remove_install(record.scope, false, &Allowed::default(), platform, base, lock, out);
    }
    let mut failures = 0;
    for target in std::mem::take(&mut record.entries) {
        if let Some(package) = package_owner(&target, record.scope, platform.os) {
            say(out, format!("NOTE {}: left {} alone: package {package} owns it", target.label, target.location));
            continue;
        }
        if left.of(target.family).is_empty() {
            match remove_target(&target.location, platform.os) {
                Ok(()) => say(out, format!("OK   {}: removed {}", target.label, target.location)),
                Err(why) => {
                    say(out, format!("FAIL {}: {why}", target.label));
                    failures += 1;
                    record.entries.push(target);
                }
            }
            continue;
        }
        let manifest = HostManifest::new(&platform.host, target.family, &binary, &left.chrome, &left.firefox);
        match write_target(&target, &manifest, record.scope, platform.os, record) {
            Ok(()) => say(out, format!("OK   {}: wrote {}", target.label, target.location)),
            Err(why) => {
                say(out, format!("FAIL {}: {why}", target.label));
                failures += 1;
                record.add_entry(target);
            }
        }
    }
    record.set_allowed(left);
    record.save(record_path).map_err(|e| Failure(format!("can't update {}: {e}", record_path.display())))?;
    if failures > 0 {
        return Err(Failure(format!("{failures} of the manifests could not be written or removed")));
    }
    say(out, format!("OK   allowed: {}", allowed_phrase(left)));
    Ok(())
}

/// Another file answering to the host's command (`llm-cache-host`, or another host's own) on PATH once
/// this install's link is gone: the command still runs that one.
fn command_left(platform: &Platform, removed_link: Option<&Path>) -> Option<PathBuf> {
    let command = platform.host.command();
    let name = if platform.os == Os::Windows { format!("{command}.exe") } else { command };
    let path = platform.var("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(&name))
        .find(|candidate| Some(candidate.as_path()) != removed_link && candidate.is_file())
}

/// How a person runs the host once its command went with the install, and where (to follow the
/// command shown): this program, as it was started, when it is still there (uninstall run from an
/// unpacked tarball or a source folder); else the binary a tarball holds, `./<command>` where they
/// unpacked it (a build for this very host is named for it; the default build sets up any host with
/// `--host-name`), and for the default build also a source checkout's.
fn installed_from(platform: &Platform) -> (String, String) {
    let host = &platform.host;
    let program = platform.program();
    if program != host.command() {
        return (program, String::new());
    }
    let built_in = HostName::built_in();
    let unpacked = if built_in == *host { host.command() } else { "llm-cache-host".to_owned() };
    let place = if built_in.is_default() {
        format!(
            ", from the folder you unpacked it in (`{}` in a source checkout),",
            host.invocation("target/release/llm-cache-host", "doctor")
        )
    } else {
        ", from the folder you unpacked it in,".to_owned()
    };
    (format!("./{unpacked}"), place)
}

/// Removes the cached data with `purge`; otherwise says where it is and that `runner` (the host's
/// command, or the binary that still runs it) removes it.
fn data_left(purge: bool, platform: &Platform, runner: &str, out: &mut dyn Write) -> Result<(), Failure> {
    let Some(data_dir) = platform.data_dir() else { return Ok(()) };
    let folders = [crate::paths::store_dir(&data_dir), crate::paths::log_dir(&data_dir)];
    if !purge {
        if folders.iter().any(|folder| folder.exists()) {
            say(
                out,
                format!(
                    "The cached data, logs and settings stay in {}; `{} --purge` (or deleting that folder) removes them.",
                    data_dir.display(),
                    platform.host.invocation(runner, "uninstall")
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

/// Removes the installed binary. On Windows, when it is the program running (`uninstall` typed as
/// the installed command), Windows won't delete it yet: it is moved away and deleted once this
/// program exits, and the place it went is returned.
fn remove_binary(binary: &Path) -> io::Result<Option<PathBuf>> {
    #[cfg(windows)]
    if super::windows::is_running_binary(binary) {
        return super::windows::remove_running_binary(binary).map(Some);
    }
    remove_file(binary).map(|()| None)
}

/// Removes a file; one that is gone already counts as removed.
fn remove_file(path: &Path) -> io::Result<()> {
    match std::fs::remove_file(path) {
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}
