//! Issue 60: on an `auto` route, a 2026-07-28 body that comes without the
//! `MCP-Protocol-Version` header takes the path the same body with the header takes. To a
//! pool of legacy backends it goes through the reverse era bridge (before, the session handler
//! sent it to a legacy backend as it came, which refused it for want of a session). (Its
//! cache: `cache/auto_route.rs`; its task routing: `task_requests.rs`.)

use mcp_gateway_tests::{Gateway, MockServer, Request};
use serde_json::json;

#[tokio::test]
async fn a_modern_call_without_the_version_header_to_legacy_backends_is_bridged() {
    let legacy = MockServer::legacy("l", 0, "2025-11-25").await;
    let gw = Gateway::start(&format!(
        "pools:\n  p: {{ era: legacy, backends: [{}] }}\nroutes:\n  - {{ path: /mcp, pool: p, mode: auto }}\n",
        legacy.addr
    ))
    .await;
    let body = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
        "params": {"name": "whoami", "arguments": {}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"}}}});
    let resp = Request::post("/mcp", body.to_string())
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", "whoami")
        .send(gw.addr)
        .await;
    assert_eq!(resp.status(), 200, "{}", resp.text());
    assert_eq!(resp.tool_text(), "l", "{}", resp.text());
    assert_eq!(resp.json()["id"], 4, "{}", resp.text());
    assert!(
        legacy.sessions().initializes() >= 1,
        "the bridge opened a backend session for it"
    );
}
