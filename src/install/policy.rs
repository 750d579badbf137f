//! Enterprise policies that stop a browser from starting our host.
//!
//! Chromium-based browsers honour three policies here: `NativeMessagingUserLevelHosts` (false: only
//! hosts registered for every user are started), `NativeMessagingBlocklist` (host names, or `*` for
//! all) and `NativeMessagingAllowlist` (names exempt from a `*` blocklist). Where they are read from:
//! - Linux: every `*.json` file in the browser's `policies/managed` folder (`/etc/opt/chrome/...`,
//!   `/etc/chromium/...`, `/etc/opt/edge/...`, `/etc/brave/...`). `doctor --policy-root DIR` reads
//!   them under `DIR` instead of `/`, for tests and for checking a mounted system image.
//! - macOS: the managed preferences in `/Library/Managed Preferences/<bundle id>.plist` (and the
//!   per-user folder beside it), read with `defaults read`.
//! - Windows: `HKLM` and `HKCU` `\SOFTWARE\Policies\<vendor>`, read with `reg query`.
//!
//! Firefox has no such policy, so it isn't checked.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use super::browsers::{Browser, Scope};
use crate::host_name::HostName;
use crate::paths::Os;

/// The three policies, merged from every source read.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Policy {
    /// `NativeMessagingUserLevelHosts`, if set.
    pub user_level_hosts: Option<bool>,
    /// `NativeMessagingBlocklist`.
    pub blocklist: Vec<String>,
    /// `NativeMessagingAllowlist`.
    pub allowlist: Vec<String>,
}

impl Policy {
    /// Why these policies stop the host `host` registered at `scope`, if they do.
    pub fn blocks(&self, host: &HostName, scope: Scope) -> Option<String> {
        let allowed = self.allowlist.iter().any(|name| name == host.as_str());
        if self.blocklist.iter().any(|name| name == host.as_str()) {
            return Some(format!("NativeMessagingBlocklist names {host}"));
        }
        if self.blocklist.iter().any(|name| name == "*") && !allowed {
            return Some(format!("NativeMessagingBlocklist is \"*\" and NativeMessagingAllowlist doesn't name {host}"));
        }
        if scope == Scope::User && self.user_level_hosts == Some(false) {
            return Some(
                "NativeMessagingUserLevelHosts is false: only hosts installed for every user (--system) start".into(),
            );
        }
        None
    }

    /// Adds what another source sets.
    fn merge(&mut self, other: Policy) {
        self.user_level_hosts = other.user_level_hosts.or(self.user_level_hosts);
        self.blocklist.extend(other.blocklist);
        self.allowlist.extend(other.allowlist);
    }
}

/// What was read for one browser: the merged policies, the sources, and files that couldn't be read.
#[derive(Debug, Default)]
pub struct Reading {
    /// The policies.
    pub policy: Policy,
    /// Where they were looked for, for the report.
    pub sources: Vec<String>,
    /// Policy files that exist but couldn't be read or parsed (the browser ignores those too).
    pub problems: Vec<String>,
}

/// The managed policy folders a browser reads on Linux.
pub fn linux_policy_dirs(browser: Browser) -> &'static [&'static str] {
    match browser {
        Browser::Chrome => &["/etc/opt/chrome/policies/managed"],
        // Ubuntu's older chromium-browser package used its own folder.
        Browser::Chromium => &["/etc/chromium/policies/managed", "/etc/chromium-browser/policies/managed"],
        Browser::Edge => &["/etc/opt/edge/policies/managed"],
        Browser::Brave => &["/etc/brave/policies/managed"],
        // Not a Google-branded build: Chromium's folder.
        Browser::Vivaldi => &["/etc/chromium/policies/managed"],
        Browser::Firefox => &[],
    }
}

/// The preferences domain (bundle id) a browser reads managed policies from on macOS.
fn mac_domain(browser: Browser) -> Option<&'static str> {
    match browser {
        Browser::Chrome => Some("com.google.Chrome"),
        Browser::Chromium => Some("org.chromium.Chromium"),
        Browser::Edge => Some("com.microsoft.Edge"),
        Browser::Brave => Some("com.brave.Browser"),
        Browser::Vivaldi => Some("com.vivaldi.Vivaldi"),
        Browser::Firefox => None,
    }
}

/// The policy key under `HKLM` and `HKCU` on Windows.
fn windows_policy_key(browser: Browser) -> Option<&'static str> {
    match browser {
        Browser::Chrome => Some("SOFTWARE\\Policies\\Google\\Chrome"),
        Browser::Chromium | Browser::Vivaldi => Some("SOFTWARE\\Policies\\Chromium"),
        Browser::Edge => Some("SOFTWARE\\Policies\\Microsoft\\Edge"),
        Browser::Brave => Some("SOFTWARE\\Policies\\BraveSoftware\\Brave"),
        Browser::Firefox => None,
    }
}

