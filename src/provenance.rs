//! Where an item's text came from (PROTOCOL.md section 5.13): the `provenance` a write, update or
//! append may carry, read and checked here, its canonical form, and the merge that update and append
//! make.
//!
//! The store keeps provenance and never judges it: whether an item is trusted is the tool's and the
//! extension's business. The merge only ever adds to what an item says it was made from, so no update
//! or append can make an item look more trusted than it was; only `endorse` does, and only the
//! extension's code calls it. Reading a request's provenance is one pass over its members and one over
//! each array, never recursion, whatever the client sent.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::error::{CacheError, ErrorCode, json_type_name};
use crate::json::scan::{elements, members};
use crate::limits::{MAX_DERIVED_FROM, MAX_SOURCE_TOOL_CHARS, MAX_SOURCE_URL_CHARS};
use crate::rules::parse_storage_key;

/// Where text came from. The order of the variants is the order `upstream` lists them in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    /// A web page.
    Web,
    /// An email.
    Email,
    /// Another tool's output.
    Tool,
    /// The person using the extension.
    User,
    /// The extension's own code.
    Extension,
    /// The model's own writing.
    Agent,
    /// Nobody said: an item stored without provenance, or a change that named none.
    Unknown,
}

impl Origin {
    /// Every origin, in the order of the protocol (and of `upstream`).
    pub const ALL: [Origin; 7] =
        [Origin::Web, Origin::Email, Origin::Tool, Origin::User, Origin::Extension, Origin::Agent, Origin::Unknown];

    /// The origin's name on the wire.
    pub fn name(self) -> &'static str {
        match self {
            Origin::Web => "web",
            Origin::Email => "email",
            Origin::Tool => "tool",
            Origin::User => "user",
            Origin::Extension => "extension",
            Origin::Agent => "agent",
            Origin::Unknown => "unknown",
        }
    }

    /// Whether text of this origin may be trusted (with `agent`, the model's own writing).
    pub fn is_trusted(self) -> bool {
        matches!(self, Origin::User | Origin::Extension | Origin::Agent)
    }
}

/// An item's provenance, in canonical form: empty members are left out, `upstream` holds each origin
/// once in [`Origin::ALL`]'s order, `derivedFrom` each key once, oldest first. Serialised in the wire's
/// member order: origin, source, upstream, derivedFrom, endorsed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Provenance {
    /// Where the item's first text came from; no change moves it.
    pub origin: Origin,
    /// Where exactly: the page's URL, the tool's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Source>,
    /// The origins of the text the item was made from or has been mixed with.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub upstream: Vec<Origin>,
    /// The keys of the items this one was made from, at most [`MAX_DERIVED_FROM`], the newest kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub derived_from: Vec<String>,
    /// Set only by the `endorse` op; dropped when untrusted text is added.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endorsed: Option<Endorsement>,
}

/// `provenance.source`; at least one of the two is there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Source {
    /// The URL the text was read from, at most [`MAX_SOURCE_URL_CHARS`] characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The tool that produced the text, at most [`MAX_SOURCE_TOOL_CHARS`] characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
}

/// When and why the extension vouched for an item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Endorsement {
    /// When, in ms since the Unix epoch.
    pub at: u64,
    /// Why, in at most `MAX_ENDORSE_REASON_CHARS` characters.
    pub reason: String,
}

/// What `origin` (and each `upstream` entry) must be.
const ORIGIN_EXPECTED: &str = "one of web, email, tool, user, extension, agent, unknown";
const PROVENANCE_EXPECTED: &str = "an object with `origin` and, if known, `source`, `upstream` and `derivedFrom`";
const UPSTREAM_EXPECTED: &str = "an array of at most 7 origins (web, email, tool, user, extension, agent, unknown)";
/// The most characters of a member name or an origin an error message echoes.
const MAX_ECHO_CHARS: usize = 40;

impl Provenance {
    /// What an item stored without provenance reads as.
    pub fn unknown() -> Provenance {
        Provenance {
            origin: Origin::Unknown,
            source: None,
            upstream: Vec::new(),
            derived_from: Vec::new(),
            endorsed: None,
        }
    }

    /// Whether the text is trusted by itself: endorsed, or its origin and every upstream origin trusted.
    pub fn is_trusted(&self) -> bool {
        self.endorsed.is_some() || (self.origin.is_trusted() && self.upstream.iter().all(|origin| origin.is_trusted()))
    }

