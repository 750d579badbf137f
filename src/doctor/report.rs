//! doctor's report: the findings of its checks rendered as the lines a person reads, by one pure
//! function ([`render`]), so that how a healthy install, a broken browser or a missing one reads is
//! tested on findings made by hand.
//!
//! Every check makes one line, but a manifest location whose checks all pass is shown as one line
//! that sums them up, and locations with neither a browser nor a manifest here share one line: a
//! healthy install fits on a screen, and a broken browser still shows every line, each failure with
//! its remedy. `--verbose` shows every line of every location.

use super::remedy::Remedy;
use crate::cmd::PROTOCOL_VERSION;
use crate::install::browsers::{Browser, Family};

/// Which part of the report a line belongs to: a manifest location's, or the whole install's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The checks of the location `places[i]`, and the policy checks of its browsers.
    Place(usize),
    /// The data directory, the store, the warnings about folders, and the notes about what was checked.
    Overall,
}

/// What a line says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// A check that passed: `OK`.
    Passed,
    /// A check that failed: `FAIL`; one is enough for doctor to fail.
    Failed,
    /// Something that works but shouldn't stay as it is: `WARN`.
    Warning,
    /// Something worth knowing that is no check: `NOTE`.
    Note,
}

/// One line of the report, kept until every check has run so that a location's lines can be summed
/// up when they all pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Whose line it is.
    pub part: Part,
    /// What it says of its check.
    pub verdict: Verdict,
    /// What was found: for a check, what it is about first (`chromium: manifest found: ...`); for a
    /// failure, ending with the command that puts it right.
    pub text: String,
}

impl Finding {
    /// The line as printed: the verdict's word, then the text.
    fn line(&self) -> String {
        let word = match self.verdict {
            Verdict::Passed => "OK  ",
            Verdict::Failed => "FAIL",
            Verdict::Warning => "WARN",
            Verdict::Note => "NOTE",
        };
        format!("{word} {}", self.text)
    }
}

/// One manifest location, as far as the line that sums it up needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// Who it is for: browser ids (`chromium, brave`) or `profile <dir>`, and `(system)` for a
    /// system-wide one.
    pub label: String,
    /// The browsers that read it (none for a custom profile).
    pub browsers: Vec<Browser>,
    /// Which manifest shape it has.
    pub family: Family,
    /// Whether it is for every user (its remedy takes `--system`).
    pub system: bool,
    /// Whether a manifest (and on Windows its registry key) is there at all.
    pub registered: bool,
    /// Whether none of its browsers is installed here.
    pub absent: bool,
    /// The ids of its family that its manifest allows.
    pub allowed: Vec<String>,
    /// The version the host gave in its answer to `hello`, when it answered.
    pub host_version: Option<String>,
}

/// Everything doctor's checks found.
#[derive(Debug, Clone)]
pub struct Findings {
    /// Every line, in the order the checks ran (the order `--verbose` prints them in).
    pub findings: Vec<Finding>,
    /// The manifest locations checked, which [`Part::Place`] counts in.
    pub places: Vec<Summary>,
    /// The commands that put things right, for the line of the browsers not found.
    pub remedy: Remedy,
}

/// The report as printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// Every line, the last one saying how many checks passed.
    pub lines: Vec<String>,
    /// Whether every check passed: doctor's exit code is 0 when they did, 1 when not.
    pub passed: bool,
}

/// The report of `findings`: every line with `verbose`, else the short one (see the module's
/// comment), and a last line that counts the checks and the warnings.
pub fn render(findings: &Findings, verbose: bool) -> Report {
    let mut lines = if verbose { findings.findings.iter().map(Finding::line).collect() } else { short(findings) };
    let count = |verdict| findings.findings.iter().filter(|finding| finding.verdict == verdict).count();
    let (passed, failed, warned) = (count(Verdict::Passed), count(Verdict::Failed), count(Verdict::Warning));
    let total = passed + failed;
    let warned = match warned {
        0 => String::new(),
        1 => ", with 1 warning".to_owned(),
        n => format!(", with {n} warnings"),
    };
    lines.push(if failed == 0 {
        format!("doctor: all {total} checks passed{warned}")
    } else {
        format!("doctor: {failed} of {total} checks failed{warned}")
    });
    Report { lines, passed: failed == 0 }
}

