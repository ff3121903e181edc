//! `mcp-load` (the load generator of the resilience benchmark) against the gateway and Rust
//! mocks: both dialects counted right, errors classified, JSON and SVG written.

use mcp_gateway_tests::harness::workspace_bin;
use mcp_gateway_tests::{Gateway, MockServer};
use serde_json::Value;

async fn load(target: std::net::SocketAddr, dialect: &str, name: &str) -> (Value, String) {
    let dir = std::env::temp_dir().join(format!("mcp-load-test-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let (json, svg) = (dir.join("r.json"), dir.join("r.svg"));
    let out = tokio::process::Command::new(workspace_bin("mcp-load"))
        .args(["run", "--target", &target.to_string(), "--dialect", dialect])
        .args(["--rate", "50", "--duration", "2", "--sessions", "4"])
        .arg("--json")
        .arg(&json)
        .arg("--svg")
        .arg(&svg)
        .output()
        .await
        .expect("run mcp-load");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result =
        serde_json::from_slice(&std::fs::read(&json).expect("json written")).expect("JSON");
    (result, std::fs::read_to_string(&svg).expect("svg written"))
}

fn config(backends: &[&MockServer], mode: &str) -> String {
    let list: Vec<String> = backends.iter().map(|m| m.addr.to_string()).collect();
    format!(
        "pools:\n  p: {{ backends: [{}] }}\nroutes:\n  - {{ path: /mcp, mode: {mode}, pool: p }}\n",
        list.join(", ")
    )
}

#[tokio::test]
async fn legacy_load_through_a_stateful_route_counts_every_call_and_session() {
    let (a, b) = (
        MockServer::legacy("a", 0, "2025-11-25").await,
        MockServer::legacy("b", 0, "2025-11-25").await,
    );
    let gw = Gateway::start(&config(&[&a, &b], "stateful")).await;
    let (r, svg) = load(gw.addr, "legacy", "stateful").await;
    assert_eq!(
        r["offered"], 100,
        "2 s at 50 rps, scheduled by the clock: {r}"
    );
    assert_eq!(r["ok"], 100, "{r}");
    assert_eq!(r["failed"], 0);
    assert_eq!(r["initializes"], 4, "one initialize per session");
    assert_eq!(
        a.count_method("tools/call") + b.count_method("tools/call"),
        100
    );
    assert!(r["latency_ms"]["p50"].as_f64().unwrap() > 0.0);
    assert!(svg.starts_with("<svg") && svg.contains("polyline"));
    // The sessions were ended with DELETE at the end of the run.
    assert_eq!(a.sessions().live() + b.sessions().live(), 0);
}

#[tokio::test]
async fn stateless_load_sends_2026_requests() {
    let m = MockServer::start("m").await;
    let gw = Gateway::start(&config(&[&m], "stateless")).await;
    let (r, _) = load(gw.addr, "stateless", "stateless").await;
    assert_eq!(r["ok"], 100, "{r}");
    assert_eq!(r["initializes"], 0);
    let seen = &m.requests()[0].head;
    assert_eq!(seen.header("mcp-method"), Some("tools/call"));
    assert_eq!(seen.header("mcp-protocol-version"), Some("2026-07-28"));
}

#[tokio::test]
async fn a_legacy_client_on_a_stateless_route_is_counted_as_failed_initializes() {
    let a = MockServer::legacy("a", 0, "2025-11-25").await;
    let gw = Gateway::start(&config(&[&a], "stateless")).await;
    let (r, _) = load(gw.addr, "legacy", "refused").await;
    assert_eq!(r["ok"], 0);
    assert_eq!(r["failed"], 100);
    assert_eq!(r["errors"]["init-rpc--32007"], 100, "{r}");
}

#[tokio::test]
async fn chaos_in_a_fresh_clone_without_peers_refuses_up_front_and_says_how_to_install_them() {
    // a checkout where scripts/setup-peers never ran: no venvs
    let dir = std::env::temp_dir().join(format!("mcp-load-chaos-nopeers-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("tests/peers")).expect("dir");
    std::fs::write(dir.join("tests/peers/repl_client.py"), "").expect("script");
    let out = tokio::process::Command::new(workspace_bin("mcp-load"))
        .args([
            "chaos",
            "--duration",
            "90",
            "--kill-every",
            "15",
            "--backends",
            "mock",
        ])
        .current_dir(&dir)
        .output()
        .await
        .expect("run mcp-load");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(".venv-mcp1/bin/python"), "{stderr}");
    assert!(stderr.contains("scripts/setup-peers"), "{stderr}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("PASSED"));
    let _ = std::fs::remove_dir_all(&dir);
}
