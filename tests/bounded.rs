//! Bounded work whatever the input's shape, through the real binary: items nested a million levels
//! deep are written, read (whole, at a pointer, as slices), searched, appended to and verified; deep
//! nests that once crashed or stalled `search` are answered; a `list` query finds a word deep in
//! customMetadata. Every reply is checked, and the host must stay in step (a later request answers).
//!
//! Replies this deep are more than serde_json's `Value` can hold (its recursion limit is 128), so they
//! are read as text ([`Session::call_text`]) and taken apart with [`member`].

mod common;

use std::process::Command;

use common::{ORIGIN, Session, binary, member};
use serde_json::{Value, json};

/// How deep the deepest items nest.
const DEPTH: usize = 1_000_000;

/// `depth` arrays, one inside the other, around `bottom`.
fn arrays(depth: usize, bottom: &str) -> String {
    format!("{}{bottom}{}", "[".repeat(depth), "]".repeat(depth))
}

/// `depth` objects, each the member `name` of the one outside it, around `bottom`.
fn objects(depth: usize, name: &str, bottom: &str) -> String {
    format!("{}{bottom}{}", format!("{{\"{name}\":").repeat(depth), "}".repeat(depth))
}

/// A host over a fresh data folder, and the folder (removed when this is dropped).
struct Host {
    session: Session,
    dir: tempfile::TempDir,
}

impl Host {
    fn start() -> Host {
        let dir = tempfile::tempdir().unwrap();
        Host { session: Session::start(dir.path(), ORIGIN), dir }
    }

    /// Sends `op` with these fields (`extra`: JSON text of further members, which may nest deep) and
    /// returns the reply's `result` as text, failing the test on an error reply.
    fn ok(&mut self, fields: Value, extra: &str) -> String {
        let reply = self.call(fields, extra);
        assert_eq!(member(&reply, "ok"), Some("true"), "{}", shorten(&reply));
        member(&reply, "result").unwrap().to_owned()
    }

    /// Sends a request made of `fields` and the members `extra` (JSON text); returns the reply as text.
    fn call(&mut self, fields: Value, extra: &str) -> String {
        let mut request = fields.to_string();
        if !extra.is_empty() {
            request.pop();
            request.push_str(&format!(",{extra}}}"));
        }
        self.session.call_text(&request)
    }

    /// Writes `data` (JSON text) as an item of `session_id` and returns its storage key.
    fn write(&mut self, session_id: &str, data: &str) -> String {
        let result = self.ok(
            json!({"id": "w", "op": "write", "sessionId": session_id, "description": "d"}),
            &format!("\"data\":{data}"),
        );
        let meta: Value = serde_json::from_str(&result).unwrap();
        assert_eq!(meta["dataSize"], data.len(), "dataSize is the compact text's length");
        meta["storageKey"].as_str().unwrap().to_owned()
    }

    /// `read` with these extra fields; returns the result's `item.data` as text, and `slice` if any.
    fn read(&mut self, key: &str, fields: Value, extra: &str) -> (String, Option<Value>) {
        let mut request = json!({"id": "r", "op": "read", "sessionId": session_of(key), "storageKey": key});
        request.as_object_mut().unwrap().extend(fields.as_object().unwrap().clone());
        let result = self.ok(request, extra);
        let data = member(member(&result, "item").unwrap(), "data").unwrap().to_owned();
        (data, member(&result, "slice").map(|slice| serde_json::from_str(slice).unwrap()))
    }

    /// `search`'s result.
    fn search(&mut self, session_id: &str, query: &str, limit: u64, cursor: Option<&str>) -> Value {
        let mut request = json!({"id": "s", "op": "search", "sessionId": session_id, "query": query, "limit": limit});
        if let Some(cursor) = cursor {
            request["cursor"] = cursor.into();
        }
        serde_json::from_str(&self.ok(request, "")).unwrap()
    }

