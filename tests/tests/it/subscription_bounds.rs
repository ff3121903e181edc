//! Issue 31, items 5 and 10, with Rust mocks (real peers: `real_peers_listen.rs`):
//! - a session's subscriptions are bounded (`sessions.max-subscriptions` URIs, each at most
//!   `sessions.max-subscription-uri-bytes`): a subscribe over them gets -32036 with its id,
//!   `data.reason` and `data.limit`, nothing is kept and the backend never sees it; with the
//!   memory store and with Redis (the settings live there);
//! - a bridged session's upstream listen never passes `max-body-bytes`: the subscribe that would
//!   make it is refused (-32036 `listen-too-large`);
//! - one principal holds at most `sessions.max-per-principal` sessions (-32016);
//! - a listen filter naming a URI an `authz` rule denies is refused (403 -32024) before it
//!   leaves the gateway, passed through to a 2026-07-28 backend (a spy) or held by the reverse
//!   bridge; a listen filter the reverse bridge holds is bounded like a session's subscriptions.

use mcp_gateway_tests::auth::sha256_hex;
use mcp_gateway_tests::mock::modern::ModernMock;
use mcp_gateway_tests::redis::RedisServer;
use mcp_gateway_tests::{open_session, Gateway, MockServer, Request};
use serde_json::{json, Value};

const V: &str = "2025-11-25";

fn subscribe(sid: &str, id: u64, uri: &str) -> Request {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "resources/subscribe",
        "params": {"uri": uri}});
    Request::post("/mcp", body.to_string())
        .header("Mcp-Session-Id", sid)
        .header("MCP-Protocol-Version", V)
}

fn unsubscribe(sid: &str, id: u64, uri: &str) -> Request {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "resources/unsubscribe",
        "params": {"uri": uri}});
    Request::post("/mcp", body.to_string())
        .header("Mcp-Session-Id", sid)
        .header("MCP-Protocol-Version", V)
}

fn refused(v: &Value, id: u64, reason: &str, limit: u64) {
    assert_eq!(v["id"], id, "{v}");
    assert_eq!(v["error"]["code"], -32036, "{v}");
    assert_eq!(v["error"]["data"]["kind"], "subscription-limit", "{v}");
    assert_eq!(v["error"]["data"]["reason"], reason, "{v}");
    assert_eq!(v["error"]["data"]["limit"], limit, "{v}");
}

/// `sessions_extra`: more `sessions:` lines (the store).
async fn bounded_in_one_session(sessions_extra: &str) {
    let mock = MockServer::legacy("a", 0, V).await;
    let yaml = format!(
        "sessions:\n  max-subscriptions: 2\n  max-subscription-uri-bytes: 32\n{sessions_extra}\
         pools:\n  p: {{ backends: [{}] }}\nroutes:\n  - {{ path: /mcp, mode: stateful, pool: p }}\n",
        mock.addr
    );
    let gw = Gateway::start(&yaml).await;
    let sid = open_session(gw.addr).await;
    for (id, uri) in [(1, "note://a"), (2, "note://b"), (3, "note://a")] {
        let ok = subscribe(&sid, id, uri).send(gw.addr).await;
        assert_eq!(ok.status(), 200, "{}", ok.text());
        assert!(ok.json()["result"].is_object(), "{}", ok.text());
    }
    let sent = mock.count_method("resources/subscribe");
    assert_eq!(
        sent, 3,
        "the three subscribes within the bound went upstream"
    );
    let third = subscribe(&sid, 4, "note://c").send(gw.addr).await;
    assert_eq!(third.status(), 200, "{}", third.text());
    refused(&third.json(), 4, "too-many", 2);
    let long = format!("note://{}", "x".repeat(40));
    unsubscribe(&sid, 5, "note://b").send(gw.addr).await;
    let too_long = subscribe(&sid, 6, &long).send(gw.addr).await;
    refused(&too_long.json(), 6, "uri-too-long", 32);
    assert_eq!(
        mock.count_method("resources/subscribe"),
        sent,
        "a refused subscribe never reaches the backend"
    );
    // room again after the unsubscribe: the bound counts what is kept
    let again = subscribe(&sid, 7, "note://c").send(gw.addr).await;
    assert!(again.json()["result"].is_object(), "{}", again.text());
    let full = subscribe(&sid, 8, "note://d").send(gw.addr).await;
    refused(&full.json(), 8, "too-many", 2);
}

