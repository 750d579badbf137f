//! `install`: copy this binary to a stable place, write each selected browser's manifest pointing at
//! the copy, check what was written, and record it all for `uninstall`.
//!
//! An install adds: the extensions allowed before (by the record, or by a manifest already at one of
//! the locations) stay allowed beside the ones given, and every manifest of the install, those
//! written before included, allows them all. With no id given and none allowed before, a family's
//! manifests allow the demo extension's.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::allowed::{self, Allowed};
use super::browsers::{Family, Location, Platform, Scope};
use super::manifest::{DEFAULT_EXTENSION_ID, DEFAULT_FIREFOX_EXTENSION_ID, HostManifest};
use super::record::Record;
use super::{
    Failure, InstallLock, Selection, Target, create_dirs, create_file, found_browsers, io_failure, layout, owner,
    registry, say,
};
use crate::paths::{self, Os};

/// Installs for `selection` on `platform`, reporting each step on `out`.
///
/// # Errors
/// The first step that failed; what was written before it is in the record, so `uninstall` still
/// removes it.
pub fn install(selection: &Selection, platform: &Platform, out: &mut dyn Write) -> Result<(), Failure> {
    let base = std::path::absolute(layout::install_base(selection.scope, platform)?)
        .map_err(|e| Failure(format!("no install folder: {e}")))?;
    let binary = layout::binary_in(&base, platform);
    let record_path = layout::record_in(&base, &platform.host);
    let found = found_browsers(platform);
    let targets = super::selected_targets(selection, platform, &base, &found)?;
    let targets_before = targets.clone();

    if selection.scope == Scope::User {
        let mut paths: Vec<&Path> = vec![&base, &binary, &record_path];
        paths.extend(targets.iter().map(|target| target.location.manifest()));
        owner::check_user_owned(&paths).map_err(Failure)?;
    }
    for warning in super::sandbox_warnings(selection, &targets, &found) {
        say(out, format!("NOTE {warning}"));
    }

    let mut created = Vec::new();
    prepare_base(&base, selection.scope, &mut created)?;
    let _lock = InstallLock::take(&base, platform, selection.scope, out)?;
    let mut record = match Record::load(&record_path) {
        Ok(Some(record)) if record.scope == selection.scope => record,
        Ok(_) => Record::new(selection.scope),
        Err(error) => {
            say(
                out,
                format!(
                    "NOTE {error}: install writes a new one, keeping this host's manifests found where it puts them"
                ),
            );
            Record::recovered(selection.scope, platform, &base)
        }
    };
    for stray in record.keep_own(platform, &base) {
        say(out, format!("NOTE left {stray} alone: the install record names it, but it is none of this host's files"));
    }
    let (targets, allowed) = with_what_is_there(&targets, &record, selection)?;
    for family in [Family::Chromium, Family::Firefox] {
        if allowed.of(family).is_empty() && targets_before.iter().any(|target| target.family == family) {
            say(out, format!("NOTE {}", unregistered(family)));
        }
    }
    record.set_allowed(&allowed);
    created.into_iter().for_each(|dir| record.add_created_dir(dir));
    copy_binary(&binary, layout::dir_mode(selection.scope), &mut record)?;
    // Record as we go: a failure later leaves a record that still covers what was written.
    record.save(&record_path).map_err(io_failure("write", &record_path))?;
    say(out, format!("OK   host binary: {}", binary.display()));
    let link = layout::command_link(selection.scope, platform);
    let command = link_command(&binary, link.clone(), selection.scope, platform, &mut record, out);
    record.save(&record_path).map_err(io_failure("write", &record_path))?;

    for target in &targets {
        if let Some(package) = package_owner(target, selection.scope, platform.os) {
            say(out, format!("NOTE {}: left {} alone: package {package} owns it", target.label, target.location));
            continue;
        }
        let manifest = HostManifest::new(&platform.host, target.family, &binary, &allowed.chrome, &allowed.firefox);
        let written = write_target(target, &manifest, selection.scope, platform.os, &mut record);
        record.save(&record_path).map_err(io_failure("write", &record_path))?;
        written?;
        say(out, format!("OK   {}: wrote {}", target.label, target.location));
    }
    say(out, format!("OK   install record: {}", record_path.display()));
    say(out, format!("OK   allowed: {}", allowed_phrase(&allowed)));
    narrow_created_dirs(&record.created_dirs);
    let mut written: Vec<&Path> = vec![&base, &binary, &record_path];
    written.extend(link.as_deref());
    written.extend(targets.iter().map(|target| target.location.manifest()));
    for warning in owner::exposed(&written) {
        say(out, format!("WARN {warning}"));
    }
    say(out, format!("Installed. `{command} doctor` checks every step a browser takes to start the host."));
    Ok(())
}

