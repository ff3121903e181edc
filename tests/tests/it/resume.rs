//! Resumable streams (`sessions.resume`) with real peers: a FastMCP 1.30.0 server without an
//! event store behind the gateway, and the real SDK clients (Python 1.30.0, TypeScript 1.32.2)
//! whose connection is cut midway through a call that sends progress notifications. The
//! gateway owns the event ids, buffers the answer, keeps reading it while the client is gone,
//! and replays the rest after the client's `Last-Event-ID`, exactly once.

use mcp_gateway_tests::rr_proxy::RrProxy;
use mcp_gateway_tests::wire::sse_events as events;
use mcp_gateway_tests::{
    assert_eventually, open_session, Gateway, PythonPeer, ReplClient, Request,
};
use serde_json::{json, Value};
use std::time::Duration;

const V: &str = "2025-11-25";

fn yaml(backends: &[String], sessions: &str) -> String {
    format!(
        "{sessions}pools:\n  legacy: {{ backends: [{}] }}\nroutes:\n  - path: /mcp\n    mode: stateful\n    pool: legacy\n",
        backends.join(", ")
    )
}

/// Calls `slow_progress` (5 notifications 400 ms apart) through a front that cuts the
/// client's connection after the second notification; returns the client's report.
async fn progress_through_a_cut(venv: Option<&str>) -> (Value, RrProxy, Gateway, PythonPeer) {
    let server = PythonPeer::legacy_v1("pod-0", 0).await;
    let gw = Gateway::start(&yaml(&[server.addr()], "")).await;
    let front = RrProxy::start(&[gw.addr]).await;
    let url = front.url("/mcp");
    let mut client = match venv {
        Some(venv) => ReplClient::connect(venv, &url, None).await,
        None => ReplClient::try_connect_ts(&url)
            .await
            .expect("TS client starts"),
    };
    front.cut_after("notifications/progress", 2);
    let report = client
        .cmd(json!({"op": "progress", "steps": 5, "delay_ms": 400}))
        .await;
    assert!(client.close().await);
    (report, front, gw, server)
}

/// What a client cut mid-call must have got: every notification once, the result, one resume.
pub(crate) fn assert_every_notification_once_and_the_result(report: &Value, front: &RrProxy) {
    assert_eq!(front.cuts(), 1, "the connection was cut: {report}");
    assert_eq!(report["ok"], true, "{report}");
    let times = report["progress_times"].as_array().expect("progress times");
    assert_eq!(times.len(), 5, "each notification exactly once: {report}");
    assert!(
        report["text"].as_str().unwrap_or("").contains("done"),
        "{report}"
    );
    let resumed = front
        .log()
        .iter()
        .filter(|s| s.method == "GET" && s.status == Some(200))
        .count();
    assert!(
        resumed >= 1,
        "the client resumed with a GET: {:?}",
        front.log()
    );
}

#[tokio::test]
async fn python_client_cut_mid_call_gets_every_notification_once_and_the_result() {
    let (report, front, gw, _server) = progress_through_a_cut(Some("mcp1")).await;
    assert_every_notification_once_and_the_result(&report, &front);
    assert!(gw.metric("mcpgw_streams_resumed_total").await >= 1.0);
    assert!(gw.metric("mcpgw_events_replayed_total").await >= 1.0);
}

#[tokio::test]
async fn typescript_client_cut_mid_call_gets_every_notification_once_and_the_result() {
    let (report, front, gw, _server) = progress_through_a_cut(None).await;
    assert_every_notification_once_and_the_result(&report, &front);
    assert!(gw.metric("mcpgw_streams_resumed_total").await >= 1.0);
}

fn progress_call(sid: &str, steps: u32, delay_ms: u32) -> Request {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"slow_progress","arguments":{{"steps":{steps},"delay_ms":{delay_ms}}},"_meta":{{"progressToken":"p"}}}}}}"#
    );
    Request::post("/mcp", body)
        .header("Mcp-Session-Id", sid)
        .header("MCP-Protocol-Version", V)
}

fn resume(sid: &str, last_event_id: &str) -> Request {
    Request::bare("GET", "/mcp")
        .header("Mcp-Session-Id", sid)
        .header("MCP-Protocol-Version", V)
        .header("Accept", "text/event-stream")
        .header("Last-Event-ID", last_event_id)
}

