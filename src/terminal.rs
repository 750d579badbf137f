//! Text for a person's terminal. Whatever the command line prints that a client wrote (descriptions,
//! keys, data) may come from a prompt injection, and a terminal acts on some characters instead of
//! showing them: ESC starts sequences that retitle the window, clear the screen or (OSC 52) write the
//! clipboard, C1 controls do the same in some terminals, and bidi controls reorder what is shown.
//!
//! [`escape_controls`] shows those characters as JSON escapes. It is the one place that decides
//! what is unsafe, for plain text and JSON text alike; [`Head`] keeps a long output to a screenful or so.

use std::borrow::Cow;
use std::io::{self, Write};

/// Whether a terminal could act on `c`, or it would hide or reorder the text around it: the C0
/// controls, DEL and the C1 controls; the bidi controls (U+061C, U+200E, U+200F, U+202A..U+202E,
/// U+2066..U+2069, the "Trojan Source" characters); the line and paragraph separators; and the
/// invisible characters that no script needs (zero-width space, word joiner and invisible operators,
/// the deprecated format controls, the byte order mark, interlinear annotations). The zero-width
/// joiners (U+200C, U+200D) stay: emoji and several scripts are written with them.
pub fn is_unsafe(c: char) -> bool {
    matches!(
        c,
        '\0'..='\u{1f}'
            | '\u{7f}'..='\u{9f}'
            | '\u{61c}'
            | '\u{200b}'
            | '\u{200e}'
            | '\u{200f}'
            | '\u{2028}'..='\u{202e}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206f}'
            | '\u{feff}'
            | '\u{fff9}'..='\u{fffb}'
    )
}

