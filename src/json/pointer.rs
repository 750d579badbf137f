//! RFC 6901 JSON pointers, resolved in one forward pass over the text.
//!
//! Only the containers on the pointer's path are entered; everything else is skipped with
//! [`value_end`], so each byte is looked at a bounded number of times whatever the nesting depth
//! (a path 200,000 levels deep costs what its bytes cost). If a name appears twice in an object,
//! the pointer names the last one, as a JSON parser that keeps the last duplicate would.
//!
//! The pointer itself is never copied or split up front: its tokens are found as the walk reaches
//! their depth, and compared where they lie. Memory is a few bytes per level the walk enters, so a
//! pointer of millions of tokens into a shallow item costs nothing, and every comparison of a token
//! with a name or an index stops within the name's length (or 21 digits), however long the token.

use super::scan::{skip_space, string_end, value_end};

/// Why a pointer is not a valid RFC 6901 pointer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PointerError {
    /// It is neither empty nor starts with `/`.
    NoLeadingSlash,
    /// A `~` not followed by `0` or `1`.
    BadEscape,
}

/// Checks that `pointer` is an RFC 6901 pointer, in one pass and without copying it.
///
/// # Errors
/// [`PointerError`] when it is not.
pub fn check(pointer: &str) -> Result<(), PointerError> {
    if !pointer.is_empty() && !pointer.starts_with('/') {
        return Err(PointerError::NoLeadingSlash);
    }
    let bytes = pointer.as_bytes();
    match memchr::memchr_iter(b'~', bytes).all(|at| matches!(bytes.get(at + 1), Some(b'0' | b'1'))) {
        true => Ok(()),
        false => Err(PointerError::BadEscape),
    }
}

/// The text is not well-formed JSON where the path runs through it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Malformed;

/// The tokens of a pointer, found as the walk goes deeper: each slash is looked for once.
struct Tokens<'p> {
    pointer: &'p str,
    /// Where the slashes that start the tokens found so far are.
    slashes: Vec<u32>,
    /// Whether every slash has been found.
    all_found: bool,
}

impl<'p> Tokens<'p> {
    fn new(pointer: &'p str) -> Tokens<'p> {
        Tokens { pointer, slashes: Vec::new(), all_found: pointer.is_empty() }
    }

    /// The token at `depth` (0 for the first), escapes as written; `None` past the last.
    fn at(&mut self, depth: usize) -> Option<&'p str> {
        // A token ends where the next one's slash is, so that one is found too.
        while self.slashes.len() <= depth + 1 && !self.all_found {
            let from = self.slashes.last().map_or(0, |&slash| slash as usize + 1);
            match memchr::memchr(b'/', &self.pointer.as_bytes()[from..]) {
                Some(at) => self.slashes.push(u32::try_from(from + at).ok()?),
                None => self.all_found = true,
            }
        }
        let start = *self.slashes.get(depth)? as usize + 1;
        let end = self.slashes.get(depth + 1).map_or(self.pointer.len(), |&slash| slash as usize);
        Some(&self.pointer[start..end])
    }
}

