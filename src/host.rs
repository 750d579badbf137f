//! The request loop: frames in, commands run, frames out; and the maintenance that runs beside it.
//!
//! [`serve`] takes any reader and writer, so tests drive it over in-memory pipes; `main` gives it
//! stdin and stdout ([`crate::pipe`]). Requests are handled in the order they arrive (replies come in
//! that order too, but clients match them by id), and each reply is sent before the next one is made,
//! so the host holds one reply at a time however many are asked for at once. Store work runs on the runtime's own thread between
//! reads, synchronously: the host serves one browser port, so there is nothing to overlap it with, and
//! no LMDB transaction is ever held across an `.await`. Maintenance runs on tokio's blocking pool.

use std::collections::VecDeque;
use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::value::RawValue;
use tokio::io::{AsyncRead, AsyncWrite, BufReader};
use tokio::sync::{mpsc, oneshot};

use crate::cleanup;
use crate::cmd::{Command, Context, Success};
use crate::error::{CacheError, ErrorCode};
use crate::frame::{Incoming, Reply, ReplyWriter, read_frame, whole_request_waiting};
use crate::limits::{MAX_REQUEST_FRAME_BYTES, ORPHAN_SWEEP_EVERY_MS};
use crate::message::{Fields, reply_text, write_reply};

/// Serves requests until input ends, then waits for a maintenance run in progress and returns.
///
/// A clean end of input, or input that ends inside a frame, returns `Ok`.
///
/// # Errors
/// Errors reading or writing the streams; a closed stdout is `BrokenPipe`, which `main` treats as a
/// normal exit.
pub async fn serve<R, W>(mut reader: R, mut writer: W, ctx: Arc<Context>) -> io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let (stop, stopped) = oneshot::channel();
    let maintenance =
        tokio::spawn(maintain_every(ctx.clone(), Duration::from_millis(ORPHAN_SWEEP_EVERY_MS), stopped, None));
    let served = serve_requests(&mut reader, &mut writer, &ctx).await;
    let _ = stop.send(());
    let _ = maintenance.await;
    served
}

/// Read-ahead for stdin: requests that are already waiting in it are handled together (a group
/// commit for the writes among them).
const INPUT_BUFFER_BYTES: usize = 256 * 1024;

/// The most requests handled together.
const MAX_GROUP: usize = 256;

async fn serve_requests<R, W>(reader: &mut R, writer: &mut W, ctx: &Arc<Context>) -> io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let reader = &mut BufReader::with_capacity(INPUT_BUFFER_BYTES, reader);
    let mut out = ReplyWriter::new(writer);
    loop {
        let frame = match read_frame(reader).await {
            Ok(Some(frame)) => frame,
            Ok(None) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                tracing::warn!("input ended inside a frame; stopping");
                return Ok(());
            }
            Err(e) => return Err(e),
        };
        match frame {
            Incoming::NotFramed(header) => {
                let start = String::from_utf8_lossy(&header);
                tracing::warn!(start = %start.escape_debug(), "input is JSON text without frame headers; stopping");
                eprintln!(
                    "llm-cache-host: the input starts with text ({start}), not a 4-byte frame length: a browser sends each \
                     message as a native-endian u32 length and then the JSON. To type requests by hand, use \
                     `llm-cache-host call`, which frames each line."
                );
                let reply: Result<(), _> = Err(not_framed());
                out.send(&Reply::new(None, reply_text(None, &reply))).await?;
                return out.flush().await;
            }
            Incoming::Oversized { length, head } => {
                tracing::warn!(length, code = ErrorCode::InvalidRequestError.as_str(), "oversized frame skipped");
                // The id, when the request starts with it, takes the error back to its caller.
                let id = Fields::id_in_head(&head);
                let reply: Result<(), _> = Err(oversized(length));
                out.send(&Reply::new(id, reply_text(id, &reply))).await?;
            }
            Incoming::Message(bytes) => {
                // Whole frames that have already arrived behind this one are handled with it.
                let mut frames = vec![bytes];
                while frames.len() < MAX_GROUP && whole_request_waiting(reader.buffer()) {
                    match read_frame(reader).await? {
                        Some(Incoming::Message(bytes)) => frames.push(bytes),
                        _ => unreachable!("a complete frame within the limit was waiting"),
                    }
                }
                // Each reply is sent before the next one is made, so the group never holds two.
                let mut group = Group::parse(ctx, &frames);
                while let Some(reply) = group.next_reply() {
                    out.send(&reply).await?;
                    // The next read copies its item into this one's memory.
                    reply.recycle();
                }
                drop(group);
                frames.into_iter().for_each(crate::frame::give_back_frame);
            }
        }
        out.flush().await?;
    }
}

