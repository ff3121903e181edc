//! Issue 23, test 2: a FastMCP 1.30.0 tool's server→client requests (`ctx.elicit` on the call's
//! answer, `ctx.session.create_message` and `list_roots` on the session's GET stream) reach a
//! PyPI mcp 2.3.0 client pinned to 2026-07-28 as `input_required` rounds through the gateway
//! (the reverse era bridge parks the backend's call), two rounds in one call included; a
//! tampered, expired or re-targeted `requestState` gets -32602 with `data.reason`; a client
//! without the capability gets -32021 (HTTP 400) at once; another principal's retry gets
//! -32602 `other-principal`; a parked call nobody retries is
//! answered upstream (the elicitation cancelled) and counted.

use mcp_gateway_tests::auth::sha256_hex;
use mcp_gateway_tests::harness::{python, workspace};
use mcp_gateway_tests::{assert_eventually, Gateway, PythonPeer, Request};
use serde_json::{json, Value};
use std::time::Duration;
use tokio::process::Command;

async fn setup(ttl_s: u64) -> (PythonPeer, Gateway) {
    let peer =
        PythonPeer::start("mcp1", "pooled_server.py", &["--port", "0", "--name", "b1"]).await;
    let yaml = format!(
        "bridge: {{ input-ttl-s: {ttl_s} }}\npools:\n  p: {{ era: legacy, backends: [{}] }}\nroutes: [ {{ path: /mcp, pool: p, mode: stateless }} ]\n",
        peer.addr()
    );
    let gw = Gateway::start(&yaml).await;
    (peer, gw)
}

fn call(id: u64, tool: &str, caps: Value, extra: Value) -> Request {
    let mut params = json!({"name": tool, "arguments": {}, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": caps,
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
    }});
    for (k, v) in extra.as_object().cloned().unwrap_or_default() {
        params[k] = v;
    }
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
    Request::post("/mcp", body.to_string())
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", tool)
}

fn answer() -> Value {
    json!({"input": {"action": "accept", "content": {"name": "ada"}}})
}

#[tokio::test]
async fn a_pinned_client_answers_a_legacy_tools_elicitation_sampling_and_roots_through_input_required(
) {
    let (_peer, gw) = setup(60).await;
    let mut cmd = Command::new(python("mcp2"));
    cmd.arg(workspace().join("tests/peers/modern_client_v2.py"))
        .args(["--url", &gw.url("/mcp"), "inputs"])
        .kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(90), cmd.output())
        .await
        .expect("the client finished")
        .expect("ran");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let v: Value = serde_json::from_str(stdout.lines().last().unwrap_or("{}")).unwrap();
    assert!(
        out.status.success(),
        "{v} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(v["ask"], "hello ada", "{v}");
    assert_eq!(v["sample"], "sampled: from the model", "{v}");
    assert_eq!(v["roots"], "roots: file:///a,file:///b", "{v}");
    assert_eq!(
        v["two_rounds"], "ada/from the model",
        "two rounds in one call: {v}"
    );
    assert_eq!(v["calls"], json!({"elicit": 2, "sample": 2, "roots": 1}));
    let parked = gw
        .metric("mcpgw_mrtr_events_total{event=\"parked\",pool=\"p\"}")
        .await;
    assert_eq!(parked, 5.0, "one round per input request");
    assert_eq!(gw.metric("mcpgw_mrtr_parked{pool=\"p\"}").await, 0.0);
}

#[tokio::test]
async fn a_forged_or_retargeted_request_state_is_refused_and_the_real_one_still_works() {
    let (_peer, gw) = setup(60).await;
    let caps = json!({"elicitation": {}});
    let first = call(1, "ask", caps.clone(), json!({})).send(gw.addr).await;
    assert_eq!(first.status(), 200, "{}", first.text());
    let r = first.json()["result"].clone();
    assert_eq!(r["resultType"], "input_required", "{r}");
    assert_eq!(r["inputRequests"]["input"]["method"], "elicitation/create");
    let state = r["requestState"].as_str().unwrap().to_owned();
    let mut forged = state.clone().into_bytes();
    forged[10] = if forged[10] == b'a' { b'b' } else { b'a' };
    let forged = String::from_utf8(forged).unwrap();
    let refused = |resp: mcp_gateway_tests::Response, reason: &str| {
        assert_eq!(resp.status(), 400, "{}", resp.text());
        let v = resp.json();
        assert_eq!(v["error"]["code"], -32602, "{v}");
        assert_eq!(v["error"]["data"]["reason"], reason, "{v}");
    };
    let extra = json!({"inputResponses": answer(), "requestState": forged});
    refused(
        call(2, "ask", caps.clone(), extra).send(gw.addr).await,
        "forged",
    );
    // the same state for another tool (another request)
    let extra = json!({"inputResponses": answer(), "requestState": state});
    refused(
        call(3, "sample", caps.clone(), extra.clone())
            .send(gw.addr)
            .await,
        "other-request",
    );
    let ok = call(4, "ask", caps.clone(), extra.clone())
        .send(gw.addr)
        .await;
    let v = ok.json();
    assert_eq!(v["result"]["content"][0]["text"], "hello ada", "{v}");
    assert_eq!(v["result"]["resultType"], "complete");
    // used once: the call is no longer parked
    refused(
        call(5, "ask", caps, extra).send(gw.addr).await,
        "unknown-call",
    );
}

