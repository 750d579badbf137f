//! The host manifest: the JSON file that tells a browser where the host binary is and which
//! extensions may start it.
//!
//! Chromium-based browsers list extension origins in `allowed_origins`; Firefox lists add-on ids in
//! `allowed_extensions`. The shapes are the templates in `manifest/`, checked against this code by a
//! test below.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::browsers::Family;
use crate::host_name::HostName;

/// The id of the demo extension in `extension-shim/` (fixed by the `key` in its manifest).
pub const DEFAULT_EXTENSION_ID: &str = "pahabgfbcdcnaidcniaebibdihehiphn";

/// The add-on id a Firefox build of the demo extension declares in `browser_specific_settings.gecko.id`.
///
/// Firefox add-on ids are chosen by the developer rather than derived from a key, so this is ours to
/// fix; an extension with another id is allowed with `--firefox-extension-id`.
pub const DEFAULT_FIREFOX_EXTENSION_ID: &str = "llm-cache-demo@browserx.dev";

/// What the manifest says about the host.
const DESCRIPTION: &str = "llm-cache-host: the local LMDB cache behind the llm_cache StorageTool";

/// The origin Chrome passes for the extension `id`, as `allowed_origins` lists it.
pub fn chrome_origin(id: &str) -> String {
    format!("chrome-extension://{id}/")
}

/// A host manifest, in the field order of the templates.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostManifest {
    /// Must equal the name extensions connect to, and the file name (or registry key) it is found by.
    pub name: String,
    /// Shown by nothing much, but required.
    pub description: String,
    /// The absolute path of the binary; browsers start it without a shell or PATH lookup.
    pub path: String,
    /// Always `stdio`: the only transport browsers have.
    #[serde(rename = "type")]
    pub kind: String,
    /// Chromium-based browsers: the extension origins that may start the host.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed_origins: Option<Vec<String>>,
    /// Firefox: the add-on ids that may start the host.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed_extensions: Option<Vec<String>>,
}

impl HostManifest {
    /// The manifest of the host `host` for a browser `family`, pointing at `binary`, allowing these
    /// Chrome extension ids (Chromium family) or Firefox add-on ids (Firefox).
    pub fn new(
        host: &HostName,
        family: Family,
        binary: &Path,
        chrome_ids: &[String],
        firefox_ids: &[String],
    ) -> HostManifest {
        let (allowed_origins, allowed_extensions) = match family {
            Family::Chromium => (Some(chrome_ids.iter().map(|id| chrome_origin(id)).collect()), None),
            Family::Firefox => (None, Some(firefox_ids.to_vec())),
        };
        HostManifest {
            name: host.as_str().to_owned(),
            description: DESCRIPTION.to_owned(),
            path: binary.to_string_lossy().into_owned(),
            kind: "stdio".to_owned(),
            allowed_origins,
            allowed_extensions,
        }
    }

    /// The file's text: pretty JSON with a final newline.
    pub fn to_text(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).expect("a manifest always serialises");
        text.push('\n');
        text
    }
}

/// Whether `id` is a Chrome extension id: 32 letters from `a` to `p` (a key hash written in base 16
/// with the digits shifted to letters). Chrome matches `allowed_origins` exactly, so anything else
/// could never match.
pub fn is_chrome_extension_id(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| (b'a'..=b'p').contains(&b))
}

/// The longest Firefox add-on id accepted. Firefox itself sets no limit; addons.mozilla.org signs
/// ids of at most 80 characters and stores at most 255. A longer one would not fit LMDB's 511-byte
/// keys once the origin, session and storage key are put together.
pub const MAX_ADDON_ID_BYTES: usize = 255;

/// Firefox's rule for add-on ids, in words, for the errors that refuse one.
pub const FIREFOX_ID_RULE: &str = "a Firefox add-on id is a {GUID} (8-4-4-4-12 hex digits in braces) or name@domain, \
    where the name may be empty (@name) and both parts use only letters, digits, '-', '.' and '_'";

/// Whether `id` is a Firefox add-on id, by Firefox's own rule (the add-on manager's `gIDTest`,
/// `^(\{[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\}|[a-z0-9-\._]*\@[a-z0-9-\._]+)$`,
/// case-insensitive): a braced GUID, or `name@domain` where the name may be empty (`@addon-example`
/// is MDN's own example). Firefox installs no add-on with another id, so no other could ever connect;
/// the length is bounded by [`MAX_ADDON_ID_BYTES`].
pub fn is_firefox_extension_id(id: &str) -> bool {
    id.len() <= MAX_ADDON_ID_BYTES && (is_braced_guid(id) || is_email_like(id))
}

