//! `install`, `doctor` and `uninstall` for real on Linux, against a temporary HOME and data
//! directory: what is written, that the host then answers, that uninstall leaves nothing of its own
//! behind, and that doctor names each kind of breakage in one line.

#![cfg(target_os = "linux")]

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::machine::{MANIFEST, Machine, Run, assert_ok, read_json};
use serde_json::{Value, json};

const DEMO_ID: &str = "pahabgfbcdcnaidcniaebibdihehiphn";
const DEMO_ORIGIN: &str = "chrome-extension://pahabgfbcdcnaidcniaebibdihehiphn/";
const FIREFOX_ID: &str = "llm-cache-demo@browserx.dev";

#[test]
fn install_doctor_uninstall_doctor() {
    let machine = Machine::new();
    let before = machine.tree();

    let run = machine.run(&["install", "--browser", "chromium", "--browser", "firefox", "--browser", "chrome"]);
    assert_ok(&run, "install");
    let binary = machine.installed_binary();
    assert_eq!(std::fs::read(&binary).unwrap(), std::fs::read(common::binary()).unwrap(), "the binary is copied");
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&binary).unwrap().permissions().mode() & 0o777, 0o755);
    }
    let path = binary.to_str().unwrap();
    assert_eq!(
        read_json(&machine.chromium_manifest()),
        json!({
            "name": "com.browserx.llm_cache",
            "description": "llm-cache-host: the local LMDB cache behind the llm_cache StorageTool",
            "path": path,
            "type": "stdio",
            "allowed_origins": [DEMO_ORIGIN],
        })
    );
    assert_eq!(
        read_json(&machine.home().join(".config/google-chrome/NativeMessagingHosts").join(MANIFEST))["path"],
        path
    );
    let firefox = read_json(&machine.firefox_manifest());
    assert_eq!((&firefox["path"], &firefox["allowed_extensions"]), (&json!(path), &json!([FIREFOX_ID])));
    assert!(firefox.get("allowed_origins").is_none());
    for line in ["OK   chromium: wrote ", "OK   firefox: wrote ", "OK   host binary: "] {
        assert!(run.stdout.contains(line), "{line:?} in:\n{}", run.stdout);
    }

    // The installed copy installs again without copying over itself; one record covers both runs.
    let again = machine.run_program(&binary, &["install", "--browser", "chromium"]);
    assert_ok(&again, "install by the installed copy");
    let record = read_json(&machine.data().join("install.json"));
    assert_eq!(record["entries"].as_array().unwrap().len(), 3, "{record}");
    assert_eq!(record["binary"], path);

    // A healthy install fits on a screen: one line for each browser, whose checks all pass.
    let three = ["--browser", "chromium", "--browser", "firefox", "--browser", "chrome"];
    let run = machine.doctor(&three);
    assert_ok(&run, "doctor");
    assert!(run.stdout.lines().count() <= 24, "{}", run.stdout);
    for (browser, whom) in [
        ("chromium", "1 extension (pahabgfbcdcnaidcniaebibdihehiphn)"),
        ("firefox", "1 add-on (llm-cache-demo@browserx.dev)"),
        ("chrome", "1 extension (pahabgfbcdcnaidcniaebibdihehiphn)"),
    ] {
        let lines: Vec<&str> = run.stdout.lines().filter(|line| line.contains(&format!(" {browser}: "))).collect();
        let summary = format!(
            "OK   {browser}: host {} registered for {whom}, answers hello (protocol 1)",
            env!("CARGO_PKG_VERSION")
        );
        assert!(lines.len() == 1 && lines[0].starts_with(&summary), "{summary:?} alone in:\n{}", run.stdout);
    }
    let total = run.stdout.lines().last().unwrap().strip_prefix("doctor: all ").unwrap();
    let total: usize = total.strip_suffix(" checks passed").unwrap().parse().unwrap();

    // --verbose prints every check's line, as it was before the short report.
    let run = machine.doctor(&[&three[..], &["--verbose"]].concat());
    assert_ok(&run, "doctor --verbose");
    assert_eq!(run.stdout.lines().filter(|line| line.starts_with("OK   ")).count(), total, "{}", run.stdout);
    for line in [
        "OK   chromium: manifest found: ",
        "OK   chromium: name \"com.browserx.llm_cache\" matches the file name",
        "OK   chromium: chrome-extension://pahabgfbcdcnaidcniaebibdihehiphn/ is in allowed_origins",
        "OK   chromium: the host answers hello: protocol 1",
        "OK   firefox: llm-cache-demo@browserx.dev is in allowed_extensions",
        "OK   firefox: the host answers hello: protocol 1",
        "OK   chrome: no policy blocks the host",
        "OK   data directory: ",
        "doctor: all ",
    ] {
        assert!(run.stdout.contains(line), "{line:?} in:\n{}", run.stdout);
    }
    // With no flags it checks what the record lists (and any browser installed on this machine).
    let run = machine.doctor(&["-v"]);
    assert!(run.stdout.contains("OK   firefox: the host answers hello"), "{}", run.stdout);

    let run = machine.run(&["uninstall"]);
    assert_ok(&run, "uninstall");
    // Everything install wrote is gone; what the host itself made while doctor ran (the store and its
    // logs, the user's data) stays, and nothing else is there.
    let after: BTreeSet<PathBuf> =
        machine.tree().into_iter().filter(|p| !p.starts_with("data/store") && !p.starts_with("data/logs")).collect();
    let mut expected = before.clone();
    expected.insert("data".into());
    assert_eq!(after, expected, "left behind: {:?}", after.difference(&before).collect::<Vec<_>>());
    assert!(machine.data().join("store/data.mdb").exists(), "cached data stays");

    // The command went with the install, so the fix names the program that ran doctor, by its path.
    let run = machine.doctor(&["--browser", "chromium", "--verbose"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert_eq!(
        run.failures(),
        [format!(
            "FAIL chromium: no manifest at {} (the browser says \"Specified native messaging host not found\"): \
             run `{} install --browser chromium`",
            machine.chromium_manifest().display(),
            common::binary()
        )]
    );
    assert!(run.stdout.contains("doctor: 1 of 3 checks failed"), "{}", run.stdout);

    let run = machine.run(&["uninstall"]);
    assert_ok(&run, "a second uninstall");
    assert!(run.stdout.contains("Nothing to uninstall"), "{}", run.stdout);
}

#[test]
fn a_custom_profile() {
    let machine = Machine::new();
    let profile = machine.tmp.path().join("profile");
    std::fs::create_dir(&profile).unwrap();
    std::fs::write(profile.join("Local State"), "{}").unwrap();
    let before = machine.tree();
    let dir = profile.to_str().unwrap();

    assert_ok(&machine.run(&["install", "--user-data-dir", dir]), "install");
    let manifest = read_json(&profile.join("NativeMessagingHosts").join(MANIFEST));
    assert_eq!(manifest["allowed_origins"], json!([DEMO_ORIGIN]));
    assert!(!machine.home().join(".config").exists(), "only the profile is registered");

    let run = machine.doctor(&["--user-data-dir", dir]);
    assert_ok(&run, "doctor");
    assert!(run.stdout.contains(&format!("OK   profile {dir}: host ")), "{}", run.stdout);
    assert!(!run.stdout.contains("looks for hosts only in"), "{}", run.stdout);
    let run = machine.doctor(&["--user-data-dir", dir, "--verbose"]);
    assert!(run.stdout.contains(&format!("OK   profile {dir}: the host answers hello")), "{}", run.stdout);
    let checking = format!("NOTE checking profile {dir} ({}/NativeMessagingHosts/{MANIFEST})", dir);
    assert!(run.stdout.contains(&checking), "{}", run.stdout);

    // Without --user-data-dir, doctor checks the default profiles, says which, and that a profile started
    // with --user-data-dir needs the flag here too: it can't pass silently for a browser it didn't check.
    let run = machine.doctor(&["--browser", "chromium", "--verbose"]);
    assert!(run.stdout.contains("NOTE checking chromium ("), "{}", run.stdout);
    let run = machine.doctor(&["--browser", "chromium"]);
    assert!(
        run.stdout.contains("a Chromium started with --user-data-dir=DIR (every headless or test profile) looks for hosts only in DIR/NativeMessagingHosts"),
        "{}",
        run.stdout
    );

    assert_ok(&machine.run(&["uninstall"]), "uninstall");
    let after: BTreeSet<PathBuf> =
        machine.tree().into_iter().filter(|p| !p.starts_with("data/store") && !p.starts_with("data/logs")).collect();
    let mut expected = before;
    expected.insert("data".into());
    assert_eq!(after, expected, "the profile is as it was");
}

#[test]
fn several_extension_ids() {
    let machine = Machine::new();
    let other = "abcdefghijklmnopabcdefghijklmnop";
    assert_ok(
        &machine.run(&["install", "--browser", "chromium", "--extension-id", DEMO_ID, "--extension-id", other]),
        "install",
    );
    let origins = &read_json(&machine.chromium_manifest())["allowed_origins"];
    assert_eq!(origins, &json!([DEMO_ORIGIN, format!("chrome-extension://{other}/")]));
    assert_ok(&machine.doctor(&["--browser", "chromium", "--extension-id", other]), "doctor for the other id");
}

/// `manifest` prints, byte for byte, what `install` writes for the same browser, binary and ids, and
/// writes nothing: a package built from its output registers the host exactly as `install` would.
#[test]
fn manifest_prints_what_install_writes() {
    let machine = Machine::new();
    let other = "abcdefghijklmnopabcdefghijklmnop";
    let before = machine.tree();
    let binary = machine.installed_binary();
    let binary = binary.to_str().unwrap();
    let ids = ["--extension-id", DEMO_ID, "--extension-id", other, "--firefox-extension-id", "x@y.z"];
    let printed = |browser: &str| {
        let mut args = vec!["manifest", "--browser", browser, "--path", binary];
        args.extend_from_slice(&ids);
        let run = machine.run(&args);
        assert_eq!(run.code, 0, "{}", run.stdout);
        run.stdout
    };
    let (chromium, firefox) = (printed("chromium"), printed("firefox"));
    assert_eq!(machine.tree(), before, "manifest writes nothing");

    let mut args = vec!["install", "--browser", "chromium", "--browser", "firefox"];
    args.extend_from_slice(&ids);
    assert_ok(&machine.run(&args), "install");
    assert_eq!(std::fs::read_to_string(machine.chromium_manifest()).unwrap(), chromium);
    assert_eq!(std::fs::read_to_string(machine.firefox_manifest()).unwrap(), firefox);
    assert_eq!(read_json(&machine.firefox_manifest())["allowed_extensions"], json!(["x@y.z"]));

    let run = machine.run(&["manifest", "--browser", "chromium", "--path", "llm-cache-host"]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    assert!(run.stdout.contains("the path must be absolute"), "{}", run.stdout);
}

/// The `sudo` mistake: a user install into a home that belongs to someone else is refused before
/// anything is written. Needs root, to give a folder to another user.
#[test]
fn refuses_folders_owned_by_another_user() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: only root can give a folder to another user");
        return;
    }
    let machine = Machine::new();
    std::os::unix::fs::chown(machine.home(), Some(65534), Some(65534)).unwrap();
    let before = machine.tree();

    let run = machine.run(&["install", "--browser", "chromium"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    let failure = run.failures().join("\n");
    assert!(failure.contains("refusing a user install"), "{failure}");
    assert!(failure.contains(&format!("{} is owned by uid 65534, but this runs as root", machine.home().display())));
    assert!(failure.contains("--system"), "{failure}");
    assert_eq!(machine.tree(), before, "nothing is written");
}

#[test]
fn doctor_names_each_breakage() {
    let machine = Machine::new();
    assert_ok(&machine.run(&["install", "--browser", "chromium"]), "install");
    let file = machine.chromium_manifest();
    let good = read_json(&file);
    let doctor = || machine.doctor(&["--browser", "chromium"]);
    let with = |change: &dyn Fn(&mut Value)| {
        let mut manifest = good.clone();
        change(&mut manifest);
        std::fs::write(&file, manifest.to_string()).unwrap();
    };
    // A browser with a failing check is shown in full, as --verbose shows it: every check's line, the
    // passing ones too, each failure with its remedy.
    let in_full = |run: &Run| {
        let verbose = machine.doctor(&["--browser", "chromium", "--verbose"]);
        let lines = |run: &Run| -> Vec<String> {
            run.stdout.lines().filter(|line| line.contains(" chromium: ")).map(str::to_owned).collect()
        };
        assert!(lines(run).len() > 2, "{}", run.stdout);
        assert_eq!(lines(run), lines(&verbose), "{}", run.stdout);
    };

    // Each failure of the manifest or the binary ends with the install that writes both anew, keeping
    // the extension installed; run as shown, it repairs the install.
    let reinstall = format!("llm-cache-host install --browser chromium --extension-id {DEMO_ID}");
    let repaired_by_its_fix = |failure: &str| {
        assert!(failure.ends_with(&format!(": run `{reinstall}`")), "{failure}");
        assert_ok(&machine.shell(&reinstall), &reinstall);
        assert_ok(&doctor(), "doctor after the fix");
        assert_eq!(read_json(&file), good);
    };

    with(&|m| m["name"] = json!("com.browserx.other"));
    let run = doctor();
    assert_eq!((run.code, run.failures().len()), (1, 1), "{}", run.stdout);
    assert!(run.failures()[0].starts_with("FAIL chromium: name is \"com.browserx.other\" but the file is"));
    in_full(&run);
    repaired_by_its_fix(run.failures()[0]);

    with(&|m| m["path"] = json!("llm-cache-host"));
    let run = doctor();
    assert_eq!(
        run.failures(),
        [format!(
            "FAIL chromium: path \"llm-cache-host\" is not absolute; browsers on Linux and macOS need an absolute \
             path: run `{reinstall}`"
        )]
    );
    in_full(&run);
    repaired_by_its_fix(run.failures()[0]);

    let missing = machine.tmp.path().join("gone/llm-cache-host");
    with(&|m| m["path"] = json!(missing.to_str().unwrap()));
    let run = doctor();
    assert_eq!(
        run.failures(),
        [format!(
            "FAIL chromium: path {} can't be used: No such file or directory (os error 2): run `{reinstall}`",
            missing.display()
        )]
    );
    in_full(&run);
    assert!(run.stdout.contains("OK   chromium: manifest found: "), "{}", run.stdout);
    repaired_by_its_fix(run.failures()[0]);

    with(&|m| m["allowed_origins"] = json!(["chrome-extension://abcdefghijklmnopabcdefghijklmnop/"]));
    let run = doctor();
    assert_eq!(run.failures().len(), 1, "{}", run.stdout);
    assert!(
        run.failures()[0].starts_with(&format!("FAIL chromium: {DEMO_ORIGIN} is not in allowed_origins")),
        "{}",
        run.stdout
    );
    // The install record says the demo's id is meant to be allowed; the remedy keeps every id allowed now too.
    let remedy = format!(
        "run `llm-cache-host install --browser chromium --extension-id {DEMO_ID} --extension-id abcdefghijklmnopabcdefghijklmnop`"
    );
    assert!(run.failures()[0].ends_with(&remedy), "{}", run.stdout);
    in_full(&run);

    // A binary that isn't the host: it starts, but never answers.
    with(&|m| m["path"] = json!("/bin/false"));
    let run = doctor();
    assert_eq!(
        run.failures(),
        [format!(
            "FAIL chromium: the host ended (exit status: 1) without answering hello; see its log, or install it \
             again: run `{reinstall}`"
        )]
    );
    repaired_by_its_fix(run.failures()[0]);

    let copy = machine.tmp.path().join("not-executable");
    common::copy_binary(&copy);
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    with(&|m| m["path"] = json!(copy.to_str().unwrap()));
    let run = doctor();
    assert_eq!(
        run.failures(),
        [format!("FAIL chromium: path {} is not executable: run `{reinstall}`", copy.display())]
    );
    repaired_by_its_fix(run.failures()[0]);

    std::fs::write(&file, "{\"name\": ").unwrap();
    let run = doctor();
    assert_eq!(run.failures().len(), 1, "{}", run.stdout);
    assert!(run.failures()[0].starts_with("FAIL chromium: manifest is not valid JSON ("), "{}", run.stdout);
    repaired_by_its_fix(run.failures()[0]);

    std::fs::write(&file, "[]").unwrap();
    let run = doctor();
    assert_eq!(run.failures(), [format!("FAIL chromium: manifest is JSON but not an object: run `{reinstall}`")]);
    repaired_by_its_fix(run.failures()[0]);

    with(&|_| {});
    assert_ok(&doctor(), "doctor on the restored manifest");
    let policies = machine.policy_root().join("etc/chromium/policies/managed");
    std::fs::create_dir_all(&policies).unwrap();
    std::fs::write(policies.join("corp.json"), r#"{"NativeMessagingUserLevelHosts": false}"#).unwrap();
    let run = doctor();
    assert_eq!(
        run.failures(),
        [format!(
            "FAIL chromium: a policy blocks the host: NativeMessagingUserLevelHosts is false: only hosts installed \
             for every user (--system) start (from {}, {})",
            policies.display(),
            machine.policy_root().join("etc/chromium-browser/policies/managed").display()
        )]
    );
    std::fs::write(policies.join("corp.json"), r#"{"NativeMessagingBlocklist": ["*"]}"#).unwrap();
    let run = doctor();
    assert_eq!(run.failures().len(), 1, "{}", run.stdout);
    assert!(run.failures()[0].contains("NativeMessagingBlocklist is \"*\""), "{}", run.stdout);
}

/// A manifest that isn't JSON names no extension, but its fix still keeps the one installed: the
/// install record knows it.
#[test]
fn a_broken_manifests_fix_keeps_the_ids_installed() {
    let machine = Machine::new();
    let own = "abcdefghijklmnopabcdefghijklmnop";
    assert_ok(&machine.run(&["install", "--browser", "chromium", "--extension-id", own]), "install");
    let good = read_json(&machine.chromium_manifest());
    std::fs::write(machine.chromium_manifest(), "not JSON").unwrap();
    let run = machine.doctor(&["--browser", "chromium"]);
    assert_eq!(run.failures().len(), 1, "{}", run.stdout);
    let shown = commands_shown(run.failures()[0]);
    assert_eq!(shown, [format!("llm-cache-host install --browser chromium --extension-id {own}")], "{}", run.stdout);
    assert_ok(&machine.shell(&shown[0]), &shown[0]);
    assert_eq!(read_json(&machine.chromium_manifest()), good);
    assert_ok(&machine.doctor(&["--browser", "chromium"]), "doctor after the fix");
}

/// Browsers with neither a build nor a manifest here share one line, with the command that registers
/// them; a browser installed here but not registered gets its own lines. Which of Edge, Brave and
/// Vivaldi this machine has decides which it is, so each must be in exactly one of the two.
#[test]
fn doctor_sums_up_browsers_not_found() {
    let machine = Machine::new();
    assert_ok(&machine.run(&["install", "--browser", "chromium"]), "install");
    let three = ["--browser", "edge", "--browser", "brave", "--browser", "vivaldi"];
    let run = machine.doctor(&three);
    assert_eq!(run.code, 1, "{}", run.stdout);
    let not_found = run.stdout.lines().find_map(|line| line.strip_prefix("FAIL not found: "));
    let folded: Vec<&str> = match not_found {
        Some(line) => {
            let (names, rest) = line.split_once(": ").unwrap();
            let names: Vec<&str> = names.split(", ").collect();
            let flags: Vec<String> = names.iter().map(|name| format!("--browser {name}")).collect();
            // The command keeps the extension installed (for chromium, above).
            let command = format!("run `llm-cache-host install {} --extension-id {DEMO_ID}`", flags.join(" "));
            assert!(rest.ends_with(&command), "{}", run.stdout);
            names
        }
        None => Vec::new(),
    };
    for browser in ["edge", "brave", "vivaldi"] {
        let own = run.stdout.lines().any(|line| line.starts_with(&format!("FAIL {browser}: no manifest at ")));
        assert!(own != folded.contains(&browser), "{browser} once in:\n{}", run.stdout);
    }
    assert!(run.stdout.lines().count() <= 24, "{}", run.stdout);
    // The count is the same either way: each missing manifest is a failed check.
    let verbose = machine.doctor(&[&three[..], &["--verbose"]].concat());
    assert_eq!(verbose.failures().len(), 3, "{}", verbose.stdout);
    assert_eq!(verbose.stdout.lines().last(), run.stdout.lines().last());
}

/// The commands in a report's lines: what each shows between "run `" and "`".
fn commands_shown(text: &str) -> Vec<String> {
    text.split("run `").skip(1).filter_map(|rest| rest.split_once('`')).map(|(command, _)| command.to_owned()).collect()
}

/// A release tarball unpacked on `machine`: a folder holding a copy of the binary; returns what runs a
/// shell command in it.
fn unpacked_tarball(machine: &Machine) -> impl Fn(&str) -> Run + '_ {
    let unpacked = machine.tmp.path().join("llm-cache-host-0.1.0");
    std::fs::create_dir(&unpacked).unwrap();
    common::copy_binary(&unpacked.join("llm-cache-host"));
    move |command: &str| {
        let output = machine.command("/bin/sh").args(["-c", command]).current_dir(&unpacked).output().unwrap();
        let text = |bytes: Vec<u8>| String::from_utf8(bytes).unwrap();
        Run { code: output.status.code().unwrap(), stdout: format!("{}{}", text(output.stdout), text(output.stderr)) }
    }
}

/// uninstall of an install made from a tarball names the tarball's binary, never a source folder's
/// only: run by the command it removes, `./llm-cache-host` where the tarball was unpacked; run by the
/// tarball's binary, that. Either command, run there as shown, checks that no browser finds the host.
#[test]
fn uninstall_of_a_tarball_install_names_the_tarballs_binary() {
    let machine = Machine::new();
    let in_unpacked = unpacked_tarball(&machine);
    let root = machine.policy_root();
    let no_browser_finds_it = |shown: &str| {
        let run = in_unpacked(&format!("{shown} --browser chromium --policy-root '{}'", root.display()));
        assert_eq!(run.code, 1, "{}", run.stdout);
        assert!(run.stdout.contains("FAIL chromium: no manifest at "), "{}", run.stdout);
    };
    for uninstall in ["llm-cache-host uninstall", "./llm-cache-host uninstall"] {
        assert_ok(&in_unpacked("./llm-cache-host install --browser chromium"), "install from the tarball");
        let run = in_unpacked(uninstall);
        assert_ok(&run, uninstall);
        let shown = run.stdout.split("went with it: `").nth(1).and_then(|rest| rest.split('`').next()).unwrap();
        assert_eq!(shown, "./llm-cache-host doctor", "{}", run.stdout);
        no_browser_finds_it(shown);
    }
}

/// The commands doctor gives name the program as it can be run where doctor ran: from an unpacked
/// tarball, with the command on no PATH, `./llm-cache-host`, which works there as shown.
#[test]
fn fixes_name_the_program_as_it_can_be_run_there() {
    let machine = Machine::new();
    let in_unpacked = unpacked_tarball(&machine);
    let root = machine.policy_root();
    let doctor = format!("./llm-cache-host doctor --browser chromium --policy-root '{}'", root.display());
    let run = in_unpacked(&doctor);
    assert_eq!(run.code, 1, "{}", run.stdout);
    let shown = commands_shown(&run.stdout);
    assert!(shown.contains(&"./llm-cache-host install --browser chromium".to_owned()), "{}", run.stdout);
    assert!(shown.iter().all(|command| command.starts_with("./llm-cache-host ")), "{shown:?}");
    assert_ok(&in_unpacked("./llm-cache-host install --browser chromium"), "the command shown");
    // Installed, the command is on PATH (~/.local/bin), and the commands name it.
    let run = in_unpacked(&doctor);
    assert_ok(&run, "doctor after the command shown");
    let shown = commands_shown(&run.stdout);
    assert!(shown.iter().all(|command| command.starts_with("llm-cache-host ")), "{shown:?}");
}

/// An install for an extension of one's own and no add-on: every command doctor shows that registers
/// Firefox asks for the add-on's id (a Chrome id is none, and without one install would register the
/// demo add-on); with the id filled in, it registers Firefox for that add-on and doctor passes.
#[test]
fn the_firefox_remedy_asks_for_an_add_on_id() {
    let machine = Machine::new();
    let own = "abcdefghijklmnopabcdefghijklmnop";
    assert_ok(&machine.run(&["install", "--browser", "chromium", "--extension-id", own]), "install");
    let asked = ["--browser", "firefox", "--browser", "vivaldi"];
    let run = machine.doctor(&asked);
    assert_eq!(run.code, 1, "{}", run.stdout);
    let for_firefox: Vec<String> =
        commands_shown(&run.stdout).into_iter().filter(|command| command.contains("--browser firefox")).collect();
    assert!(!for_firefox.is_empty(), "{}", run.stdout);
    for command in &for_firefox {
        assert!(command.ends_with(" --firefox-extension-id '<your add-on id>'"), "{command}");
        let filled = command.replace("<your add-on id>", "me@example.org");
        assert_ok(&machine.shell(&filled), &filled);
    }
    let firefox = read_json(&machine.firefox_manifest());
    assert_eq!(firefox["allowed_extensions"], json!(["me@example.org"]), "{firefox}");
    assert!(firefox.get("allowed_origins").is_none());
    assert_ok(&machine.doctor(&["--browser", "firefox"]), "doctor after the command shown");
}

/// The data folder's probe file goes also when its write fails after creating it: here a file size
/// limit of 0 (with SIGXFSZ ignored, so the write fails instead of killing doctor).
#[test]
fn the_data_folder_probe_leaves_nothing_when_its_write_fails() {
    let machine = Machine::new();
    std::fs::create_dir(machine.data()).unwrap();
    let root = machine.policy_root();
    let script = "trap '' XFSZ; ulimit -f 0; exec \"$0\" doctor --browser chromium --policy-root \"$1\"";
    let output = machine.command("sh").args(["-c", script, common::binary(), root.to_str().unwrap()]).output().unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    let line = format!("FAIL data directory: {} is not writable: File too large", machine.data().display());
    assert!(stdout.contains(&line), "{line:?} in:\n{stdout}");
    let left: Vec<String> = std::fs::read_dir(machine.data())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(".doctor-"))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn usage_mistakes_exit_2() {
    let machine = Machine::new();
    for args in [&["install", "--browser", "safari"][..], &["install", "--extension-id", "x"], &["doctor", "--nope"]] {
        let run = machine.run(args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stdout);
    }
    let run = machine.run(&["install", "--help"]);
    assert_eq!(run.code, 0);
    assert!(run.stdout.contains("--user-data-dir") && run.stdout.contains("NativeMessagingHosts"), "{}", run.stdout);
    assert!(!machine.data().exists(), "help writes nothing");
}

#[test]
fn install_sh_explains_itself() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("install.sh");
    let syntax = Command::new("bash").arg("-n").arg(&script).status().unwrap();
    assert!(syntax.success(), "install.sh parses");
    let output = Command::new("bash").arg(&script).arg("--help").output().unwrap();
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(output.status.success(), "{text}");
    for flag in ["--browser", "--extension-id", "--firefox-extension-id", "--system", "--user-data-dir", "doctor"] {
        assert!(text.contains(flag), "{flag} in:\n{text}");
    }
}

/// install.sh checks its options before it builds: with no cargo on PATH, a mistake is still named
/// (the build would have said "cargo is missing"), with the script's own usage hint.
#[test]
fn install_sh_checks_options_before_building() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("install.sh");
    for (args, said) in [
        (&["--extension-id"][..], "--extension-id needs a value"),
        (&["--extension-id", "--system"], "--extension-id needs a value"),
        (&["--extension-id", "not-an-id"], "a Chrome extension id is 32 letters from a to p"),
        (&["--browser", "safari"], "the browsers are chrome, chromium, edge, brave, vivaldi and firefox"),
        (&["--firefox-extension-id", "plain"], "a Firefox add-on id is a {GUID}"),
        (&["--user-data-dir"], "--user-data-dir needs a value"),
        (&["--frobnicate"], "unknown option --frobnicate"),
        // The --option=value forms are checked alike.
        (&["--extension-id=not-an-id"], "--extension-id not-an-id: a Chrome extension id is 32 letters from a to p"),
        (&["--extension-id="], "--extension-id needs a value"),
        (
            &["--browser=safari"],
            "--browser safari: the browsers are chrome, chromium, edge, brave, vivaldi and firefox",
        ),
        (&["--firefox-extension-id=plain"], "a Firefox add-on id is a {GUID}"),
        (&["--host-name=com.nul.cache"], "--host-name com.nul.cache: a host name is lowercase letters"),
        (&["--user-data-dir="], "--user-data-dir needs a value"),
    ] {
        let output = Command::new("/bin/bash").arg(&script).args(args).env("PATH", "/usr/bin:/bin").output().unwrap();
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(said) && stderr.contains("./install.sh --help"), "{args:?}: {stderr}");
    }
    // Good values in either form reach the build.
    let good =
        ["--extension-id=abcdefghijklmnopabcdefghijklmnop", "--browser=firefox", "--host-name=com.example.mail_cache"];
    let output = Command::new("/bin/bash").arg(&script).args(good).env("PATH", "/usr/bin:/bin").output().unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.contains("cargo is missing"), "{good:?}: {stderr}");
}

