//! Doctor's talk with the host: the host started as a browser starts it, over real pipes, and asked
//! to say `hello` and to write, read back and delete an item of doctor's own. It reads the host with
//! the one frame client ([`crate::frame::client`]), whose cap keeps a program that isn't the host
//! from making doctor allocate whatever it claims.

use std::ffi::OsString;
use std::io::Write;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::cmd::PROTOCOL_VERSION;
use crate::frame::client;
use crate::install::browsers::Platform;
use crate::paths;

/// How long the host may take to answer one request (it answers in milliseconds; a cold disk is slower).
const REPLY_TIMEOUT: Duration = Duration::from_secs(10);

/// A host started as a browser starts it, spoken to over its pipes one request at a time.
struct Conversation {
    /// The host process.
    child: Child,
    /// Its stdin; dropping it tells the host the browser is gone.
    stdin: Option<ChildStdin>,
    /// Each reply's text as the reader thread reads it, or the error that ended its reading.
    replies: mpsc::Receiver<std::io::Result<String>>,
}

impl Conversation {
    /// Starts `binary` with the browser's `args`.
    fn start(binary: &Path, args: &[OsString]) -> Result<Conversation, String> {
        let mut child = Command::new(binary)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|error| format!("can't start {}: {error}", binary.display()))?;
        let stdin = child.stdin.take();
        let mut stdout = child.stdout.take().expect("stdout is piped");
        let (sender, replies) = mpsc::channel();
        std::thread::spawn(move || {
            loop {
                // The host ends the conversation by closing stdout: a clean end is an error to a
                // question still waiting for its reply.
                let read = client::read_reply(&mut stdout)
                    .and_then(|reply| reply.ok_or_else(|| std::io::Error::from(std::io::ErrorKind::UnexpectedEof)));
                let failed = read.is_err();
                if sender.send(read).is_err() || failed {
                    return;
                }
            }
        });
        Ok(Conversation { child, stdin, replies })
    }

    /// Sends `request` and waits for its reply, parsed; `op` names it in errors.
    fn ask(&mut self, op: &str, request: &Value) -> Result<Value, String> {
        // A host that exits at once (refusing its arguments) closes the pipe: that shows in the reply.
        if let Some(stdin) = self.stdin.as_mut() {
            let _ = client::write_frame(stdin, request.to_string().as_bytes()).and_then(|()| stdin.flush());
        }
        let body = match self.replies.recv_timeout(REPLY_TIMEOUT) {
            Ok(Ok(body)) => body,
            Ok(Err(_)) => {
                let status = self.end();
                return Err(format!("the host ended ({status}) without answering {op}; see its log"));
            }
            Err(_) => {
                let _ = self.child.kill();
                self.end();
                return Err(format!("the host didn't answer {op} within {} s", REPLY_TIMEOUT.as_secs()));
            }
        };
        serde_json::from_str(&body).map_err(|error| format!("the host's reply to {op} is not JSON: {error}"))
    }

    /// Closes the host's stdin, as a browser closing the port does, and waits for it to exit.
    fn end(&mut self) -> String {
        drop(self.stdin.take());
        self.child.wait().map(|status| status.to_string()).unwrap_or_else(|error| error.to_string())
    }
}

impl Drop for Conversation {
    fn drop(&mut self) {
        if self.stdin.is_some() {
            self.end();
        }
    }
}

/// Starts the host as a browser would, sends a `hello` frame and checks the reply's protocol; returns
/// the host's version.
pub fn probe_hello(binary: &Path, args: &[OsString]) -> Result<String, String> {
    let mut host = Conversation::start(binary, args)?;
    let reply = host.ask("hello", &json!({"id": "doctor", "op": "hello"}))?;
    let result = &reply["result"];
    if reply["ok"] != true || result["protocolVersion"] != PROTOCOL_VERSION {
        return Err(format!("the host's reply to hello is not protocol {PROTOCOL_VERSION}: {reply}"));
    }
    Ok(result["hostVersion"].as_str().unwrap_or("?").to_owned())
}

