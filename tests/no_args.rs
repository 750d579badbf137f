//! The binary started with no arguments, as a person who downloaded it would: with no terminal it
//! explains itself on stderr only and exits 2; in a terminal (a pseudo-terminal from util-linux's
//! `script`) it explains itself, asks, and on "y" and an extension id installs itself into a temporary
//! home, exactly as `install` does.

#![cfg(target_os = "linux")]

mod common;

use std::io::Write;
use std::path::Path;
use std::process::Stdio;

use common::machine::{Machine, assert_ok, read_json};
use serde_json::json;

/// What the explanation always says: the command that installs, and where the rest is.
fn assert_explains(text: &str, program: &str) {
    assert!(text.contains("native messaging host behind the llm_cache StorageTool"), "{text}");
    assert!(text.contains(&format!("\n  {program} install --extension-id <id>\n")), "{text}");
    assert!(text.contains(&format!("`{program} --help`")), "{text}");
}

#[test]
fn without_a_terminal_it_explains_on_stderr_and_exits_2() {
    let machine = Machine::new();
    let before = machine.tree();
    for stdin in [Stdio::null(), Stdio::piped()] {
        let output = machine.command(common::binary()).stdin(stdin).output().unwrap();
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert!(output.stdout.is_empty(), "nothing on stdout, which a program may read as frames");
        assert_explains(&stderr, common::binary());
        assert!(stderr.contains("no terminal to ask in, so nothing was installed; exit code 2"), "{stderr}");
    }

    // A terminal on stdin but not on stdout is no terminal to ask in either.
    let err = machine.tmp.path().join("err");
    let out = machine.tmp.path().join("out");
    let line = format!("{} >{} 2>{}", quoted(common::binary()), quoted(&out), quoted(&err));
    let (code, _) = in_terminal(&machine, &line, "");
    assert_eq!(code, 2);
    assert_eq!(std::fs::read(&out).unwrap(), b"", "nothing on stdout");
    assert_explains(&std::fs::read_to_string(&err).unwrap(), common::binary());
    std::fs::remove_file(&out).unwrap();
    std::fs::remove_file(&err).unwrap();
    assert_eq!(machine.tree(), before, "nothing is written");
}

#[test]
fn in_a_terminal_anything_but_yes_installs_nothing() {
    let machine = Machine::new();
    let before = machine.tree();
    for typed in ["n\n", "\n", "", "whatever\n", "y\n"] {
        let (code, shown) = in_terminal(&machine, &quoted(common::binary()), typed);
        assert_eq!(code, 0, "{typed:?}: {shown}");
        assert_explains(&shown, common::binary());
        assert!(shown.contains("Install it now for "), "{shown}");
        assert!(shown.ends_with("Nothing installed.\n"), "{typed:?}: {shown}");
        assert_eq!(machine.tree(), before, "{typed:?}: nothing is written");
    }
}

#[test]
fn in_a_terminal_yes_and_an_id_install() {
    let machine = Machine::new();
    let id = "abcdefghijklmnopabcdefghijklmnop";
    // A wrong id is explained and asked again; Enter at the Firefox add-on's prompt, if Firefox is among
    // the browsers (else that line is never read), registers no add-on: not even the demo's.
    let (code, shown) = in_terminal(&machine, &quoted(common::binary()), &format!("y\nnot-an-id\n{id}\n\n"));
    assert_eq!(code, 0, "{shown}");
    assert!(shown.contains("\"not-an-id\" is not an id like pahabgfbcdcnaidcniaebibdihehiphn; try again"), "{shown}");
    assert!(shown.contains("OK   install record: "), "install's own report: {shown}");

    // What install writes: the binary's copy, and a manifest for each Chromium-family browser the
    // question named, pointing at the copy and allowing the id given; none for Firefox.
    let binary = machine.installed_binary();
    assert_eq!(std::fs::read(&binary).unwrap(), std::fs::read(common::binary()).unwrap(), "the binary is copied");
    let record = read_json(&machine.data().join("install.json"));
    assert_eq!(record["binary"], json!(binary));
    assert_eq!((&record["extensionIds"], &record["firefoxExtensionIds"]), (&json!([id]), &json!([])));
    let question = shown.lines().find(|line| line.starts_with("Install it now for ")).unwrap();
    let entries = record["entries"].as_array().unwrap();
    assert!(!entries.is_empty(), "{record}");
    for entry in entries {
        let label = entry["label"].as_str().unwrap();
        assert!(question.contains(label), "{label} in {question:?}");
        assert_eq!(entry["family"], "chromium", "{record}");
        let manifest = read_json(Path::new(entry["location"]["file"]["manifest"].as_str().unwrap()));
        assert_eq!((&manifest["name"], &manifest["path"]), (&json!("com.browserx.llm_cache"), &json!(binary)));
        assert_eq!(manifest["allowed_origins"], json!([format!("chrome-extension://{id}/")]));
    }
    assert!(!machine.firefox_manifest().exists(), "Enter registers no add-on");
    if Path::new("/usr/bin/chromium").exists() {
        assert_eq!(read_json(&machine.chromium_manifest())["path"], json!(binary), "Chromium is installed here");
    }

    // And the host it registered answers, as doctor checks: plain doctor, with the id installed and no other.
    let root = machine.policy_root();
    let doctor = machine.run(&["doctor", "--policy-root", root.to_str().unwrap()]);
    assert_ok(&doctor, "doctor");
    assert!(
        doctor.stdout.contains(id) && !doctor.stdout.contains("pahabgfbcdcnaidcniaebibdihehiphn"),
        "{}",
        doctor.stdout
    );
}

