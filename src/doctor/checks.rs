//! doctor's checks: each looks at one step a browser takes to start the host and returns what it
//! found as a [`Finding`], for [`super::report`] to render. Those that need the host itself ask it
//! through [`super::probe`].

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::DoctorOptions;
use super::probe;
use super::remedy::{self, Remedy};
use super::report::{Finding, Findings, Part, Summary, Verdict};
use crate::cmd::PROTOCOL_VERSION;
use crate::install::allowed::{self, Allowed};
use crate::install::browsers::{Browser, Build, Family, Location, Platform, Scope};
use crate::install::manifest::chrome_origin;
use crate::install::record::Record;
use crate::install::{
    self as install, Failure, Selection, Target, browser_target, found_browsers, layout, owner, policy, registered,
    registry,
};
use crate::paths::{self, Os};

/// Runs every check of `options` on `platform` and returns what they found.
///
/// # Errors
/// Only when there is nothing to check against (no HOME).
pub fn run(options: &DoctorOptions, platform: &Platform) -> Result<Findings, Failure> {
    let selection = &options.selection;
    let found = found_browsers(platform);
    let Places { places, left_out, system_wide, mut installed, unreadable } =
        doctor_places(selection, platform, &found)?;
    let targets: Vec<Target> = places.iter().map(|place| place.target.clone()).collect();
    let mut sheet = Sheet { findings: Vec::new(), part: Part::Overall };
    // The extensions asked about join those installed in every remedy.
    installed
        .add(&Allowed { chrome: selection.extension_ids.clone(), firefox: selection.firefox_extension_ids.clone() });
    let remedy = Remedy { installed, os: platform.os, host: platform.host.clone(), program: platform.program() };

    for warning in install::sandbox_warnings(selection, &targets, &found) {
        sheet.note(warning);
    }
    for why in unreadable {
        sheet.warn(format!(
            "{why}: these checks find the manifests where browsers look, as uninstall finds this host's files, and \
             the next install writes a new record"
        ));
    }
    // Say what is checked, so that "all passed" can't be read as "every profile works". The short
    // report says it with its one line per browser or profile instead.
    if options.verbose {
        let checked: Vec<String> =
            targets.iter().map(|target| format!("{} ({})", target.label, target.location)).collect();
        sheet.note(format!("checking {}", checked.join(", ")));
    }
    // What a browser trusts, whose folders others must not be able to write.
    let mut trusted: Vec<PathBuf> = layout::command_link(selection.scope, platform)
        .filter(|link| link.symlink_metadata().is_ok())
        .into_iter()
        .collect();
    let mut checked = Vec::new();
    for (i, place) in places.iter().enumerate() {
        sheet.part = Part::Place(i);
        let outcome = check_target(place, selection, &remedy, platform, &mut sheet);
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
        sheet.part = Part::Place(i);
        let scope = if places[i].system { Scope::System } else { Scope::User };
        check_policies(browser, scope, options, platform, &mut sheet);
    }
    sheet.part = Part::Overall;
    if !left_out.is_empty() {
        let names: Vec<&str> = left_out.iter().map(|b| b.id()).collect();
        sheet.note(format!(
            "{} {} installed here, but the host isn't registered for it; if an extension there should use the cache: `{}`",
            names.join(", "),
            if names.len() == 1 { "is" } else { "are" },
            remedy.command(&left_out, None, system_wide, None)
        ));
    }
    for warning in hidden_system_manifests(&places, platform) {
        sheet.warn(warning);
    }
    sheet.check("data directory", data_dir_writable(platform));
    // The store, through the host the browser would start first: the first manifest checked whose
    // host answered (this user's come before the system-wide ones, as browsers look).
    let mut refused = None;
    if let Some((binary, args)) = checked.iter().find_map(|c| c.launch.clone()) {
        match probe::prove_store(&binary, &args, platform) {
            Ok(proof) => {
                sheet.ok("store", proof.text);
                refused = proof.refused;
            }
            Err(text) => sheet.fail("store", text),
        }
    }
    store_quota_line(platform, refused.as_deref(), &mut sheet);
    for warning in owner::exposed(&trusted.iter().map(PathBuf::as_path).collect::<Vec<_>>()) {
        sheet.warn(warning);
    }
    if selection.user_data_dirs.is_empty() {
        sheet.note(format!(
            "a Chromium started with --user-data-dir=DIR (every headless or test profile) looks for hosts only in \
             DIR/NativeMessagingHosts, which these checks don't cover: run `{} --user-data-dir DIR` \
             (and install with --user-data-dir DIR) for it",
            platform.host.invocation(&platform.program(), "doctor")
        ));
    }

    let places = places
        .iter()
        .zip(checked)
        .map(|(place, checked)| {
            let target = &place.target;
            let absent =
                !target.browsers.is_empty() && target.browsers.iter().all(|b| found.iter().all(|(f, _)| f != b));
            Summary {
                label: target.label.clone(),
                browsers: target.browsers.clone(),
                family: target.family,
                system: place.system,
                registered: checked.registered,
                absent,
                allowed: checked.allowed.of(target.family).to_vec(),
                host_version: checked.host_version,
            }
        })
        .collect();
    Ok(Findings { findings: sheet.findings, places, remedy })
}

