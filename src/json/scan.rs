//! Value boundaries in JSON text: where a value ends, an array's elements and an object's members.
//! Each is one forward pass over the bytes with no allocation.

/// JSON's white space between tokens.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// The first index at or after `at` that is not white space.
pub fn skip_space(text: &[u8], mut at: usize) -> usize {
    while text.get(at).copied().is_some_and(is_space) {
        at += 1;
    }
    at
}

/// The index just past the string whose opening quote is at `at`.
pub fn string_end(text: &[u8], at: usize) -> Option<usize> {
    let mut i = at + 1;
    loop {
        // Only a quote or a backslash matters inside a string: jump from one to the next.
        i += memchr::memchr2(b'"', b'\\', text.get(i..)?)?;
        match text[i] {
            b'"' => return Some(i + 1),
            _ => i += 2,
        }
    }
}

/// The index just past the value that starts at `at` (which must not be white space).
pub fn value_end(text: &[u8], at: usize) -> Option<usize> {
    match *text.get(at)? {
        b'"' => string_end(text, at),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = at;
            while i < text.len() {
                match text[i] {
                    b'"' => {
                        i = string_end(text, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            None
        }
        _ => {
            let len = text[at..].iter().position(|&b| matches!(b, b',' | b'}' | b']') || is_space(b));
            Some(len.map_or(text.len(), |n| at + n))
        }
    }
}

/// The byte ranges of the elements of the array `text` (which starts with `[`), in order. Ends early,
/// with a last `None`, if the text is not a well-formed array.
pub fn elements(text: &[u8]) -> impl Iterator<Item = Option<(usize, usize)>> + '_ {
    entries(text, b'[', b']', move |at| value_end(text, at).map(|end| ((at, end), end)))
}

/// A member of an object: the byte range of its name (with the quotes) and of its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Member {
    pub name: (usize, usize),
    pub value: (usize, usize),
}

/// The members of the object `text` (which starts with `{`), in stored order. Ends early, with a
/// last `None`, if the text is not a well-formed object.
pub fn members(text: &[u8]) -> impl Iterator<Item = Option<Member>> + '_ {
    members_with(text, |_| None)
}

/// [`members`], told where some values end: `known_end(start)` is the end of the value starting at
/// `start` when the caller knows it (a value a parser has already delimited), so that a long value is
/// not walked a second time.
pub fn members_with<'a>(
    text: &'a [u8],
    known_end: impl Fn(usize) -> Option<usize> + 'a,
) -> impl Iterator<Item = Option<Member>> + 'a {
    entries(text, b'{', b'}', move |at| {
        let name_end = string_end(text, at).filter(|_| text[at] == b'"')?;
        let colon = skip_space(text, name_end);
        (text.get(colon) == Some(&b':')).then_some(())?;
        let value_start = skip_space(text, colon + 1);
        let value_end = known_end(value_start).or_else(|| value_end(text, value_start))?;
        Some((Member { name: (at, name_end), value: (value_start, value_end) }, value_end))
    })
}

/// The entries of a container that `open` starts and `close` ends, separated by commas: `entry`
/// reads one starting at an index and returns it with the index just past it. A malformed container
/// ends the iteration with one `None`.
fn entries<'a, T>(
    text: &'a [u8],
    open: u8,
    close: u8,
    mut entry: impl FnMut(usize) -> Option<(T, usize)> + 'a,
) -> impl Iterator<Item = Option<T>> + 'a {
    let mut at = skip_space(text, 1);
    let mut done = text.first() != Some(&open) || text.get(at) == Some(&close);
    let mut failed = text.first() != Some(&open);
    std::iter::from_fn(move || {
        if failed {
            failed = false;
            return Some(None);
        }
        if done {
            return None;
        }
        let Some((item, end)) = entry(at) else {
            done = true;
            return Some(None);
        };
        at = skip_space(text, end);
        match text.get(at) {
            Some(b',') => at = skip_space(text, at + 1),
            Some(&b) if b == close => done = true,
            _ => {
                done = true;
                return Some(None);
            }
        }
        Some(Some(item))
    })
}

/// The byte offsets, within the raw contents of a JSON string (between its quotes), at which each
/// Unicode scalar value starts, visited in order; an escaped surrogate pair is one scalar value.
pub fn char_starts(contents: &[u8]) -> impl Iterator<Item = usize> + '_ {
    let mut i = 0;
    std::iter::from_fn(move || {
        if i >= contents.len() {
            return None;
        }
        let start = i;
        i += match contents[i] {
            b'\\' if contents.get(i + 1) == Some(&b'u') => {
                let high = hex4(contents.get(i + 2..i + 6));
                let low = hex4(contents.get(i + 8..i + 12));
                let pair = matches!(high, Some(0xD800..=0xDBFF))
                    && contents.get(i + 6..i + 8) == Some(b"\\u")
                    && matches!(low, Some(0xDC00..=0xDFFF));
                if pair { 12 } else { 6 }
            }
            b'\\' => 2,
            b if b < 0x80 => 1,
            b if b >= 0xF0 => 4,
            b if b >= 0xE0 => 3,
            _ => 2,
        };
        Some(start)
    })
}