/// Handles one request frame and returns the frames of its reply.
pub fn handle(ctx: &Context, bytes: &[u8]) -> Vec<String> {
    let frames = [bytes.to_vec()];
    Group::parse(ctx, &frames).next_reply().map(|reply| reply.frames()).unwrap_or_default()
}

/// A command's outcome: what it returns, or the error it is answered with.
type Outcome = Result<Success, CacheError>;

/// A request frame parsed as far as it goes: its fields and id with its command (or why there is
/// none), or, when not even that, its reply already.
type Parsed<'f> = Result<(Fields<'f>, Option<&'f RawValue>, Result<Command<'f>, CacheError>), Reply>;

/// Request frames that arrived together, answered in order, one at a time: a request is run and its
/// reply made only when the reply before it has been sent, so that however many long replies a group
/// asks for, one is held at a time. A run of two or more requests that only write (`write`, `update`,
/// `append`, `delete`) is a group commit: one write transaction and one disk sync for all of them,
/// each still succeeding or failing on its own, and none answered before all are durable.
pub struct Group<'f> {
    /// What the commands run against.
    ctx: &'f Context,
    /// Each frame parsed as far as it goes; taken when its reply is made.
    parsed: Vec<Option<Parsed<'f>>>,
    /// Each frame's length, for the log.
    sizes: Vec<usize>,
    /// The outcomes of the group commit under way, for the requests after `next` that it ran.
    committed: VecDeque<Outcome>,
    /// How long that group commit took, in µs: each of its requests is logged with it.
    commit_micros: u64,
    /// The request to answer next.
    next: usize,
}

impl<'f> Group<'f> {
    /// Parses every frame (nothing is run yet).
    pub fn parse(ctx: &'f Context, frames: &'f [Vec<u8>]) -> Group<'f> {
        let parsed = frames.iter().map(|bytes| Some(parse_request(bytes))).collect();
        let sizes = frames.iter().map(Vec::len).collect();
        Group { ctx, parsed, sizes, committed: VecDeque::new(), commit_micros: 0, next: 0 }
    }

    /// Runs the next request (or, at the start of a run of writes, the run's group commit) and makes
    /// its reply; `None` once every request has its reply.
    pub fn next_reply(&mut self) -> Option<Reply> {
        let at = self.next;
        let entry = self.parsed.get_mut(at)?.take()?;
        self.next += 1;
        let (fields, id, command) = match entry {
            Ok(entry) => entry,
            Err(reply) => return Some(reply),
        };
        let started = Instant::now();
        if self.committed.is_empty() && command.as_ref().is_ok_and(Command::only_writes) {
            self.commit_run(at, &command);
        }
        let (outcome, micros) = match self.committed.pop_front() {
            Some(outcome) => (outcome, self.commit_micros),
            None => {
                let outcome = command.and_then(|command| run_command(self.ctx, &fields, command));
                (outcome, started.elapsed().as_micros() as u64)
            }
        };
        let code = outcome.as_ref().err().map(|e| e.code.as_str());
        let make = || reply_for(id, outcome, self.ctx.gzip_replies());
        let reply = std::panic::catch_unwind(std::panic::AssertUnwindSafe(make)).unwrap_or_else(|_| {
            tracing::error!(op = %loggable(fields.op), "making a reply panicked");
            let error = CacheError::storage_unavailable("the host failed while making the reply; its log has details");
            Reply::new(id, reply_text::<()>(id, &Err(error)))
        });
        // Ids, keys, sizes and codes only: descriptions and data are people's emails and documents.
        tracing::info!(
            op = %loggable(fields.op),
            session = %loggable(fields.session_id),
            key = %loggable(fields.storage_key),
            bytes_in = self.sizes[at],
            bytes_out = reply.len(),
            micros,
            batch = self.parsed.len(),
            code,
            "request"
        );
        Some(reply)
    }

    /// When the write-only `first` (request `at`) starts a run of two or more write-only requests,
    /// commits the whole run as one group and keeps the outcomes for their replies.
    fn commit_run(&mut self, at: usize, first: &Result<Command<'f>, CacheError>) {
        let rest: Vec<&Command<'f>> = self.parsed[at + 1..]
            .iter()
            .map_while(|entry| match entry {
                Some(Ok((_, _, Ok(command)))) if command.only_writes() => Some(command),
                _ => None,
            })
            .collect();
        let Ok(first) = first else { return };
        if rest.is_empty() {
            return;
        }
        let started = Instant::now();
        let commands: Vec<&Command<'f>> = std::iter::once(first).chain(rest).collect();
        self.committed = group_commit(self.ctx, &commands).into();
        self.commit_micros = started.elapsed().as_micros() as u64;
    }
}

