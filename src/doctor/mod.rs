//! `doctor`: checks every step a browser takes to start the host, and fails when any step would
//! fail. It answers "Specified native messaging host not found" and its cousins: which manifest is
//! missing, wrong or blocked, and why. It also warns, without failing, about folders on the way to
//! the manifests and the binary that others could write ([`crate::install::owner`]).
//!
//! It checks what is installed, with the ids installed: this user's manifests and the system-wide
//! ones (a package's, or `install --system`'s), and the install records, each manifest against the
//! extensions its install allows; the demo extension only when nothing is installed. Its remedies
//! keep every extension already allowed, and `--system` for a system-wide install. It proves the
//! store, not just the host: the host, started as a browser starts it, writes, reads and deletes an
//! item in a session of doctor's own, which it then ends.
//!
//! Every browser looks for a host's manifest in the current user's folder first, and uses the
//! system-wide one only when there is none there (Chromium's `native_process_launcher_posix.cc` and
//! `_win.cc`, `FindManifest`: the user-level directory or HKCU, then the system one or HKLM; Firefox's
//! `NativeManifests.sys.mjs` tries the user directory before the system ones). So a per-user manifest
//! hides a system-wide one, whatever the two allow: doctor warns, and says how to remove it.
//!
//! Every check makes one line, but a browser whose checks all pass is shown as one line that sums
//! them up, and browsers with neither a build nor a manifest here share one line: a healthy install
//! fits on a screen, and a broken browser still shows every line, each failure with its remedy.
//! `--verbose` shows every line of every browser.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::cmd::PROTOCOL_VERSION;
use crate::frame::client;
use crate::host_name::HostName;
use crate::install::allowed::{self, Allowed};
use crate::install::browsers::{Browser, Build, Family, Location, Platform, Scope};
use crate::install::manifest::chrome_origin;
use crate::install::record::Record;
use crate::install::{
    self as install, Failure, Selection, Target, browser_target, found_browsers, layout, owner, policy, registered,
    registry, say,
};
use crate::paths::{self, Os};

/// How long the host may take to answer one request (it answers in milliseconds; a cold disk is slower).
const REPLY_TIMEOUT: Duration = Duration::from_secs(10);

/// What `doctor` checks.
#[derive(Debug, Clone)]
pub struct DoctorOptions {
    /// The browsers, profiles, extensions and scope to check.
    pub selection: Selection,
    /// Where policy files are read from on Linux: `/` except in tests and for mounted images.
    pub policy_root: PathBuf,
    /// Print every check's line, also for browsers whose checks all pass.
    pub verbose: bool,
}

/// Which part of the report a line belongs to: a manifest location's, or the whole install's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    /// The checks of `targets[i]`, and the policy checks of its browsers.
    Target(usize),
    /// The data directory, the warnings about folders, and the notes about what was checked.
    Overall,
}

/// One line of the report, kept until every check has run so that a browser's lines can be summed
/// up when they all pass.
struct Line {
    /// Whose line it is.
    part: Part,
    /// Whether it is a failed check, which decides that its part is printed in full.
    failed: bool,
    /// The line as printed, with its `OK`, `FAIL`, `WARN` or `NOTE` in front.
    text: String,
}

/// The lines so far and what they add up to.
struct Report {
    /// Every line, in the order the checks ran (the order `--verbose` prints them in).
    lines: Vec<Line>,
    /// Whose checks run now.
    part: Part,
    /// Checks that passed.
    passed: usize,
    /// Checks that failed.
    failed: usize,
    /// Warnings: things that work but shouldn't stay as they are.
    warned: usize,
}

impl Report {
    fn push(&mut self, failed: bool, text: String) {
        self.lines.push(Line { part: self.part, failed, text });
    }

    fn ok(&mut self, subject: &str, text: impl AsRef<str>) {
        self.passed += 1;
        self.push(false, format!("OK   {subject}: {}", text.as_ref()));
    }

    fn fail(&mut self, subject: &str, text: impl AsRef<str>) {
        self.failed += 1;
        self.push(true, format!("FAIL {subject}: {}", text.as_ref()));
    }

    fn warn(&mut self, text: impl AsRef<str>) {
        self.warned += 1;
        self.push(false, format!("WARN {}", text.as_ref()));
    }

    fn note(&mut self, text: impl AsRef<str>) {
        self.push(false, format!("NOTE {}", text.as_ref()));
    }

    /// Records one check: `Ok(text)` passes, `Err(text)` fails; tells whether it passed.
    fn check(&mut self, subject: &str, result: Result<String, String>) -> bool {
        match result {
            Ok(text) => {
                self.ok(subject, text);
                true
            }
            Err(text) => {
                self.fail(subject, text);
                false
            }
        }
    }
}

