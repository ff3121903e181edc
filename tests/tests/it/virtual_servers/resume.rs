//! Legacy clients resuming a call's answer on a virtual route: two FastMCP 1.30.0 members
//! without event stores, each in its own member session. A call's answer carries the member
//! session's event ids as `<member>:<id>`; a `GET` with `Last-Event-ID` resumes it in that
//! member's session, as a plain session resumes. The real PyPI `mcp` 1.30.0 client, its
//! connection cut midway through a call, gets every notification once and the result.

use mcp_gateway_tests::rr_proxy::RrProxy;
use mcp_gateway_tests::wire::sse_events as events;
use mcp_gateway_tests::{Gateway, PythonPeer, ReplClient, Request};
use serde_json::json;

const V: &str = "2025-11-25";

async fn hub() -> (Gateway, Vec<PythonPeer>) {
    let a = PythonPeer::legacy_v1("a", 0).await;
    let b = PythonPeer::legacy_v1("b", 0).await;
    let yaml = format!(
        "pools:\n  a: {{ era: legacy, backends: [{}] }}\n  b: {{ era: legacy, backends: [{}] }}\n\
         routes:\n  - path: /hub\n    mode: virtual\n    upstream-path: /mcp\n    members:\n      - {{ name: a, pool: a, mode: stateful, prefix: never }}\n      - {{ name: b, pool: b, mode: stateful }}\n",
        a.addr(),
        b.addr()
    );
    (Gateway::start(&yaml).await, vec![a, b])
}

#[tokio::test]
async fn a_python_client_cut_mid_call_on_a_virtual_route_resumes_in_the_members_session() {
    let (gw, _peers) = hub().await;
    let front = RrProxy::start(&[gw.addr]).await;
    let mut client = ReplClient::connect("mcp1", &front.url("/hub"), None).await;
    front.cut_after("notifications/progress", 2);
    let call = json!({"op": "progress", "name": "b__slow_progress",
        "args": {"steps": 5, "delay_ms": 400}});
    let report = client.cmd(call).await;
    assert!(client.close().await);
    crate::resume::assert_every_notification_once_and_the_result(&report, &front);
    assert!(gw.metric("mcpgw_streams_resumed_total").await >= 1.0);
}

fn resume(sid: &str, last_event_id: &str) -> Request {
    Request::bare("GET", "/hub")
        .header("Mcp-Session-Id", sid)
        .header("MCP-Protocol-Version", V)
        .header("Accept", "text/event-stream")
        .header("Last-Event-ID", last_event_id)
}

#[tokio::test]
async fn a_virtual_answer_carries_its_members_event_ids_and_resumes_after_any_of_them() {
    let (gw, _peers) = hub().await;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": V, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
    let resp = Request::post("/hub", init.to_string())
        .header("Accept", "application/json, text/event-stream")
        .send(gw.addr)
        .await;
    assert_eq!(resp.status(), 200, "{}", resp.text());
    let sid = resp.head.header("mcp-session-id").expect("a session id");
    let sid = sid.to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let resp = Request::post("/hub", initialized.to_string())
        .header("Mcp-Session-Id", &sid)
        .header("MCP-Protocol-Version", V)
        .send(gw.addr)
        .await;
    assert_eq!(resp.status(), 202, "{}", resp.text());
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "b__slow_progress", "arguments": {"steps": 3, "delay_ms": 50},
        "_meta": {"progressToken": "p"}}});
    let resp = Request::post("/hub", call.to_string())
        .header("Mcp-Session-Id", &sid)
        .header("MCP-Protocol-Version", V)
        .header("Accept", "application/json, text/event-stream")
        .send(gw.addr)
        .await;
    assert_eq!(resp.status(), 200, "{}", resp.text());
    assert!(resp.text().contains("retry: 1000"), "{}", resp.text());
    let all = events(&resp.text());
    assert_eq!(all.len(), 5, "priming, 3 progress, result: {all:?}");
    let ids: Vec<&str> = all
        .iter()
        .map(|(id, _)| id.as_deref().expect("every event has an id"))
        .collect();
    // the member's session's own ids, named by the member: `b:<token>-<n>`
    let token = ids[0]
        .strip_prefix("b:")
        .and_then(|id| id.split('-').next())
        .unwrap_or_else(|| panic!("a member's id: {ids:?}"));
    for (n, id) in ids.iter().enumerate() {
        assert_eq!(*id, format!("b:{token}-{n}"), "ids in order");
    }
    // after the second progress event: the rest, the result included
    let again = resume(&sid, ids[2]).send(gw.addr).await;
    assert_eq!(again.status(), 200, "{}", again.text());
    let rest = events(&again.text());
    let rest_ids: Vec<String> = rest.iter().map(|e| e.0.clone().unwrap()).collect();
    assert_eq!(rest_ids, ids[3..]);
    assert!(rest.last().unwrap().1.contains("\"result\""), "{rest:?}");
    // ids that name no member, no member id, or another member's unknown stream: 410 -32030
    for unknown in ["zz:abc-1", "nocolon", &format!("a:{token}-1"), "b:ffff-1"] {
        let resp = resume(&sid, unknown).send(gw.addr).await;
        assert_eq!(resp.status(), 410, "{unknown}: {}", resp.text());
        let v = resp.json();
        assert_eq!(v["error"]["code"], -32030, "{unknown}: {v}");
        assert_eq!(v["error"]["data"]["reason"], "unknown", "{unknown}: {v}");
    }
}
