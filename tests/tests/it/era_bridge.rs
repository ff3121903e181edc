//! Legacy clients on 2026-07-28 backends through the gateway's era bridge (issue 22): real
//! legacy SDK clients (PyPI mcp 1.30.0, TypeScript SDK 1.32.2) against the TypeScript SDK v2
//! `createMcpHandler({legacy: 'reject'})` server, and raw requests against the strict Rust
//! mock (`mock::modern`), which never checks capabilities itself.

use mcp_gateway_tests::bridge::LegacyClient;
use mcp_gateway_tests::mock::modern::ModernMock;
use mcp_gateway_tests::{Gateway, PythonPeer, Request};
use serde_json::{json, Value};
use std::time::Duration;

fn config(backends: &[String]) -> String {
    format!(
        "sessions:\n  resume:\n    keep-alive-s: 1\npools:\n  modern:\n    era: modern\n    backends: [{}]\nroutes:\n  - path: /mcp\n    pool: modern\n    mode: stateful\n",
        backends.join(", ")
    )
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"sampling":{}},"clientInfo":{"name":"raw","version":"9"}}}"#;

/// Opens a bridged session with raw requests; the gateway session id.
async fn open(gw: &Gateway) -> String {
    let resp = Request::post("/mcp", INIT).send(gw.addr).await;
    assert_eq!(resp.status(), 200, "{}", resp.text());
    let v = resp.json();
    assert_eq!(v["result"]["protocolVersion"], "2025-06-18", "{v}");
    let sid = resp
        .head
        .header("mcp-session-id")
        .expect("a session id")
        .to_owned();
    let note = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let resp = Request::post("/mcp", note)
        .header("Mcp-Session-Id", &sid)
        .send(gw.addr)
        .await;
    assert_eq!(resp.status(), 202);
    sid
}

fn in_session(sid: &str, body: &str) -> Request {
    Request::post("/mcp", body.to_owned())
        .header("Mcp-Session-Id", sid)
        .header("MCP-Protocol-Version", "2025-06-18")
}

fn call(id: u64, tool: &str, args: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": args}})
        .to_string()
}

#[tokio::test]
async fn legacy_clients_use_a_modern_only_typescript_server_through_the_gateway() {
    let (a, b) = (
        PythonPeer::modern_ts("m1", false).await,
        PythonPeer::modern_ts("m2", false).await,
    );
    let gw = Gateway::start(&config(&[a.addr(), b.addr()])).await;
    for client in LegacyClient::ALL {
        let (ok, v) = client.run(&gw.url("/mcp"), "tour", None).await;
        assert!(ok, "{client:?}: {v}");
        assert_eq!(v["protocol"], "2025-11-25", "{client:?}: {v}");
        assert!(
            v["server"] == "m1" || v["server"] == "m2",
            "{client:?}: {v}"
        );
        assert_eq!(
            v["instructions"],
            format!("modern test server {}", v["server"].as_str().unwrap())
        );
        assert_eq!(v["session"], true);
        assert!(
            v["tools"].as_array().unwrap().contains(&json!("ask")),
            "{v}"
        );
        let progress: Vec<f64> = v["progress"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_f64)
            .collect();
        assert_eq!(progress, vec![1.0, 2.0, 3.0], "{client:?}: {v}");
        assert_eq!(v["progress_text"], "done:3");
        assert_eq!(v["read"], "item 7");
        assert_eq!(v["prompt"], "Hello, Zoe!");
        assert_eq!(v["log_text"], "logged");
        assert_eq!(
            v["logs"],
            json!(["warning", "error"]),
            "{client:?}: the level set is honoured: {v}"
        );
        assert_eq!(v["ping"], true);
        assert_eq!(v["templates"], json!(["text://item/{id}"]));
    }
    // both clients ended their sessions with DELETE at exit
    let deleted = r#"mcpgw_sessions_ended_total{pool="modern",reason="deleted"}"#;
    mcp_gateway_tests::eventually_async(
        "both sessions deleted",
        Duration::from_secs(5),
        || async { gw.metric(deleted).await >= 2.0 },
    )
    .await;
}

