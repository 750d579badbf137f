//! The request loop: frames in, commands run, frames out; and the maintenance that runs beside it.
//!
//! [`serve`] takes any reader and writer, so tests drive it over in-memory pipes; `main` gives it
//! stdin and stdout. Requests are handled one at a time in the order they arrive (replies come in that
//! order too, but clients match them by id). Store work runs on tokio's blocking pool, so no LMDB
//! transaction is ever held across an `.await`.

use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::value::RawValue;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, oneshot};

use crate::cleanup;
use crate::cmd::{Command, Context};
use crate::error::{CacheError, ErrorCode};
use crate::frame::{Incoming, frames_for_reply, read_frame, write_frames};
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

async fn serve_requests<R, W>(reader: &mut R, writer: &mut W, ctx: &Arc<Context>) -> io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
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
        let frames = match frame {
            Incoming::NotFramed(header) => {
                let start = String::from_utf8_lossy(&header);
                tracing::warn!(start = %start.escape_debug(), "input is JSON text without frame headers; stopping");
                eprintln!(
                    "llm-cache-host: the input starts with text ({start}), not a 4-byte frame length: a browser sends each \
                     message as a native-endian u32 length and then the JSON. To type requests by hand, use \
                     `llm-cache-host call`, which frames each line."
                );
                let reply: Result<(), _> = Err(not_framed());
                write_frames(writer, &[reply_text(None, &reply)]).await?;
                return Ok(());
            }
            Incoming::Oversized(length) => {
                tracing::warn!(length, code = ErrorCode::InvalidRequestError.as_str(), "oversized frame skipped");
                let reply: Result<(), _> = Err(oversized(length));
                vec![reply_text(None, &reply)]
            }
            Incoming::Message(bytes) => {
                let ctx = ctx.clone();
                tokio::task::spawn_blocking(move || handle(&ctx, &bytes)).await.unwrap_or_else(|e| {
                    tracing::error!(error = %e, "a request handler panicked");
                    let reply: Result<(), _> =
                        Err(CacheError::storage_unavailable("the host failed while handling the request"));
                    vec![reply_text(None, &reply)]
                })
            }
        };
        write_frames(writer, &frames).await?;
    }
}

/// Handles one request frame and returns the frames of its reply.
pub fn handle(ctx: &Context, bytes: &[u8]) -> Vec<String> {
    let started = Instant::now();
    let null = RawValue::NULL;
    let fields = match Fields::parse(bytes) {
        Ok(fields) => fields,
        Err(error) => {
            tracing::warn!(bytes = bytes.len(), code = error.code.as_str(), "unparseable request");
            let id = Fields::recover_id(bytes);
            return frames_for_reply(id.unwrap_or(null), reply_text::<()>(id, &Err(error)));
        }
    };
    let id = fields.usable_id();
    let outcome = match id {
        None => Err(fields.id_error()),
        Some(_) => run_command(ctx, &fields),
    };
    let reply = reply_text(id, &outcome);
    // Ids, keys, sizes and codes only: descriptions and data are people's emails and documents.
    tracing::info!(
        op = %loggable(fields.op),
        session = %loggable(fields.session_id),
        key = %loggable(fields.storage_key),
        bytes_in = bytes.len(),
        bytes_out = reply.len(),
        micros = started.elapsed().as_micros() as u64,
        code = outcome.as_ref().err().map(|e| e.code.as_str()),
        "request"
    );
    frames_for_reply(id.unwrap_or(null), reply)
}

/// Parses and applies a request's command. A bug that panics in a command is answered like any
/// other failure, to the right id, and the host carries on with the next request.
fn run_command(ctx: &Context, fields: &Fields<'_>) -> Result<crate::cmd::Success, CacheError> {
    let run = || Command::parse(fields).and_then(|command| command.apply(ctx));
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
