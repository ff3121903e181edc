//! 2026-07-28 requests on legacy backends through the reverse era bridge (issue 23), with the
//! Rust legacy mock (`MockServer::legacy`, sessions in memory, 404 for an unknown one): one
//! pooled backend session per (backend, principal, initialize), reused; `_meta` required;
//! answers made modern; `server/discover` from the backend's initialize; log level set once;
//! a forgotten session reopened; idle sessions closed upstream; a lost call is -32013. (As one
//! principal, `k-one`: an anonymous caller's call has a session of its own, `pooled_shares.rs`.)

use mcp_gateway_tests::auth::sha256_hex;
use mcp_gateway_tests::{assert_eventually, Gateway, MockServer, Request};
use serde_json::{json, Value};
use std::time::Duration;

pub(crate) const V: &str = "2025-11-25";

/// `auth` with the API keys of two principals, `k-one` and `k-two`: pooled sessions are a
/// principal's (an anonymous caller's call gets a backend session of its own,
/// `pooled_shares.rs`).
pub(crate) fn keys_yaml() -> String {
    let dir = mcp_gateway_tests::harness::unique_temp_path("mcpgw-pool-keys");
    std::fs::create_dir_all(&dir).unwrap();
    let keys = dir.join("api-keys.txt");
    let line = |key: &str, name: &str| format!("{} {name} tools\n", sha256_hex(key.as_bytes()));
    std::fs::write(&keys, line("k-one", "one") + &line("k-two", "two")).unwrap();
    mcp_gateway_tests::auth::auth_yaml("http://127.0.0.1/mcp").replace(
        "  jwt:",
        &format!("  api-keys: {{ file: {} }}\n  jwt:", keys.display()),
    )
}

/// A stateless route on `backends`, anonymous.
pub(crate) fn anonymous(backends: &[&MockServer], extra: &str) -> String {
    let list: Vec<String> = backends.iter().map(|m| m.addr.to_string()).collect();
    format!(
        "{extra}pools:\n  p: {{ era: legacy, backends: [{}] }}\nroutes: [ {{ path: /mcp, pool: p, mode: stateless }} ]\n",
        list.join(", ")
    )
}

/// The same with the two principals' API keys.
pub(crate) fn config(backends: &[&MockServer], extra: &str) -> String {
    anonymous(backends, &format!("{}{extra}", keys_yaml()))
}

pub(crate) fn meta(client: &str, level: Option<&str>) -> Value {
    let mut m = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": client, "version": "1"},
        "progressToken": "p-1",
    });
    if let Some(l) = level {
        m["io.modelcontextprotocol/logLevel"] = json!(l);
    }
    m
}

/// A 2026-07-28 request with matching headers, as principal `k-one`.
fn modern(id: u64, method: &str, params: Value, meta: Value) -> Request {
    modern_anonymous(id, method, params, meta).header("X-Api-Key", "k-one")
}