/// The README's two commands build into this checkout's `target/` and run what they built there, whatever
/// CARGO_TARGET_DIR names elsewhere (a shared folder many Rust developers export): otherwise install.sh would
/// install an older binary left in `target/release`, and the tests would drive stale binaries. install.sh
/// hands cargo the checkout's `target/` (cargo here is a stand-in that reports what it was given and stops
/// the script); scripts/setup.sh, which scripts/test.sh, scripts/release.sh and the cross scripts source,
/// exports it.
#[test]
fn the_scripts_build_into_the_checkouts_target_whatever_cargo_target_dir_says() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let target = root.join("target");
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = dir.path().join("shared-target");
    let report = dir.path().join("cargo-was-given");
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let cargo = bin.join("cargo");
    std::fs::write(&cargo, "#!/bin/sh\nprintf '%s' \"$CARGO_TARGET_DIR\" >\"$REPORT\"\nexit 3\n").unwrap();
    std::fs::set_permissions(&cargo, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let output = Command::new("/bin/bash")
        .arg(root.join("install.sh"))
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .env("CARGO_TARGET_DIR", &elsewhere)
        .env("REPORT", &report)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(3), "install.sh went on past the failed build: {output:?}");
    assert_eq!(std::fs::read_to_string(&report).unwrap(), target.to_str().unwrap());

    let sourced = Command::new("/bin/bash")
        .args(["-c", ". scripts/setup.sh && printf '%s' \"$CARGO_TARGET_DIR\""])
        .current_dir(root)
        .env("CARGO_TARGET_DIR", &elsewhere)
        .output()
        .unwrap();
    assert!(sourced.status.success(), "{sourced:?}");
    assert_eq!(String::from_utf8(sourced.stdout).unwrap(), target.to_str().unwrap());
}

