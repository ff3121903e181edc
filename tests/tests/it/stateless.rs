//! Stateless passthrough (2026-07-28 requests) against Rust mock backends: routing, balancing,
//! byte identity, streaming, bodies large and small, and every gateway error.

use mcp_gateway_tests::client::{Connection, META};
use mcp_gateway_tests::mock::ODD_RESPONSE;
use mcp_gateway_tests::{assert_eventually, DeadAddr, Gateway, MockServer, Request};
use std::time::Duration;

fn two_pools(modern: &[&MockServer], heavy: &MockServer) -> String {
    let list: Vec<String> = modern.iter().map(|m| m.addr.to_string()).collect();
    format!(
        "pools:\n  modern: {{ backends: [{}], balance: round-robin }}\n  heavy: {{ backends: [{}] }}\n\
         routes:\n  - path: /mcp\n    mode: stateless\n    pool: modern\n    upstream-path: /mcp\n    rules:\n\
         \x20     - match: {{ method: tools/call, name: \"report_*\" }}\n        pool: heavy\n",
        list.join(", "),
        heavy.addr
    )
}

async fn setup() -> (MockServer, MockServer, MockServer, Gateway) {
    let a = MockServer::start("a").await;
    let b = MockServer::start("b").await;
    let heavy = MockServer::start("heavy").await;
    let gw = Gateway::start(&two_pools(&[&a, &b], &heavy)).await;
    (a, b, heavy, gw)
}

#[tokio::test]
async fn stateless_requests_are_balanced_across_the_pool() {
    let (a, b, heavy, gw) = setup().await;
    let mut conn = Connection::open(gw.addr).await;
    let mut names = Vec::new();
    for i in 0..10 {
        let resp = conn.send(&Request::tools_call("/mcp", i, "whoami")).await;
        assert_eq!(resp.status(), 200);
        names.push(resp.tool_text());
    }
    assert_eq!(a.count(), 5, "{names:?}");
    assert_eq!(b.count(), 5, "{names:?}");
    assert_eq!(heavy.count(), 0);
    // The backend sees the Host it accepts (its own address) and the upstream path.
    let seen = &a.requests()[0].head;
    assert_eq!(seen.header("host"), Some(a.addr.to_string().as_str()));
    assert_eq!(seen.path, "/mcp");
}

#[tokio::test]
async fn routing_rule_sends_report_calls_to_the_heavy_pool() {
    let (a, b, heavy, gw) = setup().await;
    for i in 0..4 {
        let resp = Request::tools_call("/mcp", i, "report_q3")
            .send(gw.addr)
            .await;
        assert_eq!(resp.tool_text(), "heavy");
    }
    let resp = Request::tools_call("/mcp", 9, "reporter")
        .send(gw.addr)
        .await;
    assert_ne!(
        resp.tool_text(),
        "heavy",
        "report_* must not match `reporter`"
    );
    assert_eq!(heavy.count(), 4);
    assert_eq!(a.count() + b.count(), 1);
}

#[tokio::test]
async fn stateless_body_is_forwarded_byte_identical_both_ways() {
    let (a, _b, _heavy, gw) = setup().await;
    // key order, whitespace, unicode escapes, a 21-digit integer and 1e400 must all survive
    let body = "{ \"params\" : {\"_meta\":{\"z\":1,\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"a\":\"\\u00e9\\ud83d\\ude00\"},\n\t\"arguments\":{\"big\":123456789012345678901,\"huge\":1e400,\"neg\":-0.0},\"name\":\"odd_response\"},\"method\":\"tools/call\",\"id\":1,\"jsonrpc\":\"2.0\"}";
    let resp = Request::post("/mcp", body)
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", "odd_response")
        .send(gw.addr)
        .await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.body, ODD_RESPONSE.as_bytes(), "response bytes changed");
    let seen = a.requests().pop().expect("backend saw the request");
    assert_eq!(seen.body, body.as_bytes(), "request bytes changed");
}

