//! Finding things in cached data: the string values that contain every word of a query, each with the
//! JSON pointer that names it and a snippet around the match, so that the LLM reads only that part.
//!
//! Matching ignores case: a word matches where it occurs in the text's folded form, in which ASCII
//! letters are compared without case and every other character is lower-cased, unless that would make
//! it ASCII or several characters (İ and the Kelvin sign stay as they are), so that ASCII words are
//! found exactly where the raw bytes hold them. A query is at most 32 words and 512 bytes.
//!
//! Every string is read a bounded number of times whatever the query: the words are found together
//! in one Aho-Corasick pass (ASCII case handled by the automaton), and a string is folded at most once,
//! only when it and the query both have non-ASCII text. A whole item is first screened on its raw bytes
//! with the same finder, so items that can't match are never walked; the walk itself is
//! [`Strings`](super::strings::Strings), one pass however deep.

use std::borrow::Cow;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, Input, MatchKind};

use super::strings::Strings;
use crate::limits::{MAX_QUERY_BYTES, MAX_QUERY_WORDS, MAX_SEARCH_POINTER_BYTES};

/// The most characters of a snippet.
pub const MAX_SNIPPET_CHARS: usize = 160;

/// A query: the words to find, and the automaton that finds them all in one pass.
#[derive(Debug, Clone)]
pub struct Query {
    /// The words to look for, folded, first word first, repeats and words inside other words left
    /// out (finding the longer word finds them too), except the first, which places the snippet.
    words: Vec<String>,
    /// Finds every word of `words` in one pass, ASCII letters in any case.
    finder: AhoCorasick,
    /// Whether some word has non-ASCII text, so that non-ASCII texts must be folded to compare.
    folds: bool,
    /// The words (as bits) that can be looked for in raw JSON text: those whose characters no escape
    /// but `\u` can stand for. Text without `\u` that lacks one of them can't match.
    screened: u64,
}

/// Why a query can't be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueryError {
    /// It holds nothing but white space.
    NoWords,
    /// It has this many words, more than [`MAX_QUERY_WORDS`].
    TooManyWords(usize),
    /// It has this many bytes, more than [`MAX_QUERY_BYTES`].
    TooLong(usize),
}

/// One matching string value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The RFC 6901 pointer to the string value within the item's data, or its longest prefix of
    /// whole tokens within [`MAX_SEARCH_POINTER_BYTES`].
    pub pointer: String,
    /// Whether `pointer` was cut, so that it names an ancestor of the string.
    pub pointer_cut: bool,
    /// At most 160 characters around the first word's first occurrence.
    pub snippet: String,
}

impl Query {
    /// The words of `text`, split at white space.
    ///
    /// # Errors
    /// [`QueryError`] when there are none, or more than the limits allow.
    pub fn parse(text: &str) -> Result<Query, QueryError> {
        if text.len() > MAX_QUERY_BYTES {
            return Err(QueryError::TooLong(text.len()));
        }
        let count = text.split_whitespace().count();
        if count > MAX_QUERY_WORDS {
            return Err(QueryError::TooManyWords(count));
        }
        let mut words: Vec<String> = Vec::with_capacity(count);
        for word in text.split_whitespace().map(fold_word) {
            if !words.contains(&word) {
                words.push(word);
            }
        }
        let Some(first) = words.first().cloned() else { return Err(QueryError::NoWords) };
        // At most one kept word ends at any one place (the shorter of two would lie inside the longer),
        // two with the first word: the pass reports a bounded number of matches per byte.
        let inside_another = |w: &String| words.iter().any(|other| other != w && other.contains(w.as_str()));
        let mut kept: Vec<String> = words.iter().skip(1).filter(|w| !inside_another(w)).cloned().collect();
        kept.insert(0, first);
        let finder = finder_of(&kept).map_err(|_| QueryError::TooLong(text.len()))?;
        let folds = kept.iter().any(|w| !w.is_ascii());
        let screenable = |w: &String| w.bytes().all(|b| b.is_ascii_graphic() && !matches!(b, b'"' | b'\\' | b'/'));
        let screened = kept.iter().enumerate().filter(|(_, w)| screenable(w)).fold(0, |bits, (i, _)| bits | 1 << i);
        Ok(Query { words: kept, finder, folds, screened })
    }

