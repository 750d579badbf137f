//! What is installed, as the real binary sees it in a temporary HOME: installs that add extensions
//! rather than replace them, `uninstall --extension-id` that removes one, and a `doctor` with no
//! arguments that checks what is installed (this user's manifests, and a package's system-wide ones,
//! placed under `LLM_CACHE_SYSTEM_ROOT`) with the ids installed, warns when this user's manifest hides
//! a system-wide one, suggests commands that keep the installed ids, and proves the store.

#![cfg(target_os = "linux")]

mod common;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

use common::machine::{MANIFEST, Machine, Run, assert_ok, read_json};
use serde_json::json;

const DEMO_ID: &str = "pahabgfbcdcnaidcniaebibdihehiphn";
const DEMO_ADDON: &str = "llm-cache-demo@browserx.dev";
/// A developer's two extensions, as their package or their users' installs allow them.
const A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
const ADDON: &str = "mail@example.org";

fn origin(id: &str) -> String {
    format!("chrome-extension://{id}/")
}

/// The machine's tree without what the host itself makes when doctor starts it (the store, logs).
fn files(machine: &Machine) -> BTreeSet<PathBuf> {
    machine.tree().into_iter().filter(|p| !p.starts_with("data/store") && !p.starts_with("data/logs")).collect()
}

#[test]
fn a_second_install_adds_and_uninstall_removes_one_extension_at_a_time() {
    let machine = Machine::new();
    let before = files(&machine);
    let both = ["--browser", "chromium", "--browser", "firefox"];
    assert_ok(
        &machine.run(&[&["install", "--extension-id", A, "--firefox-extension-id", ADDON][..], &both].concat()),
        "A",
    );
    let run = machine.run(&[&["install", "--extension-id", B][..], &both].concat());
    assert_ok(&run, "B");
    assert!(run.stdout.contains(&format!("OK   allowed: extensions {A}, {B}; add-on {ADDON}")), "{}", run.stdout);

    // Both manifests keep what the first install allowed; the record lists every id.
    assert_eq!(read_json(&machine.chromium_manifest())["allowed_origins"], json!([origin(A), origin(B)]));
    assert_eq!(read_json(&machine.firefox_manifest())["allowed_extensions"], json!([ADDON]));
    let record = read_json(&machine.data().join("install.json"));
    assert_eq!((&record["extensionIds"], &record["firefoxExtensionIds"]), (&json!([A, B]), &json!([ADDON])));

    // doctor with no arguments checks those ids, lists them, and never the demo's.
    let run = machine.doctor(&[]);
    assert_ok(&run, "doctor");
    assert!(
        run.stdout.contains(&format!(
            "OK   chromium: host {} registered for 2 extensions ({A}, {B})",
            env!("CARGO_PKG_VERSION")
        )),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains(&format!("registered for 1 add-on ({ADDON})")), "{}", run.stdout);
    assert!(!run.stdout.contains(DEMO_ID) && !run.stdout.contains(DEMO_ADDON), "{}", run.stdout);

    // An id the install doesn't allow is refused, and nothing changes.
    let run = machine.run(&["uninstall", "--extension-id", DEMO_ID]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout
            .contains(&format!("FAIL --extension-id {DEMO_ID}: this install doesn't allow it (it allows {A}, {B})")),
        "{}",
        run.stdout
    );
    assert_eq!(read_json(&machine.chromium_manifest())["allowed_origins"], json!([origin(A), origin(B)]));

    // Uninstalling A leaves B, and the add-on.
    assert_ok(&machine.run(&["uninstall", "--extension-id", A]), "uninstall A");
    assert_eq!(read_json(&machine.chromium_manifest())["allowed_origins"], json!([origin(B)]));
    assert_eq!(read_json(&machine.firefox_manifest())["allowed_extensions"], json!([ADDON]));
    assert_eq!(read_json(&machine.data().join("install.json"))["extensionIds"], json!([B]));
    assert_ok(&machine.doctor(&[]), "doctor after uninstalling A");

    // The last Chrome extension takes the Chromium manifests with it; the last add-on, everything.
    assert_ok(&machine.run(&["uninstall", "--extension-id", B]), "uninstall B");
    assert!(!machine.chromium_manifest().exists());
    assert_eq!(read_json(&machine.firefox_manifest())["allowed_extensions"], json!([ADDON]));
    let run = machine.run(&["uninstall", "--firefox-extension-id", ADDON]);
    assert_ok(&run, "uninstall the add-on");
    assert!(run.stdout.contains("that was the last extension allowed"), "{}", run.stdout);
    let mut expected = before;
    expected.insert("data".into());
    assert_eq!(files(&machine), expected, "everything install wrote is gone");
}