/// How many characters `contents` (a JSON string's text between its quotes) holds: as many as
/// [`char_starts`] yields, counted a run between escapes at a time (every byte of a run that doesn't
/// continue a UTF-8 sequence starts a character), so a 5 MB string is counted at memory speed.
pub fn char_count(contents: &[u8]) -> usize {
    let mut count = 0;
    let mut rest = contents;
    loop {
        let run = memchr::memchr(b'\\', rest).unwrap_or(rest.len());
        count += lead_bytes(&rest[..run]);
        if run == rest.len() {
            return count;
        }
        let escape = char_starts(&rest[run..]).nth(1).unwrap_or(rest.len() - run);
        count += 1;
        rest = &rest[run + escape..];
    }
}

/// How many bytes of `text` start a UTF-8 sequence (are not 0x80..=0xBF), in blocks small enough
/// for a byte-wide sum, which the compiler turns into vector instructions.
fn lead_bytes(text: &[u8]) -> usize {
    text.chunks(255).map(|block| usize::from(block.iter().fold(0u8, |sum, &b| sum + u8::from(b as i8 >= -64)))).sum()
}

fn hex4(digits: Option<&[u8]>) -> Option<u32> {
    u32::from_str_radix(std::str::from_utf8(digits?).ok()?, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn char_count_agrees_with_char_starts() {
        let cases = [
            "",
            "plain",
            "é😀 naïve",
            r#"a\"b\\c\n"#,
            r#"\u00e9\ud83d\ude00\ud83d x\udc00"#,
            r#"\"#,
            r#"end\u12"#,
            "😀\\t😀",
        ];
        for case in cases {
            assert_eq!(char_count(case.as_bytes()), char_starts(case.as_bytes()).count(), "{case}");
        }
    }

    fn texts(text: &str, ranges: impl Iterator<Item = Option<(usize, usize)>>) -> Vec<&str> {
        ranges.map(|r| r.map_or("<bad>", |(a, b)| &text[a..b])).collect()
    }

    #[test]
    fn values_end_where_they_end() {
        let text = r#"{"a":[1,{"b":"]}\"x"}],"c":-1.5e3} tail"#;
        assert_eq!(value_end(text.as_bytes(), 0), Some(text.len() - 5));
        assert_eq!(value_end(b"true,", 0), Some(4));
        assert_eq!(value_end(b"12", 0), Some(2));
        assert_eq!(value_end(br#""a\"b""#, 0), Some(6));
        assert_eq!(value_end(b"[1,2", 0), None);
        assert_eq!(value_end(b"\"open", 0), None);
    }

    #[test]
    fn elements_and_members_in_order() {
        let array = r#"[1, "two" ,{"x":[3]}, [], null]"#;
        assert_eq!(texts(array, elements(array.as_bytes())), ["1", r#""two""#, r#"{"x":[3]}"#, "[]", "null"]);
        assert!(elements(b"[]").next().is_none());
        assert_eq!(texts("[1 2]", elements(b"[1 2]")), ["<bad>"]);
        assert_eq!(texts("{}", elements(b"{}")), ["<bad>"]);

        let object = r#"{"b":1, "a" : {"c":"}"},"\ud800":2}"#;
        let found: Vec<(&str, &str)> = members(object.as_bytes())
            .map(|m| m.unwrap())
            .map(|m| (&object[m.name.0..m.name.1], &object[m.value.0..m.value.1]))
            .collect();
        assert_eq!(found, [(r#""b""#, "1"), (r#""a""#, r#"{"c":"}"}"#), (r#""\ud800""#, "2")]);
        assert!(members(b"{}").next().is_none());
        assert_eq!(members(b"{\"a\" 1}").next(), Some(None));
    }

    #[test]
    fn characters_of_raw_string_contents() {
        // a, é (2 bytes), 😀 (4 bytes), \n, \u00e9, an escaped pair, a lone escaped surrogate.
        let contents = r#"aé😀\n\u00e9\ud83d\ude00\ud800"#.as_bytes();
        let starts: Vec<usize> = char_starts(contents).collect();
        assert_eq!(starts, [0, 1, 3, 7, 9, 15, 27]);
    }
}
