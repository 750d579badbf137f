//! The request loop: frames in, commands run, frames out; and the maintenance that runs beside it.
//!
//! [`serve`] takes any reader and writer, so tests drive it over in-memory pipes; `main` gives it
//! stdin and stdout ([`crate::pipe`]). Requests are handled in the order they arrive (replies come in
//! that order too, but clients match them by id). Store work runs on the runtime's own thread between
//! reads, synchronously: the host serves one browser port, so there is nothing to overlap it with, and
//! no LMDB transaction is ever held across an `.await`. Maintenance runs on tokio's blocking pool.

use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::value::RawValue;
use tokio::io::{AsyncRead, AsyncWrite, BufReader};
use tokio::sync::{mpsc, oneshot};

use crate::cleanup;
use crate::cmd::{Command, Context};
use crate::error::{CacheError, ErrorCode};
use crate::frame::{Incoming, Reply, read_frame, write_replies};
use crate::limits::{MAX_REQUEST_FRAME_BYTES, ORPHAN_SWEEP_EVERY_MS};
use crate::message::{Fields, reply_text};

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
    // Reply frames are written through this one buffer, kept from reply to reply.
    let mut out = Vec::new();
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
        let replies = match frame {
            Incoming::NotFramed(header) => {
                let start = String::from_utf8_lossy(&header);
                tracing::warn!(start = %start.escape_debug(), "input is JSON text without frame headers; stopping");
                eprintln!(
                    "llm-cache-host: the input starts with text ({start}), not a 4-byte frame length: a browser sends each \
                     message as a native-endian u32 length and then the JSON. To type requests by hand, use \
                     `llm-cache-host call`, which frames each line."
                );
                let reply: Result<(), _> = Err(not_framed());
                write_replies(writer, &[Reply::new(None, reply_text(None, &reply))], &mut out).await?;
                return Ok(());
            }
            Incoming::Oversized(length) => {
                tracing::warn!(length, code = ErrorCode::InvalidRequestError.as_str(), "oversized frame skipped");
                let reply: Result<(), _> = Err(oversized(length));
                vec![Reply::new(None, reply_text(None, &reply))]
            }
            Incoming::Message(bytes) => {
                // Whole frames that have already arrived behind this one are handled with it.
                let mut group = vec![bytes];
                while group.len() < MAX_GROUP && complete_frame_waiting(reader.buffer()) {
                    match read_frame(reader).await? {
                        Some(Incoming::Message(bytes)) => group.push(bytes),
                        _ => unreachable!("a complete frame within the limit was waiting"),
                    }
                }
                let handled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| handle_all(ctx, &group)));
                handled.unwrap_or_else(|_| {
                    tracing::error!("a request handler panicked");
                    let reply: Result<(), _> =
                        Err(CacheError::storage_unavailable("the host failed while handling the request"));
                    vec![Reply::new(None, reply_text(None, &reply)); group.len()]
                })
            }
        };
        write_replies(writer, &replies, &mut out).await?;
        // A burst of long replies leaves no more than a few frames' worth behind.
        out.shrink_to(2 * crate::limits::MAX_REPLY_FRAME_BYTES);
    }
}

/// Whether `buffer` starts with a whole frame within the request limit.
fn complete_frame_waiting(buffer: &[u8]) -> bool {
    let Some((header, body)) = buffer.split_first_chunk::<4>() else { return false };
    let length = u32::from_ne_bytes(*header);
    length <= MAX_REQUEST_FRAME_BYTES && body.len() >= length as usize
}

/// Handles one request frame and returns the frames of its reply.
pub fn handle(ctx: &Context, bytes: &[u8]) -> Vec<String> {
    handle_all(ctx, std::slice::from_ref(&bytes.to_vec())).pop().map(|reply| reply.frames()).unwrap_or_default()
}

/// A request frame parsed as far as it goes: its fields and id with its command (or why there is
/// none), or, when not even that, its reply already.
type Parsed<'a> = Result<(Fields<'a>, Option<&'a RawValue>, Result<Command, CacheError>), Reply>;

/// Handles request frames that arrived together, in order, and returns each one's reply frames. A
/// run of two or more requests that only write (`write`, `update`, `append`, `delete`) is a group
/// commit: one write transaction and one disk sync for all of them, each still succeeding or failing
/// on its own, and none answered before all are durable.
pub fn handle_all(ctx: &Context, frames: &[Vec<u8>]) -> Vec<Reply> {
    let started = Instant::now();
    let mut parsed: Vec<Parsed<'_>> = frames
        .iter()
        .map(|bytes| match Fields::parse(bytes) {
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
        })
        .collect();
    let only_writes = |entry: &Parsed<'_>| matches!(entry, Ok((_, _, Ok(command))) if command.only_writes());
    let mut outcomes: Vec<Option<Result<crate::cmd::Success, CacheError>>> = frames.iter().map(|_| None).collect();
    let mut at = 0;
    while at < parsed.len() {
        let end = (at..parsed.len()).find(|&i| !only_writes(&parsed[i])).unwrap_or(parsed.len());
        if end - at >= 2 {
            let commands: Vec<&Command> = parsed[at..end]
                .iter()
                .filter_map(|entry| entry.as_ref().ok().and_then(|(_, _, command)| command.as_ref().ok()))
                .collect();
            for (offset, outcome) in group_commit(ctx, &commands).into_iter().enumerate() {
                outcomes[at + offset] = Some(outcome);
            }
            at = end;
            continue;
        }
        if let Ok((fields, _, command)) = &mut parsed[at] {
            let command = std::mem::replace(command, Err(CacheError::storage_unavailable("already run")));
            outcomes[at] = Some(command.and_then(|command| run_command(ctx, fields, command)));
        }
        at += 1;
    }

    let micros = started.elapsed().as_micros() as u64;
    parsed
        .into_iter()
        .zip(outcomes)
        .zip(frames)
        .map(|((entry, outcome), bytes)| {
            let (fields, id, _) = match entry {
                Ok(entry) => entry,
                Err(reply) => return reply,
            };
            let mut outcome =
                outcome.unwrap_or_else(|| Err(CacheError::storage_unavailable("the request was not run")));
            let mut reply = reply_for(id, &mut outcome);
            if ctx.gzip_replies() && reply.len() > COMPRESS_ABOVE_BYTES {
                reply = Reply::new(id, gzipped(id, outcome.is_ok(), reply.into_text()));
            }
            // Ids, keys, sizes and codes only: descriptions and data are people's emails and documents.
            tracing::info!(
                op = %loggable(fields.op),
                session = %loggable(fields.session_id),
                key = %loggable(fields.storage_key),
                bytes_in = bytes.len(),
                bytes_out = reply.len(),
                micros,
                batch = frames.len(),
                code = outcome.as_ref().err().map(|e| e.code.as_str()),
                "request"
            );
            reply
        })
        .collect()
}

