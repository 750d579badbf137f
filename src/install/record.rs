//! The install record: what `install` wrote, so `uninstall` removes exactly that and `doctor` knows
//! what to check.
//!
//! It is a small JSON file in the install base ([`super::layout::record_path`]). A second `install`
//! adds to it, so one `uninstall` undoes them all. It lists every extension the install allows, so
//! that an `install --extension-id B` after A keeps A, and `doctor` can say which ones it checks.

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::Target;
use super::allowed::{self, Allowed};
use super::browsers::{self, Browser, Family, Platform, Scope};
use super::layout::{self, record_mode};

/// The record's format; a newer binary reading an older record can tell.
const VERSION: u32 = 1;

/// What `install` wrote for one scope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    /// The record format's version when written (1 so far).
    pub version: u32,
    /// User or system: which install this is.
    pub scope: Scope,
    /// The binary `install` copied, if it copied one (it doesn't when it runs from there already).
    pub binary: Option<PathBuf>,
    /// The `llm-cache-host` command link `install` made to the binary (`~/.local/bin/llm-cache-host`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<PathBuf>,
    /// The manifests and registry keys written, one per browser or custom profile.
    pub entries: Vec<Target>,
    /// Folders `install` created, which `uninstall` removes when they are empty again.
    pub created_dirs: Vec<PathBuf>,
    /// The Chrome extension ids every Chromium-family manifest of this install allows (a record may
    /// lack the field: then its manifests say which).
    #[serde(default)]
    pub extension_ids: Vec<String>,
    /// The Firefox add-on ids every Firefox manifest of this install allows.
    #[serde(default)]
    pub firefox_extension_ids: Vec<String>,
}

impl Record {
    /// An empty record for `scope`.
    pub fn new(scope: Scope) -> Record {
        Record {
            version: VERSION,
            scope,
            binary: None,
            link: None,
            entries: Vec::new(),
            created_dirs: Vec::new(),
            extension_ids: Vec::new(),
            firefox_extension_ids: Vec::new(),
        }
    }

    /// Every extension this install allows: the ids recorded, and those its manifests allow (which
    /// covers a record that lists no ids).
    pub fn allowed(&self) -> Allowed {
        let mut allowed = Allowed { chrome: self.extension_ids.clone(), firefox: self.firefox_extension_ids.clone() };
        for entry in &self.entries {
            if let Some(more) = allowed::in_manifest_file(entry.location.manifest()) {
                // A manifest lists only its own family's ids; the other list is empty.
                allowed.add(&more);
            }
        }
        allowed
    }

    /// Records `allowed` as what this install allows.
    pub fn set_allowed(&mut self, allowed: &Allowed) {
        self.extension_ids = allowed.chrome.clone();
        self.firefox_extension_ids = allowed.firefox.clone();
    }

    /// Whether an entry of `family` is recorded.
    pub fn has_family(&self, family: Family) -> bool {
        self.entries.iter().any(|entry| entry.family == family)
    }

