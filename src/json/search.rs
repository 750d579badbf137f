//! Finding things in cached data: the string values that contain every word of a query, each with the
//! JSON pointer that names it and a snippet around the match, so that the LLM reads only that part.
//!
//! Matching is case-insensitive. A whole item is first screened on its raw bytes (a SIMD search for
//! each ASCII word), so items that can't match are never walked; that keeps a search of a full 50 MB
//! session to one pass over its bytes.

use std::borrow::Cow;

use memchr::memchr2_iter;

use super::scan::{elements, members};

/// The most characters of a snippet.
pub const MAX_SNIPPET_CHARS: usize = 160;

/// A query: its words, lower-cased. Every word must occur for a text to match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    words: Vec<String>,
}

/// One matching string value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The RFC 6901 pointer to the string value within the item's data.
    pub pointer: String,
    /// At most 160 characters around the first word's first occurrence.
    pub snippet: String,
}

impl Query {
    /// The words of `text`, split at white space; `None` if there are none.
    pub fn parse(text: &str) -> Option<Query> {
        let words: Vec<String> = text.split_whitespace().map(str::to_lowercase).collect();
        (!words.is_empty()).then_some(Query { words })
    }

    /// Whether `text` contains every word, ignoring case. ASCII words are tried first: they are found
    /// without lower-casing the text, so most texts are turned down before any copy is made.
    pub fn matches(&self, text: &str) -> bool {
        let found = |word: &String| find(text, word).is_some();
        self.words.iter().filter(|w| w.is_ascii()).all(found) && self.words.iter().filter(|w| !w.is_ascii()).all(found)
    }

    /// False only when the raw JSON text `data` surely holds no match: some ASCII word is missing
    /// from its bytes. (Escapes such as `\u0041` could hide a word, so text with `\u` is never ruled out.)
    pub fn might_match(&self, data: &str) -> bool {
        if data.contains("\\u") {
            return true;
        }
        self.words
            .iter()
            .filter(|w| w.is_ascii() && !w.contains(['"', '\\']))
            .all(|word| ascii_find(data.as_bytes(), word.as_bytes()).is_some())
    }
}

/// The string values of the JSON `data` that match `query`, in document order, after skipping
/// `skip` of them; at most `max`. The second value says whether more matches follow.
pub fn find_in(data: &str, query: &Query, skip: usize, max: usize) -> Option<(Vec<Found>, bool)> {
    let mut walk = Walk { data, query, skip, max, found: Vec::new(), more: false, pointer: String::new() };
    walk.value(0, data.len())?;
    Some((walk.found, walk.more))
}

struct Walk<'a> {
    data: &'a str,
    query: &'a Query,
    skip: usize,
    max: usize,
    found: Vec<Found>,
    more: bool,
    /// The pointer of the value being walked.
    pointer: String,
}

impl Walk<'_> {
    /// Walks the value at `a..b`; `None` if the text is malformed. Stops once `max` are found and one more is seen.
    fn value(&mut self, a: usize, b: usize) -> Option<()> {
        if self.more {
            return Some(());
        }
        let text = &self.data[a..b];
        match text.as_bytes().first()? {
            b'[' => {
                for (index, element) in elements(text.as_bytes()).enumerate() {
                    let (x, y) = element?;
                    let len = self.pointer.len();
                    self.pointer.push_str(&format!("/{index}"));
                    self.value(a + x, a + y)?;
                    self.pointer.truncate(len);
                }
            }
            b'{' => {
                for member in members(text.as_bytes()) {
                    let member = member?;
                    let name = decode(&text[member.name.0..member.name.1]);
                    let len = self.pointer.len();
                    self.pointer.push('/');
                    self.pointer.push_str(&name.replace('~', "~0").replace('/', "~1"));
                    self.value(a + member.value.0, a + member.value.1)?;
                    self.pointer.truncate(len);
                }
            }
            // A string whose raw text lacks an ASCII word can't match; most are turned down here, undecoded.
            b'"' if !self.query.might_match(text) => {}
            b'"' => {
                let content = decode(text);
                if self.query.matches(&content) {
                    if self.skip > 0 {
                        self.skip -= 1;
                    } else if self.found.len() == self.max {
                        self.more = true;
                    } else {
                        let at = find(&content, &self.query.words[0]).unwrap_or(0);
                        self.found.push(Found { pointer: self.pointer.clone(), snippet: snippet(&content, at) });
                    }
                }
            }
            _ => {}
        }
        Some(())
    }
}

