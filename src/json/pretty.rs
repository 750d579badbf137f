//! JSON text laid out for a person: one entry per line, indented by depth, with every token as it
//! was stored (numbers digit for digit, escapes such as a lone `\ud800` as written) and no character
//! a terminal acts on.
//!
//! It is one forward pass over the text that keeps only the current depth: no parse, no stack, no
//! recursion, so a value nested a million deep prints in time and memory proportional to its
//! output. Indentation stops growing past [`MAX_INDENT_LEVELS`], so every line is at most that
//! much wider than its token and the output stays proportional to the input however deep it nests.

use std::io::{self, Write};

use super::scan::{skip_space, string_end, value_end};
use crate::terminal::escape_controls;

/// The depth past which lines are indented no further: deeper than a person follows by eye, and
/// without a cap a value nested n deep would print n² spaces.
pub const MAX_INDENT_LEVELS: usize = 20;

/// Spaces for the deepest indentation, two a level.
const SPACES: &[u8; 2 * MAX_INDENT_LEVELS] = &[b' '; 2 * MAX_INDENT_LEVELS];

/// Writes `text`, a JSON value, to `out` as serde_json's pretty printer would lay it out (two spaces
/// a level, `"name": value`, `[]` and `{}` for empty containers), each token kept as stored but
/// with [`escape_controls`] applied. No line end follows the value.
///
/// # Errors
/// `out`'s error, or `InvalidData` when a string in `text` is not closed. Other malformed text is
/// laid out as it comes, without complaint: the host checked the text when it was written.
pub fn write_pretty(text: &str, out: &mut dyn Write) -> io::Result<()> {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut at = skip_space(bytes, 0);
    let new_line = |out: &mut dyn Write, depth: usize| {
        out.write_all(b"\n")?;
        out.write_all(&SPACES[..2 * depth.min(MAX_INDENT_LEVELS)])
    };
    while let Some(&byte) = bytes.get(at) {
        match byte {
            b'"' => {
                let end = string_end(bytes, at)
                    .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "a string is not closed"))?;
                out.write_all(escape_controls(&text[at..end]).as_bytes())?;
                at = end;
            }
            b'[' | b'{' => {
                let close = if byte == b'[' { b']' } else { b'}' };
                let next = skip_space(bytes, at + 1);
                if bytes.get(next) == Some(&close) {
                    out.write_all(&[byte, close])?;
                    at = next + 1;
                } else {
                    out.write_all(&[byte])?;
                    depth += 1;
                    new_line(out, depth)?;
                    at = next;
                }
            }
            b']' | b'}' => {
                depth = depth.saturating_sub(1);
                new_line(out, depth)?;
                out.write_all(&[byte])?;
                at += 1;
            }
            b',' => {
                out.write_all(b",")?;
                new_line(out, depth)?;
                at += 1;
            }
            b':' => {
                out.write_all(b": ")?;
                at += 1;
            }
            _ => {
                // A number, `true`, `false` or `null`: up to the next delimiter (`,`, `]`, `}` or
                // white space, none of which is `byte`), so past `at` and at a character boundary.
                let end = value_end(bytes, at).unwrap_or(bytes.len());
                out.write_all(escape_controls(&text[at..end]).as_bytes())?;
                at = end;
            }
        }
        at = skip_space(bytes, at);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pretty(text: &str) -> String {
        let mut out = Vec::new();
        write_pretty(text, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn lays_out_as_serde_json_does() {
        let cases = [
            // Names in sorted order, as serde_json's values keep them.
            r#"{"":{"":[[]]},"e":[],"emails":[{"n":1,"ok":true,"subject":"Q3","to":["a","b"],"x":null},{}],"s":"a\"b\\c"}"#,
            "[1,[2,[3,[4]]],{\"a\":{\"b\":{\"c\":-1}}}]",
            r#""just a string""#,
            "42",
            "[]",
        ];
        for case in cases {
            let value: serde_json::Value = serde_json::from_str(case).unwrap();
            assert_eq!(pretty(case), serde_json::to_string_pretty(&value).unwrap(), "{case}");
        }
        // White space in the text is the layout's to decide.
        assert_eq!(pretty(" { \"a\" :\n[ 1 , 2 ] , \"b\" : { } } "), pretty(r#"{"a":[1,2],"b":{}}"#));
    }

    #[test]
    fn tokens_print_as_stored() {
        let text = r#"{"s":"\ud800","n":123456789012345678901234567890,"f":1.50e+3,"u":"\u00e9\/"}"#;
        assert_eq!(
            pretty(text),
            "{\n  \"s\": \"\\ud800\",\n  \"n\": 123456789012345678901234567890,\n  \"f\": 1.50e+3,\n  \"u\": \"\\u00e9\\/\"\n}"
        );
    }

    #[test]
    fn nothing_a_terminal_acts_on_gets_through() {
        let text = "{\"d\u{9b}\":\"\u{1b}x\u{85}\u{202e}y\u{7f}\"}";
        assert_eq!(pretty(text), "{\n  \"d\\u009b\": \"\\u001bx\\u0085\\u202ey\\u007f\"\n}");
        // Text that is not JSON is laid out, never copied raw.
        assert_eq!(pretty("[tru\u{1b}e\u{9b}]"), "[\n  tru\\u001be\\u009b\n]");
        assert_eq!(write_pretty("[\"open", &mut Vec::new()).unwrap_err().kind(), io::ErrorKind::InvalidData);
    }

    #[test]
    fn depth_is_bounded_in_indentation_not_in_nesting() {
        let depth = 1_000_000;
        let text = format!("{}\"x\"{}", "[".repeat(depth), "]".repeat(depth));
        let out = pretty(&text);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 2 * depth + 1);
        assert_eq!(lines[3], "      [");
        assert_eq!(lines[depth], format!("{}\"x\"", " ".repeat(2 * MAX_INDENT_LEVELS)));
        assert_eq!(lines[2 * depth], "]");
        assert!(lines.iter().all(|line| line.len() <= 2 * MAX_INDENT_LEVELS + 3));
    }
}
