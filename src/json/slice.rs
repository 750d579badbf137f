//! A slice of a value: elements of an array, members of an object (in stored order) or Unicode
//! scalar values of a string, `offset..offset + limit`, cut shorter when a byte budget is given.
//! Only the slice is copied; the rest of the value is scanned to count it, never parsed.

use super::scan::{char_count, char_starts, elements, members};

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

/// How much of a value to take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// The first element, member or character.
    pub offset: u64,
    /// How many at most; `None` means to the end.
    pub limit: Option<u64>,
    /// The most bytes the slice's JSON text may have; the slice ends before the first element,
    /// member or character that would not fit. `None` means no such bound.
    pub max_bytes: Option<usize>,
}

/// Slices the JSON value `text`.
///
/// # Errors
/// [`SliceError::NotSliceable`] for a scalar, [`SliceError::Malformed`] for broken text.
pub fn slice(text: &str, window: Window) -> Result<Sliced, SliceError> {
    let bytes = text.as_bytes();
    let Window { offset, limit, max_bytes } = window;
    let max_bytes = max_bytes.unwrap_or(usize::MAX);
    let end = limit.map_or(u64::MAX, |limit| offset.saturating_add(limit));
    let mut out = String::new();
    let mut count = 0;
    let mut total = 0;
    // Once one element doesn't fit, none after it is taken: a slice is contiguous.
    let mut full = false;
    let mut take = |range: &str, out: &mut String, index: u64| {
        if index >= offset && index < end && !full {
            // The separator, the element and the closing bracket must all fit.
            let comma = usize::from(count > 0);
            if out.len() + comma + range.len() + 1 > max_bytes {
                full = true;
                return;
            }
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
            // The slice ends at the last character boundary that is within `end` and leaves the
            // slice's text, with its two quotes, within the budget.
            let room = max_bytes.saturating_sub(2);
            let mut bounds: Option<(usize, usize)> = None;
            let mut closed = false;
            let mut boundary = |index: u64, at: usize, bounds: &mut Option<(usize, usize)>| match bounds {
                None if index == offset => *bounds = Some((at, at)),
                Some((from, to)) if !closed => {
                    if index <= end && at - *from <= room {
                        *to = at;
                    } else {
                        closed = true;
                    }
                }
                _ => {}
            };
            for start in char_starts(contents.as_bytes()) {
                boundary(total, start, &mut bounds);
                total += 1;
            }
            boundary(total, contents.len(), &mut bounds);
            let (from, to) = bounds.unwrap_or((contents.len(), contents.len()));
            count = contents.get(from..to).map_or(0, |part| char_count(part.as_bytes()) as u64);
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

    fn w(offset: u64, limit: Option<u64>) -> Window {
        Window { offset, limit, max_bytes: None }
    }

    fn s(text: &str, offset: u64, limit: Option<u64>) -> (String, u64, u64, Option<u64>) {
        capped(text, w(offset, limit))
    }

    fn capped(text: &str, window: Window) -> (String, u64, u64, Option<u64>) {
        let sliced = slice(text, window).unwrap();
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
        assert_eq!(slice("42", w(0, None)), Err(SliceError::NotSliceable("a number")));
        assert_eq!(slice("[1,", w(0, None)), Err(SliceError::Malformed));
    }

    #[test]
    fn a_slice_of_a_big_array_copies_only_the_slice() {
        let big = format!("[{}1]", "\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\",".repeat(100_000));
        let sliced = slice(&big, w(99_990, Some(20))).unwrap();
        assert_eq!((sliced.count, sliced.total, sliced.next_offset()), (11, 100_001, None));
        assert!(sliced.text.len() < 500);
    }

    #[test]
    fn a_byte_budget_ends_the_slice_before_what_does_not_fit() {
        let cap = |offset, limit, max_bytes| Window { offset, limit, max_bytes: Some(max_bytes) };
        // "[10,11]" is 7 bytes; one byte less leaves room for one element only.
        assert_eq!(capped("[10,11,12]", cap(0, None, 7)), ("[10,11]".into(), 2, 3, Some(2)));
        assert_eq!(capped("[10,11,12]", cap(0, None, 6)), ("[10]".into(), 1, 3, Some(1)));
        assert_eq!(capped("[10,11,12]", cap(1, Some(1), 100)), ("[11]".into(), 1, 3, Some(2)));
        // An element bigger than the budget gives an empty slice that still points at it.
        assert_eq!(capped(r#"["a much longer element",1]"#, cap(0, None, 10)), ("[]".into(), 0, 2, Some(0)));
        assert_eq!(capped(r#"{"a":1,"b":2}"#, cap(0, None, 9)), (r#"{"a":1}"#.into(), 1, 2, Some(1)));
        // Characters: the budget counts the quotes and the escaped text as stored.
        assert_eq!(capped(r#""abcdef""#, cap(1, None, 5)), (r#""bcd""#.into(), 3, 6, Some(4)));
        assert_eq!(capped(r#""héllo""#, cap(0, None, 4)), (r#""h""#.into(), 1, 5, Some(1)));
        assert_eq!(capped(r#""\ud83d\ude00ab""#, cap(0, None, 13)), (r#""""#.into(), 0, 3, Some(0)));
        assert_eq!(capped(r#""\ud83d\ude00ab""#, cap(0, None, 14)), (r#""\ud83d\ude00""#.into(), 1, 3, Some(1)));
        assert_eq!(capped(r#""abc""#, cap(0, Some(2), 100)), (r#""ab""#.into(), 2, 3, Some(2)));
        assert_eq!(capped(r#""abc""#, cap(0, None, 5)), (r#""abc""#.into(), 3, 3, None));
    }
}
