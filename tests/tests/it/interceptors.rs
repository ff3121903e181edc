//! Interceptors (SEP-2624, draft) end to end on a stateless route: a real interceptor server on
//! the mcp 2.3.0 SDK (`tests/peers/interceptor_server.py`: a validator and a mutator in each
//! phase), a real 2.3.0 backend and the real 2.3.0 `Client`; then the faults of an interceptor
//! server (down, slow, garbage, an invalid mutation) and its `failOpen` and `audit` modes.
//! Needs `scripts/setup-peers`.

use mcp_gateway_tests::harness::client_v2;
use mcp_gateway_tests::{DeadAddr, Gateway, PythonPeer, Request};
use serde_json::Value;

/// A backend that counts the calls it gets (`GET /bench/counts`).
async fn backend() -> PythonPeer {
    let args = ["--port", "0", "--name", "py", "--count-methods"];
    PythonPeer::start("mcp2", "stateless_server.py", &args).await
}

/// The interceptor server, with `args` (`--garbage`, `--sleep-ms N`, ...).
async fn interceptor(args: &[&str]) -> PythonPeer {
    let mut all = vec!["--port", "0", "--name", "guard"];
    all.extend_from_slice(args);
    PythonPeer::start("mcp2", "interceptor_server.py", &all).await
}

/// A gateway whose one stateless route runs the interceptor server at `guard` (an address).
async fn gateway(backend: &PythonPeer, guard: &str, timeout_ms: u64) -> Gateway {
    Gateway::start(&format!(
        "pools:\n  p: {{ backends: [{}] }}\n\
         interceptors:\n  guard: {{ url: \"http://{guard}/mcp\", timeout-ms: {timeout_ms} }}\n\
         routes:\n  - path: /mcp\n    mode: stateless\n    pool: p\n    interceptors: [guard]\n",
        backend.addr()
    ))
    .await
}

/// The `tools/call`s the backend got.
async fn calls_at(backend: &PythonPeer) -> u64 {
    let at = backend.addr().parse().unwrap();
    let counts = Request::bare("GET", "/bench/counts").send(at).await.json();
    counts["tools/call"].as_u64().unwrap_or(0)
}

/// What the interceptor server was asked (`GET /calls`).
async fn invocations(guard: &PythonPeer) -> Vec<Value> {
    let at = guard.addr().parse().unwrap();
    let log = Request::bare("GET", "/calls").send(at).await.json();
    log.as_array().cloned().unwrap_or_default()
}

async fn call(gw: &Gateway, tool: &str, args: &str) -> Value {
    let (ok, v) = client_v2(&gw.url("/mcp"), "stateless", &["call", tool, args]).await;
    assert!(ok, "{v}");
    v
}

async fn refused(gw: &Gateway, tool: &str, args: &str) -> Value {
    let url = gw.url("/mcp");
    let (ok, v) = client_v2(&url, "stateless", &["call-expect-error", tool, args]).await;
    assert!(ok, "{v}");
    v
}

