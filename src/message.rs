//! Protocol v1's wire types: the request as it arrives, and the reply envelope.
//!
//! A request is parsed once into [`Fields`], which borrows every field's raw JSON text from the frame;
//! `data` and `customMetadata` stay as that text all the way into the store. Commands read typed
//! values out of [`Fields`] with getters that turn a missing or mistyped field into a clear
//! `InvalidRequestError`. PROTOCOL.md is the normative description of all of this.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::error::{CacheError, ErrorCode, json_type_name};
use crate::json::scan::{members, members_with};
use crate::limits::MAX_ID_BYTES;

/// A request's fields, each the raw JSON text the client sent (JSON `null` reads as absent).
/// Fields the protocol does not know are ignored, so newer clients can add optional ones.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Fields<'a> {
    /// The request id, echoed in the reply.
    #[serde(borrow)]
    pub id: Option<&'a RawValue>,
    /// Which operation to run.
    #[serde(borrow)]
    pub op: Option<&'a RawValue>,
    /// The session every op but `hello` and `sessions` acts on.
    #[serde(borrow)]
    pub session_id: Option<&'a RawValue>,
    /// `write`'s task id and `list`'s task filter.
    #[serde(borrow)]
    pub task_id: Option<&'a RawValue>,
    /// `write`'s turn id.
    #[serde(borrow)]
    pub turn_id: Option<&'a RawValue>,
    /// The item that `read`, `update` and `delete` act on.
    #[serde(borrow)]
    pub storage_key: Option<&'a RawValue>,
    /// The cached value, kept as the client's JSON text.
    #[serde(borrow)]
    pub data: Option<&'a RawValue>,
    /// The short text the LLM sees instead of the data.
    #[serde(borrow)]
    pub description: Option<&'a RawValue>,
    /// The client's own annotations, a JSON object.
    #[serde(borrow)]
    pub custom_metadata: Option<&'a RawValue>,
    /// `read`'s RFC 6901 pointer into the data.
    #[serde(borrow)]
    pub pointer: Option<&'a RawValue>,
    /// `list`'s, `search`'s and `sessions`' page size; the length of `read`'s slice.
    #[serde(borrow)]
    pub limit: Option<&'a RawValue>,
    /// Where `read`'s slice starts.
    #[serde(borrow)]
    pub offset: Option<&'a RawValue>,
    /// The most bytes of data `read` returns: a longer value comes back as its first slice that fits.
    #[serde(borrow)]
    pub max_bytes: Option<&'a RawValue>,
    /// `hello`'s reply encodings the client decodes, e.g. `["gzip"]`.
    #[serde(borrow)]
    pub encodings: Option<&'a RawValue>,
    /// `read`'s several items at once: keys, or `{storageKey, pointer}` objects.
    #[serde(borrow)]
    pub storage_keys: Option<&'a RawValue>,
    /// The words `list` and `search` look for.
    #[serde(borrow)]
    pub query: Option<&'a RawValue>,
    /// `list`'s, `search`'s and `sessions`' continuation from an earlier page.
    #[serde(borrow)]
    pub cursor: Option<&'a RawValue>,
    /// Where a write's, update's or append's text came from (section 5.13).
    #[serde(borrow)]
    pub provenance: Option<&'a RawValue>,
    /// Why `endorse` vouches for an item.
    #[serde(borrow)]
    pub reason: Option<&'a RawValue>,
}