/// Parses one request frame as far as it goes (see [`Parsed`]).
fn parse_request(bytes: &[u8]) -> Parsed<'_> {
    let parse = || match Fields::parse(bytes) {
        Err(error) => {
            tracing::warn!(bytes = bytes.len(), code = error.code.as_str(), "unparseable request");
            let id = Fields::recover_id(bytes);
            Err(Reply::new(id, reply_text::<()>(id, &Err(error))))
        }
        Ok(fields) => {
            let id = fields.usable_id();
            let command = if id.is_some() { Command::parse(&fields) } else { Err(fields.id_error()) };
            Ok((fields, id, command))
        }
    };
    std::panic::catch_unwind(parse).unwrap_or_else(|_| {
        tracing::error!(bytes = bytes.len(), "parsing a request panicked");
        let error = CacheError::storage_unavailable("the host failed while reading the request; its log has details");
        Err(Reply::new(None, reply_text::<()>(None, &Err(error))))
    })
}

/// A stored datum longer than this is kept out of its reply's text and spliced into the frames.
const SPLICE_ABOVE_BYTES: usize = 64 * 1024;

/// The reply to a request whose outcome is `outcome`, gzipped when `gzip` and that makes it shorter.
/// A long stored datum (a read's data) is not copied into the reply's text: it becomes a piece of
/// the reply of its own, between the text before it and the text after it.
fn reply_for(id: Option<&RawValue>, outcome: Outcome, gzip: bool) -> Reply {
    let ok = outcome.is_ok();
    let long = |data: &RawValue| data.get().len() > SPLICE_ABOVE_BYTES;
    let reply = match &outcome {
        Ok(success) if success.data().into_iter().any(long) => {
            let data: Vec<&str> = success.data().into_iter().filter(|d| long(d)).map(RawValue::get).collect();
            let mut text = TextAround { text: Vec::new(), data: &data, found: Vec::new() };
            let written = write_reply(&mut text, id, &outcome);
            let TextAround { text, found, .. } = text;
            match (written, String::from_utf8(text)) {
                (Ok(()), Ok(text)) => {
                    let mut data: Vec<Option<Box<RawValue>>> = outcome
                        .map(Success::into_data)
                        .unwrap_or_default()
                        .into_iter()
                        .filter(|d| long(d))
                        .map(Some)
                        .collect();
                    let splices = found.into_iter().filter_map(|(at, index)| Some((at, data[index].take()?))).collect();
                    Reply::spliced(id, text, splices)
                }
                _ => Reply::new(id, reply_text(id, &outcome)),
            }
        }
        _ => Reply::new(id, reply_text(id, &outcome)),
    };
    if gzip && reply.len() > COMPRESS_ABOVE_BYTES { gzipped(reply, ok) } else { reply }
}

/// A writer of a reply's JSON text that leaves out the long data it is told of, noting where each
/// goes. serde_json writes a raw value (stored data) with one write of the value's own bytes, so a
/// write of exactly those bytes, at that address, is a datum: its offset is noted and nothing is
/// copied. (Were a serializer to copy the bytes first, the datum would land in the text, and the
/// reply would be the same, only not spliced.)
struct TextAround<'d> {
    /// The text written so far, without the data.
    text: Vec<u8>,
    /// The long data, in the order the reply holds them.
    data: &'d [&'d str],
    /// Where each datum found belongs in `text`, with its index in `data`.
    found: Vec<(usize, usize)>,
}

