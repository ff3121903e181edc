//! Stateful routes against Rust legacy mocks (sessions in process memory): session creation and
//! pinning, transparent failover by re-initialization, what cannot be recovered, expiry, limits.

use mcp_gateway_tests::{
    assert_eventually, eventually, open_session, Gateway, MockServer, PortClaim, Request, Response,
};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

const V: &str = "2025-11-25";

fn route(backends: &[&MockServer], extra: &str) -> String {
    let list: Vec<String> = backends.iter().map(|m| m.addr.to_string()).collect();
    format!(
        "{extra}pools:\n  legacy: {{ backends: [{}], failure-cooldown-ms: 60000 }}\nroutes:\n  - path: /mcp\n    mode: stateful\n    pool: legacy\n",
        list.join(", ")
    )
}

fn rpc(sid: &str, id: u64, method: &str, params: &str) -> Request {
    let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#);
    Request::post("/mcp", body)
        .header("Mcp-Session-Id", sid)
        .header("MCP-Protocol-Version", V)
}

fn call(sid: &str, id: u64, tool: &str, args: &str) -> Request {
    rpc(
        sid,
        id,
        "tools/call",
        &format!(r#"{{"name":"{tool}","arguments":{args}}}"#),
    )
}

fn text(resp: &Response) -> String {
    resp.tool_text()
}

/// Two legacy pods behind a stateful route, and one session.
struct TwoPods {
    a: MockServer,
    b: MockServer,
    gw: Gateway,
    sid: String,
}

impl TwoPods {
    async fn start() -> TwoPods {
        let a = MockServer::legacy("a", 0, V).await;
        let b = MockServer::legacy("b", 0, V).await;
        let gw = Gateway::start(&route(&[&a, &b], "")).await;
        let sid = open_session(gw.addr).await;
        TwoPods { a, b, gw, sid }
    }

    /// The pod holding the session, and the other one.
    async fn pinned(&self) -> (&MockServer, &MockServer) {
        let name = text(&call(&self.sid, 99, "whoami", "{}").send(self.gw.addr).await);
        if name == self.a.name {
            (&self.a, &self.b)
        } else {
            (&self.b, &self.a)
        }
    }
}

#[tokio::test]
async fn a_session_gets_a_gateway_id_and_stays_on_one_backend() {
    let pods = TwoPods::start().await;
    let (gw, sid) = (&pods.gw, pods.sid.as_str());
    assert_eq!(sid.len(), 36, "a UUID: {sid}");
    assert!(
        !sid.contains("session"),
        "backend ids never reach the client: {sid}"
    );
    let first = text(&call(sid, 1, "whoami", "{}").send(gw.addr).await);
    for i in 2..=50 {
        assert_eq!(
            text(&call(sid, i, "whoami", "{}").send(gw.addr).await),
            first
        );
    }
    let (pinned, _) = pods.pinned().await;
    let backend_id = text(&call(sid, 60, "session_id", "{}").send(gw.addr).await);
    assert!(pinned.sessions().knows(&backend_id));
    assert_eq!(gw.metric("mcpgw_sessions_created_total").await, 1.0);
    // a second session goes to the other backend (least sessions)
    let sid2 = open_session(gw.addr).await;
    assert_ne!(
        text(&call(&sid2, 1, "whoami", "{}").send(gw.addr).await),
        first
    );
}

#[tokio::test]
async fn legacy_session_survives_backend_kill() {
    let pods = TwoPods::start().await;
    let (gw, sid) = (&pods.gw, pods.sid.as_str());
    assert_eq!(text(&call(sid, 1, "count", "{}").send(gw.addr).await), "1");
    let (pinned, survivor) = pods.pinned().await;
    pinned.die().await;
    let resp = call(sid, 2, "whoami", "{}").send(gw.addr).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(text(&resp), survivor.name);
    // a fresh backend session: per-session state restarts, the client's id does not change
    assert_eq!(text(&call(sid, 3, "count", "{}").send(gw.addr).await), "1");
    assert_eq!(survivor.sessions().initializes(), 1);
    assert_eq!(
        survivor.count_method("notifications/initialized"),
        1,
        "initialized replayed"
    );
    assert_eq!(
        gw.metric("mcpgw_session_reinits_total{reason=\"connect-refused\"}")
            .await,
        1.0
    );
}

#[tokio::test]
async fn a_restarted_backend_that_forgot_the_session_is_recovered() {
    // the claim keeps the address ours while no mock listens on it
    let claim = PortClaim::new();
    let a = MockServer::legacy_on(&claim, "a", V).await;
    let gw = Gateway::start(&route(&[&a], "")).await;
    let sid = open_session(gw.addr).await;
    assert_eq!(text(&call(&sid, 1, "count", "{}").send(gw.addr).await), "1");
    a.kill();
    drop(a);
    let restarted = MockServer::legacy_on(&claim, "a2", V).await;
    let resp = call(&sid, 2, "whoami", "{}").send(gw.addr).await;
    assert_eq!(text(&resp), "a2");
    assert_eq!(restarted.sessions().initializes(), 1);
    let reinits = gw.metric("mcpgw_session_reinits_total").await;
    assert_eq!(reinits, 1.0);
}

#[tokio::test]
async fn concurrent_calls_during_a_failover_cause_exactly_one_reinit() {
    let pods = TwoPods::start().await;
    let (gw, sid) = (&pods.gw, pods.sid.as_str());
    let (pinned, survivor) = pods.pinned().await;
    pinned.die().await;
    let addr = gw.addr;
    let calls = (0..10).map(|i| {
        let req = call(sid, 100 + i, "whoami", "{}");
        async move { req.send(addr).await }
    });
    for resp in futures_join_all(calls).await {
        assert_eq!(text(&resp), survivor.name);
    }
    assert_eq!(
        survivor.sessions().initializes(),
        1,
        "one re-initialization, not ten"
    );
    assert_eq!(gw.metric("mcpgw_session_reinits_total").await, 1.0);
}

async fn futures_join_all<F: std::future::Future<Output = Response> + Send + 'static>(
    futures: impl Iterator<Item = F>,
) -> Vec<Response> {
    let handles: Vec<_> = futures.map(tokio::spawn).collect();
    let mut out = Vec::new();
    for h in handles {
        out.push(h.await.expect("task"));
    }
    out
}

