//! The spec's rules for keys, ids, descriptions and data, as pure functions.
//!
//! Nothing here touches the store or the wire, so each rule is tested on its own below.

use std::borrow::Cow;

use crate::error::{CacheError, ErrorCode};
use crate::json::shape::{Entries, shape, shape_with};
use crate::limits::MAX_DESCRIPTION_CHARS;

/// Every sessionId starts with this (the spec's `conversationId` form).
pub const SESSION_PREFIX: &str = "conv_";

/// The most characters a sessionId may have after its `conv_` prefix.
pub const MAX_SESSION_SUFFIX_CHARS: usize = 64;

/// taskIds and turnIds are exactly this long.
pub const ID_CHARS: usize = 8;

/// The characters of taskIds and turnIds, and so of generated ids.
const ID_ALPHABET: &[u8; 36] = b"abcdefghijklmnopqrstuvwxyz0123456789";

/// A storage key split into its three parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StorageKey<'a> {
    /// The session that owns the item.
    pub session_id: &'a str,
    /// The task the item belongs to.
    pub task_id: &'a str,
    /// The turn that wrote the item.
    pub turn_id: &'a str,
}

/// Checks a sessionId: `conv_` and then 1 to 64 of `[A-Za-z0-9-]`.
///
/// # Errors
/// `InvalidKeyFormatError` naming `field` (the request field or key part being checked).
pub fn check_session_id(field: &str, value: &str) -> Result<(), CacheError> {
    let suffix = value.strip_prefix(SESSION_PREFIX);
    let valid = suffix.is_some_and(|s| {
        (1..=MAX_SESSION_SUFFIX_CHARS).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
    });
    if valid { Ok(()) } else { Err(key_format_error(field, "`conv_` then 1 to 64 of [A-Za-z0-9-]", value)) }
}

/// Checks a taskId or turnId: exactly 8 of `[a-z0-9]`.
///
/// # Errors
/// `InvalidKeyFormatError` naming `field`.
pub fn check_short_id(field: &str, value: &str) -> Result<(), CacheError> {
    let valid = value.len() == ID_CHARS && value.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    if valid { Ok(()) } else { Err(key_format_error(field, "exactly 8 of [a-z0-9]", value)) }
}

/// The session part of a storage key already known to be well formed (a stored one), without
/// checking it again; [`parse_storage_key`] checks a key from a request.
pub fn session_of(storage_key: &str) -> &str {
    storage_key.rsplitn(3, '_').nth(2).unwrap_or_default()
}

/// Splits `{sessionId}_{taskId}_{turnId}` from the right, since the `conv_` prefix has an underscore of
/// its own, and checks every part.
///
/// # Errors
/// `InvalidKeyFormatError` naming the part that is wrong.
pub fn parse_storage_key(key: &str) -> Result<StorageKey<'_>, CacheError> {
    let mut parts = key.rsplitn(3, '_');
    let turn_id = parts.next().unwrap_or_default();
    let (Some(task_id), Some(session_id)) = (parts.next(), parts.next()) else {
        return Err(key_format_error(
            "storageKey",
            "{sessionId}_{taskId}_{turnId}, e.g. conv_abc123_a7b3c9d2_f4e8g1h6",
            key,
        ));
    };
    check_session_id("storageKey's sessionId part", session_id)?;
    check_short_id("storageKey's taskId part", task_id)?;
    check_short_id("storageKey's turnId part", turn_id)?;
    Ok(StorageKey { session_id, task_id, turn_id })
}

/// Joins the three parts into a storage key.
pub fn storage_key(session_id: &str, task_id: &str, turn_id: &str) -> String {
    format!("{session_id}_{task_id}_{turn_id}")
}

fn key_format_error(field: &str, expected: &str, value: &str) -> CacheError {
    CacheError::new(
        ErrorCode::InvalidKeyFormatError,
        format!("{field} is not of the form {expected}"),
        "use the storageKey exactly as a write or list returned it; sessionIds come from the conversation and taskIds/turnIds may be left out to have them generated",
    )
    .expected(expected)
    .actual(shorten(value))
}

