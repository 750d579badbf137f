//! The commands doctor's lines give to put a failure right: the `install` that registers a browser
//! again and the `rm` that removes a manifest in the way. Pure functions of what is installed, so
//! that the checks and the report name the same command.

use std::path::Path;

use crate::host_name::HostName;
use crate::install::Target;
use crate::install::allowed::Allowed;
use crate::install::browsers::{Browser, Family};
use crate::paths::Os;

/// What the remedies keep: every extension installed anywhere here, or asked about.
#[derive(Debug, Clone)]
pub struct Remedy {
    /// The extensions allowed by the records and the manifests checked, and those given.
    pub installed: Allowed,
    /// Whose shell the commands are for.
    pub os: Os,
    /// The host whose command they run, and name with `--host-name` when it isn't the default.
    pub host: HostName,
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
        command.push_str(&self.host.invocation(&self.host.command(), "install"));
        if system {
            command.push_str(" --system");
        }
        for browser in browsers {
            command.push_str(&format!(" --browser {browser}"));
        }
        if let Some(dir) = profile {
            command.push_str(&format!(" --user-data-dir '{}'", dir.display()));
        }
        let ids = match family {
            Some(Family::Chromium) => Allowed { chrome: self.installed.chrome.clone(), firefox: Vec::new() },
            Some(Family::Firefox) => Allowed { chrome: Vec::new(), firefox: self.installed.firefox.clone() },
            None => self.installed.clone(),
        };
        command.push_str(&ids.flags());
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
