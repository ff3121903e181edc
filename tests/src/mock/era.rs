//! A probe target for the era tests: a server whose answer to the gateway's era probes can be
//! switched while it runs (an HTTP status with a JSON-RPC error: at 400 the legacy SDKs'
//! "Missing session ID", or a modern-only server), and
//! that counts the probes it got. Inconclusive answers (503, 401) must leave the era unknown
//! and be asked again; a switch to modern must then be found.

use crate::wire::{read_body, read_head};
use serde_json::json;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU16, AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

/// Answer every request with this HTTP status (and a JSON-RPC error body); 0: modern-only.
pub const MODERN: u16 = 0;

/// A running probe target; stops when dropped.
pub struct EraMock {
    /// Where it listens.
    pub addr: SocketAddr,
    answer: Arc<AtomicU16>,
    discovers: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl EraMock {
    /// Starts on a free port, answering every request with `status` ([`MODERN`]: as a
    /// 2026-07-28 server that refuses legacy `initialize` with 400 -32022).
    pub async fn start(status: u16) -> EraMock {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let answer = Arc::new(AtomicU16::new(status));
        let discovers = Arc::new(AtomicUsize::new(0));
        let (a, d) = (answer.clone(), discovers.clone());
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (a, d) = (a.clone(), d.clone());
                tokio::spawn(async move {
                    let mut reader = BufReader::new(stream);
                    while let Ok(Some(head)) = read_head(&mut reader, true).await {
                        let Ok(body) = read_body(&mut reader, &head, true).await else {
                            return;
                        };
                        let discover = head.header("mcp-method") == Some("server/discover");
                        if discover {
                            d.fetch_add(1, Ordering::SeqCst);
                        }
                        let (status, answer) = match a.load(Ordering::SeqCst) {
                            MODERN if discover => (
                                200,
                                json!({"jsonrpc": "2.0", "id": 1, "result": {
                                "supportedVersions": ["2026-07-28"], "capabilities": {},
                                "resultType": "complete", "ttlMs": 0, "cacheScope": "private"}}),
                            ),
                            MODERN if String::from_utf8_lossy(&body).contains("\"initialize\"") => {
                                (
                                    400,
                                    json!({
                                "jsonrpc": "2.0", "id": 1, "error": {"code": -32022,
                                "message": "Unsupported protocol version: 2025-11-25",
                                "data": {"supported": ["2026-07-28"], "requested": "2025-11-25"}}}),
                                )
                            }
                            MODERN => (
                                200,
                                json!({"jsonrpc": "2.0", "id": 1, "result": {
                                "content": [{"type": "text", "text": "era-mock"}], "resultType": "complete"}}),
                            ),
                            // 400 as the legacy SDKs answer a sessionless request
                            400 => (
                                400,
                                json!({"jsonrpc": "2.0", "id": "server-error", "error": {
                                "code": -32600, "message": "Bad Request: Missing session ID"}}),
                            ),
                            status => (
                                status,
                                json!({"jsonrpc": "2.0", "id": null, "error": {
                                "code": -32603, "message": format!("answering {status}")}}),
                            ),
                        };
                        let body = answer.to_string();
                        let head = format!(
                            "HTTP/1.1 {status} Mock\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                            body.len()
                        );
                        let stream = reader.get_mut();
                        if stream.write_all(head.as_bytes()).await.is_err()
                            || stream.write_all(body.as_bytes()).await.is_err()
                        {
                            return;
                        }
                    }
                });
            }
        });
        EraMock {
            addr,
            answer,
            discovers,
            task,
        }
    }

    /// Answers with `status` from now on ([`MODERN`]: as a modern-only server).
    pub fn answer(&self, status: u16) {
        self.answer.store(status, Ordering::SeqCst);
    }

    /// `server/discover` probes received so far.
    pub fn discovers(&self) -> usize {
        self.discovers.load(Ordering::SeqCst)
    }
}

impl Drop for EraMock {
    fn drop(&mut self) {
        self.task.abort();
    }
}
