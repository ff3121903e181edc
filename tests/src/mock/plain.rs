//! Backends that are no MCP session server and do not answer `server/discover` the way the era
//! probe expects, for the passthrough tests (issue 31, item 1):
//!
//! | flavour | every POST is answered |
//! |---|---|
//! | [`Flavour::Static`] | 200 with the same JSON bytes, whatever was asked (a static JSON responder) |
//! | [`Flavour::JsonRpc`] | a plain JSON-RPC service: `tools/call` a result with the request's id, any other method -32601 |
//! | [`Flavour::NoSessionInit`] | `server/discover` refused 400 "Missing session ID" (as a legacy session server does), but `initialize` answered with an `InitializeResult` and no `Mcp-Session-Id`; anything else as [`Flavour::Static`] |
//!
//! It never opens a session. Every request is captured with its exact body bytes; the
//! gateway's era probes ([`super::is_era_probe`]) are counted apart.

use crate::mock::Captured;
use crate::wire::{read_body, read_head};
use serde_json::json;
use serde_json::value::RawValue;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

/// The body [`Flavour::Static`] answers with.
pub const STATIC_ANSWER: &str = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"static"}],"isError":false}}"#;

/// How the backend answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavour {
    /// The same bytes to everything.
    Static,
    /// JSON-RPC without MCP: -32601 for every method but `tools/call`.
    JsonRpc,
    /// Refuses sessionless requests like a legacy server, opens no session at `initialize`.
    NoSessionInit,
}

/// A running plain backend; stops when dropped.
pub struct PlainMock {
    /// Where it listens.
    pub addr: SocketAddr,
    captured: Arc<Mutex<Vec<Captured>>>,
    probes: Arc<AtomicUsize>,
    initializes: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl PlainMock {
    /// Starts on a free port.
    pub async fn start(flavour: Flavour) -> PlainMock {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let captured = Arc::new(Mutex::new(Vec::new()));
        let probes = Arc::new(AtomicUsize::new(0));
        let initializes = Arc::new(AtomicUsize::new(0));
        let (c, p, i) = (captured.clone(), probes.clone(), initializes.clone());
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (c, p, i) = (c.clone(), p.clone(), i.clone());
                tokio::spawn(async move {
                    let mut reader = BufReader::new(stream);
                    while let Ok(Some(head)) = read_head(&mut reader, true).await {
                        let Ok(body) = read_body(&mut reader, &head, true).await else {
                            return;
                        };
                        // read without converting numbers (a body may hold `1e400`)
                        let request = serde_json::from_slice::<Envelope>(&body).ok();
                        let method = request
                            .as_ref()
                            .and_then(|r| r.method.as_deref())
                            .unwrap_or("");
                        let id = request
                            .as_ref()
                            .and_then(|r| r.id.as_deref())
                            .map_or("null", RawValue::get);
                        if method == "initialize" {
                            i.fetch_add(1, Ordering::SeqCst);
                        }
                        if super::is_era_probe(&head, &body) {
                            p.fetch_add(1, Ordering::SeqCst);
                        } else {
                            c.lock().expect("lock").push(Captured {
                                head: head.clone(),
                                body: body.clone(),
                            });
                        }
                        let (status, answer) = reply(flavour, method, id);
                        let out = format!(
                            "HTTP/1.1 {status} Plain\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                            answer.len()
                        );
                        let stream = reader.get_mut();
                        if stream.write_all(out.as_bytes()).await.is_err()
                            || stream.write_all(answer.as_bytes()).await.is_err()
                        {
                            return;
                        }
                    }
                });
            }
        });
        PlainMock {
            addr,
            captured,
            probes,
            initializes,
            task,
        }
    }

    /// The requests received, era probes left out.
    pub fn requests(&self) -> Vec<Captured> {
        self.captured.lock().expect("lock").clone()
    }

    /// Era probe requests received (`server/discover`, the probe's `initialize`).
    pub fn probes(&self) -> usize {
        self.probes.load(Ordering::SeqCst)
    }

    /// `initialize` requests received, the probe's included.
    pub fn initializes(&self) -> usize {
        self.initializes.load(Ordering::SeqCst)
    }
}

/// What the mock reads of a request.
#[derive(serde::Deserialize)]
struct Envelope {
    method: Option<String>,
    id: Option<Box<RawValue>>,
}

fn reply(flavour: Flavour, method: &str, id: &str) -> (u16, String) {
    let id: serde_json::Value = serde_json::from_str(id).unwrap_or_default();
    match flavour {
        Flavour::Static => (200, STATIC_ANSWER.to_owned()),
        Flavour::JsonRpc if method == "tools/call" => (
            200,
            json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": "plain"}]}})
                .to_string(),
        ),
        Flavour::JsonRpc => (
            200,
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}})
                .to_string(),
        ),
        Flavour::NoSessionInit if method == "server/discover" => (
            400,
            json!({"jsonrpc": "2.0", "id": "server-error", "error": {"code": -32600, "message": "Bad Request: Missing session ID"}})
                .to_string(),
        ),
        Flavour::NoSessionInit if method == "initialize" => (
            200,
            json!({"jsonrpc": "2.0", "id": id, "result": {"protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}}, "serverInfo": {"name": "plain", "version": "1"}}})
            .to_string(),
        ),
        Flavour::NoSessionInit => (200, STATIC_ANSWER.to_owned()),
    }
}

impl Drop for PlainMock {
    fn drop(&mut self) {
        self.task.abort();
    }
}
