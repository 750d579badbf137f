//! Every `llm-cache-host` command the README and the pages of `docs/` show runs exactly as written, on a
//! fresh machine after install: a temporary HOME whose `~/.local/bin` is on PATH, as on a stock Linux
//! desktop.
//!
//! `./install.sh` itself is stood in for by the debug binary's `install` (the script only builds the
//! release binary first; tests/install.rs checks the script's own behaviour).

#![cfg(target_os = "linux")]

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// The README and the pages of `docs/`, README first, the pages in name order.
fn documents() -> Vec<std::path::PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages: Vec<_> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    pages.sort();
    let mut documents = vec![root.join("README.md")];
    documents.extend(pages);
    documents
}

/// The command lines of the documents' `sh` blocks that run the host's commands, in document order.
fn readme_commands() -> Vec<String> {
    let mut commands = Vec::new();
    for document in documents() {
        commands.extend(commands_in(&std::fs::read_to_string(document).unwrap()));
    }
    commands
}

/// The command lines of one document's `sh` blocks that run the host's commands.
fn commands_in(readme: &str) -> Vec<String> {
    let mut commands = Vec::new();
    let mut in_sh = false;
    let mut pending = String::new();
    for line in readme.lines() {
        match (in_sh, line.trim_start()) {
            (false, "```sh") => in_sh = true,
            (true, "```") => in_sh = false,
            (true, text) => {
                pending.push_str(text.strip_suffix('\\').unwrap_or(text));
                if text.ends_with('\\') {
                    continue;
                }
                let command = std::mem::take(&mut pending);
                if command.contains("llm-cache-host ")
                    && !command.contains("target/release")
                    && !command.starts_with("LLM_CACHE_DIR=")
                {
                    commands.push(command);
                }
            }
            _ => {}
        }
    }
    commands
}

#[test]
fn every_command_the_readme_shows_works_as_typed() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let path = format!("{}:/usr/bin:/bin", home.join(".local/bin").display());
    let shell = |command: &str, stdin: &str| {
        let mut child = Command::new("bash")
            .args(["-c", command])
            .env_clear()
            .env("HOME", &home)
            .env("PATH", &path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // A command that reads no input may have exited already.
        let _ = child.stdin.take().unwrap().write_all(stdin.as_bytes());
        let output = child.wait_with_output().unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
        (output.status.code(), text)
    };
    let install = format!("{} install --browser chromium --browser firefox", common::binary());
    let (code, text) = shell(&install, "");
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("OK   command: llm-cache-host"), "{text}");

    let commands = readme_commands();
    let words: Vec<&str> =
        commands.iter().filter_map(|c| c.split("llm-cache-host ").nth(1)?.split_whitespace().next()).collect();
    for word in ["doctor", "verify", "uninstall", "call", "sessions", "list", "end", "purge"] {
        assert!(words.contains(&word), "neither the README nor docs/ shows `llm-cache-host {word}`: {commands:?}");
    }
    // uninstall last, so that what follows it in the README still has a command to run.
    let (last, first): (Vec<&String>, Vec<&String>) = commands.iter().partition(|c| c.contains("uninstall"));
    for command in first.into_iter().chain(last) {
        // purge asks; the README's reader answers yes.
        let (code, text) = shell(command, "y\n");
        assert_eq!(code, Some(0), "`{command}` failed:\n{text}");
        assert!(!text.contains("command not found"), "`{command}`:\n{text}");
    }
}

/// The README is the page a newcomer reads first, and its length is what keeps it one: what the host is, the two
/// commands, a picture and links. Everything else belongs in `docs/`.
const README_MAX_BYTES: u64 = 16_000;

#[test]
fn the_readme_stays_a_newcomers_page() {
    let readme = Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md");
    let bytes = std::fs::metadata(&readme).unwrap().len();
    assert!(bytes <= README_MAX_BYTES, "README.md is {bytes} bytes, over {README_MAX_BYTES}: move detail to docs/");
}

/// The lines of the document's code blocks of these languages, in order.
fn code_lines<'a>(document: &'a str, languages: &[&str]) -> Vec<&'a str> {
    let mut lines = Vec::new();
    let mut inside = false;
    for line in document.lines() {
        let trimmed = line.trim_start();
        if let Some(language) = trimmed.strip_prefix("```") {
            inside = !inside && languages.contains(&language);
            continue;
        }
        if inside {
            lines.push(line);
        }
    }
    lines
}

/// A shell line without its comment.
fn without_comment(line: &str) -> &str {
    line.split(" #").next().unwrap().trim()
}