#[tokio::test]
async fn answers_carry_a_priming_event_and_gateway_ids_and_replay_after_any_of_them() {
    let server = PythonPeer::legacy_v1("pod-0", 0).await;
    let gw = Gateway::start(&yaml(&[server.addr()], "")).await;
    let sid = open_session(gw.addr).await;
    let resp = progress_call(&sid, 3, 50).send(gw.addr).await;
    assert_eq!(resp.status(), 200);
    let all = events(&resp.text());
    // priming first: an id, retry, empty data
    assert!(resp.text().starts_with("id: "), "{}", resp.text());
    assert!(resp.text().contains("\nretry: 1000\n"), "{}", resp.text());
    assert_eq!(all[0].1, "");
    assert_eq!(all.len(), 5, "priming, 3 progress, result: {all:?}");
    let ids: Vec<&str> = all
        .iter()
        .map(|(id, _)| id.as_deref().expect("every event has an id"))
        .collect();
    let token = ids[0].split('-').next().unwrap();
    for (n, id) in ids.iter().enumerate() {
        assert_eq!(*id, format!("{token}-{n}"), "gateway ids in order");
    }
    // after the second progress event: the rest, the result included
    let again = resume(&sid, ids[2]).send(gw.addr).await;
    assert_eq!(again.status(), 200);
    let rest = events(&again.text());
    assert_eq!(
        rest.iter()
            .map(|e| e.0.clone().unwrap())
            .collect::<Vec<_>>(),
        ids[3..]
    );
    assert!(rest.last().unwrap().1.contains("\"result\""), "{rest:?}");
}

#[tokio::test]
async fn another_sessions_event_id_gets_nothing_of_it() {
    let server = PythonPeer::legacy_v1("pod-0", 0).await;
    let gw = Gateway::start(&yaml(&[server.addr()], "")).await;
    let a = open_session(gw.addr).await;
    let b = open_session(gw.addr).await;
    let resp = progress_call(&a, 2, 10).send(gw.addr).await;
    let a_ids: Vec<String> = events(&resp.text())
        .into_iter()
        .filter_map(|e| e.0)
        .collect();
    assert!(a_ids.len() >= 3);
    for (id, reason) in [
        (a_ids[0].as_str(), "unknown"),
        ("0123456789abcdef-0", "unknown"),
        ("not-an-id", "unknown"),
    ] {
        let resp = resume(&b, id).send(gw.addr).await;
        assert_eq!(resp.status(), 410, "{id}: {}", resp.text());
        let v: Value = serde_json::from_str(&resp.text()).unwrap();
        assert_eq!(v["error"]["code"], -32030, "{v}");
        assert_eq!(v["error"]["data"]["reason"], reason, "{v}");
        assert!(!resp.text().contains("progress"), "nothing of A: {v}");
    }
    assert_eq!(
        gw.metric("mcpgw_resumes_refused_total{reason=\"unknown\"}")
            .await,
        3.0
    );
    // A's own id still works for A
    assert_eq!(resume(&a, &a_ids[0]).send(gw.addr).await.status(), 200);
}

#[tokio::test]
async fn an_answer_whose_client_left_is_read_to_the_end_and_replayed() {
    let server = PythonPeer::legacy_v1("pod-0", 0).await;
    let gw = Gateway::start(&yaml(&[server.addr()], "")).await;
    let sid = open_session(gw.addr).await;
    // the client reads the priming event and goes away
    let first = progress_call(&sid, 4, 300).read_first_event(gw.addr).await;
    let primed = events(&first);
    let priming_id = primed[0].0.clone().expect("priming id");
    // the answer ends upstream without anyone reading (its exchange, counted in flight on the
    // backend while it lives, is over); then the client comes back
    let inflight = "mcpgw_backend_inflight_requests";
    assert_eq!(
        gw.metric(inflight).await,
        1.0,
        "the answer goes on upstream"
    );
    assert_eventually!(
        Duration::from_secs(10),
        gw.metric(inflight).await == 0.0,
        "the answer nobody reads ended upstream"
    );
    let rest = resume(&sid, &priming_id).send(gw.addr).await;
    let rest = events(&rest.text());
    assert_eq!(rest.len(), 5, "4 progress + the result: {rest:?}");
    assert!(rest[4].1.contains("\"result\""), "{rest:?}");
}

#[tokio::test]
async fn a_stream_nobody_reads_is_given_up_at_the_windows_end() {
    let server = PythonPeer::legacy_v1("pod-0", 0).await;
    let sessions = "sessions:\n  resume: { window-s: 1 }\n";
    let gw = Gateway::start(&yaml(&[server.addr()], sessions)).await;
    let sid = open_session(gw.addr).await;
    let _ = progress_call(&sid, 50, 200).read_first_event(gw.addr).await;
    assert!(gw.metric("mcpgw_resume_streams").await >= 1.0);
    // given up after 1 s unread, forgotten 1 s after that: nothing kept, no buffer left
    assert_eventually!(
        Duration::from_secs(10),
        gw.metric("mcpgw_resume_streams").await == 0.0,
        "the unread stream was dropped"
    );
    assert_eq!(gw.metric("mcpgw_resume_buffered_bytes").await, 0.0);
}

