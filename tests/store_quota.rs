//! The store-wide quota as its owner sets it: `install --store-quota` records it in the data
//! directory's settings file, the installed host reads it at every start (so it survives restarts)
//! and refuses writes past it, and `doctor` and `sessions` show the store's use against it.

#![cfg(target_os = "linux")]

mod common;

use std::io::Write;
use std::path::Path;
use std::process::Stdio;

use common::machine::{Machine, assert_ok, read_json};
use serde_json::{Value, json};

/// Sends one request per line to a fresh host started by `binary call`, as a browser starts it, and
/// returns its replies.
fn call(machine: &Machine, binary: &Path, requests: &[Value]) -> Vec<Value> {
    let mut child = machine
        .command(binary)
        .arg("call")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let lines: String = requests.iter().map(|request| format!("{request}\n")).collect();
    child.stdin.take().unwrap().write_all(lines.as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success());
    String::from_utf8(output.stdout).unwrap().lines().map(|line| serde_json::from_str(line).unwrap()).collect()
}

fn write(id: u64, session: &str, bytes: usize) -> Value {
    json!({"id": id, "op": "write", "sessionId": session, "data": "x".repeat(bytes - 2), "description": "d"})
}

#[test]
fn install_records_the_store_quota_and_the_installed_host_keeps_to_it_across_restarts() {
    let machine = Machine::new();
    let run = machine.run(&["install", "--browser", "chromium", "--store-quota", "2KB"]);
    assert_ok(&run, "install --store-quota");
    let settings = machine.data().join("config.json");
    assert!(
        run.stdout.contains(&format!("OK   store quota: 2000 bytes (2.0 KiB), recorded in {}", settings.display())),
        "{}",
        run.stdout
    );
    assert_eq!(read_json(&settings), json!({"storeQuotaBytes": 2000}));
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&settings).unwrap().permissions().mode() & 0o777, 0o600);
    }

    let installed = machine.installed_binary();
    let replies = call(
        &machine,
        &installed,
        &[json!({"id": 1, "op": "hello"}), write(2, "conv_a", 1500), write(3, "conv_b", 600), write(4, "conv_b", 500)],
    );
    assert_eq!(replies[0]["result"]["limits"]["storeQuotaBytes"], 2000);
    assert_eq!(replies[1]["ok"], true);
    let error = &replies[2]["error"];
    assert_eq!(error["code"], "QuotaExceededError");
    assert_eq!(
        error["message"],
        "the cache store holds 1500 bytes in all its sessions; 600 more (data and customMetadata) would pass its store-wide limit of 2000"
    );
    assert_eq!((&error["current"], &error["requested"], &error["limit"]), (&json!(1500), &json!(600), &json!(2000)));
    assert_eq!(replies[3]["ok"], true);

    // A new host (the browser restarted it) reads the same limit and finds the same total.
    let stats = call(&machine, &installed, &[json!({"id": 1, "op": "stats", "sessionId": "conv_a"})]);
    let stats = &stats[0]["result"];
    assert_eq!(
        (&stats["storeTotalSize"], &stats["storeQuotaBytes"], &stats["storeRemainingBytes"]),
        (&json!(2000), &json!(2000), &json!(0))
    );

    // A full store is a warning in doctor, with what to do; the check itself passes.
    let run = machine.doctor(&["--browser", "chromium"]);
    assert_ok(&run, "doctor");
    let line = "WARN store: 2.0 KiB of the store-wide quota of 2.0 KiB used (100%): writes past the quota are refused; \
                end the sessions whose tasks are done (`llm-cache-host sessions`, then `llm-cache-host end <session>`), \
                or raise it: `llm-cache-host config --store-quota <size>` changes it";
    assert!(run.stdout.lines().any(|l| l == line), "{line:?} in:\n{}", run.stdout);
    let run = machine.run(&["sessions"]);
    assert!(run.stdout.ends_with("store: 2.0 KiB of the store-wide quota of 2.0 KiB used (100%)\n"), "{}", run.stdout);

    // Ending a session frees its bytes; doctor's line is then a note.
    assert_ok(&machine.run(&["end", "conv_a"]), "end");
    let run = machine.doctor(&["--browser", "chromium"]);
    assert!(run.stdout.contains("NOTE store: 500 B of the store-wide quota of 2.0 KiB used (25%); "), "{}", run.stdout);

    // Installing again without the option keeps the recorded limit; with it, replaces it.
    assert_ok(&machine.run(&["install", "--browser", "chromium"]), "install");
    assert_eq!(read_json(&settings), json!({"storeQuotaBytes": 2000}));
    assert_ok(&machine.run(&["install", "--browser", "chromium", "--store-quota", "1GiB"]), "install 1GiB");
    let hello = call(&machine, &installed, &[json!({"id": 1, "op": "hello"})]);
    assert_eq!(hello[0]["result"]["limits"]["storeQuotaBytes"], 1u64 << 30);
}

