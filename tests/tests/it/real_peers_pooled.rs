//! Issue 23, test 1 with real peers: clients pinned to 2026-07-28 (PyPI mcp 2.3.0
//! `Client(mode="2026-07-28")`, `tests/peers/modern_client_v2.py`; the TypeScript SDK v2 client
//! with `versionNegotiation: {mode: {pin: "2026-07-28"}}`, `tests/peers/node/modern_client.mjs`)
//! against FastMCP 1.30.0 backends only (`tests/peers/pooled_server.py`): directly they fail;
//! through the gateway (era probed `legacy`, the reverse bridge) tools/list, tools/call with
//! progress, resources/read, prompts/get and logging work, and (a route without auth) each call
//! has a backend session of its own, closed after it: no call sees another's state. Test 4: a FastMCP
//! backend SIGKILLed under `mcp-load` (2026-07-28 dialect, 20 clients): the calls lost are at
//! most those in flight (-32013), none after.

use mcp_gateway_tests::harness::{node, python, workspace, workspace_bin};
use mcp_gateway_tests::{assert_eventually, Gateway, PythonPeer};
use serde_json::Value;
use std::time::Duration;
use tokio::process::Command;

#[derive(Debug, Clone, Copy)]
enum Pinned {
    Python,
    TypeScript,
}

impl Pinned {
    async fn run(self, url: &str, name: &str) -> (bool, Value) {
        let mut cmd = match self {
            Pinned::Python => {
                let mut c = Command::new(python("mcp2"));
                c.arg(workspace().join("tests/peers/modern_client_v2.py"));
                c
            }
            Pinned::TypeScript => {
                let mut c = Command::new(node());
                c.arg(workspace().join("tests/peers/node/modern_client.mjs"));
                c
            }
        };
        cmd.args(["--url", url, "--name", name, "tour"])
            .kill_on_drop(true);
        let out = tokio::time::timeout(Duration::from_secs(90), cmd.output())
            .await
            .unwrap_or_else(|_| panic!("{self:?} did not finish in 90 s"))
            .expect("run the client");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let last = stdout.lines().rev().find(|l| l.starts_with('{'));
        let verdict = last
            .and_then(|l| serde_json::from_str(l).ok())
            .unwrap_or_else(|| {
                panic!(
                    "{self:?}: no JSON verdict: {stdout}\n{}",
                    String::from_utf8_lossy(&out.stderr)
                )
            });
        (out.status.success(), verdict)
    }
}

