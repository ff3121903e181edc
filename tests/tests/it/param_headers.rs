//! `Mcp-Param-*` headers (SEP-2243) where the gateway writes the 2026-07-28 request itself,
//! against a real PyPI `mcp` 2.3.0 server (`tests/peers/param_server.py`), which refuses a
//! `tools/call` whose `x-mcp-header` arguments have no matching header with -32020:
//! - a real mcp 1.30.0 client through the era bridge (it sends no such header: the gateway
//!   mirrors them from the tool's schema, learnt from a list or listed on its own);
//! - the same through a virtual route that renames the tool (the header names from the
//!   member's schema, the values from the call), and a 2026-07-28 client's lying header there
//!   replaced by the mirrored one (the gateway rewrote the body);
//! - a 2026-07-28 notification whose `Mcp-Method` disagrees with its body (400, id null);
//! - a legacy request's MCP headers never decide its limits: its body does.

use mcp_gateway_tests::client::META;
use mcp_gateway_tests::{Gateway, PythonPeer, Request};
use serde_json::{json, Value};
use std::process::Stdio;
use tokio::process::Command;

/// The 2.3.0 server with `x-mcp-header` tools, named `name`.
async fn param_server(name: &str) -> PythonPeer {
    PythonPeer::start("mcp2", "param_server.py", &["--port", "0", "--name", name]).await
}

/// Runs `tests/peers/param_client_v1.py` (mcp 1.30.0) against `url`; its verdict and whether
/// it exited 0.
async fn client_v1(url: &str, args: &[&str]) -> (bool, Value) {
    let out = Command::new(mcp_gateway_tests::harness::python("mcp1"))
        .arg(mcp_gateway_tests::harness::workspace().join("tests/peers/param_client_v1.py"))
        .args(["--url", url])
        .args(args)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .expect("run param_client_v1.py");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().last().unwrap_or("");
    let verdict = serde_json::from_str(last).unwrap_or_else(|_| {
        panic!(
            "param_client_v1.py {args:?} printed no verdict: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.success(), verdict)
}

/// The forecast tool's answer: what it computed and the `Mcp-Param-*` headers it got.
fn forecast(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| panic!("not the forecast's answer: {text}"))
}

const ARGS: &str = r#"{"region": "Zürich ", "days": 3, "metric": true, "note": "n"}"#;

/// What the server must have got for [`ARGS`]: the region wrapped (not ASCII, a trailing
/// space), the rest plain; `note` is not mirrored.
fn expected_headers() -> Value {
    json!({
        "mcp-param-days": "3",
        "mcp-param-metric": "true",
        "mcp-param-region": "=?base64?WsO8cmljaCA=?=",
    })
}

fn bridged(server: &PythonPeer) -> String {
    format!(
        "pools:\n  modern: {{ era: modern, backends: [{}] }}\nroutes:\n\
         \x20 - {{ path: /mcp, pool: modern, mode: stateful }}\n",
        server.addr()
    )
}

#[tokio::test]
async fn a_legacy_client_calls_a_tool_with_mirrored_arguments_through_the_bridge() {
    let server = param_server("p1").await;
    let gw = Gateway::start(&bridged(&server)).await;
    let (ok, v) = client_v1(&gw.url("/mcp"), &["call", "forecast", ARGS]).await;
    assert!(ok, "{v}");
    assert_eq!(v["isError"], false, "{v}");
    let answer = forecast(v["text"].as_str().unwrap_or_default());
    assert_eq!(answer["answer"], "p1:Zürich :3:True:n", "{answer}");
    assert_eq!(answer["headers"], expected_headers());
    // a tool that mirrors nothing gets nothing
    let (ok, v) = client_v1(&gw.url("/mcp"), &["call", "plain", r#"{"text": "t"}"#]).await;
    assert!(ok, "{v}");
    assert_eq!(v["text"], "p1:t");
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;

#[tokio::test]
async fn a_bridged_call_of_a_tool_never_listed_lists_the_tools_itself_once() {
    let server = param_server("p1").await;
    let gw = Gateway::start(&bridged(&server)).await;
    let resp = Request::post("/mcp", INIT).send(gw.addr).await;
    assert_eq!(resp.status(), 200, "{}", resp.text());
    let sid = resp
        .head
        .header("mcp-session-id")
        .expect("a session")
        .to_owned();
    // no tools/list first: the gateway asks the backend's list itself
    for n in 1..=3 {
        let call = json!({"jsonrpc": "2.0", "id": n, "method": "tools/call",
            "params": {"name": "forecast", "arguments": {"region": "eu", "days": n}}});
        let resp = Request::post("/mcp", call.to_string())
            .header("Mcp-Session-Id", &sid)
            .header("MCP-Protocol-Version", "2025-11-25")
            // a legacy client's own Mcp-Param header is never sent on
            .header("Mcp-Param-Region", "forged")
            .send(gw.addr)
            .await;
        assert_eq!(resp.status(), 200, "{}", resp.text());
        let answer = forecast(&resp.tool_text());
        assert_eq!(answer["answer"], format!("p1:eu:{n}:False:"), "{answer}");
        assert_eq!(
            answer["headers"],
            json!({"mcp-param-days": n.to_string(), "mcp-param-region": "eu"})
        );
    }
}

fn virtual_route(server: &PythonPeer) -> String {
    format!(
        "pools:\n  modern: {{ era: modern, backends: [{}] }}\nroutes:\n\
         \x20 - path: /hub\n    mode: virtual\n    upstream-path: /mcp\n    members:\n\
         \x20     - {{ name: wx, pool: modern, mode: auto, prefix: never, tools: {{ rename: {{ forecast: weather }} }} }}\n",
        server.addr()
    )
}

#[tokio::test]
async fn a_renamed_tool_keeps_its_mirrored_arguments_for_a_legacy_client_on_a_virtual_route() {
    let server = param_server("p1").await;
    let gw = Gateway::start(&virtual_route(&server)).await;
    // a legacy client: its member session is bridged, the names are the member's schema's
    let (ok, v) = client_v1(&gw.url("/hub"), &["call", "weather", ARGS]).await;
    assert!(ok, "{v}");
    assert!(
        v["tools"].as_array().unwrap().contains(&json!("weather")),
        "{v}"
    );
    let answer = forecast(v["text"].as_str().unwrap_or_default());
    assert_eq!(answer["answer"], "p1:Zürich :3:True:n", "{answer}");
    assert_eq!(answer["headers"], expected_headers());
}

#[tokio::test]
async fn a_clients_param_header_is_replaced_by_the_mirrored_one_when_the_call_is_renamed() {
    let server = param_server("p1").await;
    let gw = Gateway::start(&virtual_route(&server)).await;
    // a 2026-07-28 client whose header disagrees with its body: the gateway rewrote the body
    // (the member's name), so the member gets the arguments' own headers, never the client's
    let call = format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"weather","arguments":{{"region":"eu","days":2}},{META}}}}}"#
    );
    let resp = Request::post("/hub", call)
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", "weather")
        .header("Mcp-Param-Region", "us")
        .header("Mcp-Param-Days", "2")
        .header("Mcp-Param-Stale", "x")
        .send(gw.addr)
        .await;
    assert_eq!(resp.status(), 200, "{}", resp.text());
    let answer = forecast(&resp.tool_text());
    assert_eq!(answer["answer"], "p1:eu:2:False:", "{answer}");
    assert_eq!(
        answer["headers"],
        json!({"mcp-param-days": "2", "mcp-param-region": "eu"})
    );
}