impl io::Write for TextAround<'_> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        match self.data.iter().position(|datum| std::ptr::eq(datum.as_bytes(), bytes)) {
            Some(index) => self.found.push((self.text.len(), index)),
            None => self.text.extend_from_slice(bytes),
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Replies longer than this are sent gzipped to a client that asked for it in `hello`.
const COMPRESS_ABOVE_BYTES: usize = 32 * 1024;

/// `reply` as `{"id", "ok", "encoding": "gzip", "payload": <base64 of the gzipped reply text>}` when
/// that is shorter, otherwise `reply` as it is. Chrome reads a host's output 4 KB at a time, about
/// 20 ms per MB, so fewer bytes are faster replies.
fn gzipped(reply: Reply, ok: bool) -> Reply {
    use base64::Engine;
    let head = format!(r#"{{"id":{},"ok":{ok},"encoding":"gzip","payload":""#, reply.id.get());
    let tail = r#""}"#;
    // base64 makes 4 bytes of every 3: the most gzip may make for the envelope to be shorter.
    let Some(room) = reply.len().checked_sub(head.len() + tail.len() + 1) else { return reply };
    let Some(compressed) = gzip_within(&reply.pieces(), room / 4 * 3) else { return reply };
    let id = reply.id.clone();
    drop(reply);
    let mut text = String::with_capacity(head.len() + compressed.len().div_ceil(3) * 4 + tail.len());
    text.push_str(&head);
    base64::engine::general_purpose::STANDARD.encode_string(&compressed, &mut text);
    text.push_str(tail);
    Reply::new(Some(&id), text)
}

/// `pieces`, concatenated and gzipped, if that takes at most `most` bytes. The text is compressed once,
/// piece by piece, and the compressing stops as soon as its output passes `most`: text gzip can't
/// shrink (random bytes, base64) costs one pass, however it is laid out, and is never compressed twice.
fn gzip_within(pieces: &[&str], most: usize) -> Option<Vec<u8>> {
    use std::io::Write;
    /// A buffer that refuses to grow past `most` bytes.
    struct Within {
        out: Vec<u8>,
        most: usize,
    }
    impl Write for Within {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            if self.out.len() + bytes.len() > self.most {
                return Err(io::Error::other("gzip would not shorten the reply"));
            }
            self.out.extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    // Reserved whole, so it never moves; only the pages written are ever resident.
    let out = Within { out: Vec::with_capacity(most), most };
    let mut encoder = flate2::write::GzEncoder::new(out, flate2::Compression::fast());
    for piece in pieces {
        encoder.write_all(piece.as_bytes()).ok()?;
    }
    encoder.finish().ok().map(|within| within.out)
}

/// Runs write-only commands as one group commit (see [`Group`]).
fn group_commit(ctx: &Context, commands: &[&Command<'_>]) -> Vec<Outcome> {
    let run = || ctx.store()?.write_each(commands, |txn, dbs, command| command.run_in(txn, dbs, ctx));
    let failed = |error: CacheError| commands.iter().map(|_| Err(error.clone())).collect();
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)) {
        Ok(Ok(outcomes)) => outcomes,
        Ok(Err(error)) => failed(error),
        Err(_) => {
            tracing::error!(commands = commands.len(), "a group commit panicked");
            failed(CacheError::storage_unavailable("the host failed while handling the request; its log has details"))
        }
    }
}

/// Applies a request's command. A bug that panics in a command is answered like any other failure,
/// to the right id, and the host carries on with the next request.
fn run_command(ctx: &Context, fields: &Fields<'_>, command: Command<'_>) -> Outcome {
    let run = || command.apply(ctx);
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)).unwrap_or_else(|_| {
        tracing::error!(op = %loggable(fields.op), "a command panicked");
        Err(CacheError::storage_unavailable("the host failed while handling the request; its log has details"))
    })
}

/// An id field as it may be logged: a short string with its control characters escaped (so that no
/// client can forge a log line), anything else by its type only, since a client that put data in the
/// wrong field must not get it into the log.
fn loggable(raw: Option<&RawValue>) -> String {
    const MAX_LOGGED: usize = 100;
    match raw.map(|raw| serde_json::from_str::<String>(raw.get())) {
        None => String::new(),
        Some(Ok(text)) if text.len() <= MAX_LOGGED => text.escape_debug().to_string(),
        Some(Ok(text)) => format!("<a string of {} bytes>", text.len()),
        Some(Err(_)) => format!("<{}>", crate::error::json_type_name(raw.map_or("", RawValue::get))),
    }
}