/// The report without `--verbose`: the lines of the whole install as they are; for each location
/// whose checks all pass, one line that sums them up (and its warnings and notes); for each with a
/// failure, every line; and one line for the locations whose browsers are neither installed nor
/// registered, whose only failure is the missing manifest.
fn short(findings: &Findings) -> Vec<String> {
    let Findings { findings: lines, places, remedy } = findings;
    let part_of = |i: usize| lines.iter().filter(move |line| line.part == Part::Place(i));
    let failed = |line: &&Finding| line.verdict == Verdict::Failed;
    let not_found: Vec<usize> = (0..places.len())
        .filter(|&i| places[i].absent && !places[i].registered && part_of(i).filter(failed).count() == 1)
        .collect();
    let mut shown = Vec::new();
    let mut printed = vec![false; places.len()];
    for line in lines {
        let Part::Place(i) = line.part else {
            shown.push(line.line());
            continue;
        };
        if std::mem::replace(&mut printed[i], true) {
            continue;
        }
        if not_found.contains(&i) {
            if not_found[0] == i {
                shown.push(not_found_line(&not_found.iter().map(|&i| &places[i]).collect::<Vec<_>>(), remedy));
            }
        } else if part_of(i).any(|line| failed(&line)) {
            shown.extend(part_of(i).map(Finding::line));
        } else {
            shown.push(summary_line(&places[i]));
            shown.extend(part_of(i).filter(|line| line.verdict != Verdict::Passed).map(Finding::line));
        }
    }
    shown
}

/// The one line for a location whose checks all pass: what answers, and for whom.
fn summary_line(place: &Summary) -> String {
    let (one, many) = match place.family {
        Family::Chromium => ("extension", "extensions"),
        Family::Firefox => ("add-on", "add-ons"),
    };
    let whom = if place.allowed.len() == 1 { one } else { many };
    let version = place.host_version.as_deref().unwrap_or("?");
    let mut line = format!(
        "OK   {}: host {version} registered for {} {whom} ({}), answers hello (protocol {PROTOCOL_VERSION})",
        place.label,
        place.allowed.len(),
        place.allowed.join(", ")
    );
    if place.absent {
        line.push_str("; the browser itself is not installed here");
    }
    line
}