#[tokio::test]
async fn a_call_runs_the_real_interceptor_chain_in_both_phases() {
    let (py, guard) = tokio::join!(backend(), interceptor(&[]));
    let gw = gateway(&py, &guard.addr(), 2000).await;
    // request phase: the mutator tagged the argument the backend got
    let v = call(&gw, "report_sales", r#"{"region":"emea"}"#).await;
    assert_eq!(v["text"], "py:report:emea-checked", "{v}");
    // response phase: the mutator redacted the digits of the result ("4")
    let v = call(&gw, "echo_size", r#"{"text":"abcd"}"#).await;
    assert_eq!(v["text"], "#", "{v}");
    // what the interceptors were sent: params and result, with a context and no credential
    let log = invocations(&guard).await;
    let first = log
        .iter()
        .find(|c| c["name"] == "deny-word")
        .expect("deny-word asked");
    assert_eq!(first["phase"], "request");
    assert_eq!(first["payload"]["name"], "report_sales");
    // the validator of the request saw the payload the mutator made
    assert_eq!(first["payload"]["arguments"]["region"], "emea-checked");
    assert_eq!(first["context"]["principal"]["type"], "anonymous");
    assert!(first["context"]["timestamp"].is_string(), "{first}");
    let redact = (log.iter().rev())
        .find(|c| c["name"] == "redact-digits")
        .expect("redact-digits asked");
    assert_eq!(redact["payload"]["content"][0]["text"], "4");
    assert!(
        gw.metric("mcpgw_interceptor_invocations_total{interceptor=\"guard/redact-digits\",phase=\"response\",result=\"mutated\"}").await >= 1.0
    );
}

#[tokio::test]
async fn a_denied_call_answers_the_validators_messages_and_never_reaches_the_backend() {
    let (py, guard) = tokio::join!(backend(), interceptor(&[]));
    let gw = gateway(&py, &guard.addr(), 2000).await;
    let v = refused(&gw, "report_sales", r#"{"region":"my secret"}"#).await;
    assert_eq!(v["code"], -32050, "{v}");
    assert!(v["message"].as_str().unwrap().contains("deny-word"), "{v}");
    let errors = &v["data"]["validationErrors"];
    assert_eq!(errors[0]["interceptor"], "guard/deny-word", "{v}");
    assert!(
        errors[0]["message"].as_str().unwrap().contains("secret"),
        "{v}"
    );
    assert_eq!(calls_at(&py).await, 0, "the backend got the denied call");
    // a call the validator allows does reach it
    call(&gw, "report_sales", r#"{"region":"emea"}"#).await;
    assert_eq!(calls_at(&py).await, 1);
}

#[tokio::test]
async fn a_denied_result_never_reaches_the_client() {
    let (py, guard) = tokio::join!(backend(), interceptor(&[]));
    let gw = gateway(&py, &guard.addr(), 2000).await;
    let v = refused(&gw, "report_sales", r#"{"region":"forbidden"}"#).await;
    assert_eq!(v["code"], -32050, "{v}");
    assert_eq!(
        v["data"]["validationErrors"][0]["interceptor"], "guard/forbid-result",
        "{v}"
    );
    assert!(
        !v.to_string().contains("py:report"),
        "the result leaked: {v}"
    );
    assert_eq!(
        calls_at(&py).await,
        1,
        "the call itself reached the backend"
    );
}

#[tokio::test]
async fn an_interceptor_server_that_is_down_refuses_the_call() {
    let (py, dead) = (backend().await, DeadAddr::new());
    let gw = gateway(&py, &dead.addr.to_string(), 2000).await;
    let v = refused(&gw, "whoami", "{}").await;
    assert_eq!(v["code"], -32051, "{v}");
    assert_eq!(v["data"]["reason"], "unreachable", "{v}");
    assert_eq!(v["data"]["interceptor"], "guard", "{v}");
    assert_eq!(calls_at(&py).await, 0);
}

#[tokio::test]
async fn a_slow_interceptor_is_a_timeout_within_its_servers_timeout_ms() {
    let (py, guard) = tokio::join!(backend(), interceptor(&["--sleep-ms", "20000"]));
    let gw = gateway(&py, &guard.addr(), 300).await;
    let started = std::time::Instant::now();
    let v = refused(&gw, "whoami", "{}").await;
    assert_eq!(v["code"], -32000, "{v}");
    assert_eq!(v["data"]["reason"], "timeout", "{v}");
    // the client process's own start is in this; the interceptor's 20 s are not
    assert!(
        started.elapsed() < std::time::Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    // the invocation itself ended at its 300 ms
    let took = "mcpgw_interceptor_duration_seconds_sum{interceptor=\"guard/tag-region\"}";
    let took = gw.metric(took).await;
    assert!((0.25..1.5).contains(&took), "{took}");
    assert_eq!(calls_at(&py).await, 0);
}

#[tokio::test]
async fn an_interceptor_answering_garbage_refuses_the_call_unless_it_is_fail_open() {
    let (py, guard) = tokio::join!(backend(), interceptor(&["--garbage"]));
    let gw = gateway(&py, &guard.addr(), 2000).await;
    let v = refused(&gw, "whoami", "{}").await;
    assert_eq!(v["code"], -32051, "{v}");
    assert_eq!(v["data"]["reason"], "garbage", "{v}");
    drop(gw);

    let open = interceptor(&["--garbage", "--fail-open"]).await;
    let gw = gateway(&py, &open.addr(), 2000).await;
    let v = call(&gw, "report_sales", r#"{"region":"emea"}"#).await;
    // passed by, unchanged: no mutation applied either
    assert_eq!(v["text"], "py:report:emea", "{v}");
    let passed = "mcpgw_interceptor_invocations_total{interceptor=\"guard/deny-word\",phase=\"request\",result=\"garbage-open\"}";
    assert_eq!(gw.metric(passed).await, 1.0);
}

#[tokio::test]
async fn a_mutation_that_renames_the_tool_is_refused() {
    let (py, guard) = tokio::join!(backend(), interceptor(&["--bad-mutation"]));
    let gw = gateway(&py, &guard.addr(), 2000).await;
    let v = refused(&gw, "report_sales", r#"{"region":"emea"}"#).await;
    assert_eq!(v["code"], -32052, "{v}");
    assert_eq!(v["data"]["interceptor"], "guard/tag-region", "{v}");
    assert!(
        v["data"]["detail"].as_str().unwrap().contains("`name`"),
        "{v}"
    );
    assert_eq!(calls_at(&py).await, 0);
}

#[tokio::test]
async fn audit_mode_records_the_verdicts_and_changes_nothing() {
    let (py, guard) = tokio::join!(backend(), interceptor(&["--audit"]));
    let gw = gateway(&py, &guard.addr(), 2000).await;
    let v = call(&gw, "report_sales", r#"{"region":"secret"}"#).await;
    assert_eq!(v["text"], "py:report:secret", "{v}");
    let denied = "mcpgw_interceptor_invocations_total{interceptor=\"guard/deny-word\",phase=\"request\",result=\"audit-deny\"}";
    assert_eq!(gw.metric(denied).await, 1.0);
    let shadowed = "mcpgw_interceptor_invocations_total{interceptor=\"guard/tag-region\",phase=\"request\",result=\"audit-mutated\"}";
    assert_eq!(gw.metric(shadowed).await, 1.0);
}

#[tokio::test]
async fn the_list_is_asked_once_while_fresh() {
    let (py, guard) = tokio::join!(
        backend(),
        interceptor(&["--ttl-ms", "600000", "--count-methods"])
    );
    let gw = gateway(&py, &guard.addr(), 2000).await;
    for region in ["a", "b", "c"] {
        call(&gw, "report_sales", &format!(r#"{{"region":"{region}"}}"#)).await;
    }
    let at = guard.addr().parse().unwrap();
    let counts = Request::bare("GET", "/bench/counts").send(at).await.json();
    assert_eq!(counts["interceptors/list"], 1, "{counts}");
    assert!(
        counts["interceptor/invoke"].as_u64().unwrap() >= 6,
        "{counts}"
    );
}

#[tokio::test]
async fn each_verdict_is_a_record_of_the_audit_trail() {
    let (py, guard) = tokio::join!(backend(), interceptor(&[]));
    let file = mcp_gateway_tests::harness::unique_temp_path("mcpgw-icpt-audit");
    let gw = Gateway::start(&format!(
        "audit: {{ file: \"{}\" }}\npools:\n  p: {{ backends: [{}] }}\n\
         interceptors:\n  guard: {{ url: \"http://{}/mcp\" }}\n\
         routes:\n  - path: /mcp\n    mode: stateless\n    pool: p\n    interceptors: [guard]\n",
        file.display(),
        py.addr(),
        guard.addr()
    ))
    .await;
    refused(&gw, "report_sales", r#"{"region":"my secret"}"#).await;
    // the writer thread writes in the background: read until the record is there (bounded)
    let started = std::time::Instant::now();
    let denial = loop {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        let found = text
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|r| r["event"] == "interceptor" && r["decision"] == "deny");
        if let Some(record) = found {
            break record;
        }
        assert!(
            started.elapsed().as_secs() < 10,
            "no denial recorded: {text}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert_eq!(denial["rule"], "guard/deny-word", "{denial}");
    assert_eq!(denial["method"], "tools/call", "{denial}");
    assert_eq!(denial["outcome"], "deny", "{denial}");
    assert_eq!(denial["detail"]["phase"], "request", "{denial}");
    assert!(
        !denial.to_string().contains("my secret"),
        "a payload was recorded: {denial}"
    );
    let _ = std::fs::remove_file(&file);
}
