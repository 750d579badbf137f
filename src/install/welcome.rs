//! `llm-cache-host` with no arguments: the binary explains itself, and offers to install itself.
//!
//! A person who downloads the binary and runs it gets what a browser never asks for: what the
//! program is, the command that installs it, and (at a terminal) the offer to run that command now.
//! Browsers always pass arguments (see [`crate::launch`]), so this never meets one; and without a
//! terminal the caller prints [`explanation`] to stderr, never to stdout, which some program may be
//! reading as frames.

use std::io::{self, BufRead, Write};
use std::process::ExitCode;

use super::browsers::{Build, Family, Platform, Scope};
use super::manifest::{
    DEFAULT_EXTENSION_ID, DEFAULT_FIREFOX_EXTENSION_ID, is_chrome_extension_id, is_firefox_extension_id,
};
use super::{Selection, found_browsers, layout, selected_targets};
use crate::terminal::escape_controls;

/// The exit code when started with no arguments and no terminal to ask in: the usage error's code,
/// as for any other arguments that don't start the host.
pub const NO_TERMINAL: u8 = 2;

/// What the person chose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    /// Run `install` with these arguments (starting with the word `install`).
    Install(Vec<String>),
    /// Leave everything as it is.
    Leave,
}

/// What the program is and how to install it, for a person; `program` is the command as they typed it.
pub fn explanation(program: &str) -> String {
    let program = shell_word(program);
    format!(
        "\
llm-cache-host is the native messaging host behind the llm_cache StorageTool: a browser extension keeps
large results in a local cache through it, and the browser starts it whenever the extension connects.
You only run it yourself to set it up, or to look at the cache.

To install it (copy this binary to a stable place and register it with your browsers):
  {program} install --extension-id <id>
where <id> is your extension's id as chrome://extensions shows it (32 letters from a to p).
`{program} --help` lists every command and option.
"
    )
}