/// After install, `llm-cache-host doctor` works as typed when ~/.local/bin is on PATH (a link there
/// points at the installed copy); when it isn't, install says so and prints the full command, which
/// works. uninstall removes the link, says where the data stays, and `--purge` removes it.
#[test]
fn the_command_works_as_typed_after_install() {
    let machine = Machine::new();
    let bin = machine.home().join(".local/bin");
    let path = format!("{}:/usr/bin:/bin", bin.display());
    let typed = |args: &[&str], path: &str| {
        let output = Command::new("llm-cache-host")
            .args(args)
            .env("PATH", path)
            .env("HOME", machine.home())
            .env("LLM_CACHE_DIR", machine.data())
            .output();
        output.map(|o| (o.status.code().unwrap(), String::from_utf8(o.stdout).unwrap()))
    };
    assert!(typed(&["--version"], &path).is_err(), "no command before install");

    let output = Command::new(common::binary())
        .args(["install", "--browser", "chromium"])
        .env("PATH", &path)
        .env("HOME", machine.home())
        .env("LLM_CACHE_DIR", machine.data())
        .output()
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(output.status.success(), "{stdout}");
    let binary = machine.installed_binary();
    assert!(
        stdout.contains(&format!(
            "OK   command: llm-cache-host ({} -> {})",
            bin.join("llm-cache-host").display(),
            binary.display()
        )),
        "{stdout}"
    );
    assert!(stdout.contains("Installed. `llm-cache-host doctor` checks"), "{stdout}");
    let (code, doctor) =
        typed(&["doctor", "--browser", "chromium", "--policy-root", machine.policy_root().to_str().unwrap()], &path)
            .unwrap();
    assert_eq!(code, 0, "{doctor}");

    // Without ~/.local/bin on PATH: a note, and the full command it prints works.
    let output = machine
        .command(common::binary())
        .args(["install", "--browser", "chromium"])
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    let run = Run { code: output.status.code().unwrap(), stdout: String::from_utf8(output.stdout).unwrap() };
    let full = format!("{} doctor", binary.display());
    assert!(
        run.stdout.contains(&format!("is not on your PATH, so type the command in full: {full}")),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains(&format!("Installed. `{full}` checks")), "{}", run.stdout);
    assert_eq!(machine.run_program(&binary, &["--version"]).code, 0);

    // Some data, then uninstall: the link goes, the data stays and is named, --purge removes it.
    let mut host = common::Session::start(&machine.data(), DEMO_ORIGIN);
    host.ok(json!({"id": 1, "op": "write", "sessionId": "conv_u", "data": 1, "description": "d"}));
    assert!(host.close().1.success());
    std::fs::write(machine.data().join("config.json"), r#"{"storeQuotaBytes": 5000000}"#).unwrap();
    let run = machine.run(&["uninstall"]);
    assert_ok(&run, "uninstall");
    assert!(!bin.join("llm-cache-host").exists() && std::fs::symlink_metadata(bin.join("llm-cache-host")).is_err());
    assert!(run.stdout.contains(&format!("`{} doctor` checks", common::binary())), "{}", run.stdout);
    assert!(
        run.stdout.contains(&format!("The cached data, logs and settings stay in {}", machine.data().display())),
        "{}",
        run.stdout
    );
    assert!(machine.data().join("store/data.mdb").exists());
    let run = machine.run(&["uninstall", "--purge"]);
    assert_ok(&run, "uninstall --purge");
    assert!(run.stdout.contains(&format!("OK   removed {}", machine.data().join("store").display())), "{}", run.stdout);
    assert!(!machine.data().exists(), "the data directory is gone");
}

/// The permission bits of `path` itself (a link's own, not its target's).
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::symlink_metadata(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())).permissions().mode() & 0o7777
}

