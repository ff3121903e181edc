//! Logs an operator can trust (issue 26): a healthy run of real load through stateful and
//! stateless routes logs nothing above INFO, and failures the gateway handles (a refused
//! backend retried elsewhere, a pool with no backend answered -32011) are counted, not logged
//! at WARN or ERROR. The gateway's stderr is captured (`Gateway::start_logging_to`, JSON lines)
//! and read back (`mcp_gateway_tests::logs`).

use mcp_gateway_tests::harness::{unique_temp_path, workspace_bin};
use mcp_gateway_tests::{logs, machine, DeadAddr, Gateway, PythonPeer, ReplClient, Request};
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};

/// How long the healthy run lasts (the issue asks for at least 60 s in the suite; a 5-minute
/// run was measured once by hand: docs/metrics.md#logs).
const HEALTHY_S: u64 = 60;

async fn load(gw: &Gateway, path: &str, dialect: &str, rate: u64, out: &Path) -> Value {
    let json_out = out.join(format!("{dialect}.json"));
    let run = tokio::process::Command::new(workspace_bin("mcp-load"))
        .args(["run", "--target", &gw.addr.to_string(), "--path", path])
        .args(["--dialect", dialect, "--tool", "whoami", "--sessions", "10"])
        .args([
            "--rate",
            &rate.to_string(),
            "--duration",
            &HEALTHY_S.to_string(),
        ])
        .arg("--json")
        .arg(&json_out)
        .output()
        .await
        .expect("run mcp-load");
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    serde_json::from_slice(&std::fs::read(&json_out).expect("json written")).expect("JSON")
}