/// One manifest location to check.
struct Place {
    /// Where it is and for whom; a system-wide one's label ends in "(system)".
    target: Target,
    /// Whether it is a system-wide location (every user's), rather than this user's or a profile's.
    system: bool,
    /// The extensions its install record says it allows, when a record lists it: what it should allow.
    recorded: Option<Allowed>,
}

/// What one manifest location's checks found, for the line that sums them up and for the warnings.
struct Checked {
    /// The files the browser trusts for it: the manifest found, and the binary it names.
    trusted: Vec<PathBuf>,
    /// Whether a manifest (and on Windows its registry key) is there at all.
    registered: bool,
    /// The version the host gave in its answer to `hello`, when it answered.
    host_version: Option<String>,
    /// The extensions the manifest allows.
    allowed: Allowed,
    /// How a browser starts the host for this manifest, when it answered `hello`: binary and arguments.
    launch: Option<(PathBuf, Vec<OsString>)>,
}

impl Checked {
    fn unregistered() -> Checked {
        Checked {
            trusted: Vec::new(),
            registered: false,
            host_version: None,
            allowed: Allowed::default(),
            launch: None,
        }
    }

    fn unreadable(file: PathBuf) -> Checked {
        Checked { trusted: vec![file], registered: true, ..Checked::unregistered() }
    }
}

/// Runs every check and prints the report; tells whether all passed.
///
/// # Errors
/// Only when there is nothing to check against (no HOME, an unreadable install record).
pub fn doctor(options: &DoctorOptions, platform: &Platform, out: &mut dyn Write) -> Result<bool, Failure> {
    let selection = &options.selection;
    let found = found_browsers(platform);
    let Places { places, left_out, system_wide, mut installed } = doctor_places(selection, platform, &found)?;
    let targets: Vec<Target> = places.iter().map(|place| place.target.clone()).collect();
    let mut report = Report { lines: Vec::new(), part: Part::Overall, passed: 0, failed: 0, warned: 0 };
    // The extensions asked about join those installed in every remedy.
    installed
        .add(&Allowed { chrome: selection.extension_ids.clone(), firefox: selection.firefox_extension_ids.clone() });
    let hint = Hint { installed, os: platform.os, host: platform.host.clone() };

    for warning in install::sandbox_warnings(selection, &targets, &found) {
        report.note(warning);
    }
    // Say what is checked, so that "all passed" can't be read as "every profile works". The short
    // report says it with its one line per browser or profile instead.
    if options.verbose {
        let checked: Vec<String> =
            targets.iter().map(|target| format!("{} ({})", target.label, target.location)).collect();
        report.note(format!("checking {}", checked.join(", ")));
    }
    // What a browser trusts, whose folders others must not be able to write.
    let mut trusted: Vec<PathBuf> = layout::command_link(selection.scope, platform)
        .filter(|link| link.symlink_metadata().is_ok())
        .into_iter()
        .collect();
    let mut checked = Vec::new();
    for (i, place) in places.iter().enumerate() {
        report.part = Part::Target(i);
        let outcome = check_target(place, selection, &hint, platform, &mut report);
        trusted.extend(outcome.trusted.iter().cloned());
        checked.push(outcome);
    }
    let mut policy_browsers: Vec<(Browser, usize)> = Vec::new();
    for (i, target) in targets.iter().enumerate() {
        // A custom profile may belong to any Chromium build; Chromium's policies stand in for it.
        let browsers = if target.browsers.is_empty() { vec![Browser::Chromium] } else { target.browsers.clone() };
        for browser in browsers {
            if !policy_browsers.iter().any(|(known, _)| *known == browser) {
                policy_browsers.push((browser, i));
            }
        }
    }
    for (browser, i) in policy_browsers {
        report.part = Part::Target(i);
        let scope = if places[i].system { Scope::System } else { Scope::User };
        check_policies(browser, scope, options, platform, &mut report);
    }
    report.part = Part::Overall;
    if !left_out.is_empty() {
        let names: Vec<&str> = left_out.iter().map(|b| b.id()).collect();
        report.note(format!(
            "{} {} installed here, but the host isn't registered for it; if an extension there should use the cache: `{}`",
            names.join(", "),
            if names.len() == 1 { "is" } else { "are" },
            hint.command(&left_out, None, system_wide, None)
        ));
    }
    for warning in hidden_system_manifests(&places, platform) {
        report.warn(warning);
    }
    report.check("data directory", data_dir_writable(platform));
    // The store, through the host the browser would start first: the first manifest checked whose
    // host answered (this user's come before the system-wide ones, as browsers look).
    if let Some((binary, args)) = checked.iter().find_map(|c| c.launch.clone()) {
        report.check("store", prove_store(&binary, &args, platform));
    }
    store_quota_line(platform, &mut report);
    for warning in owner::exposed(&trusted.iter().map(PathBuf::as_path).collect::<Vec<_>>()) {
        report.warn(warning);
    }
    if selection.user_data_dirs.is_empty() {
        report.note(format!(
            "a Chromium started with --user-data-dir=DIR (every headless or test profile) looks for hosts only in \
             DIR/NativeMessagingHosts, which these checks don't cover: run `{} --user-data-dir DIR` \
             (and install with --user-data-dir DIR) for it",
            platform.host.invocation(&platform.host.command(), "doctor")
        ));
    }

    let lines = if options.verbose {
        report.lines.iter().map(|line| line.text.clone()).collect()
    } else {
        let absent: Vec<bool> = targets
            .iter()
            .map(|target| {
                !target.browsers.is_empty() && target.browsers.iter().all(|b| found.iter().all(|(f, _)| f != b))
            })
            .collect();
        short_report(&report.lines, &places, &checked, &absent, &hint)
    };
    for line in lines {
        say(out, line);
    }
    let total = report.passed + report.failed;
    let warned = match report.warned {
        0 => String::new(),
        1 => ", with 1 warning".to_owned(),
        n => format!(", with {n} warnings"),
    };
    if report.failed == 0 {
        say(out, format!("doctor: all {total} checks passed{warned}"));
    } else {
        say(out, format!("doctor: {} of {total} checks failed{warned}", report.failed));
    }
    Ok(report.failed == 0)
}