#[tokio::test]
async fn a_backend_that_dies_mid_answer_ends_the_replay_with_outcome_unknown() {
    let mut server = PythonPeer::legacy_v1("pod-0", 0).await;
    let gw = Gateway::start(&yaml(&[server.addr()], "")).await;
    let sid = open_session(gw.addr).await;
    let first = progress_call(&sid, 20, 200).read_first_event(gw.addr).await;
    let priming_id = events(&first)[0].0.clone().expect("priming id");
    // progress is buffered before the backend dies
    let buffered = "mcpgw_resume_buffered_bytes";
    let primed = gw.metric(buffered).await;
    assert_eventually!(
        Duration::from_secs(10),
        gw.metric(buffered).await > primed,
        "a progress event was buffered after the priming one"
    );
    server.kill().await;
    let rest = resume(&sid, &priming_id).send(gw.addr).await;
    let rest = events(&rest.text());
    let last: Value = serde_json::from_str(&rest.last().expect("events").1).unwrap();
    assert_eq!(last["id"], 7, "{last}");
    assert_eq!(last["error"]["code"], -32013, "{last}");
    assert!(
        rest.len() >= 2,
        "buffered progress replayed first: {rest:?}"
    );
}

/// With the Redis store, the client's reconnect lands on the OTHER replica (the one that
/// relayed the call leaves the front's rotation after the cut): it replays the rest from
/// Redis while the first replica goes on reading the answer and writing it there.
#[tokio::test]
async fn with_redis_a_reconnect_on_the_other_replica_gets_the_rest() {
    let redis = mcp_gateway_tests::redis::RedisServer::start().await;
    let server = PythonPeer::legacy_v1("pod-0", 0).await;
    let sessions = format!(
        "sessions:\n  store: redis\n  redis: {{ urls: [\"{}\"], key-prefix: \"resume:\" }}\n",
        redis.url()
    );
    let yaml = yaml(&[server.addr()], &sessions);
    let replicas = [Gateway::start(&yaml).await, Gateway::start(&yaml).await];
    let front = RrProxy::start(&[replicas[0].addr, replicas[1].addr]).await;
    let mut client = ReplClient::connect("mcp1", &front.url("/mcp"), None).await;
    front.cut_after("notifications/progress", 2);
    let call = client.cmd(json!({"op": "progress", "steps": 5, "delay_ms": 400}));
    let steer = async {
        // the replica relaying the call leaves the rotation once its client was cut
        assert_eventually!(Duration::from_secs(10), front.cuts() == 1, "the cut");
        let slot = front
            .log()
            .iter()
            .rfind(|s| s.rpc.as_deref() == Some("tools/call"))
            .and_then(|s| s.slot)
            .expect("the call's slot");
        front.set_upstream(slot, None);
        slot
    };
    let (report, calling) = tokio::join!(call, steer);
    assert!(client.close().await);
    assert_every_notification_once_and_the_result(&report, &front);
    let other = &replicas[1 - calling];
    assert!(
        other.metric("mcpgw_streams_resumed_total").await >= 1.0,
        "the other replica served the resume"
    );
    assert_eq!(
        replicas[calling]
            .metric("mcpgw_streams_resumed_total")
            .await,
        0.0
    );
}

/// A backend WITH an event store closes the call's stream after the second notification
/// (SEP-1699 polling): the gateway resumes upstream with the backend's own event id, and the
/// client reads one stream with every notification once, the result, and no backend id.
#[tokio::test]
async fn an_answer_the_backend_closes_early_is_resumed_upstream_with_its_own_event_id() {
    let server = PythonPeer::start(
        "mcp1",
        "event_store_server.py",
        &["--port", "0", "--name", "store"],
    )
    .await;
    let gw = Gateway::start(&yaml(&[server.addr()], "")).await;
    let init = format!(
        r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"{V}","capabilities":{{}},"clientInfo":{{"name":"t","version":"1"}}}}}}"#
    );
    let answer = Request::post("/mcp", init).send(gw.addr).await.text();
    assert!(
        answer.contains("serverInfo") && !answer.contains("backend-"),
        "{answer}"
    );
    let sid = open_session(gw.addr).await;
    let body = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"progress_then_close","arguments":{"steps":4,"delay_ms":200},"_meta":{"progressToken":"p"}}}"#;
    let resp = Request::post("/mcp", body)
        .header("Mcp-Session-Id", &sid)
        .header("MCP-Protocol-Version", V)
        .send(gw.addr)
        .await;
    assert_eq!(resp.status(), 200);
    let text = resp.text();
    assert!(
        !text.contains("backend-"),
        "no backend event id reaches the client: {text}"
    );
    let all = events(&text);
    let progress = all
        .iter()
        .filter(|e| e.1.contains("notifications/progress"))
        .count();
    assert_eq!(progress, 4, "every notification once: {all:?}");
    assert!(all.last().unwrap().1.contains("\"result\""), "{all:?}");
    assert_eq!(
        all.iter().filter(|e| e.1.is_empty()).count(),
        1,
        "one priming event, the gateway's: {all:?}"
    );
}