/// `text` with every [`is_unsafe`] character written as a JSON escape (`\n`, `\t`, `\u001b`,
/// `\u202e`), borrowed when there is none.
///
/// The escapes are JSON's, so the function serves JSON text as well: in valid JSON every such
/// character stands inside a string (outside strings JSON allows only its white space, which compact
/// text has none of), where its escape means the same string. Backslashes are left as they are, so
/// plain text that spells out an escape reads the same as an escaped character.
pub fn escape_controls(text: &str) -> Cow<'_, str> {
    let Some(first) = text.find(is_unsafe) else {
        return Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(text.len() + 16);
    out.push_str(&text[..first]);
    for c in text[first..].chars() {
        match c {
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            // Every unsafe character is in the Basic Multilingual Plane: four hex digits name it.
            c if is_unsafe(c) => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// A writer that passes on the first `max_lines` lines and at most `max_bytes` bytes of what it is
/// given, then only counts the lines it holds back, so that a caller can say how much it left out.
/// It cuts at a character boundary, so what it passes on is still UTF-8.
pub struct Head<W: Write> {
    inner: W,
    /// Lines still to pass on.
    lines_left: usize,
    /// Bytes still to pass on.
    bytes_left: usize,
    /// Whether the last byte passed on ended a line (or nothing has been passed on).
    at_line_start: bool,
    /// Line ends held back, once the head is full: the lines not shown whole, in text that ends its
    /// last line.
    held_lines: u64,
    /// Bytes held back, once the head is full.
    held_bytes: u64,
}

impl<W: Write> Head<W> {
    /// Passes on to `inner` at most `max_lines` lines and `max_bytes` bytes.
    pub fn new(inner: W, max_lines: usize, max_bytes: usize) -> Self {
        Head { inner, lines_left: max_lines, bytes_left: max_bytes, at_line_start: true, held_lines: 0, held_bytes: 0 }
    }

    /// Whether anything was held back.
    pub fn was_cut(&self) -> bool {
        self.held_bytes > 0
    }

    /// How many line ends were held back (so a line the cut went through counts) and how many bytes.
    pub fn held_back(&self) -> (u64, u64) {
        (self.held_lines, self.held_bytes)
    }

    /// Whether the last byte passed on ended a line.
    pub fn at_line_start(&self) -> bool {
        self.at_line_start
    }

    /// The writer it passes on to.
    pub fn into_inner(self) -> W {
        self.inner
    }

    /// The writer it passes on to, for what follows the head.
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.inner
    }
}

impl<W: Write> Write for Head<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut pass = 0;
        if !self.was_cut() {
            pass = if self.lines_left == 0 { 0 } else { buf.len().min(self.bytes_left) };
            // The end of the last line that may still pass, if it is in `buf`.
            if let Some(end) = memchr::memchr_iter(b'\n', &buf[..pass]).nth(self.lines_left.saturating_sub(1)) {
                pass = end + 1;
            }
            // Back to the start of a character, when the byte budget ends inside one.
            while pass < buf.len() && pass > 0 && (buf[pass] & 0xC0) == 0x80 {
                pass -= 1;
            }
            self.inner.write_all(&buf[..pass])?;
            self.bytes_left -= pass;
            self.lines_left -= memchr::memchr_iter(b'\n', &buf[..pass]).count();
            if pass > 0 {
                self.at_line_start = buf[pass - 1] == b'\n';
            }
        }
        let held = &buf[pass..];
        self.held_lines += memchr::memchr_iter(b'\n', held).count() as u64;
        self.held_bytes += held.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// A command as typed, quoted for a shell when it needs quoting, with control characters escaped.
pub fn shell_word(program: &str) -> String {
    let program = escape_controls(program);
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./+,:@%=".contains(c);
    if program.chars().all(plain) || (cfg!(windows) && !program.contains([' ', '"'])) {
        program.into_owned()
    } else if cfg!(windows) {
        format!("\"{program}\"")
    } else {
        format!("'{}'", program.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_bidi_and_invisibles_are_escaped() {
        let hostile = "\u{1b}]0;PWNED\u{7}\u{1b}[2J \u{1b}]52;c;aGk=\u{7} \u{9b}31m \u{85}\u{7f} \u{202e}cod.exe \u{2066}x\u{2069}";
        assert_eq!(
            escape_controls(hostile),
            r"\u001b]0;PWNED\u0007\u001b[2J \u001b]52;c;aGk=\u0007 \u009b31m \u0085\u007f \u202ecod.exe \u2066x\u2069"
        );
        assert_eq!(escape_controls("a\tb\nc\rd\u{8}\u{c}\0"), r"a\tb\nc\rd\b\f\u0000");
        assert_eq!(escape_controls("\u{200b}\u{feff}\u{2028}\u{61c}\u{200f}"), r"\u200b\ufeff\u2028\u061c\u200f");
        // Printable text, joiners in emoji and non-Latin scripts included, is left alone and not copied.
        for kept in [
            "Summary of email 1",
            "é😀 naïve",
            "👨\u{200d}👩\u{200d}👧",
            "ن\u{200c}ا",
            r"C:\temp \u001b",
            "\u{a0}\u{a0}",
        ] {
            assert!(matches!(escape_controls(kept), Cow::Borrowed(text) if text == kept), "{kept}");
        }
    }

    #[test]
    fn escaped_json_is_the_same_json() {
        let text = serde_json::json!({"d": "\u{1b}[2J\u{85}\u{202e}\u{7f}", "k\u{9b}": ["\u{2069}", 1]}).to_string();
        let escaped = escape_controls(&text);
        assert!(!escaped.chars().any(is_unsafe), "{escaped}");
        let again: serde_json::Value = serde_json::from_str(&escaped).unwrap();
        assert_eq!(again.to_string(), text);
    }

    fn head(text: &str, lines: usize, bytes: usize, pieces: usize) -> (String, bool, (u64, u64)) {
        let mut head = Head::new(Vec::new(), lines, bytes);
        let step = text.len().div_ceil(pieces).max(1);
        let mut at = 0;
        while at < text.len() {
            let mut end = (at + step).min(text.len());
            while !text.is_char_boundary(end) {
                end += 1;
            }
            head.write_all(&text.as_bytes()[at..end]).unwrap();
            at = end;
        }
        let (cut, held) = (head.was_cut(), head.held_back());
        (String::from_utf8(head.into_inner()).unwrap(), cut, held)
    }

    #[test]
    fn a_head_passes_whole_lines_then_counts() {
        let text = "one\ntwo\nthree\nfour\n";
        for pieces in [1, 2, 3, 7, 19] {
            assert_eq!(head(text, 2, 100, pieces), ("one\ntwo\n".into(), true, (2, 11)), "{pieces}");
            assert_eq!(head(text, 4, 100, pieces), (text.into(), false, (0, 0)), "{pieces}");
            assert_eq!(head(text, 9, 6, pieces), ("one\ntw".into(), true, (3, 13)), "{pieces}");
            assert_eq!(head(text, 0, 100, pieces), (String::new(), true, (4, 19)), "{pieces}");
        }
        // A byte budget that ends inside a character cuts before it.
        assert_eq!(head("aé😀b", 9, 4, 1), ("aé".into(), true, (0, 5)));
        assert_eq!(head("aé😀b", 9, 2, 3), ("a".into(), true, (0, 7)));
    }
}
