//! A route's interceptor chain on every path the gateway drives, against a mock interceptor
//! server (`interceptor_mock.rs`, the draft's wire shapes) and mock backends: a stateless
//! route (JSON and streamed answers), a legacy session, both era bridges, a virtual route, and
//! a route without a chain beside one with it. Each path: a request-phase validator's denial answers the
//! client and nothing reaches the backend; a request-phase mutator changes what the backend
//! gets; a response-phase mutator changes what the client gets; progress notifications of a
//! streamed answer are not held back. (What is refused rather than passed unchecked is in
//! `interceptor_refusals.rs`; the real SDK interceptor peer, the faults and the chain's order
//! in `interceptors.rs`.)

use mcp_gateway_tests::client::META;
use mcp_gateway_tests::interceptor_mock::{MockInterceptor, Rule};
use mcp_gateway_tests::mock::modern::ModernMock;
use mcp_gateway_tests::{open_session, Gateway, MockServer, Request, Response};
use std::time::Duration;

/// The chain every test runs: a request validator, a request mutator, a response mutator.
pub(crate) fn rules() -> Vec<Rule> {
    vec![
        Rule::deny("deny-secret", "tools/call", "request", "secret"),
        Rule::replace("tag-args", "tools/call", "request", "tag-me", "tagged"),
        // (a tool's text only: a 2026-07-28 result's `_meta` names the server, and a
        // response mutator may not change `_meta`)
        Rule::replace(
            "redact-cards",
            "tools/call",
            "response",
            r#""text":"pay-4111-1111""#,
            r#""text":"pay-[card]""#,
        ),
    ]
}

/// The top-level `interceptors` section naming the mock `guard`.
pub(crate) fn servers(guard: &MockInterceptor) -> String {
    format!(
        "interceptors:\n  guard: {{ url: \"{}\", timeout-ms: 5000 }}\n",
        guard.url()
    )
}

/// A 2026-07-28 `tools/call` of `tool` with `args`.
pub(crate) fn modern_call(path: &str, id: u64, tool: &str, args: &str) -> Request {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{args},{META}}}}}"#
    );
    Request::post(path, body)
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", tool)
}

/// The bodies of the `tools/call`s `backend` received, as text.
fn calls_seen(backend: &MockServer) -> Vec<String> {
    backend
        .requests()
        .into_iter()
        .map(|c| String::from_utf8_lossy(&c.body).into_owned())
        .filter(|b| b.contains("\"tools/call\""))
        .collect()
}

/// Asserts `resp` is the JSON-RPC error of interceptor `name`'s denial, answering `id`.
fn assert_denied(resp: &Response, id: u64, name: &str) {
    let v = resp.json();
    assert_eq!(v["id"], id, "{v}");
    let error = v["error"].to_string();
    assert!(v["error"]["code"].is_i64(), "a JSON-RPC error: {v}");
    assert!(
        error.contains(name),
        "the interceptor's message is in the error: {v}"
    );
}

