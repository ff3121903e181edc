//! Route deadlines on the era bridges (issue 31 item 18): `limits.timeout-ms` bounds a bridged
//! exchange as it bounds a native one. A backend that stalls (the mock's `slow` tool, far
//! longer than the deadline) costs the client the deadline and a -32012, on the forward
//! bridge (a legacy client's session on a 2026-07-28 backend) and on the reverse bridge (a
//! 2026-07-28 client on a legacy backend), not rounds of the pool's read timeout; the stalled
//! legacy call is cancelled upstream (`notifications/cancelled`).

use mcp_gateway_tests::{assert_eventually, Gateway, MockServer, Request};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// How long the stalling tool sleeps: far past the deadline, far below the test's patience.
const STALL_MS: u64 = 60_000;
/// The route's deadline.
const DEADLINE_MS: u64 = 300;

fn stall(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "slow", "arguments": {"ms": STALL_MS}}})
}

fn assert_past_deadline(v: &Value, id: u64, bridge: &str, took: Duration) {
    assert_eq!(v["id"], id, "{v}");
    assert_eq!(v["error"]["code"], -32012, "{v}");
    assert_eq!(v["error"]["data"]["bridge"], bridge, "{v}");
    assert_eq!(v["error"]["data"]["timeoutMs"], DEADLINE_MS, "{v}");
    assert_eq!(v["error"]["data"]["kind"], "upstream-timeout", "{v}");
    // the answer came at the deadline, not when the stalled backend would have answered
    assert!(took < Duration::from_millis(STALL_MS / 4), "took {took:?}");
    assert!(took >= Duration::from_millis(DEADLINE_MS), "took {took:?}");
}

#[tokio::test]
async fn a_bridged_call_of_a_legacy_client_ends_at_the_routes_deadline() {
    let modern = MockServer::start("m").await;
    let gw = Gateway::start(&format!(
        "pools:\n  modern: {{ era: modern, backends: [{}] }}\nroutes:\n  - {{ path: /mcp, pool: modern, mode: stateful, limits: {{ timeout-ms: {DEADLINE_MS} }} }}\n",
        modern.addr
    ))
    .await;
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"9"}}}"#;
    let resp = Request::post("/mcp", init).send(gw.addr).await;
    assert_eq!(resp.status(), 200, "{}", resp.text());
    let sid = resp
        .head
        .header("mcp-session-id")
        .expect("a session")
        .to_owned();
    let in_session = |body: String| {
        Request::post("/mcp", body)
            .header("Mcp-Session-Id", &sid)
            .header("MCP-Protocol-Version", "2025-06-18")
    };
    let note = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    assert_eq!(in_session(note.into()).send(gw.addr).await.status(), 202);
    // a quick call goes through: the deadline bounds, it does not refuse
    let quick = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "slow", "arguments": {"ms": 1}}});
    let resp = in_session(quick.to_string()).send(gw.addr).await;
    assert_eq!(resp.tool_text(), "m", "{}", resp.text());
    let started = Instant::now();
    let resp = in_session(stall(2).to_string()).send(gw.addr).await;
    let took = started.elapsed();
    assert_eq!(resp.status(), 200, "{}", resp.text());
    assert_past_deadline(&resp.json(), 2, "forward", took);
    // the session goes on
    let again = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "slow", "arguments": {"ms": 1}}});
    let resp = in_session(again.to_string()).send(gw.addr).await;
    assert_eq!(resp.tool_text(), "m", "{}", resp.text());
}

#[tokio::test]
async fn a_modern_call_on_a_legacy_backend_ends_at_the_routes_deadline() {
    let legacy = MockServer::legacy("l", 0, "2025-11-25").await;
    let gw = Gateway::start(&format!(
        "pools:\n  p: {{ era: legacy, backends: [{}] }}\nroutes:\n  - {{ path: /mcp, pool: p, mode: stateless, limits: {{ timeout-ms: {DEADLINE_MS} }} }}\n",
        legacy.addr
    ))
    .await;
    let modern = |id: u64, ms: u64| {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "slow", "arguments": {"ms": ms}, "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"}}}});
        Request::post("/mcp", body.to_string())
            .header("MCP-Protocol-Version", "2026-07-28")
            .header("Mcp-Method", "tools/call")
            .header("Mcp-Name", "slow")
    };
    let resp = modern(1, 1).send(gw.addr).await;
    assert_eq!(resp.tool_text(), "l", "{}", resp.text());
    let started = Instant::now();
    let resp = modern(2, STALL_MS).send(gw.addr).await;
    let took = started.elapsed();
    assert_eq!(resp.status(), 200, "{}", resp.text());
    assert_past_deadline(&resp.json(), 2, "reverse", took);
    // closing its answer stream does not stop a legacy server's tool: the call is cancelled
    // the legacy way, in its backend session
    assert_eventually!(
        Duration::from_secs(10),
        legacy.count_method("notifications/cancelled") > 0,
        "a notifications/cancelled reached the backend"
    );
    let resp = modern(3, 1).send(gw.addr).await;
    assert_eq!(resp.tool_text(), "l", "{}", resp.text());
}
