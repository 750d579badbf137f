//! The Windows registry through `reg.exe`: set, read and delete a host key's default value.
//!
//! We drive `reg.exe` rather than the Win32 API so the commands are plain data that tests check on
//! any OS, and so the binary needs no Windows-only dependency. The commands are the ones Chrome's and
//! Edge's native messaging pages give (`REG ADD "HKCU\Software\...\<name>" /ve /t REG_SZ /d <path> /f`).

use std::ffi::OsString;
use std::path::Path;
use std::process::Command;

use super::browsers::Hive;

/// The arguments that set `hive\key`'s default value to `manifest`.
pub fn add_args(hive: Hive, key: &str, manifest: &Path) -> Vec<OsString> {
    let mut args = full_key_args("add", hive, key);
    args.extend(["/ve", "/t", "REG_SZ", "/d"].map(OsString::from));
    args.push(manifest.as_os_str().to_owned());
    args.push("/f".into());
    args
}

/// The arguments that print `hive\key`'s default value.
pub fn query_args(hive: Hive, key: &str) -> Vec<OsString> {
    let mut args = full_key_args("query", hive, key);
    args.push("/ve".into());
    args
}

/// The arguments that delete `hive\key` (and nothing above it).
pub fn delete_args(hive: Hive, key: &str) -> Vec<OsString> {
    let mut args = full_key_args("delete", hive, key);
    args.push("/f".into());
    args
}

/// `reg <verb> HIVE\key`.
fn full_key_args(verb: &str, hive: Hive, key: &str) -> Vec<OsString> {
    vec![verb.into(), format!("{}\\{key}", hive.short()).into()]
}

/// The default value in `reg query /ve`'s output: the text after `REG_SZ` on the value's line.
///
/// The output looks like
/// ```text
/// HKEY_CURRENT_USER\Software\Google\Chrome\NativeMessagingHosts\com.browserx.llm_cache
///     (Default)    REG_SZ    C:\Users\u\AppData\Local\llm-cache-host\manifests\chromium\com.browserx.llm_cache.json
/// ```
/// where `(Default)` is translated on other locales, so only the type is looked for.
pub fn parse_default_value(output: &str) -> Option<String> {
    output.lines().find_map(|line| {
        let (_, value) = line.split_once("REG_SZ")?;
        Some(value.trim().to_owned())
    })
}

/// Runs `reg.exe` with `args`; returns its stdout.
///
/// # Errors
/// What `reg.exe` said on stderr (or that it couldn't be started), when it fails.
pub fn run(args: &[OsString]) -> Result<String, String> {
    let output = Command::new("reg.exe").args(args).output().map_err(|error| format!("can't run reg.exe: {error}"))?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        let said = String::from_utf8_lossy(&output.stderr);
        Err(format!("reg.exe {} failed: {}", args[0].to_string_lossy(), said.trim()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(args: Vec<OsString>) -> Vec<String> {
        args.into_iter().map(|a| a.into_string().unwrap()).collect()
    }

    const KEY: &str = "Software\\Google\\Chrome\\NativeMessagingHosts\\com.browserx.llm_cache";

    #[test]
    fn commands() {
        let manifest = Path::new("C:\\Users\\u\\AppData\\Local\\llm-cache-host\\manifests\\chromium\\m.json");
        assert_eq!(
            words(add_args(Hive::CurrentUser, KEY, manifest)),
            [
                "add",
                "HKCU\\Software\\Google\\Chrome\\NativeMessagingHosts\\com.browserx.llm_cache",
                "/ve",
                "/t",
                "REG_SZ",
                "/d",
                "C:\\Users\\u\\AppData\\Local\\llm-cache-host\\manifests\\chromium\\m.json",
                "/f"
            ]
        );
        assert_eq!(words(query_args(Hive::LocalMachine, KEY)), ["query", &format!("HKLM\\{KEY}"), "/ve"]);
        assert_eq!(words(delete_args(Hive::CurrentUser, KEY)), ["delete", &format!("HKCU\\{KEY}"), "/f"]);
    }

    #[test]
    fn query_output() {
        let output = "\r\nHKEY_CURRENT_USER\\Software\\Google\\Chrome\\NativeMessagingHosts\\com.browserx.llm_cache\r\n    \
                      (Default)    REG_SZ    C:\\Program Files\\x\\m.json\r\n\r\n";
        assert_eq!(parse_default_value(output).as_deref(), Some("C:\\Program Files\\x\\m.json"));
        let german = "HKEY_CURRENT_USER\\Software\\x\n    (Standard)    REG_SZ    C:\\m.json\n";
        assert_eq!(parse_default_value(german).as_deref(), Some("C:\\m.json"));
        assert_eq!(parse_default_value("HKEY_CURRENT_USER\\Software\\x\n"), None);
    }
}