impl<'a> Fields<'a> {
    /// Parses a frame's bytes.
    ///
    /// # Errors
    /// `InvalidRequestError` if the frame is not UTF-8 JSON holding one object.
    pub fn parse(frame: &'a [u8]) -> Result<Fields<'a>, CacheError> {
        let text = std::str::from_utf8(frame).map_err(|e| {
            CacheError::new(
                ErrorCode::InvalidRequestError,
                format!("the frame is not UTF-8 (invalid byte at offset {})", e.valid_up_to()),
                "send each message as UTF-8 JSON",
            )
            .expected("UTF-8 JSON text")
            .actual("bytes that are not UTF-8")
        })?;
        let not_a_request = |actual: String| {
            CacheError::new(
                ErrorCode::InvalidRequestError,
                "the message is not a JSON request object",
                r#"send one JSON object per frame, like {"id": 1, "op": "hello"}"#,
            )
            .expected("a JSON object with `id` and `op`")
            .actual(actual)
        };
        // serde would also read a JSON array into `Fields`, field by field: only objects are requests.
        if !text.trim_start().starts_with('{') {
            return Err(not_a_request(match serde_json::from_str::<&RawValue>(text) {
                Ok(value) => json_type_name(value.get()).to_owned(),
                Err(e) => format!("invalid JSON: {e}"),
            }));
        }
        let fields: Fields<'a> = serde_json::from_str(text).map_err(|e| not_a_request(format!("invalid JSON: {e}")))?;
        // serde refuses a known field given twice, but not an unknown one; PROTOCOL.md refuses both.
        if let Some(name) = duplicate_member(text, &fields.long_values()) {
            return Err(CacheError::new(
                ErrorCode::InvalidRequestError,
                format!("the request has the field {name:?} twice"),
                "send each field once",
            )
            .expected("a JSON object whose member names differ")
            .actual(format!("{name:?} twice")));
        }
        Ok(fields)
    }

    /// The usable id of a frame that [`Fields::parse`] refused, if it has one (an object with a
    /// duplicate field, say), so that even that error reply reaches the right caller.
    pub fn recover_id(frame: &'a [u8]) -> Option<&'a RawValue> {
        #[derive(Deserialize)]
        struct IdOnly<'a> {
            #[serde(borrow)]
            id: Option<&'a RawValue>,
        }
        let text = std::str::from_utf8(frame).ok()?;
        // Only an object has fields: serde would also fill the struct from a one-element array such as
        // `[7]`, which is not a request and so gets `"id": null` (PROTOCOL.md section 3.4).
        if !text.trim_start().starts_with('{') {
            return None;
        }
        let id = serde_json::from_str::<IdOnly<'_>>(text).ok()?.id?;
        is_usable_id(id).then_some(id)
    }

    /// The usable id of a frame of which only `head`, its first bytes, was kept (a frame over the
    /// size limit), when the id comes whole among them: `{"id": 7, ...` or after other short fields.
    pub fn id_in_head(head: &'a [u8]) -> Option<&'a RawValue> {
        // The head may end inside a character.
        let valid = std::str::from_utf8(head).map_or_else(|e| e.valid_up_to(), str::len);
        let text = head[..valid].trim_ascii_start();
        for member in members(text) {
            let member = member?;
            let (start, end) = member.value;
            // A value that reaches the end of the head may go on past it (a number, say).
            if end >= text.len() {
                return None;
            }
            if &text[member.name.0..member.name.1] == b"\"id\"" {
                let id = serde_json::from_slice::<&RawValue>(&text[start..end]).ok()?;
                return is_usable_id(id).then_some(id);
            }
        }
        None
    }

    /// The text of the long values the request may carry (`data`, `customMetadata`), each a slice of
    /// the frame.
    fn long_values(&self) -> Vec<&'a str> {
        [self.data, self.custom_metadata].into_iter().flatten().map(RawValue::get).collect()
    }

    /// The request's id if it is usable: a string of at most 256 bytes, or an integer.
    pub fn usable_id(&self) -> Option<&'a RawValue> {
        self.id.filter(|id| is_usable_id(id))
    }

    /// Why the id is not usable, for the error reply that must then carry `"id": null`.
    pub fn id_error(&self) -> CacheError {
        let expected = "a string of at most 256 bytes or an integer";
        match self.id {
            None => CacheError::missing_field("id", expected),
            Some(id) => {
                let actual = match json_type_name(id.get()) {
                    "a string" => format!("a string of {} bytes", id.get().len() - 2),
                    other => other.to_owned(),
                };
                CacheError::invalid_field("id", expected, actual)
            }
        }
    }
}

