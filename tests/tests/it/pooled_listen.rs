//! Issue 23: `subscriptions/listen` of a 2026-07-28 client on legacy backends, with the Rust
//! legacy mock (fast): a filter the backend honours nothing of (it declares no `listChanged`)
//! gets the acknowledgement with an empty filter, stamped with the subscription id, and the
//! graceful end at once; the backend session held for it is closed upstream afterwards, and so
//! is the session of a listen whose client goes away while it listens.
//! The relay itself, with real peers: `real_peers_listen.rs`.

use mcp_gateway_tests::{assert_eventually, Gateway, MockServer, Request};
use serde_json::{json, Value};
use std::time::Duration;

fn listen(notifications: Value) -> Request {
    let body = json!({"jsonrpc": "2.0", "id": "listen-1", "method": "subscriptions/listen",
    "params": {"notifications": notifications, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }}});
    Request::post("/mcp", body.to_string())
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "subscriptions/listen")
}

#[tokio::test]
async fn a_listen_whose_client_goes_away_closes_its_backend_session() {
    let mock = MockServer::legacy("b1", 0, "2025-11-25").await;
    let yaml = format!(
        "pools:\n  p: {{ era: legacy, backends: [{}] }}\nroutes: [ {{ path: /mcp, pool: p, mode: stateless }} ]\n",
        mock.addr
    );
    let gw = Gateway::start(&yaml).await;
    let started = std::time::Instant::now();
    // the mock answers resources/subscribe with a result: the URI is honoured
    let (head, mut reader) = listen(json!({"resourceSubscriptions": ["note://a"]}))
        .send_for_head(gw.addr)
        .await;
    assert_eq!(head.status, 200);
    let mut first = String::new();
    while !first.contains("\r\n\r\n") {
        let chunk = mcp_gateway_tests::wire::read_chunk(&mut reader)
            .await
            .expect("read chunk")
            .expect("the ack before the end");
        first.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the ack comes at once, not with a keep-alive"
    );
    drop(reader);
    let ack: Value = first
        .lines()
        .find_map(|l| l.strip_prefix("data:"))
        .and_then(|d| serde_json::from_str(d.trim()).ok())
        .unwrap_or_else(|| panic!("an ack: {first}"));
    assert_eq!(
        ack["params"]["notifications"],
        json!({"resourceSubscriptions": ["note://a"]}),
        "{ack}"
    );
    assert_eq!(mock.sessions().initializes(), 1);
    // the client went away after the ack (its connection closed above)
    assert_eventually!(
        Duration::from_secs(5),
        mock.sessions().live() == 0,
        "the held session was closed upstream"
    );
}

#[tokio::test]
async fn a_listen_the_backend_honours_nothing_of_is_acknowledged_empty_and_ended_at_once() {
    let mock = MockServer::legacy("b1", 0, "2025-11-25").await;
    let yaml = format!(
        "pools:\n  p: {{ era: legacy, backends: [{}] }}\nroutes: [ {{ path: /mcp, pool: p, mode: stateless }} ]\n",
        mock.addr
    );
    let gw = Gateway::start(&yaml).await;
    let body = json!({"jsonrpc": "2.0", "id": "listen-1", "method": "subscriptions/listen",
    "params": {"notifications": {"toolsListChanged": true, "promptsListChanged": true},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        }}});
    let resp = tokio::time::timeout(
        Duration::from_secs(10),
        Request::post("/mcp", body.to_string())
            .header("MCP-Protocol-Version", "2026-07-28")
            .header("Mcp-Method", "subscriptions/listen")
            .send(gw.addr),
    )
    .await
    .expect("ended at once");
    assert_eq!(resp.status(), 200, "{}", resp.text());
    let text = resp.text();
    let messages: Vec<Value> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str(d.trim()).ok())
        .collect();
    assert_eq!(messages.len(), 2, "{text}");
    let stamp = json!({"io.modelcontextprotocol/subscriptionId": "listen-1"});
    assert_eq!(
        messages[0],
        json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
            "params": {"notifications": {}, "_meta": stamp}}),
        "{text}"
    );
    assert_eq!(
        messages[1],
        json!({"jsonrpc": "2.0", "id": "listen-1", "result": {"_meta": stamp}}),
        "{text}"
    );
    assert_eq!(
        mock.sessions().initializes(),
        1,
        "one backend session held for it"
    );
    assert_eventually!(
        Duration::from_secs(5),
        mock.sessions().live() == 0,
        "the held session was closed upstream"
    );
}