    /// Reads and checks a request's `provenance` (its canonical form), if it has one.
    ///
    /// # Errors
    /// `InvalidRequestError` naming the member at fault.
    pub fn parse(raw: Option<&RawValue>, session_id: &str) -> Result<Option<Provenance>, CacheError> {
        let Some(raw) = raw else { return Ok(None) };
        let text = raw.get().trim_start_matches([' ', '\t', '\n', '\r']);
        if !text.starts_with('{') {
            return Err(CacheError::invalid_field("provenance", PROVENANCE_EXPECTED, json_type_name(text)));
        }
        let mut origin = None;
        let mut provenance = Provenance::unknown();
        for_each_member(text, "provenance", |name, value| {
            match name {
                "origin" => origin = Some(origin_of(value, "provenance.origin", ORIGIN_EXPECTED)?),
                "source" => provenance.source = source_of(value)?,
                "upstream" => provenance.upstream = upstream_of(value)?,
                "derivedFrom" => provenance.derived_from = derived_from_of(value, session_id)?,
                "endorsed" => {
                    return Err(CacheError::new(
                        ErrorCode::InvalidRequestError,
                        "`provenance.endorsed` is set only by the endorse op",
                        "leave `endorsed` out; the extension's code vouches for an item with the endorse op",
                    )
                    .expected("provenance without `endorsed`")
                    .actual("`endorsed`"));
                }
                _ => {
                    return Err(unknown_member("provenance", name, "`origin`, `source`, `upstream` and `derivedFrom`"));
                }
            }
            Ok(())
        })?;
        provenance.origin = origin.ok_or_else(|| CacheError::missing_field("provenance.origin", ORIGIN_EXPECTED))?;
        provenance.upstream = in_order(provenance.upstream);
        Ok(Some(provenance))
    }

    /// What an item whose provenance was `stored` (`None`: unknown) says after an update or append
    /// whose provenance is `incoming` (`None` counts as unknown: fail closed). Origin and source stay;
    /// upstream gains the incoming upstream, and its origin when it differs; derivedFrom gains the
    /// incoming keys at its end, keeping the newest [`MAX_DERIVED_FROM`]; the endorsement stays only
    /// when the incoming text is trusted by itself.
    pub fn merged(stored: Option<&Provenance>, incoming: Option<&Provenance>) -> Provenance {
        let unknown = Provenance::unknown();
        let before = stored.unwrap_or(&unknown);
        let added = incoming.unwrap_or(&unknown);
        let mut upstream: Vec<Origin> = before.upstream.iter().chain(&added.upstream).copied().collect();
        if added.origin != before.origin {
            upstream.push(added.origin);
        }
        let keys: Vec<String> = before.derived_from.iter().chain(&added.derived_from).cloned().collect();
        let mut derived_from = last_places(keys);
        let excess = derived_from.len().saturating_sub(MAX_DERIVED_FROM);
        derived_from.drain(..excess);
        Provenance {
            origin: before.origin,
            source: before.source.clone(),
            upstream: in_order(upstream),
            derived_from,
            // A change's provenance never carries an endorsement (`parse` refuses one), so this is
            // whether its text is trusted by itself.
            endorsed: if added.is_trusted() { before.endorsed.clone() } else { None },
        }
    }
}

/// The origins, each once, in [`Origin::ALL`]'s order.
fn in_order(origins: Vec<Origin>) -> Vec<Origin> {
    Origin::ALL.into_iter().filter(|origin| origins.contains(origin)).collect()
}

/// The keys with each one's earlier places dropped, so that each stands where it came last.
fn last_places(keys: Vec<String>) -> Vec<String> {
    let later = |at: usize, key: &String| keys[at + 1..].contains(key);
    keys.iter().enumerate().filter(|&(at, key)| !later(at, key)).map(|(_, key)| key.clone()).collect()
}