fn not_framed() -> CacheError {
    CacheError::new(
        ErrorCode::InvalidRequestError,
        "the input is JSON text without frame headers, so it can't be read in step; the host stopped reading",
        "send each request as a native-endian u32 length followed by its JSON (`llm-cache-host call` does this for typed lines)",
    )
    .expected("a 4-byte frame length")
    .actual("JSON text")
}

fn oversized(length: u32) -> CacheError {
    CacheError::new(
        ErrorCode::InvalidRequestError,
        format!(
            "a frame of {length} bytes is over the limit of {MAX_REQUEST_FRAME_BYTES} for one request (room for an item's \
             5 MiB of data and 64 KiB of customMetadata); it was skipped"
        ),
        "split the data into items of at most 5 MB each and send them as separate requests",
    )
    .expected(format!("a frame of at most {MAX_REQUEST_FRAME_BYTES} bytes"))
    .actual(length)
}

/// Runs maintenance at once (finishing interrupted cleanups and removing orphans), then every
/// `period` until `stop` fires. A run in progress when `stop` fires is finished first. Each run's
/// count of removed sessions goes to `report`, if given.
pub async fn maintain_every(
    ctx: Arc<Context>,
    period: Duration,
    mut stop: oneshot::Receiver<()>,
    report: Option<mpsc::UnboundedSender<usize>>,
) {
    // Run first, then wait: an interval's first tick is not ready on its first poll, and a host whose
    // input ends at once must still finish interrupted cleanups and remove orphans.
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // The host sums the store's total again before its first request (main.rs); a later run does it
    // first, since a host of another version serving the same store may have moved sessions' totals
    // without the store's since.
    let mut first_run = true;
    loop {
        let Ok(store) = ctx.store.clone() else { return };
        let now = ctx.clock.now_ms();
        let sum_again = !std::mem::replace(&mut first_run, false);
        let removed = tokio::task::spawn_blocking(move || {
            if sum_again {
                store.sum_total_again_if_drifted()?;
            }
            cleanup::maintain(&store, now)
        })
        .await;
        let removed = match removed {
            Ok(Ok(removed)) => removed,
            Ok(Err(error)) => {
                tracing::error!(code = error.code.as_str(), message = %error.message, "maintenance failed");
                0
            }
            Err(error) => {
                tracing::error!(%error, "maintenance panicked");
                0
            }
        };
        if removed > 0 {
            tracing::info!(removed, "maintenance removed sessions");
        }
        if let Some(report) = &report {
            let _ = report.send(removed);
        }
        tokio::select! {
            biased;
            _ = &mut stop => return,
            _ = ticks.tick() => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_data_is_left_out_of_the_text_and_its_place_noted() {
        let data = RawValue::from_string(format!("\"{}\"", "d".repeat(100))).unwrap();
        let short = RawValue::from_string("[1,2]".to_owned()).unwrap();
        #[derive(serde::Serialize)]
        struct Value<'a> {
            before: u8,
            data: &'a RawValue,
            short: &'a RawValue,
            after: &'a str,
        }
        let value = Value { before: 1, data: &data, short: &short, after: "x" };
        let long = [data.get()];
        let mut text = TextAround { text: Vec::new(), data: &long, found: Vec::new() };
        serde_json::to_writer(&mut text, &value).unwrap();
        let written = String::from_utf8(text.text).unwrap();
        assert_eq!(written, r#"{"before":1,"data":,"short":[1,2],"after":"x"}"#);
        assert_eq!(text.found, vec![(written.find(":,").unwrap() + 1, 0)]);
    }

    #[test]
    fn gzip_stops_as_soon_as_it_passes_its_room() {
        let text = "all work and no play ".repeat(10_000);
        let whole = gzip_within(&[&text[..1000], &text[1000..]], text.len()).unwrap();
        assert!(whole.len() < text.len() / 20);
        assert_eq!(gzip_within(&[&text], whole.len()), Some(whole.clone()));
        assert_eq!(gzip_within(&[&text], whole.len() - 1), None);
    }
}