#[tokio::test]
async fn the_same_legacy_clients_fail_directly_against_the_modern_only_server() {
    let server = PythonPeer::modern_ts("m1", false).await;
    let direct = format!("http://{}/mcp", server.addr());
    for client in LegacyClient::ALL {
        let (ok, v) = client.run(&direct, "connect", None).await;
        assert!(
            !ok,
            "{client:?} connected directly to a modern-only server: {v}"
        );
        assert!(v["error"].is_string(), "{client:?}: {v}");
    }
    let mock = ModernMock::start("mock").await;
    let resp = Request::post("/mcp", INIT).send(mock.addr).await;
    assert_eq!(resp.status(), 400);
    assert_eq!(resp.json()["error"]["code"], -32022);
}

#[tokio::test]
async fn elicitation_sampling_and_roots_reach_the_legacy_clients_callbacks() {
    let server = PythonPeer::modern_ts("m1", false).await;
    let gw = Gateway::start(&config(&[server.addr()])).await;
    for client in LegacyClient::ALL {
        let (ok, v) = client.run(&gw.url("/mcp"), "ask", Some("2")).await;
        assert!(ok, "{client:?}: {v}");
        assert_eq!(
            v["text"], "answers:A1,A2",
            "{client:?}: two rounds with requestState: {v}"
        );
        assert_eq!(v["calls"]["elicit"], 2, "{client:?}: {v}");
        let (ok, v) = client.run(&gw.url("/mcp"), "sample", None).await;
        assert!(ok, "{client:?}: {v}");
        assert_eq!(v["text"], "sampled:sampled text", "{client:?}: {v}");
        assert_eq!(v["calls"]["sample"], 1);
        let (ok, v) = client.run(&gw.url("/mcp"), "roots", None).await;
        assert!(ok, "{client:?}: {v}");
        assert_eq!(v["text"], "roots:file:///a,file:///b", "{client:?}: {v}");
        // without the capability: -32021 naming it (here the SDK's own check answers first)
        let (ok, v) = client.run(&gw.url("/mcp"), "ask-nocap", None).await;
        assert!(ok, "{client:?}: {v}");
        assert_eq!(v["code"], -32021, "{client:?}: {v}");
        assert!(
            v["data"]["requiredCapabilities"]["elicitation"].is_object(),
            "{v}"
        );
        // the round cap
        let (ok, v) = client.run(&gw.url("/mcp"), "endless", None).await;
        assert!(ok, "{client:?}: {v}");
        assert_eq!(v["code"], -32032, "{client:?}: {v}");
        assert_eq!(v["data"]["limit"], 8);
        assert_eq!(v["data"]["kind"], "bridge-rounds-exceeded");
    }
}

#[tokio::test]
async fn progress_keeps_increasing_across_rounds_and_request_state_is_echoed_exactly() {
    let server = PythonPeer::modern_ts("m1", false).await;
    let gw = Gateway::start(&config(&[server.addr()])).await;
    for client in LegacyClient::ALL {
        let (ok, v) = client.run(&gw.url("/mcp"), "progress-rounds", None).await;
        assert!(ok, "{client:?}: {v}");
        assert_eq!(v["text"], "progress_ask:A1", "{client:?}: {v}");
        let seen: Vec<f64> = v["progress"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|p| p[0].as_f64())
            .collect();
        assert_eq!(
            seen,
            vec![1.0, 2.0, 3.0, 4.0],
            "{client:?}: round 2 continues past round 1: {v}"
        );
        let (ok, v) = client.run(&gw.url("/mcp"), "state-echo", None).await;
        assert!(ok, "{client:?}: {v}");
        assert_eq!(
            v["text"], "state:st=\u{e9}\u{2603} \"q\" \\ +/= \t end",
            "{client:?}: {v}"
        );
    }
}