#[tokio::test]
async fn a_notification_whose_method_header_disagrees_with_its_body_is_refused_with_a_null_id() {
    let server = param_server("p1").await;
    let gw = Gateway::start(&format!(
        "pools:\n  modern: {{ era: modern, backends: [{}] }}\nroutes:\n\
         \x20 - {{ path: /mcp, pool: modern, mode: stateless }}\n",
        server.addr()
    ))
    .await;
    let note = format!(
        r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":1,{META}}}}}"#
    );
    let send = |method: &'static str| {
        Request::post("/mcp", note.clone())
            .header("MCP-Protocol-Version", "2026-07-28")
            .header("Mcp-Method", method)
    };
    let resp = send("tools/call").send(gw.addr).await;
    assert_eq!(resp.status(), 400, "{}", resp.text());
    let v = resp.json();
    assert_eq!(v["error"]["code"], -32020, "{v}");
    assert!(v.get("id").is_some_and(Value::is_null), "{v}");
    // the agreeing one goes on (the server acknowledges it)
    let resp = send("notifications/cancelled").send(gw.addr).await;
    assert_eq!(resp.status(), 202, "{}", resp.text());
}

#[tokio::test]
async fn a_legacy_requests_mcp_headers_never_decide_its_deadline() {
    // a dual 2.3.0 server: it answers a sessionless legacy call too, and checks no header then
    let server = PythonPeer::stateless_v2("s1").await;
    let gw = Gateway::start(&format!(
        "pools:\n  p: {{ backends: [{}] }}\nroutes:\n\
         \x20 - path: /mcp\n    pool: p\n    mode: stateless\n    check-headers: false\n\
         \x20   limits: {{ tool-timeouts: {{ \"slow_*\": 300 }} }}\n",
        server.addr()
    ))
    .await;
    let call = r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"slow_progress","arguments":{"steps":1,"delay_ms":3000}}}"#;
    let started = std::time::Instant::now();
    // the headers name a tool without a deadline; the body runs one with a deadline
    let resp = Request::post("/mcp", call)
        .header("MCP-Protocol-Version", "2025-11-25")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", "whoami")
        .send(gw.addr)
        .await;
    let took = started.elapsed();
    let v = resp.json();
    assert_eq!(v["error"]["code"], -32012, "{v}");
    assert!(took < std::time::Duration::from_secs(2), "took {took:?}");
}

