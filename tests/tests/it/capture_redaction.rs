//! Capture never records a secret a body carried (issue 26), against the Rust mocks: batches,
//! serde's error text, elicitation answers and completion values are `"[redacted]"` in the
//! capture file by default, and the answer to a malformed body does not quote it. Capture with
//! the real SDKs: `capture.rs`.

use mcp_gateway_tests::harness::unique_temp_path;
use mcp_gateway_tests::{assert_eventually, open_session, Gateway, MockServer, Request};
use std::time::Duration;

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