#[tokio::test]
async fn header_body_mismatch_is_answered_with_32020_and_the_request_id() {
    let (a, b, _heavy, gw) = setup().await;
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":"req-7","method":"tools/call","params":{{"name":"whoami",{META}}}}}"#
    );
    for (header, value) in [("Mcp-Name", "other"), ("Mcp-Method", "tools/list")] {
        let mut req =
            Request::post("/mcp", body.clone()).header("MCP-Protocol-Version", "2026-07-28");
        if header == "Mcp-Name" {
            req = req.header("Mcp-Method", "tools/call");
        }
        let resp = req.header(header, value).send(gw.addr).await;
        assert_eq!(resp.status(), 400);
        let v = resp.json();
        assert_eq!(v["id"], "req-7");
        assert_eq!(v["error"]["code"], -32020);
        assert_eq!(v["error"]["data"]["header"], header.to_ascii_lowercase());
    }
    // version header vs _meta
    let resp = Request::post("/mcp", body.clone())
        .header("MCP-Protocol-Version", "2027-01-01")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", "whoami")
        .send(gw.addr)
        .await;
    assert_eq!(
        resp.json()["error"]["data"]["header"],
        "mcp-protocol-version"
    );
    assert_eq!(
        a.count() + b.count(),
        0,
        "a refused request must not reach a backend"
    );
}

#[tokio::test]
async fn duplicated_or_undecodable_mcp_headers_get_32020() {
    let (_a, _b, _heavy, gw) = setup().await;
    let dup = Request::tools_call("/mcp", 3, "whoami").header("Mcp-Name", "whoami");
    let resp = dup.send(gw.addr).await;
    assert_eq!(resp.status(), 400);
    assert_eq!(resp.json()["error"]["data"]["reason"], "duplicated");
    assert_eq!(resp.json()["id"], 3);
    let bad = Request::post(
        "/mcp",
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"x"}}"#,
    )
    .header("Mcp-Method", "tools/call")
    .header("Mcp-Name", "=?base64?%%%?=");
    let resp = bad.send(gw.addr).await;
    assert_eq!(resp.json()["error"]["data"]["reason"], "undecodable");
    assert_eq!(resp.json()["id"], 4);
}

#[tokio::test]
async fn base64_encoded_names_are_decoded_for_routing() {
    let (_a, _b, heavy, gw) = setup().await;
    // "report_é" — non-ASCII names travel as =?base64?...?=
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"report_\u00e9",{META}}}}}"#
    );
    let resp = Request::post("/mcp", body)
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", "=?base64?cmVwb3J0X8Op?=")
        .send(gw.addr)
        .await;
    assert_eq!(
        resp.status(),
        200,
        "{}",
        String::from_utf8_lossy(&resp.body)
    );
    assert_eq!(heavy.count(), 1);
}

#[tokio::test]
async fn a_one_mib_call_and_a_chunked_upload_work() {
    let (a, b, _heavy, gw) = setup().await;
    let text = "x".repeat(1024 * 1024);
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"whoami","arguments":{{"text":"{text}"}},{META}}}}}"#
    );
    let req = Request::post("/mcp", body.clone())
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", "whoami");
    let resp = req.send(gw.addr).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.json()["result"]["bodyBytes"], body.len());
    // the same body, chunked in odd pieces (no content-length): size is enforced while streaming
    let resp = req.clone().chunked(7777).send(gw.addr).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.json()["result"]["bodyBytes"], body.len());
    let all: Vec<_> = a.requests().into_iter().chain(b.requests()).collect();
    assert!(all.iter().all(|r| r.body == body.as_bytes()));
}

