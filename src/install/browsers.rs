//! The browsers we register with, where each looks for host manifests on each OS, and how to tell
//! which are installed (and which are sandboxed Snap or Flatpak builds that can't start hosts).
//!
//! Everything here is a pure function of the OS, the environment and (for detection) a test for
//! whether a path exists, so the tables for all three OSes are tested on any of them.
//!
//! # Sources
//! - Chrome and Chromium, Linux and macOS, user and system: Chrome's "Native messaging" page
//!   (developer.chrome.com/docs/extensions/develop/concepts/native-messaging), "Native messaging host
//!   location"; the user-level folder is `NativeMessagingHosts` in the browser's user data directory
//!   (Chromium's `chrome/common/chrome_paths.cc`, `DIR_USER_NATIVE_MESSAGING`), which on Linux lives
//!   under `$XDG_CONFIG_HOME` (default `~/.config`).
//! - Chrome on Windows: the same page (`HKCU|HKLM\Software\Google\Chrome\NativeMessagingHosts\<name>`,
//!   default value = manifest path). Chromium on Windows: `Software\Chromium\...`, falling back to
//!   Chrome's key (Chromium's `native_process_launcher_win.cc`).
//! - Edge, all OSes: Microsoft's "Native messaging" page for Edge extensions
//!   (learn.microsoft.com/microsoft-edge/extensions/developer-guide/native-messaging).
//! - Firefox, all OSes: MDN's "Native manifests" page, "Manifest location".
//! - Brave and Vivaldi publish no table. User level: their user data directories
//!   (`BraveSoftware/Brave-Browser` per brave-core's `chrome_paths_linux.cc`; `vivaldi` and `Vivaldi`
//!   as KeePassXC's installer uses them) plus `NativeMessagingHosts`, as for every Chromium build.
//!   System level: they are not Google-branded builds, so Chromium's `chrome_paths.cc` gives them
//!   Chromium's system folders, which `install --system` writes; on Linux other packages put their
//!   manifests in `/etc/opt/brave` and `/etc/opt/vivaldi` too, so a package (`manifest --root`) writes
//!   those as well, and `doctor` checks every one of them. Windows: every Chromium build falls back
//!   to Chrome's registry key (see above), which is also what KeePassXC writes for both, so that is
//!   the key we write.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::host_name::HostName;
use crate::paths::{self, Os};

/// A browser we know how to register with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Browser {
    /// Google Chrome.
    Chrome,
    /// Chromium, as distributions package it.
    Chromium,
    /// Microsoft Edge.
    Edge,
    /// Brave.
    Brave,
    /// Vivaldi.
    Vivaldi,
    /// Mozilla Firefox.
    Firefox,
}

impl Browser {
    /// Every browser, in the order reports list them.
    pub const ALL: [Browser; 6] =
        [Browser::Chrome, Browser::Chromium, Browser::Edge, Browser::Brave, Browser::Vivaldi, Browser::Firefox];

    /// The word `--browser` takes.
    pub fn id(self) -> &'static str {
        match self {
            Browser::Chrome => "chrome",
            Browser::Chromium => "chromium",
            Browser::Edge => "edge",
            Browser::Brave => "brave",
            Browser::Vivaldi => "vivaldi",
            Browser::Firefox => "firefox",
        }
    }

    /// The browser's name, as help and documents write it.
    pub fn name(self) -> &'static str {
        match self {
            Browser::Chrome => "Chrome",
            Browser::Chromium => "Chromium",
            Browser::Edge => "Edge",
            Browser::Brave => "Brave",
            Browser::Vivaldi => "Vivaldi",
            Browser::Firefox => "Firefox",
        }
    }

    /// Which manifest shape the browser reads.
    pub fn family(self) -> Family {
        match self {
            Browser::Firefox => Family::Firefox,
            _ => Family::Chromium,
        }
    }
}

impl fmt::Display for Browser {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

/// The two manifest shapes (and origin forms) browsers use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    /// `allowed_origins` with `chrome-extension://<id>/`; the host gets the origin as its argument.
    Chromium,
    /// `allowed_extensions` with add-on ids; the host gets the manifest path and the add-on id.
    Firefox,
}

impl Family {
    /// The folder name for this family's manifest where we keep it ourselves (Windows).
    fn folder(self) -> &'static str {
        match self {
            Family::Chromium => "chromium",
            Family::Firefox => "firefox",
        }
    }
}

/// Whose browsers see the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// The current user's (the default; needs no privileges).
    User,
    /// Every user's (`--system`; needs root or an administrator).
    System,
}

/// The two registry hives hosts are registered under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Hive {
    /// `HKEY_CURRENT_USER`: user-level hosts.
    #[serde(rename = "HKCU")]
    CurrentUser,
    /// `HKEY_LOCAL_MACHINE`: hosts for every user.
    #[serde(rename = "HKLM")]
    LocalMachine,
}

