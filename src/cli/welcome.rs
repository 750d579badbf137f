//! `llm-cache-host` with no arguments: the binary explains itself, and offers to install itself.
//!
//! A person who downloads the binary and runs it gets what a browser never asks for: what the
//! program is, the command that installs it, and (at a terminal) the offer to run that command now.
//! Browsers always pass arguments (see [`crate::launch`]), so this never meets one; and without a
//! terminal [`introduce`] prints [`explanation`] to stderr, never to stdout, which some program may be
//! reading as frames.
//!
//! It lives with the commands because it is one: the command line's answer to no words at all, which
//! ends in running `install` through the same parser as a typed `install`.

use std::io::{self, BufRead, IsTerminal, Write};
use std::process::ExitCode;

use crate::host_name::HostName;
use crate::install::allowed::{self, Allowed};
use crate::install::browsers::{Browser, Build, Family, Platform, Scope};
use crate::install::manifest::{
    DEFAULT_EXTENSION_ID, DEFAULT_FIREFOX_EXTENSION_ID, is_chrome_extension_id, is_firefox_extension_id,
};
use crate::install::record::Record;
use crate::install::{self as install, Selection, Target, found_browsers, layout, selected_targets};
use crate::terminal::{escape_controls, shell_word};

/// The exit code when started with no arguments and no terminal to ask in: the usage error's code,
/// as for any other arguments that don't start the host.
pub const NO_TERMINAL: u8 = super::USAGE_ERROR;

/// The word that picks the demo extension's id at a prompt: it is never taken for an empty answer.
const DEMO_WORD: &str = "demo";

/// What the person chose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    /// Run `install` with these arguments (starting with the word `install`).
    Install(Vec<String>),
    /// Leave everything as it is.
    Leave,
}

/// A manifest registered here, for the welcome to describe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    /// Which browsers read it, as `install` labels them.
    pub label: String,
    /// Whether it is for every user.
    pub system: bool,
    /// The extensions it allows (its family's only).
    pub allowed: Allowed,
}

/// The manifests registered here: this user's (the default folders and the install record's) and
/// the system-wide ones (a package's, or `install --system`'s).
pub fn installed(platform: &Platform) -> Vec<Installed> {
    let user_base = layout::install_base(Scope::User, platform).ok();
    let Ok((mut user, system)) = install::registered_targets(&Browser::ALL, platform, user_base.as_deref()) else {
        return Vec::new();
    };
    let record = user_base.and_then(|base| Record::load(&layout::record_in(&base, &platform.host)).ok().flatten());
    for entry in record.into_iter().flat_map(|record| record.entries) {
        if install::registered(&entry.location, platform.os) {
            install::push_target(&mut user, entry);
        }
    }
    let describe = |target: Target, system: bool| Installed {
        allowed: allowed::in_manifest_file(target.location.manifest()).unwrap_or_default(),
        label: target.label,
        system,
    };
    let mut found: Vec<Installed> = user.into_iter().map(|target| describe(target, false)).collect();
    found.extend(system.into_iter().map(|target| describe(target, true)));
    found
}

/// What the program is, and how to install it or (when `installed` lists what is) what is installed
/// and how to check it, for a person; `program` is the command as they typed it, and `host` the host
/// it is (named in the commands shown when it isn't the default, so that they set up this one).
pub fn explanation(program: &str, host: &HostName, installed: &[Installed]) -> String {
    let program = shell_word(program);
    let intro = format!(
        "\
{} is the native messaging host behind the llm_cache StorageTool: a browser extension keeps
large results in a local cache through it, and the browser starts it whenever the extension connects.
You only run it yourself to set it up, or to look at the cache.
",
        host.command()
    );
    if installed.is_empty() {
        return format!(
            "{intro}
To install it (copy this binary to a stable place and register it with your browsers):
  {} --extension-id <id>
where <id> is your extension's id as chrome://extensions shows it (32 letters from a to p).
`{program} --help` lists every command and option.
",
            host.invocation(&program, "install")
        );
    }
    let mut lines = String::new();
    for manifest in installed {
        let whose = if manifest.system { "for every user" } else { "for you" };
        lines.push_str(&format!(
            "  {} ({whose}): {}\n",
            manifest.label,
            install::install::allowed_phrase(&manifest.allowed)
        ));
    }
    format!(
        "{intro}
It is installed here, for these browsers and extensions:
{lines}`{}` checks each step a browser takes to start it.
`{program} --help` lists every command and option.
",
        host.invocation(&program, "doctor")
    )
}