    /// Checks that the host is still in step: a `stats` of `session_id` answers with `items` items.
    fn in_step(&mut self, session_id: &str, items: u64) {
        let stats: Value =
            serde_json::from_str(&self.ok(json!({"id": "in step", "op": "stats", "sessionId": session_id}), ""))
                .unwrap();
        assert_eq!(stats["itemCount"], items, "{stats}");
    }

    /// What `llm-cache-host show <session> <key> <args>` prints (through a pipe, so all of it).
    fn show(&self, key: &str, args: &[&str]) -> String {
        let output = Command::new(binary())
            .args(["show", session_of(key), key])
            .args(args)
            .env("LLM_CACHE_DIR", self.dir.path())
            .output()
            .unwrap();
        assert!(output.status.success(), "show: {}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8(output.stdout).unwrap()
    }

    /// Ends the host (it must exit 0 having written nothing more) and runs `verify` on its data.
    fn close_and_verify(self) {
        let (rest, status) = self.session.close();
        assert!(rest.is_empty() && status.success(), "{status}, {} bytes after the last reply", rest.len());
        let output = Command::new(binary()).arg("verify").env("LLM_CACHE_DIR", self.dir.path()).output().unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "verify: {stdout}");
        assert!(stdout.contains("ok"), "{stdout}");
    }
}

/// The session part of a storage key.
fn session_of(key: &str) -> &str {
    &key[..key.len() - 18]
}

/// A reply for a failure message, cut so that a 5 MB one stays readable.
fn shorten(text: &str) -> String {
    let end = (0..=text.len().min(500)).rev().find(|&at| text.is_char_boundary(at)).unwrap_or(0);
    format!("{}… ({} bytes)", &text[..end], text.len())
}

/// The pointer a search gives for a match whose full pointer is `tokens` (each with its slash): its
/// longest prefix of whole tokens within the budget, as `hello` states it.
fn cut_pointer<'t>(tokens: impl Iterator<Item = &'t str>, budget: usize) -> String {
    let mut pointer = String::new();
    for token in tokens {
        if pointer.len() + token.len() > budget {
            break;
        }
        pointer.push_str(token);
    }
    pointer
}

/// The pointer budget the host reports in `hello`.
fn pointer_budget(host: &mut Host) -> usize {
    let hello: Value = serde_json::from_str(&host.ok(json!({"id": "h", "op": "hello"}), "")).unwrap();
    hello["limits"]["maxSearchPointerBytes"].as_u64().unwrap() as usize
}

