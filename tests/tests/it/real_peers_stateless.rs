//! Stateless routes with the real MCP SDK: PyPI `mcp==2.3.0` stateless servers behind the
//! gateway, driven by the real 2.3.0 `Client`. Needs `scripts/setup-peers`.

use mcp_gateway_tests::harness::client_v2;
use mcp_gateway_tests::{DeadAddr, Gateway, PythonPeer};
use serde_json::Value;

/// The strings of a JSON array (empty when it is not one).
fn strings(v: &Value) -> Vec<&str> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

async fn setup() -> (PythonPeer, PythonPeer, PythonPeer, Gateway) {
    let (a, b, heavy) = tokio::join!(
        PythonPeer::stateless_v2("py-a"),
        PythonPeer::stateless_v2("py-b"),
        PythonPeer::stateless_v2("py-heavy"),
    );
    let gw = Gateway::start(&format!(
        "pools:\n  modern: {{ backends: [{}, {}], balance: round-robin }}\n  heavy: {{ backends: [{}] }}\n\
         routes:\n  - path: /mcp\n    mode: stateless\n    pool: modern\n    rules:\n\
         \x20     - match: {{ method: tools/call, name: \"report_*\" }}\n        pool: heavy\n",
        a.addr(),
        b.addr(),
        heavy.addr()
    ))
    .await;
    (a, b, heavy, gw)
}

#[tokio::test]
async fn real_client_lists_and_calls_tools_on_both_backends_through_the_gateway() {
    let (_a, _b, _heavy, gw) = setup().await;
    let url = gw.url("/mcp");
    let (ok, v) = client_v2(&url, "stateless", &["list"]).await;
    assert!(ok, "{v}");
    let tools = strings(&v["tools"]);
    assert!(
        tools.contains(&"whoami") && tools.contains(&"report_sales"),
        "{tools:?}"
    );

    let (ok, v) = client_v2(&url, "stateless", &["call-many", "whoami", "{}", "8"]).await;
    assert!(ok, "{v}");
    let texts = strings(&v["texts"]);
    assert!(
        texts.contains(&"py-a") && texts.contains(&"py-b"),
        "both backends must answer: {texts:?}"
    );

    let (ok, v) = client_v2(
        &url,
        "stateless",
        &["call", "report_sales", r#"{"region":"emea"}"#],
    )
    .await;
    assert!(ok, "{v}");
    assert_eq!(v["text"], "py-heavy:report:emea");
}

#[tokio::test]
async fn real_client_in_auto_mode_works_through_the_gateway() {
    let (_a, _b, _heavy, gw) = setup().await;
    let (ok, v) = client_v2(&gw.url("/mcp"), "auto", &["call", "report_sales", "{}"]).await;
    assert!(ok, "{v}");
    assert_eq!(v["text"], "py-heavy:report:all");
}

#[tokio::test]
async fn real_client_sends_a_one_mib_argument_through_the_gateway() {
    let (_a, _b, _heavy, gw) = setup().await;
    let (ok, v) = client_v2(&gw.url("/mcp"), "stateless", &["big", "1048576"]).await;
    assert!(ok, "{v}");
    assert_eq!(v["text"], "1048576");
}

#[tokio::test]
async fn real_client_receives_progress_before_the_result_spread_in_time() {
    let (_a, _b, _heavy, gw) = setup().await;
    let (ok, v) = client_v2(&gw.url("/mcp"), "stateless", &["progress", "3", "400"]).await;
    assert!(ok, "{v}");
    let times: Vec<f64> = v["progress_times"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_f64)
        .collect();
    let result = v["result_time"].as_f64().unwrap();
    assert_eq!(times.len(), 3, "{v}");
    for w in times.windows(2) {
        assert!(w[1] - w[0] > 0.25, "progress was buffered: {times:?}");
    }
    assert!(
        result - times[0] > 0.7,
        "result came with the progress: {v}"
    );
}

#[tokio::test]
async fn real_client_surfaces_the_gateways_json_rpc_error_when_no_backend_is_left() {
    let dead = DeadAddr::new();
    let gw = Gateway::start(&format!(
        "pools: {{ p: {{ backends: [{dead}] }} }}\nroutes: [ {{ path: /mcp, pool: p }} ]\n"
    ))
    .await;
    let (ok, v) = client_v2(
        &gw.url("/mcp"),
        "stateless",
        &["call-expect-error", "whoami", "{}"],
    )
    .await;
    assert!(ok, "{v}");
    assert_eq!(v["code"], -32011, "{v}");
    assert!(
        v["message"]
            .as_str()
            .unwrap()
            .contains("No backend of pool `p`"),
        "{v}"
    );
    assert_eq!(v["data"]["kind"], "backend-unavailable");
}
