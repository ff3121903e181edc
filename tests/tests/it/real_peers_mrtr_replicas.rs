//! Issue 23, test 3: two gateway replicas sharing Redis (`sessions.store: redis`) and the
//! `requestState` key, each with its own `bridge.advertise-url`, behind a per-request
//! round-robin front ([`RrProxy`]: every request goes to the other replica), a FastMCP 1.30.0
//! backend whose tools call `ctx.elicit`, `ctx.session.create_message` and `list_roots`, and
//! the PyPI mcp 2.3.0 client pinned to 2026-07-28 with the matching callbacks. Every retry
//! with `inputResponses` lands on the replica that did not park its call, which forwards it to
//! the holder named in the sealed state; every call completes, and the forwards are counted.
//! Needs `scripts/setup-peers` and Debian's redis-server.

use mcp_gateway_tests::harness::{python, unique_temp_path, workspace};
use mcp_gateway_tests::redis::RedisServer;
use mcp_gateway_tests::rr_proxy::RrProxy;
use mcp_gateway_tests::{Gateway, PythonPeer};
use serde_json::{json, Value};
use std::time::Duration;
use tokio::process::Command;

#[tokio::test]
async fn a_pinned_clients_retries_reach_the_other_replica_and_every_call_completes() {
    let redis = RedisServer::start().await;
    let peer =
        PythonPeer::start("mcp1", "pooled_server.py", &["--port", "0", "--name", "b1"]).await;
    let dir = unique_temp_path("mcpgw-mrtr-replicas");
    std::fs::create_dir_all(&dir).unwrap();
    let key_file = dir.join("state.key");
    std::fs::write(&key_file, "ab".repeat(32)).unwrap();
    let yaml = format!(
        "sessions:\n  store: redis\n  redis: {{ urls: [\"{}\"], key-prefix: \"mrtr:\" }}\nbridge: {{ request-state-key-file: {}, advertise-url: \"http://{{{{listen}}}}\" }}\npools:\n  p: {{ era: legacy, backends: [{}] }}\nroutes: [ {{ path: /mcp, pool: p, mode: stateless }} ]\n",
        redis.url(),
        key_file.display(),
        peer.addr()
    );
    let replicas = [Gateway::start(&yaml).await, Gateway::start(&yaml).await];
    let front = RrProxy::start(&[replicas[0].addr, replicas[1].addr]).await;

    let mut cmd = Command::new(python("mcp2"));
    cmd.arg(workspace().join("tests/peers/modern_client_v2.py"))
        .args(["--url", &front.url("/mcp"), "inputs"])
        .kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(120), cmd.output())
        .await
        .expect("the client finished")
        .expect("ran");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let v: Value = serde_json::from_str(stdout.lines().last().unwrap_or("{}")).unwrap_or_default();
    assert!(
        out.status.success(),
        "{v} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(v["ask"], "hello ada", "{v}");
    assert_eq!(v["sample"], "sampled: from the model", "{v}");
    assert_eq!(v["roots"], "roots: file:///a,file:///b", "{v}");
    assert_eq!(v["two_rounds"], "ada/from the model", "{v}");
    assert_eq!(v["calls"], json!({"elicit": 2, "sample": 2, "roots": 1}));

    let sum = |event: &'static str| {
        let replicas = &replicas;
        async move {
            let name = format!("mcpgw_mrtr_events_total{{event=\"{event}\",pool=\"p\"}}");
            let mut per = Vec::new();
            for gw in replicas {
                per.push(gw.metric(&name).await);
            }
            per
        }
    };
    let parked = sum("parked").await;
    let resumed = sum("resumed").await;
    let forwarded = sum("forwarded").await;
    let total = |v: &[f64]| v.iter().sum::<f64>();
    assert_eq!(
        total(&parked),
        5.0,
        "one round per input request: {parked:?}"
    );
    assert_eq!(
        total(&resumed),
        5.0,
        "every parked call was resumed: {resumed:?}"
    );
    // the front alternates per request: a call's retry that reaches the replica that did not
    // park it is forwarded (the rounds of one call all stay with the replica that parked it)
    let slots: Vec<usize> = front
        .log()
        .iter()
        .filter(|s| s.rpc.as_deref() == Some("tools/call"))
        .filter_map(|s| s.slot)
        .collect();
    // in order: ask, sample, roots (a call and its retry each), two_rounds (a call, two retries)
    assert_eq!(slots.len(), 9, "{slots:?}");
    let mut expected = 0;
    let mut at = 0;
    for size in [2, 2, 2, 3] {
        let call = &slots[at..at + size];
        expected += call[1..].iter().filter(|&&s| s != call[0]).count();
        at += size;
    }
    assert!(
        expected >= 1,
        "the front sent a retry to the other replica: {slots:?}"
    );
    assert_eq!(
        total(&forwarded),
        expected as f64,
        "each retry that reached the other replica was forwarded: {forwarded:?} {slots:?}"
    );
    assert_eq!(
        total(&sum("forward-failed").await),
        0.0,
        "no forward failed"
    );
    for gw in &replicas {
        assert_eq!(gw.metric("mcpgw_mrtr_parked{pool=\"p\"}").await, 0.0);
    }
    std::fs::remove_dir_all(&dir).ok();
}