/// Echoes a malformed id back only when it is short; a long one is described by its length.
fn shorten(value: &str) -> String {
    const MAX_ECHO: usize = 100;
    if value.len() <= MAX_ECHO { value.to_owned() } else { format!("a string of {} bytes", value.len()) }
}

/// Makes an id of 8 characters of `[a-z0-9]` from random bytes, each character uniform.
///
/// `fill` supplies random bytes (the OS's secure generator in the host).
///
/// # Errors
/// Whatever `fill` returns.
pub fn generate_id<E>(mut fill: impl FnMut(&mut [u8]) -> Result<(), E>) -> Result<String, E> {
    let mut id = String::with_capacity(ID_CHARS);
    let mut buf = [0u8; 16];
    while id.len() < ID_CHARS {
        fill(&mut buf)?;
        let chars = buf.iter().filter_map(|&byte| id_char(byte));
        id.extend(chars.take(ID_CHARS - id.len()));
    }
    Ok(id)
}

/// Maps a random byte to an id character, or to nothing for bytes of 252 and above: 252 is the largest
/// multiple of 36 that fits in a byte, and folding the rest in modulo 36 would favour `a` to `d`.
fn id_char(byte: u8) -> Option<char> {
    const ACCEPT_BELOW: u8 = 252;
    (byte < ACCEPT_BELOW).then(|| char::from(ID_ALPHABET[usize::from(byte % 36)]))
}

/// Cuts a description to at most 300 characters, the last being `…`, never splitting a character.
pub fn truncate_description(description: &str) -> Cow<'_, str> {
    match description.char_indices().nth(MAX_DESCRIPTION_CHARS) {
        None => Cow::Borrowed(description),
        Some(_) => {
            let keep =
                description.char_indices().nth(MAX_DESCRIPTION_CHARS - 1).map_or(description.len(), |(at, _)| at);
            Cow::Owned(format!("{}…", &description[..keep]))
        }
    }
}

/// Removes the white space between JSON tokens, so that `dataSize` is the size of the compact text
/// whatever spacing a client used. `json` must be valid JSON (serde has checked it); text with no
/// white space between tokens, as Chrome sends it, is borrowed as it is, spaces inside strings or not.
///
/// One pass: strings are skipped with a SIMD search for their closing quote, and the text between
/// runs of white space is copied in whole slices, only once a run has been found.
pub fn compact_json(json: &str) -> Cow<'_, str> {
    let bytes = json.as_bytes();
    let is_space = |b: u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r');
    let mut out: Option<Vec<u8>> = None;
    // Everything before `kept` is in `out` already (once there is an `out`).
    let mut kept = 0;
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'"' => at = after_string(bytes, at),
            b if is_space(b) => {
                let out = out.get_or_insert_with(|| Vec::with_capacity(bytes.len()));
                out.extend_from_slice(&bytes[kept..at]);
                while at < bytes.len() && is_space(bytes[at]) {
                    at += 1;
                }
                kept = at;
            }
            _ => at += 1,
        }
    }
    let Some(mut out) = out else { return Cow::Borrowed(json) };
    out.extend_from_slice(&bytes[kept..]);
    // Only ASCII white space outside strings was removed, so the rest is still UTF-8.
    Cow::Owned(String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
}

/// [`compact_json`] of `json` and its shape ([`crate::json::shape::shape`]) from one pass over text that
/// is compact already, as Chrome sends it: the pass that finds no white space to remove also finds
/// the top-level container's entries, so the shape does not walk the data again. Text with white
/// space is compacted, then walked for its shape.
pub fn compact_json_and_shape(json: &str) -> (Cow<'_, str>, String) {
    let bytes = json.as_bytes();
    let mut entries = Entries::default();
    let mut depth = 0usize;
    // Where the current top-level entry starts.
    let mut start = 0;
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'"' => {
                at = after_string(bytes, at);
                continue;
            }
            b'{' | b'[' => {
                depth += 1;
                if depth == 1 {
                    start = at + 1;
                }
            }
            b'}' | b']' => {
                if depth == 1 && at > start {
                    entries.add(bytes, start, at);
                }
                depth = depth.saturating_sub(1);
            }
            b',' if depth == 1 => {
                entries.add(bytes, start, at);
                start = at + 1;
            }
            b' ' | b'\t' | b'\n' | b'\r' => {
                let compact = compact_json(json);
                let shape = shape(&compact);
                return (compact, shape);
            }
            _ => {}
        }
        at += 1;
    }
    (Cow::Borrowed(json), shape_with(json, &entries))
}