/// The report without `--verbose`: the lines of the whole install as they are; for each location
/// whose checks all pass, one line that sums them up (and its notes); for each with a failure, every
/// line; and one line for the browsers that are neither installed nor registered, whose only failure
/// is the missing manifest. `absent[i]` tells whether none of `places[i]`'s browsers is installed.
fn short_report(lines: &[Line], places: &[Place], checked: &[Checked], absent: &[bool], hint: &Hint) -> Vec<String> {
    let part_of = |i: usize| lines.iter().filter(move |line| line.part == Part::Target(i));
    let not_found: Vec<usize> = (0..places.len())
        .filter(|&i| absent[i] && !checked[i].registered && part_of(i).filter(|line| line.failed).count() == 1)
        .collect();
    let mut shown = Vec::new();
    let mut printed = vec![false; places.len()];
    for line in lines {
        let Part::Target(i) = line.part else {
            shown.push(line.text.clone());
            continue;
        };
        if std::mem::replace(&mut printed[i], true) {
            continue;
        }
        if not_found.contains(&i) {
            if not_found[0] == i {
                shown.push(not_found_line(&not_found.iter().map(|&i| &places[i]).collect::<Vec<_>>(), hint));
            }
        } else if part_of(i).any(|line| line.failed) {
            shown.extend(part_of(i).map(|line| line.text.clone()));
        } else {
            shown.push(summary_line(&places[i].target, &checked[i], absent[i]));
            shown.extend(part_of(i).filter(|line| !line.text.starts_with("OK")).map(|line| line.text.clone()));
        }
    }
    shown
}

/// The one line for a location whose checks all pass: what answers, and for whom.
fn summary_line(target: &Target, checked: &Checked, absent: bool) -> String {
    let ids = checked.allowed.of(target.family);
    let (one, many) = match target.family {
        Family::Chromium => ("extension", "extensions"),
        Family::Firefox => ("add-on", "add-ons"),
    };
    let whom = if ids.len() == 1 { one } else { many };
    let version = checked.host_version.as_deref().unwrap_or("?");
    let mut line = format!(
        "OK   {}: host {version} registered for {} {whom} ({}), answers hello (protocol {PROTOCOL_VERSION})",
        target.label,
        ids.len(),
        ids.join(", ")
    );
    if absent {
        line.push_str("; the browser itself is not installed here");
    }
    line
}

/// The one line for the browsers with neither a build nor a manifest here.
fn not_found_line(places: &[&Place], hint: &Hint) -> String {
    let labels: Vec<&str> = places.iter().map(|place| place.target.label.as_str()).collect();
    let browsers: Vec<Browser> = places.iter().flat_map(|place| place.target.browsers.iter().copied()).collect();
    let system = places.iter().any(|place| place.system);
    let family = places[0].target.family;
    let family = places.iter().all(|place| place.target.family == family).then_some(family);
    format!(
        "FAIL not found: {}: neither the browser nor a manifest for the host is here; once the browser is installed, \
         run `{}`",
        labels.join(", "),
        hint.command(&browsers, None, system, family)
    )
}

