//! A host under a developer's own name (`install --host-name`), for real on Linux in a temporary
//! home with no `LLM_CACHE_DIR`: its manifests, installed copy, command and data directory are its
//! own; the copy, started as a browser starts it, knows its name and keeps its store apart; and two
//! hosts installed side by side stay apart when one is removed.

#![cfg(target_os = "linux")]

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::machine::read_json;
use serde_json::{Value, json};

const MAIL: &str = "com.example.mail_cache";
const MAIL_ID: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
const DEMO_ID: &str = "pahabgfbcdcnaidcniaebibdihehiphn";

/// A temporary home: the OS's own data directory rules apply, so each host picks its own folder.
struct Home {
    tmp: tempfile::TempDir,
}

impl Home {
    fn new() -> Home {
        let home = Home { tmp: tempfile::tempdir().unwrap() };
        std::fs::create_dir_all(home.path().join(".local/bin")).unwrap();
        std::fs::create_dir_all(home.policy_root()).unwrap();
        home
    }

    fn path(&self) -> &Path {
        self.tmp.path()
    }

    fn policy_root(&self) -> PathBuf {
        self.tmp.path().join("root")
    }

    /// The data directory a host name gets under `~/.local/share`.
    fn data(&self, folder: &str) -> PathBuf {
        self.path().join(".local/share").join(folder)
    }

    fn chromium_manifest(&self, host: &str) -> PathBuf {
        self.path().join(".config/chromium/NativeMessagingHosts").join(format!("{host}.json"))
    }

    fn firefox_manifest(&self, host: &str) -> PathBuf {
        self.path().join(".mozilla/native-messaging-hosts").join(format!("{host}.json"))
    }