#[tokio::test]
async fn buffer_bounds_hold_and_a_resume_from_before_them_is_refused_as_evicted() {
    let server = PythonPeer::legacy_v1("pod-0", 0).await;
    let sessions = "sessions:\n  resume: { max-events: 3 }\n";
    let gw = Gateway::start(&yaml(&[server.addr()], sessions)).await;
    let sid = open_session(gw.addr).await;
    let resp = progress_call(&sid, 8, 5).send(gw.addr).await;
    let ids: Vec<String> = events(&resp.text())
        .into_iter()
        .filter_map(|e| e.0)
        .collect();
    assert_eq!(ids.len(), 10, "priming, 8 progress, result");
    // only the last 3 events are kept: after the 7th (index 6) is the oldest resumable point
    let refused = resume(&sid, &ids[1]).send(gw.addr).await;
    assert_eq!(refused.status(), 410);
    assert_eq!(refused.json()["error"]["data"]["reason"], "evicted");
    let rest = resume(&sid, &ids[6]).send(gw.addr).await;
    assert_eq!(events(&rest.text()).len(), 3, "{}", rest.text());
    assert_eq!(
        gw.metric("mcpgw_resumes_refused_total{reason=\"evicted\"}")
            .await,
        1.0
    );
}

#[tokio::test]
async fn idle_client_streams_get_keep_alive_comments() {
    // FastMCP's standalone GET stream is silent: only the gateway writes on it
    let server = PythonPeer::legacy_v1("pod-0", 0).await;
    let sessions = "sessions:\n  resume: { keep-alive-s: 1 }\n";
    let gw = Gateway::start(&yaml(&[server.addr()], sessions)).await;
    let sid = open_session(gw.addr).await;
    let get = Request::session_stream(&sid).header("MCP-Protocol-Version", V);
    let read = tokio::time::timeout(Duration::from_millis(2500), get.send_timed(gw.addr)).await;
    assert!(read.is_err(), "the stream stays open");
    let received = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = received.clone();
    let (get, addr) = (
        Request::session_stream(&sid).header("MCP-Protocol-Version", V),
        gw.addr,
    );
    let reader = tokio::spawn(async move { get.send_timed_counting(addr, &counted).await });
    // the priming event, then a comment a second
    assert_eventually!(
        Duration::from_secs(4),
        received.load(std::sync::atomic::Ordering::SeqCst) >= 3,
        "keep-alives arrive on an idle stream"
    );
    reader.abort();
}

/// The TypeScript SDK server answers a POST with an SSE body AND a `Content-Length`; the
/// gateway adds its event ids, so it must not keep the backend's length (pingora would cut
/// the body at it, the result's end included): the answer is sent chunked, whole.
#[tokio::test]
async fn an_sse_answer_with_a_content_length_arrives_whole_with_the_gateways_ids() {
    let server = mcp_gateway_tests::elicit::ElicitServer::start(3000).await;
    let gw = Gateway::start(&yaml(&[server.addr()], "")).await;
    let sid = open_session(gw.addr).await;
    let list = Request::post("/mcp", r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#)
        .header("Mcp-Session-Id", &sid)
        .header("MCP-Protocol-Version", V)
        .send(gw.addr)
        .await;
    assert_eq!(list.status(), 200);
    assert_eq!(list.head.header("content-length"), None, "{:?}", list.head);
    let all = events(&list.text());
    assert!(all.iter().all(|e| e.0.is_some()), "{all:?}");
    let result: Value = serde_json::from_str(&all.last().unwrap().1).expect("the whole result");
    assert!(
        result["result"]["tools"]
            .as_array()
            .is_some_and(|t| !t.is_empty()),
        "{result}"
    );
}
