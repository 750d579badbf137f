//! The floor the host is measured against: a minimal native-messaging host doing the same LMDB work
//! and nothing else. One durable write transaction per `write`, a `read` answered from the stored
//! bytes (a `pointer` the plain way: the item parsed whole, then picked), chunk frames cut as the
//! protocol cuts them; no checks, no metadata, no logs, no async runtime.
//! `hello` (and any other op) is a bare acknowledgement: the pipe round trip alone.
//!
//! The bench starts itself with `LLM_CACHE_BENCH_ROLE=minimal` to run this.

use std::io::{BufReader, BufWriter, Read, Write};

use heed::types::{Bytes, Str};
use serde::Deserialize;
use serde_json::value::RawValue;

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

/// Serves stdin until it ends, with the store in `$LLM_CACHE_DIR`.
pub fn serve() {
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

    let mut input = BufReader::with_capacity(256 * 1024, std::io::stdin().lock());
    let mut output = BufWriter::with_capacity(1 << 20, std::io::stdout().lock());
    let mut header = [0u8; 4];
    let mut body = Vec::new();
    while input.read_exact(&mut header).is_ok() {
        body.resize(u32::from_ne_bytes(header) as usize, 0);
        input.read_exact(&mut body).expect("a whole frame");
        let request: Request<'_> = serde_json::from_slice(&body).expect("a request");
        let id = request.id.get();
        let reply = match request.op {
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
                format!(r#"{{"id":{id},"ok":true,"result":{{"storageKey":"{key}","dataSize":{}}}}}"#, data.len())
            }
            "read" => {
                let rtxn = env.read_txn().expect("txn");
                let data = items.get(&rtxn, request.storage_key.unwrap_or_default()).expect("get").expect("stored");
                let whole = std::str::from_utf8(data).expect("UTF-8");
                // A pointer the plain way: parse the whole item, then pick.
                let picked;
                let data = match request.pointer {
                    Some(pointer) => {
                        let value: serde_json::Value = serde_json::from_str(whole).expect("stored JSON");
                        picked = value.pointer(pointer).expect("the pointer names a value").to_string();
                        picked.as_str()
                    }
                    None => whole,
                };
                let mut reply = String::with_capacity(data.len() + 64);
                reply.push_str(r#"{"id":"#);
                reply.push_str(id);
                reply.push_str(r#","ok":true,"result":{"item":{"dataSize":"#);
                reply.push_str(&data.len().to_string());
                reply.push_str(r#","data":"#);
                reply.push_str(data);
                reply.push_str("}}}");
                reply
            }
            _ => format!(r#"{{"id":{id},"ok":true}}"#),
        };
        for frame in llm_cache_host::frame::frames_for_reply(request.id, reply) {
            output.write_all(&(frame.len() as u32).to_ne_bytes()).expect("write");
            output.write_all(frame.as_bytes()).expect("write");
        }
        output.flush().expect("flush");
    }
}
