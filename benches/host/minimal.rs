//! The floor the host is measured against: a minimal native-messaging host doing the same LMDB work
//! and nothing else, written for speed and sharing no code with the host (nothing from `src/`). One
//! durable write transaction per `write`; a `read` answered from the stored bytes (a `pointer` the
//! plain way: the item parsed whole, then picked), cut into chunk frames the protocol's way by its
//! own framing and escaping; no checks, no metadata, no logs, no async runtime. `hello` (and any other
//! op) is a bare acknowledgement: the pipe round trip alone.
//!
//! A long read is escaped straight into the output buffer, one chunk frame at a time, so the reply is
//! never built whole: one pass over the stored bytes finds where the chunks start (the count must be
//! in the first frame), one more escapes each chunk into its frame. Both passes look at 8 bytes at a
//! time and go byte by byte only in a word that holds a byte JSON escapes.
//!
//! With `LLM_CACHE_BENCH_ROLE=memcpy` the same host keeps each read's frames once made and sends the
//! kept bytes to every later read of the key: what the pipe alone costs for those bytes, a lower bound
//! that shows the floor is close to the pipe (see `floor_is_plausible` in `host.rs`).
//!
//! The bench starts itself with `LLM_CACHE_BENCH_ROLE=minimal` (or `memcpy`) to run this.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::os::fd::AsFd;

use heed::types::{Bytes, Str};
use serde::Deserialize;
use serde_json::value::RawValue;

/// Chrome takes at most this much in one frame from a host.
const MAX_FRAME: usize = 1 << 20;

/// The fields of a request that the minimal host looks at.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Request<'a> {
    #[serde(borrow)]
    id: &'a RawValue,
    op: &'a str,
    session_id: Option<&'a str>,
    task_id: Option<&'a str>,
    turn_id: Option<&'a str>,
    storage_key: Option<&'a str>,
    pointer: Option<&'a str>,
    #[serde(borrow)]
    data: Option<&'a RawValue>,
}