/// The browsers a plain `install` would register with, as a phrase ("chromium and firefox"), and
/// whether Firefox is among them (then its add-on's id is asked for too).
pub fn install_targets(platform: &Platform) -> (String, bool) {
    let selection = default_selection(DEFAULT_EXTENSION_ID.into(), DEFAULT_FIREFOX_EXTENSION_ID.into());
    let found = found_browsers(platform);
    let targets = layout::install_base(Scope::User, platform)
        .map_err(super::Failure::from)
        .and_then(|base| selected_targets(&selection, platform, &base, &found));
    let Ok(targets) = targets else {
        // Install will say why it can't; the question needn't.
        return ("your browsers".into(), true);
    };
    let firefox = targets.iter().any(|target| target.family == Family::Firefox);
    if !found.iter().any(|(_, builds)| builds.iter().any(Build::can_start_hosts)) {
        // Nothing found: install registers with every browser, so that one installed later works.
        return ("every browser it knows (none was found installed)".into(), firefox);
    }
    let labels: Vec<&str> = targets.iter().map(|target| target.label.as_str()).collect();
    let phrase = match labels.split_last() {
        Some((last, [])) => (*last).to_owned(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => "no browser".into(),
    };
    (phrase, firefox)
}

/// The selection a plain `install --extension-id <id>` makes.
fn default_selection(extension_id: String, firefox_extension_id: String) -> Selection {
    Selection {
        browsers: Vec::new(),
        user_data_dirs: Vec::new(),
        extension_ids: vec![extension_id],
        firefox_extension_ids: vec![firefox_extension_id],
        scope: Scope::User,
    }
}

/// Asks whether to install for `browsers` and, if so, for the extension's id (and the Firefox
/// add-on's, when `firefox` says Firefox is among them). An empty answer to an id takes the demo
/// extension's; a wrong one is explained and asked again; the end of input leaves everything as it is.
///
/// # Errors
/// Whatever reading `input` or writing `out` returns.
pub fn ask(browsers: &str, firefox: bool, input: &mut dyn BufRead, out: &mut dyn Write) -> io::Result<Choice> {
    write!(out, "Install it now for {browsers}? [y/N] ")?;
    out.flush()?;
    let Some(answer) = read_answer(input)? else { return Ok(Choice::Leave) };
    if !matches!(answer.to_ascii_lowercase().as_str(), "y" | "yes") {
        return Ok(Choice::Leave);
    }
    let chrome = "Your extension's id, from chrome://extensions";
    let Some(id) = ask_id(chrome, DEFAULT_EXTENSION_ID, is_chrome_extension_id, input, out)? else {
        return Ok(Choice::Leave);
    };
    let mut args = vec!["install".to_owned(), "--extension-id".to_owned(), id];
    if firefox {
        let prompt = "Your Firefox add-on's id, from about:debugging";
        let Some(id) = ask_id(prompt, DEFAULT_FIREFOX_EXTENSION_ID, is_firefox_extension_id, input, out)? else {
            return Ok(Choice::Leave);
        };
        args.extend(["--firefox-extension-id".to_owned(), id]);
    }
    Ok(Choice::Install(args))
}

/// Asks for an id until one is valid; `None` at the end of input.
fn ask_id(
    prompt: &str,
    demo: &str,
    valid: fn(&str) -> bool,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
) -> io::Result<Option<String>> {
    loop {
        write!(out, "{prompt} (Enter for the demo extension's, {demo}): ")?;
        out.flush()?;
        let Some(answer) = read_answer(input)? else { return Ok(None) };
        if answer.is_empty() {
            return Ok(Some(demo.to_owned()));
        }
        if valid(&answer) {
            return Ok(Some(answer));
        }
        writeln!(
            out,
            "\"{}\" is not an id like {demo}; try again, or press Ctrl-D to stop without installing.",
            escape_controls(&answer)
        )?;
    }
}

/// One line of input, trimmed; `None` at the end of input.
fn read_answer(input: &mut dyn BufRead) -> io::Result<Option<String>> {
    let mut line = String::new();
    if input.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    Ok(Some(line.trim().to_owned()))
}

/// Runs the whole exchange at a terminal: the explanation, the question and, if the answer is yes,
/// the `install` command itself.
pub fn run(program: &str) -> ExitCode {
    let platform = Platform::current();
    let (browsers, firefox) = install_targets(&platform);
    let mut out = io::stdout().lock();
    let choice = writeln!(out, "{}", explanation(program))
        .and_then(|()| ask(&browsers, firefox, &mut io::stdin().lock(), &mut out));
    match choice {
        Ok(Choice::Install(args)) => {
            drop(out);
            super::cli::run(&args)
        }
        // A closed terminal or a "no" leaves the instructions above as the answer.
        Ok(Choice::Leave) | Err(_) => {
            let _ = writeln!(out, "\nNothing installed.");
            ExitCode::SUCCESS
        }
    }
}

/// The command as typed, quoted for a shell when it needs quoting, with control characters escaped.
pub fn shell_word(program: &str) -> String {
    let program = escape_controls(program);
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./+,:@%=".contains(c);
    if program.chars().all(plain) || (cfg!(windows) && !program.contains([' ', '"'])) {
        program.into_owned()
    } else if cfg!(windows) {
        format!("\"{program}\"")
    } else {
        format!("'{}'", program.replace('\'', r"'\''"))
    }
}

/// The command a person typed to start this program: `argv[0]` when it is there and UTF-8, else the
/// binary's file name.
pub fn program_name(argv0: Option<&str>) -> String {
    match argv0 {
        Some(typed) if !typed.is_empty() => typed.to_owned(),
        _ => "llm-cache-host".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exchange(browsers: &str, firefox: bool, typed: &str) -> (Choice, String) {
        let mut out = Vec::new();
        let choice = ask(browsers, firefox, &mut typed.as_bytes(), &mut out).unwrap();
        (choice, String::from_utf8(out).unwrap())
    }

    fn install(words: &[&str]) -> Choice {
        Choice::Install(words.iter().map(|w| w.to_string()).collect())
    }

    #[test]
    fn anything_but_yes_leaves_things_alone() {
        for typed in ["", "\n", "n\n", "no\n", "yes please\n", "q"] {
            let (choice, said) = exchange("chromium", false, typed);
            assert_eq!(choice, Choice::Leave, "{typed:?}");
            assert_eq!(said, "Install it now for chromium? [y/N] ");
        }
        assert_eq!(exchange("chromium", false, "y\n").0, Choice::Leave, "no id: the input ended");
    }

    #[test]
    fn yes_asks_for_the_ids() {
        let id = "abcdefghijklmnopabcdefghijklmnop";
        assert_eq!(exchange("chromium", false, &format!("y\n{id}\n")).0, install(&["install", "--extension-id", id]));
        assert_eq!(
            exchange("chromium", false, " Y \n\n").0,
            install(&["install", "--extension-id", DEFAULT_EXTENSION_ID])
        );
        let (choice, said) = exchange("chromium and firefox", true, &format!("yes\nnot an id\n{id}\nme@example.org\n"));
        assert_eq!(choice, install(&["install", "--extension-id", id, "--firefox-extension-id", "me@example.org"]));
        // Firefox's whole rule: the name before `@` is optional, and a GUID is braced.
        for addon in ["@addon-example", "{4c2b7a4e-1d5e-4e8f-9a3b-2f1c0d9e8b7a}"] {
            let (choice, said) = exchange("firefox", true, &format!("y\n\n{{not-a-guid}}\nname@\n{addon}\n"));
            let expected =
                install(&["install", "--extension-id", DEFAULT_EXTENSION_ID, "--firefox-extension-id", addon]);
            assert_eq!(choice, expected, "{said}");
            assert!(said.contains("\"{not-a-guid}\" is not an id like llm-cache-demo@browserx.dev"), "{said}");
            assert!(said.contains("\"name@\" is not an id like"), "{said}");
        }
        assert!(said.contains("\"not an id\" is not an id like pahabgfbcdcnaidcniaebibdihehiphn; try again"), "{said}");
        assert!(said.contains("Firefox add-on's id"), "{said}");
        assert_eq!(
            exchange("firefox", true, "y\n\n\n").0,
            install(&[
                "install",
                "--extension-id",
                DEFAULT_EXTENSION_ID,
                "--firefox-extension-id",
                DEFAULT_FIREFOX_EXTENSION_ID
            ])
        );
        let (_, said) = exchange("chromium", false, "y\n\u{1b}]0;x\u{7}\n");
        assert!(said.contains("\"\\u001b]0;x\\u0007\" is not an id"), "{said}");
    }

    #[test]
    fn the_explanation_names_the_command() {
        let text = explanation("./llm-cache-host");
        assert!(text.contains("  ./llm-cache-host install --extension-id <id>\n"), "{text}");
        assert!(text.contains("`./llm-cache-host --help`"), "{text}");
        #[cfg(unix)]
        {
            assert_eq!(shell_word("/tmp/my dir/llm-cache-host"), "'/tmp/my dir/llm-cache-host'");
            assert_eq!(shell_word("/tmp/it's"), r"'/tmp/it'\''s'");
        }
        assert_eq!(program_name(None), "llm-cache-host");
    }
}
