//! The legacy (2025-11-25) flavour of the mock: sessions in process memory, answered the way
//! the Python SDK does (400 without a session id, 404 -32600 for an unknown one).
//!
//! Extra tools: `count` (a per-session counter), `log_level` (what `logging/setLevel` set for
//! this session), `session_id` (the backend session id the request carried).

use crate::wire::Head;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

/// What the session layer decided for one request.
pub enum Gate {
    /// Answer this.
    Answer(Answer),
    /// Open the server→client SSE stream.
    Stream,
    /// A valid in-session request: the common behaviours answer it.
    Pass,
}

/// A complete answer.
pub struct Answer {
    /// HTTP status.
    pub status: u16,
    /// Headers.
    pub headers: Vec<(String, String)>,
    /// Body.
    pub body: Vec<u8>,
}

#[derive(Default)]
struct Session {
    count: u64,
    level: Option<String>,
}

/// Sessions of one legacy mock process.
pub struct Sessions {
    version: String,
    table: Mutex<HashMap<String, Session>>,
    minted: AtomicUsize,
}

fn json_answer(status: u16, body: Value, session: Option<&str>) -> Gate {
    let mut headers = vec![("content-type".to_owned(), "application/json".to_owned())];
    if let Some(s) = session {
        headers.push(("mcp-session-id".to_owned(), s.to_owned()));
    }
    Gate::Answer(Answer {
        status,
        headers,
        body: serde_json::to_vec(&body).expect("json"),
    })
}

fn result(id: &Value, result: Value) -> Gate {
    json_answer(
        200,
        json!({"jsonrpc": "2.0", "id": id, "result": result}),
        None,
    )
}

fn text(id: &Value, text: &str) -> Gate {
    result(
        id,
        json!({"content": [{"type": "text", "text": text}], "isError": false}),
    )
}

impl Sessions {
    /// A table whose sessions negotiate `version`.
    pub fn new(version: &str) -> Sessions {
        Sessions {
            version: version.to_owned(),
            table: Mutex::new(HashMap::new()),
            minted: AtomicUsize::new(0),
        }
    }

    /// Live sessions.
    pub fn live(&self) -> usize {
        self.table.lock().expect("lock").len()
    }

    /// Sessions ever created (one per initialize).
    pub fn initializes(&self) -> usize {
        self.minted.load(Ordering::SeqCst)
    }

    /// Whether this backend session id is live.
    pub fn knows(&self, id: &str) -> bool {
        self.table.lock().expect("lock").contains_key(id)
    }

    /// Applies the session rules to one request.
    pub fn gate(&self, name: &str, head: &Head, body: &[u8]) -> Gate {
        let sid = head.header("mcp-session-id").map(str::to_owned);
        let request: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
        let method = request.get("method").and_then(Value::as_str).unwrap_or("");
        let id = request.get("id").cloned().unwrap_or(Value::Null);
        let not_found = || {
            json_answer(
                404,
                json!({"jsonrpc": "2.0", "id": "server-error", "error": {"code": -32600, "message": "Session not found"}}),
                None,
            )
        };
        let known = sid.as_ref().is_some_and(|s| self.knows(s));
        match (head.method.as_str(), sid.as_deref()) {
            ("DELETE", Some(s)) if known => {
                self.table.lock().expect("lock").remove(s);
                return json_answer(200, Value::Null, None);
            }
            ("GET", Some(_)) if known => return Gate::Stream,
            ("GET" | "DELETE", Some(_)) => return not_found(),
            ("GET" | "DELETE", None) => return missing(),
            _ => {}
        }
        let Some(sid) = sid else {
            if method == "initialize" {
                let n = self.minted.fetch_add(1, Ordering::SeqCst) + 1;
                let new_id = format!("{name}-session-{n}");
                self.table
                    .lock()
                    .expect("lock")
                    .insert(new_id.clone(), Session::default());
                let answer = json!({"jsonrpc": "2.0", "id": id, "result": {
                    "protocolVersion": self.version,
                    "capabilities": {"tools": {}, "logging": {}},
                    "serverInfo": {"name": name, "version": "mock"}}});
                return json_answer(200, answer, Some(&new_id));
            }
            return missing();
        };
        if !known {
            return not_found();
        }
        if request.get("id").is_none() {
            return Gate::Answer(Answer {
                status: 202,
                headers: vec![],
                body: vec![],
            });
        }
        let tool = request
            .pointer("/params/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        let mut table = self.table.lock().expect("lock");
        let session = table.get_mut(&sid).expect("known");
        match (method, tool) {
            ("logging/setLevel", _) => {
                session.level = request
                    .pointer("/params/level")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                result(&id, json!({}))
            }
            ("tools/call", "count") => {
                session.count += 1;
                text(&id, &session.count.to_string())
            }
            ("tools/call", "log_level") => text(&id, session.level.as_deref().unwrap_or("unset")),
            ("tools/call", "session_id") => text(&id, &sid),
            ("tools/list", _) => result(
                &id,
                json!({"tools": [{"name": "whoami", "inputSchema": {"type": "object"}}]}),
            ),
            _ => Gate::Pass,
        }
    }
}

fn missing() -> Gate {
    let mut gate = json_answer(
        400,
        json!({"jsonrpc": "2.0", "id": "server-error", "error": {"code": -32600, "message": "Bad Request: Missing session ID"}}),
        None,
    );
    // like the Python SDK: a throwaway session id on the refusal, never to be used
    if let Gate::Answer(a) = &mut gate {
        a.headers
            .push(("mcp-session-id".into(), "throwaway".into()));
    }
    gate
}

/// Serves the server→client SSE stream: a comment every 100 ms until the client or the
/// server goes away. Returns false (the connection closes with it).
pub async fn stream(stream: &mut TcpStream) -> bool {
    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\n\r\n";
    if stream.write_all(head.as_bytes()).await.is_err() {
        return false;
    }
    loop {
        let beat = ": keepalive\r\n\r\n";
        let framed = format!("{:x}\r\n{beat}\r\n", beat.len());
        if stream.write_all(framed.as_bytes()).await.is_err() || stream.flush().await.is_err() {
            return false;
        }
        // the heartbeat's pace is the behaviour
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