/// The targets to write and the ids they allow: the selected targets and the record's other
/// manifests still there (one removed by hand stays removed); the ids given, those the record lists
/// and those the manifests at these locations allow already. With no id but the demo's given or
/// allowed before, a family's manifests allow the demo extension's; otherwise a family with no id of
/// the user's is left out, as no extension of it could use the host.
///
/// # Errors
/// When a browser asked for by name (`--browser`, or `--user-data-dir` for a Chromium) would be left
/// out that way: saying so beats an install that quietly skips it.
fn with_what_is_there(
    selected: &[Target],
    record: &Record,
    selection: &Selection,
) -> Result<(Vec<Target>, Allowed), Failure> {
    let mut targets = selected.to_vec();
    for entry in &record.entries {
        if entry.location.manifest().exists() {
            super::push_target(&mut targets, entry.clone());
        }
    }
    let mut allowed = record.allowed();
    for target in &targets {
        if let Some(more) = allowed::in_manifest_file(target.location.manifest()) {
            allowed.add(&more);
        }
    }
    allowed.add(&Allowed { chrome: selection.extension_ids.clone(), firefox: selection.firefox_extension_ids.clone() });
    let writes = |family: Family| targets.iter().any(|target| target.family == family);
    // An install of the demo's (nothing but the demo's ids, or none) stays one in every browser.
    let demo_only = allowed.chrome.iter().all(|id| id == DEFAULT_EXTENSION_ID)
        && allowed.firefox.iter().all(|id| id == DEFAULT_FIREFOX_EXTENSION_ID);
    if demo_only {
        if allowed.chrome.is_empty() && writes(Family::Chromium) {
            allowed.chrome.push(DEFAULT_EXTENSION_ID.to_owned());
        }
        if allowed.firefox.is_empty() && writes(Family::Firefox) {
            allowed.firefox.push(DEFAULT_FIREFOX_EXTENSION_ID.to_owned());
        }
        return Ok((targets, allowed));
    }
    let named = |target: &Target| {
        target.browsers.iter().any(|browser| selection.browsers.contains(browser)) || target.browsers.is_empty()
    };
    if let Some(target) = targets.iter().find(|target| allowed.of(target.family).is_empty() && named(target)) {
        let (id, flag) = missing_id(target.family);
        return Err(Failure(format!(
            "{}: no {id} is given or allowed for it: add {flag}, or leave it out (nothing was changed)",
            target.label
        )));
    }
    targets.retain(|target| !allowed.of(target.family).is_empty());
    if targets.is_empty() {
        return Err(Failure(format!(
            "no browser found here reads {}s: name one with --browser (nothing was changed)",
            if allowed.chrome.is_empty() { "Firefox add-on" } else { "Chrome extension" }
        )));
    }
    Ok((targets, allowed))
}

/// What a family's manifests allow, and the flag that names one.
fn missing_id(family: Family) -> (&'static str, &'static str) {
    match family {
        Family::Chromium => ("Chrome extension id", "--extension-id ID"),
        Family::Firefox => ("Firefox add-on id", "--firefox-extension-id ID"),
    }
}

/// Why a family's browsers found here are left out of an install.
fn unregistered(family: Family) -> String {
    let (id, flag) = missing_id(family);
    let browsers = match family {
        Family::Chromium => "Chromium-family browsers are",
        Family::Firefox => "Firefox is",
    };
    format!("{browsers} not registered: no {id} is given or allowed ({flag} registers it)")
}

/// The extensions an install allows, in words: "extension A, B; add-on X".
pub fn allowed_phrase(allowed: &Allowed) -> String {
    let mut parts = Vec::new();
    for (ids, one, many) in [(&allowed.chrome, "extension", "extensions"), (&allowed.firefox, "add-on", "add-ons")] {
        if !ids.is_empty() {
            parts.push(format!("{} {}", if ids.len() == 1 { one } else { many }, ids.join(", ")));
        }
    }
    if parts.is_empty() { "no extension".to_owned() } else { parts.join("; ") }
}