/// The findings so far, and whose checks run now.
struct Sheet {
    /// Every finding, in the order the checks ran.
    findings: Vec<Finding>,
    /// Whose checks run now.
    part: Part,
}

impl Sheet {
    fn push(&mut self, verdict: Verdict, text: String) {
        self.findings.push(Finding { part: self.part, verdict, text });
    }

    fn ok(&mut self, subject: &str, text: impl AsRef<str>) {
        self.push(Verdict::Passed, format!("{subject}: {}", text.as_ref()));
    }

    fn fail(&mut self, subject: &str, text: impl AsRef<str>) {
        self.push(Verdict::Failed, format!("{subject}: {}", text.as_ref()));
    }

    fn warn(&mut self, text: impl AsRef<str>) {
        self.push(Verdict::Warning, text.as_ref().to_owned());
    }

    fn note(&mut self, text: impl AsRef<str>) {
        self.push(Verdict::Note, text.as_ref().to_owned());
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
    // A record that can't be read is no reason to stop: the manifests are checked where browsers
    // look for them all the same, and the report says the record was unreadable.
    let mut unreadable = Vec::new();
    let mut load = |base: &Path| match Record::load(&layout::record_in(base, &platform.host)) {
        Ok(record) => record,
        Err(error) => {
            unreadable.push(error.to_string());
            None
        }
    };
    let user_record = user_base.as_deref().and_then(&mut load);
    let system_record = load(&system_base);

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
    Ok(Places { places, left_out, system_wide, installed, unreadable })
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
    /// Why each install record that couldn't be read couldn't.
    unreadable: Vec<String>,
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
                remedy::remove_command(&file, platform.os)
            ));
        }
    }
    warnings
}

/// The checks for one manifest location, from "is it there" to "does the host answer".
fn check_target(
    place: &Place,
    selection: &Selection,
    remedy: &Remedy,
    platform: &Platform,
    sheet: &mut Sheet,
) -> Checked {
    let (os, host) = (platform.os, &platform.host);
    let target = &place.target;
    let subject = target.label.as_str();
    // Whatever is wrong with the manifest or the binary it names, installing again writes both anew,
    // with every extension installed.
    let fix = |problem: String| format!("{problem}: run `{}`", remedy.for_target(target, place.system));
    let mut file = target.location.manifest().to_owned();
    if let Location::Registry { hive, key, manifest } = &target.location {
        let value = if os == Os::Windows {
            registry::run(&registry::query_args(*hive, key)).ok().and_then(|out| registry::parse_default_value(&out))
        } else {
            None
        };
        let Some(value) = value else {
            sheet.fail(
                subject,
                format!(
                    "registry key {}\\{key} is missing: run `{}`",
                    hive.short(),
                    remedy.for_target(&place.target, place.system)
                ),
            );
            return Checked::unregistered();
        };
        sheet.ok(subject, format!("registry key {}\\{key} points at {value}", hive.short()));
        if Path::new(&value) != manifest.as_path() {
            sheet.note(format!(
                "{subject}: the key points at another manifest than install writes ({})",
                manifest.display()
            ));
        }
        file = PathBuf::from(value);
    }

    let text = match allowed::read_manifest_text(&file) {
        Ok(text) => {
            sheet.ok(subject, format!("manifest found: {}", file.display()));
            text
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            sheet.fail(
                subject,
                format!(
                    "no manifest at {} (the browser says \"Specified native messaging host not found\"): run `{}`",
                    file.display(),
                    remedy.for_target(&place.target, place.system)
                ),
            );
            return Checked::unregistered();
        }
        Err(error) => {
            sheet.fail(subject, fix(format!("can't read {}: {error}", file.display())));
            return Checked::unreadable(file);
        }
    };
    let manifest = match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(object)) => {
            sheet.ok(subject, "manifest is valid JSON");
            object
        }
        Ok(_) => {
            sheet.fail(subject, fix("manifest is JSON but not an object".to_owned()));
            return Checked::unreadable(file);
        }
        Err(error) => {
            sheet.fail(subject, fix(format!("manifest is not valid JSON ({error})")));
            return Checked::unreadable(file);
        }
    };
    let field = |name: &str| manifest.get(name).and_then(Value::as_str);

    let stem = file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    sheet.check(
        subject,
        match field("name") {
            Some(name) if name == stem && name == host.as_str() => Ok(format!("name \"{name}\" matches the file name")),
            Some(name) => Err(fix(format!(
                "name is \"{name}\" but the file is {stem}.json and extensions connect to {host}: they must be equal"
            ))),
            None => Err(fix("the manifest has no \"name\"".into())),
        },
    );
    sheet.check(
        subject,
        match field("type") {
            Some("stdio") => Ok("type is \"stdio\"".into()),
            other => Err(fix(format!("type is {other:?}, but browsers only start \"stdio\" hosts"))),
        },
    );
    let binary = match field("path") {
        Some(path) => check_binary(Path::new(path)).map_err(fix),
        None => Err(fix("the manifest has no \"path\"".into())),
    };
    let binary_ok = sheet.check(subject, binary.clone());
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
        sheet.fail(
            subject,
            format!(
                "{list}, so no extension may start the host: run `{}`",
                remedy.for_target(&place.target, place.system)
            ),
        );
    }
    for id in &expected {
        let (allowed, what, list) = match target.family {
            Family::Chromium => (own.chrome.contains(id), chrome_origin(id), "allowed_origins"),
            Family::Firefox => (own.firefox.contains(id), id.clone(), "allowed_extensions"),
        };
        sheet.check(
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
                Err(format!(
                    "{what} is not in {list}{forbidden}: run `{}`",
                    remedy.for_target(&place.target, place.system)
                ))
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
        let hello = probe::probe_hello(&path, &args);
        host_version = hello.as_ref().ok().cloned();
        if hello.is_ok() && !first.is_empty() {
            launch = Some((path.clone(), args));
        }
        sheet.check(
            subject,
            hello
                .map(|version| format!("the host answers hello: protocol {PROTOCOL_VERSION}, host {version}"))
                .map_err(|why| fix(format!("{why}, or install it again"))),
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
            return Err(format!("path {} is not executable", path.display()));
        }
    }
    Ok(format!("path {} is absolute and executable", path.display()))
}

