//! The one error type that becomes an error reply.
//!
//! Every failure a client can cause or should hear about is a [`CacheError`]: a wire code from the spec,
//! a message, what was expected and what came (where they apply), and a suggestion saying what to do
//! next. Errors that end the process instead (stdin or stdout failing) are plain `io::Error`s in the
//! request loop and never reach this type.

use std::fmt;

use serde::Serialize;
use serde_json::{Map, Value};

/// The error names of the spec; each is the `code` of an error reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum ErrorCode {
    /// A write or update would take the session over its quota.
    QuotaExceededError,
    /// No such item in this session (or in this extension).
    ItemNotFoundError,
    /// The store can't be opened, read or written.
    StorageUnavailableError,
    /// A sessionId, taskId, turnId or storageKey is not of the spec's form.
    InvalidKeyFormatError,
    /// `data` is larger than one item may be.
    DataTooLargeError,
    /// A stored record can't be decoded.
    CorruptedDataError,
    /// Bad JSON, unknown op, missing or mistyped field, oversized frame.
    InvalidRequestError,
}

impl ErrorCode {
    /// The code's name as it appears on the wire and in logs.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::QuotaExceededError => "QuotaExceededError",
            ErrorCode::ItemNotFoundError => "ItemNotFoundError",
            ErrorCode::StorageUnavailableError => "StorageUnavailableError",
            ErrorCode::InvalidKeyFormatError => "InvalidKeyFormatError",
            ErrorCode::DataTooLargeError => "DataTooLargeError",
            ErrorCode::CorruptedDataError => "CorruptedDataError",
            ErrorCode::InvalidRequestError => "InvalidRequestError",
        }
    }
}

/// An error that becomes an error reply; boxed, so that `Result`s stay small on the success path.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(transparent)]
pub struct CacheError(Box<ErrorBody>);

/// An error reply's body: `{"code", "message", "expected"?, "actual"?, "suggestion", ...details}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ErrorBody {
    /// Which of the spec's errors this is; clients branch on it.
    pub code: ErrorCode,
    /// One sentence for a person or an LLM saying what went wrong.
    pub message: String,
    /// What the host wanted, where that can be said (a type, a form, a limit).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected: Option<Value>,
    /// What came instead: a type name, a size or an id, never the cached data itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actual: Option<Value>,
    /// What the caller should do next; always present.
    pub suggestion: String,
    /// Extra machine-readable fields of some errors (the quota's current, requested and limit).
    #[serde(flatten)]
    pub details: Map<String, Value>,
}

impl CacheError {
    /// An error with a message and a suggestion; add the rest with the builder methods.
    pub fn new(code: ErrorCode, message: impl Into<String>, suggestion: impl Into<String>) -> Self {
        CacheError(Box::new(ErrorBody {
            code,
            message: message.into(),
            expected: None,
            actual: None,
            suggestion: suggestion.into(),
            details: Map::new(),
        }))
    }

    /// Says what the host wanted.
    pub fn expected(mut self, expected: impl Into<Value>) -> Self {
        self.0.expected = Some(expected.into());
        self
    }

    /// Says what came instead.
    pub fn actual(mut self, actual: impl Into<Value>) -> Self {
        self.0.actual = Some(actual.into());
        self
    }

    /// Adds a machine-readable field beside the standard ones.
    pub fn detail(mut self, name: &str, value: impl Into<Value>) -> Self {
        self.0.details.insert(name.to_owned(), value.into());
        self
    }

    /// `InvalidRequestError` for a request that misses a field it needs.
    pub fn missing_field(field: &str, expected: &str) -> Self {
        CacheError::new(
            ErrorCode::InvalidRequestError,
            format!("the request has no `{field}`"),
            format!("add `{field}` ({expected}) and send the request again"),
        )
        .expected(expected)
        .actual("nothing")
    }

    /// `InvalidRequestError` for a field of the wrong JSON type or form.
    pub fn invalid_field(field: &str, expected: &str, actual: impl Into<Value>) -> Self {
        CacheError::new(
            ErrorCode::InvalidRequestError,
            format!("`{field}` is not {expected}"),
            format!("send `{field}` as {expected}"),
        )
        .expected(expected)
        .actual(actual)
    }

    /// `ItemNotFoundError` for a key this session has no item under. The same error serves a key of
    /// another session or extension, so that nobody learns such an item exists.
    pub fn item_not_found(storage_key: &str) -> Self {
        CacheError::new(
            ErrorCode::ItemNotFoundError,
            format!("no item {storage_key} in this session"),
            "list the session's items to see which keys exist; the item may have been deleted or its session ended",
        )
        .actual(storage_key)
    }

    /// `StorageUnavailableError` with the reason the store failed.
    pub fn storage_unavailable(reason: impl fmt::Display) -> Self {
        CacheError::new(
            ErrorCode::StorageUnavailableError,
            format!("the cache store is unavailable: {reason}"),
            "continue without the cache (process the data in context); `llm-cache-host doctor` and the host's log under its data directory say more",
        )
    }

    /// `CorruptedDataError` for a stored record that can't be decoded.
    pub fn corrupted(storage_key: &str, reason: impl fmt::Display) -> Self {
        CacheError::new(
            ErrorCode::CorruptedDataError,
            format!("item {storage_key} is corrupted: {reason}"),
            "delete the item and write it again from its source",
        )
        .actual(storage_key)
    }
}

impl std::ops::Deref for CacheError {
    type Target = ErrorBody;

    fn deref(&self) -> &ErrorBody {
        &self.0
    }
}

impl fmt::Display for CacheError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

impl std::error::Error for CacheError {}

/// The name of a JSON value's type, for the `actual` of a mistyped field; it never echoes the value.
pub fn json_type_name(raw_json: &str) -> &'static str {
    match raw_json.trim_start().as_bytes().first() {
        Some(b'"') => "a string",
        Some(b'{') => "an object",
        Some(b'[') => "an array",
        Some(b't' | b'f') => "a boolean",
        Some(b'n') => "null",
        _ => "a number",
    }
}
