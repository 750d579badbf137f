//! `doctor`: checks every step a browser takes to start the host, and fails when any step would
//! fail. It answers "Specified native messaging host not found" and its cousins: which manifest is
//! missing, wrong or blocked, and why. It also warns, without failing, about folders on the way to
//! the manifests and the binary that others could write ([`super::owner`]).
//!
//! Every check makes one line, but a browser whose checks all pass is shown as one line that sums
//! them up, and browsers with neither a build nor a manifest here share one line: a healthy install
//! fits on a screen, and a broken browser still shows every line, each failure with its remedy.
//! `--verbose` shows every line of every browser.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

use super::browsers::{Browser, Family, Location, Platform};
use super::manifest::chrome_origin;
use super::record::Record;
use super::{Failure, Selection, Target, browser_target, found_browsers, layout, owner, policy, registry, say};
use crate::cmd::PROTOCOL_VERSION;
use crate::host_name::HostName;
use crate::paths::{self, Os};

/// How long the host may take to answer `hello` (it answers in milliseconds; a cold disk is slower).
const HELLO_TIMEOUT: Duration = Duration::from_secs(10);

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

/// What one manifest location's checks found, for the line that sums them up and for the warnings.
struct Checked {
    /// The files the browser trusts for it: the manifest found, and the binary it names.
    trusted: Vec<PathBuf>,
    /// Whether a manifest (and on Windows its registry key) is there at all.
    registered: bool,
    /// The version the host gave in its answer to `hello`, when it answered.
    host_version: Option<String>,
}

/// Runs every check and prints the report; tells whether all passed.
///
/// # Errors
/// Only when there is nothing to check against (no HOME, an unreadable install record).
pub fn doctor(options: &DoctorOptions, platform: &Platform, out: &mut dyn Write) -> Result<bool, Failure> {
    let selection = &options.selection;
    let base = std::path::absolute(layout::install_base(selection.scope, platform)?)
        .map_err(|e| Failure(format!("no install folder: {e}")))?;
    let found = found_browsers(platform);
    let targets = doctor_targets(selection, platform, &base, &found)?;
    let mut report = Report { lines: Vec::new(), part: Part::Overall, passed: 0, failed: 0, warned: 0 };

    for warning in super::sandbox_warnings(selection, &targets, &found) {
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
    for (i, target) in targets.iter().enumerate() {
        report.part = Part::Target(i);
        let outcome = check_target(target, selection, platform.os, &platform.host, &mut report);
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
        check_policies(browser, options, platform.os, &platform.host, &mut report);
    }
    report.part = Part::Overall;
    report.check("data directory", data_dir_writable(platform));
    store_quota_line(platform, &mut report);
    for warning in owner::exposed(&trusted.iter().map(PathBuf::as_path).collect::<Vec<_>>()) {
        report.warn(warning);
    }
    if selection.user_data_dirs.is_empty() {
        report.note(
            "a Chromium started with --user-data-dir=DIR (every headless or test profile) looks for hosts only in \
             DIR/NativeMessagingHosts, which these checks don't cover: run `llm-cache-host doctor --user-data-dir DIR` \
             (and install with --user-data-dir DIR) for it",
        );
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
        short_report(&report.lines, &targets, &checked, &absent, selection)
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
/// is the missing manifest. `absent[i]` tells whether none of `targets[i]`'s browsers is installed.
fn short_report(
    lines: &[Line],
    targets: &[Target],
    checked: &[Checked],
    absent: &[bool],
    selection: &Selection,
) -> Vec<String> {
    let part_of = |i: usize| lines.iter().filter(move |line| line.part == Part::Target(i));
    let not_found: Vec<usize> = (0..targets.len())
        .filter(|&i| absent[i] && !checked[i].registered && part_of(i).filter(|line| line.failed).count() == 1)
        .collect();
    let mut shown = Vec::new();
    let mut printed = vec![false; targets.len()];
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
                shown.push(not_found_line(&not_found.iter().map(|&i| &targets[i]).collect::<Vec<_>>()));
            }
        } else if part_of(i).any(|line| line.failed) {
            shown.extend(part_of(i).map(|line| line.text.clone()));
        } else {
            shown.push(summary_line(&targets[i], &checked[i], absent[i], selection));
            shown.extend(part_of(i).filter(|line| !line.text.starts_with("OK")).map(|line| line.text.clone()));
        }
    }
    shown
}

