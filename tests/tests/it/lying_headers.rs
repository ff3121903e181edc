//! Headers a client could fake never decide a route or a limit (issue 15, holes 1 and 2): the
//! per-tool rate and the routing rules read the tool the backend will run, from the body,
//! wherever the body is not checked against the headers before it is forwarded.

use mcp_gateway_tests::client::META;
use mcp_gateway_tests::{open_session, Gateway, MockServer, Request};

const TOOL_RATE: &str =
    "limits: { tool-rate: { per-second: 0.01, burst: 1, tools: [\"report_*\"] } }\n";

/// A `tools/call` of `tool` whose `Mcp-Name` header names `claimed`.
fn lying_call(id: u64, tool: &str, claimed: &str, meta: bool) -> Request {
    let meta = if meta {
        format!(",{META}")
    } else {
        String::new()
    };
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{{}}{meta}}}}}"#
    );
    Request::post("/mcp", body)
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", claimed)
}

#[tokio::test]
async fn a_session_call_naming_another_tool_in_its_headers_is_limited_as_the_tool_it_runs() {
    let mock = MockServer::legacy("l", 0, "2025-11-25").await;
    let gw = Gateway::start(&format!(
        "{TOOL_RATE}pools: {{ p: {{ backends: [{}] }} }}\nroutes: [ {{ path: /mcp, pool: p, mode: stateful }} ]\n",
        mock.addr
    ))
    .await;
    let sid = open_session(gw.addr).await;
    let send = |id| {
        lying_call(id, "report_summary", "whoami", false)
            .header("Mcp-Session-Id", &sid)
            .header("MCP-Protocol-Version", "2025-11-25")
    };
    assert_eq!(send(1).send(gw.addr).await.status(), 200);
    let resp = send(2).send(gw.addr).await;
    assert_eq!(resp.status(), 429);
    assert_eq!(resp.json()["id"], 2);
    assert_eq!(resp.json()["error"]["code"], -32017);
    assert_eq!(resp.json()["error"]["data"]["tool"], "report_summary");
    assert_eq!(
        mock.count_method("tools/call"),
        1,
        "the second call never ran"
    );
}

#[tokio::test]
async fn with_check_headers_off_rules_and_limits_read_the_body_not_the_headers() {
    let (general, whoami) = (
        MockServer::start("general").await,
        MockServer::start("whoami").await,
    );
    let gw = Gateway::start(&format!(
        "{TOOL_RATE}pools:\n  general: {{ backends: [{}] }}\n  who: {{ backends: [{}] }}\n\
         routes:\n  - path: /mcp\n    pool: general\n    check-headers: false\n    rules:\n\
         \x20     - match: {{ name: whoami }}\n        pool: who\n",
        general.addr, whoami.addr
    ))
    .await;
    let send = |id| {
        lying_call(id, "report_summary", "whoami", true)
            .header("MCP-Protocol-Version", "2026-07-28")
    };
    let resp = send(1).send(gw.addr).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.tool_text(), "general", "routed by the tool it runs");
    assert_eq!(whoami.count(), 0);
    let resp = send(2).send(gw.addr).await;
    assert_eq!(
        resp.status(),
        429,
        "{}",
        String::from_utf8_lossy(&resp.body)
    );
    assert_eq!(resp.json()["error"]["data"]["tool"], "report_summary");
    // an honest whoami still goes where the rule sends it
    let honest = Request::tools_call("/mcp", 3, "whoami").send(gw.addr).await;
    assert_eq!(honest.tool_text(), "whoami");
}