/// A read's data longer than this is kept out of its reply's text and spliced into the frames.
const SPLICE_ABOVE_BYTES: usize = 64 * 1024;

/// The reply to a request whose outcome is `outcome`. A read's long data is not copied into the text:
/// the text is made around a one-byte stand-in (twice, with two different ones, so the first byte where
/// the two differ is where the data goes), and the data is spliced in as the frames are written.
fn reply_for(id: Option<&RawValue>, outcome: &mut Result<crate::cmd::Success, CacheError>) -> Reply {
    let Ok(crate::cmd::Success::Read(result)) = outcome else { return Reply::new(id, reply_text(id, outcome)) };
    if result.data().get().len() <= SPLICE_ABOVE_BYTES {
        return Reply::new(id, reply_text(id, outcome));
    }
    let stand_in = |digit: &str| RawValue::from_string(digit.to_owned()).unwrap_or_else(|_| RawValue::NULL.to_owned());
    let data = result.replace_data(stand_in("0"));
    let zero = reply_text(id, outcome);
    if let Ok(crate::cmd::Success::Read(result)) = outcome {
        result.replace_data(stand_in("1"));
    }
    let one = reply_text(id, outcome);
    match zero.bytes().zip(one.bytes()).position(|(a, b)| a != b) {
        Some(at) => {
            let mut text = zero;
            text.remove(at);
            Reply::spliced(id, text, at, data)
        }
        // The texts differ where the stand-in is, so this is never reached; the data goes back whole.
        None => {
            if let Ok(crate::cmd::Success::Read(result)) = outcome {
                result.replace_data(data);
            }
            Reply::new(id, reply_text(id, outcome))
        }
    }
}

/// Replies longer than this are sent gzipped to a client that asked for it in `hello`.
const COMPRESS_ABOVE_BYTES: usize = 32 * 1024;

/// `reply` as `{"id", "ok", "encoding": "gzip", "payload": <base64 of the gzipped reply text>}`, when
/// that is shorter (text compresses about 3 to 1, base64 adds a third); otherwise `reply` as it is.
/// Chrome reads a host's output 4 KB at a time, about 20 ms per MB, so fewer bytes are faster replies.
fn gzipped(id: Option<&RawValue>, ok: bool, reply: String) -> String {
    use base64::Engine;
    use std::io::Write;
    #[derive(serde::Serialize)]
    struct Encoded<'a> {
        id: Option<&'a RawValue>,
        ok: bool,
        encoding: &'static str,
        payload: String,
    }
    let gzip = |text: &[u8]| {
        let mut encoder =
            flate2::write::GzEncoder::new(Vec::with_capacity(text.len() / 3), flate2::Compression::fast());
        encoder.write_all(text).and_then(|()| encoder.finish()).ok()
    };
    // A sample first: data gzip can't shrink by a third (random bytes, base64) is not worth compressing whole.
    const SAMPLE: usize = 64 * 1024;
    let sample = &reply.as_bytes()[..reply.len().min(SAMPLE)];
    if gzip(sample).is_none_or(|compressed| compressed.len() * 3 > sample.len() * 2) {
        return reply;
    }
    let Some(compressed) = gzip(reply.as_bytes()) else { return reply };
    let payload = base64::engine::general_purpose::STANDARD.encode(compressed);
    if payload.len() + 64 >= reply.len() {
        return reply;
    }
    serde_json::to_string(&Encoded { id, ok, encoding: "gzip", payload }).unwrap_or(reply)
}

/// Runs write-only commands as one group commit (see [`handle_all`]).
fn group_commit(ctx: &Context, commands: &[&Command]) -> Vec<Result<crate::cmd::Success, CacheError>> {
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
fn run_command(ctx: &Context, fields: &Fields<'_>, command: Command) -> Result<crate::cmd::Success, CacheError> {
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
        format!("a frame of {length} bytes is over the limit of {MAX_REQUEST_FRAME_BYTES}; it was skipped"),
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
    loop {
        let Ok(store) = ctx.store.clone() else { return };
        let now = ctx.clock.now_ms();
        let removed = tokio::task::spawn_blocking(move || cleanup::maintain(&store, now)).await;
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
