//! Issue 23: the cache hints on cacheable answers of the reverse era bridge (2026-07-28 clients
//! on legacy backends, with the Rust legacy mock): `ttlMs: 0`, `cacheScope: "private"` unless
//! `bridge.cache-hints` says otherwise; a configured `public` scope and `ttl-ms` on a route
//! without `auth`, and still `private` on a route with `auth` (answers may differ per principal).

use mcp_gateway_tests::auth::sha256_hex;
use mcp_gateway_tests::harness::unique_temp_path;
use mcp_gateway_tests::{Gateway, MockServer, Request};
use serde_json::{json, Value};

fn tools_list(id: u64) -> Request {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }}});
    Request::post("/mcp", body.to_string())
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/list")
}

fn hints(v: &Value) -> (Value, Value) {
    (
        v["result"]["ttlMs"].clone(),
        v["result"]["cacheScope"].clone(),
    )
}

#[tokio::test]
async fn bridged_lists_are_private_unless_configured_and_private_again_with_auth() {
    let mock = MockServer::legacy("b1", 0, "2025-11-25").await;
    let pools = format!(
        "pools:\n  p: {{ era: legacy, backends: [{}] }}\nroutes: [ {{ path: /mcp, pool: p, mode: stateless }} ]\n",
        mock.addr
    );
    let gw = Gateway::start(&pools).await;
    let v = tools_list(1).send(gw.addr).await.json();
    assert_eq!(hints(&v), (json!(0), json!("private")), "{v}");
    drop(gw);

    let public = "bridge: { cache-hints: { scope: public, ttl-ms: 30000 } }\n";
    let gw = Gateway::start(&format!("{public}{pools}")).await;
    let v = tools_list(2).send(gw.addr).await.json();
    assert_eq!(hints(&v), (json!(30000), json!("public")), "{v}");
    drop(gw);

    let dir = unique_temp_path("mcpgw-cache-hints");
    std::fs::create_dir_all(&dir).unwrap();
    let keys = dir.join("api-keys.txt");
    std::fs::write(&keys, format!("{} one tools\n", sha256_hex(b"k-one"))).unwrap();
    let auth = mcp_gateway_tests::auth::auth_yaml("http://127.0.0.1/mcp").replace(
        "  jwt:",
        &format!("  api-keys: {{ file: {} }}\n  jwt:", keys.display()),
    );
    let gw = Gateway::start(&format!("{public}{auth}{pools}")).await;
    let resp = tools_list(3)
        .header("X-Api-Key", "k-one")
        .send(gw.addr)
        .await;
    let v = resp.json();
    assert_eq!(
        hints(&v),
        (json!(30000), json!("private")),
        "a principal's answer is never public: {v}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// Issue 50: the bridge's answers with hints are cached as a 2026-07-28 server's would be:
/// a second list is answered at the gateway and the legacy backend is asked once; without
/// hints (`ttlMs: 0`) every list reaches it.
#[tokio::test]
async fn bridged_answers_with_hints_are_answered_from_the_cache() {
    let mock = MockServer::legacy("b1", 0, "2025-11-25").await;
    let pools = format!(
        "pools:\n  p: {{ era: legacy, backends: [{}] }}\nroutes: [ {{ path: /mcp, pool: p, mode: stateless }} ]\n",
        mock.addr
    );
    let public = "bridge: { cache-hints: { scope: public, ttl-ms: 30000 } }\n";
    let gw = Gateway::start(&format!("{public}{pools}")).await;
    for (id, how) in [(1, "miss"), (2, "hit"), (3, "hit")] {
        let resp = tools_list(id).send(gw.addr).await;
        assert_eq!(
            resp.head.header("mcp-gateway-cache"),
            Some(how),
            "{}",
            resp.text()
        );
        let v = resp.json();
        assert_eq!(v["id"], id);
        assert!(v["result"]["tools"].is_array(), "{v}");
        assert!(v["result"]["ttlMs"].as_u64().unwrap() <= 30_000, "{v}");
    }
    assert_eq!(
        mock.count_method("tools/list"),
        1,
        "the legacy backend listed once"
    );
    drop(gw);

    let gw = Gateway::start(&pools).await;
    for id in [4, 5] {
        let resp = tools_list(id).send(gw.addr).await;
        assert_eq!(resp.head.header("mcp-gateway-cache"), Some("bypass"));
    }
    assert_eq!(mock.count_method("tools/list"), 3);
}