/// What to check. The browsers and profiles asked for, else every browser; for each, this user's
/// manifest (unless `--system`) and the system-wide one, where they are, and the install records'
/// entries. A browser asked for with neither gets its location for the scope asked (this user's by
/// default), which fails as missing; so does every browser found here (every browser, when none is)
/// when nothing is installed. Beside an install, a browser found here that it left out gets a note.
fn doctor_places(
    selection: &Selection,
    platform: &Platform,
    found: &[(Browser, Vec<Build>)],
) -> Result<Places, Failure> {
    let system_only = selection.scope == Scope::System;
    let asked = !selection.browsers.is_empty() || !selection.user_data_dirs.is_empty();
    let user_base = if system_only {
        None
    } else {
        Some(
            std::path::absolute(layout::install_base(Scope::User, platform)?)
                .map_err(|e| Failure(format!("no install folder: {e}")))?,
        )
    };
    let system_base = install::system_base(platform)?;
    let load = |base: &Path| Record::load(&layout::record_in(base)).map_err(|e| Failure(e.to_string()));
    let user_record = user_base.as_deref().map(load).transpose()?.flatten();
    let system_record = load(&system_base)?;

    // Everything registered here, whichever browsers are asked about: what the remedies keep.
    let (all_user, all_system) = install::registered_targets(&Browser::ALL, platform, user_base.as_deref())?;
    let mut installed = Allowed::default();
    let records = if system_only { vec![&system_record] } else { vec![&user_record, &system_record] };
    for record in records.into_iter().flatten() {
        installed.add(&record.allowed());
    }
    let registered_now =
        if system_only { all_system.iter().collect::<Vec<_>>() } else { all_user.iter().chain(&all_system).collect() };
    for target in registered_now {
        installed.add(&allowed::in_manifest_file(target.location.manifest()).unwrap_or_default());
    }

    let mut user: Vec<Target> = Vec::new();
    let mut system: Vec<Target> = Vec::new();
    if !asked {
        // A manifest of this user's install that is gone, where a system-wide one serves its browsers
        // (someone removed it because it hid that one), is no failure: the browser finds the other.
        let served = |entry: &Target| {
            !entry.browsers.is_empty()
                && !registered(&entry.location, platform.os)
                && entry.browsers.iter().all(|b| all_system.iter().any(|target| target.browsers.contains(b)))
        };
        for entry in user_record.iter().flat_map(|record| &record.entries).filter(|entry| !served(entry)) {
            install::push_target(&mut user, entry.clone());
        }
        for entry in system_record.iter().flat_map(|record| &record.entries) {
            install::push_target(&mut system, entry.clone());
        }
    }
    let picked = |targets: Vec<Target>| -> Vec<Target> {
        if asked {
            targets.into_iter().filter(|t| t.browsers.iter().any(|b| selection.browsers.contains(b))).collect()
        } else {
            targets
        }
    };
    for target in picked(all_user) {
        install::push_target(&mut user, target);
    }
    for target in picked(all_system) {
        install::push_target(&mut system, target);
    }
    // Browsers installed here that can start hosts and find no manifest: with nothing installed, or
    // when asked about, each fails as missing; beside an install that left them out, they get a note.
    let natives = found.iter().filter(|(_, builds)| builds.iter().any(Build::can_start_hosts)).map(|(b, _)| *b);
    let nothing = user.is_empty() && system.is_empty();
    let uncovered = |browsers: Vec<Browser>, user: &[Target], system: &[Target]| -> Vec<Browser> {
        let covered = |b: &Browser| user.iter().chain(system).any(|target| target.browsers.contains(b));
        browsers.into_iter().filter(|b| !covered(b)).collect()
    };
    let mut left_out = Vec::new();
    let missing = if asked {
        uncovered(selection.browsers.clone(), &user, &system)
    } else if nothing {
        let natives: Vec<Browser> = natives.collect();
        if natives.is_empty() { Browser::ALL.to_vec() } else { natives }
    } else {
        left_out = uncovered(natives.collect(), &user, &system);
        Vec::new()
    };
    let system_wide = user.is_empty() && !nothing;
    for browser in missing {
        match &user_base {
            Some(base) => install::push_target(&mut user, browser_target(browser, Scope::User, platform, base)?),
            None => install::push_target(&mut system, install::system_target(browser, platform)?),
        }
    }
    for dir in &selection.user_data_dirs {
        install::push_target(&mut user, install::profile_target(dir, platform)?);
    }

    let recorded = |record: &Option<Record>, target: &Target| {
        let record = record.as_ref()?;
        let listed = record.entries.iter().any(|entry| entry.location == target.location);
        let ids = Allowed { chrome: record.extension_ids.clone(), firefox: record.firefox_extension_ids.clone() };
        (listed && !ids.of(target.family).is_empty()).then_some(ids)
    };
    let mut places: Vec<Place> = user
        .into_iter()
        .map(|target| Place { recorded: recorded(&user_record, &target), target, system: false })
        .collect();
    for mut target in system {
        let recorded = recorded(&system_record, &target);
        target.label = format!("{} (system)", target.label);
        places.push(Place { target, system: true, recorded });
    }
    Ok(Places { places, left_out, system_wide, installed })
}

/// What [`doctor_places`] found to check.
struct Places {
    /// The manifest locations to check, this user's first.
    places: Vec<Place>,
    /// Browsers installed here that no manifest of the install registers with.
    left_out: Vec<Browser>,
    /// Whether what is installed is only system-wide (so remedies for it take `--system`).
    system_wide: bool,
    /// The extensions the install records and the manifests registered here allow (with `--system`,
    /// the system-wide ones'): what every remedy keeps.
    installed: Allowed,
}

