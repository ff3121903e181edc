//! Hostile clients, round 3 (issue 26), against the Rust mocks: capture never records a secret
//! a body carried (batches, serde's error text, elicitation answers, completion values); a
//! JWKS URL that never answers costs a token at most `fetch-timeout-s` (503 -32025).

use mcp_gateway_tests::harness::unique_temp_path;
use mcp_gateway_tests::{assert_eventually, open_session, Gateway, MockServer, Request};
use std::time::{Duration, Instant};

async fn post_in(gw: &Gateway, sid: Option<&str>, body: &str) -> mcp_gateway_tests::Response {
    let mut req = Request::post("/mcp", body.to_owned());
    if let Some(sid) = sid {
        req = req
            .header("Mcp-Session-Id", sid)
            .header("MCP-Protocol-Version", "2025-11-25");
    }
    req.send(gw.addr).await
}

#[tokio::test]
async fn capture_redacts_batches_serde_errors_elicitation_answers_and_completions_by_default() {
    let backend = MockServer::legacy("b", 0, "2025-11-25").await;
    let file = unique_temp_path("mcpgw-capture3").with_extension("jsonl");
    let gw = Gateway::start(&format!(
        "pools: {{ p: {{ backends: [{}] }} }}\nroutes: [ {{ path: /mcp, pool: p, mode: auto, capture: {{ file: {} }} }} ]\n",
        backend.addr,
        file.display()
    ))
    .await;
    let batch = r#"[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"login","arguments":{"pw":"hunter2-batch"}}}]"#;
    let resp = post_in(&gw, None, batch).await;
    assert_eq!(resp.status(), 400, "{}", resp.text());
    assert_eq!(resp.json()["error"]["code"], -32600);
    let typed = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":"hunter2-params"}"#;
    let resp = post_in(&gw, None, typed).await;
    assert_eq!(resp.status(), 400, "{}", resp.text());
    assert_eq!(resp.json()["error"]["code"], -32600);
    assert!(
        !resp.text().contains("hunter2"),
        "the answer quotes the body: {}",
        resp.text()
    );
    let sid = open_session(gw.addr).await;
    let elicited = r#"{"jsonrpc":"2.0","id":"srv-1","result":{"action":"accept","content":{"pin":"hunter2-elicit"}}}"#;
    post_in(&gw, Some(&sid), elicited).await;
    let complete = r#"{"jsonrpc":"2.0","id":3,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"city","value":"hunter2-complete"},"context":{"arguments":{"country":"hunter2-context"}}}}"#;
    post_in(&gw, Some(&sid), complete).await;
    let lines = || std::fs::read_to_string(&file).unwrap_or_default();
    assert_eventually!(
        Duration::from_secs(10),
        lines().contains("completion/complete") && lines().lines().count() >= 5,
        "every request is recorded in {}",
        file.display()
    );
    let text = lines();
    assert!(!text.contains("hunter2"), "a secret in the capture: {text}");
    assert!(text.contains("[redacted]"), "{text}");
}

#[tokio::test]
async fn a_jwks_url_that_never_answers_is_a_503_after_the_fetch_timeout() {
    use mcp_gateway_tests::auth::{token, ISSUER, RESOURCE};
    // Accepts, reads the request, never answers (the issue saw 95 s of this).
    let idp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let idp_addr = idp.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = idp.accept().await {
            held.push(s);
        }
    });
    let backend = MockServer::start("b").await;
    let gw = Gateway::start(&format!(
        "auth:\n  resource: {RESOURCE}\n  authorization-servers: [{ISSUER}]\n  \
         jwt: {{ issuer: {ISSUER}, audiences: [{RESOURCE}], jwks: {{ url: http://{idp_addr}/jwks }} }}\n\
         pools: {{ p: {{ backends: [{}] }} }}\nroutes: [ {{ path: /mcp, pool: p, mode: stateless, auth: required }} ]\n",
        backend.addr
    ))
    .await;
    let started = Instant::now();
    let resp = Request::tools_call("/mcp", 1, "whoami")
        .header(
            "Authorization",
            &format!("Bearer {}", token("alice", "tools")),
        )
        .send(gw.addr)
        .await;
    let took = started.elapsed();
    assert_eq!(resp.status(), 503, "{}", resp.text());
    let v = resp.json();
    assert_eq!(v["error"]["code"], -32025, "{v}");
    assert_eq!(v["id"], 1);
    // the documented default, 5 s, and not much more
    assert!(
        took >= Duration::from_secs(4) && took < Duration::from_secs(8),
        "answered after {took:?}"
    );
    assert_eq!(backend.count(), 0);
}
