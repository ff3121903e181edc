//! `routes[].name-match` (issue 31, item 17): rules compare exact code points by default, so
//! `Admin_Delete` and fullwidth `ＡＤＭＩＮ_delete` are names of their own that a rule on
//! `admin_*` does not take; with `name-match: folded` both sides are NFKC-normalized and
//! lowercased, and the same rule refuses them. The body names the tool (check-headers off: the
//! body decides), and the `Mcp-Name` header carries it in its `=?base64?…?=` form.

use base64::Engine;
use mcp_gateway_tests::auth::{auth_yaml, token, RESOURCE};
use mcp_gateway_tests::client::META;
use mcp_gateway_tests::{Gateway, MockServer, Request};

const DENY_ADMIN: &str =
    "    authz:\n      - { match: { method: tools/call, name: \"admin_*\" }, require: { scope: admin } }\n";

fn config(mock: &MockServer, name_match: &str) -> String {
    format!(
        "{}pools:\n  p: {{ backends: [{}] }}\nroutes:\n  - path: /mcp\n    pool: p\n    name-match: {name_match}\n{DENY_ADMIN}",
        auth_yaml(RESOURCE),
        mock.addr
    )
}

fn call(id: u64, tool: &str) -> Request {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{{}},{META}}}}}"#
    );
    let header = if tool.is_ascii() {
        tool.to_owned()
    } else {
        let b64 = base64::engine::general_purpose::STANDARD.encode(tool.as_bytes());
        format!("=?base64?{b64}?=")
    };
    Request::post("/mcp", body)
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", &header)
        .header(
            "Authorization",
            &format!("Bearer {}", token("alice", "tools")),
        )
}

const FULLWIDTH: &str = "\u{ff21}\u{ff24}\u{ff2d}\u{ff29}\u{ff2e}_delete";

#[tokio::test]
async fn folded_names_are_refused_by_a_rule_on_their_plain_form_and_exact_ones_are_distinct() {
    let mock = MockServer::start("m").await;
    let folded = Gateway::start(&config(&mock, "folded")).await;
    for (id, tool) in [(1, "admin_delete"), (2, FULLWIDTH), (3, "Admin_Delete")] {
        let resp = call(id, tool).send(folded.addr).await;
        assert_eq!(resp.status(), 403, "folded, {tool}: {}", resp.text());
        assert_eq!(resp.json()["error"]["code"], -32024, "folded, {tool}");
    }
    assert_eq!(
        mock.count_method("tools/call"),
        0,
        "none reached the backend"
    );
    let exact = Gateway::start(&config(&mock, "exact")).await;
    let resp = call(4, "admin_delete").send(exact.addr).await;
    assert_eq!(resp.status(), 403, "exact, the rule's own spelling");
    for (id, tool) in [(5, FULLWIDTH), (6, "Admin_Delete")] {
        let resp = call(id, tool).send(exact.addr).await;
        assert_eq!(
            resp.status(),
            200,
            "exact, {tool} is another name: {}",
            resp.text()
        );
    }
    assert_eq!(mock.count_method("tools/call"), 2);
}
