//! The sessions of a backend known dead move before their next call (issue 25), against Rust
//! legacy mocks: a health probe marks the killed pod down, the gateway moves each of its
//! sessions to the survivor in the background (`mcpgw_session_moves_finished_total` with
//! trigger `background`), and the next call of each session goes straight to the survivor
//! without a re-initialization. With Redis and two replicas, each session moves once.

use mcp_gateway_tests::redis::RedisServer;
use mcp_gateway_tests::{assert_eventually, open_session, Gateway, MockServer, Request};
use std::time::Duration;

const V: &str = "2025-11-25";
const N: usize = 8;

fn yaml(sessions: &str, a: &MockServer, b: &MockServer) -> String {
    format!(
        "{sessions}pools:\n  legacy: {{ backends: [{}, {}], failure-cooldown-ms: 60000, health: {{ interval-ms: 100, fall: 1, timeout-ms: 500 }} }}\nroutes:\n  - {{ path: /mcp, mode: stateful, pool: legacy }}\n",
        a.addr, b.addr
    )
}

fn whoami(sid: &str, id: u64) -> Request {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"whoami","arguments":{{}}}}}}"#
    );
    Request::post("/mcp", body)
        .header("Mcp-Session-Id", sid)
        .header("MCP-Protocol-Version", V)
}

/// Opens `N` sessions through `gateways` in turn; returns them with the pod each is on.
async fn sessions(gateways: &[&Gateway]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for i in 0..N {
        let gw = gateways[i % gateways.len()];
        let sid = open_session(gw.addr).await;
        let pod = whoami(&sid, 1).send(gw.addr).await.tool_text();
        out.push((sid, pod));
    }
    out
}

#[tokio::test]
async fn the_sessions_of_a_dead_pod_move_before_their_next_call() {
    let a = MockServer::legacy("a", 0, V).await;
    let b = MockServer::legacy("b", 0, V).await;
    let gw = Gateway::start(&yaml("", &a, &b)).await;
    let open = sessions(&[&gw]).await;
    let on_a = open.iter().filter(|(_, pod)| pod == "a").count();
    assert!(
        on_a >= N / 2 - 1,
        "balanced by session count: {on_a} of {N} on a"
    );
    let before = b.sessions().initializes();
    a.die().await;
    let moved = "mcpgw_session_moves_finished_total{trigger=\"background\",outcome=\"moved\"}";
    assert_eventually!(
        Duration::from_secs(10),
        gw.metric(moved).await == on_a as f64,
        "every session of the dead pod moved in the background"
    );
    assert_eq!(b.sessions().initializes(), before + on_a, "one move each");
    for (i, (sid, _)) in open.iter().enumerate() {
        let resp = whoami(sid, 10 + i as u64).send(gw.addr).await;
        assert_eq!(resp.tool_text(), "b", "{sid}");
    }
    assert_eq!(
        b.sessions().initializes(),
        before + on_a,
        "the next calls re-initialize nothing"
    );
    assert_eq!(
        gw.metric("mcpgw_session_moves_started_total{trigger=\"on-demand\"}")
            .await,
        0.0
    );
    assert_eq!(
        gw.metric("mcpgw_session_moves_started_total{trigger=\"background\"}")
            .await,
        on_a as f64
    );
    assert_eq!(gw.metric("mcpgw_session_reinits_total").await, on_a as f64);
}

#[tokio::test]
async fn with_background_moves_off_the_next_call_moves_its_session() {
    let a = MockServer::legacy("a", 0, V).await;
    let b = MockServer::legacy("b", 0, V).await;
    let off = "sessions:\n  background-moves-per-second: 0\n";
    let gw = Gateway::start(&yaml(off, &a, &b)).await;
    let open = sessions(&[&gw]).await;
    let on_a = open.iter().filter(|(_, pod)| pod == "a").count();
    a.die().await;
    // the event a background move starts from: the health checks have marked the pod down
    let up = format!("mcpgw_backend_up{{pool=\"legacy\",backend=\"{}\"}}", a.addr);
    assert_eventually!(
        Duration::from_secs(10),
        gw.metric(&up).await == 0.0,
        "the health checks marked the dead pod down"
    );
    assert_eq!(gw.metric("mcpgw_session_moves_started_total").await, 0.0);
    for (i, (sid, _)) in open.iter().enumerate() {
        assert_eq!(
            whoami(sid, 10 + i as u64).send(gw.addr).await.tool_text(),
            "b"
        );
    }
    assert_eq!(
        gw.metric("mcpgw_session_moves_finished_total{trigger=\"on-demand\",outcome=\"moved\"}")
            .await,
        on_a as f64
    );
}

#[tokio::test]
async fn two_replicas_on_redis_move_each_session_of_a_dead_pod_once() {
    let redis = RedisServer::start().await;
    let a = MockServer::legacy("a", 0, V).await;
    let b = MockServer::legacy("b", 0, V).await;
    let store = format!(
        "sessions:\n  store: redis\n  redis: {{ urls: [\"{}\"], key-prefix: \"bg:\" }}\n",
        redis.url()
    );
    let yaml = yaml(&store, &a, &b);
    let (one, two) = (Gateway::start(&yaml).await, Gateway::start(&yaml).await);
    let open = sessions(&[&one, &two]).await;
    let on_a = open.iter().filter(|(_, pod)| pod == "a").count();
    let before = b.sessions().initializes();
    a.die().await;
    let moved = "mcpgw_session_moves_finished_total{trigger=\"background\",outcome=\"moved\"}";
    assert_eventually!(
        Duration::from_secs(10),
        one.metric(moved).await + two.metric(moved).await == on_a as f64,
        "every session of the dead pod moved in the background, by one replica or the other"
    );
    // each replica's cached binding may be a moment old: its next call adopts the move
    for (i, (sid, _)) in open.iter().enumerate() {
        for (gw, id) in [(&one, 100), (&two, 200)] {
            let resp = whoami(sid, id + i as u64).send(gw.addr).await;
            assert_eq!(resp.tool_text(), "b", "{sid}");
        }
    }
    assert_eq!(b.sessions().initializes(), before + on_a, "each moved once");
    for gw in [&one, &two] {
        let on_demand = "mcpgw_session_moves_started_total{trigger=\"on-demand\"}";
        assert_eq!(gw.metric(on_demand).await, 0.0);
    }
}