/// The one line for a location whose checks all pass: what answers, and for whom.
fn summary_line(target: &Target, checked: &Checked, absent: bool, selection: &Selection) -> String {
    let (ids, one, many) = match target.family {
        Family::Chromium => (&selection.extension_ids, "extension", "extensions"),
        Family::Firefox => (&selection.firefox_extension_ids, "add-on", "add-ons"),
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
fn not_found_line(targets: &[&Target]) -> String {
    let labels: Vec<&str> = targets.iter().map(|target| target.label.as_str()).collect();
    let flags: Vec<String> = targets.iter().flat_map(|t| &t.browsers).map(|b| format!("--browser {b}")).collect();
    format!(
        "FAIL not found: {}: neither the browser nor a manifest for the host is here; once the browser is installed, \
         run `llm-cache-host install {}`",
        labels.join(", "),
        flags.join(" ")
    )
}

/// What to check: what was asked for; else what the install record lists plus every browser found
/// with a build that can start hosts; else every browser.
fn doctor_targets(
    selection: &Selection,
    platform: &Platform,
    base: &Path,
    found: &[(Browser, Vec<super::browsers::Build>)],
) -> Result<Vec<Target>, Failure> {
    if !selection.browsers.is_empty() || !selection.user_data_dirs.is_empty() {
        return super::selected_targets(selection, platform, base, found);
    }
    let mut targets = Vec::new();
    let record = Record::load(&layout::record_in(base)).map_err(|e| Failure(e.to_string()))?;
    for target in record.into_iter().flat_map(|record| record.entries) {
        super::push_target(&mut targets, target);
    }
    for (browser, builds) in found {
        if builds.iter().any(super::browsers::Build::can_start_hosts) {
            super::push_target(&mut targets, browser_target(*browser, selection.scope, platform, base)?);
        }
    }
    if targets.is_empty() {
        for browser in Browser::ALL {
            super::push_target(&mut targets, browser_target(browser, selection.scope, platform, base)?);
        }
    }
    Ok(targets)
}

/// The command that installs for this target, for the hints.
fn install_hint(target: &Target) -> String {
    if target.browsers.is_empty() {
        let dir = target.location.manifest().parent().and_then(Path::parent).unwrap_or(Path::new("DIR"));
        format!("llm-cache-host install --user-data-dir '{}'", dir.display())
    } else {
        let flags: Vec<String> = target.browsers.iter().map(|b| format!("--browser {b}")).collect();
        format!("llm-cache-host install {}", flags.join(" "))
    }
}

/// The checks for one manifest location, from "is it there" to "does the host answer".
fn check_target(target: &Target, selection: &Selection, os: Os, host: &HostName, report: &mut Report) -> Checked {
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
                format!("registry key {}\\{key} is missing: run `{}`", hive.short(), install_hint(target)),
            );
            return Checked { trusted: Vec::new(), registered: false, host_version: None };
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

    let text = match std::fs::read_to_string(&file) {
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
                    install_hint(target)
                ),
            );
            return Checked { trusted: Vec::new(), registered: false, host_version: None };
        }
        Err(error) => {
            report.fail(subject, format!("can't read {}: {error}", file.display()));
            return Checked { trusted: vec![file], registered: true, host_version: None };
        }
    };
    let manifest = match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(object)) => {
            report.ok(subject, "manifest is valid JSON");
            object
        }
        Ok(_) => {
            report.fail(subject, "manifest is JSON but not an object");
            return Checked { trusted: vec![file], registered: true, host_version: None };
        }
        Err(error) => {
            report.fail(subject, format!("manifest is not valid JSON: {error}"));
            return Checked { trusted: vec![file], registered: true, host_version: None };
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
    let allowed = |list: &str| -> Vec<&str> {
        manifest.get(list).and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect()
    };
    match target.family {
        Family::Chromium => {
            let origins = allowed("allowed_origins");
            for id in &selection.extension_ids {
                let origin = chrome_origin(id);
                report.check(
                    subject,
                    if origins.contains(&origin.as_str()) {
                        Ok(format!("{origin} is in allowed_origins"))
                    } else {
                        Err(format!(
                            "{origin} is not in allowed_origins, so the extension gets \"Access to the specified \
                             native messaging host is forbidden\": run `{} --extension-id {id}`",
                            install_hint(target)
                        ))
                    },
                );
            }
        }
        Family::Firefox => {
            let ids = allowed("allowed_extensions");
            for id in &selection.firefox_extension_ids {
                report.check(
                    subject,
                    if ids.contains(&id.as_str()) {
                        Ok(format!("{id} is in allowed_extensions"))
                    } else {
                        // Quoted, so that the command works as shown in PowerShell too ({GUID} and @name
                        // mean something there); a Firefox id never holds a quote.
                        Err(format!(
                            "{id} is not in allowed_extensions: run `{} --firefox-extension-id '{id}'`",
                            install_hint(target)
                        ))
                    },
                );
            }
        }
    }
    let path = PathBuf::from(field("path").unwrap_or_default());
    let mut host_version = None;
    if binary_ok {
        let args: Vec<OsString> = match target.family {
            Family::Chromium => {
                vec![chrome_origin(selection.extension_ids.first().map_or("", String::as_str)).into()]
            }
            Family::Firefox => vec![
                file.clone().into_os_string(),
                selection.firefox_extension_ids.first().cloned().unwrap_or_default().into(),
            ],
        };
        let hello = probe_hello(&path, &args);
        host_version = hello.as_ref().ok().cloned();
        report.check(
            subject,
            hello.map(|version| format!("the host answers hello: protocol {PROTOCOL_VERSION}, host {version}")),
        );
    }
    let mut trusted = vec![file];
    trusted.extend(path.is_absolute().then_some(path));
    Checked { trusted, registered: true, host_version }
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

/// Starts the host as a browser would, sends a `hello` frame and checks the reply's protocol; returns
/// the host's version.
fn probe_hello(binary: &Path, args: &[OsString]) -> Result<String, String> {
    let mut child = Command::new(binary)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|error| format!("can't start {}: {error}", binary.display()))?;
    let request = br#"{"id":"doctor","op":"hello"}"#;
    let mut frame = (request.len() as u32).to_ne_bytes().to_vec();
    frame.extend_from_slice(request);
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let mut stdout = child.stdout.take().expect("stdout is piped");
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let read = (|| -> std::io::Result<Vec<u8>> {
            let mut header = [0u8; 4];
            stdout.read_exact(&mut header)?;
            let mut body = vec![0u8; u32::from_ne_bytes(header) as usize];
            stdout.read_exact(&mut body)?;
            Ok(body)
        })();
        let _ = sender.send(read);
    });
    // A host that exits at once (refusing its arguments) closes the pipe: that shows in the reply.
    let _ = stdin.write_all(&frame).and_then(|()| stdin.flush());
    let reply = receiver.recv_timeout(HELLO_TIMEOUT);
    drop(stdin);
    if reply.is_err() {
        let _ = child.kill();
    }
    let status = child.wait().map(|status| status.to_string()).unwrap_or_else(|error| error.to_string());
    let body = match reply {
        Ok(Ok(body)) => body,
        Ok(Err(_)) => return Err(format!("the host ended ({status}) without answering hello; see its log")),
        Err(_) => return Err(format!("the host didn't answer hello within {} s", HELLO_TIMEOUT.as_secs())),
    };
    let reply: Value =
        serde_json::from_slice(&body).map_err(|error| format!("the host's reply to hello is not JSON: {error}"))?;
    let result = &reply["result"];
    if reply["ok"] != true || result["protocolVersion"] != PROTOCOL_VERSION {
        return Err(format!("the host's reply to hello is not protocol {PROTOCOL_VERSION}: {reply}"));
    }
    Ok(result["hostVersion"].as_str().unwrap_or("?").to_owned())
}

/// Policies for one browser.
fn check_policies(browser: Browser, options: &DoctorOptions, os: Os, host: &HostName, report: &mut Report) {
    let Some(reading) = policy::read(browser, os, &options.policy_root) else { return };
    for problem in &reading.problems {
        report.note(format!("{browser}: a policy file the browser will ignore: {problem}"));
    }
    let sources = reading.sources.join(", ");
    report.check(
        browser.id(),
        match reading.policy.blocks(host, options.selection.scope) {
            None => Ok(format!("no policy blocks the host (looked in {sources})")),
            Some(why) => Err(format!("a policy blocks the host: {why} (from {sources})")),
        },
    );
}

/// A line with the store's use of its store-wide quota: a note, or a warning when the store is nearly
/// full (writes past the quota are refused) or the settings file that sets the quota is unusable.
fn store_quota_line(platform: &Platform, report: &mut Report) {
    let Some(dir) = platform.data_dir() else { return };
    let change = "`llm-cache-host install --store-quota <size>` changes it";
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
                 (`llm-cache-host sessions`, then `llm-cache-host end <session>`), or raise it: {change}"
            )),
        },
        Err(why) => report.note(format!("store: its use can't be read ({why}); `llm-cache-host verify` says more")),
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
