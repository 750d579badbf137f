//! The command line a person types: one definition (clap's), from which the parser, every `--help`
//! and every wrong-argument message are made.
//!
//! Host mode never reaches clap: [`crate::launch`] sends a browser's launch line (Chrome's
//! `chrome-extension://<id>/`, Firefox's manifest path and add-on id) to the host, and only the words
//! [`is_command`] knows here. The command is built at run time from the program's name, so that the
//! help of a binary built for another host can name its own command.
//!
//! # Layout
//! - this file: the top-level command (its help says how browsers start the host, the environment
//!   it reads), the dispatch, and the exit codes;
//! - `flags.rs`: the flags several commands share, each defined once;
//! - one file per command: `install.rs`, `uninstall.rs`, `doctor.rs`, `config.rs`, `manifest.rs`, `verify.rs`,
//!   `sessions.rs`, `list.rs`, `show.rs`, `end.rs`, `purge.rs`, `call.rs`: its flags, its help, and
//!   what it runs;
//! - [`welcome`]: no arguments at all: what the program is, and the offer to run `install`.

use std::io::Write;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::host_name::HostName;
use crate::install::Failure;

mod call;
mod config;
mod doctor;
mod end;
mod flags;
mod install;
mod list;
mod manifest;
mod purge;
mod sessions;
mod show;
mod uninstall;
mod verify;
pub mod welcome;

/// Exit code when a command ran and found or hit a problem.
const FAILED: u8 = 1;

/// Exit code for arguments that make no sense (clap's, and the launch line's).
pub const USAGE_ERROR: u8 = 2;

/// The words a person types, each a command of its own file.
#[derive(Debug, Parser)]
#[command(version, disable_help_subcommand = true)]
struct Cli {
    // The command typed. (A `///` here would become help text.)
    #[command(subcommand)]
    command: Command,
}

// Each command's flags and help are its file's `Args`, whose doc comment is its help.
#[derive(Debug, Subcommand)]
enum Command {
    Install(install::Args),
    Uninstall(uninstall::Args),
    Doctor(doctor::Args),
    Config(config::Args),
    Manifest(manifest::Args),
    Verify(verify::Args),
    Sessions(sessions::Args),
    List(list::Args),
    Show(show::Args),
    End(end::Args),
    Purge(purge::Args),
    Call(call::Args),
}

/// The whole command line of `host`'s binary: every help names the host's own command and folders,
/// so that a vendor's binary never shows the default host's.
pub fn command(host: &HostName) -> clap::Command {
    let name = host.command();
    let folder = host.folder();
    Cli::command()
        .name(name.clone())
        .bin_name(name.to_owned())
        .about(format!("{name}: the native messaging host behind the llm_cache StorageTool."))
        .before_help(format!(
            "Browsers start it themselves:
  {name} chrome-extension://<extension id>/ [--parent-window=<n>]   (Chrome, Chromium, Edge, Brave, Vivaldi)
  {name} <manifest path> <addon id>                                  (Firefox)"
        ))
        .after_help(format!(
            "Run `{name} <command> --help` for a command's flags; sessions, list, show, end and purge take --json.

Other uses:
  {name}              what this is and how to install it; in a terminal, offers to install it now
                              (with no terminal it prints that to stderr and exits {USAGE_ERROR})

Environment:
  LLM_CACHE_DIR   data directory (default: the OS's per-user data dir + /{folder}; for a host
                  installed under another name with install --host-name NAME, + /NAME)
  LLM_CACHE_LOG   log level or filter for <data dir>/logs (default: info)"
        ))
        .help_template("{about-with-newline}\n{before-help}{usage-heading} {usage}\n\n{all-args}{after-help}")
        .mut_subcommand("install", |install| install.after_help(install::locations(host)))
        .mut_subcommand("call", |call| call.after_help(call::example(&name)))
}

/// The top-level help of `host`'s binary, for `--help` and after a launch line that makes no sense.
pub fn help(host: &HostName) -> String {
    command(host).render_help().to_string()
}

