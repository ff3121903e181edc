//! Issue 31, item 7: a backend session id the gateway opened for one principal (a pooled
//! session of the reverse bridge on a FastMCP 1.30.0 backend, its id revealed by a tool) does
//! not open that session to anyone else through a stateless route of the same pool: on a
//! stateless route the client's `Mcp-Session-Id` never reaches a backend (removed on the fast
//! path as on every gateway-driven path), so an anonymous POST, GET or DELETE with it, or another
//! key's, runs outside her session and cannot end it.

use mcp_gateway_tests::auth::sha256_hex;
use mcp_gateway_tests::{Gateway, PythonPeer, Request};
use serde_json::{json, Value};

/// A 2026-07-28 `tools/call` (the reverse bridge takes it into a pooled backend session).
fn modern(path: &str, id: u64, tool: &str) -> Request {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
    "name": tool, "arguments": {}, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "alice-app", "version": "1"},
    }}});
    Request::post(path, body.to_string())
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", tool)
}

/// A legacy `tools/call` in the backend session `sid` (what an attacker holding the id sends).
fn legacy_in(path: &str, id: u64, tool: &str, sid: &str) -> Request {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": {}}});
    Request::post(path, body.to_string())
        .header("MCP-Protocol-Version", "2025-11-25")
        .header("Mcp-Session-Id", sid)
}

fn text(v: &Value) -> String {
    v["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn a_leaked_pooled_backend_session_id_opens_nothing_on_a_stateless_route() {
    let peer =
        PythonPeer::start("mcp1", "pooled_server.py", &["--port", "0", "--name", "b1"]).await;
    let dir = mcp_gateway_tests::harness::unique_temp_path("mcpgw-leak-keys");
    std::fs::create_dir_all(&dir).unwrap();
    let keys = dir.join("api-keys.txt");
    let line = |key: &str, name: &str| format!("{} {name} tools\n", sha256_hex(key.as_bytes()));
    std::fs::write(&keys, line("k-alice", "alice") + &line("k-bob", "bob")).unwrap();
    let auth = mcp_gateway_tests::auth::auth_yaml("http://127.0.0.1/mcp").replace(
        "  jwt:",
        &format!("  api-keys: {{ file: {} }}\n  jwt:", keys.display()),
    );
    let yaml = format!(
        "{auth}pools:\n  p: {{ era: legacy, backends: [{}] }}\nroutes:\n  \
         - {{ path: /mcp, pool: p, mode: stateless }}\n  \
         - {{ path: /open, upstream-path: /mcp, pool: p, mode: stateless, auth: none }}\n",
        peer.addr()
    );
    let gw = Gateway::start(&yaml).await;
    let alice = |id: u64, tool: &str| modern("/mcp", id, tool).header("X-Api-Key", "k-alice");
    let first = alice(1, "count").send(gw.addr).await;
    assert_eq!(text(&first.json()), "1", "{}", first.text());
    // the backend session id the gateway opened for alice, as a tool may reveal it
    let sid = text(&alice(2, "session_id").send(gw.addr).await.json());
    assert!(sid.len() >= 16 && sid != "none", "{sid}");

    // anonymous, on the other stateless route of the pool: POST, GET and DELETE with her id
    let anon = legacy_in("/open", 3, "count", &sid).send(gw.addr).await;
    assert_ne!(
        text(&anon.json()),
        "2",
        "ran in alice's session: {}",
        anon.text()
    );
    assert!(anon.status() >= 400, "{} {}", anon.status(), anon.text());
    let get = Request::bare("GET", "/open")
        .header("Accept", "text/event-stream")
        .header("Mcp-Session-Id", &sid)
        .send(gw.addr)
        .await;
    assert!(get.status() >= 400, "{} {}", get.status(), get.text());
    let delete = Request::bare("DELETE", "/open")
        .header("Mcp-Session-Id", &sid)
        .send(gw.addr)
        .await;
    assert!(
        delete.status() >= 400,
        "{} {}",
        delete.status(),
        delete.text()
    );
    // another key, on alice's own route
    let bob = legacy_in("/mcp", 4, "count", &sid)
        .header("X-Api-Key", "k-bob")
        .send(gw.addr)
        .await;
    assert_ne!(
        text(&bob.json()),
        "2",
        "ran in alice's session: {}",
        bob.text()
    );
    let bob_delete = Request::bare("DELETE", "/mcp")
        .header("Mcp-Session-Id", &sid)
        .header("X-Api-Key", "k-bob")
        .send(gw.addr)
        .await;
    assert!(bob_delete.status() >= 400, "{}", bob_delete.text());

    // alice's session is untouched: the same backend session, its counter where she left it
    let again = alice(5, "count").send(gw.addr).await;
    assert_eq!(text(&again.json()), "2", "{}", again.text());
    assert_eq!(
        text(&alice(6, "session_id").send(gw.addr).await.json()),
        sid
    );
    std::fs::remove_dir_all(&dir).ok();
}
