//! Every string value of a JSON text, in document order, each with the RFC 6901 pointer that names
//! it: one forward pass over the bytes with an explicit stack of open containers, never recursion, so
//! an item nested a million deep costs what its bytes cost and a byte per level of memory.
//!
//! The pointer is kept as the walk goes (a token is added when an entry starts and removed when it
//! ends), but only up to a byte budget: a pointer that would be longer keeps its longest prefix of
//! whole tokens that fits and is marked cut. It then names an ancestor of the string. That keeps the
//! walk's memory, and what a search reply carries, bounded however deep the string lies. A member
//! name that no pointer can spell (one with an unpaired surrogate escape) cuts the pointer there too.

use super::scan::{skip_space, string_end, value_end};

/// The pointer of a string value, as [`Strings::pointer`] gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct At<'p> {
    /// The pointer, or its longest prefix of whole tokens within the budget.
    pub pointer: &'p str,
    /// Whether tokens were left off, so that `pointer` names an ancestor of the string.
    pub cut: bool,
}

/// The text is not well-formed JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Malformed;

/// The string values of a JSON text; see the module's documentation.
pub struct Strings<'a> {
    text: &'a [u8],
    /// Where the walk is: the next value, or just past the last one.
    at: usize,
    /// Whether `at` is just past a value (rather than at one that is still to be read).
    after: bool,
    /// The open containers, outermost first: whether each is an object.
    open: Vec<bool>,
    /// The pointer's tokens, one for each of the `kept` outermost open containers' current entries.
    pointer: String,
    /// How many of the open containers have their entry's token in `pointer`; the rest were cut.
    kept: usize,
    /// The most bytes `pointer` may hold.
    budget: usize,
    /// How many times the walk has stepped from one token to the next, for the tests' count of work.
    steps: usize,
}

impl<'a> Strings<'a> {
    /// A walk over `text` that keeps pointers of at most `budget` bytes (0 keeps none).
    pub fn new(text: &'a str, budget: usize) -> Strings<'a> {
        let text = text.as_bytes();
        Strings { text, at: 0, after: false, open: Vec::new(), pointer: String::new(), kept: 0, budget, steps: 0 }
    }

    /// The next string value: the byte range of its raw contents (between its quotes, escapes as
    /// written), or `None` at the end of the text.
    ///
    /// # Errors
    /// [`Malformed`] where the text turns out not to be JSON; the walk should not go on after it.
    pub fn next_string(&mut self) -> Result<Option<(usize, usize)>, Malformed> {
        loop {
            self.steps += 1;
            if self.after {
                let Some(&object) = self.open.last() else { return Ok(None) };
                self.at = skip_space(self.text, self.at);
                match (self.text.get(self.at), object) {
                    (Some(b','), _) => {
                        self.at = skip_space(self.text, self.at + 1);
                        self.entry(false)?;
                        self.after = false;
                    }
                    (Some(b'}'), true) | (Some(b']'), false) => {
                        self.close();
                        self.at += 1;
                    }
                    _ => return Err(Malformed),
                }
                continue;
            }
            self.at = skip_space(self.text, self.at);
            match self.text.get(self.at) {
                Some(b'"') => {
                    let end = string_end(self.text, self.at).ok_or(Malformed)?;
                    let contents = (self.at + 1, end - 1);
                    (self.at, self.after) = (end, true);
                    return Ok(Some(contents));
                }
                Some(&open @ (b'{' | b'[')) => {
                    self.open.push(open == b'{');
                    self.at = skip_space(self.text, self.at + 1);
                    if self.text.get(self.at) == Some(if open == b'{' { &b'}' } else { &b']' }) {
                        self.open.pop();
                        (self.at, self.after) = (self.at + 1, true);
                    } else {
                        self.entry(true)?;
                    }
                }
                Some(b'-' | b'0'..=b'9' | b't' | b'f' | b'n') => {
                    (self.at, self.after) = (value_end(self.text, self.at).ok_or(Malformed)?, true);
                }
                _ => return Err(Malformed),
            }
        }
    }

    /// The pointer of the string [`Strings::next_string`] returned last.
    pub fn pointer(&self) -> At<'_> {
        At { pointer: &self.pointer, cut: self.kept < self.open.len() }
    }

    /// How many steps the walk has taken; each reads at least one byte, so this stays within the
    /// text's length (plus one) however the text nests.
    pub fn steps(&self) -> usize {
        self.steps
    }

