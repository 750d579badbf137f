//! An item's shape: a short string that tells the LLM how the data is built, so that it can aim a
//! pointer or a slice without reading the data: `array[50] of {from,subject,summary}`,
//! `object{emails,total}`, `string(48213)`. Computed once, when the data is written.

use super::scan::{char_count, elements, members};

/// The longest shape, in characters; metadata stays well under the spec's 500 bytes per item.
pub const MAX_SHAPE_CHARS: usize = 120;

/// The shape of the JSON value `text`; `"?"` for text that is not well-formed.
pub fn shape(text: &str) -> String {
    let bytes = text.as_bytes();
    match bytes.first() {
        Some(b'[') => {
            let mut count = 0u64;
            let mut kinds: Option<Kind> = None;
            let mut first = None;
            for element in elements(bytes) {
                let Some((a, b)) = element else { return "?".into() };
                let kind = Kind::of(&text[a..b]);
                kinds = Some(match kinds {
                    None => {
                        first = Some((a, b));
                        kind
                    }
                    Some(k) if k == kind => k,
                    Some(_) => Kind::Mixed,
                });
                count += 1;
            }
            let head = format!("array[{count}]");
            let of = match (kinds, first) {
                (Some(Kind::Object), Some((a, b))) => names(&text[a..b], "{", MAX_SHAPE_CHARS - head.len() - 4),
                (Some(kind), _) => kind.name().to_owned(),
                (None, _) => return head,
            };
            format!("{head} of {of}")
        }
        Some(b'{') => format!("object{}", names(text, "{", MAX_SHAPE_CHARS - "object".len())),
        Some(b'"') if bytes.len() >= 2 => format!("string({})", char_count(&bytes[1..bytes.len() - 1])),
        Some(_) => Kind::of(text).name().to_owned(),
        None => "?".into(),
    }
}

/// `{a,b,c}`: an object's member names, cut with `…` to fit in `room` characters.
fn names(object: &str, open: &str, room: usize) -> String {
    let mut out = String::from(open);
    for member in members(object.as_bytes()) {
        let Some(member) = member else { break };
        let name = &object[member.name.0 + 1..member.name.1 - 1];
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
        match text.as_bytes().first() {
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
