//! The session's standalone stream, held by the gateway (`sessions.hold-streams`), against
//! Rust legacy mocks: opened before the client's first call when the client takes callbacks,
//! one upstream GET however often the client reconnects, a reconnect taking over from the
//! previous GET; and with the setting off, every client GET forwarded as before.

use mcp_gateway_tests::{eventually, Gateway, MockServer, Request};
use std::time::Duration;

const V: &str = "2025-11-25";

fn config(mock: &MockServer, sessions: &str) -> String {
    format!(
        "{sessions}pools:\n  legacy: {{ backends: [{}] }}\nroutes:\n  - path: /mcp\n    mode: stateful\n    pool: legacy\n",
        mock.addr
    )
}

/// `initialize` with these client capabilities, then `notifications/initialized`.
async fn open_with(gw: &Gateway, capabilities: &str) -> String {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"{V}","capabilities":{capabilities},"clientInfo":{{"name":"t","version":"1"}}}}}}"#
    );
    let resp = Request::post("/mcp", body).send(gw.addr).await;
    assert_eq!(resp.status(), 200);
    let sid = resp.head.header("mcp-session-id").unwrap().to_owned();
    let note = Request::post(
        "/mcp",
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    )
    .header("Mcp-Session-Id", &sid)
    .header("MCP-Protocol-Version", V);
    assert_eq!(note.send(gw.addr).await.status(), 202);
    sid
}

fn upstream_gets(mock: &MockServer) -> usize {
    mock.requests()
        .iter()
        .filter(|r| r.head.method == "GET")
        .count()
}

/// Reads a client GET for a while; returns its status and whether any event arrived.
async fn read_stream(gw: &Gateway, sid: &str, for_ms: u64) -> Option<(u16, bool)> {
    let get = Request::session_stream(sid);
    tokio::time::timeout(Duration::from_millis(for_ms), get.send_timed(gw.addr))
        .await
        .ok()
        .map(|(head, chunks)| (head.status, !chunks.is_empty()))
}

#[tokio::test]
async fn a_client_that_takes_callbacks_has_its_stream_open_before_its_first_call() {
    let mock = MockServer::legacy("l", 0, V).await;
    let gw = Gateway::start(&config(&mock, "")).await;
    let sid = open_with(&gw, r#"{"elicitation":{},"sampling":{}}"#).await;
    // answered only once the backend's stream was open: nothing the client sends next can
    // reach the backend before it
    assert_eq!(upstream_gets(&mock), 1);
    assert_eq!(gw.metric("mcpgw_held_streams").await, 1.0);
    // the client's GETs attach to it; reconnects do not open another
    for _ in 0..3 {
        assert_eq!(read_stream(&gw, &sid, 300).await, None, "still streaming");
    }
    assert_eq!(upstream_gets(&mock), 1);
    // the session's end closes it
    let resp = Request::session_delete(&sid).send(gw.addr).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(gw.metric("mcpgw_held_streams").await, 0.0);
}

#[tokio::test]
async fn a_reconnecting_get_takes_over_and_the_previous_one_ends() {
    let mock = MockServer::legacy("l", 0, V).await;
    let gw = Gateway::start(&config(&mock, "")).await;
    let sid = open_with(&gw, "{}").await;
    assert_eq!(
        upstream_gets(&mock),
        0,
        "no callbacks declared: opened on demand"
    );
    let (first, addr) = (Request::session_stream(&sid), gw.addr);
    let received = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = received.clone();
    let first = tokio::spawn(async move { first.send_timed_counting(addr, &counted).await });
    eventually(
        "the first GET reached the backend",
        Duration::from_secs(3),
        || upstream_gets(&mock) == 1,
    )
    .await;
    // the first client streams: its priming event (a 2025-11-25 session) arrived
    eventually("the first client streams", Duration::from_secs(3), || {
        received.load(std::sync::atomic::Ordering::SeqCst) >= 1
    })
    .await;
    assert_eq!(
        read_stream(&gw, &sid, 400).await,
        None,
        "the second GET streams"
    );
    let (head, chunks) = tokio::time::timeout(Duration::from_secs(3), first)
        .await
        .expect("the first GET ended when the second took over")
        .unwrap();
    assert_eq!(head.status, 200);
    assert!(!chunks.is_empty(), "the first client's stream was live");
    assert_eq!(upstream_gets(&mock), 1);
}

#[tokio::test]
async fn with_held_streams_off_every_client_get_goes_to_the_backend() {
    let mock = MockServer::legacy("l", 0, V).await;
    let gw = Gateway::start(&config(&mock, "sessions: { hold-streams: false }\n")).await;
    let sid = open_with(&gw, r#"{"elicitation":{}}"#).await;
    assert_eq!(upstream_gets(&mock), 0);
    for _ in 0..2 {
        assert_eq!(read_stream(&gw, &sid, 300).await, None);
    }
    eventually("two GETs forwarded", Duration::from_secs(3), || {
        upstream_gets(&mock) == 2
    })
    .await;
}
