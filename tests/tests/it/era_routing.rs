//! Era-aware balancing with Rust mocks of both eras in one pool: 2026-07-28 requests go only
//! to backends that serve them, new legacy sessions only to backends that keep sessions, and
//! a pool with no backend of the needed era answers -32005.

use mcp_gateway_tests::mock::era::EraMock;
use mcp_gateway_tests::{assert_eventually, open_session, Gateway, MockServer, Request};
use serde_json::Value;
use std::time::Duration;

const V: &str = "2025-11-25";

async fn eras_known(gw: &Gateway, n: usize) -> bool {
    let (_, body) = gw.admin_get("/admin/backends").await;
    let view: Value = serde_json::from_str(&body).unwrap();
    let known = view["pools"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["backends"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["era"].is_string())
        .count();
    known == n
}

/// The era `/admin/backends` shows for the backend at `addr` (`None`: not known yet).
async fn era_of(gw: &Gateway, addr: &str) -> Option<String> {
    let (_, body) = gw.admin_get("/admin/backends").await;
    let view: Value = serde_json::from_str(&body).unwrap();
    view["pools"]
        .as_array()?
        .iter()
        .flat_map(|p| p["backends"].as_array().cloned().unwrap_or_default())
        .find(|b| b["address"] == addr)
        .and_then(|b| b["era"].as_str().map(str::to_owned))
}

fn config(backends: &[&MockServer], mode: &str) -> String {
    config_with(backends, mode, "")
}

fn config_with(backends: &[&MockServer], mode: &str, route_extra: &str) -> String {
    let list: Vec<String> = backends.iter().map(|m| m.addr.to_string()).collect();
    format!(
        "pools:\n  p: {{ backends: [{}] }}\nroutes: [ {{ path: /mcp, pool: p, mode: {mode}{route_extra} }} ]\n",
        list.join(", ")
    )
}

#[tokio::test]
async fn modern_requests_never_reach_a_legacy_backend_and_new_sessions_never_a_modern_one() {
    let legacy = MockServer::legacy("legacy", 0, V).await;
    let modern = MockServer::start("modern").await;
    let gw = Gateway::start(&config(&[&legacy, &modern], "auto")).await;
    assert_eventually!(Duration::from_secs(10), eras_known(&gw, 2).await, "probed");
    for i in 0..20 {
        let resp = Request::tools_call("/mcp", i, "whoami").send(gw.addr).await;
        assert_eq!(resp.tool_text(), "modern", "2026-07-28 call {i}");
    }
    for i in 0..10 {
        let sid = open_session(gw.addr).await;
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami"}}"#;
        let resp = Request::post("/mcp", body)
            .header("Mcp-Session-Id", &sid)
            .header("MCP-Protocol-Version", V)
            .send(gw.addr)
            .await;
        assert_eq!(resp.tool_text(), "legacy", "session {i}");
    }
    let modern_seen_by_legacy = legacy
        .requests()
        .iter()
        .filter(|r| r.head.header("mcp-protocol-version") == Some("2026-07-28"))
        .count();
    assert_eq!(
        modern_seen_by_legacy, 0,
        "no 2026-07-28 request reached the legacy pod"
    );
    assert_eq!(
        modern.count_method("initialize"),
        0,
        "no session opened on the modern pod"
    );
    assert_eq!(legacy.sessions().initializes(), 10);
}

#[tokio::test]
async fn a_2026_request_with_only_legacy_backends_answers_no_backend_of_era() {
    // 2026-07-28 requests, legacy backends only: both stateless paths (pingora's and the
    // gateway-driven one under a deadline)
    let legacy = MockServer::legacy("legacy", 0, V).await;
    for deadline in ["", ", limits: { timeout-ms: 5000 }"] {
        // with the reverse bridge off (`bridge.pooled-sessions.enabled: false`; on, such a
        // request goes inside a pooled backend session: pooled_bridge.rs)
        let off = "bridge:\n  pooled-sessions: { enabled: false }\n";
        let yaml = format!("{off}{}", config_with(&[&legacy], "stateless", deadline));
        let gw = Gateway::start(&yaml).await;
        assert_eventually!(Duration::from_secs(10), eras_known(&gw, 1).await, "probed");
        let before = legacy.count();
        let resp = Request::tools_call("/mcp", 7, "whoami").send(gw.addr).await;
        assert_eq!(resp.status(), 503, "{yaml}");
        let body = resp.json();
        assert_eq!(body["id"], 7);
        assert_eq!(body["error"]["code"], -32005, "{body}");
        assert_eq!(body["error"]["data"]["kind"], "no-backend-of-era");
        assert_eq!(body["error"]["data"]["era"], "modern");
        assert_eq!(body["error"]["data"]["pool"], "p");
        assert_eq!(resp.head.header("retry-after"), Some("1"));
        assert_eq!(legacy.count(), before, "nothing was sent to the legacy pod");
    }
}

/// A new legacy session on a pool whose backends were probed modern-only does not get -32005:
/// the era bridge takes it over (initialize answered by the gateway, calls sent as 2026-07-28
/// requests), and the modern backend never sees an `initialize`.
#[tokio::test]
async fn a_new_legacy_session_on_a_pool_probed_modern_only_is_bridged() {
    let modern = MockServer::start("modern").await;
    let gw = Gateway::start(&config(&[&modern], "stateful")).await;
    assert_eventually!(Duration::from_secs(10), eras_known(&gw, 1).await, "probed");
    let init = r#"{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let resp = Request::post("/mcp", init).send(gw.addr).await;
    let body = resp.json();
    assert_eq!(body["id"], 3, "{body}");
    assert_eq!(body["result"]["protocolVersion"], "2025-11-25", "{body}");
    assert!(body["error"].is_null(), "{body}");
    let sid = resp
        .head
        .header("mcp-session-id")
        .expect("a gateway session id")
        .to_owned();
    let call = Request::post(
        "/mcp",
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"whoami","arguments":{}}}"#,
    )
    .header("mcp-session-id", &sid)
    .header("mcp-protocol-version", "2025-11-25")
    .send(gw.addr)
    .await;
    assert_eq!(call.tool_text(), "modern", "{}", call.text());
    assert_eq!(modern.count_method("initialize"), 0);
}