#[test]
fn uninstalling_the_only_extension_removes_everything() {
    let machine = Machine::new();
    let before = files(&machine);
    assert_ok(&machine.run(&["install", "--browser", "chromium", "--extension-id", A]), "install");
    assert_ok(&machine.run(&["uninstall", "--extension-id", A]), "uninstall A");
    assert_eq!(files(&machine), before, "no host ran, so no data was made: the data directory goes too");
}

/// An install names its own extensions: a family none of them belongs to is not registered (no
/// Firefox manifest for the demo add-on beside a developer's Chrome extension), a browser of that
/// family named with --browser is refused, and uninstalling the last id named removes the install.
#[test]
fn only_the_families_of_the_ids_named_are_registered() {
    let machine = Machine::new();
    let before = files(&machine);
    // Without --browser, install registers with the browsers found here (Chromium and Firefox on the
    // test machines), or all six when it finds none: a Chromium-family one and Firefox either way.
    let run = machine.run(&["install", "--extension-id", A]);
    assert_ok(&run, "install");
    assert!(
        run.stdout.contains(
            "NOTE Firefox is not registered: no Firefox add-on id is given or allowed (--firefox-extension-id ID \
             registers it)"
        ),
        "{}",
        run.stdout
    );
    assert!(machine.chromium_manifest().exists() && !machine.firefox_manifest().exists(), "{}", run.stdout);
    let record = read_json(&machine.data().join("install.json"));
    assert_eq!(record["firefoxExtensionIds"], json!([]), "{record}");
    assert!(!record.to_string().contains("firefox\""), "{record}");

    let run = machine.run(&["install", "--browser", "firefox", "--extension-id", B]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout.contains(
            "firefox: no Firefox add-on id is given or allowed for it: add --firefox-extension-id ID, or leave it out \
             (nothing was changed)"
        ),
        "{}",
        run.stdout
    );
    assert_eq!(read_json(&machine.chromium_manifest())["allowed_origins"], json!([origin(A)]));

    assert_ok(&machine.run(&["uninstall", "--extension-id", A]), "uninstall A");
    assert_eq!(files(&machine), before, "the last id named takes the whole install with it");
}

/// Two hosts in one LLM_CACHE_DIR each keep their own install record: installing and uninstalling
/// the second never reads, rewrites or removes the first's record, manifest or binary.
#[test]
fn hosts_sharing_a_data_directory_keep_their_own_records() {
    const MAIL: &str = "com.example.mail_cache";
    let machine = Machine::new();
    assert_ok(&machine.run(&["install", "--browser", "chromium"]), "install the default host");
    let own = [machine.chromium_manifest(), machine.data().join("install.json"), machine.installed_binary()];
    let read = || own.iter().map(|file| std::fs::read(file).unwrap()).collect::<Vec<_>>();
    let before = read();

    let mail = ["--host-name", MAIL];
    let run = machine.run(&[&["install", "--browser", "chromium", "--extension-id", A][..], &mail].concat());
    assert_ok(&run, "install the mail host");
    assert_eq!(read(), before, "the default host's files are untouched:\n{}", run.stdout);
    let mail_manifest = machine.chromium_manifest().with_file_name(format!("{MAIL}.json"));
    let mail_record = read_json(&machine.data().join(format!("install.{MAIL}.json")));
    assert_eq!(mail_record["entries"].as_array().unwrap().len(), 1, "{mail_record}");
    assert_eq!(mail_record["entries"][0]["location"]["file"]["manifest"], json!(mail_manifest));
    assert_eq!(read_json(&mail_manifest)["path"], json!(machine.data().join("bin").join(MAIL)));

    assert_ok(&machine.run(&[&["uninstall"][..], &mail].concat()), "uninstall the mail host");
    assert!(!mail_manifest.exists() && !machine.data().join("bin").join(MAIL).exists());
    assert_eq!(read(), before, "the default host's files are untouched");
    assert_ok(&machine.doctor(&["--browser", "chromium"]), "doctor of the default host");
}