#[test]
fn arrays_a_million_deep_are_read_sliced_searched_and_appended_to() {
    let mut host = Host::start();
    let budget = pointer_budget(&mut host);
    let data = arrays(DEPTH, "\"an invoice\"");
    let key = host.write("conv_deep", &data);
    let to_bottom = "/0".repeat(DEPTH - 1);

    // Read whole, at a pointer, and as slices.
    assert!(host.read(&key, json!({}), "").0 == data, "the item reads back exactly");
    assert_eq!(host.read(&key, json!({"pointer": to_bottom}), "").0, "[\"an invoice\"]");
    assert_eq!(host.read(&key, json!({"pointer": format!("{to_bottom}/0")}), "").0, "\"an invoice\"");
    let (whole, slice) = host.read(&key, json!({"offset": 0, "limit": 1}), "");
    assert!(whole == data);
    assert_eq!(slice.unwrap(), json!({"offset": 0, "count": 1, "total": 1, "nextOffset": null}));
    let (empty, slice) = host.read(&key, json!({"maxBytes": 1000}), "");
    assert_eq!(empty, "[]", "the one element doesn't fit in 1000 bytes");
    assert_eq!(slice.unwrap()["nextOffset"], 0);
    let (part, _) = host.read(&key, json!({"pointer": format!("{to_bottom}/0"), "offset": 3, "limit": 3}), "");
    assert_eq!(part, "\"inv\"");

    // Search: the match at the bottom, its pointer cut to the budget.
    let found = host.search("conv_deep", "INVOICE", 20, None);
    let pointer = cut_pointer(std::iter::repeat_n("/0", DEPTH), budget);
    let only = json!({"storageKey": key, "pointer": pointer, "pointerCut": true, "snippet": "an invoice",
        "provenance": {"origin": "unknown"}});
    assert_eq!(found, json!({"matches": [only], "nextCursor": null}));

    // Append at the bottom and at the top, then read both back.
    let append = json!({"id": "a", "op": "append", "sessionId": "conv_deep", "storageKey": key});
    host.ok(append.clone(), &format!("\"pointer\":\"{to_bottom}\",\"data\":[\"more\"]"));
    host.ok(append, "\"data\":[\"top\"]");
    assert_eq!(host.read(&key, json!({"pointer": to_bottom}), "").0, "[\"an invoice\",\"more\"]");
    assert_eq!(host.read(&key, json!({"pointer": "/1"}), "").0, "\"top\"");
    let found = host.search("conv_deep", "more", 20, None);
    assert_eq!(found["matches"][0]["pointer"], pointer.as_str());
    assert_eq!(found["matches"][0]["snippet"], "more");

    host.in_step("conv_deep", 1);
    // The CLI shows it exactly as stored: as JSON text, and laid out a line per token.
    let stored = format!("[{},\"top\"]", arrays(DEPTH - 1, "\"an invoice\",\"more\""));
    assert!(host.show(&key, &["--json"]).contains(&stored), "`show --json` prints the data as stored");
    let shown = host.show(&key, &[]);
    assert!(
        shown.lines().count() > 2 * DEPTH && shown.lines().any(|line| line.trim() == "\"more\""),
        "{}",
        shorten(&shown)
    );
    host.close_and_verify();
}

#[test]
fn objects_a_million_deep_are_read_sliced_and_searched() {
    let mut host = Host::start();
    let budget = pointer_budget(&mut host);
    // `{"":` is the shortest object level: a million of them fit in one item, `{"a":` would not.
    let data = objects(DEPTH, "", "\"an invoice\"");
    let key = host.write("conv_deep", &data);

    assert!(host.read(&key, json!({}), "").0 == data, "the item reads back exactly");
    assert_eq!(host.read(&key, json!({"pointer": "/".repeat(DEPTH)}), "").0, "\"an invoice\"");
    assert_eq!(host.read(&key, json!({"pointer": "/".repeat(DEPTH - 1)}), "").0, "{\"\":\"an invoice\"}");
    let (empty, slice) = host.read(&key, json!({"maxBytes": 64}), "");
    assert_eq!((empty.as_str(), slice.unwrap()["total"].as_u64()), ("{}", Some(1)));
    let (whole, _) = host.read(&key, json!({"offset": 0, "limit": 1}), "");
    assert!(whole == data);

    let found = host.search("conv_deep", "invoice", 20, None);
    let pointer = cut_pointer(std::iter::repeat_n("/", DEPTH), budget);
    assert_eq!(
        found["matches"][0],
        json!({"storageKey": key, "pointer": pointer, "pointerCut": true, "snippet": "an invoice",
               "provenance": {"origin": "unknown"}})
    );

    // Named levels, as deep as an item holds them: the pointer is cut at a whole token.
    let named = objects(700_000, "ab", "\"deep invoice\"");
    let second = host.write("conv_deep", &named);
    let found = host.search("conv_deep", "invoice", 1, None);
    assert_eq!(found["matches"][0]["storageKey"], second.as_str());
    assert_eq!(found["matches"][0]["pointer"], cut_pointer(std::iter::repeat_n("/ab", 700_000), budget));
    assert_eq!(host.read(&second, json!({"pointer": "/ab".repeat(700_000)}), "").0, "\"deep invoice\"");

    host.in_step("conv_deep", 2);
    host.close_and_verify();
}

