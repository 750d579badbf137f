//! Every add-on id Firefox accepts works everywhere an id is given, through the real binary and the
//! real scripts: `manifest`, `install` (then `doctor`, which starts the host as Firefox does), the
//! host's own launch, install.sh and scripts/release.sh; and every id Firefox refuses is refused
//! there with Firefox's rule in words. Firefox's rule: a braced GUID, or `name@domain` where the name
//! may be empty (`@addon-example` is MDN's own example). The welcome prompt's ids are in no_args.rs.

#![cfg(target_os = "linux")]

mod common;

use std::io::Write;
use std::path::Path;
use std::process::Stdio;

use common::machine::{Machine, assert_ok, read_json};
use common::script_without_cargo;
use serde_json::{Value, json};

/// Ids Firefox accepts, one of each shape; an id may start with `-`, and the word after the flag is
/// still the id.
const GOOD: [&str; 6] =
    ["@addon-example", "@name", "a.b-c_d@x.y", "{4c2b7a4e-1d5e-4e8f-9a3b-2f1c0d9e8b7a}", "-x@y", "--@x"];

/// Ids Firefox refuses: nothing after `@`, a brace pair that is no GUID, and characters a shell or a
/// JSON reader would make something of.
const BAD: [&str; 10] = ["@", "name@", "{not-a-guid}", "a b@c", "\"@x\"", "'@x'", "$x@y", "`x`@y", "a;b@c", "a@b c"];

/// What every refusal says.
const RULE: &str = "where the name may be empty (@name)";

#[test]
fn manifest_lists_every_firefox_id_and_refuses_the_rest() {
    let machine = Machine::new();
    let mut args = vec!["manifest", "--browser", "firefox", "--path", "/usr/bin/llm-cache-host"];
    for id in GOOD {
        args.extend(["--firefox-extension-id", id]);
    }
    let run = machine.run(&args);
    assert_eq!(run.code, 0, "{}", run.stdout);
    let manifest: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(manifest["allowed_extensions"], json!(GOOD));

    for id in BAD {
        let run = machine.run(&["manifest", "--browser", "firefox", "--path", "/x", "--firefox-extension-id", id]);
        assert_eq!(run.code, 2, "{id}: {}", run.stdout);
        assert!(run.stdout.contains(RULE), "{id}: {}", run.stdout);
    }
}