/// The first member name that the JSON object `text` has twice, if any (names compared decoded).
/// The values in `known`, taken from `text` by the parser, are stepped over rather than walked.
fn duplicate_member(text: &str, known: &[&str]) -> Option<String> {
    let bytes = text.trim_start().as_bytes();
    let base = bytes.as_ptr().addr();
    // A known value's start and end, as offsets into `bytes`.
    let spans: Vec<(usize, usize)> = known
        .iter()
        .filter_map(|value| value.as_ptr().addr().checked_sub(base).map(|start| (start, start + value.len())))
        .collect();
    let known_end = |start: usize| spans.iter().find(|span| span.0 == start).map(|span| span.1);
    let mut seen = std::collections::HashSet::new();
    for member in members_with(bytes, known_end) {
        let member = member?;
        let raw = std::str::from_utf8(&bytes[member.name.0..member.name.1]).ok()?;
        let name = serde_json::from_str::<String>(raw).unwrap_or_else(|_| raw.to_owned());
        if let Some(name) = seen.replace(name) {
            return Some(name);
        }
    }
    None
}

/// Whether an id can be echoed: a string of at most 256 bytes, or an integer (`-0` is one too).
fn is_usable_id(id: &RawValue) -> bool {
    let text = id.get();
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::String(s)) => s.len() <= MAX_ID_BYTES,
        Ok(serde_json::Value::Number(n)) => n.is_i64() || n.is_u64() || text.parse::<i64>().is_ok(),
        _ => false,
    }
}

/// Reads an optional string field.
///
/// # Errors
/// `InvalidRequestError` if the field is there but is not a string.
pub fn optional_string(raw: Option<&RawValue>, field: &str) -> Result<Option<String>, CacheError> {
    raw.map(|raw| {
        serde_json::from_str::<String>(raw.get()).map_err(|_| match json_type_name(raw.get()) {
            // A JSON string that is not Unicode text: an escaped surrogate without its other half.
            "a string" => CacheError::new(
                ErrorCode::InvalidRequestError,
                format!("`{field}` holds an unpaired surrogate escape (such as \\ud800), which is not Unicode text"),
                format!("send `{field}` as text whose surrogate escapes come in pairs, as JSON.stringify of a well-formed string does"),
            )
            .expected("a string of Unicode text")
            .actual("a string with an unpaired surrogate escape"),
            other => CacheError::invalid_field(field, "a string", other),
        })
    })
    .transpose()
}

/// Reads a string field that must be there.
///
/// # Errors
/// `InvalidRequestError` if the field is missing or not a string.
pub fn required_string(raw: Option<&RawValue>, field: &str) -> Result<String, CacheError> {
    optional_string(raw, field)?.ok_or_else(|| CacheError::missing_field(field, "a string"))
}

/// Reads an optional non-negative integer field.
///
/// # Errors
/// `InvalidRequestError` if the field is there but is not a non-negative integer.
pub fn optional_count(raw: Option<&RawValue>, field: &str) -> Result<Option<u64>, CacheError> {
    raw.map(|raw| {
        serde_json::from_str::<u64>(raw.get()).map_err(|_| {
            let actual = match json_type_name(raw.get()) {
                "a number" => raw.get().to_owned(),
                other => other.to_owned(),
            };
            CacheError::invalid_field(field, "a non-negative integer", actual)
        })
    })
    .transpose()
}

/// A reply's JSON text, success or error. Only the request loop calls these, so only it serialises.
#[derive(Serialize)]
struct Reply<'a, T: Serialize> {
    /// The request's id, or `null` when it had no usable one.
    id: Option<&'a RawValue>,
    /// Whether the request succeeded; says which of `result` and `error` is present.
    ok: bool,
    /// The op's result, on success.
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<T>,
    /// What went wrong, on failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a CacheError>,
}