/// The lines starting with `WARN`.
fn warnings(run: &Run) -> Vec<&str> {
    run.stdout.lines().filter(|line| line.starts_with("WARN")).collect()
}

/// Under `umask 000` an install once made `~/.config`, `~/.local/bin` and `<data dir>/bin` 0777 and
/// `install.json` 0666, so another user could swap the manifest or the command link for their own
/// program. Whatever the umask, every folder and file it creates is writable by its owner only.
#[test]
fn installs_are_owner_writable_only_whatever_the_umask() {
    let machine = Machine::with_data_in_home();
    let profile = machine.tmp.path().join("profiles/headless");
    let args =
        ["install", "--browser", "chromium", "--browser", "firefox", "--user-data-dir", profile.to_str().unwrap()];
    let run = machine.run_with_open_umask(&args);
    assert_ok(&run, "install");
    assert!(warnings(&run).is_empty(), "{}", run.stdout);

    let home = machine.home();
    let expected = [
        (home.join(".config"), "0700"),
        (home.join(".config/chromium/NativeMessagingHosts"), "0700"),
        (machine.chromium_manifest(), "0644"),
        (home.join(".mozilla/native-messaging-hosts"), "0700"),
        (machine.firefox_manifest(), "0644"),
        (home.join(".local"), "0700"),
        (home.join(".local/bin"), "0700"),
        (home.join(".local/share"), "0700"),
        (machine.data(), "0700"),
        (machine.data().join("bin"), "0700"),
        (machine.installed_binary(), "0755"),
        (machine.data().join("install.json"), "0600"),
        (machine.tmp.path().join("profiles"), "0700"),
        (profile.join("NativeMessagingHosts"), "0700"),
        (profile.join("NativeMessagingHosts").join(MANIFEST), "0644"),
    ];
    let actual: Vec<(PathBuf, String)> =
        expected.iter().map(|(path, _)| (path.clone(), format!("{:04o}", mode(path)))).collect();
    let expected: Vec<(PathBuf, String)> = expected.into_iter().map(|(path, mode)| (path, mode.to_owned())).collect();
    assert_eq!(actual, expected);
    assert!(std::fs::symlink_metadata(home.join(".local/bin/llm-cache-host")).unwrap().is_symlink());
    // And nothing else there is writable by others either (a link's own mode means nothing).
    let loose = |machine: &Machine| -> Vec<String> {
        let tree = machine.tree().into_iter().map(|relative| machine.tmp.path().join(relative));
        tree.filter(|path| !path.is_symlink() && mode(path) & 0o022 != 0)
            .map(|path| format!("{:04o} {}", mode(&path), path.display()))
            .collect()
    };
    assert_eq!(loose(&machine), Vec::<String>::new());

    // Installing again rewrites the record and the manifests; doctor starts the host, which makes its
    // store and logs. Still nothing is writable by others, and doctor has nothing to warn about.
    assert_ok(&machine.run_with_open_umask(&args[..5]), "a second install");
    let run = machine.run_with_open_umask(&["doctor", "--policy-root", machine.policy_root().to_str().unwrap()]);
    assert_ok(&run, "doctor");
    assert!(warnings(&run).is_empty(), "{}", run.stdout);
    assert!(machine.data().join("store").exists(), "the host ran");
    assert_eq!(loose(&machine), Vec::<String>::new());
}