/// With a host installed, the binary says for which browsers and extensions, and how to check it;
/// Enter at every prompt registers nothing. With a system-wide install it offers nothing: an install
/// of the person's own would hide it.
#[test]
fn in_a_terminal_an_install_is_described_and_enter_adds_nothing() {
    let machine = Machine::new();
    let id = "abcdefghijklmnopabcdefghijklmnop";
    assert_ok(&machine.run(&["install", "--browser", "chromium", "--extension-id", id]), "install");
    let before = machine.tree();
    for typed in ["\n", "y\n\n\n"] {
        let (code, shown) = in_terminal(&machine, &quoted(common::binary()), typed);
        assert_eq!(code, 0, "{shown}");
        assert!(shown.contains(&format!("\n  chromium (for you): extension {id}\n")), "{shown}");
        let check = format!("\n`{} doctor` checks each step a browser takes to start it.\n", common::binary());
        assert!(shown.contains(&check), "{shown}");
        assert!(!shown.contains("To install it"), "{shown}");
        assert!(shown.contains("Allow another extension too, for "), "{shown}");
        assert!(shown.ends_with("Nothing installed.\n"), "{typed:?}: {shown}");
        assert_eq!(machine.tree(), before, "{typed:?}: nothing is written");
    }

    // A system-wide install (a package's manifest, under the test's system root): described, nothing offered.
    let root = machine.tmp.path().join("system");
    let dir = root.join("etc/chromium/native-messaging-hosts");
    std::fs::create_dir_all(&dir).unwrap();
    let manifest =
        machine.run(&["manifest", "--browser", "chromium", "--path", common::binary(), "--extension-id", id]);
    std::fs::write(dir.join(common::machine::MANIFEST), manifest.stdout).unwrap();
    let line = format!("LLM_CACHE_SYSTEM_ROOT={} {}", quoted(&root), quoted(common::binary()));
    let (code, shown) = in_terminal(&machine, &line, "y\n");
    assert_eq!(code, 0, "{shown}");
    assert!(shown.contains(&format!("\n  chromium, brave, vivaldi (for every user): extension {id}\n")), "{shown}");
    assert!(shown.contains("It is installed for every user, so nothing is offered here"), "{shown}");
    assert!(!shown.contains("[y/N]"), "{shown}");
}

/// Firefox's whole rule at the prompt: an id without a name before `@` is taken, after one Firefox
/// would refuse is explained and asked again, and install allows it.
#[test]
fn in_a_terminal_a_firefox_id_without_a_name_installs() {
    let machine = Machine::new();
    let typed = "y\n\n{not-a-guid}\n@name\n";
    let (code, shown) = in_terminal(&machine, &quoted(common::binary()), typed);
    assert_eq!(code, 0, "{shown}");
    let question = shown.lines().find(|line| line.starts_with("Install it now for ")).unwrap();
    assert!(question.contains("firefox"), "Firefox is on this machine, so its add-on id is asked for: {shown}");
    assert!(shown.contains("\"{not-a-guid}\" is not an id like llm-cache-demo@browserx.dev; try again"), "{shown}");
    assert!(shown.contains("OK   install record: "), "install's own report: {shown}");
    assert_eq!(read_json(&machine.firefox_manifest())["allowed_extensions"], json!(["@name"]));
}

/// Runs the shell command `line` in a pseudo-terminal (util-linux `script`) in the machine's
/// environment, typing `typed` into it; returns the exit code and what the terminal showed, with the
/// terminal's line ends made plain and the typed echo included.
fn in_terminal(machine: &Machine, line: &str, typed: &str) -> (i32, String) {
    let mut child = machine
        .command("script")
        .args(["--quiet", "--return", "--command", line, "/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("util-linux `script` makes the pseudo-terminal: apt-get install util-linux");
    let mut stdin = child.stdin.take().unwrap();
    let typed = typed.to_owned();
    // From its own thread, so that a full pipe can't hold up reading the output.
    let feeder = std::thread::spawn(move || stdin.write_all(typed.as_bytes()));
    let output = child.wait_with_output().unwrap();
    feeder.join().unwrap().unwrap();
    let shown = String::from_utf8(output.stdout).unwrap().replace("\r\n", "\n");
    (output.status.code().unwrap(), shown)
}

/// `path` as one word for `sh -c`.
fn quoted(path: impl AsRef<Path>) -> String {
    format!("'{}'", path.as_ref().display().to_string().replace('\'', r"'\''"))
}
