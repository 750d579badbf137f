//! A temporary machine for `install`, `doctor` and the binary started with no arguments: a home, a
//! data directory and an empty root for policy files, and the environment that points the binary at
//! them, so nothing a test installs lands in the real home.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// The manifest's file name.
pub const MANIFEST: &str = "com.browserx.llm_cache.json";

/// A temporary machine: a home, a data directory, and an empty root for policy files.
pub struct Machine {
    /// The folder everything is in, removed at the end.
    pub tmp: tempfile::TempDir,
    /// The data directory (`LLM_CACHE_DIR`), not created.
    pub data: PathBuf,
}

/// What a command printed and how it exited.
pub struct Run {
    /// The exit code.
    pub code: i32,
    /// stdout, then stderr.
    pub stdout: String,
}

impl Run {
    /// The lines starting with `FAIL`.
    pub fn failures(&self) -> Vec<&str> {
        self.stdout.lines().filter(|line| line.starts_with("FAIL")).collect()
    }
}

impl Machine {
    /// A machine whose data directory is beside the home.
    pub fn new() -> Machine {
        let tmp = tempfile::tempdir().unwrap();
        let data = tmp.path().join("data");
        Machine::with_data(tmp, data)
    }

    /// A machine whose data directory is the default one in the home, so install creates its parents.
    pub fn with_data_in_home() -> Machine {
        let tmp = tempfile::tempdir().unwrap();
        let data = tmp.path().join("home/.local/share/llm-cache-host");
        Machine::with_data(tmp, data)
    }

    fn with_data(tmp: tempfile::TempDir, data: PathBuf) -> Machine {
        let machine = Machine { tmp, data };
        std::fs::create_dir(machine.home()).unwrap();
        std::fs::create_dir(machine.policy_root()).unwrap();
        machine
    }

    /// The home (`HOME`), created empty.
    pub fn home(&self) -> PathBuf {
        self.tmp.path().join("home")
    }

    /// The data directory (`LLM_CACHE_DIR`).
    pub fn data(&self) -> PathBuf {
        self.data.clone()
    }

    /// Where `doctor` and the welcome look for system-wide manifests and the system install record
    /// (`LLM_CACHE_SYSTEM_ROOT`): not created, so the machine has no system-wide install (and the real
    /// /etc, where another test may be installing a package, stays out of it) until a test makes one.
    pub fn system_root(&self) -> PathBuf {
        self.tmp.path().join("system")
    }

    /// Where `doctor --policy-root` reads policy files: an empty folder.
    pub fn policy_root(&self) -> PathBuf {
        self.tmp.path().join("root")
    }

    pub fn chromium_manifest(&self) -> PathBuf {
        self.home().join(".config/chromium/NativeMessagingHosts").join(MANIFEST)
    }

    pub fn firefox_manifest(&self) -> PathBuf {
        self.home().join(".mozilla/native-messaging-hosts").join(MANIFEST)
    }

    pub fn installed_binary(&self) -> PathBuf {
        self.data().join("bin/llm-cache-host")
    }

    /// A command for `program` in this machine's environment: its home, its data directory, no
    /// XDG_CONFIG_HOME, so browsers' manifest folders are found under the home, and a PATH of
    /// `~/.local/bin` (where install links the command), the system root's `usr/bin` (where a
    /// package's command goes) and the system's folders, so the command is on PATH exactly when an
    /// install put it there.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut command = Command::new(program);
        command
            .env(
                "PATH",
                format!(
                    "{}:{}:/usr/bin:/bin",
                    self.home().join(".local/bin").display(),
                    self.system_root().join("usr/bin").display()
                ),
            )
            .env("HOME", self.home())
            .env("XDG_DATA_HOME", self.home().join(".local/share"))
            .env_remove("XDG_CONFIG_HOME")
            .env("LLM_CACHE_DIR", self.data())
            .env("LLM_CACHE_SYSTEM_ROOT", self.system_root())
            .env_remove("LLM_CACHE_LOG");
        command
    }

    /// Runs `program` with `args` in this machine's environment.
    pub fn run_program(&self, program: &Path, args: &[&str]) -> Run {
        let output = self.command(program).args(args).output().unwrap();
        let stdout = String::from_utf8(output.stdout).unwrap();
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert!(stderr.is_empty() || output.status.code() == Some(2), "stderr: {stderr}");
        Run { code: output.status.code().unwrap(), stdout: format!("{stdout}{stderr}") }
    }

    /// Runs the binary under test with `args`.
    pub fn run(&self, args: &[&str]) -> Run {
        self.run_program(Path::new(super::binary()), args)
    }

    /// Runs the binary with `args` under `umask 000`, as a shell or a desktop session may leave it.
    pub fn run_with_open_umask(&self, args: &[&str]) -> Run {
        let mut words = vec!["-c", "umask 000 && exec \"$0\" \"$@\"", super::binary()];
        words.extend_from_slice(args);
        self.run_program(Path::new("sh"), &words)
    }

    /// `doctor` with policies read under the empty root (the machine's own /etc stays out of it).
    pub fn doctor(&self, args: &[&str]) -> Run {
        let root = self.policy_root();
        let mut words = vec!["doctor", "--policy-root", root.to_str().unwrap()];
        words.extend_from_slice(args);
        self.run(&words)
    }

    /// Runs `command` as a person pastes it into a shell (`sh -c`), in this machine's environment, with
    /// `PATH` holding the host's command (a link to the binary under test) and the system's folders.
    pub fn shell(&self, command: &str) -> Run {
        let bin = self.tmp.path().join("path");
        if !bin.exists() {
            std::fs::create_dir(&bin).unwrap();
            #[cfg(unix)]
            std::os::unix::fs::symlink(super::binary(), bin.join("llm-cache-host")).unwrap();
        }
        let output = self
            .command("sh")
            .args(["-c", command])
            .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
            .output()
            .unwrap();
        let text = |bytes: Vec<u8>| String::from_utf8(bytes).unwrap();
        Run { code: output.status.code().unwrap(), stdout: format!("{}{}", text(output.stdout), text(output.stderr)) }
    }

    /// Every path under the temporary folder, relative to it.
    pub fn tree(&self) -> BTreeSet<PathBuf> {
        fn walk(dir: &Path, base: &Path, into: &mut BTreeSet<PathBuf>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                into.insert(path.strip_prefix(base).unwrap().to_owned());
                if path.is_dir() && !path.is_symlink() {
                    walk(&path, base, into);
                }
            }
        }
        let mut tree = BTreeSet::new();
        walk(self.tmp.path(), self.tmp.path(), &mut tree);
        tree
    }
}

/// The JSON in the file at `path`.
pub fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))).unwrap()
}

/// Asserts that `run` exited 0 with no `FAIL` line.
pub fn assert_ok(run: &Run, what: &str) {
    assert_eq!(run.code, 0, "{what} failed:\n{}", run.stdout);
    assert!(run.failures().is_empty(), "{what}:\n{}", run.stdout);
}