/// A 2026-07-28 request with matching headers and no credential.
pub(crate) fn modern_anonymous(id: u64, method: &str, mut params: Value, meta: Value) -> Request {
    params["_meta"] = meta;
    let name = params
        .get("name")
        .or_else(|| params.get("uri"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let mut r = Request::post("/mcp", body.to_string())
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", method);
    if let Some(n) = name {
        r = r.header("Mcp-Name", &n);
    }
    r
}

fn call(id: u64, tool: &str, client: &str) -> Request {
    modern(
        id,
        "tools/call",
        json!({"name": tool, "arguments": {}}),
        meta(client, None),
    )
}

/// A `tools/call` of `tool` with `arguments`, without a credential.
pub(crate) fn call_anonymous(id: u64, tool: &str, arguments: Value, client: &str) -> Request {
    modern_anonymous(
        id,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
        meta(client, None),
    )
}

pub(crate) fn text(v: &Value) -> String {
    v["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn modern_calls_on_legacy_backends_reuse_one_pooled_session_per_backend() {
    let (a, b) = (
        MockServer::legacy("a", 0, V).await,
        MockServer::legacy("b", 0, V).await,
    );
    let gw = Gateway::start(&config(&[&a, &b], "")).await;
    let mut counts = Vec::new();
    for i in 0..12 {
        let resp = call(i, "count", "c1").send(gw.addr).await;
        assert_eq!(resp.status(), 200, "{}", resp.text());
        let v = resp.json();
        assert_eq!(v["id"], i, "the client's id comes back: {v}");
        assert_eq!(v["result"]["resultType"], "complete", "{v}");
        let info = &v["result"]["_meta"]["io.modelcontextprotocol/serverInfo"];
        assert!(info["name"] == "a" || info["name"] == "b", "{v}");
        counts.push(text(&v).parse::<u64>().unwrap());
    }
    // one session per backend: each backend's counter went 1..=6
    assert_eq!(a.sessions().initializes(), 1, "one pooled session on a");
    assert_eq!(b.sessions().initializes(), 1, "one pooled session on b");
    counts.sort();
    assert_eq!(
        counts,
        [1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6],
        "balanced over both"
    );
    // another client (another clientInfo) gets sessions of its own
    let resp = call(99, "count", "c2").send(gw.addr).await;
    assert_eq!(text(&resp.json()), "1");
    assert_eq!(a.sessions().initializes() + b.sessions().initializes(), 3);
    assert_eq!(gw.metric("mcpgw_pooled_sessions{pool=\"p\"}").await, 3.0);
    assert_eq!(
        gw.metric("mcpgw_pooled_session_events_total{event=\"opened\",pool=\"p\"}")
            .await,
        3.0
    );
    assert_eq!(
        gw.metric("mcpgw_pooled_session_events_total{event=\"reused\",pool=\"p\"}")
            .await,
        10.0
    );
    // concurrent calls share the sessions (no new initialize), several in flight on one
    let addr = gw.addr;
    let calls: Vec<_> = (0..8)
        .map(|i| {
            let r = modern(
                100 + i,
                "tools/call",
                json!({"name": "sleep", "arguments": {"ms": 300}}),
                meta("c1", None),
            );
            tokio::spawn(async move { r.send(addr).await })
        })
        .collect();
    for c in calls {
        let resp = c.await.unwrap();
        assert_eq!(resp.status(), 200, "{}", resp.text());
    }
    assert_eq!(a.sessions().initializes() + b.sessions().initializes(), 3);
    assert!(
        a.max_concurrent() >= 2 && b.max_concurrent() >= 2,
        "several requests in flight on one pooled session"
    );
}

#[tokio::test]
async fn the_envelope_is_required_and_reserved_meta_keys_stay_at_the_gateway() {
    let a = MockServer::legacy("a", 0, V).await;
    a.set_capture(true);
    let gw = Gateway::start(&config(&[&a], "")).await;
    let body = r#"{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
    let resp = Request::post("/mcp", body)
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/list")
        .header("X-Api-Key", "k-one")
        .send(gw.addr)
        .await;
    assert_eq!(resp.status(), 400, "{}", resp.text());
    let v = resp.json();
    assert_eq!(v["id"], 5);
    assert_eq!(v["error"]["code"], -32602, "{v}");
    assert!(v["error"]["data"]["detail"]
        .as_str()
        .unwrap()
        .contains("clientCapabilities"));
    assert_eq!(a.sessions().initializes(), 0, "nothing opened");
    let resp = modern(6, "tools/list", json!({}), meta("c", None))
        .send(gw.addr)
        .await;
    let v = resp.json();
    assert_eq!(v["result"]["tools"][0]["name"], "whoami", "{v}");
    assert_eq!(v["result"]["ttlMs"], 0);
    assert_eq!(v["result"]["cacheScope"], "private");
    let seen: Vec<Value> = a
        .requests()
        .iter()
        .map(|r| serde_json::from_slice(&r.body).unwrap())
        .collect();
    let init = seen.iter().find(|m| m["method"] == "initialize").unwrap();
    assert_eq!(init["params"]["clientInfo"]["name"], "c", "{init}");
    assert_eq!(init["params"]["protocolVersion"], "2025-11-25");
    let list = seen.iter().find(|m| m["method"] == "tools/list").unwrap();
    assert_eq!(
        list["params"]["_meta"],
        json!({"progressToken": "p-1"}),
        "reserved keys removed, progressToken kept: {list}"
    );
    assert_ne!(list["id"], 6, "the gateway's own id upstream");
    let with_session = a
        .requests()
        .iter()
        .filter(|r| r.head.header("mcp-session-id").is_some())
        .count();
    assert_eq!(with_session, 2, "initialized + tools/list in the session");
}

#[tokio::test]
async fn server_discover_is_answered_from_the_backends_initialize() {
    let a = MockServer::legacy("a", 0, V).await;
    let gw = Gateway::start(&config(&[&a], "")).await;
    let resp = modern(1, "server/discover", json!({}), meta("c", None))
        .send(gw.addr)
        .await;
    assert_eq!(resp.status(), 200, "{}", resp.text());
    let v = resp.json()["result"].clone();
    assert_eq!(v["supportedVersions"], json!(["2026-07-28"]), "{v}");
    assert_eq!(v["capabilities"], json!({"tools": {}, "logging": {}}));
    assert_eq!(
        v["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "a"
    );
    assert_eq!(v["resultType"], "complete");
    assert_eq!(v["cacheScope"], "private");
}

#[tokio::test]
async fn a_log_level_becomes_one_set_level_on_the_pooled_session() {
    let a = MockServer::legacy("a", 0, V).await;
    a.set_capture(true);
    let gw = Gateway::start(&config(&[&a], "")).await;
    for i in 0..3 {
        let resp = modern(
            i,
            "tools/call",
            json!({"name": "log_level", "arguments": {}}),
            meta("c", Some("debug")),
        )
        .send(gw.addr)
        .await;
        assert_eq!(text(&resp.json()), "debug");
    }
    assert_eq!(a.count_method("logging/setLevel"), 1, "set once");
    let resp = modern(
        9,
        "tools/call",
        json!({"name": "log_level", "arguments": {}}),
        meta("c", Some("error")),
    )
    .send(gw.addr)
    .await;
    assert_eq!(text(&resp.json()), "error");
    assert_eq!(
        a.count_method("logging/setLevel"),
        2,
        "and again when it differs"
    );
}

#[tokio::test]
async fn a_session_the_backend_forgot_is_reopened_and_the_request_repeated() {
    let a = MockServer::legacy("a", 0, V).await;
    let gw = Gateway::start(&config(&[&a], "")).await;
    let sid = text(&call(1, "session_id", "c").send(gw.addr).await.json());
    assert!(a.sessions().knows(&sid));
    // the backend forgets it (a DELETE from elsewhere stands in for an expiry or a restart)
    let del = Request::bare("DELETE", "/mcp")
        .header("Mcp-Session-Id", &sid)
        .send(a.addr)
        .await;
    assert_eq!(del.status(), 200);
    let resp = call(2, "count", "c").send(gw.addr).await;
    assert_eq!(resp.status(), 200, "{}", resp.text());
    assert_eq!(text(&resp.json()), "1", "a new session: {}", resp.text());
    assert_eq!(a.sessions().initializes(), 2);
    assert_eq!(
        gw.metric("mcpgw_pooled_session_events_total{event=\"dropped\",pool=\"p\"}")
            .await,
        1.0
    );
}

#[tokio::test]
async fn an_idle_pooled_session_is_closed_with_a_delete_upstream() {
    let a = MockServer::legacy("a", 0, V).await;
    let extra = "bridge:\n  pooled-sessions: { idle-s: 1 }\n";
    let gw = Gateway::start(&config(&[&a], extra)).await;
    let resp = call(1, "count", "c").send(gw.addr).await;
    assert_eq!(text(&resp.json()), "1");
    assert_eq!(a.sessions().live(), 1);
    assert_eventually!(
        Duration::from_secs(5),
        a.sessions().live() == 0,
        "the pooled session was deleted upstream"
    );
    assert_eq!(
        gw.metric("mcpgw_pooled_session_events_total{event=\"expired\",pool=\"p\"}")
            .await,
        1.0
    );
    assert_eq!(gw.metric("mcpgw_pooled_sessions{pool=\"p\"}").await, 0.0);
}

#[tokio::test]
async fn the_bound_per_backend_closes_the_least_recently_used_idle_session() {
    let a = MockServer::legacy("a", 0, V).await;
    // one principal's share on the backend: half of 4
    let extra = "bridge:\n  pooled-sessions: { max-per-backend: 4 }\n";
    let gw = Gateway::start(&config(&[&a], extra)).await;
    for (i, client) in ["c1", "c2", "c3"].iter().enumerate() {
        let resp = call(i as u64, "count", client).send(gw.addr).await;
        assert_eq!(text(&resp.json()), "1");
    }
    assert_eq!(a.sessions().initializes(), 3);
    assert_eventually!(Duration::from_secs(5), a.sessions().live() == 2, "evicted");
    assert_eq!(
        gw.metric("mcpgw_pooled_session_events_total{event=\"evicted\",pool=\"p\"}")
            .await,
        1.0
    );
}

#[tokio::test]
async fn a_call_whose_backend_connection_breaks_is_not_repeated() {
    let a = MockServer::legacy("a", 0, V).await;
    let gw = Gateway::start(&config(&[&a], "")).await;
    let resp = call(1, "drop_connection", "c").send(gw.addr).await;
    let v = resp.json();
    assert_eq!(v["error"]["code"], -32013, "{v}");
    assert_eq!(v["id"], 1);
    // the next call works on a new session
    let resp = call(2, "count", "c").send(gw.addr).await;
    assert_eq!(resp.status(), 200, "{}", resp.text());
}

/// A backend killed as the last chunk of an answer went (or one that closes the stream) ends
/// the event stream well framed but without the response: the outcome is unknown, -32013, as
/// when the connection breaks (before this, -32035 "without a JSON-RPC response").
#[tokio::test]
async fn an_event_stream_that_ends_before_its_response_is_an_unknown_outcome() {
    let a = MockServer::legacy("a", 0, V).await;
    let gw = Gateway::start(&config(&[&a], "")).await;
    let resp = call(1, "sse_without_result", "c").send(gw.addr).await;
    let v = resp.json();
    assert_eq!(v["error"]["code"], -32013, "{}", resp.text());
    assert_eq!(v["id"], 1);
    assert_eq!(v["error"]["data"]["outcome"], "unknown", "{v}");
    let resp = call(2, "count", "c").send(gw.addr).await;
    assert_eq!(resp.status(), 200, "{}", resp.text());
}

#[tokio::test]
async fn two_principals_with_the_same_meta_never_share_a_pooled_session() {
    let a = MockServer::legacy("a", 0, V).await;
    let gw = Gateway::start(&config(&[&a], "")).await;
    let mut seen = Vec::new();
    for (i, key) in ["k-one", "k-two", "k-one", "k-two"].iter().enumerate() {
        let resp = call_anonymous(i as u64, "session_id", json!({}), "same")
            .header("X-Api-Key", key)
            .send(gw.addr)
            .await;
        assert_eq!(resp.status(), 200, "{}", resp.text());
        seen.push(text(&resp.json()));
    }
    assert_eq!(seen[0], seen[2], "one principal reuses its session");
    assert_eq!(seen[1], seen[3]);
    assert_ne!(seen[0], seen[1], "two principals never share one");
    assert_eq!(a.sessions().initializes(), 2);
}