/// Installs and uninstalls of one host take turns: while another holds the host's lock file (here
/// the test, standing in for an install half done), an install says it waits, writes nothing, and
/// finishes once the lock is let go, so no id of either is lost.
#[test]
fn an_install_waits_for_the_one_holding_the_lock() {
    use std::io::BufRead;
    let machine = Machine::new();
    std::fs::create_dir(machine.data()).unwrap();
    let lock_path = machine.data().join("install.lock");
    let held = std::fs::File::create(&lock_path).unwrap();
    // SAFETY: flock only reads the descriptor, which `held` keeps open.
    assert_eq!(unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&held), libc::LOCK_EX) }, 0);

    let mut install = machine
        .command(common::binary())
        .args(["install", "--browser", "chromium", "--extension-id", A])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(install.stdout.take().unwrap()).lines();
    let first = lines.next().expect("install says it waits").unwrap();
    assert_eq!(
        first,
        format!(
            "waiting for another install or uninstall of com.browserx.llm_cache to finish (it holds {})",
            lock_path.display()
        )
    );
    // It waits before reading the record: nothing is written while the lock is held.
    assert!(!machine.data().join("install.json").exists() && !machine.chromium_manifest().exists());

    drop(held);
    let rest: Vec<String> = lines.map(Result::unwrap).collect();
    assert!(install.wait().unwrap().success(), "{rest:?}");
    assert!(rest.iter().any(|line| line.starts_with("Installed.")), "{rest:?}");
    assert_eq!(read_json(&machine.chromium_manifest())["allowed_origins"], json!([origin(A)]));
    assert_ok(&machine.run(&["uninstall"]), "uninstall");
    assert!(!lock_path.exists(), "uninstall takes its lock file with it");
}