#[tokio::test]
async fn a_declared_era_is_used_without_probing() {
    let legacy = MockServer::legacy("legacy", 0, V).await;
    // a witness beside it: a pool with `era: detect` whose backend never answers conclusively,
    // so the era service probes it again and again (with its backoff)
    let witness = EraMock::start(503).await;
    let yaml = format!(
        "pools:\n  p: {{ backends: [{}], era: modern }}\n  w: {{ backends: [{}] }}\nroutes: [ {{ path: /mcp, pool: p }}, {{ path: /w, pool: w }} ]\n",
        legacy.addr, witness.addr
    );
    let gw = Gateway::start(&yaml).await;
    assert_eq!(
        era_of(&gw, &legacy.addr.to_string()).await.as_deref(),
        Some("modern"),
        "declared: known at once"
    );
    // declared modern: the 2026-07-28 request goes there (and the legacy pod refuses it, an
    // answer that in a detecting pool would have the backend probed again)
    let resp = Request::tools_call("/mcp", 1, "whoami").send(gw.addr).await;
    assert_eq!(resp.status(), 400);
    // the era service has run since: it probed the witness again after that answer
    let probed = "mcpgw_era_probes_total{pool=\"w\"}";
    let before = gw.metric(probed).await;
    assert_eventually!(
        Duration::from_secs(10),
        gw.metric(probed).await > before,
        "the era service probed the witness pool again after the refused request"
    );
    assert_eq!(
        gw.metric("mcpgw_era_probes_total{pool=\"p\"}").await,
        0.0,
        "nothing probed in a pool with a declared era"
    );
}

/// A rolling upgrade's last step: the only legacy pod goes while a 2026-07-28 pod is there.
/// The session does not fail: its next call continues on the era bridge (same gateway session
/// id, answered by the modern pod as a 2026-07-28 request), and it stays bridged.
#[tokio::test]
async fn a_session_whose_last_legacy_pod_goes_continues_on_the_bridge() {
    let legacy = MockServer::legacy("legacy", 0, V).await;
    let modern = MockServer::start("modern").await;
    let gw = Gateway::start(&config(&[&legacy, &modern], "stateful")).await;
    assert_eventually!(Duration::from_secs(10), eras_known(&gw, 2).await, "probed");
    let sid = open_session(gw.addr).await;
    let call = |id: u64| {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"whoami"}}}}"#
        );
        Request::post("/mcp", body)
            .header("Mcp-Session-Id", &sid)
            .header("MCP-Protocol-Version", V)
    };
    assert_eq!(call(1).send(gw.addr).await.tool_text(), "legacy");
    legacy.die().await;
    for id in 2..6 {
        let resp = call(id).send(gw.addr).await;
        assert_eq!(resp.tool_text(), "modern", "call {id}: {}", resp.text());
    }
    assert_eq!(
        modern.count_method("initialize"),
        0,
        "no session opened upstream"
    );
    let (_, metrics) = gw.admin_get("/metrics").await;
    assert!(
        metrics.contains(r#"mcpgw_session_reinits_total{pool="p",reason="bridged"} 1"#),
        "{metrics}"
    );
}