/// Where the value that `pointer` (a valid RFC 6901 pointer, see [`check`]) names lies in `text`, as a
/// byte range, or `None` when nothing is there.
///
/// # Errors
/// [`Malformed`] if the text breaks off or is not JSON along the way.
pub fn find(text: &str, pointer: &str) -> Result<Option<(usize, usize)>, Malformed> {
    let bytes = text.as_bytes();
    let start = skip_space(bytes, 0);
    let mut tokens = Tokens::new(pointer);
    if tokens.at(0).is_none() {
        return Ok(Some((start, value_end(bytes, start).ok_or(Malformed)?)));
    }
    // The open containers on the path, outermost first: whether each is an object. Each but the
    // innermost is at the entry the path goes through.
    let mut path: Vec<bool> = Vec::new();
    // How many entries the innermost open container has had.
    let mut entries = 0u64;
    let mut found = None;
    let mut at = start;
    // Whether the value at `at` is the entry the path continues through (true for the root).
    let mut on_path = true;
    loop {
        let depth = path.len();
        let open = matches!(bytes.get(at), Some(b'{' | b'['));
        if on_path && tokens.at(depth).is_none() {
            let end = value_end(bytes, at).ok_or(Malformed)?;
            found = Some((at, end));
            at = end;
        } else if on_path && open {
            path.push(bytes[at] == b'{');
            entries = 0;
            at = skip_space(bytes, at + 1);
            if matches!(bytes.get(at), Some(b'}' | b']')) {
                entries = leave(&mut path, &mut tokens);
                at += 1;
            } else {
                on_path = entry(bytes, &mut at, &path, &mut entries, &mut tokens)?;
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
            let Some(&object) = path.last() else {
                return Ok(found);
            };
            at = skip_space(bytes, at);
            match (bytes.get(at), object) {
                (Some(b','), _) => {
                    at = skip_space(bytes, at + 1);
                    on_path = entry(bytes, &mut at, &path, &mut entries, &mut tokens)?;
                    // A later entry of the same name replaces what an earlier one led to.
                    if on_path {
                        found = None;
                    }
                    break;
                }
                (Some(b'}'), true) | (Some(b']'), false) => {
                    entries = leave(&mut path, &mut tokens);
                    at += 1;
                }
                _ => return Err(Malformed),
            }
        }
    }
}

/// Closes the innermost open container and returns how many entries the one around it (whose
/// entry on the path it was) has had: for an array, the index the path went through and that one.
fn leave(path: &mut Vec<bool>, tokens: &mut Tokens<'_>) -> u64 {
    path.pop();
    match path.len().checked_sub(1) {
        Some(depth) if !path[depth] => tokens.at(depth).and_then(index).map_or(0, |index| index + 1),
        _ => 0,
    }
}

/// Reads the start of an entry of the innermost container at `at` (an object member's name and
/// colon; nothing for an array element), leaves `at` at its value, counts it, and says whether the
/// entry is the one the path continues through.
fn entry(
    bytes: &[u8],
    at: &mut usize,
    path: &[bool],
    entries: &mut u64,
    tokens: &mut Tokens<'_>,
) -> Result<bool, Malformed> {
    let depth = path.len() - 1;
    let token = tokens.at(depth).unwrap_or_default();
    let matches = if path[depth] {
        (bytes.get(*at) == Some(&b'"')).then_some(()).ok_or(Malformed)?;
        let name_end = string_end(bytes, *at).ok_or(Malformed)?;
        let name = &bytes[*at..name_end];
        *at = skip_space(bytes, name_end);
        (bytes.get(*at) == Some(&b':')).then_some(()).ok_or(Malformed)?;
        *at = skip_space(bytes, *at + 1);
        name_is(name, token)
    } else {
        index(token) == Some(*entries)
    };
    *entries += 1;
    Ok(matches)
}

/// Whether the JSON string `quoted` (with its quotes) is the name `token` (escapes as written in
/// the pointer). A name with a lone escaped surrogate is valid JSON that no pointer (a Rust string)
/// can name: it is simply not a match.
fn name_is(quoted: &[u8], token: &str) -> bool {
    let contents = &quoted[1..quoted.len() - 1];
    if !contents.contains(&b'\\') {
        return token_is(token.as_bytes(), contents);
    }
    std::str::from_utf8(quoted)
        .ok()
        .and_then(|q| serde_json::from_str::<String>(q).ok())
        .is_some_and(|name| token_is(token.as_bytes(), name.as_bytes()))
}

/// Whether the pointer token `token` (with `~0` and `~1` escapes) spells `name`. Stops at the first
/// difference, so a long token costs no more than the name it is compared with.
fn token_is(token: &[u8], name: &[u8]) -> bool {
    let mut rest = token;
    for &expected in name {
        let (byte, len) = match rest {
            [b'~', b'0', ..] => (b'~', 2),
            [b'~', b'1', ..] => (b'/', 2),
            [b, ..] => (*b, 1),
            [] => return false,
        };
        if byte != expected {
            return false;
        }
        rest = &rest[len..];
    }
    rest.is_empty()
}

/// The array index `token` names: decimal, without leading zeros. Longer than any index, it names
/// none, so a long token is turned down at once.
fn index(token: &str) -> Option<u64> {
    let canonical = token == "0"
        || (token.len() <= 20
            && !token.starts_with('0')
            && !token.is_empty()
            && token.bytes().all(|b| b.is_ascii_digit()));
    canonical.then(|| token.parse::<u64>().ok()).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at<'t>(text: &'t str, pointer: &str) -> Option<&'t str> {
        check(pointer).unwrap();
        find(text, pointer).unwrap().map(|(a, b)| &text[a..b])
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
        assert_eq!(find("[1,", "/5"), Err(Malformed));
        assert_eq!(find(r#"{"a" 1}"#, "/a"), Err(Malformed));
        assert_eq!(check("a"), Err(PointerError::NoLeadingSlash));
        assert_eq!(check("/~"), Err(PointerError::BadEscape));
        assert_eq!(check("/a~2"), Err(PointerError::BadEscape));
        assert_eq!(check("/~01~1/x"), Ok(()));
        assert_eq!(at(r#"{"~1":5,"~":6}"#, "/~01"), Some("5"));
    }

    #[test]
    fn long_pointers_cost_what_the_walk_reaches() {
        // A pointer of millions of tokens into a shallow item: only the tokens the walk reaches are read.
        let many = "/0".repeat(5_000_000);
        assert_eq!(at("[[1]]", &many), None);
        assert_eq!(at("[[1]]", &many[..4]), Some("1"));
        // A long token is turned down within the name or index it is compared with, at every entry.
        let wide = format!("[{}]", ["0"; 200_000].join(","));
        let long_index = format!("/{}", "1".repeat(1_000_000));
        assert_eq!(at(&wide, &long_index), None);
        let members = format!("{{{}}}", (0..100_000).map(|n| format!("\"k{n}\":0")).collect::<Vec<_>>().join(","));
        assert_eq!(at(&members, &format!("/{}", "k".repeat(1_000_000))), None);
        assert_eq!(at(&members, "/k99999"), Some("0"));
        assert_eq!(index("12345678901234567890"), Some(12_345_678_901_234_567_890));
        assert_eq!(index("123456789012345678901"), None);
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
