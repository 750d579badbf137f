//! The binary: reads the command line, then serves the protocol on stdin and stdout, or runs a
//! command for a person ([`llm_cache_host::cli`]).
//!
//! In host mode nothing but frames is written to stdout; messages for people go to the log file, or
//! to stderr (which browsers keep in their own logs) before the log exists. A person's commands are
//! not host mode, and print their reports to stdout. With no arguments the binary explains itself
//! and, at a terminal, offers to install itself; with no terminal it says so on stderr only.

use std::process::ExitCode;
use std::sync::Arc;

use llm_cache_host::cli::{self, USAGE_ERROR};
use llm_cache_host::clock::SystemClock;
use llm_cache_host::cmd::Context;
use llm_cache_host::host_name::{self, HostName};
use llm_cache_host::launch::{self, Launch};
use llm_cache_host::limits::DEFAULT_STORE_QUOTA_BYTES;
use llm_cache_host::store::Store;
use llm_cache_host::{config, error::CacheError, host, logging, paths};

/// The host name baked in at build time (`scripts/release.sh --host-name` sets it), if any; an empty
/// value counts as none. It is read here, in the binary's own small crate, so that a build for another
/// name recompiles this file alone and not the library.
const BUILT_HOST_NAME: Option<&str> = match option_env!("LLM_CACHE_HOST_NAME") {
    Some(name) if !name.is_empty() => Some(name),
    _ => None,
};

// A name the binary could never register is a build error, not a surprise at install.
const _: () = if let Some(name) = BUILT_HOST_NAME {
    assert!(host_name::is_host_name(name), "LLM_CACHE_HOST_NAME is not a host name: see HOST_NAME_RULE");
};

fn main() -> ExitCode {
    if let Some(name) = BUILT_HOST_NAME {
        HostName::set_built_in(name);
    }
    // A lossy conversion would turn different ids into one origin; refuse what isn't UTF-8.
    let args: Result<Vec<String>, _> = std::env::args_os().skip(1).map(|a| a.into_string()).collect();
    // Every help and message names this binary's own command, a vendor's as much as the default's.
    let host = HostName::current();
    let Ok(args) = args else {
        let help = cli::help(&host);
        eprintln!("{}: an argument is not valid UTF-8, so it can't name an extension\n\n{help}", host.command());
        return ExitCode::from(USAGE_ERROR);
    };
    match launch::parse(&args) {
        Launch::Host { origin } => run_host(origin),
        Launch::Introduce => cli::welcome::introduce(),
        Launch::Command(args) => cli::run(&host, &args),
        Launch::Help => {
            print!("{}", cli::help(&host));
            ExitCode::SUCCESS
        }
        Launch::Version => {
            println!("llm-cache-host {}", env!("CARGO_PKG_VERSION"));
            ExitCode::SUCCESS
        }
        Launch::Invalid(why) => {
            eprintln!("{}: {why}\n\n{}", host.command(), cli::help(&host));
            ExitCode::from(USAGE_ERROR)
        }
    }
}

/// Host mode: stdout carries frames and nothing else from here on.
fn run_host(origin: String) -> ExitCode {
    restrict_new_files();
    one_heap_arena();
    let data_dir = paths::data_dir();
    let _log_guard = match &data_dir {
        Ok(dir) => logging::init(dir).map_err(|why| eprintln!("llm-cache-host: no log: {why}")).ok(),
        Err(why) => {
            eprintln!("llm-cache-host: no store and no log: {why}");
            None
        }
    };
    let store = data_dir
        .as_ref()
        .map_err(CacheError::storage_unavailable)
        .and_then(|dir| Store::open(&paths::store_dir(dir)))
        .map(Arc::new);
    match &store {
        Ok(store) => {
            tracing::info!(origin = %origin.escape_debug(), version = env!("CARGO_PKG_VERSION"), "host started");
            // Before the first request, so that no write is judged against a total an older host
            // left wrong.
            if let Err(error) = store.sum_total_again_if_drifted() {
                tracing::warn!(code = error.code.as_str(), message = %error.message, "the store's running total could not be checked");
            }
        }
        Err(error) => {
            tracing::error!(origin = %origin.escape_debug(), message = %error.message, "host started without a store")
        }
    }
    let store_quota = data_dir.as_ref().map_or(DEFAULT_STORE_QUOTA_BYTES, |dir| config::store_quota_for_host(dir));
    let ctx = Arc::new(Context::new(store, origin, Arc::new(SystemClock)).with_store_quota(store_quota));

    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            tracing::error!(%error, "can't start the async runtime");
            return ExitCode::FAILURE;
        }
    };
    let served = runtime.block_on(async {
        #[cfg(unix)]
        if let Some((stdin, stdout)) = llm_cache_host::pipe::stdio() {
            return host::serve(stdin, stdout, ctx).await;
        }
        host::serve(tokio::io::stdin(), tokio::io::stdout(), ctx).await
    });
    // Where tokio's stdin is used, its reader thread may still be blocked in a read (after a broken
    // pipe); don't wait for it.
    runtime.shutdown_background();
    match served {
        Ok(()) => {
            tracing::info!("input ended; exiting");
            ExitCode::SUCCESS
        }
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => {
            tracing::info!("the browser closed the port; exiting");
            ExitCode::SUCCESS
        }
        Err(error) => {
            tracing::error!(%error, "stdin or stdout failed; exiting");
            ExitCode::FAILURE
        }
    }
}

/// Files the host creates (logs, the store) are the owner's alone, whatever umask the browser had: they
/// name sessions and keys, and hold people's emails and documents.
fn restrict_new_files() {
    #[cfg(unix)]
    // SAFETY: umask only sets this process's file mode mask; it can't fail.
    unsafe {
        libc::umask(0o077);
    }
}

/// One malloc arena for the whole process, and big blocks given back when freed. Store work runs on tokio's blocking threads, and glibc gives
/// each thread its own arena, which keeps the memory of a burst of 5 MB replies long after them (60 MiB
/// after 20 reads). The host handles one request at a time, so it never needs more than one.
fn one_heap_arena() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only tunes glibc's allocator; called before any other thread exists.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
        // Fixed thresholds: blocks of 4 MiB or more (a 5 MB item's request, its reply) are mapped and
        // handed back to the OS when freed, and at most 4 MiB of freed heap is kept for the next
        // request. glibc otherwise raises both to the largest block freed so far, and a burst of 5 MB
        // reads then stays in the heap (15.7 MiB after 100 reads).
        libc::mallopt(libc::M_MMAP_THRESHOLD, 4 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 4 << 20);
    }
}