#[tokio::test]
async fn a_stateless_route_runs_its_chain_on_the_request_and_on_the_answer() {
    let guard = MockInterceptor::start(rules()).await;
    let backend = MockServer::start("pay-4111-1111").await;
    backend.set_capture(true);
    let gw = Gateway::start(&format!(
        "{}pools: {{ p: {{ backends: [{}] }} }}\nroutes:\n  - {{ path: /mcp, pool: p, mode: stateless, interceptors: [guard] }}\n",
        servers(&guard),
        backend.addr
    ))
    .await;

    // a request mutator's change is what the backend gets; a response mutator's is what the
    // client gets
    let resp = modern_call("/mcp", 1, "whoami", r#"{"note":"tag-me"}"#)
        .send(gw.addr)
        .await;
    assert_eq!(resp.status(), 200, "{}", resp.text());
    assert_eq!(resp.json()["id"], 1);
    assert_eq!(resp.tool_text(), "pay-[card]", "{}", resp.text());
    let seen = calls_seen(&backend);
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert!(
        seen[0].contains("tagged") && !seen[0].contains("tag-me"),
        "{}",
        seen[0]
    );

    // a validator's denial answers the client; nothing reaches the backend
    let resp = modern_call("/mcp", 2, "whoami", r#"{"note":"a secret"}"#)
        .send(gw.addr)
        .await;
    assert_denied(&resp, 2, "deny-secret");
    assert_eq!(
        calls_seen(&backend).len(),
        1,
        "the denied call was not sent"
    );

    // every invocation said who and what: the trace id, the event, the phase
    let invoked = guard.invocations();
    assert!(invoked
        .iter()
        .any(|i| i.phase == "response" && i.name == "redact-cards"));
    assert!(
        invoked.iter().all(|i| i.event == "tools/call"),
        "{invoked:?}"
    );
    assert!(
        invoked.iter().all(|i| !i.context["traceId"].is_null()),
        "the context carries the trace id: {:?}",
        invoked.first().map(|i| &i.context)
    );
}

#[tokio::test]
async fn a_streamed_answer_passes_its_progress_at_once_and_its_result_checked() {
    let guard = MockInterceptor::start(rules()).await;
    let backend = MockServer::start("pay-4111-1111").await;
    let gw = Gateway::start(&format!(
        "{}pools: {{ p: {{ backends: [{}] }} }}\nroutes:\n  - {{ path: /mcp, pool: p, mode: stateless, interceptors: [guard] }}\n",
        servers(&guard),
        backend.addr
    ))
    .await;
    let req = modern_call("/mcp", 5, "sse_progress", r#"{"steps":3,"gap_ms":300}"#);
    let (head, chunks) = req.send_timed(gw.addr).await;
    assert_eq!(head.header("content-type"), Some("text/event-stream"));
    let all: String = chunks
        .iter()
        .map(|(_, c)| String::from_utf8_lossy(c).into_owned())
        .collect();
    assert!(
        all.contains("[card]") && !all.contains("4111-1111"),
        "{all}"
    );
    let first_progress = chunks
        .iter()
        .find(|(_, c)| String::from_utf8_lossy(c).contains("notifications/progress"))
        .map(|(at, _)| *at)
        .expect("progress events reach the client");
    let result = chunks
        .iter()
        .find(|(_, c)| String::from_utf8_lossy(c).contains("[card]"))
        .map(|(at, _)| *at)
        .expect("the result reaches the client");
    assert!(
        result.duration_since(first_progress) >= Duration::from_millis(500),
        "the progress came as it was sent, not held for the result"
    );
}

#[tokio::test]
async fn a_legacy_session_runs_the_chain_on_the_request_its_backend_gets() {
    const V: &str = "2025-11-25";
    let guard = MockInterceptor::start(rules()).await;
    let backend = MockServer::legacy("pay-4111-1111", 0, V).await;
    backend.set_capture(true);
    let gw = Gateway::start(&format!(
        "{}pools: {{ legacy: {{ backends: [{}] }} }}\nroutes:\n  - {{ path: /mcp, pool: legacy, mode: stateful, interceptors: [guard] }}\n",
        servers(&guard),
        backend.addr
    ))
    .await;
    let sid = open_session(gw.addr).await;
    let call = |id: u64, args: &str| {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"whoami","arguments":{args}}}}}"#
        );
        Request::post("/mcp", body)
            .header("Mcp-Session-Id", &sid)
            .header("MCP-Protocol-Version", V)
    };
    let resp = call(1, r#"{"note":"tag-me"}"#).send(gw.addr).await;
    assert_eq!(resp.tool_text(), "pay-[card]", "{}", resp.text());
    let seen = calls_seen(&backend);
    assert!(seen.iter().any(|b| b.contains("tagged")), "{seen:?}");
    assert!(seen.iter().all(|b| !b.contains("tag-me")), "{seen:?}");

    let before = calls_seen(&backend).len();
    let resp = call(2, r#"{"note":"secret"}"#).send(gw.addr).await;
    assert_denied(&resp, 2, "deny-secret");
    assert_eq!(
        calls_seen(&backend).len(),
        before,
        "the denied call was not sent"
    );
    // the invocation names the session, hashed: never the client's id itself
    let session = guard
        .invocations()
        .iter()
        .find_map(|i| i.context["sessionId"].as_str().map(str::to_owned))
        .expect("the context names the session");
    assert_ne!(session, sid);
}

#[tokio::test]
async fn a_virtual_route_runs_its_chain_on_a_members_call() {
    let guard = MockInterceptor::start(rules()).await;
    let member = ModernMock::start("pay-4111-1111").await;
    let gw = Gateway::start(&format!(
        "{}pools: {{ m: {{ backends: [{}] }} }}\nroutes:\n  - path: /hub\n    mode: virtual\n    interceptors: [guard]\n    server-info: {{ name: hub, version: 1.0.0 }}\n    members:\n      - {{ name: m, pool: m, upstream-path: /mcp, prefix: never }}\n",
        servers(&guard),
        member.addr
    ))
    .await;
    let calls = || {
        let bodies = member.requests().into_iter();
        bodies
            .filter(|b| b["method"] == "tools/call")
            .map(|b| b.to_string())
            .collect::<Vec<_>>()
    };
    let resp = modern_call("/hub", 1, "whoami", r#"{"note":"tag-me"}"#)
        .send(gw.addr)
        .await;
    assert_eq!(resp.tool_text(), "pay-[card]", "{}", resp.text());
    let seen = calls();
    assert!(seen.iter().any(|b| b.contains("tagged")), "{seen:?}");
    assert!(seen.iter().all(|b| !b.contains("tag-me")), "{seen:?}");

    let before = seen.len();
    let resp = modern_call("/hub", 2, "whoami", r#"{"note":"secret"}"#)
        .send(gw.addr)
        .await;
    assert_denied(&resp, 2, "deny-secret");
    assert_eq!(calls().len(), before, "the denied call was not sent");
    // the merged list passes the chain too: its response phase is hooked only for calls here,
    // so it is the members' list, unchanged
    let list = format!(r#"{{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{{{META}}}}}"#);
    let resp = Request::post("/hub", list)
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/list")
        .send(gw.addr)
        .await;
    assert!(resp.text().contains("whoami"), "{}", resp.text());
}

#[tokio::test]
async fn a_route_without_a_chain_is_not_intercepted_beside_one_with_it() {
    let guard = MockInterceptor::start(rules()).await;
    let backend = MockServer::start("pay-4111-1111").await;
    let gw = Gateway::start(&format!(
        "{}pools: {{ p: {{ backends: [{}] }} }}\nroutes:\n  - {{ path: /guarded, pool: p, mode: stateless, interceptors: [guard] }}\n  - {{ path: /plain, pool: p, mode: stateless }}\n",
        servers(&guard),
        backend.addr
    ))
    .await;
    let resp = modern_call("/plain", 1, "whoami", r#"{"note":"secret"}"#)
        .send(gw.addr)
        .await;
    assert_eq!(resp.tool_text(), "pay-4111-1111", "{}", resp.text());
    assert!(guard.invocations().is_empty(), "{:?}", guard.invocations());
    let resp = modern_call("/guarded", 2, "whoami", r#"{"note":"secret"}"#)
        .send(gw.addr)
        .await;
    assert_denied(&resp, 2, "deny-secret");
}

#[tokio::test]
async fn both_era_bridges_run_the_chain_on_what_crosses_them() {
    let guard = MockInterceptor::start(rules()).await;
    // a legacy client's session on a 2026-07-28 backend (the bridge)
    let modern = ModernMock::start("pay-4111-1111").await;
    // a 2026-07-28 client's call to a pool of legacy backends (the reverse bridge)
    let legacy = MockServer::legacy("pay-4111-1111", 0, "2025-11-25").await;
    legacy.set_capture(true);
    let gw = Gateway::start(&format!(
        "{}pools:\n  modern: {{ era: modern, backends: [{}] }}\n  legacy: {{ era: legacy, backends: [{}] }}\n\
         routes:\n  - {{ path: /mcp, pool: modern, mode: stateful, interceptors: [guard] }}\n\
         \x20 - {{ path: /old, pool: legacy, mode: stateless, interceptors: [guard] }}\n",
        servers(&guard),
        modern.addr,
        legacy.addr
    ))
    .await;

    let sid = open_session(gw.addr).await;
    let call = |id: u64, args: &str| {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"whoami","arguments":{args}}}}}"#
        );
        Request::post("/mcp", body)
            .header("Mcp-Session-Id", &sid)
            .header("MCP-Protocol-Version", "2025-11-25")
    };
    let resp = call(1, r#"{"note":"tag-me"}"#).send(gw.addr).await;
    assert_eq!(resp.tool_text(), "pay-[card]", "{}", resp.text());
    let sent: Vec<String> = modern
        .requests()
        .into_iter()
        .filter(|b| b["method"] == "tools/call")
        .map(|b| b.to_string())
        .collect();
    assert!(sent.iter().any(|b| b.contains("tagged")), "{sent:?}");
    let resp = call(2, r#"{"note":"secret"}"#).send(gw.addr).await;
    assert_denied(&resp, 2, "deny-secret");

    let resp = modern_call("/old", 3, "whoami", r#"{"note":"tag-me"}"#)
        .send(gw.addr)
        .await;
    assert_eq!(resp.tool_text(), "pay-[card]", "{}", resp.text());
    assert!(
        calls_seen(&legacy).iter().any(|b| b.contains("tagged")),
        "{:?}",
        calls_seen(&legacy)
    );
    let before = calls_seen(&legacy).len();
    let resp = modern_call("/old", 4, "whoami", r#"{"note":"secret"}"#)
        .send(gw.addr)
        .await;
    assert_denied(&resp, 4, "deny-secret");
    assert_eq!(
        calls_seen(&legacy).len(),
        before,
        "the denied call was not sent"
    );
}

#[tokio::test]
async fn a_legacy_clients_call_on_a_virtual_route_runs_the_chain_once() {
    let guard = MockInterceptor::start(rules()).await;
    let member = MockServer::legacy("pay-4111-1111", 0, "2025-11-25").await;
    let gw = Gateway::start(&format!(
        "{}pools: {{ m: {{ backends: [{}] }} }}\nroutes:\n  - path: /mcp\n    mode: virtual\n    interceptors: [guard]\n    server-info: {{ name: hub, version: 1.0.0 }}\n    members:\n      - {{ name: m, pool: m, prefix: never }}\n",
        servers(&guard),
        member.addr
    ))
    .await;
    let sid = open_session(gw.addr).await;
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{}}}"#;
    let resp = Request::post("/mcp", body)
        .header("Mcp-Session-Id", &sid)
        .header("MCP-Protocol-Version", "2025-11-25")
        .send(gw.addr)
        .await;
    assert_eq!(resp.tool_text(), "pay-[card]", "{}", resp.text());
    // a member's request is the gateway's own: the chain ran on the client's, once per phase
    let invoked = guard.invocations();
    let count = |name: &str| invoked.iter().filter(|i| i.name == name).count();
    assert_eq!(count("deny-secret"), 1, "{invoked:?}");
    assert_eq!(count("redact-cards"), 1, "{invoked:?}");
}

#[tokio::test]
async fn a_mutated_argument_goes_up_in_its_mcp_param_header_too() {
    // a real mcp 2.3.0 server refuses a call whose `x-mcp-header` argument disagrees with its
    // header (-32020): the header must follow the argument a request mutator changed
    let guard = MockInterceptor::start(vec![Rule::replace(
        "relocate",
        "tools/call",
        "request",
        "tag-me",
        "tagged",
    )])
    .await;
    let server = mcp_gateway_tests::PythonPeer::start(
        "mcp2",
        "param_server.py",
        &["--port", "0", "--name", "wx"],
    )
    .await;
    let gw = Gateway::start(&format!(
        "{}pools: {{ p: {{ backends: [{}] }} }}\nroutes:\n  - {{ path: /mcp, pool: p, mode: stateless, interceptors: [guard] }}\n",
        servers(&guard),
        server.addr()
    ))
    .await;
    let resp = modern_call("/mcp", 1, "forecast", r#"{"region":"tag-me","days":3}"#)
        .header("Mcp-Param-Region", "tag-me")
        .header("Mcp-Param-Days", "3")
        .send(gw.addr)
        .await;
    let text = resp.tool_text();
    let answer: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|_| panic!("not the forecast's answer: {text}"));
    assert!(
        answer["answer"]
            .as_str()
            .is_some_and(|a| a.starts_with("wx:tagged:3")),
        "{answer}"
    );
}
