//! The native-messaging frame codec: a u32 length in native byte order, then that many bytes of JSON.
//!
//! The header is read and written here and nowhere else ([`header`], [`announced`]), for both ends
//! of the wire: the host's side in this file, the client's side in [`client`].
//!
//! Reading: [`read_frame`] yields one frame's bytes, or [`Incoming::Oversized`] for a frame longer than
//! a request can need, whose bytes it reads and drops in small pieces so the stream stays in step.
//! Writing: [`ReplyWriter`] sends replies, cutting one longer than Chrome accepts from a host (1 MiB)
//! into chunk frames whose `part`s concatenate to the reply's exact JSON text ([`frames_for_reply`]
//! gives the same frames as strings).

use std::io;

use byteorder::{ByteOrder, NativeEndian};
use serde_json::value::RawValue;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::limits::{MAX_REPLY_FRAME_BYTES, MAX_REQUEST_FRAME_BYTES, OVERSIZED_HEAD_BYTES};

pub mod client;

/// The length of a frame's header: the body's length as a u32 in the browser's own (native) byte order.
pub const HEADER_BYTES: usize = 4;

/// The header of a frame whose body is `length` bytes.
///
/// # Errors
/// `InvalidInput` for a body over 4 GiB, whose length no header can say.
pub fn header(length: usize) -> io::Result<[u8; HEADER_BYTES]> {
    let length =
        u32::try_from(length).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a frame over 4 GiB"))?;
    let mut header = [0u8; HEADER_BYTES];
    NativeEndian::write_u32(&mut header, length);
    Ok(header)
}

/// The body length a frame's header announces.
pub fn announced(header: [u8; HEADER_BYTES]) -> u32 {
    NativeEndian::read_u32(&header)
}

/// `body` as one frame: its header, then its bytes.
///
/// # Errors
/// As [`header`].
pub fn framed(body: &[u8]) -> io::Result<Vec<u8>> {
    let mut frame = Vec::with_capacity(HEADER_BYTES + body.len());
    frame.extend_from_slice(&header(body.len())?);
    frame.extend_from_slice(body);
    Ok(frame)
}

/// Whether `buffer` starts with a whole frame within the request limit: one that [`read_frame`] takes
/// from the buffer without waiting for more input.
pub fn whole_request_waiting(buffer: &[u8]) -> bool {
    let Some((header, body)) = buffer.split_first_chunk::<HEADER_BYTES>() else { return false };
    let length = announced(*header);
    length <= MAX_REQUEST_FRAME_BYTES && body.len() >= length as usize
}

/// One frame read from the browser.
#[derive(Debug, PartialEq, Eq)]
pub enum Incoming {
    /// A frame within the limit: its JSON bytes, not yet parsed.
    Message(Vec<u8>),
    /// A frame whose announced length (`length`) was over the limit: its first bytes (`head`, at
    /// most [`OVERSIZED_HEAD_BYTES`]) were kept, to look for the request's id, and the rest read and
    /// dropped.
    Oversized { length: u32, head: Vec<u8> },
    /// A "length" that is plainly the start of JSON text (`{"id` read as 1,684,611,707 bytes): the
    /// sender isn't framing its messages, so nothing after it can be read in step.
    NotFramed([u8; 4]),
}

