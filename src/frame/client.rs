//! The client's end of the wire, blocking: requests framed out, reply frames read back within the
//! protocol's cap, and chunk frames joined into the reply they carry (PROTOCOL.md sections 2.2, 2.3).
//!
//! `llm-cache-host call`, doctor's probe and the tests all read a host through this one reader, so they
//! read it as a browser does. A header that announces more than a reply frame may hold (1 MiB) is
//! refused before any of its body is read or allocated: a program that isn't the host must not make
//! its reader allocate whatever it claims. A clean end of input between replies is `None`; an end
//! inside a frame, or between the chunks of one reply, is an error.

use std::io::{self, Read, Write};

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::value::RawValue;

use super::{HEADER_BYTES, announced, header};
use crate::limits::MAX_REPLY_FRAME_BYTES;

/// Writes `body` as one frame (and doesn't flush).
///
/// # Errors
/// `InvalidInput` for a body over 4 GiB, and any error of the writer.
pub fn write_frame(writer: &mut impl Write, body: &[u8]) -> io::Result<()> {
    writer.write_all(&header(body.len())?)?;
    writer.write_all(body)
}

/// Reads the next frame's body.
///
/// Returns `Ok(None)` at a clean end of input (no byte of a new frame).
///
/// # Errors
/// `UnexpectedEof` when input ends inside a frame; `InvalidData` when the header announces more than
/// [`MAX_REPLY_FRAME_BYTES`] (nothing after the header is read); any error of the reader.
pub fn read_frame(reader: &mut impl Read) -> io::Result<Option<Vec<u8>>> {
    let mut header = [0u8; HEADER_BYTES];
    let mut filled = 0;
    while filled < HEADER_BYTES {
        match reader.read(&mut header[filled..]) {
            Ok(0) if filled == 0 => return Ok(None),
            Ok(0) => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "input ended inside a frame's header")),
            Ok(read) => filled += read,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    let length = announced(header) as usize;
    if length > MAX_REPLY_FRAME_BYTES {
        return Err(invalid(format!(
            "a frame of {length} bytes, but no reply frame is over {MAX_REPLY_FRAME_BYTES} bytes (longer replies \
             come as chunk frames)"
        )));
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).map_err(|error| match error.kind() {
        io::ErrorKind::UnexpectedEof => io::Error::new(io::ErrorKind::UnexpectedEof, "input ended inside a frame"),
        _ => error,
    })?;
    Ok(Some(body))
}

/// Reads the next whole reply's JSON text, its chunk frames joined.
///
/// Returns `Ok(None)` at a clean end of input between replies.
///
/// # Errors
/// As [`read_frame`] and [`Joiner::take`]; `UnexpectedEof` when input ends between the chunks of a reply.
pub fn read_reply(reader: &mut impl Read) -> io::Result<Option<String>> {
    let mut joiner = Joiner::default();
    loop {
        let Some(frame) = read_frame(reader)? else {
            if joiner.inside_reply() {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "input ended between the chunks of a reply"));
            }
            return Ok(None);
        };
        if let Some(reply) = joiner.take(frame)? {
            return Ok(Some(reply));
        }
    }
}

/// The fields that tell a chunk frame from a reply (PROTOCOL.md section 2.2): a reply has `ok`, a
/// chunk has `chunk`, `chunks` and `part` instead, and both have the request's `id`. Everything else
/// is skipped unread, by serde's skipping that builds nothing and doesn't recurse, so a reply nested
/// at any depth passes.
#[derive(Deserialize)]
struct Envelope {
    id: Option<Box<RawValue>>,
    ok: Option<IgnoredAny>,
    chunk: Option<u64>,
    chunks: Option<u64>,
    part: Option<String>,
}

/// Chunk frames joined into the reply they carry, one frame at a time.
#[derive(Debug, Default)]
pub struct Joiner {
    /// The parts of the chunked reply under way, concatenated.
    text: String,
    /// The index of the chunk expected next; 0 when no chunked reply is under way.
    next: u64,
    /// How many chunks the reply under way has.
    chunks: u64,
    /// The id its chunks carry, as JSON text: the reply they make must have it too.
    id: String,
}

