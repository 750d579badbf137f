//! llm-cache-host: the native messaging host that keeps an LLM agent's cache in LMDB.
//!
//! A browser extension's StorageTool parks large intermediate results here and keeps only their short
//! descriptions in the model's context. Chrome starts this binary when the extension calls
//! `chrome.runtime.connectNative`; the two speak protocol v1 (PROTOCOL.md) over stdin and stdout.
//!
//! # Layout
//! - [`frame`]: the wire codec, the one place a frame header is read or written: length-prefixed
//!   frames in, chunked replies out; [`frame::client`] is the other end (frames out, replies joined
//!   back), for `call`, doctor's probe and the tests.
//! - [`message`]: the request fields as they arrive and the reply envelope.
//! - [`cmd`]: one file per operation (`hello`, `write`, `read`, `list`, `update`, `delete`,
//!   `endSession`, `stats`, `append`, `search`, `sessions`, `endorse`); each parses its fields and
//!   returns a value.
//! - [`json`]: JSON on bytes: value boundaries, slices, shapes and search, as pure functions.
//! - [`store`]: the LMDB environment, its databases and transactions; [`store_file`] checks its
//!   data file before it is mapped; [`store_pages`] gives the map's pages back after each transaction.
//! - [`cleanup`]: session-end, orphan and crash-recovery cleanup.
//! - [`inspect`]: the cache seen and cleared without a browser (the store opened as a host opens it, a
//!   request answered in-process), for the commands `sessions`, `list`, `show`, `end` and `purge`.
//! - [`terminal`]: client text made safe to print: control characters escaped, long output cut.
//! - [`verify`]: the store's invariants checked and put right.
//! - [`host`]: the request loop over any reader and writer, and the hourly maintenance; [`pipe`]:
//!   stdin and stdout polled by tokio's reactor with no thread between.
//! - [`rules`]: the spec's rules for keys, ids, descriptions and data, as pure functions.
//! - [`provenance`]: where an item's text came from: read from a request, checked, merged.
//! - [`error`]: the error type with the spec's wire codes.
//! - [`limits`]: every limit, defined once; [`config`]: the settings file (the store quota chosen at
//!   install).
//! - [`launch`]: what the arguments ask for: host mode (a browser's launch line) or a person's command.
//! - [`cli`]: the commands a person types, one file each (`install`, `doctor`, `list`, `call`, ...),
//!   with their flags and help from one clap definition. `cli/welcome.rs` answers no arguments at all:
//!   it lives there, not in `install/`, because it is a command too, ending in `install` run through
//!   the same parser.
//! - [`install`]: registering the host with browsers on Linux, macOS and Windows: the one table of
//!   where each browser reads manifests (`install/browsers.rs`), the manifests, a package's manifests,
//!   the install record, policies, and the `install` and `uninstall` that write and remove them.
//! - [`doctor`]: every step a browser takes to start the host, checked: checks that return findings,
//!   a pure report that renders them, and the probe that talks to the host over real pipes.
//! - [`paths`], [`logging`], [`clock`]: where files live, logs, time; [`host_name`]: which host this
//!   binary is (its name, command and data folder).
//!
//! `main.rs` only wires these to stdin and stdout.

pub mod cleanup;
pub mod cli;
pub mod clock;
pub mod cmd;
pub mod config;
pub mod doctor;
pub mod error;
pub mod frame;
pub mod host;
pub mod host_name;
pub mod inspect;
pub mod install;
pub mod json;
pub mod launch;
pub mod limits;
pub mod logging;
pub mod message;
pub mod paths;
#[cfg(unix)]
pub mod pipe;
pub mod provenance;
pub mod rules;
pub mod store;
pub mod store_file;
pub mod store_pages;
pub mod terminal;
pub mod verify;