#[test]
fn the_readme_opens_with_the_install_and_the_test_command_ci_runs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    // The first code block, right under the title.
    let block = readme.split("```sh\n").nth(1).and_then(|rest| rest.split("```").next()).unwrap();
    assert!(readme.starts_with("# llm-cache-host\n\n```sh\n"), "the README must open with its commands");
    let commands: Vec<&str> = block.lines().map(without_comment).collect();
    assert_eq!(commands.len(), 2, "{block}");
    assert!(commands[0].starts_with("./install.sh"), "{block}");
    assert_eq!(commands[1], "scripts/test.sh", "{block}");
    // CI runs that same command and nothing else, so that a green CI means the README's command passes.
    let ci = std::fs::read_to_string(root.join(".ci/run")).unwrap();
    let ci_commands: Vec<&str> =
        ci.lines().map(without_comment).filter(|line| !line.is_empty() && !line.starts_with('#')).collect();
    assert_eq!(ci_commands, ["set -euo pipefail", "cd \"$(dirname \"$0\")/..\"", "exec scripts/test.sh"], "{ci}");
    // The quick command for day-to-day work is where a contributor looks for it.
    let development = std::fs::read_to_string(root.join("docs/development.md")).unwrap();
    let shown: Vec<&str> = code_lines(&development, &["sh"]).into_iter().map(without_comment).collect();
    assert!(shown.contains(&"scripts/test.sh --quick"), "docs/development.md shows no `scripts/test.sh --quick`");
}

/// The repository's scripts that the documents' shell blocks run, as (document, script, its first argument).
fn scripts_shown() -> Vec<(String, String, Option<String>)> {
    let mut shown = Vec::new();
    for document in documents() {
        let text = std::fs::read_to_string(&document).unwrap();
        let name = document.file_name().unwrap().to_string_lossy().into_owned();
        for line in code_lines(&text, &["sh", "bash"]) {
            for command in without_comment(line).split(['&', ';', '|', '(', ')']) {
                let mut words = command.split_whitespace();
                let Some(first) = words.next() else { continue };
                if first.starts_with("scripts/") || first == "./install.sh" || first == ".ci/run" {
                    shown.push((name.clone(), first.to_owned(), words.next().map(str::to_owned)));
                }
            }
        }
    }
    shown
}

#[test]
fn every_script_the_documents_run_is_there_and_takes_the_command_shown() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let shown = scripts_shown();
    for script in ["scripts/test.sh", "scripts/release.sh", "scripts/cross/macos.sh"] {
        assert!(shown.iter().any(|(_, s, _)| s == script), "no document runs {script}: {shown:?}");
    }
    for (document, script, argument) in &shown {
        let metadata = std::fs::metadata(root.join(script));
        let metadata = metadata.unwrap_or_else(|_| panic!("{document} runs {script}, which isn't there"));
        let mode = std::os::unix::fs::PermissionsExt::mode(&metadata.permissions());
        assert!(mode & 0o111 != 0, "{document} runs {script}, which is not executable");
        if script.starts_with("scripts/cross/") {
            let argument = argument.as_deref().unwrap_or("");
            assert!(["setup", "build", "check"].contains(&argument), "{document}: {script} {argument}");
        }
    }
}

#[test]
fn every_cross_target_has_the_same_three_commands() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut targets: Vec<String> = std::fs::read_dir(root.join("scripts/cross"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".sh") && name != "target.sh")
        .collect();
    targets.sort();
    assert_eq!(targets, ["linux-arm64.sh", "macos.sh", "windows.sh"]);
    for target in &targets {
        let script = format!("scripts/cross/{target}");
        let help = Command::new(root.join(&script)).arg("--help").output().unwrap();
        let text = String::from_utf8_lossy(&help.stdout);
        assert_eq!(help.status.code(), Some(0), "{script} --help: {text}");
        for usage in ["setup", "build --out DIR [--host-name NAME]", "check"] {
            assert!(text.contains(&format!("{script} {usage}\n")), "{script} --help doesn't show `{usage}`:\n{text}");
        }
        // A mistyped command is refused before anything is set up or built.
        let wrong = Command::new(root.join(&script)).arg("biuld").output().unwrap();
        assert_eq!(wrong.status.code(), Some(2), "{script} biuld");
        let wrong = Command::new(root.join(&script)).args(["build", "--out"]).output().unwrap();
        assert_eq!(wrong.status.code(), Some(2), "{script} build --out");
        assert!(String::from_utf8_lossy(&wrong.stderr).contains("--out needs a value"), "{script} build --out");
    }
}
