//! JSON on bytes: pure functions over the JSON text the store keeps, so that commands can answer
//! about a part of a 5 MB item without parsing (or copying) the whole of it.
//!
//! # Layout
//! - [`scan`]: where a value ends; an array's elements and an object's members as byte ranges.
//! - [`pointer`]: RFC 6901 pointers, resolved in one pass however deep.
//! - [`slice`]: elements, members or characters `offset..offset + limit` of a value.
//! - [`shape`]: a short description of a value's structure, e.g. `array[50] of {from,subject}`.
//! - [`strings`]: every string value with its pointer, in one pass however deep.
//! - [`search`]: the string values that contain every word of a query, with pointers and snippets.
//! - [`pretty`]: a value laid out for a person's terminal, tokens as stored.
//!
//! Every function takes text that is valid JSON (the host checked it on write) and answers `None`
//! rather than panicking where the text turns out not to be, so a damaged record is reported as
//! `CorruptedDataError` by the caller.

pub mod pointer;
pub mod pretty;
pub mod scan;
pub mod search;
pub mod shape;
pub mod slice;
pub mod strings;