    /// Starts an entry of the innermost open container at `at`: reads an object member's name and
    /// colon, leaving `at` at the value, and puts the entry's token in the pointer if it fits.
    fn entry(&mut self, first: bool) -> Result<(), Malformed> {
        let depth = self.open.len();
        let object = self.open[depth - 1];
        // The previous entry's token, if it was kept: an array's gives the next index.
        let mut previous = None;
        if !first && self.kept == depth {
            let slash = self.pointer.rfind('/').unwrap_or(0);
            previous = (!object).then(|| self.pointer[slash + 1..].parse::<u64>().unwrap_or(0));
            self.pointer.truncate(slash);
            self.kept -= 1;
        }
        let name = if object {
            (self.text.get(self.at) == Some(&b'"')).then_some(()).ok_or(Malformed)?;
            let name_end = string_end(self.text, self.at).ok_or(Malformed)?;
            let name = (self.at, name_end);
            self.at = skip_space(self.text, name_end);
            (self.text.get(self.at) == Some(&b':')).then_some(()).ok_or(Malformed)?;
            self.at = skip_space(self.text, self.at + 1);
            Some(name)
        } else {
            None
        };
        // Only the innermost container's token can be added, only when every outer one is kept, and
        // only while there is room for more than its slash.
        if self.kept + 1 != depth || self.pointer.len() >= self.budget {
            return Ok(());
        }
        let mark = self.pointer.len();
        self.pointer.push('/');
        let spelled = match name {
            Some((a, b)) => push_name(&mut self.pointer, &self.text[a..b], self.budget),
            // An index that didn't fit never fits later: the next one is no shorter.
            None if first => {
                self.pointer.push('0');
                true
            }
            None => previous.is_some_and(|index| {
                self.pointer.push_str(&(index + 1).to_string());
                true
            }),
        };
        if spelled && self.pointer.len() <= self.budget {
            self.kept = depth;
        } else {
            self.pointer.truncate(mark);
        }
        Ok(())
    }

    /// Closes the innermost open container, removing its entry's token if it was kept.
    fn close(&mut self) {
        if self.kept == self.open.len() {
            let slash = self.pointer.rfind('/').unwrap_or(0);
            self.pointer.truncate(slash);
            self.kept -= 1;
        }
        self.open.pop();
    }
}