impl Hive {
    /// The hive for a scope.
    pub fn for_scope(scope: Scope) -> Hive {
        match scope {
            Scope::User => Hive::CurrentUser,
            Scope::System => Hive::LocalMachine,
        }
    }

    /// The short name `reg.exe` takes.
    pub fn short(self) -> &'static str {
        match self {
            Hive::CurrentUser => "HKCU",
            Hive::LocalMachine => "HKLM",
        }
    }
}

/// Where a browser finds the manifest.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Location {
    /// A file at a fixed path (Linux, macOS, a custom profile).
    File {
        /// The manifest file.
        manifest: PathBuf,
    },
    /// A registry key whose default value is the manifest file's path (Windows).
    Registry {
        /// The hive the key is in.
        hive: Hive,
        /// The key under the hive, ending in the host name.
        key: String,
        /// The manifest file the value points at.
        manifest: PathBuf,
    },
}

impl Location {
    /// The manifest file, wherever the browser learns of it.
    pub fn manifest(&self) -> &Path {
        match self {
            Location::File { manifest } | Location::Registry { manifest, .. } => manifest,
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::File { manifest } => write!(f, "{}", manifest.display()),
            Location::Registry { hive, key, manifest } => {
                write!(f, "{}\\{key} -> {}", hive.short(), manifest.display())
            }
        }
    }
}

/// The OS, a snapshot of the environment and the host being set up: everything the tables depend on.
#[derive(Debug, Clone)]
pub struct Platform {
    /// Whose conventions apply.
    pub os: Os,
    /// The environment variables.
    vars: HashMap<String, OsString>,
    /// The host whose manifests, folders and registry keys these are.
    pub host: HostName,
    /// The program running now, as it was started: the path typed (`./llm-cache-host` in an unpacked
    /// tarball) when it was started by a path, else its full path; none when tests describe a machine.
    started_as: Option<PathBuf>,
}

impl Platform {
    /// A platform for `os` with these variables, for the default host (tests describe other machines
    /// this way).
    pub fn new(os: Os, vars: &[(&str, &str)]) -> Platform {
        let vars = vars.iter().map(|(k, v)| (k.to_string(), OsString::from(v))).collect();
        Platform { os, vars, host: HostName::default_host(), started_as: None }
    }

    /// This machine, for the host this binary is.
    pub fn current() -> Platform {
        let vars = std::env::vars_os().filter_map(|(k, v)| Some((k.into_string().ok()?, v))).collect();
        // A path typed runs again from where it was typed; a bare name found on PATH is the command.
        let typed = std::env::args_os().next().map(PathBuf::from).filter(|path| path.components().count() > 1);
        let started_as = typed.or_else(|| std::env::current_exe().ok());
        Platform { os: Os::current(), vars, host: HostName::current(), started_as }
    }

    /// How a person runs the host's command here, as the commands this program prints name it: the
    /// command itself when a file of that name is in a folder on PATH, else this program as it was
    /// started (an unpacked tarball's `./llm-cache-host`), as long as it is still there.
    pub fn program(&self) -> String {
        let command = self.host.command();
        let file = if self.os == Os::Windows { format!("{command}.exe") } else { command.clone() };
        let on_path =
            self.var("PATH").is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(&file).is_file()));
        match &self.started_as {
            Some(path) if !on_path && path.is_file() => crate::terminal::shell_word(&path.to_string_lossy()),
            _ => command,
        }
    }

    /// The same machine, for the host `host` (`--host-name`).
    pub fn with_host(self, host: HostName) -> Platform {
        Platform { host, ..self }
    }

    /// A variable, if set and not empty.
    pub fn var(&self, name: &str) -> Option<PathBuf> {
        self.vars.get(name).filter(|value| !value.is_empty()).map(PathBuf::from)
    }

    /// The home directory (`HOME`; Windows has no use for it here).
    pub fn home(&self) -> Option<PathBuf> {
        self.var("HOME")
    }

    /// Linux: `$XDG_CONFIG_HOME` if absolute, else `~/.config` (Chromium's rule for its user data).
    pub fn config_home(&self) -> Option<PathBuf> {
        self.var("XDG_CONFIG_HOME")
            .filter(|dir| paths::is_linux_absolute(dir))
            .or_else(|| Some(self.home()?.join(".config")))
    }

    /// Linux: `$XDG_DATA_HOME` if absolute, else `~/.local/share`.
    pub fn data_home(&self) -> Option<PathBuf> {
        self.var("XDG_DATA_HOME")
            .filter(|dir| paths::is_linux_absolute(dir))
            .or_else(|| Some(self.home()?.join(".local").join("share")))
    }

    /// The host's data directory, by [`paths::data_dir_for`]'s rules.
    pub fn data_dir(&self) -> Option<PathBuf> {
        paths::data_dir_for(self.os, self.host.folder(), |name| self.vars.get(name).cloned())
    }
}