    /// All the words' bits.
    fn all(&self) -> u64 {
        (1u64 << self.words.len()) - 1
    }

    /// The words `text` holds (as bits), looking no further once it holds every word in `wanted`, and
    /// where the first word first starts in `text`, if it was found.
    ///
    /// One pass. A word that occurs again and again (`the` in an email) would be reported at every
    /// occurrence, so once a found word comes up again with much text still ahead, the pass goes on
    /// with a finder of the wanted words still missing: each word is reported at most twice, and the
    /// finder is rebuilt at most once per word.
    fn holds(&self, text: &str, wanted: u64) -> (u64, Option<usize>) {
        let mut found = 0u64;
        let mut first = None;
        // The finder in use, which word each of its patterns is, and where its search starts.
        let mut finder = Cow::Borrowed(&self.finder);
        let mut words: Vec<usize> = (0..self.words.len()).collect();
        let mut from = 0;
        'pass: loop {
            for hit in finder.find_overlapping_iter(Input::new(text).span(from..text.len())) {
                let word = words[hit.pattern().as_usize()];
                if found & 1 << word == 0 {
                    found |= 1 << word;
                    if word == 0 {
                        first = Some(hit.start());
                    }
                    if found & wanted == wanted {
                        break 'pass;
                    }
                } else if text.len() - hit.end() > REFIND_AFTER_BYTES {
                    words = (0..self.words.len()).filter(|w| wanted & !found & 1 << w != 0).collect();
                    let missing: Vec<&str> = words.iter().map(|&w| self.words[w].as_str()).collect();
                    let Ok(rest) = finder_of(&missing) else { break 'pass };
                    // Every match ending before this hit's end was reported; one ending at it or later
                    // starts no further back than the longest missing word.
                    let longest = missing.iter().map(|w| w.len()).max().unwrap_or(0);
                    from = hit.end().saturating_sub(longest);
                    finder = Cow::Owned(rest);
                    continue 'pass;
                }
            }
            break;
        }
        (found, first)
    }

    /// Whether the text holds every word, ignoring case.
    pub fn matches(&self, text: &str) -> bool {
        let mut together = self.together();
        together.add(text);
        together.all()
    }

    /// A test of several texts taken together: every word must be in one of them.
    pub fn together(&self) -> Together<'_> {
        Together { query: self, found: 0, folder: Folder::default() }
    }

    /// False only when the raw JSON text `data` surely holds no match: some word that no escape but
    /// `\u` can stand for is missing from its bytes. (Escapes such as `\u0041` could hide any word,
    /// so text with `\u` is never ruled out.)
    pub fn might_match(&self, data: &str) -> bool {
        let bytes = data.as_bytes();
        if self.screened == 0 || memchr::memchr_iter(b'\\', bytes).any(|at| bytes.get(at + 1) == Some(&b'u')) {
            return true;
        }
        let (found, _) = self.holds(data, self.screened);
        found & self.screened == self.screened
    }

    /// The string whose raw contents (between its quotes, escapes as written) are `raw`, decoded, and
    /// where the first word first occurs in it, if the string holds every word.
    fn first_match<'t>(&self, raw: &'t str, folder: &mut Folder) -> Option<(Cow<'t, str>, usize)> {
        // Text that needs a copy (decoded or folded) is screened on its raw bytes first.
        let copies = raw.contains('\\') || (self.folds && !raw.is_ascii());
        if copies && !self.might_match(raw) {
            return None;
        }
        let text = decode(raw);
        let folded = if self.folds { folder.text(&text) } else { Cow::Borrowed(text.as_ref()) };
        let (found, first) = self.holds(&folded, self.all());
        if found != self.all() {
            return None;
        }
        let at = first.unwrap_or(0);
        let at = if matches!(folded, Cow::Owned(_)) { folder.unfolded(&text, at) } else { at };
        Some((text, at))
    }
}

