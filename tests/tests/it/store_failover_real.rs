//! A store failover under a real SDK pair: the mcp 1.30.0 Python client making calls through
//! the gateway to real FastMCP 1.30.0 backends while the Redis Cluster master holding its
//! session is SIGKILLed. Every call is answered by the same backend session (the `count` tool
//! counts per backend session: 1, 2, 3, ... proves it was never re-created), and nothing was
//! re-initialized. Needs `scripts/setup-peers` and Debian's redis-server.

use mcp_gateway_tests::machine;
use mcp_gateway_tests::redis_ha::RedisCluster;
use mcp_gateway_tests::{Gateway, PythonPeer, ReplClient};
use serde_json::json;
use std::time::{Duration, Instant};

/// One `count` call, which must answer `n + 1` (the same backend session as before).
async fn count_call(client: &mut ReplClient, n: &mut usize) {
    *n += 1;
    let answer = client
        .cmd(json!({"op": "call", "name": "count", "args": {}}))
        .await;
    assert_eq!(answer["ok"], true, "call {n}: {answer}");
    assert_eq!(answer["isError"], false, "call {n}: {answer}");
    assert_eq!(
        answer["text"],
        n.to_string(),
        "call {n} was answered by the same backend session"
    );
}

#[tokio::test]
async fn a_real_client_keeps_its_session_while_the_master_holding_it_fails_over() {
    let _machine = machine::exclusive().await;
    let mut cluster = RedisCluster::start(3, 2000).await;
    let (a, b) = (
        PythonPeer::legacy_v1("pod-a", 0).await,
        PythonPeer::legacy_v1("pod-b", 0).await,
    );
    let urls: Vec<String> = cluster.urls().iter().map(|u| format!("\"{u}\"")).collect();
    let yaml = format!(
        "sessions:\n  idle-timeout-s: 20\n  store: redis\n  redis: {{ urls: [{}], cluster: true, key-prefix: \"real:\" }}\npools:\n  legacy: {{ backends: [{}, {}] }}\nroutes:\n  - {{ path: /mcp, mode: stateful, pool: legacy }}\n",
        urls.join(", "),
        a.addr(),
        b.addr()
    );
    let gw = Gateway::start(&yaml).await;
    let mut client = ReplClient::try_connect("mcp1", &gw.url("/mcp"), None)
        .await
        .unwrap_or_else(|hello| panic!("the 1.30.0 client did not start: {hello}"));
    let sid = client.cmd(json!({"op": "session_id"})).await;
    let sid = sid["session_id"]
        .as_str()
        .unwrap_or_else(|| panic!("a session id: {sid}"))
        .to_owned();
    let mut n = 0;
    for _ in 0..10 {
        count_call(&mut client, &mut n).await;
    }
    let killed = cluster.kill_master_of(&format!("real:{{{sid}}}:rec")).await;
    eprintln!("killed master {killed}, the one holding session {sid}");
    // calls every 100 ms through the failover and 3 s past it
    let started = Instant::now();
    let failover = cluster.until_failed_over(killed, Duration::from_secs(20));
    tokio::pin!(failover);
    let mut over = None;
    while over.is_none_or(|t: Instant| t.elapsed() < Duration::from_secs(3)) {
        count_call(&mut client, &mut n).await;
        tokio::select! {
            _ = &mut failover, if over.is_none() => over = Some(Instant::now()),
            // the calls' pace is the behaviour: one every 100 ms through the failover
            _ = tokio::time::sleep(Duration::from_millis(100)) => {}
        }
    }
    eprintln!(
        "{n} calls, all answered; the failover took {:?}",
        over.map(|t| t - started)
    );
    assert!(n > 30, "calls made during the failover: {n}");
    assert!(
        gw.metric("mcpgw_store_fallbacks_total{op=\"get\"}").await > 0.0,
        "the session was served from the replica's copy"
    );
    assert_eq!(gw.metric("mcpgw_session_reinits_total").await, 0.0);
    assert_eq!(gw.metric("mcpgw_store_unavailable_total").await, 1.0);
    assert!(client.close().await, "closed cleanly (DELETE answered)");
}