/// The warnings for this user's manifests that hide a system-wide one: the browser reads this user's
/// first, so the system-wide install doesn't serve this user in that browser.
fn hidden_system_manifests(places: &[Place], platform: &Platform) -> Vec<String> {
    let Ok(base) = layout::install_base(Scope::User, platform) else { return Vec::new() };
    let mut warnings = Vec::new();
    for place in places.iter().filter(|place| place.system) {
        let mut hiding: Vec<(Browser, PathBuf)> = Vec::new();
        for &browser in &place.target.browsers {
            let Ok(user) = browser_target(browser, Scope::User, platform, &base) else { continue };
            if registered(&user.location, platform.os) {
                hiding.push((browser, user.location.manifest().to_owned()));
            }
        }
        for (browser, file) in hiding {
            let system_ids = allowed::in_manifest_file(place.target.location.manifest()).unwrap_or_default();
            let user_ids = allowed::in_manifest_file(&file).unwrap_or_default();
            let ids = |allowed: &Allowed| {
                let ids = allowed.of(place.target.family);
                if ids.is_empty() { "none".to_owned() } else { ids.join(", ") }
            };
            warnings.push(format!(
                "{browser}: this user's manifest {} hides the system-wide {}: {browser} reads this user's first, so \
                 it allows only {} here, not {}; if the system-wide install should serve, remove it: `{}`",
                file.display(),
                place.target.location,
                ids(&user_ids),
                ids(&system_ids),
                remove_command(&file, platform.os)
            ));
        }
    }
    warnings
}

/// The command that removes a file, for the shell the OS has.
fn remove_command(file: &Path, os: Os) -> String {
    let quoted = file.display().to_string().replace('\'', "'\\''");
    match os {
        Os::Windows => format!("Remove-Item '{}'", file.display().to_string().replace('\'', "''")),
        _ => format!("rm '{quoted}'"),
    }
}

/// What the remedies keep: every extension installed anywhere here, or asked about.
struct Hint {
    /// The extensions allowed by the records and the manifests checked, and those given.
    installed: Allowed,
    /// Whose shell the commands are for.
    os: Os,
    /// The host whose command they run, and name with `--host-name` when it isn't the default.
    host: HostName,
}

impl Hint {
    /// The `install` command that registers `browsers` (or the profile `profile`) again, keeping every
    /// extension installed of `family` (of both when `None`), with `--system` for a system-wide place.
    fn command(&self, browsers: &[Browser], profile: Option<&Path>, system: bool, family: Option<Family>) -> String {
        let mut command = String::new();
        if system && self.os != Os::Windows {
            command.push_str("sudo ");
        }
        command.push_str(&self.host.invocation(&self.host.command(), "install"));
        if system {
            command.push_str(" --system");
        }
        for browser in browsers {
            command.push_str(&format!(" --browser {browser}"));
        }
        if let Some(dir) = profile {
            command.push_str(&format!(" --user-data-dir '{}'", dir.display()));
        }
        let ids = match family {
            Some(Family::Chromium) => Allowed { chrome: self.installed.chrome.clone(), firefox: Vec::new() },
            Some(Family::Firefox) => Allowed { chrome: Vec::new(), firefox: self.installed.firefox.clone() },
            None => self.installed.clone(),
        };
        command.push_str(&ids.flags());
        command
    }

    /// The command that registers `place` again.
    fn for_place(&self, place: &Place) -> String {
        let target = &place.target;
        let profile = target
            .browsers
            .is_empty()
            .then(|| target.location.manifest().parent().and_then(Path::parent).unwrap_or(Path::new("DIR")).to_owned());
        self.command(&target.browsers, profile.as_deref(), place.system, Some(target.family))
    }
}

