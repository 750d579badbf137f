//! RFC 6901 JSON pointers, resolved in one forward pass over the text.
//!
//! Only the containers on the pointer's path are entered; everything else is skipped with
//! [`value_end`], so each byte is looked at a bounded number of times whatever the nesting depth
//! (a path 200,000 levels deep costs what its bytes cost). If a name appears twice in an object,
//! the pointer names the last one, as a JSON parser that keeps the last duplicate would.

use std::borrow::Cow;

use super::scan::{skip_space, string_end, value_end};

/// Why a pointer is not a valid RFC 6901 pointer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PointerError {
    /// It is neither empty nor starts with `/`.
    NoLeadingSlash,
    /// A `~` not followed by `0` or `1`.
    BadEscape,
}

/// The reference tokens of `pointer`, with `~1` and `~0` unescaped.
///
/// # Errors
/// [`PointerError`] when `pointer` is not a valid RFC 6901 pointer.
pub fn tokens(pointer: &str) -> Result<Vec<Cow<'_, str>>, PointerError> {
    if pointer.is_empty() {
        return Ok(Vec::new());
    }
    let path = pointer.strip_prefix('/').ok_or(PointerError::NoLeadingSlash)?;
    path.split('/').map(unescape).collect()
}

fn unescape(token: &str) -> Result<Cow<'_, str>, PointerError> {
    if !token.contains('~') {
        return Ok(Cow::Borrowed(token));
    }
    let mut out = String::with_capacity(token.len());
    let mut chars = token.chars();
    while let Some(c) = chars.next() {
        match (c, c == '~') {
            (_, false) => out.push(c),
            _ => match chars.next() {
                Some('0') => out.push('~'),
                Some('1') => out.push('/'),
                _ => return Err(PointerError::BadEscape),
            },
        }
    }
    Ok(Cow::Owned(out))
}

/// The text is not well-formed JSON where the path runs through it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Malformed;

