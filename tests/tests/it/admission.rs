//! Admission control against Rust mocks: every layer answers in JSON-RPC with the request's id,
//! a documented code, `Retry-After` and `data.retryAfterMs`, scope and limit; the connection is
//! kept; and a retry storm never pushes the backend past its cap.

use mcp_gateway_tests::client::Connection;
use mcp_gateway_tests::{assert_eventually, open_session, Gateway, MockServer, Request, Response};
use std::time::{Duration, Instant};

fn stateless(mock: &MockServer, limits: &str, route_limits: &str) -> String {
    format!(
        "limits: {limits}\npools: {{ p: {{ backends: [{}] }} }}\nroutes:\n  - path: /mcp\n    pool: p\n    limits: {route_limits}\n",
        mock.addr
    )
}

fn slow(id: u64, ms: u64) -> Request {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"slow","arguments":{{"ms":{ms}}}}}}}"#
    );
    Request::post("/mcp", body)
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", "slow")
}

fn assert_rejection(resp: &Response, status: u16, code: i64, id: u64) -> serde_json::Value {
    assert_eq!(
        resp.status(),
        status,
        "{}",
        String::from_utf8_lossy(&resp.body)
    );
    let v = resp.json();
    assert_eq!(v["id"], id);
    assert_eq!(v["error"]["code"], code);
    let retry = resp.head.header("retry-after").expect("Retry-After");
    assert!(retry.parse::<u64>().unwrap() >= 1);
    assert!(v["error"]["data"]["retryAfterMs"].as_u64().unwrap() >= 1);
    assert!(v["error"]["data"]["scope"].is_string());
    assert!(!v["error"]["data"]["limit"].is_null());
    v
}

#[tokio::test]
async fn the_in_flight_cap_refuses_with_503_and_never_reaches_the_backend() {
    let mock = MockServer::start("m").await;
    let gw = Gateway::start(&stateless(&mock, "{}", "{ max-inflight: 2 }")).await;
    // long calls: all five overlap even when the machine is loaded (with 600 ms the first two
    // could end before the last ones were admitted)
    let calls: Vec<_> = (0..5)
        .map(|i| {
            let (req, addr) = (slow(i, 3000), gw.addr);
            tokio::spawn(async move { req.send(addr).await })
        })
        .collect();
    let mut ok = 0;
    for (i, c) in calls.into_iter().enumerate() {
        let resp = c.await.unwrap();
        if resp.status() == 200 {
            ok += 1;
        } else {
            let v = assert_rejection(&resp, 503, -32018, i as u64);
            assert_eq!(v["error"]["data"]["reason"], "inflight");
            assert_eq!(v["error"]["data"]["scope"], "route");
        }
    }
    assert_eq!(ok, 2);
    assert_eq!(mock.max_concurrent(), 2);
    // the gateway counts a request (and a rejection) in its logging phase, after the client
    // has the answer
    assert_eventually!(
        Duration::from_secs(5),
        gw.metric("mcpgw_requests_total").await == 5.0,
        "all five calls are accounted"
    );
    assert_eq!(
        gw.metric("mcpgw_rejections_total{reason=\"overloaded\"}")
            .await,
        3.0
    );
}

#[tokio::test]
async fn the_client_rate_is_per_identity_and_keeps_the_connection() {
    let mock = MockServer::start("m").await;
    let gw = Gateway::start(&stateless(
        &mock,
        "{ client-id-header: X-Api-Key, rate: { per-second: 1, burst: 2 } }",
        "{}",
    ))
    .await;
    let mut alice = Connection::open(gw.addr).await;
    for i in 0..2 {
        assert_eq!(
            alice
                .send(&Request::tools_call("/mcp", i, "whoami").header("X-Api-Key", "alice"))
                .await
                .status(),
            200
        );
    }
    let resp = alice
        .send(&Request::tools_call("/mcp", 7, "whoami").header("X-Api-Key", "alice"))
        .await;
    let v = assert_rejection(&resp, 429, -32017, 7);
    assert_eq!(v["error"]["data"]["scope"], "client");
    // another key has its own bucket; alice's connection still works once her bucket refills
    assert_eq!(
        Request::tools_call("/mcp", 8, "whoami")
            .header("X-Api-Key", "bob")
            .send(gw.addr)
            .await
            .status(),
        200
    );
    // Time passing is the point here: the bucket refills at 1 token per second, and nothing
    // but the clock can show it (a probe request would spend the token). 1.1 s since her
    // last admitted call is past the refill with margin.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(
        alice
            .send(&Request::tools_call("/mcp", 9, "whoami").header("X-Api-Key", "alice"))
            .await
            .status(),
        200
    );
}