/// What a plain `install` would do: the browsers it would register with, as a phrase ("chromium and
/// firefox") and as `--browser` words, and which manifest families they read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offer {
    /// The browsers, in words.
    pub phrase: String,
    /// The browsers.
    pub browsers: Vec<Browser>,
}

impl Offer {
    /// Whether a browser of `family` is among them (then its id is asked for).
    fn has(&self, family: Family) -> bool {
        self.browsers.iter().any(|browser| browser.family() == family)
    }
}

/// The browsers a plain `install` would register with.
pub fn install_targets(platform: &Platform) -> Offer {
    let selection = default_selection();
    let found = found_browsers(platform);
    let targets = layout::install_base(Scope::User, platform)
        .map_err(install::Failure::from)
        .and_then(|base| selected_targets(&selection, platform, &base, &found));
    let Ok(targets) = targets else {
        // Install will say why it can't; the question needn't.
        return Offer { phrase: "your browsers".into(), browsers: Browser::ALL.to_vec() };
    };
    let browsers: Vec<Browser> = targets.iter().flat_map(|target| target.browsers.iter().copied()).collect();
    if !found.iter().any(|(_, builds)| builds.iter().any(Build::can_start_hosts)) {
        // Nothing found: install registers with every browser, so that one installed later works.
        return Offer { phrase: "every browser it knows (none was found installed)".into(), browsers };
    }
    let labels: Vec<&str> = targets.iter().map(|target| target.label.as_str()).collect();
    let phrase = match labels.split_last() {
        Some((last, [])) => (*last).to_owned(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => "no browser".into(),
    };
    Offer { phrase, browsers }
}

/// The selection a plain `install` makes.
fn default_selection() -> Selection {
    Selection {
        browsers: Vec::new(),
        user_data_dirs: Vec::new(),
        extension_ids: Vec::new(),
        firefox_extension_ids: Vec::new(),
        scope: Scope::User,
    }
}

/// Asks `question` and, if the answer is yes, for the extension's id and (when Firefox is offered)
/// the add-on's. Only what is typed is registered: an empty answer to an id leaves that browser
/// family out (all of them out: nothing is installed), `demo` takes the demo extension's, a wrong one
/// is explained and asked again; the end of input leaves everything as it is.
///
/// # Errors
/// Whatever reading `input` or writing `out` returns.
pub fn ask(question: &str, offer: &Offer, input: &mut dyn BufRead, out: &mut dyn Write) -> io::Result<Choice> {
    write!(out, "{question} [y/N] ")?;
    out.flush()?;
    let Some(answer) = read_answer(input)? else { return Ok(Choice::Leave) };
    if !matches!(answer.to_ascii_lowercase().as_str(), "y" | "yes") {
        return Ok(Choice::Leave);
    }
    let (chromium, firefox) = (offer.has(Family::Chromium), offer.has(Family::Firefox));
    let mut chrome_id = None;
    if chromium {
        let prompt = "Your extension's id, from chrome://extensions";
        match ask_id(prompt, DEFAULT_EXTENSION_ID, is_chrome_extension_id, input, out)? {
            Answer::Id(id) => chrome_id = Some(id),
            Answer::None => {}
            Answer::End => return Ok(Choice::Leave),
        }
    }
    let mut firefox_id = None;
    if firefox {
        let prompt = "Your Firefox add-on's id, from about:debugging";
        match ask_id(prompt, DEFAULT_FIREFOX_EXTENSION_ID, is_firefox_extension_id, input, out)? {
            Answer::Id(id) => firefox_id = Some(id),
            Answer::None => {}
            Answer::End => return Ok(Choice::Leave),
        }
    }
    if chrome_id.is_none() && firefox_id.is_none() {
        return Ok(Choice::Leave);
    }
    let mut args = vec!["install".to_owned()];
    // A family left out is left out of the browsers too: install would otherwise allow the demo's.
    if (chromium && chrome_id.is_none()) || (firefox && firefox_id.is_none()) {
        for browser in &offer.browsers {
            let kept = match browser.family() {
                Family::Chromium => chrome_id.is_some(),
                Family::Firefox => firefox_id.is_some(),
            };
            if kept {
                args.extend(["--browser".to_owned(), browser.id().to_owned()]);
            }
        }
    }
    if let Some(id) = chrome_id {
        args.extend(["--extension-id".to_owned(), id]);
    }
    if let Some(id) = firefox_id {
        args.extend(["--firefox-extension-id".to_owned(), id]);
    }
    Ok(Choice::Install(args))
}

/// An answer to an id's prompt.
enum Answer {
    /// A valid id, or the demo's for `demo`.
    Id(String),
    /// An empty answer: no id for this browser family.
    None,
    /// The end of input.
    End,
}

/// Asks for an id until one is valid, `demo`, or empty.
fn ask_id(
    prompt: &str,
    demo: &str,
    valid: fn(&str) -> bool,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
) -> io::Result<Answer> {
    loop {
        write!(out, "{prompt} (\"{DEMO_WORD}\" for the demo extension's, {demo}; Enter for none): ")?;
        out.flush()?;
        let Some(answer) = read_answer(input)? else { return Ok(Answer::End) };
        if answer.is_empty() {
            return Ok(Answer::None);
        }
        if answer.eq_ignore_ascii_case(DEMO_WORD) {
            return Ok(Answer::Id(demo.to_owned()));
        }
        if valid(&answer) {
            return Ok(Answer::Id(answer));
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

/// No arguments: a person ran the binary. At a terminal (stdin and stdout both), explain and offer to
/// install; otherwise something else started it (a pipe, a misconfigured launcher), which may be
/// reading stdout, so the explanation goes to stderr and the exit code says nothing was done.
pub fn introduce() -> ExitCode {
    let argv0 = std::env::args_os().next().and_then(|a| a.into_string().ok());
    let platform = Platform::current();
    let program = program_name(argv0.as_deref(), &platform.host);
    if io::stdin().is_terminal() && io::stdout().is_terminal() {
        return run(&program);
    }
    let installed = installed(&platform);
    eprint!("{}", explanation(&program, &platform.host, &installed));
    eprintln!(
        "\n(Started with no arguments and no terminal to ask in, so nothing was installed; exit code {NO_TERMINAL}.)"
    );
    ExitCode::from(NO_TERMINAL)
}

/// Runs the whole exchange at a terminal: the explanation, the question and, if the answer is yes,
/// the `install` command itself. With a system-wide install here nothing is offered: this user's
/// manifests would hide it from their browsers.
///
/// On Windows, a double-clicked binary gets a console window of its own that closes the moment it
/// exits, taking the answer with it: there it waits for Enter before returning.
fn run(program: &str) -> ExitCode {
    let code = exchange(program);
    #[cfg(windows)]
    if install::windows::console_is_own() {
        print!("\nPress Enter to close this window.");
        let _ = io::stdout().flush();
        let _ = read_answer(&mut io::stdin().lock());
    }
    code
}

/// [`run`]'s exchange itself.
fn exchange(program: &str) -> ExitCode {
    let platform = Platform::current();
    let installed = installed(&platform);
    let mut out = io::stdout().lock();
    if installed.iter().any(|manifest| manifest.system) {
        let _ = writeln!(
            out,
            "{}\nIt is installed for every user, so nothing is offered here: an install of your own would hide \
             that one from your browsers.",
            explanation(program, &platform.host, &installed)
        );
        return ExitCode::SUCCESS;
    }
    let offer = install_targets(&platform);
    let question = if installed.is_empty() {
        format!("Install it now for {}?", offer.phrase)
    } else {
        format!("Allow another extension too, for {}?", offer.phrase)
    };
    let choice = writeln!(out, "{}", explanation(program, &platform.host, &installed))
        .and_then(|()| ask(&question, &offer, &mut io::stdin().lock(), &mut out));
    match choice {
        Ok(Choice::Install(args)) => {
            drop(out);
            super::run(&platform.host, &args)
        }
        // A closed terminal or a "no" leaves the instructions above as the answer.
        Ok(Choice::Leave) | Err(_) => {
            let _ = writeln!(out, "\nNothing installed.");
            ExitCode::SUCCESS
        }
    }
}

/// The command a person typed to start this program: `argv[0]` when it is there and UTF-8, else the
/// command of the host it is.
pub fn program_name(argv0: Option<&str>, host: &HostName) -> String {
    match argv0 {
        Some(typed) if !typed.is_empty() => typed.to_owned(),
        _ => host.command(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The exchange for an offer of `browsers`, typing `typed`.
    fn exchange(browsers: &[Browser], typed: &str) -> (Choice, String) {
        let offer = Offer {
            phrase: browsers.iter().map(|b| b.id()).collect::<Vec<_>>().join(" and "),
            browsers: browsers.to_vec(),
        };
        let mut out = Vec::new();
        let question = format!("Install it now for {}?", offer.phrase);
        let choice = ask(&question, &offer, &mut typed.as_bytes(), &mut out).unwrap();
        (choice, String::from_utf8(out).unwrap())
    }

    fn install(words: &[&str]) -> Choice {
        Choice::Install(words.iter().map(|w| w.to_string()).collect())
    }

    const CHROMIUM: &[Browser] = &[Browser::Chromium];
    const BOTH: &[Browser] = &[Browser::Chromium, Browser::Brave, Browser::Firefox];

    #[test]
    fn anything_but_yes_leaves_things_alone() {
        for typed in ["", "\n", "n\n", "no\n", "yes please\n", "q"] {
            let (choice, said) = exchange(CHROMIUM, typed);
            assert_eq!(choice, Choice::Leave, "{typed:?}");
            assert_eq!(said, "Install it now for chromium? [y/N] ");
        }
        assert_eq!(exchange(CHROMIUM, "y\n").0, Choice::Leave, "no id: the input ended");
    }

    #[test]
    fn yes_asks_for_the_ids() {
        let id = "abcdefghijklmnopabcdefghijklmnop";
        assert_eq!(exchange(CHROMIUM, &format!("y\n{id}\n")).0, install(&["install", "--extension-id", id]));
        assert_eq!(exchange(CHROMIUM, " Y \ndemo\n").0, install(&["install", "--extension-id", DEFAULT_EXTENSION_ID]));
        let (choice, said) = exchange(BOTH, &format!("yes\nnot an id\n{id}\nme@example.org\n"));
        assert_eq!(choice, install(&["install", "--extension-id", id, "--firefox-extension-id", "me@example.org"]));
        assert!(said.contains("\"not an id\" is not an id like pahabgfbcdcnaidcniaebibdihehiphn; try again"), "{said}");
        assert!(said.contains("Firefox add-on's id"), "{said}");
        // Firefox's whole rule: the name before `@` is optional, and a GUID is braced.
        for addon in ["@addon-example", "{4c2b7a4e-1d5e-4e8f-9a3b-2f1c0d9e8b7a}"] {
            let (choice, said) = exchange(BOTH, &format!("y\ndemo\n{{not-a-guid}}\nname@\n{addon}\n"));
            let expected =
                install(&["install", "--extension-id", DEFAULT_EXTENSION_ID, "--firefox-extension-id", addon]);
            assert_eq!(choice, expected, "{said}");
            assert!(said.contains("\"{not-a-guid}\" is not an id like llm-cache-demo@browserx.dev"), "{said}");
            assert!(said.contains("\"name@\" is not an id like"), "{said}");
        }
        assert_eq!(
            exchange(BOTH, "y\nDEMO\ndemo\n").0,
            install(&[
                "install",
                "--extension-id",
                DEFAULT_EXTENSION_ID,
                "--firefox-extension-id",
                DEFAULT_FIREFOX_EXTENSION_ID
            ])
        );
        let (_, said) = exchange(CHROMIUM, "y\n\u{1b}]0;x\u{7}\n");
        assert!(said.contains("\"\\u001b]0;x\\u0007\" is not an id"), "{said}");
    }

    /// Enter registers nothing: not the demo's id, and not the browsers of a family left without one.
    #[test]
    fn an_empty_answer_registers_nothing() {
        let id = "abcdefghijklmnopabcdefghijklmnop";
        let (choice, said) = exchange(CHROMIUM, "y\n\n");
        assert_eq!(choice, Choice::Leave, "{said}");
        assert!(
            said.contains("(\"demo\" for the demo extension's, pahabgfbcdcnaidcniaebibdihehiphn; Enter for none)"),
            "{said}"
        );
        assert_eq!(exchange(BOTH, "y\n\n\n").0, Choice::Leave);
        assert_eq!(
            exchange(BOTH, &format!("y\n{id}\n\n")).0,
            install(&["install", "--browser", "chromium", "--browser", "brave", "--extension-id", id])
        );
        assert_eq!(
            exchange(BOTH, "y\n\n@name\n").0,
            install(&["install", "--browser", "firefox", "--firefox-extension-id", "@name"])
        );
    }

    #[test]
    fn the_explanation_names_the_command() {
        let text = explanation("./llm-cache-host", &HostName::default_host(), &[]);
        assert!(text.contains("  ./llm-cache-host install --extension-id <id>\n"), "{text}");
        assert!(text.contains("`./llm-cache-host --help`"), "{text}");
        #[cfg(unix)]
        {
            assert_eq!(shell_word("/tmp/my dir/llm-cache-host"), "'/tmp/my dir/llm-cache-host'");
            assert_eq!(shell_word("/tmp/it's"), r"'/tmp/it'\''s'");
        }
        assert_eq!(program_name(None, &HostName::default_host()), "llm-cache-host");
        let mail = HostName::parse("com.example.mail_cache").unwrap();
        assert_eq!(program_name(None, &mail), "com.example.mail-cache");
        let text = explanation("com.example.mail-cache", &mail, &[]);
        assert!(text.starts_with("com.example.mail-cache is the native messaging host behind"), "{text}");
        assert!(
            text.contains("  com.example.mail-cache install --host-name com.example.mail_cache --extension-id <id>\n"),
            "{text}"
        );

        let installed = [
            Installed {
                label: "chromium, brave, vivaldi".into(),
                system: true,
                allowed: Allowed { chrome: vec![DEFAULT_EXTENSION_ID.into(), "a".repeat(32)], firefox: Vec::new() },
            },
            Installed {
                label: "firefox".into(),
                system: false,
                allowed: Allowed { chrome: Vec::new(), firefox: vec!["@name".into()] },
            },
        ];
        let text = explanation("llm-cache-host", &HostName::default_host(), &installed);
        assert!(!text.contains("To install it"), "{text}");
        let a = "a".repeat(32);
        assert!(
            text.contains(&format!(
                "  chromium, brave, vivaldi (for every user): extensions {DEFAULT_EXTENSION_ID}, {a}\n"
            )),
            "{text}"
        );
        assert!(text.contains("  firefox (for you): add-on @name\n`llm-cache-host doctor` checks"), "{text}");
    }
}