/// The policies in one Linux policy file's JSON.
///
/// # Errors
/// When the text is not a JSON object.
pub fn parse_json(text: &str) -> Result<Policy, String> {
    let value: Value = serde_json::from_str(text).map_err(|error| error.to_string())?;
    let object = value.as_object().ok_or("not a JSON object")?;
    let list = |name: &str| -> Vec<String> {
        object
            .get(name)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(String::from)
            .collect()
    };
    Ok(Policy {
        user_level_hosts: object.get("NativeMessagingUserLevelHosts").and_then(Value::as_bool),
        blocklist: list("NativeMessagingBlocklist"),
        allowlist: list("NativeMessagingAllowlist"),
    })
}

/// Reads a browser's Linux policy files under `root` (`/` normally).
pub fn read_linux(browser: Browser, root: &Path) -> Reading {
    let mut reading = Reading::default();
    for dir in linux_policy_dirs(browser) {
        let dir = root.join(dir.trim_start_matches('/'));
        reading.sources.push(dir.display().to_string());
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        let mut files: Vec<PathBuf> = entries
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
            .collect();
        files.sort();
        for file in files {
            match std::fs::read_to_string(&file).map_err(|e| e.to_string()).and_then(|text| parse_json(&text)) {
                Ok(policy) => reading.policy.merge(policy),
                Err(why) => reading.problems.push(format!("{}: {why}", file.display())),
            }
        }
    }
    reading
}

/// `defaults read <domain> <key>` for a boolean: `1` or `0`.
pub fn parse_defaults_bool(output: &str) -> Option<bool> {
    match output.trim() {
        "1" | "true" | "YES" => Some(true),
        "0" | "false" | "NO" => Some(false),
        _ => None,
    }
}

/// `defaults read <domain> <key>` for an array: `(` then one quoted or bare item a line, then `)`.
pub fn parse_defaults_array(output: &str) -> Vec<String> {
    output
        .lines()
        .map(|line| line.trim().trim_end_matches(','))
        .filter(|item| !item.is_empty() && *item != "(" && *item != ")")
        .map(|item| item.trim_matches('"').to_owned())
        .collect()
}

/// `reg query <key> /v <name>` for a DWORD: `0x0` is false.
pub fn parse_reg_dword(output: &str) -> Option<bool> {
    output.lines().find_map(|line| {
        let (_, value) = line.split_once("REG_DWORD")?;
        let value = value.trim().trim_start_matches("0x");
        u32::from_str_radix(value, 16).ok().map(|n| n != 0)
    })
}

/// `reg query <key>\<list>`: the `REG_SZ` values `1`, `2`, ... of a list policy.
pub fn parse_reg_list(output: &str) -> Vec<String> {
    output.lines().filter_map(|line| line.split_once("REG_SZ").map(|(_, value)| value.trim().to_owned())).collect()
}

/// Reads a browser's policies on this machine (`os`); `root` applies to Linux's files.
/// `None` for browsers without such policies (Firefox).
pub fn read(browser: Browser, os: Os, root: &Path) -> Option<Reading> {
    if browser == Browser::Firefox {
        return None;
    }
    match os {
        Os::Linux => Some(read_linux(browser, root)),
        Os::MacOs => mac_domain(browser).map(read_mac),
        Os::Windows => windows_policy_key(browser).map(read_windows),
    }
}

/// Stdout of a command that succeeded; `None` otherwise (an unset policy makes these fail).
fn output_of(program: &str, args: &[&str]) -> Option<String> {
    let output = Command::new(program).args(args).output().ok()?;
    output.status.success().then(|| String::from_utf8_lossy(&output.stdout).into_owned())
}

/// macOS: the machine-wide and the user's managed preferences for `domain`.
fn read_mac(domain: &str) -> Reading {
    let mut reading = Reading::default();
    let mut plists = vec![format!("/Library/Managed Preferences/{domain}")];
    if let Ok(user) = std::env::var("USER") {
        plists.push(format!("/Library/Managed Preferences/{user}/{domain}"));
    }
    for plist in plists {
        reading.sources.push(format!("{plist}.plist"));
        if !Path::new(&format!("{plist}.plist")).exists() {
            continue;
        }
        let read = |key: &str| output_of("/usr/bin/defaults", &["read", &plist, key]);
        reading.policy.merge(Policy {
            user_level_hosts: read("NativeMessagingUserLevelHosts").as_deref().and_then(parse_defaults_bool),
            blocklist: read("NativeMessagingBlocklist").as_deref().map(parse_defaults_array).unwrap_or_default(),
            allowlist: read("NativeMessagingAllowlist").as_deref().map(parse_defaults_array).unwrap_or_default(),
        });
    }
    reading
}