#[tokio::test]
async fn the_tool_rate_applies_to_matching_tools_only() {
    let mock = MockServer::start("m").await;
    let gw = Gateway::start(&stateless(
        &mock,
        "{ tool-rate: { per-second: 0.5, burst: 1, tools: [\"report_*\"] } }",
        "{}",
    ))
    .await;
    assert_eq!(
        Request::tools_call("/mcp", 1, "report_q3")
            .send(gw.addr)
            .await
            .status(),
        200
    );
    let v = assert_rejection(
        &Request::tools_call("/mcp", 2, "report_q3")
            .send(gw.addr)
            .await,
        429,
        -32017,
        2,
    );
    assert_eq!(v["error"]["data"]["scope"], "tool");
    assert_eq!(v["error"]["data"]["tool"], "report_q3");
    assert_eq!(
        Request::tools_call("/mcp", 3, "whoami")
            .send(gw.addr)
            .await
            .status(),
        200
    );
    // legacy bodies without MCP headers are checked too
    let legacy = r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"report_q3"}}"#;
    assert_rejection(
        &Request::post("/mcp", legacy).send(gw.addr).await,
        429,
        -32017,
        4,
    );
}

#[tokio::test]
async fn sessions_per_client_are_capped_and_given_back_on_delete() {
    let mock = MockServer::legacy("l", 0, "2025-11-25").await;
    let gw = Gateway::start(&format!(
        "limits: {{ max-sessions-per-client: 1 }}\npools: {{ p: {{ backends: [{}] }} }}\nroutes: [ {{ path: /mcp, pool: p, mode: stateful }} ]\n",
        mock.addr
    ))
    .await;
    let init = |id: u64| {
        Request::post(
            "/mcp",
            format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"initialize","params":{{"protocolVersion":"2025-11-25","capabilities":{{}},"clientInfo":{{"name":"t","version":"1"}}}}}}"#
            ),
        )
    };
    let first = init(1).send(gw.addr).await;
    let sid = first.head.header("mcp-session-id").unwrap().to_owned();
    let v = assert_rejection(&init(2).send(gw.addr).await, 503, -32016, 2);
    assert_eq!(v["error"]["data"]["scope"], "client");
    assert_eq!(
        mock.sessions().initializes(),
        1,
        "refused before reaching the backend"
    );
    let delete = Request::session_delete(&sid);
    assert_eq!(delete.send(gw.addr).await.status(), 200);
    assert_eq!(init(3).send(gw.addr).await.status(), 200);
}

#[tokio::test]
async fn the_stream_cap_counts_open_get_streams() {
    let mock = MockServer::legacy("l", 0, "2025-11-25").await;
    let gw = Gateway::start(&format!(
        "pools: {{ p: {{ backends: [{}] }} }}\nroutes: [ {{ path: /mcp, pool: p, mode: stateful, limits: {{ max-streams: 1 }} }} ]\n",
        mock.addr
    ))
    .await;
    let sid = open_session(gw.addr).await;
    let get = Request::session_stream(&sid);
    let (first, addr) = (get.clone(), gw.addr);
    let open = tokio::spawn(async move {
        tokio::time::timeout(Duration::from_secs(2), first.send_timed(addr)).await
    });
    // the gauge goes up when the stream is admitted, and down when it ends
    assert_eventually!(
        Duration::from_secs(2),
        gw.metric("mcpgw_open_streams").await == 1.0,
        "the first GET stream holds the route's one stream slot"
    );
    let resp = get.send(gw.addr).await;
    assert_eq!(resp.status(), 503);
    assert_eq!(resp.json()["error"]["data"]["reason"], "streams");
    assert_eq!(resp.json()["error"]["code"], -32018);
    // POSTs are not streams: the session works while its stream is open
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"whoami"}}"#;
    let resp = Request::post("/mcp", call)
        .header("Mcp-Session-Id", &sid)
        .send(gw.addr)
        .await;
    assert_eq!(resp.tool_text(), "l");
    let _ = open.await;
}

#[tokio::test]
async fn a_tool_past_its_deadline_is_cancelled_and_answered_with_32012() {
    let mock = MockServer::start("m").await;
    let gw = Gateway::start(&stateless(
        &mock,
        "{}",
        "{ tool-timeouts: { \"slow\": 300 } }",
    ))
    .await;
    let started = Instant::now();
    let resp = slow(5, 3000).send(gw.addr).await;
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "answered at the deadline"
    );
    assert_eq!(resp.status(), 200);
    let v = resp.json();
    assert_eq!(v["id"], 5);
    assert_eq!(v["error"]["code"], -32012);
    assert_eq!(v["error"]["data"]["timeoutMs"], 300);
    // other tools are not bounded by it
    assert_eq!(
        Request::tools_call("/mcp", 6, "whoami")
            .send(gw.addr)
            .await
            .status(),
        200
    );
}