    /// `program` in this home's environment, with `~/.local/bin` on PATH.
    fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut command = Command::new(program);
        command
            .env("HOME", self.path())
            .env_remove("XDG_DATA_HOME")
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("LLM_CACHE_DIR")
            .env_remove("LLM_CACHE_LOG")
            // No system-wide install: the machine's own /etc is not this test's.
            .env("LLM_CACHE_SYSTEM_ROOT", self.path().join("system"))
            .env("PATH", format!("{}:/usr/bin:/bin", self.path().join(".local/bin").display()));
        command
    }

    /// Runs `program` with `args`; its exit code and stdout and stderr together.
    fn run(&self, program: impl AsRef<std::ffi::OsStr>, args: &[&str]) -> (i32, String) {
        let output = self.command(program).args(args).output().unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
        (output.status.code().unwrap(), text)
    }

    /// Runs the binary under test with `args`.
    fn host(&self, args: &[&str]) -> (i32, String) {
        self.run(common::binary(), args)
    }

    /// `doctor` with `args`, reading policies under an empty root.
    fn doctor(&self, program: impl AsRef<std::ffi::OsStr>, args: &[&str]) -> (i32, String) {
        let root = self.policy_root();
        let words = [&["doctor", "--policy-root", root.to_str().unwrap()][..], args].concat();
        self.run(program, &words)
    }

    /// Starts `binary` as Chrome does for the extension `id` (its origin the only argument), sends it
    /// `request` and returns its reply.
    fn ask(&self, binary: &Path, id: &str, request: &Value) -> Value {
        let mut child = self
            .command(binary)
            .arg(format!("chrome-extension://{id}/"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Closing stdin after the request is the browser closing the port: the host answers and exits.
        child.stdin.take().unwrap().write_all(&common::request_frame(request)).unwrap();
        let output = child.wait_with_output().unwrap();
        common::reassemble(common::split_frames(&output.stdout)).remove(0)
    }
}

fn write_request(session: &str) -> Value {
    json!({"id": 1, "op": "write", "sessionId": session, "taskId": "aaaaaaaa", "turnId": "bbbbbbbb",
           "data": {"subject": "hello"}, "description": "one email"})
}

fn stats_request(session: &str) -> Value {
    json!({"id": 2, "op": "stats", "sessionId": session})
}

fn assert_ok((code, text): &(i32, String), what: &str) {
    assert_eq!(*code, 0, "{what}:\n{text}");
    assert!(!text.lines().any(|line| line.starts_with("FAIL")), "{what}:\n{text}");
}

#[test]
fn install_under_another_name_writes_that_hosts_files() {
    let home = Home::new();
    let run = home.host(&[
        "install",
        "--host-name",
        MAIL,
        "--browser",
        "chromium",
        "--browser",
        "firefox",
        "--extension-id",
        MAIL_ID,
        "--firefox-extension-id",
        "mail@example.com",
    ]);
    assert_ok(&run, "install --host-name");
    let copy = home.data(MAIL).join("bin").join(MAIL);
    assert_eq!(std::fs::read(&copy).unwrap(), std::fs::read(common::binary()).unwrap(), "the binary is copied");
    let chromium = read_json(&home.chromium_manifest(MAIL));
    assert_eq!(chromium["name"], MAIL);
    assert_eq!(chromium["path"], copy.to_str().unwrap());
    assert_eq!(chromium["allowed_origins"], json!([format!("chrome-extension://{MAIL_ID}/")]));
    let firefox = read_json(&home.firefox_manifest(MAIL));
    assert_eq!((&firefox["name"], &firefox["path"]), (&json!(MAIL), &json!(copy.to_str().unwrap())));
    assert!(home.data(MAIL).join("install.json").exists());
    // The command is the whole name with '_' as '-', linked to the copy; the default host's names are untouched.
    let link = home.path().join(".local/bin/com.example.mail-cache");
    assert_eq!(std::fs::read_link(&link).unwrap(), copy);
    assert!(run.1.contains("OK   command: com.example.mail-cache ("), "{}", run.1);
    assert!(run.1.contains("`com.example.mail-cache doctor` checks"), "{}", run.1);
    for absent in [
        home.chromium_manifest("com.browserx.llm_cache"),
        home.data("llm-cache-host"),
        home.path().join(".local/bin/llm-cache-host"),
    ] {
        assert!(!absent.exists(), "{}", absent.display());
    }

    // `manifest --host-name` prints the same manifest, for a package.
    let (code, printed) = home.host(&[
        "manifest",
        "--browser",
        "chromium",
        "--path",
        copy.to_str().unwrap(),
        "--extension-id",
        MAIL_ID,
        "--host-name",
        MAIL,
    ]);
    assert_eq!(code, 0, "{printed}");
    assert_eq!(printed, std::fs::read_to_string(home.chromium_manifest(MAIL)).unwrap());

    // The copy, started as Chrome starts it, is that host: its store is in the host's own folder.
    let reply = home.ask(&copy, MAIL_ID, &write_request("conv_mail"));
    assert_eq!(reply["ok"], true, "{reply}");
    assert!(home.data(MAIL).join("store/data.mdb").exists());
    assert!(!home.data("llm-cache-host").exists(), "the default host's folder stays out of it");

    // Its command checks and lists its own host, with no --host-name.
    let checked = home.doctor("com.example.mail-cache", &["--browser", "chromium", "--extension-id", MAIL_ID, "-v"]);
    assert_ok(&checked, "com.example.mail-cache doctor");
    assert!(checked.1.contains(&format!("OK   chromium: name \"{MAIL}\" matches the file name")), "{}", checked.1);
    let (code, sessions) = home.run("com.example.mail-cache", &["sessions"]);
    assert!(code == 0 && sessions.contains("conv_mail"), "{sessions}");

    // Uninstalling it removes what it wrote and leaves its data.
    let run = home.host(&["uninstall", "--host-name", MAIL]);
    assert_ok(&run, "uninstall --host-name");
    for gone in [&copy, &link, &home.chromium_manifest(MAIL), &home.firefox_manifest(MAIL)] {
        assert!(gone.symlink_metadata().is_err(), "{}", gone.display());
    }
    assert!(home.data(MAIL).join("store/data.mdb").exists(), "cached data stays");
}

#[test]
fn two_hosts_side_by_side_stay_apart() {
    let home = Home::new();
    let chromium = ["--browser", "chromium"];
    assert_ok(&home.host(&[&["install", "--extension-id", DEMO_ID][..], &chromium].concat()), "install (default)");
    let mail_args = ["install", "--host-name", MAIL, "--extension-id", MAIL_ID];
    assert_ok(&home.host(&[&mail_args[..], &chromium].concat()), "install --host-name");

    let default_copy = home.data("llm-cache-host").join("bin/llm-cache-host");
    let mail_copy = home.data(MAIL).join("bin").join(MAIL);
    assert_eq!(read_json(&home.chromium_manifest("com.browserx.llm_cache"))["path"], default_copy.to_str().unwrap());
    assert_eq!(read_json(&home.chromium_manifest(MAIL))["path"], mail_copy.to_str().unwrap());

    // Each host keeps its own store: a session written through one is not in the other.
    assert_eq!(home.ask(&default_copy, DEMO_ID, &write_request("conv_demo"))["ok"], true);
    assert_eq!(home.ask(&mail_copy, MAIL_ID, &write_request("conv_mail"))["ok"], true);
    assert_eq!(home.ask(&mail_copy, MAIL_ID, &stats_request("conv_mail"))["result"]["itemCount"], 1);
    assert_eq!(home.ask(&default_copy, MAIL_ID, &stats_request("conv_mail"))["result"]["itemCount"], 0);
    let (_, default_sessions) = home.run("llm-cache-host", &["sessions"]);
    let (_, mail_sessions) = home.run("com.example.mail-cache", &["sessions"]);
    assert!(default_sessions.contains("conv_demo") && !default_sessions.contains("conv_mail"), "{default_sessions}");
    assert!(mail_sessions.contains("conv_mail") && !mail_sessions.contains("conv_demo"), "{mail_sessions}");

    // Removing one leaves the other whole and working.
    assert_ok(&home.run("com.example.mail-cache", &["uninstall"]), "com.example.mail-cache uninstall");
    assert!(!home.chromium_manifest(MAIL).exists() && !mail_copy.exists());
    assert!(home.path().join(".local/bin/llm-cache-host").exists());
    assert_ok(
        &home.doctor("llm-cache-host", &[&["--extension-id", DEMO_ID][..], &chromium].concat()),
        "doctor of the default host after the other's uninstall",
    );
    assert_eq!(home.ask(&default_copy, DEMO_ID, &stats_request("conv_demo"))["result"]["itemCount"], 1);
    let (code, text) =
        home.doctor(common::binary(), &[&["--host-name", MAIL, "--extension-id", MAIL_ID][..], &chromium].concat());
    assert_eq!(code, 1, "the removed host is gone:\n{text}");
    assert!(text.contains(&format!("no manifest at {}", home.chromium_manifest(MAIL).display())), "{text}");
}

#[test]
fn two_vendors_whose_names_end_alike_get_commands_of_their_own() {
    // Both names end in mail_cache: each host's command is its whole name, so neither takes the other's.
    const OTHER: &str = "org.other.mail_cache";
    const OTHER_ID: &str = "cccccccccccccccccccccccccccccccc";
    let home = Home::new();
    for (name, id) in [(MAIL, MAIL_ID), (OTHER, OTHER_ID)] {
        let install = ["install", "--host-name", name, "--browser", "chromium", "--extension-id", id];
        assert_ok(&home.host(&install), name);
    }
    for (name, command) in [(MAIL, "com.example.mail-cache"), (OTHER, "org.other.mail-cache")] {
        let link = home.path().join(".local/bin").join(command);
        assert_eq!(std::fs::read_link(&link).unwrap(), home.data(name).join("bin").join(name), "{command}");
        let root = home.policy_root();
        let (code, text) = home.run(command, &["doctor", "--policy-root", root.to_str().unwrap(), "-v"]);
        assert_eq!(code, 0, "{command} doctor:\n{text}");
        assert!(text.contains(&format!("OK   chromium: name \"{name}\" matches the file name")), "{command}:\n{text}");
    }
}

#[test]
fn host_names_are_checked_by_chromes_rule() {
    let home = Home::new();
    let too_long = format!("com.example.{}", "a".repeat(77));
    for bad in [
        "Com.Example.Mail",
        "mail_cache",
        "com..example",
        ".com.example",
        "com.example.mail-cache",
        // Windows devices, as any part, and a name that would take a Windows install past MAX_PATH.
        "com.nul.cache",
        "con.example.app",
        "com.example.lpt1",
        &too_long,
    ] {
        let (code, text) = home.host(&["install", "--host-name", bad]);
        assert_eq!(code, 2, "{bad}: {text}");
        assert!(text.contains("is not a host name") && text.contains("lowercase letters"), "{bad}: {text}");
    }
    assert_eq!(std::fs::read_dir(home.path().join(".local")).unwrap().count(), 1, "nothing but .local/bin");
}

#[test]
fn the_scripts_check_host_names_before_building() {
    for script in ["install.sh", "scripts/release.sh"] {
        for good in [MAIL, "com.browserx.llm_cache", "a.bc", "com.x.llm_cache_host"] {
            let (_, stderr) = common::script_without_cargo(script, &["--host-name", good], &[]);
            assert!(stderr.contains("cargo is missing"), "{script} {good}: {stderr}");
        }
        for bad in ["Com.Example.Mail", "mail_cache", "com..x", "com.x.", "com.x.a", "com.x._ab", "_x.ab", "com.nul.ab"]
        {
            let (code, stderr) = common::script_without_cargo(script, &["--host-name", bad], &[]);
            assert_eq!(code, Some(2), "{script} {bad}: {stderr}");
            assert!(
                stderr.contains("lowercase letters, digits") && stderr.contains("e.g. com.example.mail_cache"),
                "{script} {bad}: {stderr}"
            );
        }
    }
    let (_, stderr) = common::script_without_cargo("scripts/release.sh", &[], &[("RELEASE_HOST_NAME", "Bad")]);
    assert!(stderr.contains("\"Bad\" is not a host name"), "{stderr}");
}

#[test]
fn the_scripts_rule_takes_and_refuses_what_the_binarys_does() {
    // tests/host_names.txt holds the cases src/host_name.rs and the shim's host-name.ts check too.
    let check = r#". scripts/extension-ids.sh
        while IFS= read -r line; do
          case $line in '#'*) continue ;; esac
          if is_host_name "${line#* }"; then echo "ok ${line#* }"; else echo "no ${line#* }"; fi
        done < tests/host_names.txt"#;
    let output = Command::new("bash").args(["-c", check]).current_dir(env!("CARGO_MANIFEST_DIR")).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let cases = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/host_names.txt")).unwrap();
    let expected: Vec<&str> = cases.lines().filter(|line| !line.starts_with('#')).collect();
    assert_eq!(String::from_utf8(output.stdout).unwrap().lines().collect::<Vec<_>>(), expected);
}