/// Visits the members of the object `text` (well-formed JSON: it came through the request's parser)
/// with their decoded names (as written, when a name holds an unpaired surrogate escape) and values.
///
/// # Errors
/// `InvalidRequestError` for a member named twice, or whatever `visit` returns.
fn for_each_member(
    text: &str,
    field: &str,
    mut visit: impl FnMut(&str, &str) -> Result<(), CacheError>,
) -> Result<(), CacheError> {
    let mut seen: Vec<String> = Vec::new();
    for member in members(text.as_bytes()).map_while(|member| member) {
        let raw = &text[member.name.0..member.name.1];
        let name = serde_json::from_str::<String>(raw).unwrap_or_else(|_| raw.to_owned());
        if seen.contains(&name) {
            return Err(CacheError::new(
                ErrorCode::InvalidRequestError,
                format!("`{field}` has the member {} twice", echo(&name)),
                "send each member once",
            )
            .expected("an object whose member names differ")
            .actual(format!("{} twice", echo(&name))));
        }
        visit(&name, &text[member.value.0..member.value.1])?;
        seen.push(name);
    }
    Ok(())
}

/// The refusal of a member an object doesn't take.
fn unknown_member(field: &str, name: &str, takes: &str) -> CacheError {
    CacheError::new(
        ErrorCode::InvalidRequestError,
        format!("`{field}` has the member {}, which it doesn't take", echo(name)),
        format!("send only {takes}"),
    )
    .expected(takes)
    .actual(echo(name))
}

/// A name or value as messages show it: its first [`MAX_ECHO_CHARS`] characters, as `{:?}` writes them.
fn echo(text: &str) -> String {
    format!("{:?}", text.chars().take(MAX_ECHO_CHARS).collect::<String>())
}

/// A string member's value.
///
/// # Errors
/// `InvalidRequestError` when it is not a string of Unicode text.
fn string_of(value: &str, field: &str, expected: &str) -> Result<String, CacheError> {
    if !value.starts_with('"') {
        return Err(CacheError::invalid_field(field, expected, json_type_name(value)));
    }
    serde_json::from_str::<String>(value)
        .map_err(|_| CacheError::invalid_field(field, expected, "a string with an unpaired surrogate escape"))
}

/// An origin: one of [`Origin::ALL`].
fn origin_of(value: &str, field: &str, expected: &str) -> Result<Origin, CacheError> {
    let text = string_of(value, field, expected)?;
    Origin::ALL
        .into_iter()
        .find(|origin| origin.name() == text)
        .ok_or_else(|| CacheError::invalid_field(field, expected, echo(&text)))
}

/// `source`: `url` and `tool`, each optional; `None` when it has neither.
fn source_of(value: &str) -> Result<Option<Source>, CacheError> {
    let expected = format!(
        "an object with `url` (1 to {MAX_SOURCE_URL_CHARS} characters) and/or `tool` (1 to {MAX_SOURCE_TOOL_CHARS} characters of A-Z a-z 0-9 _ . : / -)"
    );
    if !value.starts_with('{') {
        return Err(CacheError::invalid_field("provenance.source", &expected, json_type_name(value)));
    }
    let url_expected = format!("a string of 1 to {MAX_SOURCE_URL_CHARS} characters");
    let tool_expected = format!("a string of 1 to {MAX_SOURCE_TOOL_CHARS} characters of A-Z a-z 0-9 _ . : / -");
    let mut source = Source { url: None, tool: None };
    for_each_member(value, "provenance.source", |name, member| {
        match name {
            "url" => {
                let url = string_of(member, "provenance.source.url", &url_expected)?;
                let chars = url.chars().count();
                if !(1..=MAX_SOURCE_URL_CHARS).contains(&chars) {
                    let actual = format!("a string of {chars} characters");
                    return Err(CacheError::invalid_field("provenance.source.url", &url_expected, actual));
                }
                source.url = Some(url);
            }
            "tool" => {
                let tool = string_of(member, "provenance.source.tool", &tool_expected)?;
                let chars = tool.chars().count();
                if !(1..=MAX_SOURCE_TOOL_CHARS).contains(&chars) {
                    let actual = format!("a string of {chars} characters");
                    return Err(CacheError::invalid_field("provenance.source.tool", &tool_expected, actual));
                }
                if !tool.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'/' | b'-')) {
                    let actual = "a string with other characters";
                    return Err(CacheError::invalid_field("provenance.source.tool", &tool_expected, actual));
                }
                source.tool = Some(tool);
            }
            _ => return Err(unknown_member("provenance.source", name, "`url` and `tool`")),
        }
        Ok(())
    })?;
    Ok((source.url.is_some() || source.tool.is_some()).then_some(source))
}