/// A folder on the way to what install writes that others can write (here the home, world-writable,
/// and a profile's parent, group-writable) lets them swap the manifest: install and doctor name each,
/// with the command that fixes it, and the command does. Sticky folders, like /tmp, pass. A folder
/// install itself created and someone loosened later is narrowed by the next install.
#[test]
fn folders_others_can_write_are_named() {
    let machine = Machine::new();
    let home = machine.home();
    let shared = machine.tmp.path().join("shared");
    let profile = shared.join("profile");
    std::fs::create_dir_all(&profile).unwrap();
    let chmod = |path: &Path, mode: u32| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    chmod(&home, 0o777);
    chmod(&shared, 0o775);
    let risk = "so another user could put their own program where the browser expects the host";
    let expected = [
        format!(
            "WARN {} (mode 0777) is writable by everyone, {risk}: run `chmod go-w {}`",
            home.display(),
            home.display()
        ),
        format!(
            "WARN {} (mode 0775) is writable by its group, {risk}: run `chmod go-w {}`",
            shared.display(),
            shared.display()
        ),
    ];
    let sorted = |run: &Run| {
        let mut lines: Vec<String> = warnings(run).into_iter().map(str::to_owned).collect();
        lines.sort();
        lines
    };

    let selected = ["--browser", "chromium", "--user-data-dir", profile.to_str().unwrap()];
    let run = machine.run(&[&["install"][..], &selected].concat());
    assert_ok(&run, "install");
    assert_eq!(sorted(&run), expected, "{}", run.stdout);
    let run = machine.doctor(&selected);
    assert_ok(&run, "doctor");
    assert_eq!(sorted(&run), expected, "{}", run.stdout);
    assert!(run.stdout.contains("checks passed, with 2 warnings"), "{}", run.stdout);

    // The commands printed fix it.
    for line in &expected {
        let command = line.rsplit_once("run `").unwrap().1.strip_suffix('`').unwrap();
        assert!(Command::new("sh").args(["-c", command]).status().unwrap().success(), "{command}");
    }
    assert_eq!((mode(&home), mode(&shared)), (0o755, 0o755));
    let run = machine.doctor(&selected);
    assert_ok(&run, "doctor after the fix");
    assert!(warnings(&run).is_empty(), "{}", run.stdout);
    assert!(run.stdout.lines().last().unwrap().ends_with("checks passed"), "{}", run.stdout);

    // Sticky: others may add to it but not rename or remove what isn't theirs.
    chmod(&home, 0o1777);
    assert!(warnings(&machine.doctor(&selected)).is_empty());
    chmod(&home, 0o755);

    // A folder install created, loosened since (as a umask of 000 leaves one): doctor names it, and
    // installing again narrows it.
    let config = home.join(".config");
    chmod(&config, 0o777);
    let run = machine.doctor(&selected);
    assert_eq!(warnings(&run).len(), 1, "{}", run.stdout);
    assert!(warnings(&run)[0].starts_with(&format!("WARN {} (mode 0777)", config.display())), "{}", run.stdout);
    let run = machine.run(&[&["install"][..], &selected].concat());
    assert_ok(&run, "install again");
    assert!(warnings(&run).is_empty(), "{}", run.stdout);
    assert_eq!(mode(&config), 0o755, "install took off the write bits, and only those");
}