/// Windows: the policy key under `HKLM` and `HKCU`.
fn read_windows(key: &str) -> Reading {
    let mut reading = Reading::default();
    for hive in ["HKLM", "HKCU"] {
        let full = format!("{hive}\\{key}");
        reading.sources.push(full.clone());
        let list = |name: &str| {
            let list_key = format!("{full}\\{name}");
            output_of("reg.exe", &["query", &list_key]).as_deref().map(parse_reg_list).unwrap_or_default()
        };
        reading.policy.merge(Policy {
            user_level_hosts: output_of("reg.exe", &["query", &full, "/v", "NativeMessagingUserLevelHosts"])
                .as_deref()
                .and_then(parse_reg_dword),
            blocklist: list("NativeMessagingBlocklist"),
            allowlist: list("NativeMessagingAllowlist"),
        });
    }
    reading
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(json: &str) -> Policy {
        parse_json(json).unwrap()
    }

    #[test]
    fn what_blocks() {
        let host = HostName::default_host();
        assert_eq!(policy("{}").blocks(&host, Scope::User), None);
        assert_eq!(policy(r#"{"HomepageLocation": "x"}"#).blocks(&host, Scope::User), None);
        let user_level = policy(r#"{"NativeMessagingUserLevelHosts": false}"#);
        assert!(user_level.blocks(&host, Scope::User).unwrap().contains("NativeMessagingUserLevelHosts"));
        assert_eq!(user_level.blocks(&host, Scope::System), None, "system hosts are still allowed");
        assert_eq!(policy(r#"{"NativeMessagingUserLevelHosts": true}"#).blocks(&host, Scope::User), None);
        let all = policy(r#"{"NativeMessagingBlocklist": ["*"]}"#);
        assert!(all.blocks(&host, Scope::System).unwrap().contains("\"*\""));
        let allowed =
            policy(r#"{"NativeMessagingBlocklist": ["*"], "NativeMessagingAllowlist": ["com.browserx.llm_cache"]}"#);
        assert_eq!(allowed.blocks(&host, Scope::User), None);
        let named = policy(r#"{"NativeMessagingBlocklist": ["com.browserx.llm_cache"]}"#);
        assert!(named.blocks(&host, Scope::User).unwrap().contains("names com.browserx.llm_cache"));
        assert_eq!(policy(r#"{"NativeMessagingBlocklist": ["com.other"]}"#).blocks(&host, Scope::User), None);
        assert!(parse_json("[]").is_err());
        assert!(parse_json("{").is_err());
        // Lists name hosts, each by its own name.
        let mail = HostName::parse("com.example.mail_cache").unwrap();
        assert!(named.blocks(&mail, Scope::User).is_none());
        assert!(allowed.blocks(&mail, Scope::User).unwrap().contains("doesn't name com.example.mail_cache"));
        let mail_named = policy(r#"{"NativeMessagingBlocklist": ["com.example.mail_cache"]}"#);
        assert!(mail_named.blocks(&mail, Scope::User).unwrap().contains("names com.example.mail_cache"));
    }

    #[test]
    fn linux_files_under_a_root() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("etc/chromium/policies/managed");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("a.json"), r#"{"NativeMessagingBlocklist": ["*"]}"#).unwrap();
        std::fs::write(dir.join("b.json"), r#"{"NativeMessagingAllowlist": ["com.browserx.llm_cache"]}"#).unwrap();
        std::fs::write(dir.join("broken.json"), "{").unwrap();
        std::fs::write(dir.join("notes.txt"), "{").unwrap();
        let reading = read_linux(Browser::Chromium, root.path());
        assert_eq!(reading.policy.blocks(&HostName::default_host(), Scope::User), None);
        assert_eq!(reading.problems.len(), 1, "{:?}", reading.problems);
        assert_eq!(reading.sources.len(), 2);
        assert!(read_linux(Browser::Chrome, root.path()).policy == Policy::default());
        assert!(read(Browser::Firefox, Os::Linux, root.path()).is_none());
    }

    #[test]
    fn mac_and_windows_outputs() {
        assert_eq!(parse_defaults_bool("0\n"), Some(false));
        assert_eq!(parse_defaults_bool("1\n"), Some(true));
        assert_eq!(parse_defaults_bool("(\n)"), None);
        assert_eq!(
            parse_defaults_array("(\n    \"*\",\n    \"com.browserx.llm_cache\"\n)\n"),
            ["*", "com.browserx.llm_cache"]
        );
        assert_eq!(parse_defaults_array("(\n    foo\n)"), ["foo"]);
        let dword = "\r\nHKEY_LOCAL_MACHINE\\SOFTWARE\\Policies\\Google\\Chrome\r\n    NativeMessagingUserLevelHosts    REG_DWORD    0x0\r\n";
        assert_eq!(parse_reg_dword(dword), Some(false));
        assert_eq!(parse_reg_dword("    X    REG_DWORD    0x1"), Some(true));
        let list = "HKEY_LOCAL_MACHINE\\SOFTWARE\\Policies\\Google\\Chrome\\NativeMessagingBlocklist\r\n    1    REG_SZ    *\r\n    2    REG_SZ    com.x\r\n";
        assert_eq!(parse_reg_list(list), ["*", "com.x"]);
    }
}