/// Several texts tested together against a query, as [`Query::together`] makes.
pub struct Together<'q> {
    query: &'q Query,
    /// The words found so far, as bits.
    found: u64,
    /// Folds the texts, when the query has non-ASCII words.
    folder: Folder,
}

impl Together<'_> {
    /// Adds a text, which is read only if some word is still missing.
    pub fn add(&mut self, text: &str) {
        let all = self.query.all();
        if self.found == all {
            return;
        }
        let folded = if self.query.folds { self.folder.text(text) } else { Cow::Borrowed(text) };
        self.found |= self.query.holds(&folded, all & !self.found).0;
    }

    /// Adds every string value of the JSON text `json`, in one pass however deep it nests.
    /// Malformed text adds the strings before the fault.
    pub fn add_strings(&mut self, json: &str) {
        let mut strings = Strings::new(json, 0);
        while let Ok(Some((a, b))) = strings.next_string() {
            if self.all() {
                return;
            }
            self.add(&decode(&json[a..b]));
        }
    }

    /// Whether every word was found.
    pub fn all(&self) -> bool {
        self.found == self.query.all()
    }
}

/// The string values of the JSON `data` that match `query`, in document order, after skipping
/// `skip` of them; at most `max`. The second value says whether more matches follow. `None` if the
/// text is malformed.
pub fn find_in(data: &str, query: &Query, mut skip: usize, max: usize) -> Option<(Vec<Found>, bool)> {
    let mut strings = Strings::new(data, MAX_SEARCH_POINTER_BYTES);
    let mut folder = Folder::default();
    let mut found = Vec::new();
    while let Some((a, b)) = strings.next_string().ok()? {
        let Some((content, at)) = query.first_match(&data[a..b], &mut folder) else { continue };
        if skip > 0 {
            skip -= 1;
            continue;
        }
        if found.len() == max {
            return Some((found, true));
        }
        let at_pointer = strings.pointer();
        found.push(Found {
            pointer: at_pointer.pointer.to_owned(),
            pointer_cut: at_pointer.cut,
            snippet: snippet(&content, at),
        });
    }
    Some((found, false))
}

/// How much text must lie ahead for a pass to switch to a finder of the missing words only: building
/// one costs about what a few thousand bytes of search do.
const REFIND_AFTER_BYTES: usize = 4096;

/// A finder of every occurrence of every word (folded), ASCII letters in any case.
fn finder_of<W: AsRef<[u8]>>(words: &[W]) -> Result<AhoCorasick, aho_corasick::BuildError> {
    AhoCorasickBuilder::new()
        .ascii_case_insensitive(true)
        .match_kind(MatchKind::Standard)
        .kind(Some(AhoCorasickKind::DFA))
        .build(words)
}

/// The value of a JSON string whose raw contents (between the quotes) are `raw`. Text with a lone
/// escaped surrogate, which no Rust string can hold, is searched as written.
fn decode(raw: &str) -> Cow<'_, str> {
    if !raw.contains('\\') {
        return Cow::Borrowed(raw);
    }
    serde_json::from_str::<String>(&format!("\"{raw}\"")).map_or(Cow::Borrowed(raw), Cow::Owned)
}

/// Folds text for comparison (see the module's documentation), remembering the characters it folded
/// last: looking a character up in Unicode's case tables costs several times what a remembered one
/// does, and most texts use few distinct characters.
#[derive(Default)]
struct Folder {
    /// Characters and their folds, each in the slot its code point modulo the slot count names.
    recent: Vec<(char, char)>,
}

/// How many folds a [`Folder`] remembers.
const FOLDER_SLOTS: usize = 512;

impl Folder {
    /// `c` folded.
    fn char(&mut self, c: char) -> char {
        if c.is_ascii() {
            return c.to_ascii_lowercase();
        }
        if self.recent.is_empty() {
            self.recent = vec![('\0', '\0'); FOLDER_SLOTS];
        }
        let slot = &mut self.recent[c as usize % FOLDER_SLOTS];
        if slot.0 != c {
            *slot = (c, lower(c));
        }
        slot.1
    }