    /// Reads the record at `path`; `None` if there is none.
    ///
    /// # Errors
    /// When the file can't be read or isn't a record.
    pub fn load(path: &Path) -> io::Result<Option<Record>> {
        match std::fs::read(path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|error| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{} is not an install record: {error}", path.display()),
                )
            }),
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// Writes the record to `path` (through a temporary file, so a crash leaves the old one whole),
    /// with its scope's [`record_mode`].
    ///
    /// # Errors
    /// Whatever writing or renaming returns.
    pub fn save(&self, path: &Path) -> io::Result<()> {
        let mut text = serde_json::to_string_pretty(self).expect("a record always serialises");
        text.push('\n');
        super::write_atomically(path, text.as_bytes(), record_mode(self.scope))
    }

    /// Adds `entry`, replacing an entry at the same location.
    pub fn add_entry(&mut self, entry: Target) {
        self.entries.retain(|old| old.location != entry.location);
        self.entries.push(entry);
    }

    /// Forgets whatever the record names that `install` never writes, so that a record someone edited
    /// (or one of another host's) can't make `install` overwrite, or `uninstall` delete, any other
    /// file: an entry stays only when it is this host's manifest (`<host name>.json`) in a folder a
    /// browser of its family reads hosts from at this scope, or in a custom profile's
    /// `NativeMessagingHosts`; the binary only in the install base's `bin/`; the command link only
    /// where `install` makes it. Returns what was forgotten, for the report.
    pub fn keep_own(&mut self, platform: &Platform, base: &Path) -> Vec<String> {
        let scope = self.scope;
        let mut forgotten = Vec::new();
        self.entries.retain(|entry| {
            let own = is_own_entry(entry, scope, platform, base);
            if !own {
                forgotten.push(entry.location.to_string());
            }
            own
        });
        if let Some(binary) = self.binary.take_if(|binary| binary.parent() != Some(&base.join("bin"))) {
            forgotten.push(binary.display().to_string());
        }
        let link = layout::command_link(scope, platform);
        if let Some(stray) = self.link.take_if(|recorded| Some(&*recorded) != link.as_ref()) {
            forgotten.push(stray.display().to_string());
        }
        forgotten
    }

    /// A record of `scope` rebuilt from what is where `install` puts it, for when the record can't be
    /// read or is gone: this host's manifests at every browser's location for `scope` whose `path` is
    /// the install's binary (so a package's manifests, which name its own, are never taken), that
    /// binary, and the command link when it points at it. The folders `install` created are not known.
    pub fn recovered(scope: Scope, platform: &Platform, base: &Path) -> Record {
        let mut record = Record::new(scope);
        let binary = layout::binary_in(base, platform);
        let names_binary = |manifest: &Path| {
            let text = allowed::read_manifest_text(manifest).ok();
            let parsed = text.and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok());
            parsed.is_some_and(|parsed| parsed["path"].as_str() == binary.to_str())
        };
        for browser in Browser::ALL {
            let Ok(locations) = browsers::manifest_locations(browser, scope, platform, base) else { continue };
            for location in locations {
                if super::registered(&location, platform.os) && names_binary(location.manifest()) {
                    let label = browser.id().to_owned();
                    let target = Target { label, browsers: vec![browser], family: browser.family(), location };
                    super::push_target(&mut record.entries, target);
                }
            }
        }
        if binary.is_file() {
            record.binary = Some(binary.clone());
        }
        let link = layout::command_link(scope, platform);
        record.link = link.filter(|link| std::fs::read_link(link).is_ok_and(|target| target == binary));
        record
    }

    /// Whether the record lists nothing to remove.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty() && self.binary.is_none() && self.link.is_none()
    }

    /// Notes a folder `install` created, once.
    pub fn add_created_dir(&mut self, dir: PathBuf) {
        if !self.created_dirs.contains(&dir) {
            self.created_dirs.push(dir);
        }
    }
}

/// Whether `entry` is a manifest `install` writes for `platform`'s host at `scope`: one of the
/// locations the browsers of its family read (see [`browsers::MANIFEST_FOLDERS`]), or a custom
/// profile's, which any folder may hold.
fn is_own_entry(entry: &Target, scope: Scope, platform: &Platform, base: &Path) -> bool {
    let for_browsers = Browser::ALL
        .into_iter()
        .filter(|browser| browser.family() == entry.family)
        .filter_map(|browser| browsers::manifest_locations(browser, scope, platform, base).ok())
        .any(|locations| locations.contains(&entry.location));
    let profile = entry.location.manifest().parent().and_then(Path::parent).is_some_and(|dir| {
        entry.family == Family::Chromium
            && browsers::profile_location(platform.os, &platform.host, dir).as_ref() == Some(&entry.location)
    });
    for_browsers || profile
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::install::browsers::{Family, Location};

    fn entry(label: &str, manifest: &str) -> Target {
        Target {
            label: label.into(),
            browsers: Vec::new(),
            family: Family::Chromium,
            location: Location::File { manifest: manifest.into() },
        }
    }

    #[test]
    fn round_trip_and_merge() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("install.json");
        assert_eq!(Record::load(&path).unwrap(), None);
        let mut record = Record::new(Scope::User);
        record.binary = Some("/d/bin/llm-cache-host".into());
        record.add_entry(entry("chrome", "/a.json"));
        record.add_entry(entry("profile /p", "/b.json"));
        record.add_entry(entry("chromium", "/a.json"));
        record.add_created_dir("/d".into());
        record.add_created_dir("/d".into());
        assert_eq!(record.entries.iter().map(|e| e.label.as_str()).collect::<Vec<_>>(), ["profile /p", "chromium"]);
        assert_eq!(record.created_dirs.len(), 1);
        record.save(&path).unwrap();
        assert_eq!(Record::load(&path).unwrap(), Some(record));
        std::fs::write(&path, "{}").unwrap();
        assert!(Record::load(&path).unwrap_err().to_string().contains("not an install record"));
    }
}