/// The checks of one client scenario of the 2026-07-28 conformance suite (`conformance-2026`,
/// 0.2.0-alpha.12), run with the mcp 1.30.0 client (`param_client_v1.py conformance`) through
/// the gateway's bridge (`gateway_url`) onto the suite's own mock server, which listens on
/// 127.0.0.1:`port` (`tests/peers/node/loopback_listen.cjs`): (check name, status).
async fn client_scenario(scenario: &str, gateway_url: &str, port: u16) -> Vec<(String, String)> {
    let ws = mcp_gateway_tests::harness::workspace();
    let node_dir = ws.join("tests/peers/node");
    let out = ws.join(format!("target/conformance/param-headers/{scenario}"));
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).expect("output dir");
    let command = format!(
        "{} {} conformance",
        mcp_gateway_tests::harness::python("mcp1").display(),
        ws.join("tests/peers/param_client_v1.py").display()
    );
    let run = Command::new(mcp_gateway_tests::harness::node())
        .arg(node_dir.join("node_modules/conformance-2026/dist/index.js"))
        .args([
            "client",
            "--scenario",
            scenario,
            "--command",
            &command,
            "-o",
        ])
        .arg(&out)
        .env(
            "NODE_OPTIONS",
            format!(
                "--require {}",
                node_dir.join("loopback_listen.cjs").display()
            ),
        )
        .env("MCPGW_LISTEN_PORT", port.to_string())
        .env("MCPGW_CONFORMANCE_URL", gateway_url)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(std::time::Duration::from_secs(120), run)
        .await
        .expect("the scenario ran within 2 minutes")
        .expect("run the conformance suite");
    let mut checks = Vec::new();
    for dir in std::fs::read_dir(&out).expect("read output").flatten() {
        let Ok(text) = std::fs::read_to_string(dir.path().join("checks.json")) else {
            continue;
        };
        let listed: Vec<Value> = serde_json::from_str(&text).expect("checks.json");
        for c in listed {
            let name = c["name"].as_str().unwrap_or("?").to_owned();
            checks.push((name, c["status"].as_str().unwrap_or("?").to_owned()));
        }
    }
    assert!(
        !checks.is_empty(),
        "{scenario} wrote no checks:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    checks
}

#[tokio::test]
async fn the_conformance_header_scenarios_pass_for_a_legacy_client_through_the_bridge() {
    let port = mcp_gateway_tests::free_port();
    let gw = Gateway::start(&format!(
        "pools:\n  mock: {{ era: modern, backends: [127.0.0.1:{port}] }}\nroutes:\n\
         \x20 - {{ path: /mcp, pool: mock, mode: stateful }}\n"
    ))
    .await;
    let url = gw.url("/mcp");
    // every Mcp-Param check: each argument mirrored and encoded, the unmarked ones and the
    // null one left out
    let custom = client_scenario("http-custom-headers", &url, port).await;
    let failed: Vec<_> = custom.iter().filter(|(_, s)| s != "SUCCESS").collect();
    assert!(failed.is_empty(), "http-custom-headers: {failed:?}");
    assert!(custom.len() >= 18, "{custom:?}");
    // Mcp-Method and Mcp-Name on every request the bridge sends; `initialize` and
    // `notifications/initialized` never reach the server (the bridge answers them): skipped
    let standard = client_scenario("http-standard-headers", &url, port).await;
    let failed: Vec<_> = standard
        .iter()
        .filter(|(_, s)| s != "SUCCESS" && s != "SKIPPED")
        .collect();
    assert!(failed.is_empty(), "http-standard-headers: {failed:?}");
    for name in [
        "ClientMcpNameHeader_tools_call",
        "ClientMcpMethodHeader_tools_call",
    ] {
        assert!(
            standard.iter().any(|(n, s)| n == name && s == "SUCCESS"),
            "{name}: {standard:?}"
        );
    }
}