#[tokio::test]
async fn legacy_bodies_without_headers_are_routed_by_their_method_even_when_large() {
    let (_a, _b, heavy, gw) = setup().await;
    let small = r#"{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"report_x"}}"#;
    let resp = Request::post("/mcp", small).send(gw.addr).await;
    assert_eq!(resp.tool_text(), "heavy");
    // larger than pingora's 64 KiB retry buffer, chunked too
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{{"name":"report_y","arguments":{{"pad":"{}"}}}}}}"#,
        "p".repeat(300_000)
    );
    let resp = Request::post("/mcp", big.clone())
        .chunked(65_000)
        .send(gw.addr)
        .await;
    assert_eq!(resp.tool_text(), "heavy");
    assert_eq!(heavy.requests().last().unwrap().body, big.as_bytes());
    // streaming answers pass through this path too
    let sse = r#"{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"sse_progress","arguments":{"steps":2,"gap_ms":10}}}"#;
    let resp = Request::post("/mcp", sse).send(gw.addr).await;
    assert_eq!(resp.json()["id"], 13);
}

#[tokio::test]
async fn oversized_bodies_get_413_with_the_request_id() {
    let a = MockServer::start("a").await;
    let gw = Gateway::start(&format!(
        "max-body-bytes: 1000\npools: {{ p: {{ backends: [{}] }} }}\nroutes: [ {{ path: /mcp, pool: p }} ]\n",
        a.addr
    ))
    .await;
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":77,"method":"tools/call","params":{{"name":"whoami","arguments":{{"pad":"{}"}}}}}}"#,
        "p".repeat(5000)
    );
    let mut conn = Connection::open(gw.addr).await;
    let resp = conn.send(&Request::post("/mcp", body.clone())).await;
    assert_eq!(resp.status(), 413);
    assert_eq!(resp.json()["id"], 77);
    assert_eq!(resp.json()["error"]["code"], -32014);
    assert_eq!(resp.json()["error"]["data"]["limitBytes"], 1000);
    assert_eq!(resp.json()["error"]["data"]["scope"], "request");
    // the body was drained: the same connection still works
    let ok = conn.send(&Request::tools_call("/mcp", 78, "whoami")).await;
    assert_eq!(ok.status(), 200);
    // chunked (no declared length): refused while streaming
    let resp = Request::tools_call("/mcp", 79, "whoami")
        .header("X-Pad", "1")
        .chunked(100);
    let mut big = resp.clone();
    big.body = body.into_bytes();
    let resp = big.send(gw.addr).await;
    assert_eq!(resp.status(), 413);
    assert_eq!(a.count(), 1);
}

#[tokio::test]
async fn malformed_json_and_batches_get_json_rpc_errors() {
    let (_a, _b, _heavy, gw) = setup().await;
    let cases: [(&str, i64, u16); 3] = [
        (r#"{"jsonrpc":"2.0","id":1,"method""#, -32700, 400),
        (r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#, -32600, 400),
        (
            r#"{"jsonrpc":"2.0","id":{"x":1},"method":"tools/call"}"#,
            -32600,
            400,
        ),
    ];
    for (body, code, status) in cases {
        let resp = Request::post("/mcp", body)
            .header("MCP-Protocol-Version", "2026-07-28")
            .header("Mcp-Method", "tools/call")
            .send(gw.addr)
            .await;
        assert_eq!(resp.status(), status, "{body}");
        assert_eq!(resp.json()["error"]["code"], code, "{body}");
        assert!(resp.json()["error"]["data"].is_object());
    }
}

#[tokio::test]
async fn unknown_paths_get_404_with_a_json_rpc_body() {
    let (_a, _b, _heavy, gw) = setup().await;
    let resp = Request::post(
        "/elsewhere",
        r#"{"jsonrpc":"2.0","id":"q","method":"ping"}"#,
    )
    .send(gw.addr)
    .await;
    assert_eq!(resp.status(), 404);
    assert_eq!(resp.json()["id"], "q");
    assert_eq!(resp.json()["error"]["code"], -32010);
}

#[tokio::test]
async fn progress_events_stream_through_as_the_backend_sends_them() {
    let (_a, _b, _heavy, gw) = setup().await;
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{{"name":"sse_progress","arguments":{{"steps":3,"gap_ms":300}},{META}}}}}"#
    );
    let req = Request::post("/mcp", body)
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", "sse_progress");
    let (head, chunks) = req.send_timed(gw.addr).await;
    assert_eq!(head.header("content-type"), Some("text/event-stream"));
    let text: Vec<String> = chunks
        .iter()
        .map(|(_, c)| String::from_utf8_lossy(c).into_owned())
        .collect();
    let progress: Vec<_> = chunks
        .iter()
        .zip(&text)
        .filter(|(_, t)| t.contains("notifications/progress"))
        .map(|((at, _), _)| *at)
        .collect();
    let result_at = chunks
        .iter()
        .zip(&text)
        .find(|(_, t)| t.contains("\"result\""))
        .map(|((at, _), _)| *at)
        .expect("result event");
    assert_eq!(progress.len(), 3, "{text:?}");
    // spread in time as sent (300 ms apart), and all before the result
    for w in progress.windows(2) {
        assert!(
            w[1] - w[0] >= Duration::from_millis(200),
            "events were buffered: {text:?}"
        );
    }
    assert!(result_at - progress[0] >= Duration::from_millis(600));
}