#[tokio::test]
async fn the_gateway_never_asks_a_client_for_a_capability_it_did_not_declare() {
    let mock = ModernMock::start("mock").await;
    let gw = Gateway::start(&config(&[mock.addr.to_string()])).await;
    for client in LegacyClient::ALL {
        let (ok, v) = client.run(&gw.url("/mcp"), "roots-nocap", None).await;
        assert!(ok, "{client:?}: {v}");
        assert_eq!(
            v["code"], -32021,
            "{client:?}: the gateway's own check: {v}"
        );
        assert_eq!(v["data"]["kind"], "missing-client-capability", "{v}");
        assert_eq!(v["data"]["requiredCapabilities"], json!({"roots": {}}));
        assert_eq!(v["data"]["method"], "roots/list");
        let (ok, v) = client.run(&gw.url("/mcp"), "roots", None).await;
        assert!(ok, "{client:?}: {v}");
        assert_eq!(v["text"], "roots:file:///a,file:///b", "{client:?}: {v}");
        let (ok, v) = client.run(&gw.url("/mcp"), "ask", Some("2")).await;
        assert!(ok && v["text"] == "answers:A1,A2", "{client:?}: {v}");
    }
    // a roots call without the capability went to the backend once: no retry was made
    let retries_without_roots = mock
        .requests()
        .iter()
        .filter(|r| r["params"]["name"] == "roots" && r["params"].get("inputResponses").is_some())
        .filter(|r| {
            r["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]
                .get("roots")
                .is_none()
        })
        .count();
    assert_eq!(retries_without_roots, 0);
    // the round cap: 8 rounds fulfilled, the 9th input_required refused
    let endless = |m: &ModernMock| {
        m.requests()
            .iter()
            .filter(|r| r["params"]["name"] == "endless")
            .count()
    };
    let before = endless(&mock);
    let (ok, v) = LegacyClient::Python
        .run(&gw.url("/mcp"), "endless", None)
        .await;
    assert!(ok && v["code"] == -32032, "{v}");
    assert_eq!(endless(&mock) - before, 9);
    let m = |k: &'static str| gw.metric(k);
    assert_eq!(
        m(r#"mcpgw_bridge_errors_total{pool="modern",kind="missing-client-capability"}"#).await,
        2.0
    );
    assert_eq!(
        m(r#"mcpgw_bridge_errors_total{pool="modern",kind="bridge-rounds-exceeded"}"#).await,
        1.0
    );
    // roots 1 + ask 2 per client, and 8 for endless
    assert_eq!(m(r#"mcpgw_bridge_rounds_total{pool="modern"}"#).await, 14.0);
    assert!(
        m(r#"mcpgw_requests_by_eras_total{client_era="legacy",backend_era="modern"}"#).await > 0.0
    );
}

#[tokio::test]
async fn a_bridged_request_carries_the_envelope_from_the_stored_initialize() {
    let mock = ModernMock::start("mock").await;
    let gw = Gateway::start(&config(&[mock.addr.to_string()])).await;
    let sid = open(&gw).await;
    let set = r#"{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"debug"}}"#;
    let resp = in_session(&sid, set).send(gw.addr).await;
    assert_eq!(
        resp.json(),
        json!({"jsonrpc": "2.0", "id": 1, "result": {}})
    );
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "echo_meta", "arguments": {}, "_meta": {"progressToken": "p1"}}});
    let resp = in_session(&sid, &body.to_string()).send(gw.addr).await;
    let seen: Value = serde_json::from_str(&resp.tool_text()).unwrap();
    let meta = &seen["meta"];
    assert_eq!(
        meta["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    assert_eq!(
        meta["io.modelcontextprotocol/clientCapabilities"],
        json!({"sampling": {}})
    );
    assert_eq!(
        meta["io.modelcontextprotocol/clientInfo"],
        json!({"name": "raw", "version": "9"})
    );
    assert_eq!(meta["io.modelcontextprotocol/logLevel"], "debug");
    assert_eq!(meta["progressToken"], "p1");
    assert_eq!(seen["headers"]["mcp-method"], "tools/call");
    assert_eq!(seen["headers"]["mcp-name"], "echo_meta");
    // a name that is not plain ASCII goes in the base64 form (the strict mock checks it)
    let read = json!({"jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": {"uri": "file:///café"}});
    let resp = in_session(&sid, &read.to_string()).send(gw.addr).await;
    assert_eq!(
        resp.json()["result"]["contents"][0]["text"],
        "read file:///café",
        "{}",
        resp.text()
    );
    // a complete result keeps what the backend sent; an unknown method is the backend's -32601
    let resp = in_session(&sid, r#"{"jsonrpc":"2.0","id":4,"method":"nope/nope"}"#)
        .send(gw.addr)
        .await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.json()["error"]["code"], -32601);
}

#[tokio::test]
async fn the_gateway_answers_ping_and_notifications_and_delete_ends_the_session() {
    let mock = ModernMock::start("mock").await;
    let gw = Gateway::start(&config(&[mock.addr.to_string()])).await;
    let sid = open(&gw).await;
    let resp = in_session(&sid, r#"{"jsonrpc":"2.0","id":"p","method":"ping"}"#)
        .send(gw.addr)
        .await;
    assert_eq!(
        resp.json(),
        json!({"jsonrpc": "2.0", "id": "p", "result": {}})
    );
    let roots_changed = r#"{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}"#;
    assert_eq!(
        in_session(&sid, roots_changed).send(gw.addr).await.status(),
        202
    );
    let methods: Vec<Value> = mock
        .requests()
        .iter()
        .map(|r| r["method"].clone())
        .collect();
    assert_eq!(
        methods,
        vec![json!("server/discover")],
        "only discovery reached the backend"
    );
    // a subscription is kept by the gateway (heard on a listen stream while the GET is open)
    let sub = r#"{"jsonrpc":"2.0","id":5,"method":"resources/subscribe","params":{"uri":"text://static"}}"#;
    let resp = in_session(&sid, sub).send(gw.addr).await;
    assert_eq!(resp.json()["result"], json!({}), "{}", resp.text());
    let bad = r#"{"jsonrpc":"2.0","id":6,"method":"resources/subscribe","params":{}}"#;
    let resp = in_session(&sid, bad).send(gw.addr).await;
    assert_eq!(resp.json()["error"]["code"], -32600, "{}", resp.text());
    // no translation for tasks: a documented error
    let task = r#"{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"taskId":"t"}}"#;
    let resp = in_session(&sid, task).send(gw.addr).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.json()["error"]["code"], -32033, "{}", resp.text());
    assert_eq!(resp.json()["error"]["data"]["kind"], "not-bridged");
    // the GET stream is the gateway's: keep-alives (a modern backend has none)
    let first = Request::session_stream(&sid)
        .read_first_event(gw.addr)
        .await;
    assert!(first.starts_with(": keep-alive"), "{first:?}");
    let resp = Request::session_delete(&sid).send(gw.addr).await;
    assert_eq!(resp.status(), 200);
    let resp = in_session(&sid, &call(6, "whoami", json!({})))
        .send(gw.addr)
        .await;
    assert_eq!(resp.status(), 404);
    assert_eq!(resp.json()["error"]["data"]["reason"], "deleted");
}

#[tokio::test]
async fn bridged_calls_are_balanced_per_request_and_a_dead_pod_costs_nothing() {
    let (a, b) = (ModernMock::start("a").await, ModernMock::start("b").await);
    let gw = Gateway::start(&config(&[a.addr.to_string(), b.addr.to_string()])).await;
    let sid = open(&gw).await;
    let mut names = Vec::new();
    for i in 0..10 {
        names.push(
            in_session(&sid, &call(i, "whoami", json!({})))
                .send(gw.addr)
                .await
                .tool_text(),
        );
    }
    assert!(
        names.contains(&"a".to_owned()) && names.contains(&"b".to_owned()),
        "{names:?}"
    );
    a.die().await;
    for i in 10..20 {
        let resp = in_session(&sid, &call(i, "whoami", json!({})))
            .send(gw.addr)
            .await;
        assert_eq!(
            resp.tool_text(),
            "b",
            "call {i} after a pod died: {}",
            resp.text()
        );
    }
    let reinits = gw.metric("mcpgw_session_reinits_total").await;
    assert_eq!(reinits, 0.0, "nothing was re-initialized");
}

#[tokio::test]
async fn a_bridged_list_is_filtered_by_the_routes_authz_rules() {
    use mcp_gateway_tests::auth::{auth_yaml, token, RESOURCE};
    let mock = ModernMock::start("mock").await;
    let yaml = format!(
        "{}{}    authz:\n      - {{ match: {{ method: tools/call, name: \"ask\" }}, require: {{ scope: admin }} }}\n",
        auth_yaml(RESOURCE),
        config(&[mock.addr.to_string()])
    );
    let gw = Gateway::start(&yaml).await;
    let bearer = format!("Bearer {}", token("alice", "tools"));
    let resp = Request::post("/mcp", INIT)
        .header("Authorization", &bearer)
        .send(gw.addr)
        .await;
    assert_eq!(resp.status(), 200, "{}", resp.text());
    let sid = resp.head.header("mcp-session-id").unwrap().to_owned();
    let list = in_session(&sid, r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#)
        .header("Authorization", &bearer)
        .send(gw.addr)
        .await;
    let names: Vec<String> = list.json()["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(names.contains(&"whoami".to_owned()), "{names:?}");
    assert!(
        !names.contains(&"ask".to_owned()),
        "a tool the caller may not call was listed: {names:?}"
    );
    let denied = in_session(&sid, &call(2, "ask", json!({})))
        .header("Authorization", &bearer)
        .send(gw.addr)
        .await;
    assert_eq!(denied.json()["error"]["code"], -32024, "{}", denied.text());
}
