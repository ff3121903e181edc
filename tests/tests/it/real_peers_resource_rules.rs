//! Resource rules (issue 26), against real SDK backends: rules on resource URIs read
//! the URI the backend will look up (FastMCP 1.30.0 normalizes it with pydantic `AnyUrl`), the
//! resource and template lists are filtered, and a backend that compresses its answers
//! (Starlette's `GZipMiddleware` before a 2.3.0 server) neither slips a list past the filter
//! nor breaks the session the real `mcp.Client` opens. Needs `scripts/setup-peers`.

use mcp_gateway_tests::auth::{auth_yaml, repl_with_bearer, token, RESOURCE};
use mcp_gateway_tests::{Gateway, PythonPeer, Request, Response};
use serde_json::{json, Value};
use std::net::SocketAddr;

const RESOURCE_RULE: &str = "    authz:\n      - { match: { method: resources/read, name: \"admin://*\" }, require: { scope: admin } }\n      - { match: { method: tools/call, name: \"admin_*\" }, require: { scope: admin } }\n";

async fn resource_rules_server(venv: &str, name: &str, gzip: bool) -> PythonPeer {
    let mut args = vec!["--port", "0", "--name", name];
    if gzip {
        // JSON answers: Starlette never compresses `text/event-stream`.
        args.extend(["--gzip", "--json"]);
    }
    PythonPeer::start(venv, "resource_rules_server.py", &args).await
}

async fn gateway(backend: &PythonPeer, mode: &str) -> Gateway {
    Gateway::start(&format!(
        "{}pools:\n  p: {{ backends: [{}] }}\nroutes:\n  - path: /mcp\n    mode: {mode}\n    pool: p\n{RESOURCE_RULE}",
        auth_yaml(RESOURCE),
        backend.addr(),
    ))
    .await
}

/// A legacy session through the gateway with `bearer`; its gateway session id.
async fn open(addr: SocketAddr, bearer: &str) -> String {
    let body = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let resp = Request::post("/mcp", body)
        .header("Authorization", &format!("Bearer {bearer}"))
        .send(addr)
        .await;
    assert_eq!(resp.status(), 200, "{}", resp.text());
    let sid = resp
        .head
        .header("mcp-session-id")
        .expect("a gateway session id")
        .to_owned();
    let note = call(
        addr,
        bearer,
        &sid,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    )
    .await;
    assert_eq!(note.status(), 202);
    sid
}

async fn call(addr: SocketAddr, bearer: &str, sid: &str, body: &str) -> Response {
    Request::post("/mcp", body.to_owned())
        .header("Authorization", &format!("Bearer {bearer}"))
        .header("Mcp-Session-Id", sid)
        .header("MCP-Protocol-Version", "2025-11-25")
        .send(addr)
        .await
}

async fn read(addr: SocketAddr, bearer: &str, sid: &str, uri: &str) -> Response {
    let body =
        json!({"jsonrpc": "2.0", "id": 7, "method": "resources/read", "params": {"uri": uri}});
    call(addr, bearer, sid, &body.to_string()).await
}

