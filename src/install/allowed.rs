//! Which extensions an install allows: the Chrome extension ids and Firefox add-on ids, united when an
//! install adds one, taken away when `uninstall --extension-id` removes one, and read back from the
//! manifests already written so that nothing someone installed before is dropped.

use std::io::Read;
use std::path::Path;

use serde_json::Value;

use super::browsers::Family;
use super::manifest::{chrome_origin, is_chrome_extension_id, is_firefox_extension_id};

/// The most bytes of a manifest file read. A manifest is a few hundred bytes; this leaves room for
/// hundreds of ids, and bounds what a file planted in a manifest folder can make us read.
pub const MAX_MANIFEST_BYTES: u64 = 64 * 1024;

/// The extensions allowed: Chrome extension ids for the Chromium family's `allowed_origins`, Firefox
/// add-on ids for Firefox's `allowed_extensions`, each in the order they were first given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Allowed {
    /// Chrome extension ids (32 letters from a to p).
    pub chrome: Vec<String>,
    /// Firefox add-on ids.
    pub firefox: Vec<String>,
}

impl Allowed {
    /// The ids for one manifest family.
    pub fn of(&self, family: Family) -> &[String] {
        match family {
            Family::Chromium => &self.chrome,
            Family::Firefox => &self.firefox,
        }
    }

    /// Whether no extension of either family is allowed.
    pub fn is_empty(&self) -> bool {
        self.chrome.is_empty() && self.firefox.is_empty()
    }

    /// Adds every id of `other` that isn't here yet, after the ones here.
    pub fn add(&mut self, other: &Allowed) {
        add_missing(&mut self.chrome, &other.chrome);
        add_missing(&mut self.firefox, &other.firefox);
    }

    /// The ids of `manifest` (a parsed manifest) that a browser can match: the origins of the form
    /// `chrome-extension://<id>/` and the valid add-on ids. Anything else there never matches.
    pub fn in_manifest(manifest: &Value) -> Allowed {
        let list = |name: &str| -> Vec<String> {
            let items = manifest.get(name).and_then(Value::as_array).into_iter().flatten();
            items.filter_map(Value::as_str).map(str::to_owned).collect()
        };
        let mut allowed = Allowed::default();
        let chrome: Vec<String> = list("allowed_origins").iter().filter_map(|origin| origin_id(origin)).collect();
        let firefox: Vec<String> =
            list("allowed_extensions").into_iter().filter(|id| is_firefox_extension_id(id)).collect();
        add_missing(&mut allowed.chrome, &chrome);
        add_missing(&mut allowed.firefox, &firefox);
        allowed
    }

    /// The command-line flags that allow these ids (`--extension-id ID`, `--firefox-extension-id 'ID'`),
    /// Firefox ids quoted so that the words work as shown in a POSIX shell and in PowerShell ({GUID} and
    /// @name mean something there; an add-on id never holds a quote).
    pub fn flags(&self) -> String {
        let chrome = self.chrome.iter().map(|id| format!(" --extension-id {id}"));
        let firefox = self.firefox.iter().map(|id| format!(" --firefox-extension-id '{id}'"));
        chrome.chain(firefox).collect()
    }
}

/// The extension id in an `allowed_origins` entry, when it is exactly `chrome-extension://<id>/`.
pub fn origin_id(origin: &str) -> Option<String> {
    let id = origin.strip_prefix("chrome-extension://")?.strip_suffix('/')?;
    (is_chrome_extension_id(id) && chrome_origin(id) == origin).then(|| id.to_owned())
}

/// Appends to `ids` each of `more` it lacks.
fn add_missing(ids: &mut Vec<String>, more: &[String]) {
    for id in more {
        if !ids.contains(id) {
            ids.push(id.clone());
        }
    }
}

/// Reads a manifest file, at most [`MAX_MANIFEST_BYTES`] of it.
///
/// # Errors
/// Whatever opening or reading returns, or `InvalidData` for a longer file or one that isn't UTF-8.
pub fn read_manifest_text(path: &Path) -> std::io::Result<String> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)?.take(MAX_MANIFEST_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_MANIFEST_BYTES {
        let why = format!("it is longer than {MAX_MANIFEST_BYTES} bytes, which no host manifest is");
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, why));
    }
    String::from_utf8(bytes).map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "it is not UTF-8"))
}

/// The ids the manifest at `path` allows, or `None` when there is no readable manifest there.
pub fn in_manifest_file(path: &Path) -> Option<Allowed> {
    let text = read_manifest_text(path).ok()?;
    let manifest: Value = serde_json::from_str(&text).ok()?;
    Some(Allowed::in_manifest(&manifest))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    const B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

    #[test]
    fn only_ids_a_browser_can_match_are_read() {
        let manifest = json!({
            "allowed_origins": [chrome_origin(A), "chrome-extension://*/", "https://example.org/", chrome_origin(A), 7,
                                format!("chrome-extension://{B}"), chrome_origin(B)],
            "allowed_extensions": ["x@y", "plain", "@name"],
        });
        let allowed = Allowed::in_manifest(&manifest);
        assert_eq!(allowed.chrome, [A, B]);
        assert_eq!(allowed.firefox, ["x@y", "@name"]);
        assert_eq!(
            allowed.flags(),
            format!(
                " --extension-id {A} --extension-id {B} --firefox-extension-id 'x@y' --firefox-extension-id '@name'"
            )
        );
        assert!(Allowed::in_manifest(&json!([])).is_empty());
    }

    #[test]
    fn adding_keeps_the_first_order() {
        let mut allowed = Allowed { chrome: vec![B.into()], firefox: Vec::new() };
        allowed.add(&Allowed { chrome: vec![A.into(), B.into()], firefox: vec!["@x".into()] });
        assert_eq!(
            (allowed.of(Family::Chromium), allowed.of(Family::Firefox)),
            (&[B.to_owned(), A.to_owned()][..], &["@x".to_owned()][..])
        );
    }

    #[test]
    fn long_manifests_are_not_read() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("m.json");
        std::fs::write(&path, format!("{{\"allowed_origins\": [\"{}\"]}}", chrome_origin(A))).unwrap();
        assert_eq!(in_manifest_file(&path).unwrap().chrome, [A]);
        std::fs::write(&path, " ".repeat(MAX_MANIFEST_BYTES as usize + 1)).unwrap();
        assert!(read_manifest_text(&path).unwrap_err().to_string().contains("longer than"));
        assert_eq!(in_manifest_file(&tmp.path().join("none.json")), None);
    }
}