#[tokio::test]
async fn a_client_without_the_capability_gets_32021_at_once() {
    let (_peer, gw) = setup(60).await;
    let started = std::time::Instant::now();
    let resp = call(1, "ask", json!({}), json!({})).send(gw.addr).await;
    assert!(started.elapsed() < Duration::from_secs(5), "never a hang");
    assert_eq!(resp.status(), 400, "{}", resp.text());
    let v = resp.json();
    assert_eq!(v["id"], 1);
    assert_eq!(v["error"]["code"], -32021, "{v}");
    assert_eq!(
        v["error"]["data"]["requiredCapabilities"],
        json!({"elicitation": {}})
    );
    assert_eq!(
        gw.metric("mcpgw_mrtr_events_total{event=\"refused\",pool=\"p\"}")
            .await,
        1.0
    );
}

#[tokio::test]
async fn a_parked_call_nobody_retries_is_cancelled_upstream_and_its_state_expires() {
    let (_peer, gw) = setup(1).await;
    let caps = json!({"elicitation": {}});
    let first = call(1, "ask", caps.clone(), json!({})).send(gw.addr).await;
    let state = first.json()["result"]["requestState"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eventually!(
        Duration::from_secs(5),
        gw.metric("mcpgw_mrtr_events_total{event=\"expired\",pool=\"p\"}")
            .await
            == 1.0,
        "the parked call expired"
    );
    let extra = json!({"inputResponses": answer(), "requestState": state});
    let late = call(2, "ask", caps.clone(), extra).send(gw.addr).await;
    assert_eq!(late.status(), 400);
    assert_eq!(late.json()["error"]["data"]["reason"], "expired");
    // the backend's elicitation was cancelled for the client
    let mut seen: String;
    let mut id = 2;
    assert_eventually!(
        Duration::from_secs(5),
        {
            id += 1;
            let outcomes = call(id, "outcomes_seen", caps.clone(), json!({}))
                .send(gw.addr)
                .await;
            seen = outcomes.json()["result"]["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            !seen.is_empty()
        },
        "the backend saw an outcome of its elicitation"
    );
    assert_eq!(seen, "cancel", "the elicitation was cancelled upstream");
}

#[tokio::test]
async fn a_request_state_from_another_principal_is_refused() {
    let peer =
        PythonPeer::start("mcp1", "pooled_server.py", &["--port", "0", "--name", "b1"]).await;
    let dir = mcp_gateway_tests::harness::unique_temp_path("mcpgw-mrtr-keys");
    std::fs::create_dir_all(&dir).unwrap();
    let keys = dir.join("api-keys.txt");
    let line = |key: &str, name: &str| format!("{} {name} tools\n", sha256_hex(key.as_bytes()));
    std::fs::write(&keys, line("k-one", "one") + &line("k-two", "two")).unwrap();
    let auth = mcp_gateway_tests::auth::auth_yaml("http://127.0.0.1/mcp").replace(
        "  jwt:",
        &format!("  api-keys: {{ file: {} }}\n  jwt:", keys.display()),
    );
    let yaml = format!(
        "{auth}pools:\n  p: {{ era: legacy, backends: [{}] }}\nroutes: [ {{ path: /mcp, pool: p, mode: stateless }} ]\n",
        peer.addr()
    );
    let gw = Gateway::start(&yaml).await;
    let caps = json!({"elicitation": {}});
    let first = call(1, "ask", caps.clone(), json!({}))
        .header("X-Api-Key", "k-one")
        .send(gw.addr)
        .await;
    assert_eq!(first.status(), 200, "{}", first.text());
    let state = first.json()["result"]["requestState"]
        .as_str()
        .unwrap()
        .to_owned();
    let extra = json!({"inputResponses": answer(), "requestState": state});
    let stolen = call(2, "ask", caps.clone(), extra.clone())
        .header("X-Api-Key", "k-two")
        .send(gw.addr)
        .await;
    assert_eq!(stolen.status(), 400, "{}", stolen.text());
    assert_eq!(stolen.json()["error"]["data"]["reason"], "other-principal");
    let own = call(3, "ask", caps, extra)
        .header("X-Api-Key", "k-one")
        .send(gw.addr)
        .await;
    assert_eq!(
        own.json()["result"]["content"][0]["text"],
        "hello ada",
        "{}",
        own.text()
    );
    std::fs::remove_dir_all(&dir).ok();
}
