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

    let run = machine.doctor(&["--browser", "chromium", "--verbose"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert_eq!(
        run.failures(),
        [format!(
            "FAIL chromium: no manifest at {} (the browser says \"Specified native messaging host not found\"): \
             run `llm-cache-host install --browser chromium`",
            machine.chromium_manifest().display()
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

    with(&|m| m["name"] = json!("com.browserx.other"));
    let run = doctor();
    assert_eq!((run.code, run.failures().len()), (1, 1), "{}", run.stdout);
    assert!(run.failures()[0].starts_with("FAIL chromium: name is \"com.browserx.other\" but the file is"));
    in_full(&run);

    with(&|m| m["path"] = json!("llm-cache-host"));
    let run = doctor();
    assert_eq!(
        run.failures(),
        ["FAIL chromium: path \"llm-cache-host\" is not absolute; browsers on Linux and macOS need an absolute path"]
    );
    in_full(&run);

    let missing = machine.tmp.path().join("gone/llm-cache-host");
    with(&|m| m["path"] = json!(missing.to_str().unwrap()));
    let run = doctor();
    assert_eq!(
        run.failures(),
        [format!("FAIL chromium: path {} can't be used: No such file or directory (os error 2)", missing.display())]
    );
    in_full(&run);
    assert!(run.stdout.contains("OK   chromium: manifest found: "), "{}", run.stdout);

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
    assert_eq!(run.failures(), ["FAIL chromium: the host ended (exit status: 1) without answering hello; see its log"]);

    let copy = machine.tmp.path().join("not-executable");
    common::copy_binary(&copy);
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    with(&|m| m["path"] = json!(copy.to_str().unwrap()));
    let run = doctor();
    assert_eq!(run.failures().len(), 1, "{}", run.stdout);
    assert!(run.failures()[0].ends_with("is not executable (chmod +x it, or install again)"), "{}", run.stdout);

    std::fs::write(&file, "{\"name\": ").unwrap();
    let run = doctor();
    assert!(run.failures()[0].starts_with("FAIL chromium: manifest is not valid JSON"), "{}", run.stdout);

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
    let run = machine.run(&["install", "--browser", "chromium"]);
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
    assert!(run.stdout.contains("target/release/llm-cache-host doctor"), "{}", run.stdout);
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
