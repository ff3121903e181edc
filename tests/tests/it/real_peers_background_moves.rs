//! The sessions of a SIGKILLed real pod move before their next call (issue 25): PyPI
//! `mcp==1.30.0` FastMCP servers behind the gateway, real 1.30.0 `ClientSession`s as clients.
//! A health probe marks the killed pod down, its sessions move to the survivor in the
//! background, and every client's next call is answered there with no re-initialization on
//! its way. Needs `scripts/setup-peers`.

use mcp_gateway_tests::{assert_eventually, Gateway, PythonPeer, ReplClient};
use serde_json::json;
use std::time::Duration;

const CLIENTS: usize = 4;

#[tokio::test]
async fn real_clients_sessions_move_off_a_sigkilled_fastmcp_pod_before_their_next_call() {
    let mut pods = [
        ("pod-0", PythonPeer::legacy_v1("pod-0", 0).await),
        ("pod-1", PythonPeer::legacy_v1("pod-1", 0).await),
    ];
    let yaml = format!(
        "pools:\n  legacy: {{ backends: [{}, {}], failure-cooldown-ms: 60000, health: {{ interval-ms: 100, fall: 1, timeout-ms: 500 }} }}\nroutes:\n  - {{ path: /mcp, mode: stateful, pool: legacy }}\n",
        pods[0].1.addr(),
        pods[1].1.addr()
    );
    let gw = Gateway::start(&yaml).await;
    let mut clients = Vec::new();
    for _ in 0..CLIENTS {
        let mut client = ReplClient::connect("mcp1", &gw.url("/mcp"), None).await;
        assert_eq!(client.call_text("count", json!({})).await, "1");
        let pod = client.call_text("whoami", json!({})).await;
        clients.push((client, pod));
    }
    let dead = clients[0].1.clone();
    let on_dead = clients.iter().filter(|(_, pod)| *pod == dead).count();
    let (_, peer) = pods.iter_mut().find(|(n, _)| *n == dead).expect("a pod");
    peer.kill().await;
    let moved = "mcpgw_session_moves_finished_total{trigger=\"background\",outcome=\"moved\"}";
    assert_eventually!(
        Duration::from_secs(15),
        gw.metric(moved).await == on_dead as f64,
        "the {on_dead} sessions of {dead} moved in the background"
    );
    for (client, pod) in clients.iter_mut() {
        let now = client.call_text("whoami", json!({})).await;
        assert_ne!(now, dead, "answered by the survivor");
        let count = client.call_text("count", json!({})).await;
        // a moved session is a fresh backend session on the survivor; the others kept theirs
        let expected = if *pod == dead { "1" } else { "2" };
        assert_eq!(count, expected, "{pod}");
    }
    let on_demand = "mcpgw_session_moves_started_total{trigger=\"on-demand\"}";
    assert_eq!(gw.metric(on_demand).await, 0.0, "no call re-initialized");
    assert_eq!(
        gw.metric("mcpgw_session_reinits_total").await,
        on_dead as f64
    );
    for (client, _) in clients {
        assert!(client.close().await);
    }
}