fn entries(answer: &Value, field: &str, key: &str) -> Vec<String> {
    answer["result"][field]
        .as_array()
        .unwrap_or_else(|| panic!("no {field}: {answer}"))
        .iter()
        .filter_map(|e| e[key].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn a_resource_rule_holds_however_the_client_spells_the_uri_fastmcp_normalizes() {
    let backend = resource_rules_server("mcp1", "fastmcp", false).await;
    let gw = gateway(&backend, "auto").await;
    let user = token("alice", "tools");
    let sid = open(gw.addr, &user).await;
    // FastMCP 1.30.0 finds every one of these as admin://secret or admin://users/42.
    for uri in [
        "admin://secret",
        "ADMIN://secret",
        "aDmIn://users/42",
        " admin://secret",
        "admin://users/../secret",
        "admin://users/%34%32",
    ] {
        let resp = read(gw.addr, &user, &sid, uri).await;
        assert_eq!(resp.status(), 403, "{uri:?}: {}", resp.text());
        let v = resp.json();
        assert_eq!(v["error"]["code"], -32024, "{uri:?}: {v}");
        assert_eq!(v["id"], 7);
    }
    // Whitespace inside (pydantic drops it, a raw-string server keeps it): undecidable.
    for uri in ["\tadmin://secret", "admin://se\ncret", "admin://a%0Asecret"] {
        let resp = read(gw.addr, &user, &sid, uri).await;
        assert_eq!(resp.status(), 400, "{uri:?}: {}", resp.text());
        let v = resp.json();
        assert_eq!(v["error"]["code"], -32031, "{uri:?}: {v}");
        assert_eq!(v["error"]["data"]["reason"], "control-character");
    }
    let public = read(gw.addr, &user, &sid, "PUBLIC://info").await;
    assert_eq!(public.status(), 200, "{}", public.text());
    assert_eq!(public.json()["result"]["contents"][0]["text"], "info");
    // An admin reads it under any spelling: the rule, not the spelling, decides.
    let admin = token("root", "tools admin");
    let asid = open(gw.addr, &admin).await;
    let resp = read(gw.addr, &admin, &asid, "ADMIN://secret").await;
    assert_eq!(resp.json()["result"]["contents"][0]["text"], "secret");
}

#[tokio::test]
async fn resource_and_template_lists_show_only_what_the_caller_may_read() {
    let backend = resource_rules_server("mcp1", "fastmcp", false).await;
    let gw = gateway(&backend, "auto").await;
    let user = token("alice", "tools");
    let sid = open(gw.addr, &user).await;
    let list = |method: &str| json!({"jsonrpc": "2.0", "id": 3, "method": method}).to_string();
    let resources = call(gw.addr, &user, &sid, &list("resources/list"))
        .await
        .json();
    assert_eq!(entries(&resources, "resources", "uri"), ["public://info"]);
    let templates = call(gw.addr, &user, &sid, &list("resources/templates/list"))
        .await
        .json();
    assert_eq!(
        entries(&templates, "resourceTemplates", "uriTemplate"),
        Vec::<String>::new(),
        "{templates}"
    );
    let admin = token("root", "tools admin");
    let asid = open(gw.addr, &admin).await;
    let templates = call(gw.addr, &admin, &asid, &list("resources/templates/list"))
        .await
        .json();
    assert_eq!(
        entries(&templates, "resourceTemplates", "uriTemplate"),
        ["admin://users/{uid}"]
    );
}

#[tokio::test]
async fn a_gzip_backend_neither_slips_a_list_past_the_filter_nor_loses_the_session() {
    let backend = resource_rules_server("mcp2", "gzipped", true).await;
    for mode in ["stateful", "auto", "stateless"] {
        let gw = gateway(&backend, mode).await;
        let user = token("alice", "tools");
        // The real 2.3.0 client sends `Accept-Encoding: gzip, deflate`.
        let client_mode = if mode == "stateless" {
            "auto"
        } else {
            "legacy"
        };
        let mut client = repl_with_bearer("mcp2", &gw.url("/mcp"), Some(client_mode), &user)
            .await
            .unwrap_or_else(|hello| panic!("{mode}: the client did not connect: {hello}"));
        let tools = client.cmd(json!({"op": "list"})).await;
        assert_eq!(tools["ok"], true, "{mode}: {tools}");
        assert_eq!(tools["tools"], json!(["whoami"]), "{mode}: {tools}");
        assert_eq!(client.call_text("whoami", json!({})).await, "gzipped");
        let denied = client
            .cmd(json!({"op": "call", "name": "admin_reset", "args": {}}))
            .await;
        assert_eq!(denied["code"], -32024, "{mode}: {denied}");
        assert!(client.close().await, "{mode}: unclean close");
    }
}