/// The checks for one manifest location, from "is it there" to "does the host answer".
fn check_target(
    place: &Place,
    selection: &Selection,
    hint: &Hint,
    platform: &Platform,
    report: &mut Report,
) -> Checked {
    let (os, host) = (platform.os, &platform.host);
    let target = &place.target;
    let subject = target.label.as_str();
    let mut file = target.location.manifest().to_owned();
    if let Location::Registry { hive, key, manifest } = &target.location {
        let value = if os == Os::Windows {
            registry::run(&registry::query_args(*hive, key)).ok().and_then(|out| registry::parse_default_value(&out))
        } else {
            None
        };
        let Some(value) = value else {
            report.fail(
                subject,
                format!("registry key {}\\{key} is missing: run `{}`", hive.short(), hint.for_place(place)),
            );
            return Checked::unregistered();
        };
        report.ok(subject, format!("registry key {}\\{key} points at {value}", hive.short()));
        if Path::new(&value) != manifest.as_path() {
            report.note(format!(
                "{subject}: the key points at another manifest than install writes ({})",
                manifest.display()
            ));
        }
        file = PathBuf::from(value);
    }

    let text = match allowed::read_manifest_text(&file) {
        Ok(text) => {
            report.ok(subject, format!("manifest found: {}", file.display()));
            text
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            report.fail(
                subject,
                format!(
                    "no manifest at {} (the browser says \"Specified native messaging host not found\"): run `{}`",
                    file.display(),
                    hint.for_place(place)
                ),
            );
            return Checked::unregistered();
        }
        Err(error) => {
            report.fail(subject, format!("can't read {}: {error}", file.display()));
            return Checked::unreadable(file);
        }
    };
    let manifest = match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(object)) => {
            report.ok(subject, "manifest is valid JSON");
            object
        }
        Ok(_) => {
            report.fail(subject, "manifest is JSON but not an object");
            return Checked::unreadable(file);
        }
        Err(error) => {
            report.fail(subject, format!("manifest is not valid JSON: {error}"));
            return Checked::unreadable(file);
        }
    };
    let field = |name: &str| manifest.get(name).and_then(Value::as_str);

    let stem = file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    report.check(
        subject,
        match field("name") {
            Some(name) if name == stem && name == host.as_str() => Ok(format!("name \"{name}\" matches the file name")),
            Some(name) => Err(format!(
                "name is \"{name}\" but the file is {stem}.json and extensions connect to {host}: they must be equal"
            )),
            None => Err("the manifest has no \"name\"".into()),
        },
    );
    report.check(
        subject,
        match field("type") {
            Some("stdio") => Ok("type is \"stdio\"".into()),
            other => Err(format!("type is {other:?}, but browsers only start \"stdio\" hosts")),
        },
    );
    let binary = match field("path") {
        Some(path) => check_binary(Path::new(path)),
        None => Err("the manifest has no \"path\"".into()),
    };
    let binary_ok = report.check(subject, binary.clone());
    let own = Allowed::in_manifest(&Value::Object(manifest.clone()));
    // What it should allow: the ids asked about, else those its install record lists, else its own.
    let given = Allowed { chrome: selection.extension_ids.clone(), firefox: selection.firefox_extension_ids.clone() };
    let expected =
        if !given.of(target.family).is_empty() { given } else { place.recorded.clone().unwrap_or_else(|| own.clone()) };
    let expected = expected.of(target.family).to_vec();
    if expected.is_empty() {
        let list = match target.family {
            Family::Chromium => "allowed_origins has no chrome-extension://<id>/ origin",
            Family::Firefox => "allowed_extensions has no add-on id",
        };
        report.fail(subject, format!("{list}, so no extension may start the host: run `{}`", hint.for_place(place)));
    }
    for id in &expected {
        let (allowed, what, list) = match target.family {
            Family::Chromium => (own.chrome.contains(id), chrome_origin(id), "allowed_origins"),
            Family::Firefox => (own.firefox.contains(id), id.clone(), "allowed_extensions"),
        };
        report.check(
            subject,
            if allowed {
                Ok(format!("{what} is in {list}"))
            } else {
                let forbidden = match target.family {
                    Family::Chromium => {
                        ", so the extension gets \"Access to the specified native messaging host is forbidden\""
                    }
                    Family::Firefox => "",
                };
                Err(format!("{what} is not in {list}{forbidden}: run `{}`", hint.for_place(place)))
            },
        );
    }
    let path = PathBuf::from(field("path").unwrap_or_default());
    let mut host_version = None;
    let mut launch = None;
    if binary_ok {
        let first = expected.first().map_or("", String::as_str);
        let args: Vec<OsString> = match target.family {
            Family::Chromium => vec![chrome_origin(first).into()],
            Family::Firefox => vec![file.clone().into_os_string(), first.into()],
        };
        let hello = probe_hello(&path, &args);
        host_version = hello.as_ref().ok().cloned();
        if hello.is_ok() && !first.is_empty() {
            launch = Some((path.clone(), args));
        }
        report.check(
            subject,
            hello.map(|version| format!("the host answers hello: protocol {PROTOCOL_VERSION}, host {version}")),
        );
    }
    let mut trusted = vec![file];
    trusted.extend(path.is_absolute().then_some(path));
    Checked { trusted, registered: true, host_version, allowed: own, launch }
}

/// The manifest's `path`: absolute, a file, executable.
fn check_binary(path: &Path) -> Result<String, String> {
    if !path.is_absolute() {
        return Err(format!(
            "path \"{}\" is not absolute; browsers on Linux and macOS need an absolute path",
            path.display()
        ));
    }
    let meta = std::fs::metadata(path).map_err(|error| format!("path {} can't be used: {error}", path.display()))?;
    if !meta.is_file() {
        return Err(format!("path {} is not a file", path.display()));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if meta.permissions().mode() & 0o111 == 0 {
            return Err(format!("path {} is not executable (chmod +x it, or install again)", path.display()));
        }
    }
    Ok(format!("path {} is absolute and executable", path.display()))
}