#[tokio::test]
async fn a_refused_backend_is_retried_on_another_and_marked_down() {
    let live = MockServer::start("live").await;
    let dead = DeadAddr::new();
    let gw = Gateway::start(&format!(
        "pools: {{ p: {{ backends: [{dead}, {}], balance: round-robin, failure-cooldown-ms: 60000 }} }}\nroutes: [ {{ path: /mcp, pool: p }} ]\n",
        live.addr
    ))
    .await;
    for i in 0..6 {
        let resp = Request::tools_call("/mcp", i, "whoami").send(gw.addr).await;
        assert_eq!(resp.status(), 200);
        assert_eq!(resp.tool_text(), "live");
    }
    assert_eq!(live.count(), 6);
    // marked failed after the first refusal: skipped from then on
    let failures = gw
        .metric(&format!(
            "mcpgw_upstream_connect_failures_total{{backend=\"{dead}\"}}"
        ))
        .await;
    assert_eq!(failures, 1.0);
    assert_eq!(
        gw.metric(&format!("mcpgw_backend_up{{backend=\"{dead}\"}}"))
            .await,
        0.0
    );
}

#[tokio::test]
async fn no_backend_left_gets_503_retry_after_and_a_json_rpc_error() {
    let (dead1, dead2) = (DeadAddr::new(), DeadAddr::new());
    let gw = Gateway::start(&format!(
        "pools: {{ p: {{ backends: [{dead1}, {dead2}] }} }}\nroutes: [ {{ path: /mcp, pool: p }} ]\n"
    ))
    .await;
    let resp = Request::tools_call("/mcp", 42, "whoami")
        .send(gw.addr)
        .await;
    assert_eq!(resp.status(), 503);
    assert_eq!(resp.head.header("retry-after"), Some("1"));
    let v = resp.json();
    assert_eq!(v["id"], 42);
    assert_eq!(v["error"]["code"], -32011);
    assert_eq!(v["error"]["data"]["backendsTried"], 2);
    assert_eq!(v["error"]["data"]["retryAfterMs"], 1000);
    let (status, _) = gw.admin_get("/readyz").await;
    assert_eq!(status, 503);
}

#[tokio::test]
async fn a_backend_that_drops_the_connection_gets_a_json_rpc_error_with_the_id() {
    let (_a, _b, _heavy, gw) = setup().await;
    let resp = Request::tools_call("/mcp", 31, "drop_connection")
        .send(gw.addr)
        .await;
    let v = resp.json();
    assert_eq!(v["id"], 31);
    assert_eq!(v["error"]["code"], -32013);
    assert_eq!(v["error"]["data"]["outcome"], "unknown");
}