/// Whether `word` is one of the commands (never a browser's launch line: those start with an origin
/// or a manifest's path).
pub fn is_command(word: &str) -> bool {
    Cli::command().find_subcommand(word).is_some()
}

/// Runs a command of `host`'s binary; `args` are the arguments after the program's name, starting
/// with the command.
pub fn run(host: &HostName, args: &[String]) -> ExitCode {
    let matches = command(host).try_get_matches_from(std::iter::once(host.command()).chain(args.iter().cloned()));
    let cli = match matches.and_then(|matches| Cli::from_arg_matches(&matches)) {
        Ok(cli) => cli,
        Err(error) => {
            // --help prints to stdout and succeeds; mistakes print to stderr and exit 2.
            let _ = error.print();
            return ExitCode::from(error.exit_code() as u8);
        }
    };
    let mut stdout = std::io::stdout().lock();
    let result = match cli.command {
        Command::Install(args) => install::run(args, &mut stdout),
        Command::Uninstall(args) => uninstall::run(args, &mut stdout),
        Command::Doctor(args) => doctor::run(args, &mut stdout),
        Command::Config(args) => config::run(args, &mut stdout),
        Command::Manifest(args) => manifest::run(args, &mut stdout),
        Command::Verify(args) => verify::run(args, &mut stdout),
        Command::Sessions(args) => sessions::run(args, &mut stdout),
        Command::List(args) => list::run(args, &mut stdout),
        Command::Show(args) => show::run(args, &mut stdout),
        Command::End(args) => end::run(args, &mut stdout),
        Command::Purge(args) => purge::run(args, &mut std::io::stdin().lock(), &mut stdout),
        Command::Call(args) => call::run(args, &mut std::io::stdin().lock(), &mut stdout, &mut std::io::stderr()),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(FAILED),
        Err(failure) => {
            let _ = writeln!(stdout, "FAIL {failure}");
            ExitCode::from(FAILED)
        }
    }
}

/// What a command returns: whether it did all it was asked (`false`: exit 1 with what it printed), or
/// why it couldn't.
pub type Outcome = Result<bool, Failure>;

#[cfg(test)]
mod tests {
    use super::*;

    /// Parses `words` (after the program's name) as the command line does.
    pub(super) fn parse(words: &[&str]) -> Result<Command, clap::Error> {
        let matches = command(&HostName::default_host())
            .try_get_matches_from(std::iter::once("llm-cache-host").chain(words.iter().copied()))?;
        Cli::from_arg_matches(&matches).map(|cli| cli.command)
    }

    #[test]
    fn the_command_line_is_consistent() {
        command(&HostName::default_host()).debug_assert();
    }

    #[test]
    fn every_command_is_a_word_and_no_launch_line_is() {
        for word in [
            "install",
            "uninstall",
            "doctor",
            "config",
            "manifest",
            "verify",
            "sessions",
            "list",
            "show",
            "end",
            "purge",
        ] {
            assert!(is_command(word), "{word}");
        }
        assert!(is_command("call"));
        for word in ["help", "serve", "chrome-extension://abc/", "x.json", "--help", ""] {
            assert!(!is_command(word), "{word}");
        }
    }

    #[test]
    fn the_help_says_how_browsers_start_it_and_names_every_command() {
        let help = help(&HostName::default_host());
        assert!(help.starts_with("llm-cache-host: the native messaging host"), "{help}");
        assert!(help.contains("Browsers start it themselves"), "{help}");
        assert!(help.contains("llm-cache-host chrome-extension://<extension id>/"), "{help}");
        for sub in command(&HostName::default_host()).get_subcommands() {
            assert!(help.contains(&format!("\n  {} ", sub.get_name())), "{} in {help}", sub.get_name());
        }
        assert!(help.contains("LLM_CACHE_DIR") && help.contains("LLM_CACHE_LOG"), "{help}");
        let other = super::help(&HostName::parse("com.example.mail_cache").unwrap());
        assert!(
            other.contains("com.example.mail-cache chrome-extension://") && !other.contains("llm-cache-host chrome"),
            "{other}"
        );
    }
}