/// Writes the JSON text of a reply to the request whose id is `id` to `writer`.
///
/// # Errors
/// The writer's, or serde_json's for a result that can't be serialised.
pub fn write_reply<T: Serialize>(
    writer: impl std::io::Write,
    id: Option<&RawValue>,
    outcome: &Result<T, CacheError>,
) -> serde_json::Result<()> {
    let reply = match outcome {
        Ok(result) => Reply { id, ok: true, result: Some(result), error: None },
        Err(error) => Reply { id, ok: false, result: None, error: Some(error) },
    };
    serde_json::to_writer(writer, &reply)
}

/// The JSON text of a reply to the request whose id is `id`.
pub fn reply_text<T: Serialize>(id: Option<&RawValue>, outcome: &Result<T, CacheError>) -> String {
    let reply = match outcome {
        Ok(result) => Reply { id, ok: true, result: Some(result), error: None },
        Err(error) => Reply { id, ok: false, result: None, error: Some(error) },
    };
    exactly_sized_json(&reply).unwrap_or_else(|e| {
        // Only a result that fails to serialise lands here; say so rather than send nothing.
        let error = CacheError::storage_unavailable(format!("the reply could not be encoded: {e}"));
        serde_json::to_string(&Reply::<()> { id, ok: false, result: None, error: Some(&error) }).unwrap_or_default()
    })
}

