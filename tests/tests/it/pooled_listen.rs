//! Issue 23: `subscriptions/listen` of a 2026-07-28 client on legacy backends, with the Rust
//! legacy mock (fast): a filter the backend honours nothing of (it declares no `listChanged`)
//! gets the acknowledgement with an empty filter, stamped with the subscription id, and the
//! graceful end at once; the backend session held for it is closed upstream afterwards.
//! The relay itself, with real peers: `real_peers_listen.rs`.

use mcp_gateway_tests::{assert_eventually, Gateway, MockServer, Request};
use serde_json::{json, Value};
use std::time::Duration;

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
