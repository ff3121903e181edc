//! Request capture with the real SDKs: a legacy 1.30.0 session and a 2026-07-28 2.3.0 client
//! through routes that capture; the JSON lines name method, tool, status and a hashed
//! session, tool arguments are redacted by default, and `mcp-gateway capture` prints them.
//! Needs `scripts/setup-peers`.

use mcp_gateway_tests::harness::{client_v2, unique_temp_path, workspace_bin};
use mcp_gateway_tests::{assert_eventually, Gateway, PythonPeer, ReplClient};
use serde_json::{json, Value};
use std::time::Duration;

fn records(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn has_call(path: &std::path::Path, tool: &str) -> bool {
    records(path)
        .iter()
        .any(|r| r["method"] == "tools/call" && r["name"] == tool)
}

#[tokio::test]
async fn a_real_legacy_session_is_captured_with_arguments_redacted_and_the_session_hashed() {
    let peer = PythonPeer::legacy_v1("pod-0", 0).await;
    let file = unique_temp_path("mcpgw-capture").with_extension("jsonl");
    let yaml = format!(
        "pools:\n  legacy: {{ backends: [{}] }}\nroutes:\n  - path: /mcp\n    mode: stateful\n    pool: legacy\n    capture: {{ file: {} }}\n",
        peer.addr(),
        file.display()
    );
    let gw = Gateway::start(&yaml).await;
    let mut client = ReplClient::connect("mcp1", &gw.url("/mcp"), None).await;
    let session_id = client.cmd(json!({"op": "session_id"})).await;
    assert_eq!(client.call_text("sleep", json!({"ms": 3})).await, "pod-0");
    assert_eventually!(
        Duration::from_secs(10),
        has_call(&file, "sleep"),
        "the call is in {}",
        file.display()
    );

    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        !text.contains("\"ms\""),
        "the tool's arguments are redacted: {text}"
    );
    let session = session_id.to_string();
    let session = session.trim_matches('"');
    assert!(
        !session.is_empty() && !text.contains(session),
        "no raw session id: {text}"
    );
    let all = records(&file);
    let init = all
        .iter()
        .find(|r| r["method"] == "initialize")
        .expect("initialize recorded");
    assert_eq!(init["status"], 200);
    assert!(
        init["response"].is_object(),
        "the initialize answer is held whole: {init}"
    );
    let call = all.iter().find(|r| r["name"] == "sleep").unwrap();
    assert_eq!(call["request"]["params"]["arguments"], "[redacted]");
    assert_eq!(call["session"], init["session"], "one session, one hash");
    assert_eq!(call["session"].as_str().unwrap().len(), 16);
    assert_eq!(call["status"], 200);
    assert_eq!(call["route"], "/mcp");
    assert!(call["latency_ms"].as_f64().unwrap() > 0.0);
    assert!(call["response_bytes"].as_u64().unwrap() > 0);

    let printed = std::process::Command::new(workspace_bin("mcp-gateway"))
        .arg("capture")
        .arg(&file)
        .output()
        .unwrap();
    assert!(printed.status.success());
    let printed = String::from_utf8_lossy(&printed.stdout);
    assert!(
        printed.contains("POST tools/call sleep  -> 200 ok"),
        "{printed}"
    );
    assert!(
        printed.contains("\"arguments\": \"[redacted]\""),
        "{printed}"
    );
    assert!(client.close().await);
    let _ = std::fs::remove_file(&file);
}

#[tokio::test]
async fn a_real_stateless_call_on_the_fast_path_is_captured_with_its_body() {
    let peer = PythonPeer::stateless_v2("modern-0").await;
    let file = unique_temp_path("mcpgw-capture").with_extension("jsonl");
    let yaml = format!(
        "pools:\n  modern: {{ backends: [{}] }}\nroutes:\n  - path: /mcp\n    pool: modern\n    capture: {{ file: {}, redact: [params.arguments.text] }}\n",
        peer.addr(),
        file.display()
    );
    let gw = Gateway::start(&yaml).await;
    let (ok, verdict) = client_v2(
        &gw.url("/mcp"),
        "stateless",
        &["call", "echo_size", r#"{"text": "top-secret-value"}"#],
    )
    .await;
    assert!(ok, "{verdict}");
    assert_eventually!(
        Duration::from_secs(10),
        has_call(&file, "echo_size"),
        "the call is in {}",
        file.display()
    );
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(!text.contains("top-secret-value"), "{text}");
    let call = records(&file)
        .into_iter()
        .find(|r| r["name"] == "echo_size")
        .unwrap();
    assert_eq!(call["request"]["params"]["arguments"]["text"], "[redacted]");
    assert!(
        call["request"]["params"]["_meta"].is_object(),
        "only the named path is redacted"
    );
    assert_eq!(call["status"], 200);
    assert!(call["session"].is_null(), "no session on a stateless route");
    assert!(
        call.get("response").is_none(),
        "a streamed answer: status and size only"
    );
    assert!(call["backend"]
        .as_str()
        .is_some_and(|b| b.contains(&peer.port.to_string())));
    let _ = std::fs::remove_file(&file);
}