#[tokio::test]
async fn a_sessions_subscriptions_are_bounded_in_count_and_uri_length() {
    bounded_in_one_session("").await;
}

#[tokio::test]
async fn a_sessions_subscriptions_are_bounded_with_the_redis_store() {
    let redis = RedisServer::start().await;
    let store = format!(
        "  store: redis\n  redis: {{ urls: [\"{}\"], key-prefix: \"subs:\" }}\n",
        redis.url()
    );
    bounded_in_one_session(&store).await;
}

#[tokio::test]
async fn a_bridged_sessions_listen_request_never_passes_max_body_bytes() {
    let modern = ModernMock::start("m1").await;
    // each URI adds ~1 KiB to the listen request; 4 KiB of body allowed
    let yaml = format!(
        "max-body-bytes: 4096\nsessions:\n  max-subscription-uri-bytes: 1100\n\
         pools:\n  m: {{ era: modern, backends: [{}] }}\nroutes:\n  - {{ path: /mcp, mode: stateful, pool: m }}\n",
        modern.addr
    );
    let gw = Gateway::start(&yaml).await;
    let sid = open_session(gw.addr).await;
    let uri = |i: u64| format!("note://{i}/{}", "x".repeat(1000));
    let mut kept = 0;
    let refusal = loop {
        let v = subscribe(&sid, kept + 1, &uri(kept))
            .send(gw.addr)
            .await
            .json();
        if v.get("error").is_some() {
            break v;
        }
        assert!(v["result"].is_object(), "{v}");
        kept += 1;
        assert!(kept < 10, "never refused");
    };
    assert!(kept >= 2, "{kept} kept");
    refused(&refusal, kept + 1, "listen-too-large", 4096);
}

#[tokio::test]
async fn one_principal_holds_at_most_max_per_principal_sessions() {
    let mock = MockServer::legacy("a", 0, V).await;
    let dir = mcp_gateway_tests::harness::unique_temp_path("mcpgw-subs-keys");
    std::fs::create_dir_all(&dir).unwrap();
    let keys = dir.join("api-keys.txt");
    let line = |key: &str, name: &str| format!("{} {name} tools\n", sha256_hex(key.as_bytes()));
    std::fs::write(&keys, line("k-one", "one") + &line("k-two", "two")).unwrap();
    let auth = mcp_gateway_tests::auth::auth_yaml("http://127.0.0.1/mcp").replace(
        "  jwt:",
        &format!("  api-keys: {{ file: {} }}\n  jwt:", keys.display()),
    );
    let yaml = format!(
        "{auth}sessions:\n  max-per-principal: 2\npools:\n  p: {{ backends: [{}] }}\n\
         routes:\n  - {{ path: /mcp, mode: stateful, pool: p }}\n",
        mock.addr
    );
    let gw = Gateway::start(&yaml).await;
    let init = |key: &str| {
        let body = r#"{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
        Request::post("/mcp", body).header("X-Api-Key", key)
    };
    for _ in 0..2 {
        let ok = init("k-one").send(gw.addr).await;
        assert_eq!(ok.status(), 200, "{}", ok.text());
    }
    let third = init("k-one").send(gw.addr).await;
    assert_eq!(third.status(), 503, "{}", third.text());
    let v = third.json();
    assert_eq!(v["id"], 7, "{v}");
    assert_eq!(v["error"]["code"], -32016, "{v}");
    assert_eq!(v["error"]["data"]["limit"], 2, "{v}");
    // another principal is not held to the first one's count
    assert_eq!(init("k-two").send(gw.addr).await.status(), 200);
    std::fs::remove_dir_all(&dir).ok();
}

fn listen(path: &str, id: u64, uris: &[&str]) -> Request {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen",
    "params": {"notifications": {"resourceSubscriptions": uris}, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }}});
    Request::post(path, body.to_string())
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "subscriptions/listen")
}