#[test]
fn a_binary_named_for_a_host_is_that_host() {
    // What `install --host-name` relies on: the copy's file name is its host name.
    let home = Home::new();
    let named = home.path().join(MAIL);
    common::copy_binary(&named);
    let (code, text) = home.run(&named, &["manifest", "--browser", "chromium", "--path", "/x"]);
    assert_eq!(code, 0, "{text}");
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap()["name"], MAIL);
    assert_eq!(home.ask(&named, MAIL_ID, &write_request("conv_mail"))["ok"], true);
    assert!(home.data(MAIL).join("store/data.mdb").exists());
}

/// The command a line of output shows between backticks after `marker`.
fn quoted_after<'a>(text: &'a str, marker: &str) -> &'a str {
    let start = text.find(marker).unwrap_or_else(|| panic!("no {marker:?} in:\n{text}")) + marker.len();
    let rest = &text[start..];
    &rest[..rest.find('`').unwrap_or_else(|| panic!("no closing ` after {marker:?} in:\n{text}"))]
}

#[test]
fn a_vendor_hosts_advice_names_its_own_command_and_runs_as_shown() {
    // A developer's host, installed as its command: `com.example.mail-cache` runs a copy that knows it is MAIL.
    let home = Home::new();
    let install = ["install", "--host-name", MAIL, "--browser", "chromium", "--extension-id", MAIL_ID];
    assert_ok(&home.host(&install), "install --host-name");
    let manifest = home.chromium_manifest(MAIL);
    std::fs::remove_file(&manifest).unwrap();

    // Its doctor finds the manifest gone and says how to put it back, with its own command and name.
    let (code, text) = home.doctor("com.example.mail-cache", &[]);
    assert_eq!(code, 1, "{text}");
    let fix = quoted_after(&text, "(the browser says \"Specified native messaging host not found\"): run `");
    assert_eq!(
        fix,
        format!("com.example.mail-cache install --host-name {MAIL} --browser chromium --extension-id {MAIL_ID}")
    );
    assert!(!text.contains("llm-cache-host"), "every command doctor shows is the host's own:\n{text}");
    // Run as shown, it repairs the install: doctor then passes, for the same extension.
    let run = home.command("sh").args(["-c", fix]).output().unwrap();
    assert!(run.status.success(), "{fix}: {}", String::from_utf8_lossy(&run.stdout));
    assert_eq!(read_json(&manifest)["allowed_origins"], json!([format!("chrome-extension://{MAIL_ID}/")]));
    assert_ok(&home.doctor("com.example.mail-cache", &[]), "doctor after the fix");

    // With no arguments and no terminal, it explains itself as itself; the doctor command it shows works.
    let output = home.command("com.example.mail-cache").stdin(Stdio::null()).output().unwrap();
    let welcome = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(2), "{welcome}");
    assert!(
        welcome.starts_with("com.example.mail-cache is the native messaging host behind the llm_cache StorageTool"),
        "{welcome}"
    );
    assert!(welcome.contains(&format!("  chromium (for you): extension {MAIL_ID}\n")), "{welcome}");
    assert!(!welcome.contains("llm-cache-host"), "{welcome}");
    let check = quoted_after(&welcome, "\n`");
    assert_eq!(check, format!("com.example.mail-cache doctor --host-name {MAIL}"));
    let root = home.policy_root();
    let shown = format!("{check} --policy-root '{}'", root.display());
    let run = home.command("sh").args(["-c", &shown]).output().unwrap();
    let said = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success() && said.contains("all ") && said.contains(" checks passed"), "{shown}:\n{said}");

    // Uninstalling it says how to check it afterwards and how to remove its data, naming this host.
    let (code, text) = home.run("com.example.mail-cache", &["uninstall"]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("Uninstalled. The `com.example.mail-cache` command went with it"), "{text}");
    assert!(
        text.contains(&format!(
            "`./llm-cache-host doctor --host-name {MAIL}`, from the folder you unpacked it in \
             (`target/release/llm-cache-host doctor --host-name {MAIL}` in a source checkout), checks"
        )),
        "{text}"
    );
    assert!(text.contains(&format!("`./llm-cache-host uninstall --host-name {MAIL} --purge`")), "{text}");
}