#[tokio::test]
async fn admin_endpoints_answer_and_metrics_count_requests() {
    let a = MockServer::start("a").await;
    let b = MockServer::start("b").await;
    let heavy = MockServer::start("heavy").await;
    let gw = Gateway::start(&format!(
        "metric-tools: [whoami]\n{}",
        two_pools(&[&a, &b], &heavy)
    ))
    .await;
    Request::tools_call("/mcp", 1, "whoami").send(gw.addr).await;
    Request::tools_call("/mcp", 2, "secret_tool_name")
        .send(gw.addr)
        .await;
    // the gateway counts a request in its logging phase, after the client has the answer
    assert_eventually!(
        Duration::from_secs(5),
        gw.metric("mcpgw_tool_calls_total").await == 2.0,
        "both calls are accounted"
    );
    assert_eq!(
        gw.metric("mcpgw_tool_calls_total{tool=\"whoami\",outcome=\"ok\"}")
            .await,
        1.0
    );
    assert_eq!(
        gw.metric("mcpgw_tool_calls_total{tool=\"other\"}").await,
        1.0,
        "unlisted tools are not labels"
    );
    let (_, text) = gw.admin_get("/metrics").await;
    assert!(!text.contains("secret_tool_name"));
    assert_eq!(
        gw.metric("mcpgw_upstream_duration_seconds_count{pool=\"modern\"}")
            .await,
        2.0
    );
    assert_eq!(gw.admin_get("/healthz").await.0, 200);
    assert_eq!(gw.admin_get("/readyz").await.0, 200);
    let ok = gw
        .metric("mcpgw_requests_total{route=\"/mcp\",method=\"tools/call\",outcome=\"ok\"}")
        .await;
    assert_eq!(ok, 2.0);
    assert_eq!(
        gw.metric("mcpgw_requests_by_era_total{era=\"stateless\"}")
            .await,
        2.0
    );
}

#[tokio::test]
async fn request_ids_reach_the_backend_and_come_back_on_gateway_errors() {
    let (a, b, _heavy, gw) = setup().await;
    Request::tools_call("/mcp", 1, "whoami")
        .header("X-Request-Id", "trace-abc")
        .send(gw.addr)
        .await;
    Request::tools_call("/mcp", 2, "whoami").send(gw.addr).await;
    let seen: Vec<String> = a
        .requests()
        .into_iter()
        .chain(b.requests())
        .filter_map(|r| r.head.header("x-request-id").map(str::to_owned))
        .collect();
    assert_eq!(
        seen.len(),
        2,
        "every upstream request carries an id: {seen:?}"
    );
    assert!(
        seen.contains(&"trace-abc".to_owned()),
        "the client's id is kept: {seen:?}"
    );
    let resp = Request::post("/nowhere", "{}")
        .header("X-Request-Id", "trace-err")
        .send(gw.addr)
        .await;
    assert_eq!(resp.head.header("x-request-id"), Some("trace-err"));
}

#[tokio::test]
async fn a_refusal_from_a_session_server_reaches_the_client_without_its_session_id() {
    // a 2026-07-28 request on a stateless route in front of a legacy server: the server refuses
    // it (400, "Missing session ID") with a throwaway session id, which must not reach clients
    // (declared modern: with its era probed, the gateway would not send it there at all)
    let legacy = MockServer::legacy("l", 0, "2025-11-25").await;
    let gw = Gateway::start(&format!(
        "pools: {{ p: {{ backends: [{}], era: modern }} }}\nroutes: [ {{ path: /mcp, pool: p, mode: stateless }} ]\n",
        legacy.addr
    ))
    .await;
    let resp = Request::tools_call("/mcp", 1, "whoami").send(gw.addr).await;
    assert_eq!(resp.status(), 400);
    assert_eq!(resp.head.header("mcp-session-id"), None);
}
