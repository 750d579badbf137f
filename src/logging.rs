//! Logs go to a daily file under `<data dir>/logs`, never to stdout (that carries frames).
//!
//! What is logged: ops, ids, keys, sizes, durations and error codes. What never is: cached data and
//! descriptions, which are people's emails and documents.

use std::path::Path;

use tracing_appender::non_blocking::WorkerGuard;
use tracing_appender::rolling::{RollingFileAppender, Rotation};
use tracing_subscriber::EnvFilter;

use crate::paths::{create_private_dir, log_dir};

/// The variable holding the log level or filter (`info` when unset).
pub const LOG_VAR: &str = "LLM_CACHE_LOG";

/// Log lines queued for the writer thread at most.
const LOG_QUEUE_LINES: usize = 1024;

/// How many daily files are kept; older ones are deleted.
pub const KEPT_LOG_FILES: usize = 7;

/// Starts logging to `<data dir>/logs/host.<date>.log`. Keep the guard alive until exit: dropping it
/// flushes what is buffered.
///
/// # Errors
/// A message saying why there will be no log; the host runs on without one.
pub fn init(data_dir: &Path) -> Result<WorkerGuard, String> {
    let dir = log_dir(data_dir);
    create_private_dir(&dir).map_err(|e| format!("can't create {}: {e}", dir.display()))?;
    let appender = RollingFileAppender::builder()
        .rotation(Rotation::DAILY)
        .filename_prefix("host")
        .filename_suffix("log")
        .max_log_files(KEPT_LOG_FILES)
        .build(&dir)
        .map_err(|e| format!("can't log to {}: {e}", dir.display()))?;
    // tracing-appender's default queue holds 128,000 lines, allocated at start: 40% of start-up CPU and
    // 4 MiB of idle memory for a process that logs one line per request. A burst beyond this many lines
    // drops lines rather than slow the requests down.
    let (writer, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        .buffered_lines_limit(LOG_QUEUE_LINES)
        .thread_name("llm-cache-log")
        .finish(appender);
    let filter = EnvFilter::try_from_env(LOG_VAR).unwrap_or_else(|_| EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_writer(writer)
        .with_ansi(false)
        .with_env_filter(filter)
        .try_init()
        .map_err(|e| format!("can't start logging: {e}"))?;
    Ok(guard)
}