/// What a location couldn't be worked out from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unresolved(pub String);

impl fmt::Display for Unresolved {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Where one browser reads host manifests on one OS: a row of [`MANIFEST_FOLDERS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Folders {
    /// The OS.
    pub os: Os,
    /// The browser.
    pub browser: Browser,
    /// Where it reads them there.
    pub reads: Reads,
}

/// Where a browser reads host manifests on one OS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reads {
    /// Manifest files in folders (Linux, macOS).
    Files {
        /// The folder for the current user's hosts: a path under one of the user's folders.
        user: (UserBase, &'static str),
        /// The folders for every user's hosts. `install --system` writes the first; a package writes
        /// each (the others are where other packages put the browser's manifests, which it reads too).
        system: &'static [&'static str],
    },
    /// A registry key under `HKCU` (the current user's hosts) or `HKLM` (every user's), ending in
    /// `NativeMessagingHosts\<host name>`, whose default value is the manifest file's path (Windows).
    Registry {
        /// The key up to `NativeMessagingHosts`.
        vendor_key: &'static str,
    },
}

/// The user's folder a browser's own manifest folder is under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UserBase {
    /// The home folder.
    Home,
    /// Linux: `$XDG_CONFIG_HOME` if absolute, else `~/.config` (Chromium's rule for its user data).
    ConfigHome,
    /// macOS: `~/Library/Application Support`.
    ApplicationSupport,
}

impl UserBase {
    /// The folder as help and documents write it.
    pub fn shown(self) -> &'static str {
        match self {
            UserBase::Home => "~",
            UserBase::ConfigHome => "~/.config",
            UserBase::ApplicationSupport => "~/Library/Application Support",
        }
    }
}

/// Where every browser reads host manifests, on every OS: the one table that `install`, `uninstall`,
/// `doctor`, the welcome, `manifest --root` (and so the .deb), `install --help` and
/// docs/distributing.md all follow. The sources are in this module's comment.
#[rustfmt::skip] // A table: a row per browser and OS, its columns aligned.
pub const MANIFEST_FOLDERS: [Folders; 18] = {
    use Browser::{Brave, Chrome, Chromium, Edge, Firefox, Vivaldi};
    use Os::{Linux, MacOs};
    use UserBase::{ApplicationSupport as Support, ConfigHome as Config, Home};
    const fn files(os: Os, browser: Browser, base: UserBase, user: &'static str, system: &'static [&'static str]) -> Folders {
        Folders { os, browser, reads: Reads::Files { user: (base, user), system } }
    }
    const fn registry(browser: Browser, vendor_key: &'static str) -> Folders {
        Folders { os: Os::Windows, browser, reads: Reads::Registry { vendor_key } }
    }
    const ETC_CHROMIUM: &str = "/etc/chromium/native-messaging-hosts";
    const LIBRARY_CHROMIUM: &str = "/Library/Application Support/Chromium/NativeMessagingHosts";
    [
        files(Linux, Chrome,   Config, "google-chrome/NativeMessagingHosts",               &["/etc/opt/chrome/native-messaging-hosts"]),
        files(Linux, Chromium, Config, "chromium/NativeMessagingHosts",                    &[ETC_CHROMIUM]),
        files(Linux, Edge,     Config, "microsoft-edge/NativeMessagingHosts",              &["/etc/opt/edge/native-messaging-hosts"]),
        files(Linux, Brave,    Config, "BraveSoftware/Brave-Browser/NativeMessagingHosts", &[ETC_CHROMIUM, "/etc/opt/brave/native-messaging-hosts"]),
        files(Linux, Vivaldi,  Config, "vivaldi/NativeMessagingHosts",                     &[ETC_CHROMIUM, "/etc/opt/vivaldi/native-messaging-hosts"]),
        files(Linux, Firefox,  Home,   ".mozilla/native-messaging-hosts",                  &["/usr/lib/mozilla/native-messaging-hosts"]),
        files(MacOs, Chrome,   Support, "Google/Chrome/NativeMessagingHosts",               &["/Library/Google/Chrome/NativeMessagingHosts"]),
        files(MacOs, Chromium, Support, "Chromium/NativeMessagingHosts",                    &[LIBRARY_CHROMIUM]),
        files(MacOs, Edge,     Support, "Microsoft Edge/NativeMessagingHosts",              &["/Library/Microsoft/Edge/NativeMessagingHosts"]),
        files(MacOs, Brave,    Support, "BraveSoftware/Brave-Browser/NativeMessagingHosts", &[LIBRARY_CHROMIUM]),
        files(MacOs, Vivaldi,  Support, "Vivaldi/NativeMessagingHosts",                     &[LIBRARY_CHROMIUM]),
        files(MacOs, Firefox,  Support, "Mozilla/NativeMessagingHosts",                     &["/Library/Application Support/Mozilla/NativeMessagingHosts"]),
        registry(Chrome,   "Software\\Google\\Chrome"),
        registry(Chromium, "Software\\Chromium"),
        registry(Edge,     "Software\\Microsoft\\Edge"),
        registry(Brave,    "Software\\Google\\Chrome"),
        registry(Vivaldi,  "Software\\Google\\Chrome"),
        registry(Firefox,  "Software\\Mozilla"),
    ]
};

/// Where `browser` reads host manifests on `os`: its row of [`MANIFEST_FOLDERS`].
pub fn reads(browser: Browser, os: Os) -> Reads {
    MANIFEST_FOLDERS
        .iter()
        .find(|row| row.os == os && row.browser == browser)
        .map(|row| row.reads)
        .expect("MANIFEST_FOLDERS has a row for every browser on every OS")
}

/// Where `browser` looks for the manifest of `platform`'s host at `scope`: for every user, the first
/// of its system folders (where `install --system` writes).
///
/// On Windows the manifest file itself lives where [`windows_manifest_dir`] says, under `base` (the
/// folder `install` keeps its own files in for this scope).
///
/// # Errors
/// When a variable the location depends on (`HOME`, `XDG_CONFIG_HOME`) is missing.
pub fn manifest_location(
    browser: Browser,
    scope: Scope,
    platform: &Platform,
    base: &Path,
) -> Result<Location, Unresolved> {
    let mut locations = manifest_locations(browser, scope, platform, base)?;
    Ok(locations.swap_remove(0))
}

/// Every place `browser` reads the manifest of `platform`'s host from at `scope`: one for this user,
/// and for every user each of its system folders (one registry key on Windows).
///
/// # Errors
/// As [`manifest_location`].
pub fn manifest_locations(
    browser: Browser,
    scope: Scope,
    platform: &Platform,
    base: &Path,
) -> Result<Vec<Location>, Unresolved> {
    let file = |dir: PathBuf| Location::File { manifest: dir.join(platform.host.manifest_file()) };
    let missing = |what: &str| Unresolved(format!("can't tell where {browser} looks for hosts: {what} is not set"));
    Ok(match (reads(browser, platform.os), scope) {
        (Reads::Files { user: (under, folder), .. }, Scope::User) => {
            let base = match under {
                UserBase::Home => platform.home(),
                UserBase::ConfigHome => platform.config_home(),
                UserBase::ApplicationSupport => platform.home().map(|home| home.join("Library/Application Support")),
            };
            vec![file(base.ok_or_else(|| missing("HOME"))?.join(folder))]
        }
        (Reads::Files { system, .. }, Scope::System) => system.iter().map(|dir| file(PathBuf::from(dir))).collect(),
        (Reads::Registry { vendor_key }, _) => vec![Location::Registry {
            hive: Hive::for_scope(scope),
            key: format!("{vendor_key}\\NativeMessagingHosts\\{}", platform.host),
            manifest: windows_manifest_dir(base, browser.family()).join(platform.host.manifest_file()),
        }],
    })
}

/// Where the manifest of `host` goes for a browser started with `--user-data-dir=<dir>`: Chromium
/// looks in `<dir>/NativeMessagingHosts` for user-level hosts. Windows browsers look only in the
/// registry.
pub fn profile_location(os: Os, host: &HostName, user_data_dir: &Path) -> Option<Location> {
    (os != Os::Windows)
        .then(|| Location::File { manifest: user_data_dir.join("NativeMessagingHosts").join(host.manifest_file()) })
}

/// Windows: the folder holding the manifest file a registry key points at. Browsers of one family
/// share one file, as they share the manifest's contents.
pub fn windows_manifest_dir(base: &Path, family: Family) -> PathBuf {
    base.join("manifests").join(family.folder())
}

/// How a browser build is packaged, as far as native hosts care.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Build {
    /// A build that can start native hosts: a distribution or vendor package, an app bundle.
    Native(PathBuf),
    /// A Snap: confined, it can't start binaries from outside the snap.
    Snap(PathBuf),
    /// A Flatpak: sandboxed, it can't start binaries from outside the sandbox.
    Flatpak(PathBuf),
}

impl Build {
    /// Whether the build can start our host.
    pub fn can_start_hosts(&self) -> bool {
        matches!(self, Build::Native(_))
    }
}

/// The builds of `browser` found on `platform`, `exists` telling which paths exist.
pub fn detect(browser: Browser, platform: &Platform, exists: &dyn Fn(&Path) -> bool) -> Vec<Build> {
    let mut builds = Vec::new();
    match platform.os {
        Os::Linux => {
            let native: &[&str] = match browser {
                Browser::Chrome => {
                    &["/opt/google/chrome/chrome", "/usr/bin/google-chrome", "/usr/bin/google-chrome-stable"]
                }
                // Not /usr/bin/chromium-browser: on Ubuntu that is a wrapper that starts the snap.
                Browser::Chromium => &[
                    "/usr/bin/chromium",
                    "/usr/lib/chromium/chromium",
                    "/usr/lib/chromium-browser/chromium-browser",
                    "/usr/lib64/chromium-browser/chromium-browser",
                ],
                Browser::Edge => {
                    &["/opt/microsoft/msedge/msedge", "/usr/bin/microsoft-edge", "/usr/bin/microsoft-edge-stable"]
                }
                Browser::Brave => &["/opt/brave.com/brave/brave", "/usr/bin/brave-browser", "/usr/bin/brave"],
                Browser::Vivaldi => &["/opt/vivaldi/vivaldi", "/usr/bin/vivaldi", "/usr/bin/vivaldi-stable"],
                // Not /usr/bin/firefox: on Ubuntu that is a wrapper that starts the snap.
                Browser::Firefox => &[
                    "/usr/lib/firefox/firefox",
                    "/usr/lib64/firefox/firefox",
                    "/usr/lib/firefox-esr/firefox-esr",
                    "/opt/firefox/firefox",
                ],
            };
            builds.extend(native.iter().map(PathBuf::from).filter(|p| exists(p)).map(Build::Native));
            if let Some(snap) = snap_name(browser) {
                // Written whole with Linux's separator, as the warning shows it (also when tests
                // describe Linux on Windows, whose `join` would add a backslash).
                let path = PathBuf::from(format!("/snap/bin/{snap}"));
                if exists(&path) {
                    builds.push(Build::Snap(path));
                }
            }
            let mut flatpak_roots = vec![PathBuf::from("/var/lib/flatpak/app")];
            flatpak_roots.extend(platform.data_home().map(|dir| dir.join("flatpak/app")));
            for root in flatpak_roots {
                let path = root.join(flatpak_id(browser));
                if exists(&path) {
                    builds.push(Build::Flatpak(path));
                }
            }
        }
        Os::MacOs => {
            let app = mac_app(browser);
            let mut roots = vec![PathBuf::from("/Applications")];
            roots.extend(platform.home().map(|home| home.join("Applications")));
            builds.extend(roots.into_iter().map(|root| root.join(app)).filter(|p| exists(p)).map(Build::Native));
        }
        Os::Windows => {
            let roots = ["ProgramFiles", "ProgramFiles(x86)", "LOCALAPPDATA"].map(|name| platform.var(name));
            let exe = windows_exe(browser);
            builds.extend(
                roots.into_iter().flatten().map(|root| root.join(exe)).filter(|p| exists(p)).map(Build::Native),
            );
        }
    }
    builds
}

/// The Snap Store name, for browsers published there.
fn snap_name(browser: Browser) -> Option<&'static str> {
    match browser {
        Browser::Chromium => Some("chromium"),
        Browser::Brave => Some("brave"),
        Browser::Firefox => Some("firefox"),
        Browser::Chrome | Browser::Edge | Browser::Vivaldi => None,
    }
}

/// The Flathub application id.
fn flatpak_id(browser: Browser) -> &'static str {
    match browser {
        Browser::Chrome => "com.google.Chrome",
        Browser::Chromium => "org.chromium.Chromium",
        Browser::Edge => "com.microsoft.Edge",
        Browser::Brave => "com.brave.Browser",
        Browser::Vivaldi => "com.vivaldi.Vivaldi",
        Browser::Firefox => "org.mozilla.firefox",
    }
}

/// The app bundle's name (macOS).
fn mac_app(browser: Browser) -> &'static str {
    match browser {
        Browser::Chrome => "Google Chrome.app",
        Browser::Chromium => "Chromium.app",
        Browser::Edge => "Microsoft Edge.app",
        Browser::Brave => "Brave Browser.app",
        Browser::Vivaldi => "Vivaldi.app",
        Browser::Firefox => "Firefox.app",
    }
}

/// The executable under Program Files or `%LOCALAPPDATA%` (Windows).
fn windows_exe(browser: Browser) -> &'static str {
    match browser {
        Browser::Chrome => "Google\\Chrome\\Application\\chrome.exe",
        Browser::Chromium => "Chromium\\Application\\chrome.exe",
        Browser::Edge => "Microsoft\\Edge\\Application\\msedge.exe",
        Browser::Brave => "BraveSoftware\\Brave-Browser\\Application\\brave.exe",
        Browser::Vivaldi => "Vivaldi\\Application\\vivaldi.exe",
        Browser::Firefox => "Mozilla Firefox\\firefox.exe",
    }
}

/// The sentence `install` and `doctor` print for a browser found only as sandboxed builds.
pub fn sandbox_warning(browser: Browser, builds: &[Build]) -> Option<String> {
    if builds.is_empty() || builds.iter().any(Build::can_start_hosts) {
        return None;
    }
    let found: Vec<String> = builds
        .iter()
        .map(|build| match build {
            Build::Snap(path) => format!("a Snap ({})", path.display()),
            Build::Flatpak(path) => format!("a Flatpak ({})", path.display()),
            Build::Native(path) => path.display().to_string(),
        })
        .collect();
    Some(format!(
        "{browser} is installed only as {}: Snap and Flatpak browsers run sandboxed and can't start native \
         messaging hosts installed outside the sandbox; install your distribution's or the vendor's .deb/.rpm \
         build of {browser} to use the cache",
        found.join(" and ")
    ))
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    const NAME: &str = "com.browserx.llm_cache.json";

    /// The manifest's path, compared as a path: where tests describe Linux or macOS on Windows, `join`
    /// puts Windows' separator between the parts, and paths compare equal with either separator.
    fn user(os: Os, vars: &[(&str, &str)], browser: Browser) -> PathBuf {
        let platform = Platform::new(os, vars);
        manifest_location(browser, Scope::User, &platform, Path::new("/base")).unwrap().manifest().to_owned()
    }

    #[test]
    fn linux_user_locations() {
        let home = [("HOME", "/home/u")];
        let cases = [
            (Browser::Chrome, "/home/u/.config/google-chrome/NativeMessagingHosts"),
            (Browser::Chromium, "/home/u/.config/chromium/NativeMessagingHosts"),
            (Browser::Edge, "/home/u/.config/microsoft-edge/NativeMessagingHosts"),
            (Browser::Brave, "/home/u/.config/BraveSoftware/Brave-Browser/NativeMessagingHosts"),
            (Browser::Vivaldi, "/home/u/.config/vivaldi/NativeMessagingHosts"),
            (Browser::Firefox, "/home/u/.mozilla/native-messaging-hosts"),
        ];
        for (browser, dir) in cases {
            assert_eq!(user(Os::Linux, &home, browser), PathBuf::from(format!("{dir}/{NAME}")), "{browser}");
        }
        // Chromium browsers follow XDG_CONFIG_HOME (if absolute); Firefox stays in ~/.mozilla.
        let xdg = [("HOME", "/home/u"), ("XDG_CONFIG_HOME", "/cfg")];
        let chromium = format!("/cfg/chromium/NativeMessagingHosts/{NAME}");
        assert_eq!(user(Os::Linux, &xdg, Browser::Chromium), PathBuf::from(chromium));
        let firefox = format!("/home/u/.mozilla/native-messaging-hosts/{NAME}");
        assert_eq!(user(Os::Linux, &xdg, Browser::Firefox), PathBuf::from(firefox));
        let relative = [("HOME", "/home/u"), ("XDG_CONFIG_HOME", "cfg")];
        assert_eq!(
            user(Os::Linux, &relative, Browser::Chrome),
            PathBuf::from(format!("/home/u/.config/google-chrome/NativeMessagingHosts/{NAME}"))
        );
    }

    #[test]
    fn mac_user_locations() {
        let home = [("HOME", "/Users/u")];
        let support = "/Users/u/Library/Application Support";
        let cases = [
            (Browser::Chrome, "Google/Chrome/NativeMessagingHosts"),
            (Browser::Chromium, "Chromium/NativeMessagingHosts"),
            (Browser::Edge, "Microsoft Edge/NativeMessagingHosts"),
            (Browser::Brave, "BraveSoftware/Brave-Browser/NativeMessagingHosts"),
            (Browser::Vivaldi, "Vivaldi/NativeMessagingHosts"),
            (Browser::Firefox, "Mozilla/NativeMessagingHosts"),
        ];
        for (browser, dir) in cases {
            assert_eq!(user(Os::MacOs, &home, browser), PathBuf::from(format!("{support}/{dir}/{NAME}")), "{browser}");
        }
    }

    #[test]
    fn system_locations() {
        let platform = Platform::new(Os::Linux, &[]);
        let system = |os: Os, browser| {
            let platform = Platform { os, ..platform.clone() };
            manifest_location(browser, Scope::System, &platform, Path::new("/base")).unwrap().manifest().to_owned()
        };
        let cases = [
            (Os::Linux, Browser::Chrome, "/etc/opt/chrome/native-messaging-hosts"),
            (Os::Linux, Browser::Chromium, "/etc/chromium/native-messaging-hosts"),
            (Os::Linux, Browser::Edge, "/etc/opt/edge/native-messaging-hosts"),
            (Os::Linux, Browser::Brave, "/etc/chromium/native-messaging-hosts"),
            (Os::Linux, Browser::Vivaldi, "/etc/chromium/native-messaging-hosts"),
            (Os::Linux, Browser::Firefox, "/usr/lib/mozilla/native-messaging-hosts"),
            (Os::MacOs, Browser::Chrome, "/Library/Google/Chrome/NativeMessagingHosts"),
            (Os::MacOs, Browser::Chromium, "/Library/Application Support/Chromium/NativeMessagingHosts"),
            (Os::MacOs, Browser::Edge, "/Library/Microsoft/Edge/NativeMessagingHosts"),
            (Os::MacOs, Browser::Brave, "/Library/Application Support/Chromium/NativeMessagingHosts"),
            (Os::MacOs, Browser::Vivaldi, "/Library/Application Support/Chromium/NativeMessagingHosts"),
            (Os::MacOs, Browser::Firefox, "/Library/Application Support/Mozilla/NativeMessagingHosts"),
        ];
        for (os, browser, dir) in cases {
            assert_eq!(system(os, browser), PathBuf::from(format!("{dir}/{NAME}")), "{os:?} {browser}");
        }
    }

    #[test]
    fn the_table_has_a_row_for_every_browser_on_every_os() {
        for os in [Os::Linux, Os::MacOs, Os::Windows] {
            let browsers: Vec<Browser> =
                MANIFEST_FOLDERS.iter().filter(|row| row.os == os).map(|row| row.browser).collect();
            assert_eq!(browsers, Browser::ALL, "{os:?}: one row per browser, in the order reports list them");
            for browser in Browser::ALL {
                assert_eq!(matches!(reads(browser, os), Reads::Registry { .. }), os == Os::Windows, "{os:?} {browser}");
            }
        }
    }

    #[test]
    fn every_system_folder_of_a_browser_is_a_location_the_first_where_install_writes() {
        let linux = Platform::new(Os::Linux, &[]);
        let all = |browser| -> Vec<PathBuf> {
            let locations = manifest_locations(browser, Scope::System, &linux, Path::new("/b")).unwrap();
            locations.iter().map(|location| location.manifest().to_owned()).collect()
        };
        let file = |dir: &str| PathBuf::from(format!("{dir}/{NAME}"));
        assert_eq!(
            all(Browser::Brave),
            [file("/etc/chromium/native-messaging-hosts"), file("/etc/opt/brave/native-messaging-hosts")]
        );
        assert_eq!(
            all(Browser::Vivaldi),
            [file("/etc/chromium/native-messaging-hosts"), file("/etc/opt/vivaldi/native-messaging-hosts")]
        );
        assert_eq!(all(Browser::Chrome), [file("/etc/opt/chrome/native-messaging-hosts")]);
        let user = manifest_locations(
            Browser::Brave,
            Scope::User,
            &Platform::new(Os::Linux, &[("HOME", "/h")]),
            Path::new("/b"),
        );
        assert_eq!(user.unwrap().len(), 1, "one folder for the user's own hosts");
    }

    /// docs/distributing.md's table of the folders the .deb writes is this table's Linux system folders.
    #[test]
    fn the_docs_list_the_folders_of_this_table() {
        let doc = include_str!("../../docs/distributing.md");
        let mut table = String::from("| browser | folders |\n| --- | --- |\n");
        for row in MANIFEST_FOLDERS.iter().filter(|row| row.os == Os::Linux) {
            let Reads::Files { system, .. } = row.reads else { panic!("Linux reads files") };
            let folders: Vec<String> = system.iter().map(|folder| format!("`{folder}`")).collect();
            table.push_str(&format!("| {} | {} |\n", row.browser.name(), folders.join(", ")));
        }
        assert!(doc.contains(&table), "docs/distributing.md should hold this table of the .deb's folders:\n{table}");
    }

    #[test]
    fn windows_registry_keys() {
        let platform = Platform::new(Os::Windows, &[("LOCALAPPDATA", "C:/Users/u/AppData/Local")]);
        let base = Path::new("C:/Users/u/AppData/Local/llm-cache-host");
        let cases = [
            (Browser::Chrome, "Software\\Google\\Chrome", "chromium"),
            (Browser::Chromium, "Software\\Chromium", "chromium"),
            (Browser::Edge, "Software\\Microsoft\\Edge", "chromium"),
            (Browser::Brave, "Software\\Google\\Chrome", "chromium"),
            (Browser::Vivaldi, "Software\\Google\\Chrome", "chromium"),
            (Browser::Firefox, "Software\\Mozilla", "firefox"),
        ];
        for scope in [Scope::User, Scope::System] {
            for (browser, vendor, folder) in cases {
                let location = manifest_location(browser, scope, &platform, base).unwrap();
                let expected = Location::Registry {
                    hive: if scope == Scope::User { Hive::CurrentUser } else { Hive::LocalMachine },
                    key: format!("{vendor}\\NativeMessagingHosts\\com.browserx.llm_cache"),
                    manifest: base.join("manifests").join(folder).join(NAME),
                };
                assert_eq!(location, expected, "{browser} {scope:?}");
            }
        }
    }

    #[test]
    fn locations_need_home() {
        for os in [Os::Linux, Os::MacOs] {
            let error = manifest_location(Browser::Chrome, Scope::User, &Platform::new(os, &[]), Path::new("/b"));
            assert!(error.unwrap_err().0.contains("HOME"), "{os:?}");
        }
    }

    #[test]
    fn custom_profiles() {
        let host = HostName::default_host();
        assert_eq!(
            profile_location(Os::Linux, &host, Path::new("/tmp/profile")).unwrap().manifest(),
            Path::new("/tmp/profile/NativeMessagingHosts").join(NAME)
        );
        assert!(profile_location(Os::MacOs, &host, Path::new("/tmp/p")).is_some());
        assert_eq!(profile_location(Os::Windows, &host, Path::new("C:/p")), None);
    }

    #[test]
    fn another_host_has_its_own_files_and_keys() {
        let mail = HostName::parse("com.example.mail_cache").unwrap();
        let linux = Platform::new(Os::Linux, &[("HOME", "/home/u")]).with_host(mail.clone());
        for (scope, expected) in [
            (Scope::User, "/home/u/.config/chromium/NativeMessagingHosts/com.example.mail_cache.json"),
            (Scope::System, "/etc/chromium/native-messaging-hosts/com.example.mail_cache.json"),
        ] {
            let location = manifest_location(Browser::Chromium, scope, &linux, Path::new("/b")).unwrap();
            assert_eq!(location.manifest(), Path::new(expected));
        }
        assert_eq!(linux.data_dir(), Some(PathBuf::from("/home/u/.local/share/com.example.mail_cache")));
        let windows = Platform::new(Os::Windows, &[("LOCALAPPDATA", "C:/L")]).with_host(mail.clone());
        let base = Path::new("C:/L/com.example.mail_cache");
        let expected = Location::Registry {
            hive: Hive::CurrentUser,
            key: "Software\\Mozilla\\NativeMessagingHosts\\com.example.mail_cache".into(),
            manifest: base.join("manifests/firefox/com.example.mail_cache.json"),
        };
        assert_eq!(manifest_location(Browser::Firefox, Scope::User, &windows, base).unwrap(), expected);
        assert_eq!(
            profile_location(Os::Linux, &mail, Path::new("/p")).unwrap().manifest(),
            Path::new("/p/NativeMessagingHosts/com.example.mail_cache.json")
        );
    }

    fn existing(paths: &[&str]) -> impl Fn(&Path) -> bool {
        let paths: HashSet<PathBuf> = paths.iter().map(PathBuf::from).collect();
        move |path| paths.contains(path)
    }

    #[test]
    fn detection_on_linux() {
        let platform = Platform::new(Os::Linux, &[("HOME", "/home/u")]);
        let exists = existing(&[
            "/usr/bin/chromium",
            "/snap/bin/firefox",
            "/home/u/.local/share/flatpak/app/com.brave.Browser",
            "/var/lib/flatpak/app/com.google.Chrome",
            "/opt/google/chrome/chrome",
        ]);
        assert_eq!(detect(Browser::Chromium, &platform, &exists), [Build::Native("/usr/bin/chromium".into())]);
        assert_eq!(detect(Browser::Firefox, &platform, &exists), [Build::Snap("/snap/bin/firefox".into())]);
        assert_eq!(
            detect(Browser::Brave, &platform, &exists),
            [Build::Flatpak("/home/u/.local/share/flatpak/app/com.brave.Browser".into())]
        );
        let chrome = detect(Browser::Chrome, &platform, &exists);
        assert_eq!(chrome.len(), 2);
        assert_eq!(sandbox_warning(Browser::Chrome, &chrome), None, "a native build besides the Flatpak works");
        assert!(detect(Browser::Edge, &platform, &exists).is_empty());
        let warning = sandbox_warning(Browser::Firefox, &detect(Browser::Firefox, &platform, &exists)).unwrap();
        assert!(warning.contains("a Snap (/snap/bin/firefox)") && warning.contains("can't start native"), "{warning}");
        assert_eq!(sandbox_warning(Browser::Edge, &[]), None);
    }

    #[test]
    fn detection_on_mac_and_windows() {
        let mac = Platform::new(Os::MacOs, &[("HOME", "/Users/u")]);
        let exists = existing(&["/Applications/Google Chrome.app", "/Users/u/Applications/Firefox.app"]);
        assert_eq!(detect(Browser::Chrome, &mac, &exists), [Build::Native("/Applications/Google Chrome.app".into())]);
        assert_eq!(detect(Browser::Firefox, &mac, &exists).len(), 1);
        assert!(detect(Browser::Edge, &mac, &exists).is_empty());

        let windows = Platform::new(
            Os::Windows,
            &[("ProgramFiles(x86)", "C:/PF86"), ("LOCALAPPDATA", "C:/Users/u/AppData/Local")],
        );
        let edge = Path::new("C:/PF86").join("Microsoft\\Edge\\Application\\msedge.exe");
        let exists = move |path: &Path| path == edge;
        assert_eq!(detect(Browser::Edge, &windows, &exists).len(), 1);
        assert!(detect(Browser::Chrome, &windows, &exists).is_empty());
    }
}