/// Policies for one browser, for a host registered at `scope`.
fn check_policies(browser: Browser, scope: Scope, options: &DoctorOptions, platform: &Platform, sheet: &mut Sheet) {
    let Some(reading) = policy::read(browser, platform.os, &options.policy_root) else { return };
    for problem in &reading.problems {
        sheet.note(format!("{browser}: a policy file the browser will ignore: {problem}"));
    }
    let sources = reading.sources.join(", ");
    sheet.check(
        browser.id(),
        match reading.policy.blocks(&platform.host, scope) {
            None => Ok(format!("no policy blocks the host (looked in {sources})")),
            Some(why) => Err(format!("a policy blocks the host: {why} (from {sources})")),
        },
    );
}

/// A line with the store's use of its store-wide quota: a note, or a warning when the store is nearly
/// full (writes past the quota are refused), the host refused doctor's write as past it (`refused`,
/// its message: a quota smaller than any item is never "nearly full"), or the settings file that sets
/// the quota is unusable.
fn store_quota_line(platform: &Platform, refused: Option<&str>, sheet: &mut Sheet) {
    let Some(dir) = platform.data_dir() else { return };
    let host = &platform.host;
    let command = platform.program();
    let change = format!("`{} --store-quota <size>` changes it", host.invocation(&command, "config"));
    let quota = match crate::config::load(&dir) {
        Ok(config) => config.store_quota(),
        Err(why) => {
            sheet.warn(format!(
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
    // A store nearly full gets the warning below, which says to end sessions too; a refusal with room
    // left is a quota too small for any item, which only raising it puts right.
    let nearly_full = used.as_ref().is_ok_and(|&used| crate::config::store_use(used, quota).1);
    if let Some(message) = refused.filter(|_| !nearly_full) {
        let phrase = used.as_ref().map_or_else(
            |_| format!("the store-wide quota is {}", crate::config::human_size(quota)),
            |&used| crate::config::store_use(used, quota).0,
        );
        sheet.warn(format!(
            "store: the host refused doctor's small write ({message}): {phrase}, so extensions can't keep anything \
             new; raise the quota: {change}"
        ));
        return;
    }
    match used {
        Ok(used) => match crate::config::store_use(used, quota) {
            (phrase, false) => sheet.note(format!("store: {phrase}; {change}")),
            (phrase, true) => sheet.warn(format!(
                "store: {phrase}: writes past the quota are refused; end the sessions whose tasks are done \
                 (`{command} sessions`, then `{command} end <session>`), or raise it: {change}"
            )),
        },
        Err(why) => sheet.note(format!("store: its use can't be read ({why}); `{command} verify` says more")),
    }
}

/// The data directory exists (or can be made) and takes a file.
fn data_dir_writable(platform: &Platform) -> Result<String, String> {
    let dir = platform.data_dir().ok_or("no data directory: set LLM_CACHE_DIR or HOME")?;
    paths::create_private_dir(&dir).map_err(|error| format!("can't create {}: {error}", dir.display()))?;
    let probe = dir.join(format!(".doctor-{}", std::process::id()));
    // A write that fails part way (a full disk, a file size limit) may still have created the file:
    // it goes either way.
    let written = std::fs::write(&probe, b"probe");
    let _ = std::fs::remove_file(&probe);
    written.map_err(|error| format!("{} is not writable: {error}", dir.display()))?;
    Ok(format!("{} is writable", dir.display()))
}
