//! Explicit `mode: stateless` routes in front of backends that are no MCP session server (issue
//! 31, items 1 and 2): a static JSON responder or a plain JSON-RPC service answers
//! `server/discover` in a way that proves no era, so its era stays unknown and 2026-07-28
//! requests pass through byte-identical (numbers beyond `f64`'s range included); a backend
//! judged legacy whose `initialize` opens no session gets the request untouched and is probed
//! again; a real mcp 2.3.0 stateless server takes `1e400` through the gateway.

use mcp_gateway_tests::client::META;
use mcp_gateway_tests::mock::plain::{Flavour, PlainMock, STATIC_ANSWER};
use mcp_gateway_tests::{assert_eventually, Gateway, PythonPeer, Request};
use serde_json::Value;
use std::time::Duration;

/// The era `/admin/backends` shows for the only backend (`None`: unknown).
async fn era(gw: &Gateway) -> Option<String> {
    let (_, body) = gw.admin_get("/admin/backends").await;
    let view: Value = serde_json::from_str(&body).unwrap();
    view["pools"][0]["backends"][0]["era"]
        .as_str()
        .map(str::to_owned)
}

fn config(addr: &str) -> String {
    format!(
        "pools:\n  p: {{ backends: [{addr}] }}\nroutes:\n  - {{ path: /mcp, mode: stateless, pool: p, upstream-path: /mcp }}\n"
    )
}

/// Numbers RFC 8259 allows that `f64` cannot hold, and spacing a re-serializer would change.
fn huge_body(id: u64) -> String {
    let digits = "9".repeat(400);
    format!(
        r#"{{"jsonrpc":"2.0", "id":{id},"method":"tools/call","params":{{"name":"whoami","arguments":{{"a":1e400,"b":-1e400,"c":{digits},"d":0.{digits}e-999}},{META}}}}}"#
    )
}

fn call(body: &str) -> Request {
    Request::post("/mcp", body.as_bytes().to_vec())
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", "whoami")
}

/// The probes conclude (as anything: the era is read after), counted by result.
async fn probed(gw: &Gateway) -> f64 {
    let mut n = 0.0;
    for result in ["legacy", "modern", "dual", "unknown"] {
        let series = format!("mcpgw_era_probes_total{{pool=\"p\",result=\"{result}\"}}");
        n += gw.metric(&series).await;
    }
    n
}

#[tokio::test]
async fn a_backend_that_proves_no_era_takes_2026_requests_byte_identical() {
    for flavour in [Flavour::Static, Flavour::JsonRpc] {
        let mock = PlainMock::start(flavour).await;
        let gw = Gateway::start(&config(&mock.addr.to_string())).await;
        assert_eventually!(
            Duration::from_secs(10),
            probed(&gw).await >= 1.0,
            "{flavour:?}: the probe concluded"
        );
        assert_eq!(era(&gw).await, None, "{flavour:?}: nothing proves an era");
        // unknown is no conclusion: asked again with the backoff (issue 48)
        assert!(
            gw.metric("mcpgw_era_probes_total{pool=\"p\",result=\"unknown\"}")
                .await
                >= 1.0
        );
        let body = huge_body(7);
        let resp = call(&body).send(gw.addr).await;
        assert_eq!(resp.status(), 200, "{flavour:?}: {}", resp.text());
        if flavour == Flavour::Static {
            assert_eq!(resp.text(), STATIC_ANSWER);
        } else {
            assert_eq!(resp.tool_text(), "plain");
        }
        let seen = mock.requests();
        assert_eq!(
            seen.len(),
            1,
            "{flavour:?}: no bridge initialize, only the call"
        );
        assert_eq!(
            String::from_utf8_lossy(&seen[0].body),
            body,
            "{flavour:?}: byte-identical"
        );
    }
}

#[tokio::test]
async fn a_legacy_judged_backend_whose_initialize_opens_no_session_gets_the_request_untouched() {
    let mock = PlainMock::start(Flavour::NoSessionInit).await;
    let gw = Gateway::start(&config(&mock.addr.to_string())).await;
    assert_eventually!(
        Duration::from_secs(10),
        era(&gw).await.as_deref() == Some("legacy"),
        "refusing a sessionless request the way legacy SDKs do: legacy"
    );
    let legacy_probes = "mcpgw_era_probes_total{pool=\"p\",result=\"legacy\"}";
    assert_eq!(gw.metric(legacy_probes).await, 1.0);
    let body = huge_body(8);
    let resp = call(&body).send(gw.addr).await;
    assert_eq!(resp.status(), 200, "{}", resp.text());
    assert_eq!(resp.text(), STATIC_ANSWER, "the backend's own answer");
    let calls: Vec<_> = mock
        .requests()
        .into_iter()
        .filter(|r| String::from_utf8_lossy(&r.body).contains("tools/call"))
        .collect();
    assert_eq!(calls.len(), 1);
    assert_eq!(String::from_utf8_lossy(&calls[0].body), body, "untouched");
    assert_eventually!(
        Duration::from_secs(10),
        gw.metric(legacy_probes).await >= 2.0,
        "the backend is probed again"
    );
}

#[tokio::test]
async fn a_real_2_3_0_stateless_server_takes_numbers_beyond_f64_through_the_gateway() {
    let peer = PythonPeer::stateless_v2("huge").await;
    let gw = Gateway::start(&config(&peer.addr())).await;
    assert_eventually!(
        Duration::from_secs(10),
        era(&gw).await.as_deref() == Some("dual"),
        "the 2.3.0 stateless server is dual"
    );
    let body = huge_body(9);
    let resp = call(&body).send(gw.addr).await;
    assert_eq!(resp.status(), 200, "{}", resp.text());
    assert_eq!(resp.tool_text(), "huge", "{}", resp.text());
}

#[tokio::test]
async fn fastmcp_1_30_is_still_legacy_and_bridged_and_its_calls_may_carry_huge_numbers() {
    let peer = PythonPeer::legacy_v1("fastmcp", 0).await;
    let gw = Gateway::start(&config(&peer.addr())).await;
    assert_eventually!(
        Duration::from_secs(10),
        era(&gw).await.as_deref() == Some("legacy"),
        "FastMCP 1.30.0 asks for a session: legacy"
    );
    let body = huge_body(10);
    let resp = call(&body).send(gw.addr).await;
    assert_eq!(resp.status(), 200, "{}", resp.text());
    assert_eq!(resp.tool_text(), "fastmcp", "{}", resp.text());
    assert_eq!(
        gw.metric("mcpgw_pooled_session_events_total{pool=\"p\",event=\"opened\"}")
            .await,
        1.0,
        "through a pooled backend session (the reverse bridge)"
    );
}