#[tokio::test]
async fn logging_level_is_replayed_after_failover() {
    let pods = TwoPods::start().await;
    let (gw, sid) = (&pods.gw, pods.sid.as_str());
    assert_eq!(
        rpc(sid, 1, "logging/setLevel", r#"{"level":"debug"}"#)
            .send(gw.addr)
            .await
            .status(),
        200
    );
    pods.pinned().await.0.die().await;
    assert_eq!(
        text(&call(sid, 2, "log_level", "{}").send(gw.addr).await),
        "debug"
    );
}

#[tokio::test]
async fn unknown_and_deleted_sessions_get_404_with_the_request_id_and_a_reason() {
    let a = MockServer::legacy("a", 0, V).await;
    let gw = Gateway::start(&route(&[&a], "")).await;
    let resp = call("no-such-session", 5, "whoami", "{}")
        .send(gw.addr)
        .await;
    assert_eq!(resp.status(), 404);
    let v = resp.json();
    assert_eq!(v["id"], 5);
    assert_eq!(v["error"]["code"], -32015);
    assert_eq!(v["error"]["data"]["reason"], "unknown");

    let sid = open_session(gw.addr).await;
    let backend_id = text(&call(&sid, 1, "session_id", "{}").send(gw.addr).await);
    let delete = Request::session_delete(&sid);
    assert_eq!(delete.send(gw.addr).await.status(), 200);
    assert!(
        !a.sessions().knows(&backend_id),
        "DELETE reached the backend"
    );
    let resp = call(&sid, 6, "whoami", "{}").send(gw.addr).await;
    assert_eq!(resp.status(), 404);
    assert_eq!(resp.json()["error"]["data"]["reason"], "deleted");
    assert_eq!(resp.json()["id"], 6);
    // DELETE of a session whose backend is down still ends it at the gateway
    let sid = open_session(gw.addr).await;
    a.kill();
    let delete = Request::session_delete(&sid);
    assert_eq!(delete.send(gw.addr).await.status(), 200);
    assert_eq!(
        call(&sid, 7, "whoami", "{}").send(gw.addr).await.json()["error"]["data"]["reason"],
        "deleted"
    );
}

#[tokio::test]
async fn idle_sessions_expire_with_a_delete_upstream() {
    let a = MockServer::legacy("a", 0, V).await;
    let gw = Gateway::start(&route(&[&a], "sessions: { idle-timeout-s: 1 }\n")).await;
    let sid = open_session(gw.addr).await;
    assert_eq!(a.sessions().live(), 1);
    eventually(
        "the backend session is deleted",
        Duration::from_secs(5),
        || a.sessions().live() == 0,
    )
    .await;
    let resp = call(&sid, 3, "whoami", "{}").send(gw.addr).await;
    assert_eq!(resp.status(), 404);
    assert_eq!(resp.json()["error"]["data"]["reason"], "expired");
    assert_eq!(
        gw.metric("mcpgw_sessions_ended_total{reason=\"expired\"}")
            .await,
        1.0
    );
}

#[tokio::test]
async fn the_session_cap_answers_initialize_with_a_json_rpc_error() {
    let a = MockServer::legacy("a", 0, V).await;
    let gw = Gateway::start(&route(&[&a], "sessions: { max: 1 }\n")).await;
    open_session(gw.addr).await;
    let body = r#"{"jsonrpc":"2.0","id":"init-2","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let resp = Request::post("/mcp", body).send(gw.addr).await;
    assert_eq!(resp.status(), 503);
    assert_eq!(resp.head.header("retry-after"), Some("5"));
    assert_eq!(resp.json()["id"], "init-2");
    assert_eq!(resp.json()["error"]["code"], -32016);
    assert_eq!(
        a.sessions().initializes(),
        1,
        "refused before reaching a backend"
    );
}

#[tokio::test]
async fn a_tool_call_in_flight_when_its_backend_dies_gets_an_outcome_unknown_error() {
    let pods = TwoPods::start().await;
    let (gw, sid) = (&pods.gw, pods.sid.as_str());
    let (pinned, _) = pods.pinned().await;
    let (req, addr) = (call(sid, 41, "sleep", r#"{"ms":3000}"#), gw.addr);
    let in_flight = tokio::spawn(async move { req.send(addr).await });
    assert_eventually!(
        Duration::from_secs(5),
        pinned.in_flight() == 1,
        "call 41 is in flight at the pinned backend {}",
        pinned.name
    );
    pinned.kill();
    let resp = in_flight.await.unwrap();
    assert_eq!(resp.status(), 200, "a JSON-RPC error, not a bare 5xx");
    let v = resp.json();
    assert_eq!(v["id"], 41);
    assert_eq!(v["error"]["code"], -32013);
    assert_eq!(v["error"]["data"]["outcome"], "unknown");
    // the session is re-pinned for the next call
    let next = call(sid, 42, "whoami", "{}").send(gw.addr).await;
    assert_ne!(text(&next), pinned.name);
    assert_eq!(gw.metric("mcpgw_inflight_calls_lost_total").await, 1.0);
}

#[tokio::test]
async fn a_broken_sse_answer_ends_with_the_error_as_its_final_event() {
    let pods = TwoPods::start().await;
    let (gw, sid) = (&pods.gw, pods.sid.as_str());
    let resp = call(sid, 8, "drop_mid_sse", "{}").send(gw.addr).await;
    assert_eq!(resp.head.header("content-type"), Some("text/event-stream"));
    let body = String::from_utf8_lossy(&resp.body);
    assert!(body.contains("notifications/progress"), "{body}");
    let last = resp.json();
    assert_eq!(last["id"], 8);
    assert_eq!(last["error"]["code"], -32013);
}

#[tokio::test]
async fn a_repeatable_request_lost_mid_flight_is_retried_transparently() {
    let pods = TwoPods::start().await;
    let (gw, sid) = (&pods.gw, pods.sid.as_str());
    let (pinned, survivor) = pods.pinned().await;
    // prompts/get is safe to repeat; the mock's `sleep` behaviour keys on params.name
    let req = rpc(
        sid,
        9,
        "prompts/get",
        r#"{"name":"sleep","arguments":{"ms":1500}}"#,
    );
    let addr = gw.addr;
    let in_flight = tokio::spawn(async move { req.send(addr).await });
    assert_eventually!(
        Duration::from_secs(5),
        pinned.in_flight() == 1,
        "prompts/get 9 is in flight at the pinned backend {}",
        pinned.name
    );
    pinned.kill();
    let resp = in_flight.await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(text(&resp), survivor.name);
    // one re-initialization (the fresh-connection retry may see the refusal first)
    assert_eq!(gw.metric("mcpgw_session_reinits_total").await, 1.0);
}

#[tokio::test]
async fn a_backend_negotiating_another_version_cannot_take_the_session() {
    let claim = PortClaim::new();
    let a = MockServer::legacy_on(&claim, "a", V).await;
    let gw = Gateway::start(&route(&[&a], "")).await;
    let sid = open_session(gw.addr).await;
    a.kill();
    drop(a);
    let _older = MockServer::legacy_on(&claim, "old", "2025-06-18").await;
    let resp = call(&sid, 10, "whoami", "{}").send(gw.addr).await;
    assert_eq!(resp.status(), 404);
    assert_eq!(resp.json()["error"]["data"]["reason"], "reinit-failed");
    assert_eq!(resp.json()["id"], 10);
}

#[tokio::test]
async fn with_no_surviving_backend_the_session_waits_with_503_and_recovers_later() {
    let claim = PortClaim::new();
    let a = MockServer::legacy_on(&claim, "a", V).await;
    let gw = Gateway::start(&route(&[&a], "")).await;
    let sid = open_session(gw.addr).await;
    a.kill();
    drop(a);
    let resp = call(&sid, 11, "whoami", "{}").send(gw.addr).await;
    assert_eq!(resp.status(), 503);
    assert_eq!(resp.head.header("retry-after"), Some("1"));
    assert_eq!(resp.json()["id"], 11);
    let _back = MockServer::legacy_on(&claim, "back", V).await;
    assert_eq!(
        text(&call(&sid, 12, "whoami", "{}").send(gw.addr).await),
        "back"
    );
}

#[tokio::test]
async fn the_get_stream_ends_cleanly_when_its_backend_dies_and_reopens_elsewhere() {
    let pods = TwoPods::start().await;
    let (gw, sid) = (&pods.gw, pods.sid.as_str());
    let (pinned, survivor) = pods.pinned().await;
    let get = Request::session_stream(sid);
    let (first, addr) = (get.clone(), gw.addr);
    let received = Arc::new(AtomicUsize::new(0));
    let seen = received.clone();
    let open = tokio::spawn(async move { first.send_timed_counting(addr, &seen).await });
    assert_eventually!(
        Duration::from_secs(5),
        received.load(Ordering::SeqCst) >= 1,
        "the GET stream from {} reached the client",
        pinned.name
    );
    assert_eq!(gw.metric("mcpgw_open_streams").await, 1.0);
    pinned.kill();
    let (head, chunks) = tokio::time::timeout(Duration::from_secs(5), open)
        .await
        .expect("stream ended")
        .unwrap();
    assert_eq!(head.status, 200);
    assert!(!chunks.is_empty());
    mcp_gateway_tests::eventually_async(
        "the stream is uncounted",
        Duration::from_secs(2),
        || async { gw.metric("mcpgw_open_streams").await == 0.0 },
    )
    .await;
    // the next GET opens on the survivor (reading a few keepalives, then giving up)
    let before = survivor
        .requests()
        .iter()
        .filter(|r| r.head.method == "GET")
        .count();
    let _ = tokio::time::timeout(Duration::from_millis(500), get.send_timed(gw.addr)).await;
    let after = survivor
        .requests()
        .iter()
        .filter(|r| r.head.method == "GET")
        .count();
    assert_eq!(after, before + 1);
}

#[tokio::test]
async fn refusals_without_a_session_pass_through_without_their_throwaway_ids() {
    let a = MockServer::legacy("a", 0, V).await;
    let gw = Gateway::start(&route(&[&a], "")).await;
    let resp = Request::post("/mcp", r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#)
        .send(gw.addr)
        .await;
    assert_eq!(resp.status(), 400);
    assert_eq!(resp.head.header("mcp-session-id"), None);
    assert_eq!(resp.json()["error"]["code"], -32600);
}

#[tokio::test]
async fn auto_routes_send_2026_requests_stateless_and_legacy_ones_through_sessions() {
    let a = MockServer::legacy("a", 0, V).await;
    let modern = MockServer::start("modern").await;
    let gw = Gateway::start(&format!(
        "pools:\n  legacy: {{ backends: [{}] }}\n  modern: {{ backends: [{}] }}\nroutes:\n  - path: /mcp\n    mode: auto\n    pool: legacy\n    rules:\n      - match: {{ method: \"tools/*\" }}\n        pool: modern\n",
        a.addr, modern.addr
    ))
    .await;
    let resp = Request::tools_call("/mcp", 1, "whoami").send(gw.addr).await;
    assert_eq!(text(&resp), "modern");
    let sid = open_session(gw.addr).await;
    assert_eq!(
        text(&call(&sid, 2, "whoami", "{}").send(gw.addr).await),
        "a"
    );
}

#[tokio::test]
async fn hop_by_hop_and_proxy_headers_stay_at_the_gateway() {
    let a = MockServer::legacy("a", 0, V).await;
    let gw = Gateway::start(&route(&[&a], "")).await;
    let sid = open_session(gw.addr).await;
    let resp = call(&sid, 1, "whoami", "{}")
        .header("Connection", "keep-alive, X-Secret")
        .header("X-Secret", "for the gateway only")
        .header("Upgrade", "websocket")
        .header("TE", "trailers")
        .header("Proxy-Authorization", "Basic Zm9vOmJhcg==")
        .header("X-Other", "end to end")
        .send(gw.addr)
        .await;
    assert_eq!(resp.tool_text(), "a");
    let seen = a.requests();
    let upstream = seen
        .iter()
        .rev()
        .find(|r| r.head.method == "POST")
        .expect("the call reached the backend");
    for hop in [
        "connection",
        "x-secret",
        "upgrade",
        "te",
        "proxy-authorization",
    ] {
        assert_eq!(upstream.head.header(hop), None, "{hop} went upstream");
    }
    assert_eq!(upstream.head.header("x-other"), Some("end to end"));
}