/// Installed for `@name`, the manifest allows it, and doctor starts the host with Firefox's launch
/// line (`<manifest path> @name`) and gets its hello.
#[test]
fn install_and_doctor_for_an_id_without_a_name() {
    for id in ["@name", "{4c2b7a4e-1d5e-4e8f-9a3b-2f1c0d9e8b7a}"] {
        let machine = Machine::new();
        assert_ok(&machine.run(&["install", "--browser", "firefox", "--firefox-extension-id", id]), "install");
        assert_eq!(read_json(&machine.firefox_manifest())["allowed_extensions"], json!([id]));
        let doctor = machine.doctor(&["--browser", "firefox", "--firefox-extension-id", id]);
        assert_ok(&doctor, "doctor");
        let summary = format!("registered for 1 add-on ({id}), answers hello");
        assert!(doctor.stdout.contains(&summary), "{}", doctor.stdout);
    }
    let machine = Machine::new();
    let run = machine.run(&["install", "--browser", "firefox", "--firefox-extension-id", "name@"]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    assert!(run.stdout.contains(RULE), "{}", run.stdout);
    assert!(!machine.data().exists(), "a refused id writes nothing");
}

/// Installed for another add-on, doctor names the fix for `@name` as a command, quoted so that it works as
/// shown in a POSIX shell and in PowerShell; run by `sh`, it works.
#[test]
fn doctors_fix_for_an_id_without_a_name_works_as_shown() {
    let machine = Machine::new();
    assert_ok(&machine.run(&["install", "--browser", "firefox"]), "install for the demo add-on");
    let doctor = machine.doctor(&["--browser", "firefox", "--firefox-extension-id", "@name"]);
    assert_eq!(doctor.code, 1, "{}", doctor.stdout);
    let line = doctor.failures().into_iter().find(|line| line.contains("@name is not in allowed_extensions")).unwrap();
    let command = line.split('`').nth(1).unwrap();
    assert!(command.ends_with(" --firefox-extension-id '@name'"), "{line}");
    let bin = machine.installed_binary().parent().unwrap().to_owned();
    let run = machine
        .command("sh")
        .args(["-c", command])
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .output()
        .unwrap();
    assert!(run.status.success(), "{command}: {}", String::from_utf8_lossy(&run.stderr));
    assert_ok(&machine.doctor(&["--browser", "firefox", "--firefox-extension-id", "@name"]), "doctor after the fix");
}

/// The host Firefox starts for `@name` serves it: a write is listed, under the origin
/// `moz-extension:@name`, and a launch with an id Firefox would refuse starts nothing.
#[test]
fn the_host_serves_an_id_without_a_name() {
    let machine = Machine::new();
    let manifest = "/usr/lib/mozilla/native-messaging-hosts/com.browserx.llm_cache.json";
    let mut host = machine
        .command(common::binary())
        .args([manifest, "@name"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let requests = [
        r#"{"id":1,"op":"write","sessionId":"conv_a","data":1,"description":"d"}"#,
        r#"{"id":2,"op":"list","sessionId":"conv_a"}"#,
    ];
    let mut stdin = host.stdin.take().unwrap();
    for request in requests {
        stdin.write_all(&common::frame(request.as_bytes())).unwrap();
    }
    drop(stdin);
    let output = host.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let replies: Vec<Value> = common::split_frames(&output.stdout);
    assert_eq!(replies[0]["ok"], true, "{}", replies[0]);
    assert_eq!(replies[1]["result"]["items"].as_array().map(Vec::len), Some(1), "{}", replies[1]);

    let sessions = machine.run(&["sessions", "--json"]);
    assert_eq!(sessions.code, 0, "{}", sessions.stdout);
    assert!(sessions.stdout.contains("\"moz-extension:@name\""), "{}", sessions.stdout);

    for id in ["name@", "{not-a-guid}"] {
        let output = machine.command(common::binary()).args([manifest, id]).stdin(Stdio::null()).output().unwrap();
        assert_eq!(output.status.code(), Some(2), "{id}");
        assert!(String::from_utf8_lossy(&output.stderr).contains(RULE), "{id}");
    }
}

#[test]
fn install_sh_takes_every_firefox_id() {
    assert!(
        !Path::new("/usr/bin/cargo").exists() && !Path::new("/bin/cargo").exists(),
        "the test needs cargo off /usr/bin"
    );
    for id in GOOD {
        let (code, stderr) = script_without_cargo("install.sh", &["--firefox-extension-id", id], &[]);
        assert_eq!(code, Some(1), "{id}: {stderr}");
        assert!(stderr.contains("cargo is missing"), "{id}: {stderr}");
    }
    for id in BAD {
        let (code, stderr) = script_without_cargo("install.sh", &["--firefox-extension-id", id], &[]);
        assert_eq!(code, Some(2), "{id}: {stderr}");
        assert!(stderr.contains(RULE), "{id}: {stderr}");
    }
}

#[test]
fn release_sh_checks_firefox_ids_before_building() {
    for id in GOOD {
        let (code, stderr) = script_without_cargo("scripts/release.sh", &["--firefox-extension-id", id], &[]);
        assert!(stderr.contains("cargo is missing"), "{id}: {code:?} {stderr}");
    }
    let (_, stderr) =
        script_without_cargo("scripts/release.sh", &[], &[("RELEASE_FIREFOX_EXTENSION_IDS", "@name,a@b")]);
    assert!(stderr.contains("cargo is missing"), "{stderr}");
    for id in BAD {
        let (code, stderr) = script_without_cargo("scripts/release.sh", &["--firefox-extension-id", id], &[]);
        assert_eq!(code, Some(2), "{id}: {stderr}");
        assert!(stderr.contains("is not a Firefox add-on id: ") && stderr.contains(RULE), "{id}: {stderr}");
    }
}