/// `value` as JSON text in a string of exactly its length. A reply can carry 5 MB of data, and text
/// grown by doubling would hold up to twice that; counting first costs one call per piece, since the
/// data itself is written as one raw piece.
fn exactly_sized_json<T: Serialize>(value: &T) -> serde_json::Result<String> {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    serde_json::to_writer(&mut count, value)?;
    let mut text = Vec::with_capacity(count.0);
    serde_json::to_writer(&mut text, value)?;
    // serde_json writes only valid UTF-8.
    Ok(String::from_utf8(text).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_found_in_the_head_of_a_frame_only_when_it_is_whole() {
        let id = |head: &str| Fields::id_in_head(head.as_bytes()).map(|id| id.get().to_owned());
        assert_eq!(id(r#"{"id": "a-1", "op": "write", "data": "xx"#), Some(r#""a-1""#.into()));
        assert_eq!(id(r#" {"op":"write","sessionId":"conv_a","id":77,"data":[1,"#), Some("77".into()));
        assert_eq!(id(r#"{"id": 123"#), None, "the number may go on past the head");
        assert_eq!(id(r#"{"id": "abc"#), None);
        assert_eq!(id(r#"{"data": "x", "id""#), None);
        assert_eq!(id(r#"{"id": 1.5, "op": "x"#), None, "an unusable id is no id");
        assert_eq!(id(r#"[{"id": 1}, 2"#), None);
        assert_eq!(id("{\"id\": \"\u{e9}\", \"data\": \"\u{e9}").as_deref(), Some("\"\u{e9}\""));
        let cut = "{\"id\": 5, \"data\": \"\u{e9}";
        assert_eq!(Fields::id_in_head(&cut.as_bytes()[..cut.len() - 1]).map(RawValue::get), Some("5"));
    }

    #[test]
    fn fields_borrow_raw_json() {
        let frame = br#"{"id":7,"op":"write","data":{"a": [1, 2]},"unknown":true,"taskId":null}"#;
        let fields = Fields::parse(frame).unwrap();
        assert_eq!(fields.usable_id().unwrap().get(), "7");
        assert_eq!(fields.data.unwrap().get(), r#"{"a": [1, 2]}"#);
        assert!(fields.task_id.is_none());
    }

    #[test]
    fn ids_are_recovered_from_objects_that_are_not_requests() {
        let duplicate = br#"{"id": "r7", "op": "read", "op": "write"}"#;
        assert!(Fields::parse(duplicate).is_err());
        assert_eq!(Fields::recover_id(duplicate).map(RawValue::get), Some(r#""r7""#));
        assert!(Fields::recover_id(br#"{"id": 1.5, "op": "x", "op": "y"}"#).is_none());
        assert!(Fields::recover_id(b"{\"id\": 3, ").is_none());
    }

    #[test]
    fn duplicate_fields_are_found_past_long_values_stepped_over() {
        let twice =
            br#" {"id":1,"data":{"more":"x","more":"y"},"extra":[1,{"a":2}],"customMetadata":{"k":"}"},"extra":3}"#;
        let err = Fields::parse(twice).unwrap_err();
        assert_eq!(err.message, r#"the request has the field "extra" twice"#);
        // Names inside the data are the data's own: only the request's members count.
        let once = br#"{"id":1,"data":{"id":2,"id":3},"customMetadata":{"data":1}}"#;
        assert_eq!(Fields::parse(once).unwrap().data.unwrap().get(), r#"{"id":2,"id":3}"#);
    }

    #[test]
    fn usable_ids() {
        let usable = |json: &str| Fields::parse(json.as_bytes()).unwrap().usable_id().map(|id| id.get().to_owned());
        assert_eq!(usable(r#"{"id":"abc"}"#), Some(r#""abc""#.into()));
        assert_eq!(usable(r#"{"id":-3}"#), Some("-3".into()));
        assert_eq!(usable(r#"{"id":18446744073709551615}"#), Some("18446744073709551615".into()));
        for bad in [r#"{"id":1.5}"#, r#"{"id":true}"#, r#"{"id":{}}"#, r#"{"id":null}"#, r#"{}"#] {
            assert_eq!(usable(bad), None, "{bad}");
        }
        let long = format!(r#"{{"id":"{}"}}"#, "x".repeat(MAX_ID_BYTES + 1));
        assert_eq!(usable(&long), None);
        let fields = Fields::parse(long.as_bytes()).unwrap();
        assert_eq!(fields.id_error().actual, Some("a string of 257 bytes".into()));
    }

    #[test]
    fn bad_frames_say_what_came() {
        let err = Fields::parse(b"[1,2]").unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidRequestError);
        assert_eq!(err.actual, Some("an array".into()));
        // Twelve elements would fill every field of `Fields` in order; still not a request.
        let twelve = br#" [1,"hello",null,null,null,null,null,null,null,null,null,null]"#;
        assert_eq!(Fields::parse(twelve).unwrap_err().actual, Some("an array".into()));
        let err = Fields::parse(b"{\"id\":").unwrap_err();
        assert!(err.actual.as_ref().unwrap().as_str().unwrap().starts_with("invalid JSON"));
        let err = Fields::parse(b"\xff").unwrap_err();
        assert_eq!(err.actual, Some("bytes that are not UTF-8".into()));
    }

    #[test]
    fn typed_getters_name_the_field_and_type() {
        let fields = Fields::parse(br#"{"sessionId":5,"limit":"ten"}"#).unwrap();
        let err = required_string(fields.session_id, "sessionId").unwrap_err();
        assert_eq!(
            (err.message.as_str(), err.actual.clone()),
            ("`sessionId` is not a string", Some("a number".into()))
        );
        let err = optional_count(fields.limit, "limit").unwrap_err();
        assert_eq!(err.actual, Some("a string".into()));
        let err = required_string(fields.storage_key, "storageKey").unwrap_err();
        assert_eq!(err.message, "the request has no `storageKey`");
    }

    #[test]
    fn replies_carry_result_or_error() {
        let id = RawValue::from_string("\"r1\"".into()).unwrap();
        let ok: Result<_, CacheError> = Ok(serde_json::json!({"x": 1}));
        assert_eq!(reply_text(Some(&id), &ok), r#"{"id":"r1","ok":true,"result":{"x":1}}"#);
        let err: Result<(), _> = Err(CacheError::new(ErrorCode::ItemNotFoundError, "m", "s"));
        assert_eq!(
            reply_text(None, &err),
            r#"{"id":null,"ok":false,"error":{"code":"ItemNotFoundError","message":"m","suggestion":"s"}}"#
        );
    }
}