/// A JSON string's value (`quoted` includes the quotes). Text with a lone escaped surrogate, which
/// no Rust string can hold, is searched as written.
fn decode(quoted: &str) -> Cow<'_, str> {
    let contents = &quoted[1..quoted.len().saturating_sub(1).max(1)];
    if !contents.contains('\\') {
        return Cow::Borrowed(contents);
    }
    serde_json::from_str::<String>(quoted).map_or(Cow::Borrowed(contents), Cow::Owned)
}

/// Where `word` (lower-case) first occurs in `text`, ignoring case, as a byte index.
fn find(text: &str, word: &str) -> Option<usize> {
    if word.is_ascii() {
        return ascii_find(text.as_bytes(), word.as_bytes());
    }
    // Lower-casing can change byte lengths, so the index is found again in the original by characters.
    let lower = text.to_lowercase();
    let at = lower.find(word)?;
    let chars = lower[..at].chars().count();
    Some(text.char_indices().nth(chars).map_or(0, |(i, _)| i))
}

/// Where the lower-case ASCII `needle` first occurs in `haystack`, ignoring ASCII case.
fn ascii_find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    let first = *needle.first()?;
    memchr2_iter(first, first.to_ascii_uppercase(), haystack)
        .find(|&i| haystack.get(i..i + needle.len()).is_some_and(|part| part.eq_ignore_ascii_case(needle)))
}

/// At most MAX_SNIPPET_CHARS characters of `text` around byte index `at`, marked with `…` where cut.
fn snippet(text: &str, at: usize) -> String {
    let total = text.chars().count();
    if total <= MAX_SNIPPET_CHARS {
        return text.to_owned();
    }
    let at_char = text[..at.min(text.len())].chars().count();
    let room = MAX_SNIPPET_CHARS - 2;
    let start = at_char.saturating_sub(room / 3).min(total - room);
    let body: String = text.chars().skip(start).take(room).collect();
    let head = if start > 0 { "…" } else { "" };
    let tail = if start + room < total { "…" } else { "" };
    format!("{head}{body}{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pointers(data: &str, query: &str) -> Vec<String> {
        let (found, _) = find_in(data, &Query::parse(query).unwrap(), 0, 100).unwrap();
        found.into_iter().map(|f| f.pointer).collect()
    }

    #[test]
    fn every_word_ignoring_case_with_pointers_to_the_strings() {
        let data = r#"{"emails":[{"subject":"Invoice 42 overdue","body":"Please pay the INVOICE"},{"subject":"Lunch"}],"a/b~":"invoice due"}"#;
        assert_eq!(pointers(data, "invoice"), ["/emails/0/subject", "/emails/0/body", "/a~1b~0"]);
        assert_eq!(pointers(data, "INVOICE due"), ["/emails/0/subject", "/a~1b~0"]);
        assert_eq!(pointers(data, "lunch"), ["/emails/1/subject"]);
        assert!(pointers(data, "subject").is_empty(), "names are not values");
        assert_eq!(pointers(r#"["Straße","\u00c9t\u00e9"]"#, "été"), ["/1"]);
        assert_eq!(pointers(r#""just text""#, "TEXT"), [""]);
    }

    #[test]
    fn paging_through_matches() {
        let data = r#"["x1","x2","x3","y","x4"]"#;
        let query = Query::parse("x").unwrap();
        let (first, more) = find_in(data, &query, 0, 2).unwrap();
        assert_eq!((first.len(), more), (2, true));
        let (rest, more) = find_in(data, &query, 2, 2).unwrap();
        assert_eq!((rest.iter().map(|f| f.pointer.as_str()).collect::<Vec<_>>(), more), (vec!["/2", "/4"], false));
    }

    #[test]
    fn snippets_are_short_and_hold_the_match() {
        let long = format!("{} needle {}", "a".repeat(500), "b".repeat(500));
        let (found, _) = find_in(&format!("\"{long}\""), &Query::parse("NEEDLE").unwrap(), 0, 1).unwrap();
        let snippet = &found[0].snippet;
        assert!(snippet.chars().count() <= MAX_SNIPPET_CHARS, "{snippet}");
        assert!(snippet.contains("needle") && snippet.starts_with('…') && snippet.ends_with('…'), "{snippet}");
    }

    #[test]
    fn raw_screening_never_rules_out_a_match() {
        let query = Query::parse("invoice 42").unwrap();
        assert!(query.might_match(r#"{"s":"Invoice 42"}"#));
        assert!(!query.might_match(r#"{"s":"Invoice 41"}"#));
        assert!(query.might_match(r#"{"s":"\u0049nvoice 42"}"#), "escapes are never ruled out");
        assert!(Query::parse("  ").is_none());
    }
}