/// A host started as a browser starts it, spoken to over its pipes one request at a time.
struct Conversation {
    /// The host process.
    child: Child,
    /// Its stdin; dropping it tells the host the browser is gone.
    stdin: Option<ChildStdin>,
    /// Each reply's text as the reader thread reads it, or the error that ended its reading.
    replies: mpsc::Receiver<std::io::Result<String>>,
}

impl Conversation {
    /// Starts `binary` with the browser's `args`.
    fn start(binary: &Path, args: &[OsString]) -> Result<Conversation, String> {
        let mut child = Command::new(binary)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|error| format!("can't start {}: {error}", binary.display()))?;
        let stdin = child.stdin.take();
        let mut stdout = child.stdout.take().expect("stdout is piped");
        let (sender, replies) = mpsc::channel();
        std::thread::spawn(move || {
            loop {
                // The host ends the conversation by closing stdout: a clean end is an error to a
                // question still waiting for its reply.
                let read = client::read_reply(&mut stdout)
                    .and_then(|reply| reply.ok_or_else(|| std::io::Error::from(std::io::ErrorKind::UnexpectedEof)));
                let failed = read.is_err();
                if sender.send(read).is_err() || failed {
                    return;
                }
            }
        });
        Ok(Conversation { child, stdin, replies })
    }

    /// Sends `request` and waits for its reply, parsed; `op` names it in errors.
    fn ask(&mut self, op: &str, request: &Value) -> Result<Value, String> {
        // A host that exits at once (refusing its arguments) closes the pipe: that shows in the reply.
        if let Some(stdin) = self.stdin.as_mut() {
            let _ = client::write_frame(stdin, request.to_string().as_bytes()).and_then(|()| stdin.flush());
        }
        let body = match self.replies.recv_timeout(REPLY_TIMEOUT) {
            Ok(Ok(body)) => body,
            Ok(Err(_)) => {
                let status = self.end();
                return Err(format!("the host ended ({status}) without answering {op}; see its log"));
            }
            Err(_) => {
                let _ = self.child.kill();
                self.end();
                return Err(format!("the host didn't answer {op} within {} s", REPLY_TIMEOUT.as_secs()));
            }
        };
        serde_json::from_str(&body).map_err(|error| format!("the host's reply to {op} is not JSON: {error}"))
    }

    /// Closes the host's stdin, as a browser closing the port does, and waits for it to exit.
    fn end(&mut self) -> String {
        drop(self.stdin.take());
        self.child.wait().map(|status| status.to_string()).unwrap_or_else(|error| error.to_string())
    }
}

impl Drop for Conversation {
    fn drop(&mut self) {
        if self.stdin.is_some() {
            self.end();
        }
    }
}

/// Starts the host as a browser would, sends a `hello` frame and checks the reply's protocol; returns
/// the host's version.
fn probe_hello(binary: &Path, args: &[OsString]) -> Result<String, String> {
    let mut host = Conversation::start(binary, args)?;
    let reply = host.ask("hello", &json!({"id": "doctor", "op": "hello"}))?;
    let result = &reply["result"];
    if reply["ok"] != true || result["protocolVersion"] != PROTOCOL_VERSION {
        return Err(format!("the host's reply to hello is not protocol {PROTOCOL_VERSION}: {reply}"));
    }
    Ok(result["hostVersion"].as_str().unwrap_or("?").to_owned())
}

/// Proves the store through the host, started as a browser starts it: it writes an item in a
/// session of doctor's own (a random id no extension uses), reads it back, deletes it, and ends the
/// session, whatever happened before.
fn prove_store(binary: &Path, args: &[OsString], platform: &Platform) -> Result<String, String> {
    let store = platform.data_dir().map(|dir| paths::store_dir(&dir).display().to_string());
    let store = store.unwrap_or_else(|| "the store".to_owned());
    let session = scratch_session_id();
    let mut host = Conversation::start(binary, args)?;
    let outcome = write_read_delete(&mut host, &session);
    let ended = host.ask("endSession", &json!({"id": 4, "op": "endSession", "sessionId": session}));
    let steps = outcome.map_err(|why| {
        format!(
            "{why}, so extensions can't keep anything in {store}: make sure it is a folder you own and can write \
             (`ls -ld` it and its parents), and that the disk isn't full; `{} verify` checks the store itself",
            platform.host.command()
        )
    })?;
    replied_ok("endSession", ended?)?;
    Ok(format!("the host {steps} ({store}; doctor's own session {session}, ended)"))
}