/// Serves stdin until it ends, with the store in `$LLM_CACHE_DIR`; `memcpy` keeps and resends reads.
pub fn serve(memcpy: bool) {
    let dir = std::env::var_os("LLM_CACHE_DIR").expect("LLM_CACHE_DIR");
    std::fs::create_dir_all(&dir).expect("store dir");
    let mut options = heed::EnvOpenOptions::new();
    options.map_size(4 << 30).max_dbs(1);
    // SAFETY: only this process opens the directory, through LMDB, with no unsafe flags.
    let env = unsafe { options.open(&dir) }.expect("open LMDB");
    let wtxn = env.write_txn().expect("txn");
    let items: heed::Database<'_, Str, Bytes> = env
        .create_databases_and_commit(wtxn, |opener, wtxn| -> heed::Result<_> {
            Ok(heed::CommitOrAbort::<_, ()>::Commit(opener.create_database(wtxn, Some("items"))?))
        })
        .expect("db")
        .unwrap_commit();

    // Pipes of 1 MiB, as the host asks for (64 KiB by default): fewer wake-ups per long frame.
    for fd in [0, 1] {
        // SAFETY: F_SETPIPE_SZ only resizes a pipe's buffer, or fails (then the pipe stays as it was).
        unsafe { libc::fcntl(fd, libc::F_SETPIPE_SZ, MAX_FRAME as libc::c_int) };
    }
    let mut input = std::io::stdin().lock();
    // Straight to the pipe: Rust's `Stdout` is line-buffered, and would look for a newline in every
    // byte written.
    let mut output = std::fs::File::from(std::io::stdout().as_fd().try_clone_to_owned().expect("stdout"));
    // Frames go out from here: a short reply whole, a long one a chunk frame at a time.
    let mut out: Vec<u8> = Vec::with_capacity(MAX_FRAME + 4);
    let mut header = [0u8; 4];
    let mut body = Vec::new();
    // For `memcpy`: each key's reply frames as they follow the id (the id is the only part that changes).
    let mut kept: HashMap<String, Vec<Kept>> = HashMap::new();
    while input.read_exact(&mut header).is_ok() {
        body.resize(u32::from_ne_bytes(header) as usize, 0);
        input.read_exact(&mut body).expect("a whole frame");
        let request: Request<'_> = serde_json::from_slice(&body).expect("a request");
        let id = request.id.get().as_bytes();
        match request.op {
            "write" => {
                let key = format!(
                    "{}_{}_{}",
                    request.session_id.unwrap_or_default(),
                    request.task_id.unwrap_or_default(),
                    request.turn_id.unwrap_or_default()
                );
                let data = request.data.map_or("null", RawValue::get);
                let mut wtxn = env.write_txn().expect("txn");
                items.put(&mut wtxn, &key, data.as_bytes()).expect("put");
                wtxn.commit().expect("commit");
                kept.remove(&key);
                let reply = format!(r#","ok":true,"result":{{"storageKey":"{key}","dataSize":{}}}}}"#, data.len());
                short_frame(&mut out, id, reply.as_bytes());
            }
            "read" => {
                let key = request.storage_key.unwrap_or_default();
                if let Some(frames) = kept.get(key).filter(|_| memcpy) {
                    for kept in frames {
                        kept.frame(&mut out, id);
                        output.write_all(&out).expect("write");
                        out.clear();
                    }
                    output.flush().expect("flush");
                    continue;
                }
                let rtxn = env.read_txn().expect("txn");
                let data = items.get(&rtxn, key).expect("get").expect("stored");
                let picked;
                let data = match request.pointer {
                    // A pointer the plain way: parse the whole item, then pick.
                    Some(pointer) => {
                        let value: serde_json::Value = serde_json::from_slice(data).expect("stored JSON");
                        picked = value.pointer(pointer).expect("the pointer names a value").to_string();
                        picked.as_bytes()
                    }
                    None => data,
                };
                let size = itoa(data.len());
                let head: &[&[u8]] = &[br#","ok":true,"result":{"item":{"dataSize":"#, size.text(), br#","data":"#];
                let tail: &[u8] = b"}}}";
                let mut tails = Vec::new();
                send_reply(&mut output, &mut out, id, head, data, tail, |frame, inner_id| {
                    if memcpy {
                        tails.push(Kept::new(frame, inner_id, id.len()));
                    }
                });
                if memcpy {
                    kept.insert(key.to_owned(), tails);
                }
                output.flush().expect("flush");
                continue;
            }
            _ => short_frame(&mut out, id, br#","ok":true}"#),
        }
        output.write_all(&out).expect("write");
        output.flush().expect("flush");
        out.clear();
    }
}

/// Appends one frame `{"id":<id><rest>` to `out`.
fn short_frame(out: &mut Vec<u8>, id: &[u8], rest: &[u8]) {
    let length = 6 + id.len() + rest.len();
    out.extend_from_slice(&(length as u32).to_ne_bytes());
    out.extend_from_slice(b"{\"id\":");
    out.extend_from_slice(id);
    out.extend_from_slice(rest);
}

/// A frame kept by the `memcpy` host: its bytes after the id, less the id inside a first chunk's part.
struct Kept {
    tail: Vec<u8>,
    /// Where in `tail` the id goes again (a number's text is the same escaped).
    inner_id: Option<usize>,
}

impl Kept {
    fn new(frame: &[u8], inner_id: Option<usize>, id_len: usize) -> Kept {
        let tail = match inner_id {
            Some(at) => [&frame[..at], &frame[at + id_len..]].concat(),
            None => frame.to_vec(),
        };
        Kept { tail, inner_id }
    }

    /// Appends the kept frame with `id` in its places: copies alone.
    fn frame(&self, out: &mut Vec<u8>, id: &[u8]) {
        let ids = 1 + usize::from(self.inner_id.is_some());
        out.extend_from_slice(&((6 + ids * id.len() + self.tail.len()) as u32).to_ne_bytes());
        out.extend_from_slice(b"{\"id\":");
        out.extend_from_slice(id);
        match self.inner_id {
            Some(at) => {
                out.extend_from_slice(&self.tail[..at]);
                out.extend_from_slice(id);
                out.extend_from_slice(&self.tail[at..]);
            }
            None => out.extend_from_slice(&self.tail),
        }
    }
}

/// Sends the reply `{"id":<id>` + `head` + `data` + `tail` as one frame when it fits, else as chunk
/// frames whose parts concatenate to its text. `kept` sees each frame as it follows the id, and where
/// in that the first chunk's part has the id again.
fn send_reply(
    output: &mut impl Write,
    out: &mut Vec<u8>,
    id: &[u8],
    head: &[&[u8]],
    data: &[u8],
    tail: &[u8],
    mut kept: impl FnMut(&[u8], Option<usize>),
) {
    let head_len: usize = head.iter().map(|piece| piece.len()).sum();
    let total = 6 + id.len() + head_len + data.len() + tail.len();
    out.clear();
    if total <= MAX_FRAME {
        out.extend_from_slice(&(total as u32).to_ne_bytes());
        out.extend_from_slice(b"{\"id\":");
        out.extend_from_slice(id);
        head.iter().for_each(|piece| out.extend_from_slice(piece));
        out.extend_from_slice(data);
        out.extend_from_slice(tail);
        kept(&out[10 + id.len()..], None);
        output.write_all(out).expect("write");
        out.clear();
        return;
    }
    // The text before the data is short and holds nothing to escape but the id's own quotes: it and
    // the text after go into the first and last chunk as escaped bytes, measured like the data.
    let mut before = Vec::with_capacity(64);
    before.extend_from_slice(b"{\"id\":");
    before.extend_from_slice(id);
    head.iter().for_each(|piece| before.extend_from_slice(piece));
    let count = itoa(total);
    let envelope = br#"{"id":,"chunk":,"chunks":,"part":""}"#.len() + id.len() + 2 * count.text().len();
    let budget = MAX_FRAME - envelope;
    let pieces: [&[u8]; 3] = [&before, data, tail];
    let cuts = cut(&pieces, budget);
    let chunks = cuts.len() - 1;
    let chunks_text = itoa(chunks);
    for chunk in 0..chunks {
        out.extend_from_slice(&[0; 4]);
        out.extend_from_slice(b"{\"id\":");
        let after_id = out.len() + id.len();
        out.extend_from_slice(id);
        out.extend_from_slice(b",\"chunk\":");
        out.extend_from_slice(itoa(chunk).text());
        out.extend_from_slice(b",\"chunks\":");
        out.extend_from_slice(chunks_text.text());
        out.extend_from_slice(b",\"part\":\"");
        // The first part starts `{\"id\":` and the id.
        let inner_id = (chunk == 0).then(|| out.len() + 8 - after_id);
        let (from, to) = (cuts[chunk], cuts[chunk + 1]);
        let mut offset = 0;
        for piece in pieces {
            let (a, b) = (from.clamp(offset, offset + piece.len()), to.clamp(offset, offset + piece.len()));
            escape(out, &piece[a - offset..b - offset]);
            offset += piece.len();
        }
        out.extend_from_slice(b"\"}");
        let length = (out.len() - 4) as u32;
        out[..4].copy_from_slice(&length.to_ne_bytes());
        kept(&out[after_id..], inner_id);
        output.write_all(out).expect("write");
        out.clear();
    }
}

/// Where each chunk starts in `pieces` concatenated, and their total length last: each chunk's text,
/// escaped, fits in `budget` bytes, and no cut splits a UTF-8 character.
fn cut(pieces: &[&[u8]], budget: usize) -> Vec<usize> {
    let mut cuts = vec![0];
    let mut room = budget;
    let mut offset = 0;
    for piece in pieces {
        let mut at = 0;
        while at < piece.len() {
            // Whole words while even a word of control characters (6 bytes each) fits.
            while room >= 48 && at + 8 <= piece.len() {
                let word = u64::from_ne_bytes(piece[at..at + 8].try_into().expect("8 bytes"));
                if has_escapable(word) {
                    room -= piece[at..at + 8].iter().map(|&b| escaped_len(b)).sum::<usize>();
                } else {
                    room -= 8;
                }
                at += 8;
            }
            if at >= piece.len() {
                break;
            }
            let byte = piece[at];
            let starts_char = byte & 0xC0 != 0x80;
            if starts_char {
                let need = match byte {
                    0x00..=0x7F => escaped_len(byte),
                    0xC0..=0xDF => 2,
                    0xE0..=0xEF => 3,
                    _ => 4,
                };
                if need > room {
                    cuts.push(offset + at);
                    room = budget;
                }
            }
            room -= escaped_len(byte).min(room);
            at += 1;
        }
        offset += piece.len();
    }
    cuts.push(offset);
    cuts
}

/// Whether any byte of `word` is one JSON escapes inside a string: below 0x20, `"` or `\`.
fn has_escapable(word: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let below = |w: u64, n: u64| w.wrapping_sub(ONES * n) & !w & HIGH;
    let control = below(word, 0x20);
    let quote = below(word ^ (ONES * u64::from(b'"')), 1);
    let backslash = below(word ^ (ONES * u64::from(b'\\')), 1);
    control | quote | backslash != 0
}

/// The bytes one byte takes inside a JSON string (bytes of multi-byte characters go as they are).
fn escaped_len(byte: u8) -> usize {
    match byte {
        b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0C => 2,
        0x00..=0x1F => 6,
        _ => 1,
    }
}

/// Appends `text` escaped as the inside of a JSON string, copying runs that need no escape whole.
fn escape(out: &mut Vec<u8>, text: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut run = 0;
    let mut at = 0;
    while at < text.len() {
        if at + 8 <= text.len() {
            let word = u64::from_ne_bytes(text[at..at + 8].try_into().expect("8 bytes"));
            if !has_escapable(word) {
                at += 8;
                continue;
            }
        }
        let byte = text[at];
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
        out.extend_from_slice(&text[run..at]);
        out.extend_from_slice(escaped);
        at += 1;
        run = at;
    }
    out.extend_from_slice(&text[run..]);
}

/// A number's decimal digits, without allocating.
struct Digits {
    buffer: [u8; 20],
    start: usize,
}

impl Digits {
    fn text(&self) -> &[u8] {
        &self.buffer[self.start..]
    }
}

fn itoa(mut n: usize) -> Digits {
    let mut digits = Digits { buffer: [0; 20], start: 20 };
    loop {
        digits.start -= 1;
        digits.buffer[digits.start] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return digits;
        }
    }
}