/// Records the store quota `bytes` in this user's settings file, where every host reads it when it
/// starts (see [`crate::config`]).
///
/// # Errors
/// When there is no data directory or the file can't be written.
pub fn set_store_quota(bytes: u64, platform: &Platform, out: &mut dyn Write) -> Result<(), Failure> {
    let dir = platform.data_dir().ok_or_else(|| Failure("no data directory: set LLM_CACHE_DIR or HOME".into()))?;
    paths::create_private_dir(&dir).map_err(io_failure("create", &dir))?;
    let path = crate::config::config_path(&dir);
    // The other settings, if any, stay; a file that can't be read is replaced, as the new limit is meant.
    let mut config = crate::config::load(&dir).unwrap_or_default();
    config.store_quota_bytes = Some(bytes);
    crate::config::save(&dir, &config).map_err(io_failure("write", &path))?;
    say(
        out,
        format!(
            "OK   store quota: {bytes} bytes ({}), recorded in {}; hosts started from now on use it",
            crate::config::human_size(bytes),
            path.display()
        ),
    );
    if bytes < crate::limits::SESSION_QUOTA_BYTES {
        say(out, "NOTE that is less than one session may hold (50 MiB): the store quota is reached first");
    }
    Ok(())
}

/// Links the host's command (`llm-cache-host`, or another host's own) to the installed binary, and
/// returns how to type it: the plain name when the link's folder is on PATH, else the binary's full
/// path (with a note saying so).
fn link_command(
    binary: &Path,
    link: Option<PathBuf>,
    scope: Scope,
    platform: &Platform,
    record: &mut Record,
    out: &mut dyn Write,
) -> String {
    let full = binary.display().to_string();
    let name = platform.host.command();
    let Some(link) = link else { return full };
    let dir = link.parent().expect("a link has a folder").to_owned();
    #[cfg(unix)]
    {
        let ours = std::fs::read_link(&link).is_ok_and(|target| target == binary);
        if !ours && std::fs::symlink_metadata(&link).is_ok() {
            say(out, format!("NOTE left {} alone: it is not a link to this install", link.display()));
            return full;
        }
        if let Some(other) = other_on_path(platform, &name, &dir, binary).filter(|_| !ours) {
            say(
                out,
                format!(
                    "NOTE no `{name}` command: {} is on your PATH under that name, and a link in {} would stand in \
                     for it, so type the command in full: {full} doctor",
                    other.display(),
                    dir.display()
                ),
            );
            return full;
        }
        let mut created = Vec::new();
        if let Err(error) = create_dirs(&dir, layout::dir_mode(scope), &mut created)
            .and_then(|()| if ours { Ok(()) } else { std::os::unix::fs::symlink(binary, &link) })
        {
            say(out, format!("NOTE no `{name}` command: can't link {}: {error}", link.display()));
            return full;
        }
        created.into_iter().for_each(|dir| record.add_created_dir(dir));
        record.link = Some(link.clone());
    }
    // Windows has no command link (`command_link` gives none there), so nothing is created or recorded.
    #[cfg(not(unix))]
    let _ = (scope, record);
    let on_path = platform.var("PATH").is_some_and(|path| std::env::split_paths(&path).any(|entry| entry == dir));
    if on_path {
        say(out, format!("OK   command: {name} ({} -> {full})", link.display()));
        name
    } else {
        say(
            out,
            format!(
                "NOTE {} is not on your PATH, so type the command in full: {full} doctor (or add {} to PATH and open a new shell)",
                dir.display(),
                dir.display()
            ),
        );
        full
    }
}

/// Another program on PATH under the command's `name`, in a folder other than `link_dir`: a
/// command link would hide it (or be hidden by it), so `install` makes none. This host's own binary
/// reached another way doesn't count.
#[cfg(unix)]
fn other_on_path(platform: &Platform, name: &str, link_dir: &Path, binary: &Path) -> Option<PathBuf> {
    let path = platform.var("PATH")?;
    let ours = binary.canonicalize().ok();
    std::env::split_paths(&path)
        .filter(|dir| dir != link_dir)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file() && (ours.is_none() || candidate.canonicalize().ok() != ours))
}

/// The Debian package that owns the manifest of a system `target`, which a system install leaves to
/// it: the package's own manifest already serves those browsers, and dpkg must find it as installed.
pub(super) fn package_owner(target: &Target, scope: Scope, os: Os) -> Option<String> {
    (scope == Scope::System && os == Os::Linux).then(|| super::dpkg::owner(target.location.manifest())).flatten()
}