/// A folder on the way that belongs to another user (who isn't root) is theirs to swap. Needs root,
/// to give a folder to another user.
#[test]
fn folders_of_another_user_are_named() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: only root can give a folder to another user");
        return;
    }
    let machine = Machine::new();
    assert_ok(&machine.run(&["install", "--browser", "chromium"]), "install");
    let config = machine.home().join(".config");
    std::os::unix::fs::chown(&config, Some(65534), Some(65534)).unwrap();
    let run = machine.doctor(&["--browser", "chromium"]);
    assert_ok(&run, "doctor");
    assert_eq!(
        warnings(&run),
        [format!(
            "WARN {} belongs to uid 65534, neither you nor root, so another user could put their own program where \
             the browser expects the host: have it owned by you or root, or install elsewhere",
            config.display()
        )]
    );
}

/// The install record is only a list of what install wrote: one edited to name any other file (the
/// user's ~/.bashrc, another host's manifest, a binary outside the install) makes install and
/// uninstall leave that file alone and say so; this host's own files are still written and removed.
#[test]
fn a_record_naming_other_files_is_not_obeyed() {
    let machine = Machine::new();
    assert_ok(&machine.run(&["install", "--browser", "chromium"]), "install");
    let bashrc = machine.home().join(".bashrc");
    let profile = machine.home().join(".profile");
    let other = machine.home().join(".config/chromium/NativeMessagingHosts/org.other.host.json");
    for file in [&bashrc, &profile, &other] {
        std::fs::write(file, "keep me\n").unwrap();
    }
    let record_path = machine.data().join("install.json");
    let mut record = read_json(&record_path);
    let own = record["entries"][0].clone();
    for file in [&bashrc, &other] {
        let mut entry = own.clone();
        entry["location"]["file"]["manifest"] = json!(file);
        record["entries"].as_array_mut().unwrap().push(entry);
    }
    record["binary"] = json!(profile);
    std::fs::write(&record_path, record.to_string()).unwrap();

    let run = machine.run(&["install", "--browser", "chromium"]);
    assert_ok(&run, "install again");
    for file in [&bashrc, &profile, &other] {
        assert!(
            run.stdout.contains(&format!("NOTE left {} alone: the install record names it", file.display())),
            "{}",
            run.stdout
        );
        assert_eq!(std::fs::read_to_string(file).unwrap(), "keep me\n", "{}", file.display());
    }
    // install wrote the record again without them: put them back for uninstall.
    std::fs::write(&record_path, record.to_string()).unwrap();
    let run = machine.run(&["uninstall"]);
    assert_ok(&run, "uninstall");
    for file in [&bashrc, &profile, &other] {
        assert_eq!(std::fs::read_to_string(file).unwrap(), "keep me\n", "{}", file.display());
    }
    assert!(!machine.chromium_manifest().exists(), "this host's own manifest goes:\n{}", run.stdout);
}

