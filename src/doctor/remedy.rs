//! The commands doctor's lines give to put a failure right: the `install` that registers a browser
//! again and the `rm` that removes a manifest in the way. Pure functions of what is installed, so
//! that the checks and the report name the same command.

use std::path::Path;

use crate::host_name::HostName;
use crate::install::Target;
use crate::install::allowed::Allowed;
use crate::install::browsers::{Browser, Family};
use crate::install::manifest::DEFAULT_EXTENSION_ID;
use crate::paths::Os;

/// What a command registering Firefox shows where the add-on's id goes when none is installed: only
/// the extension's developer knows it (its manifest's `browser_specific_settings.gecko.id`).
pub const ADD_ON_ID: &str = "<your add-on id>";

/// What the remedies keep: every extension installed anywhere here, or asked about.
#[derive(Debug, Clone)]
pub struct Remedy {
    /// The extensions allowed by the records and the manifests checked, and those given.
    pub installed: Allowed,
    /// Whose shell the commands are for.
    pub os: Os,
    /// The host whose command they run, and name with `--host-name` when it isn't the default.
    pub host: HostName,
    /// The program that runs the command here ([`crate::install::browsers::Platform::program`]).
    pub program: String,
}

impl Remedy {
    /// The `install` command that registers `browsers` (or the profile `profile`) again, keeping every
    /// extension installed of `family` (of both when `None`), with `--system` for a system-wide place.
    pub fn command(
        &self,
        browsers: &[Browser],
        profile: Option<&Path>,
        system: bool,
        family: Option<Family>,
    ) -> String {
        let mut command = String::new();
        if system && self.os != Os::Windows {
            command.push_str("sudo ");
        }
        command.push_str(&self.host.invocation(&self.program, "install"));
        if system {
            command.push_str(" --system");
        }
        for browser in browsers {
            command.push_str(&format!(" --browser {browser}"));
        }
        if let Some(dir) = profile {
            command.push_str(&format!(" --user-data-dir '{}'", dir.display()));
        }
        // Each family's ids go only to the browsers of that family: a Chrome id given for Firefox is
        // no add-on id, and install would register Firefox for the demo add-on instead.
        let registers = |wanted: Family| {
            family.is_none_or(|family| family == wanted)
                && (browsers.is_empty() && profile.is_none()
                    || browsers.iter().any(|browser| browser.family() == wanted)
                    || wanted == Family::Chromium && profile.is_some())
        };
        let mut ids = Allowed::default();
        if registers(Family::Chromium) {
            ids.chrome = self.installed.chrome.clone();
        }
        if registers(Family::Firefox) {
            ids.firefox = self.installed.firefox.clone();
        }
        command.push_str(&ids.flags());
        // Extensions of the user's own and no add-on: Firefox needs one, which only they know (with
        // only the demo extension, install registers the demo add-on, which is right).
        let own_chrome = self.installed.chrome.iter().any(|id| id != DEFAULT_EXTENSION_ID);
        if registers(Family::Firefox) && ids.firefox.is_empty() && own_chrome {
            command.push_str(&format!(" --firefox-extension-id '{ADD_ON_ID}'"));
        }
        command
    }

    /// The command that registers `target` again, for every user when `system`.
    pub fn for_target(&self, target: &Target, system: bool) -> String {
        let profile = target
            .browsers
            .is_empty()
            .then(|| target.location.manifest().parent().and_then(Path::parent).unwrap_or(Path::new("DIR")).to_owned());
        self.command(&target.browsers, profile.as_deref(), system, Some(target.family))
    }
}

/// The command that removes a file, for the shell the OS has.
pub fn remove_command(file: &Path, os: Os) -> String {
    let quoted = file.display().to_string().replace('\'', "'\\''");
    match os {
        Os::Windows => format!("Remove-Item '{}'", file.display().to_string().replace('\'', "''")),
        _ => format!("rm '{quoted}'"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OWN: &str = "abcdefghijklmnopabcdefghijklmnop";

    fn remedy(chrome: &[&str], firefox: &[&str]) -> Remedy {
        let installed = Allowed {
            chrome: chrome.iter().map(|id| (*id).to_owned()).collect(),
            firefox: firefox.iter().map(|id| (*id).to_owned()).collect(),
        };
        Remedy { installed, os: Os::Linux, host: HostName::default_host(), program: "llm-cache-host".to_owned() }
    }

    #[test]
    fn firefox_is_given_add_on_ids_and_never_chrome_ids() {
        let own = remedy(&[OWN], &[]);
        let both = [Browser::Chromium, Browser::Firefox];
        assert_eq!(
            own.command(&[Browser::Firefox], None, false, None),
            "llm-cache-host install --browser firefox --firefox-extension-id '<your add-on id>'"
        );
        assert_eq!(
            own.command(&both, None, false, None),
            format!(
                "llm-cache-host install --browser chromium --browser firefox --extension-id {OWN} \
                 --firefox-extension-id '<your add-on id>'"
            )
        );
        assert_eq!(
            own.command(&[Browser::Firefox], None, false, Some(Family::Firefox)),
            "llm-cache-host install --browser firefox --firefox-extension-id '<your add-on id>'"
        );
        assert_eq!(
            own.command(&[Browser::Chromium], None, false, None),
            format!("llm-cache-host install --browser chromium --extension-id {OWN}")
        );
        // An add-on installed is kept; the demo extension alone gets the demo add-on from install.
        assert_eq!(
            remedy(&[OWN], &["a@b"]).command(&both, None, false, None),
            format!(
                "llm-cache-host install --browser chromium --browser firefox --extension-id {OWN} --firefox-extension-id 'a@b'"
            )
        );
        assert_eq!(
            remedy(&[DEFAULT_EXTENSION_ID], &[]).command(&[Browser::Firefox], None, false, None),
            "llm-cache-host install --browser firefox"
        );
        assert_eq!(
            remedy(&[OWN], &["a@b"]).command(&[Browser::Chromium], Some(Path::new("/p")), false, None),
            format!("llm-cache-host install --browser chromium --user-data-dir '/p' --extension-id {OWN}")
        );
    }
}