/// `upstream`: at most one entry per origin; duplicates collapse.
fn upstream_of(value: &str) -> Result<Vec<Origin>, CacheError> {
    if !value.starts_with('[') {
        return Err(CacheError::invalid_field("provenance.upstream", UPSTREAM_EXPECTED, json_type_name(value)));
    }
    let mut found = Vec::new();
    for (count, (start, end)) in elements(value.as_bytes()).map_while(|element| element).enumerate() {
        if count >= Origin::ALL.len() {
            let actual = format!("an array of more than {} entries", Origin::ALL.len());
            return Err(CacheError::invalid_field("provenance.upstream", UPSTREAM_EXPECTED, actual));
        }
        found.push(origin_of(&value[start..end], "provenance.upstream", UPSTREAM_EXPECTED)?);
    }
    Ok(found)
}

/// `derivedFrom`: storage keys of the session, oldest first; a key named twice keeps its last place.
fn derived_from_of(value: &str, session_id: &str) -> Result<Vec<String>, CacheError> {
    let expected = format!("an array of at most {MAX_DERIVED_FROM} storage keys of this session");
    let wrong = |actual: String| CacheError::invalid_field("provenance.derivedFrom", &expected, actual);
    if !value.starts_with('[') {
        return Err(wrong(json_type_name(value).to_owned()));
    }
    let mut keys = Vec::new();
    for (start, end) in elements(value.as_bytes()).map_while(|element| element) {
        if keys.len() >= MAX_DERIVED_FROM {
            return Err(wrong(format!("an array of more than {MAX_DERIVED_FROM} entries")));
        }
        let key = string_of(&value[start..end], "provenance.derivedFrom", &expected)?;
        match parse_storage_key(&key) {
            Err(_) => return Err(wrong("a string that is not a storage key".to_owned())),
            Ok(parts) if parts.session_id != session_id => return Err(wrong("a key of another session".to_owned())),
            Ok(_) => {}
        }
        keys.push(key);
    }
    Ok(last_places(keys))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Result<Option<Provenance>, CacheError> {
        Provenance::parse(Some(&RawValue::from_string(json.to_owned()).unwrap()), "conv_s")
    }

    #[test]
    fn the_canonical_form_is_written_in_the_wire_order() {
        let provenance = parse(
            r#"{"derivedFrom": ["conv_s_aaaaaaaa_00000001", "conv_s_aaaaaaaa_00000002", "conv_s_aaaaaaaa_00000001"],
                "upstream": ["unknown", "web", "web"], "source": {"tool": "fetch", "url": "https://a.example"},
                "origin": "agent"}"#,
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            serde_json::to_string(&provenance).unwrap(),
            r#"{"origin":"agent","source":{"url":"https://a.example","tool":"fetch"},"upstream":["web","unknown"],"derivedFrom":["conv_s_aaaaaaaa_00000002","conv_s_aaaaaaaa_00000001"]}"#
        );
        let bare = parse(r#"{"origin": "web", "source": {}, "upstream": [], "derivedFrom": []}"#).unwrap().unwrap();
        assert_eq!(serde_json::to_string(&bare).unwrap(), r#"{"origin":"web"}"#);
        assert_eq!(parse("null").ok(), None, "a null provenance never reaches here: the request's parser drops it");
    }

    #[test]
    fn merging_never_raises_trust() {
        let key = |n: usize| format!("conv_s_aaaaaaaa_{n:08}");
        let mut stored = Provenance::unknown();
        stored.origin = Origin::User;
        stored.derived_from = (1..=16).map(key).collect();
        stored.endorsed = Some(Endorsement { at: 1, reason: "checked".to_owned() });
        let mut trusted = Provenance::unknown();
        trusted.origin = Origin::Extension;
        trusted.derived_from = vec![key(1), key(17)];
        let kept = Provenance::merged(Some(&stored), Some(&trusted));
        assert_eq!(kept.upstream, [Origin::Extension]);
        assert!(kept.endorsed.is_some());
        let newest: Vec<String> = (3..=16).chain([1, 17]).map(key).collect();
        assert_eq!(kept.derived_from, newest);
        let dropped = Provenance::merged(Some(&kept), None);
        assert_eq!(
            (dropped.upstream.as_slice(), dropped.endorsed.is_none()),
            ([Origin::Extension, Origin::Unknown].as_slice(), true)
        );
        assert!(!dropped.is_trusted());
        assert_eq!(Provenance::merged(None, None), Provenance::unknown());
    }
}