#[tokio::test]
async fn a_healthy_minute_of_real_load_logs_nothing_above_info() {
    // a minute of load on real Python servers: alone on the machine
    let _machine = machine::exclusive().await;
    let (a, b) = (
        PythonPeer::legacy_v1("a", 0).await,
        PythonPeer::legacy_v1("b", 0).await,
    );
    let modern = PythonPeer::stateless_v2("m").await;
    let dir = unique_temp_path("quiet-logs");
    std::fs::create_dir_all(&dir).expect("dir");
    let log = dir.join("gateway.log");
    let gw = Gateway::start_logging_to(
        &format!(
            "pools:\n  legacy: {{ backends: [{}, {}] }}\n  modern: {{ backends: [{}] }}\nroutes:\n\
             \x20 - {{ path: /mcp, mode: stateful, pool: legacy }}\n\
             \x20 - {{ path: /s, mode: stateless, pool: modern, upstream-path: /mcp }}\n",
            a.addr(),
            b.addr(),
            modern.addr()
        ),
        &[],
        &log,
    )
    .await;
    // real SDK clients beside the load: a 1.30.0 and a 2.3.0 session calling every 250 ms
    let url = gw.url("/mcp");
    let clients = tokio::spawn(async move {
        let mut v1 = ReplClient::connect("mcp1", &url, None).await;
        let mut v2 = ReplClient::connect("mcp2", &url, Some("legacy")).await;
        let until = Instant::now() + Duration::from_secs(HEALTHY_S);
        let mut calls = 0;
        while Instant::now() < until {
            v1.call_text("whoami", json!({})).await;
            v2.call_text("whoami", json!({})).await;
            calls += 2;
            // the clients' pace is the behaviour: SDK sessions calling beside the load
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        assert!(v1.close().await && v2.close().await);
        calls
    });
    let (legacy, stateless) = tokio::join!(
        load(&gw, "/mcp", "legacy", 40, &dir),
        load(&gw, "/s", "stateless", 40, &dir)
    );
    let sdk_calls = clients.await.expect("the SDK clients ran");
    assert_eq!(legacy["failed"], 0, "{legacy}");
    assert_eq!(stateless["failed"], 0, "{stateless}");
    assert!(
        legacy["ok"].as_u64().unwrap() >= 40 * HEALTHY_S - 40,
        "{legacy}"
    );
    assert!(sdk_calls > 100);
    let noisy = logs::above_info(&log);
    assert!(
        noisy.is_empty(),
        "{} lines above INFO in a healthy run:\n{}",
        noisy.len(),
        logs::show(&noisy)
    );
    // the log was written at all (INFO lines: the gateway starting)
    assert!(!logs::read(&log).is_empty());
}

#[tokio::test]
async fn failures_the_gateway_handles_are_counted_not_logged_as_errors() {
    let live = mcp_gateway_tests::MockServer::start("live").await;
    let (dead, gone) = (DeadAddr::new(), DeadAddr::new());
    let dir = unique_temp_path("quiet-logs-handled");
    std::fs::create_dir_all(&dir).expect("dir");
    let log = dir.join("gateway.log");
    let gw = Gateway::start_logging_to(
        &format!(
            "pools:\n  half: {{ backends: [{}, {}] }}\n  down: {{ backends: [{}] }}\nroutes:\n\
             \x20 - {{ path: /half, mode: stateless, pool: half, upstream-path: /mcp }}\n\
             \x20 - {{ path: /down, mode: stateless, pool: down, upstream-path: /mcp }}\n",
            dead.addr, live.addr, gone.addr
        ),
        &[],
        &log,
    )
    .await;
    for id in 0..6 {
        let ok = Request::tools_call("/half", id, "whoami")
            .send(gw.addr)
            .await;
        assert_eq!(
            ok.status(),
            200,
            "a refused backend is retried on the live one"
        );
        let down = Request::tools_call("/down", id, "whoami")
            .send(gw.addr)
            .await;
        assert_eq!(down.status(), 503);
        assert_eq!(down.json()["error"]["code"], -32011);
    }
    let noisy = logs::above_info(&log);
    assert!(
        noisy.is_empty(),
        "handled failures logged above INFO:\n{}",
        logs::show(&noisy)
    );
    // the first -32011 followed a refused connect (pingora's "Fail to proxy: Upstream
    // ConnectRefused" at ERROR before); the later ones are refused before any connect
    assert!(
        gw.metric(r#"mcpgw_log_records_demoted_total{record="answered"}"#)
            .await
            >= 1.0
    );
    assert!(
        gw.metric(r#"mcpgw_upstream_connect_failures_total{pool="down"}"#)
            .await
            >= 1.0
    );
    assert_eq!(
        gw.metric(r#"mcpgw_requests_total{route="/down",outcome="backend-unavailable"}"#)
            .await,
        6.0
    );
}

/// A Redis outage under live sessions: the session store failures that do not fail the
/// request (recording each session's use, with a touch due for every session) are logged once
/// at WARN for the outage, then at DEBUG and counted; before, each one logged its own WARN.
#[tokio::test]
async fn a_store_outage_warns_once_not_once_per_request() {
    const SESSIONS: usize = 10;
    let mut redis = mcp_gateway_tests::redis::RedisServer::start().await;
    let backend = mcp_gateway_tests::MockServer::legacy("a", 0, "2025-11-25").await;
    let dir = unique_temp_path("quiet-logs-outage");
    std::fs::create_dir_all(&dir).expect("dir");
    let log = dir.join("gateway.log");
    // idle-timeout-s 16: a session's use is recorded (a store write) at most once a second
    let gw = Gateway::start_logging_to(
        &format!(
            "sessions:\n  idle-timeout-s: 16\n  store: redis\n  redis: {{ urls: [\"{}\"], key-prefix: \"quiet:\" }}\npools:\n  p: {{ backends: [{}] }}\nroutes:\n  - {{ path: /mcp, mode: stateful, pool: p }}\n",
            redis.url(),
            backend.addr
        ),
        &[],
        &log,
    )
    .await;
    let mut sids = Vec::new();
    for _ in 0..SESSIONS {
        sids.push(mcp_gateway_tests::open_session(gw.addr).await);
    }
    let call = |sid: &str, id: usize| {
        Request::post(
            "/mcp",
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"session_id","arguments":{{}}}}}}"#),
        )
        .header("Mcp-Session-Id", sid)
        .header("MCP-Protocol-Version", "2025-11-25")
    };
    for (i, sid) in sids.iter().enumerate() {
        assert_eq!(call(sid, i).send(gw.addr).await.status(), 200);
    }
    // every session's next use is due to be recorded; the store goes away. Time passing is the
    // point: a use is recorded at most once a second, by the clock, and nothing but the clock
    // says when the next one is due
    tokio::time::sleep(Duration::from_millis(1100)).await;
    redis.kill().await;
    let mut served = 0;
    for round in 0..3 {
        for (i, sid) in sids.iter().enumerate() {
            let status = call(sid, 100 * round + i).send(gw.addr).await.status();
            assert!(status == 200 || status == 503, "status {status}");
            served += usize::from(status == 200);
        }
    }
    let noisy = logs::above_info(&log);
    assert!(
        noisy.len() <= 1,
        "{} lines above INFO in one outage ({served} calls served from the replica's copy):\n{}",
        noisy.len(),
        logs::show(&noisy)
    );
    assert!(
        gw.metric("mcpgw_store_errors_total").await >= 1.0,
        "the outage is counted"
    );
    // one outage, counted once (the sessions were served from the replica's copies, so no
    // request had a failure of its own to log)
    assert_eq!(gw.metric("mcpgw_store_unavailable_total").await, 1.0);
    assert!(served > 0, "the sessions were served from the copies");
}
