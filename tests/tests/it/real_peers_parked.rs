//! Issue 31, items 3 and 14, with a FastMCP 1.30.0 backend (`tests/peers/pooled_server.py`,
//! `ask` elicits on the call's answer) and raw 2026-07-28 requests: parked calls are bounded
//! per principal and in all (`bridge.parked`), anonymous callers by peer address; past a bound
//! the new call gets -32018 `parked-calls` at once and the backend's request an error (its
//! tool does not hang) while another principal still parks; a non-object answer to an
//! `input_required` request is refused with -32602 `invalid-response` and its call stays parked
//! for a valid retry.

use super::pooled_bridge::keys_yaml;
use mcp_gateway_tests::{assert_eventually, Gateway, PythonPeer, Request, Response};
use serde_json::{json, Value};
use std::time::Duration;

async fn setup(auth: bool, parked: &str) -> (PythonPeer, Gateway) {
    let peer =
        PythonPeer::start("mcp1", "pooled_server.py", &["--port", "0", "--name", "b1"]).await;
    let auth = if auth { keys_yaml() } else { String::new() };
    let parked = match parked {
        "" => String::new(),
        p => format!(", parked: {p}"),
    };
    let yaml = format!(
        "{auth}bridge: {{ input-ttl-s: 60{parked} }}\npools:\n  p: {{ era: legacy, backends: [{}] }}\nroutes: [ {{ path: /mcp, pool: p, mode: stateless }} ]\n",
        peer.addr()
    );
    (peer, Gateway::start(&yaml).await)
}

fn call(id: u64, tool: &str, extra: Value, key: Option<&str>) -> Request {
    let mut params = json!({"name": tool, "arguments": {}, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
    }});
    for (k, v) in extra.as_object().cloned().unwrap_or_default() {
        params[k] = v;
    }
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
    let r = Request::post("/mcp", body.to_string())
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", tool);
    match key {
        Some(k) => r.header("X-Api-Key", k),
        None => r,
    }
}

/// Sends within 15 s (a call left hanging fails the test instead of blocking it).
async fn send(r: Request, gw: &Gateway, from: &str) -> Response {
    let from = from.parse().unwrap();
    tokio::time::timeout(Duration::from_secs(15), r.send_from(gw.addr, from))
        .await
        .expect("answered, not left hanging")
}

/// Parks an `ask` call; its `requestState`.
async fn park(gw: &Gateway, id: u64, key: Option<&str>, from: &str) -> String {
    let resp = send(call(id, "ask", json!({}), key), gw, from).await;
    assert_eq!(resp.status(), 200, "{}", resp.text());
    let v = resp.json();
    assert_eq!(v["result"]["resultType"], "input_required", "{v}");
    v["result"]["requestState"].as_str().unwrap().to_owned()
}

fn assert_over(resp: &Response, scope: &str, limit: u64) {
    assert_eq!(resp.status(), 503, "{}", resp.text());
    let v = resp.json();
    assert_eq!(v["error"]["code"], -32018, "{v}");
    assert_eq!(v["error"]["data"]["reason"], "parked-calls", "{v}");
    assert_eq!(v["error"]["data"]["scope"], scope, "{v}");
    assert_eq!(v["error"]["data"]["limit"], limit, "{v}");
}