/// What [`prove_store`] found of a store that works.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreProof {
    /// What the host did, and where.
    pub text: String,
    /// The host's message when it refused doctor's write as past the store-wide quota: the store
    /// works, but extensions can't keep anything in it until the quota is raised or sessions end.
    pub refused: Option<String>,
}

/// Proves the store through the host, started as a browser starts it: it writes an item in a
/// session of doctor's own (a random id no extension uses), reads it back, deletes it, and ends the
/// session, whatever happened before.
pub fn prove_store(binary: &Path, args: &[OsString], platform: &Platform) -> Result<StoreProof, String> {
    let store = platform.data_dir().map(|dir| paths::store_dir(&dir).display().to_string());
    let store = store.unwrap_or_else(|| "the store".to_owned());
    let session = scratch_session_id();
    let mut host = Conversation::start(binary, args)?;
    let outcome = write_read_delete(&mut host, &session);
    let ended = host.ask("endSession", &json!({"id": 4, "op": "endSession", "sessionId": session}));
    let steps = outcome.map_err(|why| {
        format!(
            "{why}, so extensions can't keep anything in {store}: make sure it is a folder you own and can write \
             (`ls -ld` it and its parents), and that the disk isn't full; `{} verify` checks the store itself",
            platform.program()
        )
    })?;
    replied_ok("endSession", ended?)?;
    let (steps, refused) = steps;
    Ok(StoreProof { text: format!("the host {steps} ({store}; doctor's own session {session}, ended)"), refused })
}

/// The write, read and delete of [`prove_store`]; says what was done, and the host's message when it
/// refused the write as past the store-wide quota.
fn write_read_delete(host: &mut Conversation, session: &str) -> Result<(&'static str, Option<String>), String> {
    let data = json!({"doctor": session});
    let request = json!({"id": 1, "op": "write", "sessionId": session, "data": data, "description": "doctor's check of the store"});
    let written = host.ask("write", &request)?;
    if written["error"]["code"] == "QuotaExceededError" {
        // The store opened and counted what it holds: it works, and refuses writes, which the store
        // line warns about with what to do.
        let message = written["error"]["message"].as_str().unwrap_or("no message").to_owned();
        return Ok(("opened the store but refused doctor's write as past the store-wide quota", Some(message)));
    }
    let written = replied_ok("write", written)?;
    let key = written["storageKey"].as_str().ok_or("the host's reply to write has no storageKey")?;
    let request = json!({"id": 2, "op": "read", "sessionId": session, "storageKey": key});
    let read = replied_ok("read", host.ask("read", &request)?)?;
    if read["item"]["data"] != data {
        return Err("the host read back other data than it wrote".into());
    }
    let request = json!({"id": 3, "op": "delete", "sessionId": session, "storageKey": key});
    replied_ok("delete", host.ask("delete", &request)?)?;
    Ok(("wrote, read back and deleted an item", None))
}

/// The reply's `result` when it is `ok`, else what its error says.
fn replied_ok(op: &str, mut reply: Value) -> Result<Value, String> {
    if reply["ok"] == true {
        return Ok(reply["result"].take());
    }
    let error = &reply["error"];
    let code = error["code"].as_str().unwrap_or("no error code");
    let message = error["message"].as_str().unwrap_or("no message");
    Err(format!("the host refused {op}: {code}: {message}"))
}

/// A session id of doctor's own: `conv_doctor-` and 16 random hex digits, which no extension's
/// session shares by chance.
fn scratch_session_id() -> String {
    use rand::TryRng;
    let mut bytes = [0u8; 8];
    if rand::rngs::SysRng.try_fill_bytes(&mut bytes).is_err() {
        // No system randomness: the time and the process id still keep runs apart.
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        bytes = ((nanos as u64) ^ u64::from(std::process::id()) << 32).to_be_bytes();
    }
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("conv_doctor-{hex}")
}