/// Reads the next frame.
///
/// Returns `Ok(None)` at a clean end of input (no byte of a new frame).
///
/// # Errors
/// `UnexpectedEof` when input ends inside a frame, and any error of the reader.
pub async fn read_frame<R: AsyncRead + Unpin>(reader: &mut R) -> io::Result<Option<Incoming>> {
    let mut header = [0u8; HEADER_BYTES];
    let mut filled = 0;
    while filled < header.len() {
        match reader.read(&mut header[filled..]).await? {
            0 if filled == 0 => return Ok(None),
            0 => return Err(io::ErrorKind::UnexpectedEof.into()),
            n => filled += n,
        }
    }
    let length = announced(header);
    if length > MAX_REQUEST_FRAME_BYTES && looks_like_text(&header) {
        return Ok(Some(Incoming::NotFramed(header)));
    }
    if length > MAX_REQUEST_FRAME_BYTES {
        let mut head = vec![0u8; OVERSIZED_HEAD_BYTES.min(length as usize)];
        reader.read_exact(&mut head).await?;
        let rest = u64::from(length) - head.len() as u64;
        let skipped = tokio::io::copy(&mut reader.take(rest), &mut tokio::io::sink()).await?;
        if skipped < rest {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        return Ok(Some(Incoming::Oversized { length, head }));
    }
    // A long frame goes into the memory kept (see `SPARE`); a short one leaves it for a reply's copy.
    let mut body = if length as usize >= KEEP_ABOVE_BYTES {
        SPARE.take().map(String::into_bytes).unwrap_or_default()
    } else {
        Vec::new()
    };
    body.clear();
    body.resize(length as usize, 0);
    reader.read_exact(&mut body).await?;
    Ok(Some(Incoming::Message(body)))
}

/// Whether a frame header is the start of JSON text instead: `{` or `[` (after any white space)
/// followed by printable ASCII. No real frame over the limit has such a header, as a length it is
/// over 2^24 only because its bytes are text.
fn looks_like_text(header: &[u8; HEADER_BYTES]) -> bool {
    let start = header.iter().position(|b| !b.is_ascii_whitespace());
    start.is_some_and(|at| matches!(header[at], b'{' | b'['))
        && header.iter().all(|b| b.is_ascii_graphic() || b.is_ascii_whitespace())
}

/// A reply ready to send, made of plain pieces: its JSON text, with the long values it carries (a
/// read's stored data) kept apart and put in their places only as the frames are written, so that a
/// 5 MB item is never copied into the text.
#[derive(Debug, Clone)]
pub struct Reply {
    /// The request's id as JSON text, `null` when it had none.
    pub id: Box<RawValue>,
    /// The reply's JSON text without the values in `splices` (the whole text when there are none),
    /// which may be longer than one frame.
    text: String,
    /// Long values, each with the byte offset of `text` where it belongs, in increasing order.
    splices: Vec<(usize, Box<RawValue>)>,
}

impl Reply {
    /// A reply to the request whose id is `id` (`None`: no usable id).
    pub fn new(id: Option<&RawValue>, text: String) -> Reply {
        Reply { id: id.unwrap_or(RawValue::NULL).to_owned(), text, splices: Vec::new() }
    }

    /// A reply whose JSON text is `text` with each value of `splices` inserted at its byte offset
    /// (character boundaries, in increasing order).
    pub fn spliced(id: Option<&RawValue>, text: String, splices: Vec<(usize, Box<RawValue>)>) -> Reply {
        Reply { splices, ..Reply::new(id, text) }
    }

    /// The reply's JSON text as the pieces to write one after another: the text before the first
    /// value, the value, the text up to the next value, and so on to the text after the last.
    pub fn pieces(&self) -> Vec<&str> {
        let mut pieces = Vec::with_capacity(2 * self.splices.len() + 1);
        let mut from = 0;
        for (at, value) in &self.splices {
            pieces.push(&self.text[from..*at]);
            pieces.push(value.get());
            from = *at;
        }
        pieces.push(&self.text[from..]);
        pieces
    }

    /// The length of the reply's whole JSON text.
    #[allow(clippy::len_without_is_empty)] // a reply is never empty
    pub fn len(&self) -> usize {
        self.text.len() + self.splices.iter().map(|(_, value)| value.get().len()).sum::<usize>()
    }

    /// The frames that carry this reply (see [`frames_for_reply`]).
    pub fn frames(&self) -> Vec<String> {
        let pieces = self.pieces();
        let starts = chunk_starts(&self.id, &pieces);
        (0..starts.len().max(1))
            .map(|frame| {
                let mut body = Vec::new();
                push_frame_body(&mut body, &self.id, &pieces, &starts, frame);
                String::from_utf8(body).unwrap_or_default()
            })
            .collect()
    }
}

impl Reply {
    /// Drops the reply, keeping the memory of its longest spliced value for [`copy_of`] to reuse.
    pub fn recycle(self) {
        let longest = self.splices.into_iter().map(|(_, value)| value).max_by_key(|value| value.get().len());
        if let Some(value) = longest {
            give_back(String::from(Box::<str>::from(value)));
        }
    }
}

/// Keeps `text`'s memory for [`copy_of`] or the next long frame to reuse, when it is long (a short one
/// costs nothing to make) and longer than the memory kept already.
pub fn give_back(text: String) {
    if text.capacity() >= KEEP_ABOVE_BYTES {
        let kept = SPARE.take();
        SPARE.set(Some(match kept {
            Some(kept) if kept.capacity() >= text.capacity() => kept,
            _ => text,
        }));
    }
}

/// Keeps a handled request frame's memory for the next long frame or copy (see [`SPARE`]).
pub fn give_back_frame(mut frame: Vec<u8>) {
    frame.clear();
    // Empty, the frame's memory holds valid UTF-8.
    give_back(String::from_utf8(frame).unwrap_or_default());
}

/// Strings shorter than this aren't kept: the allocator hands them out from memory it keeps anyway.
const KEEP_ABOVE_BYTES: usize = 1 << 20;

thread_local! {
    /// The memory of the longest of the last long request frame handled, value a sent reply carried,
    /// or data a write compacted (see [`give_back`]). A request is read into new memory, and a read
    /// copies its item out of the store. A 5 MB block is mapped fresh by the allocator and handed back
    /// when freed, so each of these into new memory costs a page fault per 4 KiB: 1,270 for 5 MB, the
    /// largest part of a 5 MB read's time. Into memory kept, they cost none. One block serves frames
    /// and values alike, on the one thread that reads requests, runs commands and makes replies, so
    /// a host that has handled 5 MB items keeps 5 MB more than it needs while idle, not 10: a 5 MB
    /// write's frame becomes the next 5 MB read's copy.
    static SPARE: std::cell::Cell<Option<String>> = const { std::cell::Cell::new(None) };
}

/// `text` copied into a string of its own: into the memory kept by [`give_back`], when that is large
/// enough (what it has beyond `text` is given back when the string becomes a boxed value).
pub fn copy_of(text: &str) -> String {
    match SPARE.take() {
        Some(mut spare) if spare.capacity() >= text.len() => {
            spare.clear();
            spare.push_str(text);
            spare
        }
        _ => text.to_owned(),
    }
}

/// Appends the body of frame `frame` of a reply (its id and pieces), cut at `starts` ([`chunk_starts`]
/// of `pieces`): the whole text when it isn't cut, else chunk `frame`.
fn push_frame_body(out: &mut Vec<u8>, id: &RawValue, pieces: &[&str], starts: &[usize], frame: usize) {
    if starts.is_empty() {
        pieces.iter().for_each(|piece| out.extend_from_slice(piece.as_bytes()));
    } else {
        push_chunk(out, id, pieces, starts, frame);
    }
}

/// Write out the buffer once it holds this much, so a long reply never sits whole in it.
const WRITE_AT_BYTES: usize = MAX_REPLY_FRAME_BYTES;

/// Sends replies as frames, cut into chunks as [`frames_for_reply`] describes, through one buffer
/// that is kept from reply to reply. Chunk frames are escaped straight from a reply's pieces (its text
/// and its stored data), one at a time, so a 5 MB reply is never copied whole; short replies wait in
/// the buffer and share one write.
pub struct ReplyWriter<W> {
    /// Where the frames go: stdout, in the host.
    writer: W,
    /// Frames not yet written: short replies, and at most one chunk frame.
    buffer: Vec<u8>,
}

impl<W: AsyncWrite + Unpin> ReplyWriter<W> {
    /// A writer of replies to `writer`.
    pub fn new(writer: W) -> Self {
        ReplyWriter { writer, buffer: Vec::new() }
    }

    /// Puts a reply's frames in the buffer, writing each chunk frame out as soon as it is made, and
    /// the buffer once it holds 1 MiB. What is left waits for [`ReplyWriter::flush`].
    ///
    /// # Errors
    /// Any error of the writer (a closed stdout is `BrokenPipe`).
    pub async fn send(&mut self, reply: &Reply) -> io::Result<()> {
        let pieces = reply.pieces();
        let starts = chunk_starts(&reply.id, &pieces);
        for frame in 0..starts.len().max(1) {
            push_frame(&mut self.buffer, |out| push_frame_body(out, &reply.id, &pieces, &starts, frame))?;
            // A chunk frame is close to 1 MiB: out it goes.
            if !starts.is_empty() || self.buffer.len() >= WRITE_AT_BYTES {
                self.writer.write_all(&self.buffer).await?;
                self.buffer.clear();
            }
        }
        Ok(())
    }

    /// Writes out the buffer and flushes the writer. The buffer keeps no more than a few frames'
    /// worth of memory after a burst of long replies.
    ///
    /// # Errors
    /// Any error of the writer.
    pub async fn flush(&mut self) -> io::Result<()> {
        self.writer.write_all(&self.buffer).await?;
        self.buffer.clear();
        self.buffer.shrink_to(2 * MAX_REPLY_FRAME_BYTES);
        self.writer.flush().await
    }
}

/// Appends one frame to `out`: a length header, then the bytes `body` appends.
fn push_frame(out: &mut Vec<u8>, body: impl FnOnce(&mut Vec<u8>)) -> io::Result<()> {
    let header_at = out.len();
    out.extend_from_slice(&[0; HEADER_BYTES]);
    body(out);
    let length = header(out.len() - header_at - HEADER_BYTES)?;
    out[header_at..header_at + HEADER_BYTES].copy_from_slice(&length);
    Ok(())
}

/// Appends chunk frame `chunk` of a reply cut at `starts` (offsets into its pieces, concatenated):
/// `{"id","chunk","chunks","part"}`, with the part's text escaped as a JSON string.
fn push_chunk(out: &mut Vec<u8>, id: &RawValue, pieces: &[&str], starts: &[usize], chunk: usize) {
    let total: usize = pieces.iter().map(|piece| piece.len()).sum();
    let (from, to) = (starts[chunk], starts.get(chunk + 1).copied().unwrap_or(total));
    out.extend_from_slice(b"{\"id\":");
    out.extend_from_slice(id.get().as_bytes());
    out.extend_from_slice(format!(",\"chunk\":{chunk},\"chunks\":{},\"part\":\"", starts.len()).as_bytes());
    let mut offset = 0;
    for piece in pieces {
        let (a, b) = (from.clamp(offset, offset + piece.len()), to.clamp(offset, offset + piece.len()));
        escape_into(out, &piece[a - offset..b - offset]);
        offset += piece.len();
    }
    out.extend_from_slice(b"\"}");
}

/// Appends `text` to `out` escaped as the inside of a JSON string, as serde_json escapes it. Runs that
/// need no escape (nearly all of any text) are found a word at a time and copied whole.
fn escape_into(out: &mut Vec<u8>, text: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = text.as_bytes();
    out.reserve(bytes.len());
    let mut run = 0;
    let mut at = 0;
    while at < bytes.len() {
        if let Some(block) = bytes.get(at..at + 64).and_then(|block| <&[u8; 64]>::try_from(block).ok())
            && !block_has_escapable(block)
        {
            at += 64;
            continue;
        }
        if let Some(word) = word_at(bytes, at) {
            let escapable = escapable_bytes(word);
            if escapable == 0 {
                at += 8;
                continue;
            }
            // The first byte to escape: words are read little-endian, so the lowest flag is the first.
            at += (escapable.trailing_zeros() / 8) as usize;
        }
        let byte = bytes[at];
        let escaped: &[u8] = match byte {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0C => b"\\f",
            0x00..=0x1F => &[b'\\', b'u', b'0', b'0', HEX[usize::from(byte >> 4)], HEX[usize::from(byte & 0xF)]],
            _ => {
                at += 1;
                continue;
            }
        };
        out.extend_from_slice(&bytes[run..at]);
        out.extend_from_slice(escaped);
        at += 1;
        run = at;
    }
    out.extend_from_slice(&bytes[run..]);
}

/// The 8 bytes of `bytes` from `at`, as one little-endian word, when there are 8.
fn word_at(bytes: &[u8], at: usize) -> Option<u64> {
    let word: [u8; 8] = bytes.get(at..at + 8)?.try_into().ok()?;
    Some(u64::from_le_bytes(word))
}

/// Each byte's low 7 bits, and its high bit, in every byte of a word.
const LOW_SEVEN: u64 = 0x7F7F_7F7F_7F7F_7F7F;
const HIGH_BITS: u64 = 0x8080_8080_8080_8080;
const EVERY_BYTE: u64 = 0x0101_0101_0101_0101;

/// The high bit of each byte of `word` that is zero, and no other bit. (Adding 0x7F to a byte's low
/// bits sets its high bit unless they are all zero; no byte carries into the next.)
fn zero_bytes(word: u64) -> u64 {
    !(((word & LOW_SEVEN) + LOW_SEVEN) | word) & HIGH_BITS
}

/// The high bit of each byte of `word` below 0x20 (a control character).
fn control_bytes(word: u64) -> u64 {
    !(((word & LOW_SEVEN) + EVERY_BYTE * (0x80 - 0x20)) | word) & HIGH_BITS
}

/// The high bit of each byte of `word` that JSON escapes inside a string: `"`, `\` and control characters.
fn escapable_bytes(word: u64) -> u64 {
    control_bytes(word) | quote_bytes(word)
}

/// The high bit of each `"` or `\` in `word`: the bytes that escape to two bytes.
fn quote_bytes(word: u64) -> u64 {
    zero_bytes(word ^ (EVERY_BYTE * u64::from(b'"'))) | zero_bytes(word ^ (EVERY_BYTE * u64::from(b'\\')))
}

/// How many bytes a word of UTF-8 text (8 bytes, little-endian) takes inside a JSON string.
fn escaped_word_len(word: u64) -> usize {
    if control_bytes(word) == 0 {
        8 + flag_count(quote_bytes(word))
    } else {
        word.to_le_bytes().iter().map(|&byte| escaped_byte_len(byte)).sum()
    }
}

/// How many bytes of a word have their high bit set in `flags` (which has no other bits): shifted to
/// ones and multiplied, every byte adds itself into the top byte. (No popcount instruction is assumed.)
fn flag_count(flags: u64) -> usize {
    ((flags >> 7).wrapping_mul(EVERY_BYTE) >> 56) as usize
}

/// Whether any of 64 bytes is one JSON escapes inside a string.
fn block_has_escapable(block: &[u8; 64]) -> bool {
    let words = block.chunks_exact(8).map(|word| u64::from_le_bytes(word.try_into().unwrap_or_default()));
    words.fold(0, |flags, word| flags | escapable_bytes(word)) != 0
}

/// How many bytes 64 bytes of UTF-8 text take inside a JSON string.
fn escaped_block_len(block: &[u8; 64]) -> usize {
    let (mut controls, mut quotes) = (0, 0);
    for word in block.chunks_exact(8) {
        let word = u64::from_le_bytes(word.try_into().unwrap_or_default());
        controls |= control_bytes(word);
        quotes += flag_count(quote_bytes(word));
    }
    if controls == 0 { 64 + quotes } else { block.iter().map(|&byte| escaped_byte_len(byte)).sum() }
}

/// The frames that carry `reply` (a reply's whole JSON text) for the request whose id is `id`.
///
/// A reply of at most 1 MiB is one frame, as it is. A longer one becomes chunk frames
/// `{"id","chunk","chunks","part"}`: the `part`s, in order, concatenate to `reply` exactly.
pub fn frames_for_reply(id: &RawValue, reply: String) -> Vec<String> {
    Reply::new(Some(id), reply).frames()
}

/// Where each chunk of a reply (its pieces, concatenated) starts, or nothing when it fits in one frame.
///
/// Each part is cut by its *escaped* length, because JSON escaping grows a `"` or `\` to two bytes and
/// a control character to six, so every frame stays within 1 MiB whatever the content.
fn chunk_starts(id: &RawValue, pieces: &[&str]) -> Vec<usize> {
    let total: usize = pieces.iter().map(|piece| piece.len()).sum();
    if total <= MAX_REPLY_FRAME_BYTES {
        return Vec::new();
    }
    // The envelope around a part, with room for the largest index and count there can be
    // (a reply has fewer chunks than bytes).
    let digits = total.to_string().len();
    let envelope = r#"{"id":,"chunk":,"chunks":,"part":""}"#.len() + id.get().len() + 2 * digits;
    let budget = MAX_REPLY_FRAME_BYTES.saturating_sub(envelope).max(6);

    let mut starts = vec![0];
    let mut escaped = 0;
    let mut offset = 0;
    // Pieces are whole JSON texts, so no character spans two.
    for piece in pieces {
        let bytes = piece.as_bytes();
        let mut at = 0;
        while at < bytes.len() {
            // Far from the budget no cut can fall in the next 64 bytes or the next 8, whatever they
            // hold (control characters at most, of 6 bytes each): they are measured whole.
            if escaped + 64 * MAX_ESCAPED_CHAR <= budget
                && let Some(block) = bytes.get(at..at + 64).and_then(|block| block.try_into().ok())
            {
                escaped += escaped_block_len(block);
                at += 64;
                continue;
            }
            if escaped + 8 * MAX_ESCAPED_CHAR <= budget
                && let Some(word) = word_at(bytes, at)
            {
                escaped += escaped_word_len(word);
                at += 8;
                continue;
            }
            let byte = bytes[at];
            // A UTF-8 continuation byte belongs to the character before it: never cut there.
            let starts_char = byte & 0b1100_0000 != 0b1000_0000;
            if starts_char && escaped + MAX_ESCAPED_CHAR > budget {
                // Cut here only if the character starting at `at` would not fit; look it up once.
                let char_len = piece[at..].chars().next().map_or(1, escaped_len);
                if escaped + char_len > budget {
                    starts.push(offset + at);
                    escaped = 0;
                }
            }
            escaped += escaped_byte_len(byte);
            at += 1;
        }
        offset += piece.len();
    }
    starts
}

/// The most bytes one character can take inside a JSON string (`\u0000`).
const MAX_ESCAPED_CHAR: usize = 6;

/// How many bytes one byte of UTF-8 text takes inside a JSON string as serde_json writes it (bytes of
/// multi-byte characters are written as they are).
fn escaped_byte_len(byte: u8) -> usize {
    match byte {
        b'"' | b'\\' | 0x08 | 0x0C | b'\n' | b'\r' | b'\t' => 2,
        0x00..=0x1F => 6,
        _ => 1,
    }
}

/// How many bytes `c` takes inside a JSON string as serde_json writes it.
fn escaped_len(c: char) -> usize {
    match c {
        '"' | '\\' | '\u{08}' | '\u{0C}' | '\n' | '\r' | '\t' => 2,
        '\u{00}'..='\u{1F}' => 6,
        _ => c.len_utf8(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::value::RawValue;

    use super::*;

    fn raw(json: &str) -> Box<RawValue> {
        RawValue::from_string(json.to_owned()).unwrap()
    }

    /// Checks the chunking contract for one reply: every frame fits, is JSON, and the parts rebuild it.
    fn assert_chunks_rebuild(id: &RawValue, reply: &str) -> usize {
        let frames = frames_for_reply(id, reply.to_owned());
        let mut rebuilt = String::new();
        for (index, frame) in frames.iter().enumerate() {
            assert!(frame.len() <= MAX_REPLY_FRAME_BYTES, "frame {index} is {} bytes", frame.len());
            let value: serde_json::Value = serde_json::from_str(frame).unwrap();
            assert_eq!(value["id"], serde_json::from_str::<serde_json::Value>(id.get()).unwrap());
            assert_eq!(value["chunk"], index);
            assert_eq!(value["chunks"], frames.len());
            rebuilt.push_str(value["part"].as_str().unwrap());
        }
        assert_eq!(rebuilt, reply);
        frames.len()
    }

    #[test]
    fn small_replies_are_one_frame() {
        let frames = frames_for_reply(&raw("1"), r#"{"id":1,"ok":true}"#.into());
        assert_eq!(frames, vec![r#"{"id":1,"ok":true}"#.to_owned()]);
        let exact = "x".repeat(MAX_REPLY_FRAME_BYTES);
        assert_eq!(frames_for_reply(&raw("1"), exact.clone()), vec![exact]);
    }

    #[test]
    fn worst_case_content_stays_within_a_frame() {
        let id = raw(&format!("\"{}\"", "i".repeat(256)));
        let five_mb = 5 * 1024 * 1024;
        let cases = [
            "\"".repeat(five_mb),
            "\\".repeat(five_mb),
            "\u{01}".repeat(five_mb),
            "😀".repeat(five_mb / 4),
            "a\"\\\u{1F}😀\n é".repeat(five_mb / 16),
            "x".repeat(MAX_REPLY_FRAME_BYTES + 1),
        ];
        for reply in &cases {
            assert!(assert_chunks_rebuild(&id, reply) >= 2);
        }
    }

    #[test]
    fn control_characters_cost_six_bytes() {
        // 6x growth: 1 MiB of \u0001 cannot fit in fewer than six frames.
        let reply = "\u{01}".repeat(MAX_REPLY_FRAME_BYTES + 1);
        assert!(assert_chunks_rebuild(&raw("7"), &reply) >= 6);
    }

    #[test]
    fn escaped_byte_len_agrees_with_escaped_len() {
        for byte in 0u8..0x80 {
            assert_eq!(escaped_byte_len(byte), escaped_len(char::from(byte)), "{byte}");
        }
        for c in ['é', '😀', '\u{FFFF}'] {
            let bytes = c.to_string().into_bytes();
            assert_eq!(bytes.iter().map(|&b| escaped_byte_len(b)).sum::<usize>(), escaped_len(c));
        }
    }

    #[test]
    fn word_checks_agree_with_byte_checks() {
        // Every byte value in every position, beside bytes of each kind.
        let mut words = Vec::new();
        for byte in 0..=255u8 {
            for filler in [b'a', b'"', 0x1F, 0x20, 0x7F, 0x80, 0xFF, 0x00, b'\\'] {
                for at in 0..8 {
                    let mut word = [filler; 8];
                    word[at] = byte;
                    words.push(word);
                }
            }
        }
        for word in words {
            let value = u64::from_le_bytes(word);
            let flagged: Vec<bool> = (0..8).map(|at| escapable_bytes(value) >> (8 * at + 7) & 1 == 1).collect();
            let expected: Vec<bool> = word.iter().map(|&byte| escaped_byte_len(byte) > 1).collect();
            assert_eq!(flagged, expected, "{word:?}");
            assert_eq!(escaped_word_len(value), word.iter().map(|&b| escaped_byte_len(b)).sum::<usize>(), "{word:?}");
            let block: [u8; 64] = std::array::from_fn(|at| word[at % 8]);
            assert_eq!(escaped_block_len(&block), 8 * escaped_word_len(value), "{word:?}");
            assert_eq!(block_has_escapable(&block), expected.contains(&true), "{word:?}");
        }
    }

    /// The cut rule stated a byte at a time, the plainest way: [`chunk_starts`], which measures words
    /// whole, must cut every reply at the same places, as the frames on the wire are the protocol's.
    fn chunk_starts_byte_by_byte(id: &RawValue, pieces: &[&str]) -> Vec<usize> {
        let total: usize = pieces.iter().map(|piece| piece.len()).sum();
        if total <= MAX_REPLY_FRAME_BYTES {
            return Vec::new();
        }
        let digits = total.to_string().len();
        let envelope = r#"{"id":,"chunk":,"chunks":,"part":""}"#.len() + id.get().len() + 2 * digits;
        let budget = MAX_REPLY_FRAME_BYTES.saturating_sub(envelope).max(6);
        let (mut starts, mut escaped, mut offset) = (vec![0], 0, 0);
        for piece in pieces {
            for (at, &byte) in piece.as_bytes().iter().enumerate() {
                if byte & 0b1100_0000 != 0b1000_0000 && escaped + MAX_ESCAPED_CHAR > budget {
                    let char_len = piece[at..].chars().next().map_or(1, escaped_len);
                    if escaped + char_len > budget {
                        starts.push(offset + at);
                        escaped = 0;
                    }
                }
                escaped += escaped_byte_len(byte);
            }
            offset += piece.len();
        }
        starts
    }

    #[test]
    fn chunks_are_cut_where_a_byte_at_a_time_cuts_them() {
        let id = raw("12345");
        let mixed = "a\"\\\u{1F}😀\n éxyz".repeat(300_000);
        let words = "the quick brown fox, \"jumps\" over. ".repeat(200_000);
        for text in [&mixed[..], &words[..], &"\u{1}".repeat(1_500_000)] {
            for pieces in [vec![text], vec![&text[..3], &text[3..]], vec!["{\"a\":", text, "}"]] {
                assert_eq!(chunk_starts(&id, &pieces), chunk_starts_byte_by_byte(&id, &pieces));
            }
        }
    }

    #[test]
    fn escape_into_matches_serde_json() {
        let text = "plain words, \"quoted\" \\ back\nslash\u{1}\u{1F} é 😀 and a long run without any escape at all";
        for from in 0..text.len() {
            if !text.is_char_boundary(from) {
                continue;
            }
            let mut out = Vec::new();
            escape_into(&mut out, &text[from..]);
            let quoted = serde_json::to_string(&text[from..]).unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), quoted[1..quoted.len() - 1]);
        }
    }

    #[test]
    fn escaped_len_matches_serde_json() {
        for c in (0u32..0x800).filter_map(char::from_u32).chain(['😀', '\u{FFFF}', '\u{7F}']) {
            let quoted = serde_json::to_string(&c.to_string()).unwrap();
            assert_eq!(escaped_len(c), quoted.len() - 2, "{c:?}");
        }
    }

    fn framed_all(bodies: &[&[u8]]) -> Vec<u8> {
        bodies.iter().flat_map(|body| framed(body).unwrap()).collect()
    }

    #[tokio::test]
    async fn reads_frames_until_a_clean_end() {
        let bytes = framed_all(&[b"{\"a\":1}", b"{}"]);
        let mut reader = &bytes[..];
        assert_eq!(read_frame(&mut reader).await.unwrap(), Some(Incoming::Message(b"{\"a\":1}".to_vec())));
        assert_eq!(read_frame(&mut reader).await.unwrap(), Some(Incoming::Message(b"{}".to_vec())));
        assert_eq!(read_frame(&mut reader).await.unwrap(), None);
    }

    #[tokio::test]
    async fn a_frame_cut_short_is_unexpected_eof() {
        for cut in [2, 4, 6] {
            let bytes = framed_all(&[b"{\"a\":1}"]);
            let mut reader = &bytes[..cut];
            let err = read_frame(&mut reader).await.unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof, "cut at {cut}");
        }
    }

    #[tokio::test]
    async fn oversized_frames_are_skipped_and_the_stream_stays_in_step() {
        let length = MAX_REQUEST_FRAME_BYTES + 1;
        let mut bytes = header(length as usize).unwrap().to_vec();
        bytes.resize(4 + length as usize, b'x');
        bytes.extend(framed_all(&[b"{}"]));
        let mut reader = &bytes[..];
        let head = vec![b'x'; OVERSIZED_HEAD_BYTES];
        assert_eq!(read_frame(&mut reader).await.unwrap(), Some(Incoming::Oversized { length, head }));
        assert_eq!(read_frame(&mut reader).await.unwrap(), Some(Incoming::Message(b"{}".to_vec())));
    }

    /// Sends `replies` through a [`ReplyWriter`] and returns what it wrote, and its buffer's capacity.
    async fn sent(replies: &[Reply]) -> (Vec<u8>, usize) {
        let mut out = Vec::new();
        let mut writer = ReplyWriter::new(&mut out);
        for reply in replies {
            writer.send(reply).await.unwrap();
        }
        writer.flush().await.unwrap();
        let capacity = writer.buffer.capacity();
        (out, capacity)
    }

    #[tokio::test]
    async fn the_reply_writer_sends_the_same_frames_as_frames_for_reply() {
        let big = format!("{{\"id\":3,\"ok\":true,\"result\":\"{}\"}}", "a\\\"é😀\u{1}".repeat(400_000));
        let replies = [
            Reply::new(None, r#"{"id":null,"ok":false}"#.to_owned()),
            Reply::new(Some(&raw("3")), big),
            Reply::new(Some(&raw("\"x\"")), r#"{"id":"x","ok":true}"#.to_owned()),
        ];
        let (out, capacity) = sent(&replies).await;
        let frames: Vec<String> = replies.iter().flat_map(Reply::frames).collect();
        assert!(frames.len() >= 5, "the long reply is chunked: {} frames", frames.len());
        let bodies: Vec<&[u8]> = frames.iter().map(|frame| frame.as_bytes()).collect();
        assert_eq!(out, framed_all(&bodies));
        assert!(capacity < 3 * MAX_REPLY_FRAME_BYTES, "the buffer holds a frame or two, not the reply");
    }

    #[tokio::test]
    async fn spliced_data_is_framed_as_if_it_were_in_the_text() {
        let data = raw(&serde_json::to_string(&"q\"\\\u{1}é😀 ".repeat(300_000)).unwrap());
        let more = raw(&serde_json::to_string(&"x".repeat(200_000)).unwrap());
        let (before, between, after) = (r#"{"id":9,"ok":true,"result":{"items":[{"data":"#, "},{\"data\":", "}]}}");
        let whole = format!("{before}{}{between}{}{after}", data.get(), more.get());
        let text = format!("{before}{between}{after}");
        let at = [before.len(), before.len() + between.len()];
        let spliced = Reply::spliced(Some(&raw("9")), text, vec![(at[0], data), (at[1], more)]);
        assert_eq!(spliced.len(), whole.len());
        assert_eq!(spliced.pieces().concat(), whole);
        let frames = spliced.frames();
        assert!(frames.len() >= 3, "the reply is chunked");
        assert_eq!(frames, frames_for_reply(&raw("9"), whole.clone()));
        let (out, _) = sent(std::slice::from_ref(&spliced)).await;
        let bodies: Vec<&[u8]> = frames.iter().map(|frame| frame.as_bytes()).collect();
        assert_eq!(out, framed_all(&bodies));
        assert_eq!(assert_chunks_rebuild(&raw("9"), &whole), frames.len());
    }

    #[tokio::test]
    async fn writes_native_endian_headers() {
        let replies = [Reply::new(None, "{}".to_owned()), Reply::new(None, "[1]".to_owned())];
        assert_eq!(sent(&replies).await.0, framed_all(&[b"{}", b"[1]"]));
    }
}