#[test]
fn a_vendor_binarys_help_names_its_own_command() {
    let home = Home::new();
    let named = home.path().join(MAIL);
    common::copy_binary(&named);
    let (code, help) = home.run(&named, &["--help"]);
    assert_eq!(code, 0, "{help}");
    assert!(
        help.contains("Usage: com.example.mail-cache <COMMAND>")
            && help.contains("  com.example.mail-cache chrome-extension://"),
        "{help}"
    );
    assert!(help.contains(&format!("per-user data dir + /{MAIL};")), "{help}");
    assert!(!help.contains("llm-cache-host"), "{help}");
    let commands: Vec<&str> = help
        .split("Commands:\n")
        .nth(1)
        .unwrap()
        .lines()
        .take_while(|line| !line.is_empty())
        .filter_map(|line| line.split_whitespace().next())
        .collect();
    assert!(commands.len() >= 10 && commands.contains(&"install"), "{commands:?} in {help}");
    for command in commands {
        let (code, text) = home.run(&named, &[command, "--help"]);
        assert_eq!(code, 0, "{command}: {text}");
        assert!(text.contains(&format!("Usage: com.example.mail-cache {command}")), "{command}: {text}");
        assert!(!text.contains("llm-cache-host"), "{command}: {text}");
    }
    let (_, install) = home.run(&named, &["install", "--help"]);
    assert!(install.contains(&format!("Linux    ~/.local/share/{MAIL}\n")), "{install}");
    let (_, call) = home.run(&named, &["call", "--help"]);
    assert!(call.contains("| com.example.mail-cache call"), "{call}");
    // A launch line that makes no sense is answered with the same help.
    let (code, text) = home.run(&named, &["bogus"]);
    assert!(code == 2 && text.starts_with("com.example.mail-cache: ") && !text.contains("llm-cache-host"), "{text}");
}