impl Joiner {
    /// Takes the next frame's body, and returns the reply it completes: the frame's own text when it
    /// is a reply, the joined parts when it is a chunked reply's last chunk, `None` while chunks are
    /// still to come.
    ///
    /// # Errors
    /// `InvalidData` for a frame that is not a JSON object in UTF-8, a chunk out of order or with
    /// another count than the chunks before it, and a reply between the chunks of another.
    pub fn take(&mut self, frame: Vec<u8>) -> io::Result<Option<String>> {
        let text = String::from_utf8(frame).map_err(|_| invalid("a frame that is not UTF-8".into()))?;
        let frame = envelope(&text)?;
        let id = frame.id.as_deref().map_or("null", RawValue::get);
        let Envelope { ok: None, chunk: Some(chunk), chunks: Some(chunks), part: Some(part), .. } = frame else {
            if self.inside_reply() {
                return Err(invalid(format!("a reply between chunk {} and {} of another", self.next - 1, self.next)));
            }
            return Ok(Some(text));
        };
        let agrees = if self.inside_reply() { chunks == self.chunks && id == self.id } else { chunks >= 2 };
        if chunk != self.next || !agrees {
            return Err(invalid(format!(
                "chunk {chunk} of {chunks} for id {id}, where chunk {} of {} for id {} was due",
                self.next,
                if self.inside_reply() { self.chunks } else { chunks },
                if self.inside_reply() { &self.id } else { id },
            )));
        }
        if !self.inside_reply() {
            id.clone_into(&mut self.id);
        }
        self.text.push_str(&part);
        self.chunks = chunks;
        self.next += 1;
        if self.next < chunks {
            return Ok(None);
        }
        self.next = 0;
        let reply = std::mem::take(&mut self.text);
        let joined = envelope(&reply)?;
        if joined.id.as_deref().map_or("null", RawValue::get) != self.id {
            return Err(invalid(format!("chunks for id {} whose reply has another id", self.id)));
        }
        Ok(Some(reply))
    }

    /// Whether a chunked reply is under way: some of its chunks taken, not all.
    pub fn inside_reply(&self) -> bool {
        self.next > 0
    }
}

/// The fields of a frame (or of a reply its chunks make) that tell what it is.
fn envelope(text: &str) -> io::Result<Envelope> {
    // serde reads a struct from an array too; a frame is an object.
    let object = text.trim_start().starts_with('{');
    let envelope = serde_json::from_str::<Envelope>(text).ok().filter(|_| object);
    envelope.ok_or_else(|| invalid("a frame that is not a JSON object".into()))
}

/// An `InvalidData` error saying what was read.
fn invalid(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("the host sent {what}"))
}

#[cfg(test)]
mod tests {
    use serde_json::value::RawValue;

    use super::*;
    use crate::frame::{Reply, framed};

    /// A reader that hands out a frame header and then as many bytes as are asked for, counting them.
    struct Endless {
        header: [u8; HEADER_BYTES],
        read: usize,
    }

