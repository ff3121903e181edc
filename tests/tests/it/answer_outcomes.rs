//! What an answer said, counted on every path (issue 26): a `tools/call` result with
//! `isError: true` is outcome `tool-error` in `mcpgw_requests_total` and
//! `mcpgw_tool_calls_total`, a JSON-RPC error answered with HTTP 200 is outcome `rpc-error` and
//! counted by its code in `mcpgw_rpc_errors_total`: on the stateless fast path (JSON and SSE
//! answers, the Rust mock and the real mcp 2.3.0 server), on stateful routes (the real FastMCP
//! 1.30.0 conformance fixture's `test_error_handling`, SSE answers, with and without the
//! gateway's resumable answers) and on the era bridge.

use mcp_gateway_tests::mock::modern::ModernMock;
use mcp_gateway_tests::{Gateway, PythonPeer, ReplClient, Request};
use serde_json::json;
use std::time::Duration;

const TOOL_ERROR: &str = r#"outcome="tool-error""#;

async fn outcomes(gw: &Gateway, route: &str) -> (f64, f64, f64, f64) {
    let m = |o: &str| {
        format!(r#"mcpgw_requests_total{{route="{route}",method="tools/call",outcome="{o}"}}"#)
    };
    (
        gw.metric(&m("ok")).await,
        gw.metric(&m("tool-error")).await,
        gw.metric(&m("rpc-error")).await,
        gw.metric(&format!(
            r#"mcpgw_tool_calls_total{{route="{route}",{TOOL_ERROR}}}"#
        ))
        .await,
    )
}

#[tokio::test]
async fn tool_errors_and_rpc_errors_are_counted_on_the_stateless_fast_path() {
    let mock = ModernMock::start("m").await;
    let gw = Gateway::start(&format!(
        "pools:\n  p: {{ backends: [{}] }}\nroutes:\n  - {{ path: /mcp, mode: stateless, pool: p }}\n",
        mock.addr
    ))
    .await;
    let ok = Request::tools_call("/mcp", 1, "whoami").send(gw.addr).await;
    assert_eq!(ok.tool_text(), "m");
    let fail = Request::tools_call("/mcp", 2, "fail").send(gw.addr).await;
    assert_eq!(fail.json()["result"]["isError"], true, "{}", fail.text());
    let sse = Request::tools_call("/mcp", 3, "fail_sse")
        .send(gw.addr)
        .await;
    assert!(
        sse.text().contains("notifications/progress"),
        "{}",
        sse.text()
    );
    assert_eq!(sse.json()["result"]["isError"], true);
    let unknown = Request::tools_call("/mcp", 4, "nope").send(gw.addr).await;
    assert_eq!(unknown.status(), 200);
    assert_eq!(unknown.json()["error"]["code"], -32602);
    assert_eq!(outcomes(&gw, "/mcp").await, (1.0, 2.0, 1.0, 2.0));
    assert_eq!(
        gw.metric(r#"mcpgw_rpc_errors_total{route="/mcp",method="tools/call",code="-32602"}"#)
            .await,
        1.0
    );
    // a gateway error is still counted by its kind, never as a backend's rpc-error
    let refused = Request::tools_call("/other", 5, "whoami")
        .send(gw.addr)
        .await;
    assert_eq!(refused.status(), 404);
    assert_eq!(gw.metric(r#"mcpgw_rpc_errors_total"#).await, 1.0);
}

#[tokio::test]
async fn the_real_stateless_sdk_servers_tool_errors_are_counted() {
    let server = PythonPeer::stateless_v2("s").await;
    let gw = Gateway::start(&format!(
        "pools:\n  p: {{ backends: [{}] }}\nroutes:\n  - {{ path: /mcp, mode: stateless, pool: p }}\n",
        server.addr()
    ))
    .await;
    let ok = Request::tools_call("/mcp", 1, "whoami").send(gw.addr).await;
    assert_eq!(ok.status(), 200, "{}", ok.text());
    // mcp 2.3.0 answers an unknown tool (and bad arguments) with an isError result, isError
    // before `resultType` and `_meta`
    let unknown = Request::tools_call("/mcp", 2, "nope").send(gw.addr).await;
    assert_eq!(
        unknown.json()["result"]["isError"],
        true,
        "{}",
        unknown.text()
    );
    let bad = Request::tools_call("/mcp", 3, "echo_size")
        .send(gw.addr)
        .await;
    assert_eq!(bad.json()["result"]["isError"], true, "{}", bad.text());
    assert_eq!(outcomes(&gw, "/mcp").await, (1.0, 2.0, 0.0, 2.0));
}

/// The conformance fixture (FastMCP 1.30.0, SSE answers) through a stateful route, with the
/// gateway relaying answers as they come (`resume.enabled: false`) and with its resumable
/// answers (the default): `test_error_handling` is a tool error both ways.
#[tokio::test]
async fn the_conformance_fixtures_error_tool_is_a_tool_error_on_stateful_routes() {
    let server = PythonPeer::start(
        "mcp1",
        "conformance_server.py",
        &["--port", "0", "--name", "conformance"],
    )
    .await;
    for resume in ["false", "true"] {
        let gw = Gateway::start(&format!(
            "sessions:\n  resume:\n    enabled: {resume}\npools:\n  p: {{ backends: [{}] }}\nroutes:\n  - {{ path: /mcp, mode: stateful, pool: p }}\n",
            server.addr()
        ))
        .await;
        let mut client = ReplClient::connect("mcp1", &gw.url("/mcp"), None).await;
        let failed = client
            .cmd(json!({"op": "call", "name": "test_error_handling", "args": {}}))
            .await;
        assert_eq!(failed["isError"], true, "resume {resume}: {failed}");
        client.call_text("test_simple_text", json!({})).await;
        client.call_text("test_simple_text", json!({})).await;
        assert!(client.close().await);
        // an SSE answer is counted when its stream ends, which may be after the client read it
        mcp_gateway_tests::assert_eventually!(
            Duration::from_secs(10),
            outcomes(&gw, "/mcp").await == (2.0, 1.0, 0.0, 1.0),
            "resume {resume}: {:?}",
            outcomes(&gw, "/mcp").await
        );
        assert_eq!(
            gw.metric(r#"mcpgw_requests_total{method="initialize",outcome="ok"}"#)
                .await,
            1.0
        );
    }
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"9"}}}"#;

#[tokio::test]
async fn bridged_tool_errors_and_rpc_errors_are_counted() {
    let mock = ModernMock::start("m").await;
    let gw = Gateway::start(&format!(
        "pools:\n  modern:\n    era: modern\n    backends: [{}]\nroutes:\n  - {{ path: /mcp, mode: stateful, pool: modern }}\n",
        mock.addr
    ))
    .await;
    let init = Request::post("/mcp", INIT).send(gw.addr).await;
    assert_eq!(init.status(), 200, "{}", init.text());
    let sid = init
        .head
        .header("mcp-session-id")
        .expect("a session")
        .to_owned();
    let call = |id: u64, tool: &str| {
        Request::post(
            "/mcp",
            format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{{}}}}}}"#
            ),
        )
        .header("Mcp-Session-Id", &sid)
        .header("MCP-Protocol-Version", "2025-06-18")
    };
    let ok = call(1, "whoami").send(gw.addr).await;
    assert_eq!(ok.tool_text(), "m");
    let fail = call(2, "fail").send(gw.addr).await;
    assert_eq!(fail.json()["result"]["isError"], true, "{}", fail.text());
    let fail_sse = call(3, "fail_sse").send(gw.addr).await;
    assert_eq!(
        fail_sse.json()["result"]["isError"],
        true,
        "{}",
        fail_sse.text()
    );
    let unknown = call(4, "nope").send(gw.addr).await;
    assert_eq!(unknown.status(), 200);
    assert_eq!(
        unknown.json()["error"]["code"],
        -32602,
        "{}",
        unknown.text()
    );
    assert_eq!(outcomes(&gw, "/mcp").await, (1.0, 2.0, 1.0, 2.0));
    assert_eq!(
        gw.metric(r#"mcpgw_rpc_errors_total{method="tools/call",code="-32602"}"#)
            .await,
        1.0
    );
    // an event stream that ends before its response: the outcome is unknown (-32013)
    let cut = call(5, "sse_without_result").send(gw.addr).await;
    assert_eq!(cut.json()["error"]["code"], -32013, "{}", cut.text());
    assert_eq!(cut.json()["id"], 5, "{}", cut.text());
}
