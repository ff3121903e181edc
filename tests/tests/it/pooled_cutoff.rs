//! A legacy backend cut off while the reverse bridge opens a backend session on it (killed
//! between the `initialize` and its answer, or before `notifications/initialized` is answered)
//! costs the client nothing: the client's request was not sent yet, so the bridge marks the
//! backend failed and opens the session on the next one. (Before, the client got -32035 for an
//! `initialize` stream cut short or a lost `notifications/initialized`, and -32013 for a lost
//! `initialize`: a kill under load failed calls that never reached a backend.)

use super::pooled_bridge::{meta, modern_anonymous};
use mcp_gateway_tests::wire::{read_body, read_head};
use mcp_gateway_tests::{Gateway, MockServer};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// Where the cut-off backend breaks off.
#[derive(Clone, Copy, Debug)]
enum Cut {
    /// Its `initialize` answer: an event stream's head, then the connection closed.
    InitializeStream,
    /// Its `initialize` answered with a session; the connection closed at
    /// `notifications/initialized`, unanswered.
    Initialized,
}

/// A legacy backend that breaks off as `cut` says; counts the `initialize`s it was sent.
async fn cut_off(cut: Cut, opened: Arc<AtomicUsize>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(serve(stream, cut, opened.clone()));
        }
    });
    addr
}

async fn serve(stream: TcpStream, cut: Cut, opened: Arc<AtomicUsize>) {
    let mut reader = BufReader::new(stream);
    while let Ok(Some(head)) = read_head(&mut reader, true).await {
        let Ok(body) = read_body(&mut reader, &head, true).await else {
            return;
        };
        let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let out = match (request["method"].as_str().unwrap_or(""), cut) {
            ("initialize", Cut::InitializeStream) => {
                opened.fetch_add(1, Ordering::SeqCst);
                // the answer's head, then nothing: the stream ends before its response
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
                let _ = reader.get_mut().write_all(head.as_bytes()).await;
                let _ = reader.get_mut().write_all(b"0\r\n\r\n").await;
                return;
            }
            ("initialize", Cut::Initialized) => {
                opened.fetch_add(1, Ordering::SeqCst);
                let answer = json!({"jsonrpc": "2.0", "id": request["id"], "result": {
                    "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                    "serverInfo": {"name": "cut", "version": "1"}}})
                .to_string();
                format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nmcp-session-id: cut-1\r\ncontent-length: {}\r\n\r\n{answer}",
                    answer.len()
                )
            }
            // `notifications/initialized` (or anything else): the connection closed unanswered
            _ => return,
        };
        if reader.get_mut().write_all(out.as_bytes()).await.is_err() {
            return;
        }
    }
}

async fn calls_go_on_after(cut: Cut) {
    let opened = Arc::new(AtomicUsize::new(0));
    let broken = cut_off(cut, opened.clone()).await;
    let good = MockServer::legacy("good", 0, "2025-11-25").await;
    let yaml = format!(
        "pools:\n  p: {{ era: legacy, backends: [{broken}, {}] }}\nroutes: [ {{ path: /mcp, pool: p, mode: stateless }} ]\n",
        good.addr
    );
    let gw = Gateway::start(&yaml).await;
    // anonymous callers: each call opens a backend session of its own, so the broken backend
    // is picked for one of the first calls (round robin)
    for id in 1..=6 {
        let params = json!({"name": "whoami", "arguments": {}});
        let answer = modern_anonymous(id, "tools/call", params, meta("c", None))
            .send(gw.addr)
            .await;
        assert_eq!(answer.status(), 200, "{cut:?}: {}", answer.text());
        let v = answer.json();
        assert_eq!(v["id"], id, "{cut:?}: {v}");
        assert!(v.get("error").is_none(), "{cut:?}: call {id}: {v}");
    }
    assert!(
        opened.load(Ordering::SeqCst) >= 1,
        "{cut:?}: the broken backend was tried"
    );
}

#[tokio::test]
async fn an_initialize_stream_cut_short_sends_the_call_to_the_next_backend() {
    calls_go_on_after(Cut::InitializeStream).await;
}

#[tokio::test]
async fn a_lost_notifications_initialized_sends_the_call_to_the_next_backend() {
    calls_go_on_after(Cut::Initialized).await;
}