    impl Read for Endless {
        fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
            for byte in buffer.iter_mut() {
                *byte = self.header.get(self.read).copied().unwrap_or(b'x');
                self.read += 1;
            }
            Ok(buffer.len())
        }
    }

    #[test]
    fn a_header_over_the_cap_is_refused_before_its_body_is_read() {
        for length in [MAX_REPLY_FRAME_BYTES + 1, u32::MAX as usize] {
            let mut reader = Endless { header: header(length).unwrap(), read: 0 };
            let error = read_frame(&mut reader).unwrap_err();
            assert_eq!(error.kind(), io::ErrorKind::InvalidData, "{length}");
            assert!(error.to_string().contains(&length.to_string()), "{error}");
            assert_eq!(reader.read, HEADER_BYTES, "only the header of a {length}-byte claim is read");
        }
        let mut reader = Endless { header: header(MAX_REPLY_FRAME_BYTES).unwrap(), read: 0 };
        let body = read_frame(&mut reader).unwrap().unwrap();
        assert_eq!(body.len(), MAX_REPLY_FRAME_BYTES, "a frame of exactly 1 MiB is a reply frame");
    }

    #[test]
    fn a_clean_end_is_none_and_a_half_frame_an_error() {
        assert_eq!(read_frame(&mut &b""[..]).unwrap(), None);
        assert_eq!(read_reply(&mut &b""[..]).unwrap(), None);
        let whole = framed(br#"{"id":1,"ok":true}"#).unwrap();
        let mut reader = &whole[..];
        assert_eq!(read_frame(&mut reader).unwrap().as_deref(), Some(&br#"{"id":1,"ok":true}"#[..]));
        assert_eq!(read_frame(&mut reader).unwrap(), None, "nothing after the frame is a clean end");
        for cut in [1, 3, HEADER_BYTES, HEADER_BYTES + 5, whole.len() - 1] {
            let error = read_frame(&mut &whole[..cut]).unwrap_err();
            assert_eq!(error.kind(), io::ErrorKind::UnexpectedEof, "cut at {cut}");
        }
    }

    #[test]
    fn frames_written_are_read_back() {
        let mut wire = Vec::new();
        write_frame(&mut wire, br#"{"id":1,"op":"hello"}"#).unwrap();
        write_frame(&mut wire, b"").unwrap();
        assert_eq!(wire, [framed(br#"{"id":1,"op":"hello"}"#).unwrap(), framed(b"").unwrap()].concat());
        let mut reader = &wire[..];
        assert_eq!(read_frame(&mut reader).unwrap().unwrap(), br#"{"id":1,"op":"hello"}"#);
        assert_eq!(read_frame(&mut reader).unwrap().unwrap(), b"");
        assert_eq!(read_frame(&mut reader).unwrap(), None);
    }

    #[test]
    fn chunked_replies_are_joined_as_the_host_cut_them() {
        let id = RawValue::from_string("7".to_owned()).unwrap();
        let long = format!(r#"{{"id":7,"ok":true,"result":"{}"}}"#, "a\\\"é😀\\u0001".repeat(300_000));
        let short = r#"{"id":8,"ok":false}"#.to_owned();
        let frames = [Reply::new(Some(&id), long.clone()).frames(), vec![short.clone()]].concat();
        assert!(frames.len() >= 3, "the long reply is chunked");
        let wire: Vec<u8> = frames.iter().flat_map(|frame| framed(frame.as_bytes()).unwrap()).collect();
        let mut reader = &wire[..];
        assert_eq!(read_reply(&mut reader).unwrap(), Some(long));
        assert_eq!(read_reply(&mut reader).unwrap(), Some(short));
        assert_eq!(read_reply(&mut reader).unwrap(), None);
    }

    #[test]
    fn chunks_out_of_step_are_refused() {
        let chunk = |index: u64, count: u64| format!(r#"{{"id":1,"chunk":{index},"chunks":{count},"part":"x"}}"#);
        let reply = r#"{"id":2,"ok":true}"#.to_owned();
        for frames in [
            vec![chunk(1, 2)],
            vec![chunk(0, 2), chunk(0, 2)],
            vec![chunk(0, 3), chunk(1, 2)],
            vec![chunk(0, 1)],
            vec![chunk(0, 2), reply.clone()],
            vec![chunk(0, 2), chunk(1, 2).replace(r#""id":1"#, r#""id":2"#)],
            vec![
                r#"{"id":1,"chunk":0,"chunks":2,"part":"{\"id\":2,"}"#.to_owned(),
                r#"{"id":1,"chunk":1,"chunks":2,"part":"\"ok\":true}"}"#.to_owned(),
            ],
            vec!["[1]".to_owned()],
            vec![r#"[null,0,2,"x"]"#.to_owned()],
            vec!["{not json".to_owned()],
        ] {
            let mut joiner = Joiner::default();
            let taken: io::Result<Vec<_>> =
                frames.iter().map(|frame| joiner.take(frame.clone().into_bytes())).collect();
            assert_eq!(taken.unwrap_err().kind(), io::ErrorKind::InvalidData, "{frames:?}");
        }
        let wire: Vec<u8> = framed(chunk(0, 2).as_bytes()).unwrap();
        let error = read_reply(&mut &wire[..]).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::UnexpectedEof, "input ended between the chunks");
    }

    #[test]
    fn a_reply_nested_deeper_than_serde_recurses_passes_as_text() {
        let deep = format!(r#"{{"id":1,"ok":true,"result":{}{}}}"#, "[".repeat(100_000), "]".repeat(100_000));
        let wire = framed(deep.as_bytes()).unwrap();
        assert_eq!(read_reply(&mut &wire[..]).unwrap(), Some(deep));
    }
}
