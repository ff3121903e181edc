//! A rollout with real servers: three PyPI `mcp==1.30.0` pods found through an endpoints file,
//! a fourth appears, the first is drained through the admin API, the second is SIGKILLed.
//! The 1.30.0 clients see zero failures for calls made after each event, and the admin API
//! and metrics reflect every step. Needs `scripts/setup-peers`.

use mcp_gateway_tests::{
    assert_eventually, eventually_async, Gateway, PythonPeer, ReplClient, Request,
};
use serde_json::{json, Value};
use std::time::Duration;

async fn view(gw: &Gateway) -> Value {
    serde_json::from_str(&gw.admin_get("/admin/backends").await.1).unwrap()
}

fn sessions_on(view: &Value, addr: &str) -> Option<u64> {
    view["pools"][0]["backends"]
        .as_array()?
        .iter()
        .find(|b| b["address"] == addr)
        .and_then(|b| b["sessions"].as_u64())
}

/// How long the admin API says `addr` has been draining.
fn draining_for_ms(view: &Value, addr: &str) -> Option<u64> {
    view["pools"][0]["backends"]
        .as_array()?
        .iter()
        .find(|b| b["address"] == addr)?["drainingForMs"]
        .as_u64()
}

async fn all_calls_succeed(clients: &mut [ReplClient], step: &str) -> Vec<String> {
    let mut answered_by = Vec::new();
    for c in clients.iter_mut() {
        let answer = c
            .cmd(json!({"op": "call", "name": "whoami", "args": {}}))
            .await;
        assert_eq!(answer["ok"], true, "{step}: {answer}");
        answered_by.push(answer["text"].as_str().unwrap().to_owned());
    }
    answered_by
}

#[tokio::test]
async fn a_rollout_with_real_pods_loses_no_call_after_any_event() {
    let mut pods = Vec::new();
    for i in 0..3 {
        pods.push(PythonPeer::legacy_v1(&format!("pod-{i}"), 0).await);
    }
    let file = mcp_gateway_tests::harness::unique_temp_path("mcpgw-rollout");
    let write_endpoints = |pods: &[String]| std::fs::write(&file, pods.join("\n")).unwrap();
    let mut listed: Vec<String> = pods.iter().map(|p| p.addr()).collect();
    write_endpoints(&listed);
    let gw = Gateway::start(&format!(
        "pools:\n  pods: {{ backends: [], drain-timeout-s: 1, failure-cooldown-ms: 60000, discovery: {{ file: {}, interval-ms: 100 }} }}\nroutes: [ {{ path: /mcp, pool: pods, mode: stateful }} ]\n",
        file.display()
    ))
    .await;
    eventually_async("pods discovered", Duration::from_secs(5), || async {
        view(&gw).await["pools"][0]["backends"]
            .as_array()
            .map_or(0, Vec::len)
            == 3
    })
    .await;
    let url = gw.url("/mcp");
    let mut clients = Vec::new();
    for _ in 0..6 {
        clients.push(ReplClient::connect("mcp1", &url, None).await);
    }
    let spread = all_calls_succeed(&mut clients, "start").await;
    for i in 0..3 {
        assert_eq!(
            spread.iter().filter(|n| **n == format!("pod-{i}")).count(),
            2,
            "least-sessions spread: {spread:?}"
        );
    }

    // 1. a fourth pod appears: it gets the new sessions at once
    pods.push(PythonPeer::legacy_v1("pod-3", 0).await);
    listed.push(pods[3].addr());
    write_endpoints(&listed);
    let fourth = pods[3].addr();
    eventually_async("pod-3 joins", Duration::from_secs(5), || async {
        sessions_on(&view(&gw).await, &fourth).is_some()
    })
    .await;
    for _ in 0..2 {
        let mut c = ReplClient::connect("mcp1", &url, None).await;
        assert_eq!(c.call_text("whoami", json!({})).await, "pod-3");
        clients.push(c);
    }
    all_calls_succeed(&mut clients, "after pod-3 joined").await;

    // 2. pod-0 is drained: its sessions keep working, then move after the drain deadline
    let drained = pods[0].addr();
    let drain = Request::bare(
        "POST",
        &format!("/admin/backends/drain?pool=pods&backend={drained}"),
    )
    .header(
        "Authorization",
        &format!("Bearer {}", mcp_gateway_tests::harness::ADMIN_TOKEN),
    );
    assert_eq!(drain.send(gw.admin).await.status(), 200);
    all_calls_succeed(&mut clients, "while pod-0 drains").await;
    // the gateway moves a session once its backend has drained for drain-timeout-s
    assert_eventually!(
        Duration::from_secs(5),
        draining_for_ms(&view(&gw).await, &drained).is_some_and(|ms| ms >= 1000),
        "{drained} has drained past its 1 s deadline"
    );
    let after_drain = all_calls_succeed(&mut clients, "after the drain deadline").await;
    assert!(
        !after_drain.contains(&"pod-0".to_owned()),
        "{after_drain:?}"
    );
    assert_eq!(sessions_on(&view(&gw).await, &drained), Some(0));
    assert_eq!(
        gw.metric("mcpgw_session_reinits_total{reason=\"drained\"}")
            .await,
        2.0
    );

    // 3. pod-1 is SIGKILLed: its sessions move at their next call, nothing fails
    pods[1].kill().await;
    let after_kill = all_calls_succeed(&mut clients, "after pod-1 was killed").await;
    assert!(!after_kill.contains(&"pod-1".to_owned()), "{after_kill:?}");
    // A session moves when its GET stream to the dead pod breaks (connection-lost), when its
    // next call finds the connection refused, or when the pod is already marked down.
    let mut moved = 0.0;
    for reason in ["connection-lost", "connect-refused", "backend-down"] {
        moved += gw
            .metric(&format!(
                "mcpgw_session_reinits_total{{reason=\"{reason}\"}}"
            ))
            .await;
    }
    assert!(moved >= 1.0, "no session moved off the killed pod");
    // A new session is placed on the pod with the fewest sessions, the dead one: its refused
    // connection marks it down and the session opens on a live pod instead.
    let mut late = ReplClient::connect("mcp1", &url, None).await;
    let placed = late.call_text("whoami", json!({})).await;
    assert_ne!(placed, "pod-1");
    assert!(late.close().await);
    let states: Vec<String> = view(&gw).await["pools"][0]["backends"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            format!(
                "{}={}",
                b["address"].as_str().unwrap(),
                b["state"].as_str().unwrap()
            )
        })
        .collect();
    assert!(
        states.contains(&format!("{}=down", pods[1].addr())),
        "{states:?}"
    );
    assert!(
        states.contains(&format!("{drained}=draining")),
        "{states:?}"
    );
    for c in clients {
        assert!(c.close().await);
    }
    let _ = std::fs::remove_file(file);
}