/// Creates the install base: private (0700) for a user install, as it is the data directory.
/// Notes the folders it made in `created`, for the record.
fn prepare_base(base: &Path, scope: Scope, created: &mut Vec<PathBuf>) -> Result<(), Failure> {
    create_dirs(base, layout::dir_mode(scope), created).map_err(io_failure("create", base))?;
    if scope == Scope::User {
        paths::create_private_dir(base).map_err(io_failure("create", base))?;
    }
    Ok(())
}

/// Copies the running binary to `dest`, unless it is running from there, creating its folder with
/// `dir_mode`.
fn copy_binary(dest: &Path, dir_mode: u32, record: &mut Record) -> Result<(), Failure> {
    let current = std::env::current_exe()
        .and_then(|exe| exe.canonicalize())
        .map_err(|e| Failure(format!("can't find the running binary: {e}")))?;
    if dest.canonicalize().is_ok_and(|installed| installed == current) {
        return Ok(());
    }
    let dir = dest.parent().expect("the binary's path has a folder");
    let mut created = Vec::new();
    create_dirs(dir, dir_mode, &mut created).map_err(io_failure("create", dir))?;
    created.into_iter().for_each(|dir| record.add_created_dir(dir));
    // Copy beside it and rename over it: a running copy (a browser's host) keeps its old file. The
    // copy is made into a file created with the binary's mode rather than with `fs::copy`, which
    // would give it the running binary's mode, whatever that is.
    let mut temporary = dest.as_os_str().to_owned();
    temporary.push(".new");
    let temporary = PathBuf::from(temporary);
    let copied = std::fs::File::open(&current).and_then(|mut from| {
        create_file(&temporary, layout::BINARY_MODE).and_then(|mut to| io::copy(&mut from, &mut to))
    });
    if let Err(error) = copied {
        let _ = std::fs::remove_file(&temporary);
        return Err(io_failure("copy the binary to", &temporary)(error));
    }
    std::fs::rename(&temporary, dest).map_err(io_failure("replace", dest))?;
    record.binary = Some(dest.to_owned());
    Ok(())
}

/// Writes one manifest (and on Windows its registry key), then reads both back to check them.
pub(super) fn write_target(
    target: &Target,
    manifest: &HostManifest,
    scope: Scope,
    os: Os,
    record: &mut Record,
) -> Result<(), Failure> {
    let file = target.location.manifest();
    let dir = file.parent().expect("a manifest's path has a folder");
    let mut created = Vec::new();
    let made = create_dirs(dir, layout::dir_mode(scope), &mut created);
    created.into_iter().for_each(|dir| record.add_created_dir(dir));
    made.map_err(io_failure("create", dir))?;
    super::write_atomically(file, manifest.to_text().as_bytes(), layout::MANIFEST_MODE)
        .map_err(io_failure("write", file))?;
    record.add_entry(target.clone());
    let read_back = std::fs::read_to_string(file).map_err(io_failure("read back", file))?;
    match serde_json::from_str::<HostManifest>(&read_back) {
        Ok(parsed) if parsed == *manifest => {}
        Ok(_) => return Err(Failure(format!("{} changed while it was written: run install again", file.display()))),
        Err(error) => return Err(Failure(format!("{} doesn't read back as a manifest: {error}", file.display()))),
    }
    if let Location::Registry { hive, key, manifest } = &target.location {
        if os != Os::Windows {
            return Err(Failure("registry locations exist only on Windows".into()));
        }
        registry::run(&registry::add_args(*hive, key, manifest)).map_err(Failure)?;
        let value = registry::run(&registry::query_args(*hive, key)).map_err(Failure)?;
        if registry::parse_default_value(&value).as_deref() != Some(&*manifest.to_string_lossy()) {
            return Err(Failure(format!("{}\\{key} doesn't read back as {}", hive.short(), manifest.display())));
        }
    }
    Ok(())
}

/// Takes the group and world write bits off the folders this install or an earlier one created: an
/// earlier version left them as the umask said, which under `umask 000` let anyone swap what is in
/// them. Folders that were there before are the person's; `install` only warns about those.
fn narrow_created_dirs(dirs: &[PathBuf]) {
    #[cfg(unix)]
    for dir in dirs {
        use std::os::unix::fs::PermissionsExt;
        let Ok(meta) = std::fs::symlink_metadata(dir) else { continue };
        let mode = meta.permissions().mode() & 0o7777;
        if meta.is_dir() && mode & 0o022 != 0 {
            let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode & !0o022));
        }
    }
    #[cfg(not(unix))]
    let _ = dirs;
}