/// API keys `k-user` (scope tools) and `k-admin` (tools admin), and a route rule: `admin://*`
/// resources need `admin`.
fn authz_yaml(pool: &str, dir: &std::path::Path) -> String {
    std::fs::create_dir_all(dir).unwrap();
    let keys = dir.join("api-keys.txt");
    let line = |key: &str, rest: &str| format!("{} {rest}\n", sha256_hex(key.as_bytes()));
    let lines = line("k-user", "user tools") + &line("k-admin", "admin tools admin");
    std::fs::write(&keys, lines).unwrap();
    let auth = mcp_gateway_tests::auth::auth_yaml("http://127.0.0.1/mcp").replace(
        "  jwt:",
        &format!("  api-keys: {{ file: {} }}\n  jwt:", keys.display()),
    );
    format!(
        "{auth}sessions:\n  max-subscriptions: 3\npools:\n  p: {pool}\nroutes:\n  \
         - path: /mcp\n    pool: p\n    mode: stateless\n    authz:\n      \
         - {{ match: {{ method: \"resources/*\", name: \"admin://*\" }}, require: {{ scope: admin }} }}\n"
    )
}

fn listens(spy: &ModernMock) -> usize {
    let listen = |r: &Value| r["method"] == "subscriptions/listen";
    spy.requests().iter().filter(|r| listen(r)).count()
}

#[tokio::test]
async fn a_passed_through_listen_naming_a_denied_uri_never_leaves_the_gateway() {
    let spy = ModernMock::start("m1").await;
    let dir = mcp_gateway_tests::harness::unique_temp_path("mcpgw-listen-authz");
    let pool = format!("{{ era: modern, backends: [{}] }}", spy.addr);
    let gw = Gateway::start(&authz_yaml(&pool, &dir)).await;
    // allowed: a public URI for the user, the admin URI for the admin key; both go upstream
    let allowed = listen("/mcp", 1, &["public://a"]).header("X-Api-Key", "k-user");
    assert_ne!(allowed.send(gw.addr).await.status(), 403);
    let admin = listen("/mcp", 2, &["admin://secret"]).header("X-Api-Key", "k-admin");
    assert_ne!(admin.send(gw.addr).await.status(), 403);
    assert_eq!(listens(&spy), 2, "the allowed listens reached the backend");
    for (id, uris) in [
        (3, vec!["admin://secret"]),
        (4, vec!["public://a", "ADMIN://secret"]),
        (5, vec!["public://a", "admin://x/../secret"]),
    ] {
        let denied = listen("/mcp", id, &uris)
            .header("X-Api-Key", "k-user")
            .send(gw.addr)
            .await;
        assert_eq!(denied.status(), 403, "{uris:?}: {}", denied.text());
        let v = denied.json();
        assert_eq!(v["id"], id, "{v}");
        assert_eq!(v["error"]["code"], -32024, "{v}");
        assert_eq!(v["error"]["data"]["scope"], "admin", "{v}");
    }
    let undecidable = listen("/mcp", 6, &["admin://\nsecret"])
        .header("X-Api-Key", "k-user")
        .send(gw.addr)
        .await;
    assert_eq!(undecidable.json()["error"]["code"], -32031);
    assert_eq!(listens(&spy), 2, "no denied listen reached the backend");
    std::fs::remove_dir_all(&dir).ok();
}

#[tokio::test]
async fn a_bridged_listen_naming_a_denied_uri_opens_no_backend_session_and_its_filter_is_bounded() {
    let mock = MockServer::legacy("b1", 0, V).await;
    let dir = mcp_gateway_tests::harness::unique_temp_path("mcpgw-listen-bridged");
    let pool = format!("{{ era: legacy, backends: [{}] }}", mock.addr);
    let gw = Gateway::start(&authz_yaml(&pool, &dir)).await;
    let denied = listen("/mcp", 1, &["public://a", "admin://secret"])
        .header("X-Api-Key", "k-user")
        .send(gw.addr)
        .await;
    assert_eq!(denied.status(), 403, "{}", denied.text());
    assert_eq!(denied.json()["error"]["code"], -32024);
    let many = listen(
        "/mcp",
        2,
        &["public://1", "public://2", "public://3", "public://4"],
    )
    .header("X-Api-Key", "k-user")
    .send(gw.addr)
    .await;
    refused(&many.json(), 2, "too-many", 3);
    assert_eq!(
        mock.sessions().initializes(),
        0,
        "no backend session was opened for a refused listen"
    );
    std::fs::remove_dir_all(&dir).ok();
}