/// The write, read and delete of [`prove_store`]; says what was done.
fn write_read_delete(host: &mut Conversation, session: &str) -> Result<&'static str, String> {
    let data = json!({"doctor": session});
    let request = json!({"id": 1, "op": "write", "sessionId": session, "data": data, "description": "doctor's check of the store"});
    let written = host.ask("write", &request)?;
    if written["error"]["code"] == "QuotaExceededError" {
        // The store opened and counted what it holds: it works, and is full, which the store line
        // below warns about with what to do.
        return Ok("opened the store but refused doctor's write, as it is full");
    }
    let written = replied_ok("write", written)?;
    let key = written["storageKey"].as_str().ok_or("the host's reply to write has no storageKey")?;
    let request = json!({"id": 2, "op": "read", "sessionId": session, "storageKey": key});
    let read = replied_ok("read", host.ask("read", &request)?)?;
    if read["item"]["data"] != data {
        return Err("the host read back other data than it wrote".into());
    }
    let request = json!({"id": 3, "op": "delete", "sessionId": session, "storageKey": key});
    replied_ok("delete", host.ask("delete", &request)?)?;
    Ok("wrote, read back and deleted an item")
}

/// The reply's `result` when it is `ok`, else what its error says.
fn replied_ok(op: &str, mut reply: Value) -> Result<Value, String> {
    if reply["ok"] == true {
        return Ok(reply["result"].take());
    }
    let error = &reply["error"];
    let code = error["code"].as_str().unwrap_or("no error code");
    let message = error["message"].as_str().unwrap_or("no message");
    Err(format!("the host refused {op}: {code}: {message}"))
}

/// A session id of doctor's own: `conv_doctor-` and 16 random hex digits, which no extension's
/// session shares by chance.
fn scratch_session_id() -> String {
    use rand::TryRng;
    let mut bytes = [0u8; 8];
    if rand::rngs::SysRng.try_fill_bytes(&mut bytes).is_err() {
        // No system randomness: the time and the process id still keep runs apart.
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        bytes = ((nanos as u64) ^ u64::from(std::process::id()) << 32).to_be_bytes();
    }
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("conv_doctor-{hex}")
}

/// Policies for one browser, for a host registered at `scope`.
fn check_policies(browser: Browser, scope: Scope, options: &DoctorOptions, platform: &Platform, report: &mut Report) {
    let Some(reading) = policy::read(browser, platform.os, &options.policy_root) else { return };
    for problem in &reading.problems {
        report.note(format!("{browser}: a policy file the browser will ignore: {problem}"));
    }
    let sources = reading.sources.join(", ");
    report.check(
        browser.id(),
        match reading.policy.blocks(&platform.host, scope) {
            None => Ok(format!("no policy blocks the host (looked in {sources})")),
            Some(why) => Err(format!("a policy blocks the host: {why} (from {sources})")),
        },
    );
}

/// A line with the store's use of its store-wide quota: a note, or a warning when the store is nearly
/// full (writes past the quota are refused) or the settings file that sets the quota is unusable.
fn store_quota_line(platform: &Platform, report: &mut Report) {
    let Some(dir) = platform.data_dir() else { return };
    let host = &platform.host;
    let command = host.command();
    let change = format!("`{} --store-quota <size>` changes it", host.invocation(&command, "install"));
    let quota = match crate::config::load(&dir) {
        Ok(config) => config.store_quota(),
        Err(why) => {
            report.warn(format!(
                "store quota: {why}; the host uses the default quota of {} until you fix or remove the file ({change})",
                crate::config::human_size(crate::limits::DEFAULT_STORE_QUOTA_BYTES)
            ));
            return;
        }
    };
    let store_dir = paths::store_dir(&dir);
    let used = match crate::store_file::check(&store_dir) {
        crate::store_file::FileCheck::Missing => Ok(0),
        _ => crate::store::Store::open(&store_dir)
            .and_then(|store| store.read(|txn, dbs| dbs.store_total(txn)))
            .map_err(|error| error.message.clone()),
    };
    match used {
        Ok(used) => match crate::config::store_use(used, quota) {
            (phrase, false) => report.note(format!("store: {phrase}; {change}")),
            (phrase, true) => report.warn(format!(
                "store: {phrase}: writes past the quota are refused; end the sessions whose tasks are done \
                 (`{command} sessions`, then `{command} end <session>`), or raise it: {change}"
            )),
        },
        Err(why) => report.note(format!("store: its use can't be read ({why}); `{command} verify` says more")),
    }
}

/// The data directory exists (or can be made) and takes a file.
fn data_dir_writable(platform: &Platform) -> Result<String, String> {
    let dir = platform.data_dir().ok_or("no data directory: set LLM_CACHE_DIR or HOME")?;
    paths::create_private_dir(&dir).map_err(|error| format!("can't create {}: {error}", dir.display()))?;
    let probe = dir.join(format!(".doctor-{}", std::process::id()));
    std::fs::write(&probe, b"probe").map_err(|error| format!("{} is not writable: {error}", dir.display()))?;
    let _ = std::fs::remove_file(&probe);
    Ok(format!("{} is writable", dir.display()))
}