/// A package's install, as scripts/release.sh builds it: the binary (here a link to the one under
/// test, as the system root's usr/bin/llm-cache-host, on the machine's PATH) and every browser's
/// system-wide manifest allowing the developer's ids, written by `manifest --root` under the machine's
/// system root.
fn install_package(machine: &Machine) {
    let bin = machine.system_root().join("usr/bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(common::binary(), bin.join("llm-cache-host")).unwrap();
    let root = machine.system_root();
    let root = root.to_str().unwrap();
    let ids = ["--extension-id", A, "--extension-id", B, "--firefox-extension-id", ADDON];
    let run = machine.run(&[&["manifest", "--root", root, "--path", common::binary()][..], &ids].concat());
    assert_eq!(run.code, 0, "{}", run.stdout);
    let browsers: Vec<&str> = run.stdout.lines().filter_map(|line| line.rsplit_once(' ')).map(|(_, b)| b).collect();
    assert_eq!(browsers, ["chrome", "chromium,brave,vivaldi", "edge", "brave", "vivaldi", "firefox"], "{}", run.stdout);
}

fn system_manifest(machine: &Machine) -> PathBuf {
    machine.system_root().join("etc/chromium/native-messaging-hosts").join(MANIFEST)
}

/// The command a line suggests: the text between its last pair of backquotes.
fn suggested(line: &str) -> String {
    let (head, _) = line.rsplit_once('`').unwrap();
    head.rsplit_once('`').unwrap().1.to_owned()
}

#[test]
fn doctor_checks_a_packages_install_with_its_own_ids() {
    let machine = Machine::new();
    install_package(&machine);

    // Nothing of this user's: plain doctor checks the package's manifests with their ids, not the demo's.
    let run = machine.doctor(&[]);
    assert_ok(&run, "doctor after the package");
    let summary = format!("registered for 2 extensions ({A}, {B}), answers hello");
    assert!(run.stdout.contains("OK   chromium, brave, vivaldi (system): host "), "{}", run.stdout);
    assert!(run.stdout.contains(&summary), "{}", run.stdout);
    assert!(run.stdout.contains("OK   firefox (system): host "), "{}", run.stdout);
    // The folders only Brave and Vivaldi read are checked too.
    for browser in ["brave", "vivaldi"] {
        assert!(run.stdout.contains(&format!("OK   {browser} (system): host ")), "{}", run.stdout);
    }
    assert!(!run.stdout.contains(DEMO_ID) && !run.stdout.contains(DEMO_ADDON), "{}", run.stdout);
    assert!(!run.stdout.contains("WARN"), "{}", run.stdout);
    assert!(run.stdout.lines().count() <= 24, "{}", run.stdout);
    // doctor --system likewise.
    let run = machine.doctor(&["--system"]);
    assert_ok(&run, "doctor --system");
    assert!(run.stdout.contains(&summary) && !run.stdout.contains(DEMO_ID), "{}", run.stdout);

    // A remedy for the system-wide install keeps its ids and says --system.
    std::fs::remove_file(machine.system_root().join("etc/opt/chrome/native-messaging-hosts").join(MANIFEST)).unwrap();
    let expected =
        format!("sudo llm-cache-host install --system --browser chrome --extension-id {A} --extension-id {B}");
    let run = machine.doctor(&["--system", "--browser", "chrome"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    let line =
        run.failures().into_iter().find(|line| line.contains("no manifest") || line.contains("not found")).unwrap();
    assert_eq!(suggested(line), expected, "{line}");
}

/// With only a package installed, the command doctor gives to change the store quota sets it and
/// registers nothing: no manifest of this user's hides the package's, whose extensions still connect.
#[test]
fn the_store_quota_command_doctor_gives_never_hides_a_package() {
    let machine = Machine::new();
    install_package(&machine);
    let run = machine.doctor(&[]);
    assert_ok(&run, "doctor after the package");
    let note = run.stdout.lines().find(|line| line.starts_with("NOTE store: ")).unwrap_or_default();
    let command = suggested(note);
    assert_eq!(command, "llm-cache-host config --store-quota <size>", "{}", run.stdout);
    let run = machine.shell(&command.replace("<size>", "4GB"));
    assert_ok(&run, &command);
    assert_eq!(read_json(&machine.data().join("config.json")), json!({"storeQuotaBytes": 4_000_000_000u64}));
    assert!(!machine.chromium_manifest().exists() && !machine.firefox_manifest().exists());
    assert!(!machine.data().join("install.json").exists() && !machine.data().join("bin").exists());
    let run = machine.doctor(&[]);
    assert_ok(&run, "doctor after the quota changed");
    assert!(!run.stdout.contains("WARN") && !run.stdout.contains(DEMO_ID), "{}", run.stdout);
    assert!(run.stdout.contains("NOTE store: 0 B of the store-wide quota of 3.7 GiB used (0%)"), "{}", run.stdout);
    assert!(machine.run(&["config"]).stdout.starts_with("store quota: 4000000000 bytes (3.7 GiB), recorded in "));
}

/// A user's own install (here for the demo's id) hides the package's manifest from their browsers,
/// whatever the package allows: doctor names that, and the command it gives puts things right.
#[test]
fn doctor_warns_when_this_users_manifest_hides_the_packages() {
    let machine = Machine::new();
    install_package(&machine);
    assert_ok(&machine.run(&["install", "--browser", "chromium"]), "an install of this user's, for the demo");
    let run = machine.doctor(&[]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    let warnings: Vec<&str> = run.stdout.lines().filter(|line| line.starts_with("WARN")).collect();
    assert_eq!(warnings.len(), 1, "{}", run.stdout);
    let user = machine.chromium_manifest();
    assert!(
        warnings[0].starts_with(&format!(
            "WARN chromium: this user's manifest {} hides the system-wide {}: chromium reads this user's first, so it \
             allows only {DEMO_ID} here, not {A}, {B}",
            user.display(),
            system_manifest(&machine).display()
        )),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("checks passed, with 1 warning"), "{}", run.stdout);
    let command = suggested(warnings[0]);
    assert_eq!(command, format!("rm '{}'", user.display()));
    assert!(Command::new("sh").args(["-c", &command]).status().unwrap().success(), "{command}");
    let run = machine.doctor(&[]);
    assert_ok(&run, "doctor after the fix");
    assert!(!run.stdout.contains("WARN"), "{}", run.stdout);
    assert!(run.stdout.contains("OK   chromium, brave, vivaldi (system): host "), "{}", run.stdout);
}

/// After a user install for the developer's id, a remedy keeps that id: it never swaps in the demo's.
#[test]
fn doctors_remedies_keep_the_installed_ids() {
    let machine = Machine::new();
    let both = ["--browser", "chromium", "--browser", "firefox"];
    assert_ok(
        &machine.run(&[&["install", "--extension-id", A, "--firefox-extension-id", ADDON][..], &both].concat()),
        "install",
    );
    let file = machine.chromium_manifest();
    let mut manifest = read_json(&file);
    manifest["path"] = json!(machine.tmp.path().join("gone").to_str().unwrap());
    std::fs::write(&file, manifest.to_string()).unwrap();
    std::fs::remove_file(machine.firefox_manifest()).unwrap();

    let run = machine.doctor(&[]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    let missing = run.failures().into_iter().find(|line| line.starts_with("FAIL firefox: no manifest")).unwrap();
    assert_eq!(
        suggested(missing),
        format!("llm-cache-host install --browser firefox --firefox-extension-id '{ADDON}'")
    );
    assert!(!run.stdout.contains(&format!("--extension-id {DEMO_ID}")), "{}", run.stdout);
    assert!(!run.stdout.contains(DEMO_ADDON), "{}", run.stdout);
    // The command shown puts it right, keeping A.
    let bin = machine.installed_binary().parent().unwrap().to_owned();
    let path = format!("{}:/usr/bin:/bin", bin.display());
    let fix = format!("llm-cache-host install --browser chromium --extension-id {A}");
    let status = machine.command("sh").args(["-c", &fix]).env("PATH", &path).status().unwrap();
    assert!(status.success());
    let status = machine.command("sh").args(["-c", &suggested(missing)]).env("PATH", &path).status().unwrap();
    assert!(status.success());
    let run = machine.doctor(&[]);
    assert_ok(&run, "doctor after the fixes");
    assert!(run.stdout.contains(&format!("registered for 1 extension ({A})")), "{}", run.stdout);
}

/// A store the host can't write fails doctor, with what to do, though the host answers hello and the
/// data directory takes a file: the store is proved by a write, a read and a delete through the host.
#[test]
fn doctor_proves_the_store() {
    let machine = Machine::new();
    assert_ok(&machine.run(&["install", "--browser", "chromium", "--extension-id", A]), "install");
    let run = machine.doctor(&["--verbose"]);
    assert_ok(&run, "doctor");
    let line = run.stdout.lines().find(|line| line.starts_with("OK   store: ")).unwrap();
    assert!(
        line.contains("the host wrote, read back and deleted an item (")
            && line.contains("; doctor's own session conv_doctor-"),
        "{line}"
    );
    // Its session is ended: the store holds no session of doctor's.
    let sessions = machine.run(&["sessions", "--json"]);
    assert!(!sessions.stdout.contains("conv_doctor-"), "{}", sessions.stdout);

    // The store's folder is a file now (a mistake any user, root too, can't write through).
    std::fs::remove_dir_all(machine.data().join("store")).unwrap();
    std::fs::write(machine.data().join("store"), "not a folder").unwrap();
    let run = machine.doctor(&[]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    let failures = run.failures();
    assert_eq!(failures.len(), 1, "{}", run.stdout);
    assert!(failures[0].starts_with("FAIL store: the host refused write: StorageUnavailableError: "), "{}", run.stdout);
    assert!(failures[0].contains("make sure it is a folder you own and can write"), "{}", run.stdout);
    assert!(run.stdout.contains("OK   chromium: host "), "the host still answers hello: {}", run.stdout);
}

/// uninstall says the command went only when it did: another `llm-cache-host` on PATH (a package's
/// /usr/bin/llm-cache-host) is named.
#[test]
fn uninstall_names_the_command_that_remains() {
    let machine = Machine::new();
    let other = machine.tmp.path().join("usr/bin");
    std::fs::create_dir_all(&other).unwrap();
    common::copy_binary(&other.join("llm-cache-host"));
    let path = format!("{}:{}:/bin", machine.home().join(".local/bin").display(), other.display());
    let with_path = |args: &[&str]| -> Run {
        let output = machine.command(common::binary()).args(args).env("PATH", &path).output().unwrap();
        Run { code: output.status.code().unwrap(), stdout: String::from_utf8(output.stdout).unwrap() }
    };
    assert_ok(&with_path(&["install", "--browser", "chromium"]), "install");
    let run = with_path(&["uninstall"]);
    assert_ok(&run, "uninstall");
    assert!(
        run.stdout.contains(&format!(
            "Uninstalled. {} is still on your PATH (another install: a package or a --system install)",
            other.join("llm-cache-host").display()
        )),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("command went with it"), "{}", run.stdout);
}

/// A .deb owning a manifest, installed by dpkg for this test and purged after it (also when the test
/// fails), with the system install and its files it runs beside.
struct OwnedManifest {
    package: &'static str,
    host: &'static str,
}

impl Drop for OwnedManifest {
    fn drop(&mut self) {
        let machine = Machine::new();
        let _ = machine.run(&["uninstall", "--system", "--host-name", self.host]);
        let _ = Command::new("dpkg").args(["--purge", self.package]).output();
        let _ = std::fs::remove_dir_all(format!("/usr/local/lib/{}", self.host));
    }
}

/// install --system beside a package that owns one of its manifests leaves that file to the package,
/// and uninstall --system never deletes it, even when the record lists it: dpkg -V still finds the
/// package whole. Runs as root with dpkg (the CI machine); elsewhere it says why it doesn't.
#[test]
fn a_system_install_never_takes_over_a_packages_manifest() {
    let root = Command::new("id").arg("-u").output().is_ok_and(|out| out.stdout == b"0\n");
    if !root || Command::new("dpkg-deb").arg("--version").output().is_err() {
        eprintln!("skipped: needs root and dpkg");
        return;
    }
    const HOST: &str = "org.llm_cache_test.owned_manifest";
    let owned = OwnedManifest { package: "llm-cache-test-owned-manifest", host: HOST };
    let machine = Machine::new();
    let staged = machine.tmp.path().join("deb");
    let manifest = PathBuf::from(format!("/etc/chromium/native-messaging-hosts/{HOST}.json"));
    let text = format!("{{\"name\": \"{HOST}\", \"path\": \"/usr/bin/owned-manifest\"}}\n");
    std::fs::create_dir_all(staged.join("DEBIAN")).unwrap();
    std::fs::create_dir_all(staged.join("etc/chromium/native-messaging-hosts")).unwrap();
    std::fs::write(staged.join(manifest.strip_prefix("/").unwrap()), &text).unwrap();
    std::fs::write(
        staged.join("DEBIAN/control"),
        format!(
            "Package: {}\nVersion: 1.0\nArchitecture: all\nMaintainer: Test <t@example.org>\nDescription: test\n",
            owned.package
        ),
    )
    .unwrap();
    let deb = machine.tmp.path().join("owned.deb");
    let built = Command::new("dpkg-deb").args(["--build", "--root-owner-group"]).arg(&staged).arg(&deb).output();
    assert!(built.unwrap().status.success());
    assert!(Command::new("dpkg").arg("-i").arg(&deb).output().unwrap().status.success());
    let verified = || Command::new("dpkg").args(["-V", owned.package]).output().unwrap();

    let install = ["install", "--system", "--host-name", HOST, "--browser", "chromium", "--browser", "chrome"];
    let run = machine.run(&[&install[..], &["--extension-id", A]].concat());
    assert_ok(&run, "install --system");
    let note = format!("NOTE chromium: left {} alone: package {} owns it", manifest.display(), owned.package);
    assert!(run.stdout.contains(&note), "{}", run.stdout);
    assert_eq!(std::fs::read_to_string(&manifest).unwrap(), text);
    let chrome = PathBuf::from(format!("/etc/opt/chrome/native-messaging-hosts/{HOST}.json"));
    assert_eq!(read_json(&chrome)["allowed_origins"], json!([origin(A)]), "chrome's is written");

    // A record that lists the package's manifest (as one written before this fix would) changes nothing.
    let record_path = PathBuf::from(format!("/usr/local/lib/{HOST}/install.json"));
    let mut record = read_json(&record_path);
    let mut entry = record["entries"][0].clone();
    entry["location"]["file"]["manifest"] = json!(manifest);
    (entry["label"], entry["browsers"]) = (json!("chromium"), json!(["chromium"]));
    record["entries"].as_array_mut().unwrap().push(entry);
    std::fs::write(&record_path, record.to_string()).unwrap();
    let run = machine.run(&["uninstall", "--system", "--host-name", HOST]);
    assert_ok(&run, "uninstall --system");
    assert!(run.stdout.contains(&note), "{}", run.stdout);
    assert!(!chrome.exists(), "{}", run.stdout);
    assert_eq!(std::fs::read_to_string(&manifest).unwrap(), text);
    let check = verified();
    assert!(check.status.success() && check.stdout.is_empty(), "{}", String::from_utf8_lossy(&check.stdout));
}
