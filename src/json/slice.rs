//! A slice of a value: elements of an array, members of an object (in stored order) or Unicode
//! scalar values of a string, `offset..offset + limit`. Only the slice is copied; the rest of the
//! value is scanned to count it, never parsed.

use super::scan::{char_starts, elements, members};

/// A slice and where it lies in the whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sliced {
    /// The slice as JSON text of the same type as the whole.
    pub text: String,
    /// Where it starts, as asked.
    pub offset: u64,
    /// How many elements, members or characters it holds.
    pub count: u64,
    /// How many the whole holds.
    pub total: u64,
}

impl Sliced {
    /// The offset of the next slice, or `None` when this one reaches the end.
    pub fn next_offset(&self) -> Option<u64> {
        let end = self.offset + self.count;
        (end < self.total).then_some(end)
    }
}

/// Why a value can't be sliced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SliceError {
    /// It is a number, a boolean or null; the name says which, as "a number".
    NotSliceable(&'static str),
    /// The text is not well-formed JSON.
    Malformed,
}

/// Slices the JSON value `text`; `limit` `None` means to the end.
///
/// # Errors
/// [`SliceError::NotSliceable`] for a scalar, [`SliceError::Malformed`] for broken text.
pub fn slice(text: &str, offset: u64, limit: Option<u64>) -> Result<Sliced, SliceError> {
    let bytes = text.as_bytes();
    let end = limit.map_or(u64::MAX, |limit| offset.saturating_add(limit));
    let mut out = String::new();
    let mut count = 0;
    let mut total = 0;
    let mut take = |range: &str, out: &mut String, index: u64| {
        if index >= offset && index < end {
            if count > 0 {
                out.push(',');
            }
            out.push_str(range);
            count += 1;
        }
    };
    match bytes.first() {
        Some(b'[') => {
            out.push('[');
            for element in elements(bytes) {
                let (a, b) = element.ok_or(SliceError::Malformed)?;
                take(&text[a..b], &mut out, total);
                total += 1;
            }
            out.push(']');
        }
        Some(b'{') => {
            out.push('{');
            for member in members(bytes) {
                let member = member.ok_or(SliceError::Malformed)?;
                take(&text[member.name.0..member.value.1], &mut out, total);
                total += 1;
            }
            out.push('}');
        }
        Some(b'"') if bytes.len() >= 2 && bytes[bytes.len() - 1] == b'"' => {
            let contents = &text[1..text.len() - 1];
            let (mut from, mut to) = (contents.len(), contents.len());
            for start in char_starts(contents.as_bytes()) {
                if total == offset {
                    from = start;
                }
                if total == end {
                    to = start;
                }
                total += 1;
            }
            let from = from.min(to);
            count = contents.get(from..to).map_or(0, |part| char_starts(part.as_bytes()).count() as u64);
            out = format!("\"{}\"", contents.get(from..to).ok_or(SliceError::Malformed)?);
        }
        Some(b't' | b'f') => return Err(SliceError::NotSliceable("a boolean")),
        Some(b'n') => return Err(SliceError::NotSliceable("null")),
        Some(b'-' | b'0'..=b'9') => return Err(SliceError::NotSliceable("a number")),
        _ => return Err(SliceError::Malformed),
    }
    Ok(Sliced { text: out, offset, count, total })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(text: &str, offset: u64, limit: Option<u64>) -> (String, u64, u64, Option<u64>) {
        let sliced = slice(text, offset, limit).unwrap();
        let next = sliced.next_offset();
        (sliced.text, sliced.count, sliced.total, next)
    }

    #[test]
    fn arrays_objects_and_strings() {
        assert_eq!(s("[1,2,3,4,5]", 1, Some(2)), ("[2,3]".into(), 2, 5, Some(3)));
        assert_eq!(s("[1,2,3,4,5]", 3, Some(10)), ("[4,5]".into(), 2, 5, None));
        assert_eq!(s("[1,2,3]", 7, Some(2)), ("[]".into(), 0, 3, None));
        assert_eq!(s("[]", 0, None), ("[]".into(), 0, 0, None));
        assert_eq!(s(r#"{"b":1,"a":[2],"c":"x"}"#, 1, Some(1)), (r#"{"a":[2]}"#.into(), 1, 3, Some(2)));
        assert_eq!(s(r#""héllo😀 \"q\"""#, 1, Some(5)), (r#""éllo😀""#.into(), 5, 10, Some(6)));
        assert_eq!(s(r#""\ud83d\ude00ab""#, 0, Some(1)), (r#""\ud83d\ude00""#.into(), 1, 3, Some(1)));
        assert_eq!(s(r#""abc""#, 5, Some(1)), (r#""""#.into(), 0, 3, None));
        assert_eq!(s(r#""abc""#, 0, None), (r#""abc""#.into(), 3, 3, None));
        assert_eq!(slice("42", 0, None), Err(SliceError::NotSliceable("a number")));
        assert_eq!(slice("[1,", 0, None), Err(SliceError::Malformed));
    }

    #[test]
    fn a_slice_of_a_big_array_copies_only_the_slice() {
        let big = format!("[{}1]", "\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\",".repeat(100_000));
        let sliced = slice(&big, 99_990, Some(20)).unwrap();
        assert_eq!((sliced.count, sliced.total, sliced.next_offset()), (11, 100_001, None));
        assert!(sliced.text.len() < 500);
    }
}