/// The index just past the string whose opening quote is at `quote`.
fn after_string(bytes: &[u8], quote: usize) -> usize {
    let mut at = quote + 1;
    while let Some(found) = bytes.get(at..).and_then(|rest| memchr::memchr2(b'"', b'\\', rest)) {
        at += found;
        if bytes[at] == b'"' {
            return at + 1;
        }
        at += 2; // a backslash and the character it escapes
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    #[test]
    fn one_pass_shape_agrees_with_compacting_then_walking() {
        let many = |n: usize, name: &dyn Fn(usize) -> String| {
            format!("{{{}}}", (0..n).map(|i| format!("\"{}\":{i}", name(i))).collect::<Vec<_>>().join(","))
        };
        let cases = [
            r#"{"emails":[{"from":"a","subject":"b, c]"},{"from":"d"}],"total":2}"#.to_owned(),
            r#"[{"from":"a","subject":"b"},{"from":"d","subject":"e"}]"#.to_owned(),
            r#"[1,"a",[2,3],{"x":{"y":[]}},null,true]"#.to_owned(),
            r#"[[],[[]],{}]"#.to_owned(),
            "[]".to_owned(),
            "{}".to_owned(),
            r#""a \" quoted, [string]""#.to_owned(),
            "42".to_owned(),
            r#"{"a\"b":1,"c\\":[1,2],"é":"x"}"#.to_owned(),
            r#"{ "spaced" : [ 1 , 2 ] }"#.to_owned(),
            "[ {\"a\":1}, {\"a\":2} ]".to_owned(),
            many(200, &|i| format!("field_{i}")),
            many(200, &|i| if i < 150 { String::new() } else { format!("late{i}") }),
            format!("[{}]", many(200, &|i| format!("n{i}"))),
        ];
        for case in &cases {
            let (compact, shape) = compact_json_and_shape(case);
            assert_eq!(compact, compact_json(case), "{case}");
            assert_eq!(shape, crate::json::shape::shape(&compact_json(case)), "{case}");
        }
        assert!(matches!(compact_json_and_shape(&cases[0]).0, Cow::Borrowed(_)));
    }

    #[test]
    fn session_ids() {
        for good in ["conv_a", "conv_a3f8e2b4-5c6d-7e8f-9g0h-1i2j3k4l5m6n", &format!("conv_{}", "Z".repeat(64))] {
            assert_eq!(check_session_id("sessionId", good), Ok(()), "{good}");
        }
        for bad in
            ["", "conv_", "conv", "abc_123", "conv_a_b", "conv_a b", "conv_é", &format!("conv_{}", "Z".repeat(65))]
        {
            let err = check_session_id("sessionId", bad).unwrap_err();
            assert_eq!(err.code, ErrorCode::InvalidKeyFormatError, "{bad}");
            assert!(err.message.starts_with("sessionId"), "{}", err.message);
        }
    }

    #[test]
    fn short_ids() {
        assert_eq!(check_short_id("taskId", "a7b3c9d2"), Ok(()));
        for bad in ["a7b3c9d", "a7b3c9d2x", "A7B3C9D2", "a7b3-9d2", "a7b3_9d2", ""] {
            assert!(check_short_id("taskId", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn storage_keys_parse_from_the_right() {
        let key = parse_storage_key("conv_a3f8-e2b4_a7b3c9d2_f4e8a1b6").unwrap();
        assert_eq!(key, StorageKey { session_id: "conv_a3f8-e2b4", task_id: "a7b3c9d2", turn_id: "f4e8a1b6" });
        assert_eq!(storage_key(key.session_id, key.task_id, key.turn_id), "conv_a3f8-e2b4_a7b3c9d2_f4e8a1b6");
    }

    #[test]
    fn storage_key_errors_name_the_wrong_part() {
        let cases = [
            ("conv_abc_a7b3c9d2", "storageKey's sessionId part"),
            ("nope_x_a7b3c9d2_f4e8a1b6", "storageKey's sessionId part"),
            ("conv_abc_A7B3C9D2_f4e8a1b6", "storageKey's taskId part"),
            ("conv_abc_a7b3c9d2_f4e8a1b", "storageKey's turnId part"),
            ("plain", "storageKey"),
            ("a_b", "storageKey"),
        ];
        for (key, part) in cases {
            let err = parse_storage_key(key).unwrap_err();
            assert_eq!(err.code, ErrorCode::InvalidKeyFormatError);
            assert!(err.message.starts_with(&format!("{part} is not")), "{key}: {}", err.message);
        }
    }

    #[test]
    fn long_bad_values_are_not_echoed() {
        let long = "x".repeat(5000);
        let err = check_session_id("sessionId", &long).unwrap_err();
        assert_eq!(err.actual, Some("a string of 5000 bytes".into()));
    }

    #[test]
    fn generated_ids_are_eight_alphabet_chars() {
        let mut counter = 0u8;
        let id = generate_id::<()>(|buf| {
            for b in buf.iter_mut() {
                *b = counter;
                counter = counter.wrapping_add(1);
            }
            Ok(())
        })
        .unwrap();
        assert_eq!(id, "abcdefgh");
        assert_eq!(check_short_id("turnId", &id), Ok(()));
    }

    #[test]
    fn generated_ids_reject_biased_bytes() {
        // 252..=255 would map to a..d a second time; they must be skipped, not folded in.
        let mut calls = 0;
        let id = generate_id::<()>(|buf| {
            calls += 1;
            buf.fill(if calls == 1 { 255 } else { 35 });
            Ok(())
        })
        .unwrap();
        assert_eq!(id, "99999999");
        assert_eq!(calls, 2);
    }

    #[test]
    fn every_id_char_is_equally_likely() {
        let mut counts = [0usize; 36];
        for byte in 0..=255u8 {
            if let Some(c) = id_char(byte) {
                counts[ID_ALPHABET.iter().position(|&a| char::from(a) == c).unwrap()] += 1;
            }
        }
        assert!(counts.iter().all(|&n| n == 7), "{counts:?}");
        assert_eq!(counts.iter().sum::<usize>(), 252);
    }

    #[test]
    fn generator_errors_pass_through() {
        assert_eq!(generate_id(|_| Err("no entropy")), Err("no entropy"));
    }

    #[test]
    fn descriptions_are_cut_to_300_chars_with_an_ellipsis() {
        assert_eq!(truncate_description("short"), "short");
        let exact = "a".repeat(300);
        assert_eq!(truncate_description(&exact), exact);
        let long = "é".repeat(301);
        let cut = truncate_description(&long);
        assert_eq!(cut.chars().count(), 300);
        assert!(cut.ends_with('…'));
        assert_eq!(cut.chars().filter(|&c| c == 'é').count(), 299);
        // 4-byte characters are never split.
        let emoji = "😀".repeat(400);
        let cut = truncate_description(&emoji);
        assert_eq!(cut.chars().count(), 300);
        assert_eq!(cut.len(), 299 * 4 + '…'.len_utf8());
    }

    #[test]
    fn json_is_compacted_outside_strings_only() {
        assert!(matches!(compact_json(r#"{"a":[1,2]}"#), Cow::Borrowed(_)));
        assert_eq!(compact_json("{ \"a b\" : [ 1 ,\n\t2 ] }"), r#"{"a b":[1,2]}"#);
        assert_eq!(compact_json(r#"[ "x \" y", "\\", " " ]"#), r#"["x \" y","\\"," "]"#);
        assert_eq!(compact_json(" \"é 😀\" "), "\"é 😀\"");
        // Spaces inside strings don't make a copy; escaped quotes and backslashes don't end a string.
        assert!(matches!(compact_json(r#"{"a b":"c d \" e \\","f":[1,2]}"#), Cow::Borrowed(_)));
        assert_eq!(compact_json("[1,\n\n   \"x\\\\\" , \"y \"]"), r#"[1,"x\\","y "]"#);
        assert_eq!(compact_json("\"unterminated \\"), "\"unterminated \\");
    }
}
