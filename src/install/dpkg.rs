//! Which files a Debian package owns, as dpkg's database says, so that a system install never takes
//! over a manifest a package installed (dpkg would then find its file changed, or gone), and a system
//! uninstall never deletes one.

use std::path::Path;
use std::process::{Command, Stdio};

/// The package that owns `path`, by `dpkg-query -S`; `None` when no package does, or when there is no
/// dpkg on this machine (then no package can own it).
pub fn owner(path: &Path) -> Option<String> {
    let output =
        Command::new("dpkg-query").arg("-S").arg(path).stdin(Stdio::null()).stderr(Stdio::null()).output().ok()?;
    if !output.status.success() {
        return None;
    }
    owner_in(&String::from_utf8_lossy(&output.stdout), path)
}

/// The owner `dpkg-query -S <path>` names in `output`: its lines are `package[, package...]: path`,
/// and a diversion's `diversion by ...` lines say nothing of owners.
fn owner_in(output: &str, path: &Path) -> Option<String> {
    let path = path.to_str()?;
    output
        .lines()
        .filter(|line| !line.starts_with("diversion by "))
        .find_map(|line| line.strip_suffix(path)?.strip_suffix(": ").map(str::to_owned))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_dpkg_query_output() {
        let path = Path::new("/etc/chromium/native-messaging-hosts/com.example.cache.json");
        let found = "cache: /etc/chromium/native-messaging-hosts/com.example.cache.json\n";
        assert_eq!(owner_in(found, path).as_deref(), Some("cache"));
        let diverted =
            "diversion by other from: /etc/x.json\ndiversion by other to: /etc/x.json.real\nbase: /etc/x.json\n";
        assert_eq!(owner_in(diverted, Path::new("/etc/x.json")).as_deref(), Some("base"));
        assert_eq!(owner_in("", path), None);
    }
}