/// `{xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx}` in hex digits of either case.
fn is_braced_guid(id: &str) -> bool {
    let Some(inner) = id.strip_prefix('{').and_then(|rest| rest.strip_suffix('}')) else { return false };
    let groups: Vec<&str> = inner.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(group, len)| group.len() == len && group.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// `name@domain`: one `@`, something after it, and only letters, digits, `-`, `.` and `_` around it.
fn is_email_like(id: &str) -> bool {
    let allowed = |b: u8| b.is_ascii_alphanumeric() || b"-._".contains(&b);
    id.split_once('@')
        .is_some_and(|(name, domain)| !domain.is_empty() && name.bytes().all(allowed) && domain.bytes().all(allowed))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A template from `manifest/` with its placeholders filled in, parsed.
    fn filled(template: &str, binary: &str, id_placeholder: &str, id: &str) -> HostManifest {
        let text = template.replace("@HOST_PATH@", binary).replace(id_placeholder, id);
        serde_json::from_str(&text).expect("a filled template is a manifest")
    }

    #[test]
    fn templates_match_what_install_writes() {
        let binary = Path::new("/home/u/.local/share/llm-cache-host/bin/llm-cache-host");
        let chrome = [DEFAULT_EXTENSION_ID.to_owned()];
        let firefox = [DEFAULT_FIREFOX_EXTENSION_ID.to_owned()];
        let template = include_str!("../../manifest/com.browserx.llm_cache.json");
        assert_eq!(
            filled(template, &binary.to_string_lossy(), "@EXTENSION_ID@", DEFAULT_EXTENSION_ID),
            HostManifest::new(&HostName::default_host(), Family::Chromium, binary, &chrome, &firefox)
        );
        let template = include_str!("../../manifest/firefox/com.browserx.llm_cache.json");
        assert_eq!(
            filled(template, &binary.to_string_lossy(), "@FIREFOX_EXTENSION_ID@", DEFAULT_FIREFOX_EXTENSION_ID),
            HostManifest::new(&HostName::default_host(), Family::Firefox, binary, &chrome, &firefox)
        );
    }

    #[test]
    fn written_text_round_trips_in_template_order() {
        let ids = ["aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa".to_owned(), DEFAULT_EXTENSION_ID.to_owned()];
        let manifest =
            HostManifest::new(&HostName::default_host(), Family::Chromium, Path::new("/x/llm-cache-host"), &ids, &[]);
        let text = manifest.to_text();
        assert_eq!(serde_json::from_str::<HostManifest>(&text).unwrap(), manifest);
        let order: Vec<usize> = ["\"name\"", "\"description\"", "\"path\"", "\"type\"", "\"allowed_origins\""]
            .map(|k| text.find(k).unwrap())
            .into();
        assert!(order.is_sorted(), "{text}");
        assert!(!text.contains("allowed_extensions"));
        assert_eq!(
            manifest.allowed_origins.unwrap(),
            [
                "chrome-extension://aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/",
                "chrome-extension://pahabgfbcdcnaidcniaebibdihehiphn/"
            ]
        );
    }

    #[test]
    fn the_manifest_names_its_host() {
        let mail = HostName::parse("com.example.mail_cache").unwrap();
        let manifest = HostManifest::new(&mail, Family::Firefox, Path::new("/x"), &[], &["a@b".to_owned()]);
        assert_eq!(manifest.name, "com.example.mail_cache");
    }

    #[test]
    fn extension_ids() {
        assert!(is_chrome_extension_id(DEFAULT_EXTENSION_ID));
        for bad in ["", "pahabgfbcdcnaidcniaebibdihehiphq", "PAHABGFBCDCNAIDCNIAEBIBDIHEHIPHN", "abc"] {
            assert!(!is_chrome_extension_id(bad), "{bad}");
        }
    }

    #[test]
    fn firefox_ids_follow_firefoxs_rule() {
        for good in [
            DEFAULT_FIREFOX_EXTENSION_ID,
            "@addon-example",
            "@name",
            "a.b-c_d@x.y",
            "x@y",
            "-x@y",
            "{4c2b7a4e-1d5e-4e8f-9a3b-2f1c0d9e8b7a}",
            "{FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF}",
            &format!("@{}", "a".repeat(MAX_ADDON_ID_BYTES - 1)),
        ] {
            assert!(is_firefox_extension_id(good), "{good}");
        }
        for bad in [
            "",
            "@",
            "name@",
            "plain",
            "{not-a-guid}",
            "{}",
            "{4c2b7a4e-1d5e-4e8f-9a3b-2f1c0d9e8b7}",
            "{4c2b7a4e-1d5e-4e8f-9a3b-2f1c0d9e8b7g}",
            "4c2b7a4e-1d5e-4e8f-9a3b-2f1c0d9e8b7a",
            "{x@y}",
            "a b@c",
            "a@b c",
            " @name",
            "\"@name\"",
            "'@name'",
            "$x@y",
            "`x`@y",
            "a;b@c",
            "a@b;c",
            "a@b@c",
            "a+b@c",
            "a/b@c",
            "a@b\n",
            "é@x",
            &format!("@{}", "a".repeat(MAX_ADDON_ID_BYTES)),
        ] {
            assert!(!is_firefox_extension_id(bad), "{bad}");
        }
    }
}
