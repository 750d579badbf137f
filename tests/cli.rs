//! The command line outside host mode: help, version, and a clear refusal of anything else.

mod common;

use std::process::Command;

fn run(args: &[&str]) -> (i32, String, String) {
    let output = Command::new(common::binary()).args(args).output().unwrap();
    let text = |bytes: Vec<u8>| String::from_utf8(bytes).unwrap();
    (output.status.code().unwrap(), text(output.stdout), text(output.stderr))
}

#[test]
fn help_and_version() {
    let (code, stdout, _) = run(&["--help"]);
    assert_eq!(code, 0);
    assert!(stdout.contains("chrome-extension://<extension id>/"), "{stdout}");
    let (code, stdout, _) = run(&["--version"]);
    assert_eq!((code, stdout), (0, format!("llm-cache-host {}\n", env!("CARGO_PKG_VERSION"))));
}

#[test]
fn unknown_arguments_are_refused_on_stderr() {
    for args in [&["serve"][..], &["chrome-extension://bad/origin/"]] {
        let (code, stdout, stderr) = run(args);
        assert_eq!(code, 2, "{args:?}");
        assert!(stdout.is_empty(), "{args:?}: nothing on stdout");
        assert!(stderr.contains("Browsers start it themselves"), "{args:?}: {stderr}");
    }
}