#[test]
fn search_answers_deep_nests_that_once_crashed_or_stalled_it() {
    let mut host = Host::start();
    let budget = pointer_budget(&mut host);
    // 30,000 levels overflowed the stack of a search that recursed (the host died).
    let key = host.write("conv_nests", &arrays(30_000, "\"invoice\""));
    let found = host.search("conv_nests", "invoice", 20, None);
    assert_eq!(found["matches"][0]["pointer"], cut_pointer(std::iter::repeat_n("/0", 30_000), budget));
    assert_eq!(found["matches"][0]["storageKey"], key.as_str());
    host.in_step("conv_nests", 1);

    // Nests side by side must cost one pass, not a rescan per level: walked a level at a time, 40 of
    // 10,000 levels, and 125 of 20,000 (5 MB), take minutes.
    for (nests, depth) in [(40, 10_000), (125, 20_000)] {
        let session = format!("conv_n{nests}");
        let nest = arrays(depth, "\"invoice\"");
        let data = format!("[{}]", vec![nest; nests].join(","));
        let key = host.write(&session, &data);
        let mut cursor: Option<String> = None;
        let mut seen = 0;
        loop {
            let page = host.search(&session, "invoice", 100, cursor.as_deref());
            for found in page["matches"].as_array().unwrap() {
                let first = format!("/{seen}");
                let tokens = std::iter::once(first.as_str()).chain(std::iter::repeat_n("/0", depth));
                let pointer = cut_pointer(tokens, budget);
                assert_eq!(
                    *found,
                    json!({"storageKey": key, "pointer": pointer, "pointerCut": true, "snippet": "invoice",
                           "provenance": {"origin": "unknown"}})
                );
                seen += 1;
            }
            match page["nextCursor"].as_str() {
                Some(next) => cursor = Some(next.to_owned()),
                None => break,
            }
        }
        assert_eq!(seen, nests);
        host.in_step(&session, 1);
    }
    host.close_and_verify();
}

#[test]
fn list_queries_read_custom_metadata_at_any_depth() {
    let mut host = Host::start();
    // 200 levels were past the recursion limit of the parser list used; 10,000 fit in 64 KB.
    for (turn, depth) in [("turn0200", 200), ("turn10k0", 10_000)] {
        let custom = objects(depth, "a", &format!("[\"Needle {depth}\"]"));
        let write = json!({"id": turn, "op": "write", "sessionId": "conv_list", "taskId": "task0001", "turnId": turn});
        host.ok(write, &format!("\"data\":1,\"description\":\"deep labels\",\"customMetadata\":{custom}"));
    }
    host.ok(json!({"id": "plain", "op": "write", "sessionId": "conv_list", "data": 2, "description": "plain"}), "");
    let listed = |host: &mut Host, query: &str| -> Vec<String> {
        let result: Value = serde_json::from_str(
            &host.ok(json!({"id": "l", "op": "list", "sessionId": "conv_list", "query": query}), ""),
        )
        .unwrap();
        result["items"].as_array().unwrap().iter().map(|item| item["turnId"].as_str().unwrap().to_owned()).collect()
    };
    assert_eq!(listed(&mut host, "needle 200 DEEP"), ["turn0200"]);
    assert_eq!(listed(&mut host, "needle 10000"), ["turn10k0"]);
    let mut all = listed(&mut host, "needle");
    all.sort();
    assert_eq!(all, ["turn0200", "turn10k0"]);
    host.in_step("conv_list", 3);
    host.close_and_verify();
}