/// An install record that isn't JSON stops nothing: doctor checks the manifests where browsers look,
/// install writes a new record keeping this host's manifests, and uninstall removes this host's files
/// found where install puts them, each saying the record was unreadable. So does uninstall when the
/// record was deleted.
#[test]
fn an_unreadable_or_missing_record_stops_nothing() {
    let machine = Machine::new();
    let record = machine.data().join("install.json");
    assert_ok(&machine.run(&["install", "--browser", "chromium"]), "install");
    std::fs::write(&record, "not json").unwrap();
    let unreadable = format!("{} is not an install record", record.display());

    let run = machine.doctor(&["--browser", "chromium"]);
    assert!(run.stdout.contains(&format!("WARN {unreadable}")), "{}", run.stdout);
    assert!(run.stdout.contains("OK   chromium: host "), "{}", run.stdout);
    let run = machine.run(&["install", "--browser", "firefox"]);
    assert_ok(&run, "install over an unreadable record");
    assert!(run.stdout.contains(&format!("NOTE {unreadable}")), "{}", run.stdout);
    let entries = read_json(&record)["entries"].as_array().unwrap().len();
    assert_eq!(entries, 2, "the chromium manifest found is kept beside firefox's");

    std::fs::write(&record, "not json").unwrap();
    let run = machine.run(&["uninstall"]);
    assert_ok(&run, "uninstall with an unreadable record");
    assert!(run.stdout.contains(&format!("NOTE {unreadable}")), "{}", run.stdout);
    for gone in [machine.chromium_manifest(), machine.firefox_manifest(), machine.installed_binary(), record.clone()] {
        assert!(!gone.exists(), "{} is left:\n{}", gone.display(), run.stdout);
    }

    assert_ok(&machine.run(&["install", "--browser", "chromium"]), "install");
    std::fs::remove_file(&record).unwrap();
    let run = machine.run(&["uninstall"]);
    assert_ok(&run, "uninstall with no record");
    assert!(run.stdout.contains("NOTE there is no install record at "), "{}", run.stdout);
    assert!(!machine.chromium_manifest().exists() && !machine.installed_binary().exists(), "{}", run.stdout);
}

