//! An item's shape: a short string that tells the LLM how the data is built, so that it can aim a
//! pointer or a slice without reading the data: `array[50] of {from,subject,summary}`,
//! `object{emails,total}`, `string(48213)`. Computed once, when the data is written.

use super::scan::{char_count, elements, members, string_end};

/// The longest shape, in characters; metadata stays well under the spec's 500 bytes per item.
pub const MAX_SHAPE_CHARS: usize = 120;

/// The shape of the JSON value `text`; `"?"` for text that is not well-formed.
pub fn shape(text: &str) -> String {
    let bytes = text.as_bytes();
    match bytes.first() {
        Some(b'[') => {
            let mut entries = Entries::default();
            for element in elements(bytes) {
                let Some((a, b)) = element else { return "?".into() };
                entries.add(bytes, a, b);
            }
            array_shape(text, &entries)
        }
        Some(b'{') => format!("object{}", names(text, "{", MAX_SHAPE_CHARS - "object".len())),
        Some(b'"') if bytes.len() >= 2 => format!("string({})", char_count(&bytes[1..bytes.len() - 1])),
        Some(_) => Kind::of(text).name().to_owned(),
        None => "?".into(),
    }
}

/// What one pass over a container found of its entries (elements, or members from their names on),
/// all a shape needs: how many, of which kinds, and where the first ones are.
#[derive(Debug, Default)]
pub struct Entries {
    /// How many entries there are.
    count: u64,
    /// Their kind, `Mixed` when they differ; `None` when there are none.
    kind: Option<Kind>,
    /// The byte ranges of the first [`MAX_SHAPE_CHARS`] entries: no more member names fit in a shape.
    kept: Vec<(usize, usize)>,
}

impl Entries {
    /// Counts the entry at `start..end` of `text`.
    pub fn add(&mut self, text: &[u8], start: usize, end: usize) {
        let kind = Kind::of_byte(text.get(start).copied());
        self.kind = Some(match self.kind {
            None => kind,
            Some(k) if k == kind => k,
            Some(_) => Kind::Mixed,
        });
        self.count += 1;
        if self.kept.len() < MAX_SHAPE_CHARS {
            self.kept.push((start, end));
        }
    }
}

/// [`shape`] of the well-formed JSON value `text`, whose top-level entries, if it is a container, a
/// pass over it has found already: an array or object is not walked again.
pub fn shape_with(text: &str, entries: &Entries) -> String {
    let bytes = text.as_bytes();
    match bytes.first() {
        Some(b'[') => array_shape(text, entries),
        // Only the names of the first entries are kept; more members are rare, and walked.
        Some(b'{') if entries.count == entries.kept.len() as u64 => {
            let spans = entries.kept.iter().map(|&(start, _)| string_end(bytes, start).map(|end| (start, end)));
            format!("object{}", names_from(text, spans, "{", MAX_SHAPE_CHARS - "object".len()))
        }
        _ => shape(text),
    }
}

/// `array[n] of ...`: the shape of the array `text` whose elements are `entries`.
fn array_shape(text: &str, entries: &Entries) -> String {
    let head = format!("array[{}]", entries.count);
    let of = match (entries.kind, entries.kept.first()) {
        (Some(Kind::Object), Some(&(a, b))) => names(&text[a..b], "{", MAX_SHAPE_CHARS - head.len() - 4),
        (Some(kind), _) => kind.name().to_owned(),
        (None, _) => return head,
    };
    format!("{head} of {of}")
}

/// `{a,b,c}`: an object's member names, cut with `…` to fit in `room` characters.
fn names(object: &str, open: &str, room: usize) -> String {
    names_from(object, members(object.as_bytes()).map(|member| member.map(|member| member.name)), open, room)
}

/// [`names`] from the byte ranges of the member names (with their quotes) in `object`.
fn names_from(object: &str, spans: impl Iterator<Item = Option<(usize, usize)>>, open: &str, room: usize) -> String {
    let mut out = String::from(open);
    for span in spans {
        let Some((start, end)) = span else { break };
        let name = &object[start + 1..end - 1];
        let sep = if out.len() > 1 { "," } else { "" };
        if out.chars().count() + sep.len() + name.chars().count() + 1 > room {
            out.push_str(sep);
            out.push('…');
            break;
        }
        out.push_str(sep);
        out.push_str(name);
    }
    out.push('}');
    out
}

/// The kind of a JSON value, by its first byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Object,
    Array,
    String,
    Number,
    Boolean,
    Null,
    Mixed,
}

impl Kind {
    fn of(text: &str) -> Kind {
        Kind::of_byte(text.as_bytes().first().copied())
    }

    fn of_byte(first: Option<u8>) -> Kind {
        match first {
            Some(b'{') => Kind::Object,
            Some(b'[') => Kind::Array,
            Some(b'"') => Kind::String,
            Some(b't' | b'f') => Kind::Boolean,
            Some(b'n') => Kind::Null,
            _ => Kind::Number,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Kind::Object => "object",
            Kind::Array => "array",
            Kind::String => "string",
            Kind::Number => "number",
            Kind::Boolean => "boolean",
            Kind::Null => "null",
            Kind::Mixed => "mixed",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_say_how_data_is_built() {
        let emails = r#"[{"from":"a","subject":"b","summary":"c"},{"from":"d","subject":"e","summary":"f"}]"#;
        assert_eq!(shape(emails), "array[2] of {from,subject,summary}");
        assert_eq!(shape(r#"{"emails":[],"total":2}"#), "object{emails,total}");
        assert_eq!(shape(r#""héllo""#), "string(5)");
        assert_eq!(shape("[1,2,3]"), "array[3] of number");
        assert_eq!(shape(r#"[1,"a"]"#), "array[2] of mixed");
        assert_eq!(shape("[]"), "array[0]");
        assert_eq!(shape("{}"), "object{}");
        assert_eq!((shape("42"), shape("true"), shape("null")), ("number".into(), "boolean".into(), "null".into()));
        assert_eq!(shape("[1,"), "?");
    }

    #[test]
    fn long_name_lists_are_cut_to_fit() {
        let wide =
            format!("{{{}}}", (0..100).map(|n| format!("\"field_number_{n}\":{n}")).collect::<Vec<_>>().join(","));
        let object = shape(&wide);
        assert!(object.chars().count() <= MAX_SHAPE_CHARS, "{object}");
        assert!(object.starts_with("object{field_number_0,field_number_1,") && object.ends_with(",…}"), "{object}");
        let array = shape(&format!("[{wide}]"));
        assert!(array.chars().count() <= MAX_SHAPE_CHARS && array.ends_with(",…}"), "{array}");
    }
}