async fn outcomes(gw: &Gateway, key: Option<&str>) -> String {
    let resp = send(call(900, "outcomes_seen", json!({}), key), gw, "127.0.0.1").await;
    resp.json()["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn answer(state: &str, input: Value) -> Value {
    json!({"inputResponses": {"input": input}, "requestState": state})
}

#[tokio::test]
async fn parked_calls_are_bounded_per_principal_and_in_all() {
    let (_peer, gw) = setup(true, "{ max: 3, max-per-principal: 2 }").await;
    let one = Some("k-one");
    let two = Some("k-two");
    let first = park(&gw, 1, one, "127.0.0.1").await;
    park(&gw, 2, one, "127.0.0.1").await;
    // principal one at its share: answered at once, and the backend's request refused
    let resp = send(call(3, "ask", json!({}), one), &gw, "127.0.0.1").await;
    assert_over(&resp, "principal", 2);
    assert_eventually!(
        Duration::from_secs(10),
        outcomes(&gw, one).await == "error",
        "the refused call's elicitation was answered with an error upstream"
    );
    // principal two still parks its call; then the gateway's bound holds
    park(&gw, 4, two, "127.0.0.1").await;
    let resp = send(call(5, "ask", json!({}), two), &gw, "127.0.0.1").await;
    assert_over(&resp, "gateway", 3);
    assert_eq!(gw.metric("mcpgw_mrtr_parked{pool=\"p\"}").await, 3.0);
    assert_eq!(
        gw.metric("mcpgw_mrtr_events_total{event=\"over-limit\",pool=\"p\"}")
            .await,
        2.0
    );
    // the parked calls still complete; room again
    let good = json!({"action": "accept", "content": {"name": "ada"}});
    let resp = send(call(6, "ask", answer(&first, good), one), &gw, "127.0.0.1").await;
    assert_eq!(
        resp.json()["result"]["content"][0]["text"],
        "hello ada",
        "{}",
        resp.text()
    );
    park(&gw, 7, two, "127.0.0.1").await;
}

/// A refusal answers the backend's request and cancels the call only if it does not end by
/// itself: a cancellation racing the tool's own answer ended the whole FastMCP 1.30 session,
/// with the calls still parked on it (1 run in 6 failed; 12 refusals in a row, all but always).
#[tokio::test]
async fn refused_calls_leave_the_calls_parked_beside_them_in_one_backend_session() {
    let (_peer, gw) = setup(true, "{ max-per-principal: 1 }").await;
    let one = Some("k-one");
    let parked = park(&gw, 1, one, "127.0.0.1").await;
    for id in 2..14 {
        let resp = send(call(id, "ask", json!({}), one), &gw, "127.0.0.1").await;
        assert_over(&resp, "principal", 1);
    }
    let all_refused = ["error"; 12].join(",");
    assert_eventually!(
        Duration::from_secs(10),
        outcomes(&gw, one).await == all_refused,
        "every refused call's elicitation was answered with an error upstream"
    );
    let good = json!({"action": "accept", "content": {"name": "ada"}});
    let resp = send(
        call(20, "ask", answer(&parked, good), one),
        &gw,
        "127.0.0.1",
    )
    .await;
    assert_eq!(
        resp.json()["result"]["content"][0]["text"],
        "hello ada",
        "the parked call outlived the refusals beside it: {}",
        resp.text()
    );
    assert_eq!(
        gw.metric("mcpgw_pooled_session_events_total{event=\"opened\",pool=\"p\"}")
            .await,
        1.0,
        "one backend session served them all"
    );
}

#[tokio::test]
async fn anonymous_callers_parked_calls_count_by_peer_address() {
    // the defaults: 8 parked calls per principal or anonymous address
    let (_peer, gw) = setup(false, "").await;
    for i in 0..8 {
        park(&gw, i, None, "127.0.0.2").await;
    }
    let resp = send(call(8, "ask", json!({}), None), &gw, "127.0.0.2").await;
    assert_over(&resp, "principal", 8);
    // another client address is another share
    park(&gw, 9, None, "127.0.0.3").await;
}

#[tokio::test]
async fn a_non_object_input_response_is_refused_and_the_call_stays_parked() {
    let (_peer, gw) = setup(false, "").await;
    let state = park(&gw, 1, None, "127.0.0.1").await;
    for (i, bad) in [json!("ada"), json!(["ada"]), json!(7)]
        .into_iter()
        .enumerate()
    {
        let resp = send(
            call(2 + i as u64, "ask", answer(&state, bad), None),
            &gw,
            "127.0.0.1",
        )
        .await;
        assert_eq!(resp.status(), 400, "{}", resp.text());
        let v = resp.json();
        assert_eq!(v["error"]["code"], -32602, "{v}");
        assert_eq!(v["error"]["data"]["reason"], "invalid-response", "{v}");
    }
    let good = json!({"action": "accept", "content": {"name": "ada"}});
    let resp = send(call(9, "ask", answer(&state, good), None), &gw, "127.0.0.1").await;
    assert_eq!(
        resp.json()["result"]["content"][0]["text"],
        "hello ada",
        "the call stayed parked for a valid retry: {}",
        resp.text()
    );
}