/// A host whose command is already another program's on PATH (here a stand-in named
/// `com.example.mail-cache`, in a folder after ~/.local/bin) never shadows it: install makes no link,
/// says why, and the full command it prints works.
#[test]
fn a_command_named_like_another_program_is_not_linked() {
    use std::os::unix::fs::PermissionsExt;
    let machine = Machine::new();
    let bin = machine.home().join(".local/bin");
    let elsewhere = machine.home().join("other-bin");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let other = elsewhere.join("com.example.mail-cache");
    std::fs::write(&other, "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(&other, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}:/usr/bin:/bin", bin.display(), elsewhere.display());
    let output = machine
        .command(common::binary())
        .args(["install", "--host-name", "com.example.mail_cache", "--browser", "chromium"])
        .env("PATH", &path)
        .output()
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(output.status.success(), "{stdout}");
    assert!(
        std::fs::symlink_metadata(bin.join("com.example.mail-cache")).is_err(),
        "no link hides the other program:\n{stdout}"
    );
    let binary = machine.data().join("bin/com.example.mail_cache");
    let full = format!("{} doctor", binary.display());
    assert!(
        stdout.contains(&format!(
            "NOTE no `com.example.mail-cache` command: {} is on your PATH under that name, and a link in {} would \
             stand in for it, so type the command in full: {full}",
            other.display(),
            bin.display()
        )),
        "{stdout}"
    );
    assert!(stdout.contains(&format!("Installed. `{full}` checks")), "{stdout}");
    // The copy is named after its host, so it knows which one it is.
    let root = machine.policy_root();
    let doctor =
        machine.run_program(&binary, &["doctor", "--browser", "chromium", "--policy-root", root.to_str().unwrap()]);
    assert_ok(&doctor, "the full command");
}