/// Where the value that `tokens` names lies in `text`, as a byte range, or `None` when nothing is there.
///
/// # Errors
/// [`Malformed`] if the text breaks off or is not JSON along the way.
pub fn find(text: &str, tokens: &[Cow<'_, str>]) -> Result<Option<(usize, usize)>, Malformed> {
    let bytes = text.as_bytes();
    let start = skip_space(bytes, 0);
    if tokens.is_empty() {
        return Ok(Some((start, value_end(bytes, start).ok_or(Malformed)?)));
    }
    // The open containers on the path: whether each is an object, and how many entries it has had.
    let mut path: Vec<(bool, u64)> = Vec::new();
    let mut found = None;
    let mut at = start;
    // Whether the value at `at` is the entry the path continues through (true for the root).
    let mut on_path = true;
    loop {
        let depth = path.len();
        let open = matches!(bytes.get(at), Some(b'{' | b'['));
        if on_path && depth == tokens.len() {
            let end = value_end(bytes, at).ok_or(Malformed)?;
            found = Some((at, end));
            at = end;
        } else if on_path && open {
            path.push((bytes[at] == b'{', 0));
            at = skip_space(bytes, at + 1);
            if matches!(bytes.get(at), Some(b'}' | b']')) {
                path.pop();
                at += 1;
            } else {
                on_path = entry(bytes, &mut at, &mut path, tokens)?;
                if on_path {
                    found = None;
                }
                continue;
            }
        } else {
            at = value_end(bytes, at).ok_or(Malformed)?;
        }
        // After a value: the next entry of the innermost open container, or its end.
        loop {
            let Some(&(object, _)) = path.last() else {
                return Ok(found);
            };
            at = skip_space(bytes, at);
            match (bytes.get(at), object) {
                (Some(b','), _) => {
                    at = skip_space(bytes, at + 1);
                    on_path = entry(bytes, &mut at, &mut path, tokens)?;
                    // A later entry of the same name replaces what an earlier one led to.
                    if on_path {
                        found = None;
                    }
                    break;
                }
                (Some(b'}'), true) | (Some(b']'), false) => {
                    path.pop();
                    at += 1;
                }
                _ => return Err(Malformed),
            }
        }
    }
}

/// Reads the start of an entry of the innermost container at `at` (an object member's name and
/// colon; nothing for an array element), leaves `at` at its value, and says whether the entry is
/// the one the path continues through.
fn entry(bytes: &[u8], at: &mut usize, path: &mut [(bool, u64)], tokens: &[Cow<'_, str>]) -> Result<bool, Malformed> {
    let depth = path.len() - 1;
    let (object, index) = &mut path[depth];
    let token = &tokens[depth];
    let matches = if *object {
        (bytes.get(*at) == Some(&b'"')).then_some(()).ok_or(Malformed)?;
        let name_end = string_end(bytes, *at).ok_or(Malformed)?;
        let name = &bytes[*at..name_end];
        *at = skip_space(bytes, name_end);
        (bytes.get(*at) == Some(&b':')).then_some(()).ok_or(Malformed)?;
        *at = skip_space(bytes, *at + 1);
        name_is(name, token)
    } else {
        is_index(token, *index)
    };
    *index += 1;
    Ok(matches)
}

/// Whether the JSON string `quoted` (with its quotes) is `token`. A name with a lone escaped
/// surrogate is valid JSON that no pointer (a Rust string) can name: it is simply not a match.
fn name_is(quoted: &[u8], token: &str) -> bool {
    let contents = &quoted[1..quoted.len() - 1];
    if !contents.contains(&b'\\') {
        return contents == token.as_bytes();
    }
    std::str::from_utf8(quoted)
        .ok()
        .and_then(|q| serde_json::from_str::<String>(q).ok())
        .is_some_and(|name| name == token)
}

/// Whether `token` is the array index `index`: decimal, without leading zeros.
fn is_index(token: &str, index: u64) -> bool {
    let canonical =
        token == "0" || (!token.starts_with('0') && !token.is_empty() && token.bytes().all(|b| b.is_ascii_digit()));
    canonical && token.parse::<u64>().is_ok_and(|n| n == index)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at<'t>(text: &'t str, pointer: &str) -> Option<&'t str> {
        let tokens = tokens(pointer).unwrap();
        find(text, &tokens).unwrap().map(|(a, b)| &text[a..b])
    }

    #[test]
    fn finds_what_the_pointer_names() {
        let doc = r#"{"emails":[{"subject":"Q3","to":["a","b"]},{"subject":"x"}],"a/b":1,"m~n":2,"":3,"n":null}"#;
        assert_eq!(at(doc, ""), Some(doc));
        assert_eq!(at(doc, "/emails/0/subject"), Some(r#""Q3""#));
        assert_eq!(at(doc, "/emails/0/to/1"), Some(r#""b""#));
        assert_eq!(at(doc, "/emails/1"), Some(r#"{"subject":"x"}"#));
        assert_eq!(at(doc, "/a~1b"), Some("1"));
        assert_eq!(at(doc, "/m~0n"), Some("2"));
        assert_eq!(at(doc, "/"), Some("3"));
        assert_eq!(at(doc, "/n"), Some("null"));
        for missing in ["/emails/2", "/emails/01", "/emails/-", "/emails/0/subject/x", "/nope", "/n/0", "/emails/x"] {
            assert_eq!(at(doc, missing), None, "{missing}");
        }
        assert_eq!(at(" [ 1 , [ 2 ] ] ", "/1/0"), Some("2"));
        assert_eq!(at("[[],{}]", "/1"), Some("{}"));
    }

    #[test]
    fn pointers_return_the_exact_stored_text() {
        let doc = r#"{"b":1.50,"a":{"x/y":[10,{"z~":"\u00e9\ud800"}],"":0},"n":123456789012345678901234567890}"#;
        assert_eq!(at(doc, "/b"), Some("1.50"));
        assert_eq!(at(doc, "/n"), Some("123456789012345678901234567890"));
        assert_eq!(at(doc, "/a/x~1y/0"), Some("10"));
        assert_eq!(at(doc, "/a/x~1y/1/z~0"), Some(r#""\u00e9\ud800""#));
        assert_eq!(at(doc, "/a/"), Some("0"));
        assert_eq!(at(doc, "/a/x~1y/1"), Some(r#"{"z~":"\u00e9\ud800"}"#));
        for missing in ["/c", "/a/x~1y/2", "/a/x~1y/01", "/a/x~1y/-", "/b/0", "/a/x~1y/+1"] {
            assert_eq!(at(doc, missing), None, "{missing}");
        }
    }

    #[test]
    fn the_last_duplicate_name_wins() {
        assert_eq!(at(r#"{"a":1,"a":2}"#, "/a"), Some("2"));
        assert_eq!(at(r#"{"a":{"b":1},"a":{"b":2}}"#, "/a/b"), Some("2"));
        assert_eq!(at(r#"{"a":{"b":1},"a":{"c":2}}"#, "/a/b"), None);
        assert_eq!(at(r#"{"a":{"b":1,"b":3}}"#, "/a/b"), Some("3"));
    }

    #[test]
    fn a_lone_surrogate_name_is_intact_data_that_no_pointer_names() {
        assert_eq!(at(r#"{"\ud800":1,"x":2}"#, "/x"), Some("2"));
        assert_eq!(at(r#"{"\u0078":1}"#, "/x"), Some("1"));
    }

    #[test]
    fn malformed_text_and_invalid_pointers() {
        assert_eq!(find("[1,", &tokens("/5").unwrap()), Err(Malformed));
        assert_eq!(find(r#"{"a" 1}"#, &tokens("/a").unwrap()), Err(Malformed));
        assert_eq!(tokens("a"), Err(PointerError::NoLeadingSlash));
        assert_eq!(tokens("/~"), Err(PointerError::BadEscape));
        assert_eq!(tokens("/a~2"), Err(PointerError::BadEscape));
        assert_eq!(tokens("/~01").unwrap(), ["~1"]);
    }

    #[test]
    fn a_deep_path_is_one_pass() {
        let depth = 200_000;
        let doc = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        let pointer = "/0".repeat(depth - 1);
        assert_eq!(at(&doc, &pointer), Some("[]"));
        let objects = format!("{}1{}", r#"{"a":"#.repeat(depth), "}".repeat(depth));
        assert_eq!(at(&objects, &"/a".repeat(depth)), Some("1"));
    }
}