/// The one line for the locations whose browsers have neither a build nor a manifest here.
fn not_found_line(places: &[&Summary], remedy: &Remedy) -> String {
    let labels: Vec<&str> = places.iter().map(|place| place.label.as_str()).collect();
    let browsers: Vec<Browser> = places.iter().flat_map(|place| place.browsers.iter().copied()).collect();
    let system = places.iter().any(|place| place.system);
    let family = places[0].family;
    let family = places.iter().all(|place| place.family == family).then_some(family);
    format!(
        "FAIL not found: {}: neither the browser nor a manifest for the host is here; once the browser is installed, \
         run `{}`",
        labels.join(", "),
        remedy.command(&browsers, None, system, family)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host_name::HostName;
    use crate::install::allowed::Allowed;
    use crate::paths::Os;

    const ID: &str = "kgmgjdepmmahhlgloioopbgmnbdkmgaa";

    fn finding(part: Part, verdict: Verdict, text: &str) -> Finding {
        Finding { part, verdict, text: text.to_owned() }
    }

    fn place(label: &str, browsers: &[Browser]) -> Summary {
        Summary {
            label: label.to_owned(),
            browsers: browsers.to_vec(),
            family: Family::Chromium,
            system: false,
            registered: true,
            absent: false,
            allowed: vec![ID.to_owned()],
            host_version: Some("0.1.0".to_owned()),
        }
    }

    fn findings(findings: Vec<Finding>, places: Vec<Summary>) -> Findings {
        let installed = Allowed { chrome: vec![ID.to_owned()], firefox: Vec::new() };
        Findings {
            findings,
            places,
            remedy: Remedy {
                installed,
                os: Os::Linux,
                host: HostName::default_host(),
                program: "llm-cache-host".to_owned(),
            },
        }
    }

    fn lines(report: &Report) -> Vec<&str> {
        report.lines.iter().map(String::as_str).collect()
    }

    #[test]
    fn a_location_whose_checks_pass_is_one_line_and_its_notes() {
        let found = findings(
            vec![
                finding(Part::Place(0), Verdict::Passed, "chromium: manifest found: /m.json"),
                finding(Part::Place(0), Verdict::Note, "chromium: the key points at another manifest"),
                finding(Part::Place(0), Verdict::Passed, "chromium: the host answers hello"),
                finding(Part::Overall, Verdict::Passed, "data directory: /d is writable"),
                finding(Part::Overall, Verdict::Warning, "/home is writable by others"),
            ],
            vec![place("chromium", &[Browser::Chromium])],
        );
        let report = render(&found, false);
        assert_eq!(
            lines(&report),
            [
                "OK   chromium: host 0.1.0 registered for 1 extension (kgmgjdepmmahhlgloioopbgmnbdkmgaa), answers hello \
                 (protocol 1)",
                "NOTE chromium: the key points at another manifest",
                "OK   data directory: /d is writable",
                "WARN /home is writable by others",
                "doctor: all 3 checks passed, with 1 warning",
            ]
        );
        assert!(report.passed, "warnings and notes don't fail doctor");
        let verbose = render(&found, true);
        assert_eq!(
            lines(&verbose),
            [
                "OK   chromium: manifest found: /m.json",
                "NOTE chromium: the key points at another manifest",
                "OK   chromium: the host answers hello",
                "OK   data directory: /d is writable",
                "WARN /home is writable by others",
                "doctor: all 3 checks passed, with 1 warning",
            ]
        );
    }

    #[test]
    fn a_location_with_a_failure_shows_every_line_and_fails() {
        let mut firefox = place("firefox (system)", &[Browser::Firefox]);
        (firefox.family, firefox.system, firefox.absent, firefox.allowed) =
            (Family::Firefox, true, true, vec!["a@b".into(), "c@d".into()]);
        let found = findings(
            vec![
                finding(Part::Place(0), Verdict::Passed, "chromium: manifest found: /m.json"),
                finding(Part::Place(0), Verdict::Failed, "chromium: x is not in allowed_origins: run `fix it`"),
                finding(Part::Place(1), Verdict::Passed, "firefox (system): manifest found: /f.json"),
                finding(Part::Overall, Verdict::Warning, "one"),
                finding(Part::Overall, Verdict::Warning, "two"),
            ],
            vec![place("chromium", &[Browser::Chromium]), firefox],
        );
        let report = render(&found, false);
        assert_eq!(
            lines(&report),
            [
                "OK   chromium: manifest found: /m.json",
                "FAIL chromium: x is not in allowed_origins: run `fix it`",
                "OK   firefox (system): host 0.1.0 registered for 2 add-ons (a@b, c@d), answers hello (protocol 1); \
                 the browser itself is not installed here",
                "WARN one",
                "WARN two",
                "doctor: 1 of 3 checks failed, with 2 warnings",
            ]
        );
        assert!(!report.passed);
    }

    #[test]
    fn browsers_neither_installed_nor_registered_share_a_line_with_their_remedy() {
        let missing = |label: &str, browser| Summary {
            registered: false,
            absent: true,
            allowed: Vec::new(),
            host_version: None,
            ..place(label, &[browser])
        };
        let no_manifest = |i| finding(Part::Place(i), Verdict::Failed, "no manifest at ...: run `...`");
        let found = findings(
            vec![no_manifest(0), no_manifest(1), finding(Part::Place(2), Verdict::Passed, "chromium: fine")],
            vec![
                missing("edge", Browser::Edge),
                missing("brave", Browser::Brave),
                place("chromium", &[Browser::Chromium]),
            ],
        );
        let report = render(&found, false);
        assert_eq!(
            lines(&report),
            [
                "FAIL not found: edge, brave: neither the browser nor a manifest for the host is here; once the browser \
                 is installed, run `llm-cache-host install --browser edge --browser brave --extension-id \
                 kgmgjdepmmahhlgloioopbgmnbdkmgaa`",
                "OK   chromium: host 0.1.0 registered for 1 extension (kgmgjdepmmahhlgloioopbgmnbdkmgaa), answers hello \
                 (protocol 1)",
                "doctor: 2 of 3 checks failed",
            ]
        );
        assert!(!report.passed);
        // A browser that is installed, or has a manifest, keeps its own lines.
        let mut installed = found.clone();
        installed.places[1].absent = false;
        let report = render(&installed, false);
        assert!(report.lines[0].starts_with("FAIL not found: edge: "), "{:?}", report.lines);
        assert_eq!(report.lines[1], "FAIL no manifest at ...: run `...`");
        assert_eq!(render(&found, true).lines.len(), 4, "--verbose shows every line");
    }

    #[test]
    fn a_system_wide_remedy_takes_sudo_and_system() {
        let mut found = findings(
            vec![finding(Part::Place(0), Verdict::Failed, "x")],
            vec![Summary {
                registered: false,
                absent: true,
                system: true,
                ..place("chrome (system)", &[Browser::Chrome])
            }],
        );
        found.remedy.host = HostName::parse("com.example.mail_cache").unwrap();
        found.remedy.program = "com.example.mail-cache".to_owned();
        let report = render(&found, false);
        assert!(
            report.lines[0].ends_with(
                "run `sudo com.example.mail-cache install --host-name com.example.mail_cache --system --browser chrome \
                 --extension-id kgmgjdepmmahhlgloioopbgmnbdkmgaa`"
            ),
            "{:?}",
            report.lines
        );
    }
}