#[tokio::test]
async fn a_streamed_answer_past_its_deadline_ends_with_the_error_event() {
    let mock = MockServer::start("m").await;
    let gw = Gateway::start(&stateless(&mock, "{}", "{ timeout-ms: 700 }")).await;
    let body = r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"sse_progress","arguments":{"steps":6,"gap_ms":300}}}"#;
    let resp = Request::post("/mcp", body)
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", "sse_progress")
        .send(gw.addr)
        .await;
    let text = String::from_utf8_lossy(&resp.body);
    assert!(text.contains("notifications/progress"), "{text}");
    assert_eq!(resp.json()["error"]["code"], -32012);
    assert_eq!(resp.json()["id"], 9);
}

#[tokio::test]
async fn a_session_call_past_its_deadline_is_cancelled_in_the_backend_session() {
    let mock = MockServer::legacy("l", 0, "2025-11-25").await;
    let gw = Gateway::start(&format!(
        "pools: {{ p: {{ backends: [{}] }} }}\nroutes: [ {{ path: /mcp, pool: p, mode: stateful, limits: {{ tool-timeouts: {{ sleep: 300 }} }} }} ]\n",
        mock.addr
    ))
    .await;
    let sid = open_session(gw.addr).await;
    let call = r#"{"jsonrpc":"2.0","id":"long-1","method":"tools/call","params":{"name":"sleep","arguments":{"ms":3000}}}"#;
    let resp = Request::post("/mcp", call)
        .header("Mcp-Session-Id", &sid)
        .header("MCP-Protocol-Version", "2025-11-25")
        .send(gw.addr)
        .await;
    assert_eq!(resp.json()["error"]["code"], -32012);
    assert_eq!(resp.json()["id"], "long-1");
    // the cancellation goes out in the background: the client's answer does not wait for it
    let cancel_seen = || {
        mock.requests().iter().any(|r| {
            String::from_utf8_lossy(&r.body)
                .contains(r#""method":"notifications/cancelled","params":{"requestId":"long-1""#)
        })
    };
    assert_eventually!(
        Duration::from_secs(3),
        cancel_seen(),
        "the backend session was told to cancel"
    );
    // the session is fine afterwards
    let next = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"whoami"}}"#;
    let resp = Request::post("/mcp", next)
        .header("Mcp-Session-Id", &sid)
        .send(gw.addr)
        .await;
    assert_eq!(resp.tool_text(), "l");
}

#[tokio::test]
async fn a_retry_storm_never_pushes_the_backend_past_its_cap_and_everything_recovers() {
    let mock = MockServer::start("m").await;
    let gw = Gateway::start(&stateless(&mock, "{ max-inflight: 10 }", "{}")).await;
    let stop_at = Instant::now() + Duration::from_secs(3);
    let clients: Vec<_> = (0..200)
        .map(|i| {
            let addr = gw.addr;
            tokio::spawn(async move {
                let (mut ok, mut refused) = (0, 0);
                let mut conn = Connection::open(addr).await;
                while Instant::now() < stop_at {
                    // retry at once on any error, as a naive client would
                    let resp = conn.send(&slow(i, 100)).await;
                    if resp.status() == 200 {
                        ok += 1;
                    } else {
                        assert_eq!(
                            resp.json()["error"]["code"],
                            -32018,
                            "refusals are JSON-RPC"
                        );
                        refused += 1;
                    }
                }
                (ok, refused)
            })
        })
        .collect();
    // the health endpoint keeps answering during the storm: once it is on (the backend is
    // busy and the gateway refuses), five samples 300 ms apart, spread over it on purpose
    assert_eventually!(
        Duration::from_secs(3),
        mock.in_flight() > 0
            && gw
                .metric("mcpgw_rejections_total{reason=\"overloaded\"}")
                .await
                > 0.0,
        "the storm is on"
    );
    for _ in 0..5 {
        let started = Instant::now();
        let (status, _) = gw.admin_get("/healthz").await;
        assert_eq!(status, 200);
        assert!(started.elapsed() < Duration::from_secs(1));
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let (mut ok, mut refused) = (0, 0);
    for c in clients {
        let (o, r) = c.await.unwrap();
        ok += o;
        refused += r;
    }
    assert!(ok > 0 && refused > 0, "ok {ok}, refused {refused}");
    assert!(
        mock.max_concurrent() <= 10,
        "backend saw {}",
        mock.max_concurrent()
    );
    // after the storm: normal service, no restart
    assert_eq!(slow(1, 10).send(gw.addr).await.status(), 200);
}