#[test]
fn long_pointers_cost_what_the_walk_reaches_and_errors_stay_short() {
    let mut host = Host::start();
    let key = host.write("conv_ptr", &format!("[{}]", ["0"; 200_000].join(",")));
    let read = json!({"id": "p", "op": "read", "sessionId": "conv_ptr", "storageKey": key});
    // Millions of tokens into a shallow item, and one index token of a million digits compared with
    // each of 200,000 elements: neither names anything, and the error echoes only the pointer's start.
    // (3,000,000 tokens keep the request under the 8 MiB frame limit.)
    for pointer in ["/0".repeat(3_000_000), format!("/{}", "1".repeat(1_000_000))] {
        let reply = host.call(read.clone(), &format!("\"pointer\":\"{pointer}\""));
        assert!(reply.len() < 2000, "a {}-byte error for a {}-byte pointer", reply.len(), pointer.len());
        let error: Value = serde_json::from_str(member(&reply, "error").unwrap()).unwrap();
        assert_eq!(error["code"], "ItemNotFoundError");
        let actual = error["actual"].as_str().unwrap();
        assert!(actual.starts_with(&pointer[..256]) && actual.ends_with(&format!("… ({} bytes)", pointer.len())));
    }
    assert_eq!(host.read(&key, json!({"pointer": "/199999"}), "").0, "0");
    host.in_step("conv_ptr", 1);
    host.close_and_verify();
}

#[test]
fn call_sends_and_prints_data_of_any_depth() {
    let dir = tempfile::tempdir().unwrap();
    let data = arrays(10_000, "\"deep\"");
    // Each stdin line is one request; the write's data nests 10,000 deep.
    let mut input = json!({"id": 1, "op": "write", "sessionId": "conv_call", "description": "d"}).to_string();
    input.pop();
    input.push_str(&format!(",\"taskId\":\"aaaaaaaa\",\"turnId\":\"bbbbbbbb\",\"data\":{data}}}\n"));
    input.push_str(
        &json!({"id": 2, "op": "read", "sessionId": "conv_call", "storageKey": "conv_call_aaaaaaaa_bbbbbbbb"})
            .to_string(),
    );
    let mut child = Command::new(binary())
        .arg("call")
        .env("LLM_CACHE_DIR", dir.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), input.as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    let (out, err) = (String::from_utf8(output.stdout).unwrap(), String::from_utf8_lossy(&output.stderr).into_owned());
    assert!(output.status.success(), "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert_eq!(member(lines[0], "ok"), Some("true"), "{}", shorten(lines[0]));
    let item = member(member(lines[1], "result").unwrap(), "item").unwrap();
    assert!(member(item, "data") == Some(data.as_str()), "{}", shorten(lines[1]));
}

/// A request's provenance is read in one pass whatever it holds: a value nested a million deep where
/// an origin, a source, a URL, a list of origins or of keys belongs is refused with
/// InvalidRequestError naming that member (and not echoing the value), and the host answers on.
#[test]
fn provenance_nested_a_million_deep_is_refused_by_name() {
    let mut host = Host::start();
    let cases = [
        ("provenance.origin", format!("{{\"origin\":{}}}", arrays(DEPTH, "\"web\""))),
        ("provenance.source", format!("{{\"origin\":\"web\",\"source\":{}}}", arrays(DEPTH, "1"))),
        (
            "provenance.source.url",
            format!("{{\"origin\":\"web\",\"source\":{{\"url\":{}}}}}", objects(DEPTH, "url", "\"x\"")),
        ),
        ("provenance.upstream", format!("{{\"origin\":\"web\",\"upstream\":{}}}", arrays(DEPTH, "\"web\""))),
        ("provenance.derivedFrom", format!("{{\"origin\":\"web\",\"derivedFrom\":{}}}", arrays(DEPTH, "\"k\""))),
    ];
    for (field, provenance) in cases {
        let write = json!({"id": "p", "op": "write", "sessionId": "conv_prov", "description": "d", "data": 1});
        let reply = host.call(write, &format!("\"provenance\":{provenance}"));
        assert_eq!(member(&reply, "ok"), Some("false"), "{field}: {}", shorten(&reply));
        assert!(reply.contains("\"code\":\"InvalidRequestError\""), "{field}: {}", shorten(&reply));
        assert!(reply.contains(field), "the error names {field}: {}", shorten(&reply));
        assert!(reply.len() < 2_000, "{field}: the error doesn't echo the value: {} bytes", reply.len());
    }
    host.ok(json!({"id": "s", "op": "stats", "sessionId": "conv_prov"}), "");
    host.close_and_verify();
}
