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