/// Appends the member name `quoted` (with its quotes, escapes as written) as a pointer token, `~`
/// and `/` escaped; false if no Rust string can hold it (an unpaired surrogate escape) or once the
/// pointer is longer than `budget` bytes, which a long name then never makes it much more.
fn push_name(pointer: &mut String, quoted: &[u8], budget: usize) -> bool {
    let contents = &quoted[1..quoted.len() - 1];
    let decoded;
    let name = if contents.contains(&b'\\') {
        let Some(name) = std::str::from_utf8(quoted).ok().and_then(|q| serde_json::from_str::<String>(q).ok()) else {
            return false;
        };
        decoded = name;
        decoded.as_str()
    } else {
        match std::str::from_utf8(contents) {
            Ok(name) => name,
            Err(_) => return false,
        }
    };
    for c in name.chars() {
        match c {
            '~' => pointer.push_str("~0"),
            '/' => pointer.push_str("~1"),
            c => pointer.push(c),
        }
        if pointer.len() > budget {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every string value with its pointer (and `…` after a cut one).
    fn walk(text: &str, budget: usize) -> Vec<(String, String)> {
        let mut strings = Strings::new(text, budget);
        let mut out = Vec::new();
        while let Some((a, b)) = strings.next_string().unwrap() {
            let At { pointer, cut } = strings.pointer();
            out.push((text[a..b].to_owned(), format!("{pointer}{}", if cut { "…" } else { "" })));
        }
        out
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter().map(|(s, p)| (s.to_string(), p.to_string())).collect()
    }

    #[test]
    fn every_string_value_with_its_pointer() {
        let doc = r#" { "a" : [ "x" , 1 , { "b" : "y" , "c" : [ ] , "d" : { } } , "z" ] , "e/~" : "w" , "n" : null } "#;
        assert_eq!(walk(doc, 100), pairs(&[("x", "/a/0"), ("y", "/a/2/b"), ("z", "/a/3"), ("w", "/e~1~0")]));
        assert_eq!(walk(r#""top""#, 100), pairs(&[("top", "")]));
        assert_eq!(walk(r#"[[],[[]],"s"]"#, 100), pairs(&[("s", "/2")]));
        assert_eq!(walk(r#"{"\u0041\/":"v","":"e"}"#, 100), pairs(&[("v", "/A~1"), ("e", "/")]));
        assert_eq!(walk(r#"["a\"b","\u00e9"]"#, 100), pairs(&[(r#"a\"b"#, "/0"), (r#"\u00e9"#, "/1")]));
        assert!(walk("[1,true,null,{}]", 100).is_empty());
    }

    #[test]
    fn long_pointers_keep_their_longest_prefix_of_whole_tokens() {
        let doc = r#"{"abc":{"defgh":["x",["y"]],"de":"z"}}"#;
        assert_eq!(walk(doc, 12), pairs(&[("x", "/abc/defgh/0"), ("y", "/abc/defgh/1…"), ("z", "/abc/de")]));
        assert_eq!(walk(doc, 11), pairs(&[("x", "/abc/defgh…"), ("y", "/abc/defgh…"), ("z", "/abc/de")]));
        assert_eq!(walk(doc, 7), pairs(&[("x", "/abc…"), ("y", "/abc…"), ("z", "/abc/de")]));
        assert_eq!(walk(doc, 6), pairs(&[("x", "/abc…"), ("y", "/abc…"), ("z", "/abc…")]));
        assert_eq!(walk(doc, 0), pairs(&[("x", "…"), ("y", "…"), ("z", "…")]));
        // Indexes grow: once one doesn't fit, no later one does, and the walk still sees every string.
        let wide = format!("[{}]", ["\"s\""; 12].join(","));
        let pointers: Vec<String> = walk(&wide, 2).into_iter().map(|(_, p)| p).collect();
        assert_eq!(pointers[9..], ["/9", "…", "…"]);
        // A name no pointer can spell: its strings name the object that holds it.
        assert_eq!(walk(r#"{"o":{"\ud800":"s","t":"u"}}"#, 100), pairs(&[("s", "/o…"), ("u", "/o/t")]));
    }

    #[test]
    fn a_million_levels_are_one_pass() {
        let depth = 1_000_000;
        let arrays = format!("{}\"deep\"{}", "[".repeat(depth), "]".repeat(depth));
        let mut strings = Strings::new(&arrays, 1024);
        let (a, b) = strings.next_string().unwrap().unwrap();
        assert_eq!(&arrays[a..b], "deep");
        let At { pointer, cut } = strings.pointer();
        assert_eq!((pointer, cut), ("/0".repeat(512).as_str(), true));
        assert_eq!(strings.next_string(), Ok(None));
        assert!(strings.steps() <= arrays.len() + 1, "{} steps for {} bytes", strings.steps(), arrays.len());

        let objects = format!("{}\"deep\"{}", r#"{"a":"#.repeat(depth), "}".repeat(depth));
        let mut strings = Strings::new(&objects, usize::MAX);
        strings.next_string().unwrap().unwrap();
        assert_eq!(strings.pointer(), At { pointer: "/a".repeat(depth).as_str(), cut: false });
        assert_eq!(strings.next_string(), Ok(None));
        assert!(strings.steps() <= objects.len() + 1);
    }

    #[test]
    fn many_deep_nests_are_one_pass() {
        let nest = format!("{}\"invoice\"{}", "[".repeat(20_000), "]".repeat(20_000));
        let doc = format!("[{}]", vec![nest; 125].join(","));
        let mut strings = Strings::new(&doc, 1024);
        let mut found = 0;
        while strings.next_string().unwrap().is_some() {
            found += 1;
        }
        assert_eq!(found, 125);
        assert!(strings.steps() <= doc.len() + 1, "{} steps for {} bytes", strings.steps(), doc.len());
    }

    #[test]
    fn malformed_text_is_an_error() {
        for bad in ["[1,", r#"{"a" 1}"#, r#"{"a":1]"#, "[1}", r#"["open"#, "", "{1:2}", r#"{"a":}"#, "[,]", "[1,]"] {
            let mut strings = Strings::new(bad, 100);
            let result = std::iter::from_fn(|| strings.next_string().transpose()).find(Result::is_err);
            assert_eq!(result, Some(Err(Malformed)), "{bad}");
        }
    }
}