    /// `text` folded. ASCII is left as it is, since the finder ignores its case: ASCII text is never
    /// copied, and runs of it are copied whole.
    fn text<'t>(&mut self, text: &'t str) -> Cow<'t, str> {
        if text.is_ascii() {
            return Cow::Borrowed(text);
        }
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(at) = rest.bytes().position(|b| !b.is_ascii()) {
            out.push_str(&rest[..at]);
            let c = rest[at..].chars().next().unwrap_or_default();
            out.push(self.char(c));
            rest = &rest[at + c.len_utf8()..];
        }
        out.push_str(rest);
        Cow::Owned(out)
    }

    /// The byte index in `text` of the character whose fold starts at `at` in `self.text(text)`.
    fn unfolded(&mut self, text: &str, at: usize) -> usize {
        let mut folded = 0;
        for (i, c) in text.char_indices() {
            if folded >= at {
                return i;
            }
            folded += self.char(c).len_utf8();
        }
        text.len()
    }
}

/// A query word folded, ASCII letters lower-cased too, so that repeats are found whatever their case.
fn fold_word(word: &str) -> String {
    let mut folder = Folder::default();
    word.chars().map(|c| folder.char(c)).collect()
}

/// `c` lower-cased, unless that would make it ASCII or more than one character: only İ (to `i` and a
/// combining dot) and the Kelvin sign (to `k`), as a test checks, and they stay as they are.
fn lower(c: char) -> char {
    let mut lower = c.to_lowercase();
    match (lower.next(), lower.next()) {
        (Some(l), None) if !l.is_ascii() => l,
        _ => c,
    }
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
        assert_eq!(pointers(r#"["ÉTÉ","été","Ete"]"#, "Été"), ["/0", "/1"]);
        assert_eq!(pointers(r#""just text""#, "TEXT"), [""]);
        // Escapes are decoded before matching: `\/`, `\"` and `\b` are the characters they stand for.
        assert_eq!(pointers(r#"["a\/b","a/b",  "x\"y", "p\bq"]"#, "A/B"), ["/0", "/1"]);
        assert_eq!(pointers(r#"["a\/b","x\"y"]"#, "x\"Y"), ["/1"]);
        assert_eq!(pointers("[\"p\\bq\"]", "P\u{8}q"), ["/0"]);
    }

    #[test]
    fn words_may_overlap_repeat_or_lie_inside_each_other() {
        let data = r#"["abc","ab","bc","in an invoice","in"]"#;
        assert_eq!(pointers(data, "ab bc"), ["/0"]);
        assert_eq!(pointers(data, "bc ab ab abc"), ["/0"]);
        assert_eq!(pointers(data, "in invoice"), ["/3"]);
        // A long text in which a found word comes again: the pass goes on with the missing words
        // from far enough back to find one that overlaps the repeat.
        let long = format!("aaab{}", "y".repeat(5000));
        assert!(Query::parse("aa ab").unwrap().matches(&long));
        assert!(Query::parse("aa ab y").unwrap().matches(&long));
        assert!(!Query::parse("aa ab ya").unwrap().matches(&long));
        // The snippet is placed at the first word's first occurrence, though it lies inside another.
        let long = format!("in {} invoice", "x ".repeat(200));
        let (found, _) = find_in(&format!("\"{long}\""), &Query::parse("in invoice").unwrap(), 0, 1).unwrap();
        assert!(found[0].snippet.starts_with("in x"), "{}", found[0].snippet);
    }

    #[test]
    fn non_ascii_never_folds_into_ascii() {
        let into_ascii = (0..=0x10FFFF)
            .filter_map(char::from_u32)
            .filter(|c| !c.is_ascii() && c.to_lowercase().any(|l| l.is_ascii()))
            .collect::<Vec<_>>();
        assert_eq!(into_ascii, ['\u{130}', '\u{212A}']);
        assert!(into_ascii.iter().all(|&c| lower(c) == c));
        // The Kelvin sign lower-cases to `k`, and the dotted capital I to `i` and a dot: neither is ASCII.
        assert_eq!(pointers("[\"\u{212A}elvin\",\"kelvin\",\"KELVIN\"]", "kelvin"), ["/1", "/2"]);
        assert_eq!(pointers("[\"\u{130}stanbul\",\"istanbul\"]", "\u{130}STANBUL"), ["/0"]);
        assert_eq!(pointers("[\"\u{130}stanbul\",\"istanbul\"]", "ISTANBUL"), ["/1"]);
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
        // Folding changes byte lengths (Ⱥ is 2 bytes, ⱥ 3); the snippet still holds the match.
        let folded = format!("{} ÉTÉ {}", "Ⱥ".repeat(500), "b".repeat(500));
        let (found, _) = find_in(&format!("\"{folded}\""), &Query::parse("été").unwrap(), 0, 1).unwrap();
        assert!(found[0].snippet.contains("ÉTÉ"), "{}", found[0].snippet);
    }

    #[test]
    fn raw_screening_never_rules_out_a_match() {
        let query = Query::parse("invoice 42").unwrap();
        assert!(query.might_match(r#"{"s":"Invoice 42"}"#));
        assert!(!query.might_match(r#"{"s":"Invoice 41"}"#));
        assert!(query.might_match(r#"{"s":"\u0049nvoice 42"}"#), "escapes are never ruled out");
        assert!(Query::parse("a/b").unwrap().might_match(r#""a\/b""#), "`\\/` is a slash");
        assert!(Query::parse("a\u{8}b").unwrap().might_match(r#""a\bb""#), "`\\b` is a backspace");
    }

    #[test]
    fn queries_are_bounded() {
        assert_eq!(Query::parse("  ").unwrap_err(), QueryError::NoWords);
        let words = vec!["w"; MAX_QUERY_WORDS];
        assert!(Query::parse(&words.join(" ")).is_ok());
        assert_eq!(Query::parse(&format!("{} x", words.join(" "))).unwrap_err(), QueryError::TooManyWords(33));
        assert!(Query::parse(&"é".repeat(MAX_QUERY_BYTES / 2)).is_ok());
        assert_eq!(Query::parse(&"x".repeat(MAX_QUERY_BYTES + 1)).unwrap_err(), QueryError::TooLong(513));
        // The limits are checked before anything else is done with the text.
        assert_eq!(Query::parse(&"a ".repeat(50_000)).unwrap_err(), QueryError::TooLong(100_000));
    }

    #[test]
    fn hostile_queries_and_deep_data_cost_one_pass() {
        // Words that are runs of one letter, each inside the next, over a long run of it: every
        // byte ends one of them, yet the pass reports at most two matches per byte.
        let words: Vec<String> = (1..MAX_QUERY_WORDS - 1).map(|n| "a".repeat(n)).chain(["b".into()]).collect();
        let query = Query::parse(&words.join(" ")).unwrap();
        assert_eq!(query.words.len(), 3, "words inside others (but the first) are implied by them: {:?}", query.words);
        let run = "a".repeat(1_000_000);
        assert!(!query.matches(&run));
        assert!(query.matches(&format!("{run}b")));
        // Non-ASCII words over a long non-ASCII string: folded once, all words in one pass.
        let query = Query::parse(&vec!["é"; MAX_QUERY_WORDS].join(" ")).unwrap();
        assert!(query.matches(&"É".repeat(1_000_000)));
        // A match a million levels down: found, with its pointer cut to the budget.
        let depth = 1_000_000;
        let deep = format!("{}\"an Invoice\"{}", "[".repeat(depth), "]".repeat(depth));
        let (found, more) = find_in(&deep, &Query::parse("invoice").unwrap(), 0, 10).unwrap();
        assert_eq!(found.len(), 1);
        assert!(!more);
        assert_eq!(found[0].pointer, "/0".repeat(MAX_SEARCH_POINTER_BYTES / 2));
        assert!(found[0].pointer_cut);
        assert_eq!(found[0].snippet, "an Invoice");
    }

    #[test]
    fn strings_are_tested_together() {
        let query = Query::parse("ana invoice").unwrap();
        let mut together = query.together();
        together.add("Email from Ana");
        assert!(!together.all());
        together.add_strings(&format!("{}\"INVOICE\"{}", r#"{"a":["#.repeat(300), "]}".repeat(300)));
        assert!(together.all());
        assert!(!query.matches("Email from Ana"));
    }
}