#[test]
fn a_bad_store_quota_is_refused_and_a_broken_settings_file_is_named() {
    let machine = Machine::new();
    for (size, why) in [("lots", "is not a size"), ("0", "from 1 byte"), ("2TiB", "from 1 byte")] {
        let run = machine.run(&["install", "--browser", "chromium", "--store-quota", size]);
        assert_eq!(run.code, 2, "{}", run.stdout);
        assert!(run.stdout.contains(why), "{size}: {}", run.stdout);
    }
    assert!(!machine.data().join("config.json").exists());

    // Without a settings file a host has the default; with a broken one too, and doctor says why.
    let hello = call(&machine, Path::new(common::binary()), &[json!({"id": 1, "op": "hello"})]);
    assert_eq!(hello[0]["result"]["limits"]["storeQuotaBytes"], 2u64 << 30);
    std::fs::create_dir_all(machine.data()).unwrap();
    std::fs::write(machine.data().join("config.json"), r#"{"storeQuotaBytes": "4GB"}"#).unwrap();
    let hello = call(&machine, Path::new(common::binary()), &[json!({"id": 1, "op": "hello"})]);
    assert_eq!(hello[0]["result"]["limits"]["storeQuotaBytes"], 2u64 << 30);
    let run = machine.doctor(&["--browser", "chromium"]);
    let warning = run.stdout.lines().find(|line| line.starts_with("WARN store quota: ")).unwrap_or_default();
    assert!(
        warning.contains("config.json is not a settings file")
            && warning.contains("the host uses the default quota of 2.0 GiB"),
        "{}",
        run.stdout
    );
}

/// A store quota smaller than any item: the store works, so the store check passes, but every write
/// is refused, and doctor warns with the quota and the command that raises it, which does.
#[test]
fn a_quota_below_any_item_is_a_warning_with_how_to_raise_it() {
    let machine = Machine::new();
    assert_ok(&machine.run(&["install", "--browser", "chromium"]), "install");
    std::fs::write(machine.data().join("config.json"), r#"{"storeQuotaBytes": 1}"#).unwrap();
    let run = machine.doctor(&["--browser", "chromium"]);
    assert_ok(&run, "doctor");
    let warning = run.stdout.lines().find(|line| line.starts_with("WARN store: ")).unwrap_or_default();
    assert!(
        warning.starts_with("WARN store: the host refused doctor's small write (the cache store holds 0 bytes")
            && warning.contains("0 B of the store-wide quota of 1 B used (0%), so extensions can't keep anything new"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.ends_with("passed, with 1 warning\n"), "{}", run.stdout);
    let command = warning.split("raise the quota: `").nth(1).and_then(|rest| rest.split('`').next()).unwrap();
    let command = command.replace("<size>", "1GB");
    assert_ok(&machine.shell(&command), &command);
    let run = machine.doctor(&["--browser", "chromium"]);
    assert_ok(&run, "doctor after raising the quota");
    assert!(run.stdout.contains("OK   store: the host wrote, read back and deleted an item"), "{}", run.stdout);
    assert!(run.stdout.contains("NOTE store: 0 B of the store-wide quota of 953.7 MiB used (0%)"), "{}", run.stdout);
}

#[test]
fn a_settings_file_that_is_not_a_regular_file_is_never_opened_for_reading() {
    // A FIFO blocks whoever opens it for reading until a writer comes; nobody writes to this one.
    let machine = Machine::new();
    std::fs::create_dir_all(machine.data()).unwrap();
    let settings = machine.data().join("config.json");
    let made = std::process::Command::new("mkfifo").arg(&settings).status().unwrap();
    assert!(made.success());

    let replies =
        call(&machine, Path::new(common::binary()), &[json!({"id": 1, "op": "hello"}), write(2, "conv_a", 100)]);
    assert_eq!(replies[0]["result"]["limits"]["storeQuotaBytes"], 2u64 << 30);
    assert_eq!(replies[1]["ok"], true);
    let logs = common::logs(&machine.data());
    assert!(
        logs.contains("config.json is not a regular file (it is a FIFO)")
            && logs.contains("using the default store quota"),
        "{logs}"
    );

    let run = machine.doctor(&["--browser", "chromium"]);
    let warning = run.stdout.lines().find(|line| line.starts_with("WARN store quota: ")).unwrap_or_default();
    assert!(
        warning.contains("config.json is not a regular file (it is a FIFO)")
            && warning.contains("the host uses the default quota of 2.0 GiB"),
        "{}",
        run.stdout
    );
    let run = machine.run(&["sessions"]);
    assert_ok(&run, "sessions");
    assert!(
        run.stdout.contains("conv_a") && run.stdout.contains("of the store-wide quota of 2.0 GiB used"),
        "{}",
        run.stdout
    );
    assert!(std::os::unix::fs::FileTypeExt::is_fifo(&std::fs::symlink_metadata(&settings).unwrap().file_type()));
}
