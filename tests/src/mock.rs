//! Mock MCP servers (2026-07-28 dialect) on 127.0.0.1 with fault injection, for fast tests.
//! Behaviour is chosen by the tool a request calls, so one mock serves every scenario:
//!
//! | tool | behaviour |
//! |---|---|
//! | (any other) | JSON result whose text is the server's name |
//! | `sse_progress` | SSE: `arguments.steps` progress notifications `arguments.gap_ms` apart, then the result |
//! | `odd_response` | answers [`ODD_RESPONSE`] verbatim |
//! | `drop_connection` | closes the connection without answering |
//! | `drop_mid_sse` | starts an SSE answer, sends one progress event, closes |
//! | `slow` | waits `arguments.ms`, then answers |
//!
//! Every request is captured with its exact body bytes.

use crate::wire::{read_body, read_head, Head};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// A response body with key order, whitespace, escapes and numbers a re-serializer would change.
pub const ODD_RESPONSE: &str = "{\"result\" : {\"content\":[{\"type\":\"text\",\"text\":\"caf\\u00e9 \\ud83d\\ude00\"}], \"z\":1e400, \"a\":123456789012345678901},\n \"id\":1, \"jsonrpc\":\"2.0\"}";

/// One request as the mock received it.
#[derive(Debug, Clone)]
pub struct Captured {
    /// Method, path and headers.
    pub head: Head,
    /// Exact body bytes.
    pub body: Vec<u8>,
}

/// A running mock server.
pub struct MockServer {
    /// Where it listens.
    pub addr: SocketAddr,
    /// Name it answers with.
    pub name: String,
    captured: Arc<Mutex<Vec<Captured>>>,
    stop: watch::Sender<bool>,
}

impl MockServer {
    /// Starts a mock on a free port.
    pub async fn start(name: &str) -> MockServer {
        Self::start_on(name, 0).await
    }

    /// Starts a mock on a given port (0: any).
    pub async fn start_on(name: &str, port: u16) -> MockServer {
        let listener = TcpListener::bind(("127.0.0.1", port))
            .await
            .expect("bind mock");
        let addr = listener.local_addr().expect("addr");
        let captured = Arc::new(Mutex::new(Vec::new()));
        let (stop, stopped) = watch::channel(false);
        let (name_c, cap_c) = (name.to_owned(), captured.clone());
        tokio::spawn(async move {
            let mut stopped_accept = stopped.clone();
            loop {
                tokio::select! {
                    accepted = listener.accept() => {
                        let Ok((stream, _)) = accepted else { continue };
                        let (name, cap, mut stopped) = (name_c.clone(), cap_c.clone(), stopped.clone());
                        tokio::spawn(async move {
                            tokio::select! {
                                _ = serve(stream, &name, &cap) => {}
                                _ = stopped.changed() => {}
                            }
                        });
                    }
                    _ = stopped_accept.changed() => return,
                }
            }
        });
        MockServer {
            addr,
            name: name.to_owned(),
            captured,
            stop,
        }
    }

    /// Stops listening and drops every open connection (like a killed process).
    pub fn kill(&self) {
        let _ = self.stop.send(true);
    }

    /// Requests received so far.
    pub fn requests(&self) -> Vec<Captured> {
        self.captured.lock().expect("lock").clone()
    }

    /// Number of requests received so far.
    pub fn count(&self) -> usize {
        self.captured.lock().expect("lock").len()
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.kill();
    }
}

async fn serve(stream: TcpStream, name: &str, captured: &Mutex<Vec<Captured>>) {
    let mut reader = BufReader::new(stream);
    loop {
        let Ok(Some(head)) = read_head(&mut reader, true).await else {
            return;
        };
        let Ok(body) = read_body(&mut reader, &head, true).await else {
            return;
        };
        captured.lock().expect("lock").push(Captured {
            head: head.clone(),
            body: body.clone(),
        });
        if !answer(reader.get_mut(), name, &head, &body).await {
            return;
        }
    }
}

/// Answers one request; false when the connection must close.
async fn answer(stream: &mut TcpStream, name: &str, head: &Head, body: &[u8]) -> bool {
    if head.method != "POST" {
        return write(
            stream,
            405,
            "application/json",
            br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"POST only"}}"#,
        )
        .await;
    }
    // Read only what the mock needs, so bodies with numbers like 1e400 still get answered.
    let request: Value = match serde_json::from_slice::<Envelope>(body) {
        Ok(e) => {
            let arguments = e.params.as_ref().and_then(|p| p.arguments.as_ref());
            json!({"id": e.id, "method": e.method, "params": {
                "name": e.params.as_ref().and_then(|p| p.name.clone()),
                "arguments": arguments.and_then(|a| serde_json::from_str::<Value>(a.get()).ok()),
            }})
        }
        Err(_) => {
            return write(
                stream,
                400,
                "application/json",
                br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#,
            )
            .await
        }
    };
    let Some(id) = request.get("id").cloned().filter(|id| !id.is_null()) else {
        return write(stream, 202, "application/json", b"").await;
    };
    let tool = request
        .pointer("/params/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let arg = |k: &str, d: u64| {
        request
            .pointer(&format!("/params/arguments/{k}"))
            .and_then(Value::as_u64)
            .unwrap_or(d)
    };
    let result = |text: &str| {
        serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "result": {
            "content": [{"type": "text", "text": text}], "isError": false,
            "bodyBytes": body.len(), "resultType": "complete"}}))
        .expect("json")
    };
    match tool {
        "odd_response" => write(stream, 200, "application/json", ODD_RESPONSE.as_bytes()).await,
        "drop_connection" => false,
        "slow" => {
            tokio::time::sleep(Duration::from_millis(arg("ms", 1000))).await;
            write(stream, 200, "application/json", &result(name)).await
        }
        "sse_progress" | "drop_mid_sse" => {
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\n\r\n";
            if stream.write_all(head.as_bytes()).await.is_err() {
                return false;
            }
            let steps = if tool == "drop_mid_sse" {
                1
            } else {
                arg("steps", 3)
            };
            for i in 0..steps {
                let note = json!({"jsonrpc": "2.0", "method": "notifications/progress",
                    "params": {"progressToken": 1, "progress": i + 1, "total": steps}});
                if !chunk(stream, &format!("event: message\r\ndata: {note}\r\n\r\n")).await {
                    return false;
                }
                tokio::time::sleep(Duration::from_millis(arg("gap_ms", 200))).await;
            }
            if tool == "drop_mid_sse" {
                return false;
            }
            let done = String::from_utf8(result(name)).expect("utf8");
            chunk(stream, &format!("event: message\r\ndata: {done}\r\n\r\n")).await
                && stream.write_all(b"0\r\n\r\n").await.is_ok()
        }
        _ => write(stream, 200, "application/json", &result(name)).await,
    }
}

#[derive(serde::Deserialize)]
struct Envelope {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    params: Option<EnvelopeParams>,
}

#[derive(serde::Deserialize)]
struct EnvelopeParams {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<Box<serde_json::value::RawValue>>,
}

async fn chunk(stream: &mut TcpStream, data: &str) -> bool {
    let framed = format!("{:x}\r\n{data}\r\n", data.len());
    stream.write_all(framed.as_bytes()).await.is_ok() && stream.flush().await.is_ok()
}

async fn write(stream: &mut TcpStream, status: u16, content_type: &str, body: &[u8]) -> bool {
    let reason = match status {
        200 => "OK",
        202 => "Accepted",
        400 => "Bad Request",
        _ => "Other",
    };
    let head = format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.is_ok() && stream.write_all(body).await.is_ok()
}