async fn eras_known(gw: &Gateway, n: usize) -> bool {
    let (_, body) = gw.admin_get("/admin/backends").await;
    let view: Value = serde_json::from_str(&body).unwrap_or_default();
    let legacy = view["pools"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|p| p["backends"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["era"] == "legacy")
        .count();
    legacy == n
}

#[tokio::test]
async fn pinned_2026_clients_use_fastmcp_1_30_backends_through_pooled_sessions() {
    let a = PythonPeer::start("mcp1", "pooled_server.py", &["--port", "0", "--name", "b1"]).await;
    let b = PythonPeer::start("mcp1", "pooled_server.py", &["--port", "0", "--name", "b2"]).await;
    // directly, a pinned client cannot use a legacy server (the compatibility matrix)
    for client in [Pinned::Python, Pinned::TypeScript] {
        let url = format!("http://{}/mcp", a.addr());
        let (ok, v) = client.run(&url, "direct").await;
        assert!(!ok, "{client:?} directly: {v}");
        assert!(v["error"].is_string(), "{client:?}: {v}");
    }
    let yaml = format!(
        "pools:\n  p: {{ backends: [{}, {}] }}\nroutes: [ {{ path: /mcp, pool: p, mode: auto }} ]\n",
        a.addr(),
        b.addr()
    );
    let gw = Gateway::start(&yaml).await;
    assert_eventually!(
        Duration::from_secs(15),
        eras_known(&gw, 2).await,
        "FastMCP probed legacy"
    );
    let url = gw.url("/mcp");
    let mut ones = [0usize, 0usize];
    let mut highest = [0u64, 0u64];
    for run in 0..2 {
        for (i, client) in [Pinned::Python, Pinned::TypeScript].into_iter().enumerate() {
            let name = format!("pinned-{i}");
            let (ok, v) = client.run(&url, &name).await;
            assert!(ok, "{client:?} run {run}: {v}");
            assert_eq!(v["protocol"], "2026-07-28", "{client:?}: {v}");
            let tools: Vec<&str> = v["tools"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(Value::as_str)
                .collect();
            assert!(
                tools.contains(&"slow_progress") && tools.contains(&"log_some"),
                "{v}"
            );
            let progress: Vec<f64> = v["progress"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(Value::as_f64)
                .collect();
            assert_eq!(progress, [1.0, 2.0, 3.0], "{v}");
            assert_eq!(v["progress_text"], "done");
            assert!(
                v["resource"].as_str().unwrap().starts_with("hello from b"),
                "{v}"
            );
            assert!(
                v["prompt"]
                    .as_str()
                    .unwrap()
                    .starts_with("Hello, ada, from b"),
                "{v}"
            );
            assert_eq!(v["log_text"], "logged");
            // the call asked for `info`: the debug line stays out
            let levels: Vec<&str> = v["logs"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|l| l[0].as_str())
                .collect();
            assert_eq!(levels, ["info", "warning"], "{client:?}: {v}");
            for c in v["counts"].as_array().unwrap() {
                let n: u64 = c.as_str().unwrap().parse().unwrap();
                ones[i] += usize::from(n == 1);
                highest[i] = highest[i].max(n);
            }
        }
    }
    // a route without auth: each anonymous call has a backend session of its own (issue 31
    // item 6), so no count ever sees another call's (before: the counters went up to 6)
    for i in 0..2 {
        assert!(ones[i] >= 6, "identity {i}: {} counts", ones[i]);
        assert_eq!(
            highest[i], 1,
            "identity {i}: no call saw another's session state"
        );
    }
    assert_eq!(
        gw.metric("mcpgw_pooled_session_events_total{event=\"reused\",pool=\"p\"}")
            .await,
        0.0,
        "anonymous callers never share a backend session"
    );
    let opened = gw
        .metric("mcpgw_pooled_session_events_total{event=\"opened\",pool=\"p\"}")
        .await;
    assert_eventually!(
        Duration::from_secs(10),
        gw.metric("mcpgw_pooled_session_events_total{event=\"closed\",pool=\"p\"}")
            .await
            == opened,
        "each closed (DELETE upstream) after its call"
    );
}

#[tokio::test]
async fn a_legacy_backend_killed_under_2026_load_loses_at_most_the_calls_in_flight() {
    let _machine = mcp_gateway_tests::machine::exclusive().await;
    let mut a =
        PythonPeer::start("mcp1", "pooled_server.py", &["--port", "0", "--name", "k1"]).await;
    let b = PythonPeer::start("mcp1", "pooled_server.py", &["--port", "0", "--name", "k2"]).await;
    // 20 anonymous clients from one address: a share (per backend, half of 64) above them
    let yaml = format!(
        "bridge: {{ pooled-sessions: {{ max-per-principal: 64 }} }}\npools:\n  p: {{ era: legacy, backends: [{}, {}] }}\nroutes: [ {{ path: /mcp, pool: p, mode: stateless }} ]\n",
        a.addr(),
        b.addr()
    );
    let gw = Gateway::start(&yaml).await;
    let json = mcp_gateway_tests::harness::unique_temp_path("mcp-load-kill").with_extension("json");
    let load = tokio::process::Command::new(workspace_bin("mcp-load"))
        .args([
            "run",
            "--target",
            &gw.addr.to_string(),
            "--dialect",
            "stateless",
        ])
        .args(["--rate", "0", "--concurrency", "20", "--duration", "8"])
        .arg("--json")
        .arg(&json)
        .kill_on_drop(true)
        .output();
    // the kill comes once the load is on (100 calls answered: about a second of it; the load
    // runs 8 s on its own clock), and the second it came in is kept for the timeline below
    let spawned = std::time::Instant::now();
    let kill = async {
        assert_eventually!(
            Duration::from_secs(8),
            gw.metric("mcpgw_requests_total").await >= 100.0,
            "the load's calls are answered"
        );
        a.kill().await;
        spawned.elapsed().as_secs()
    };
    let (out, kill_second) = tokio::join!(load, kill);
    let out = out.expect("mcp-load ran");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let failed = v["failed"].as_u64().unwrap();
    assert!(v["ok"].as_u64().unwrap() > 100, "{v}");
    assert!(
        failed <= 20,
        "at most the 20 calls in flight failed: {}",
        v["errors"]
    );
    for (kind, _) in v["errors"].as_object().unwrap() {
        assert_eq!(
            kind, "rpc--32013",
            "only calls in flight at the kill: {}",
            v["errors"]
        );
    }
    // nothing fails after the second of the kill (and the one after it)
    let late: u64 = v["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["t"].as_u64().unwrap() >= kill_second + 2)
        .map(|t| t["failed"].as_u64().unwrap())
        .sum();
    assert_eq!(late, 0, "{}", v["timeline"]);
    drop(b);
    std::fs::remove_file(&json).ok();
}
