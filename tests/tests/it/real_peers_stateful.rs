//! Stateful routes with the real MCP SDKs: PyPI `mcp==1.30.0` FastMCP servers (sessions in
//! process memory) and npm server-everything behind the gateway, driven by the real 1.30.0
//! `ClientSession` and the 2.3.0 `Client` (legacy and auto modes). Backends are SIGKILLed and
//! restarted; the clients must not notice. Needs `scripts/setup-peers`.

use mcp_gateway_tests::{
    assert_eventually, open_session, Gateway, PythonPeer, ReplClient, Request,
};
use serde_json::json;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

struct Pods {
    peers: Vec<(String, PythonPeer)>,
}

impl Pods {
    async fn legacy(n: usize) -> Pods {
        let names: Vec<String> = (0..n).map(|i| format!("pod-{i}")).collect();
        let started = names.iter().map(|name| PythonPeer::legacy_v1(name, 0));
        let peers = futures_all(started).await;
        Pods {
            peers: names.into_iter().zip(peers).collect(),
        }
    }

    fn yaml(&self, mode: &str, extra: &str) -> String {
        let list: Vec<String> = self.peers.iter().map(|(_, p)| p.addr()).collect();
        format!(
            "{extra}pools:\n  legacy: {{ backends: [{}], failure-cooldown-ms: 60000 }}\nroutes:\n  - path: /mcp\n    mode: {mode}\n    pool: legacy\n",
            list.join(", ")
        )
    }

    async fn kill(&mut self, name: &str) -> u16 {
        let (_, peer) = self
            .peers
            .iter_mut()
            .find(|(n, _)| n == name)
            .expect("known pod");
        peer.kill().await;
        peer.port
    }
}

async fn futures_all<F: std::future::Future<Output = PythonPeer>>(
    futures: impl Iterator<Item = F>,
) -> Vec<PythonPeer> {
    let mut out = Vec::new();
    for f in futures {
        out.push(f.await);
    }
    out
}

#[tokio::test]
async fn a_real_session_stays_on_one_backend_for_50_calls() {
    let pods = Pods::legacy(3).await;
    let gw = Gateway::start(&pods.yaml("stateful", "")).await;
    let mut client = ReplClient::connect("mcp1", &gw.url("/mcp"), None).await;
    let first = client.call_text("whoami", json!({})).await;
    for _ in 0..49 {
        assert_eq!(client.call_text("whoami", json!({})).await, first);
    }
    assert!(client.close().await);
}

async fn survives_sigkill(venv: &str, mode: Option<&str>, route_mode: &str) {
    let mut pods = Pods::legacy(3).await;
    // On an auto route the reverse bridge would answer the 2.3 auto client's `server/discover`
    // and the client would speak 2026-07-28 through pooled sessions (real_peers_pooled); off,
    // the probe gets the legacy servers' refusal and the client falls back to a session.
    let extra = if route_mode == "auto" {
        "bridge:\n  pooled-sessions: { enabled: false }\n"
    } else {
        ""
    };
    let gw = Gateway::start(&pods.yaml(route_mode, extra)).await;
    let mut client = ReplClient::connect(venv, &gw.url("/mcp"), mode).await;
    assert_eq!(client.hello["protocol"], "2025-11-25", "{}", client.hello);
    let session_before = client.cmd(json!({"op": "session_id"})).await;
    assert_eq!(client.call_text("count", json!({})).await, "1");
    assert_eq!(client.call_text("count", json!({})).await, "2");
    let pinned = client.call_text("whoami", json!({})).await;
    pods.kill(&pinned).await;
    let now = client.call_text("whoami", json!({})).await;
    assert_ne!(now, pinned, "answered by a surviving backend");
    assert_eq!(
        client.call_text("count", json!({})).await,
        "1",
        "a fresh backend session"
    );
    assert_eq!(
        client.cmd(json!({"op": "session_id"})).await,
        session_before,
        "same client session"
    );
    let tools = client.cmd(json!({"op": "list"})).await;
    assert_eq!(tools["ok"], true, "{tools}");
    assert!(client.close().await);
    assert_eq!(gw.metric("mcpgw_session_reinits_total").await, 1.0);
}

#[tokio::test]
async fn the_1_30_client_survives_sigkill_of_its_pinned_backend() {
    survives_sigkill("mcp1", None, "stateful").await;
}

#[tokio::test]
async fn the_2_3_client_in_legacy_mode_survives_sigkill_of_its_pinned_backend() {
    survives_sigkill("mcp2", Some("legacy"), "stateful").await;
}

#[tokio::test]
async fn the_2_3_client_in_auto_mode_falls_back_to_initialize_and_survives_sigkill() {
    survives_sigkill("mcp2", Some("auto"), "stateful").await;
}

#[tokio::test]
async fn the_2_3_auto_client_works_on_an_auto_route_in_front_of_legacy_servers() {
    survives_sigkill("mcp2", Some("auto"), "auto").await;
}

#[tokio::test]
async fn calls_continue_when_a_backend_restarts_on_the_same_port_and_forgets_its_sessions() {
    let mut pods = Pods::legacy(1).await;
    let gw = Gateway::start(&pods.yaml("stateful", "")).await;
    let mut client = ReplClient::connect("mcp1", &gw.url("/mcp"), None).await;
    assert_eq!(client.call_text("count", json!({})).await, "1");
    let port = pods.kill("pod-0").await;
    let _restarted = PythonPeer::legacy_v1("pod-0-restarted", port).await;
    assert_eq!(
        client.call_text("whoami", json!({})).await,
        "pod-0-restarted"
    );
    assert_eq!(client.call_text("count", json!({})).await, "1");
    assert!(client.close().await);
}

#[tokio::test]
async fn logging_level_set_by_a_real_client_is_replayed_after_failover() {
    let mut pods = Pods::legacy(2).await;
    let gw = Gateway::start(&pods.yaml("stateful", "")).await;
    let mut client = ReplClient::connect("mcp1", &gw.url("/mcp"), None).await;
    assert_eq!(
        client
            .cmd(json!({"op": "set_level", "level": "debug"}))
            .await["ok"],
        true
    );
    assert_eq!(client.call_text("log_level", json!({})).await, "debug");
    let pinned = client.call_text("whoami", json!({})).await;
    pods.kill(&pinned).await;
    assert_ne!(client.call_text("whoami", json!({})).await, pinned);
    assert_eq!(client.call_text("log_level", json!({})).await, "debug");
    assert!(client.close().await);
}

#[tokio::test]
async fn twenty_sessions_under_load_see_no_failure_for_calls_started_after_a_kill() {
    let mut pods = Pods::legacy(3).await;
    let gw = Gateway::start(&pods.yaml("stateful", "")).await;
    let url = gw.url("/mcp");
    let connecting = (0..20).map(|i| {
        let url = url.clone();
        tokio::spawn(async move {
            ReplClient::connect(
                if i % 2 == 0 { "mcp1" } else { "mcp2" },
                &url,
                Some("legacy"),
            )
            .await
        })
    });
    let mut clients = Vec::new();
    for c in connecting.collect::<Vec<_>>() {
        clients.push(c.await.unwrap());
    }
    let start = Instant::now();
    let answered = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = clients
        .into_iter()
        .map(|mut client| {
            let (answered, stop) = (answered.clone(), stop.clone());
            tokio::spawn(async move {
                let mut calls = Vec::new();
                while !stop.load(Ordering::SeqCst) {
                    let at = start.elapsed();
                    let answer = client
                        .cmd(json!({"op": "call", "name": "whoami", "args": {}}))
                        .await;
                    calls.push((at, start.elapsed(), answer));
                    answered.fetch_add(1, Ordering::SeqCst);
                }
                (calls, client)
            })
        })
        .collect();
    // the kill comes once the load is on (two calls a client answered), and the load goes on
    // until as many calls again were answered after it
    assert_eventually!(
        Duration::from_secs(30),
        answered.load(Ordering::SeqCst) >= 40,
        "the 20 clients' calls are answered"
    );
    pods.kill("pod-1").await;
    let killed_at = start.elapsed();
    let at_kill = answered.load(Ordering::SeqCst);
    assert_eventually!(
        Duration::from_secs(30),
        answered.load(Ordering::SeqCst) >= at_kill + 60,
        "calls are answered after the kill"
    );
    stop.store(true, Ordering::SeqCst);
    let mut after = 0;
    for w in workers {
        let (calls, client) = w.await.unwrap();
        for (started, _ended, answer) in &calls {
            if *started > killed_at {
                after += 1;
                assert_eq!(
                    answer["ok"], true,
                    "a call started after the kill failed: {answer}"
                );
                assert_ne!(answer["text"], "pod-1");
            }
        }
        assert!(client.close().await);
    }
    assert!(after >= 20, "load continued after the kill ({after} calls)");
}

fn legacy_call(sid: &str, id: u64, tool: &str) -> Request {
    Request::post("/mcp", format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{{}}}}}}"#))
        .header("Mcp-Session-Id", sid)
        .header("MCP-Protocol-Version", "2025-11-25")
}

#[tokio::test]
async fn ten_concurrent_calls_during_a_failover_cause_exactly_one_reinit() {
    let mut pods = Pods::legacy(3).await;
    let gw = Gateway::start(&pods.yaml("stateful", "")).await;
    let sid = open_session(gw.addr).await;
    let pinned = legacy_call(&sid, 1, "whoami")
        .send(gw.addr)
        .await
        .tool_text();
    pods.kill(&pinned).await;
    let calls: Vec<_> = (0..10)
        .map(|i| {
            let (req, addr) = (legacy_call(&sid, 10 + i, "whoami"), gw.addr);
            tokio::spawn(async move { req.send(addr).await })
        })
        .collect();
    let mut answered_by = Vec::new();
    for c in calls {
        let resp = c.await.unwrap();
        assert_eq!(resp.status(), 200);
        answered_by.push(resp.tool_text());
    }
    answered_by.dedup();
    assert_eq!(
        answered_by.len(),
        1,
        "all on one new backend: {answered_by:?}"
    );
    assert_ne!(answered_by[0], pinned);
    assert_eq!(gw.metric("mcpgw_session_reinits_total").await, 1.0);
}

#[tokio::test]
async fn an_unknown_session_id_gets_404_with_a_json_rpc_body_and_the_request_id() {
    let pods = Pods::legacy(1).await;
    let gw = Gateway::start(&pods.yaml("stateful", "")).await;
    let resp = legacy_call("0000-not-a-session", 77, "whoami")
        .send(gw.addr)
        .await;
    assert_eq!(resp.status(), 404);
    assert_eq!(resp.json()["id"], 77);
    assert_eq!(resp.json()["error"]["data"]["reason"], "unknown");
}

#[tokio::test]
async fn delete_and_expiry_remove_real_sessions() {
    let pods = Pods::legacy(1).await;
    let gw = Gateway::start(&pods.yaml("stateful", "sessions: { idle-timeout-s: 2 }\n")).await;
    let client = ReplClient::connect("mcp1", &gw.url("/mcp"), None).await;
    assert_eq!(gw.metric("mcpgw_sessions_active").await, 1.0);
    assert!(client.close().await, "the SDK's DELETE is answered 200");
    assert_eq!(gw.metric("mcpgw_sessions_active").await, 0.0);
    assert_eq!(
        gw.metric("mcpgw_sessions_ended_total{reason=\"deleted\"}")
            .await,
        1.0
    );
    let sid = open_session(gw.addr).await;
    assert_eventually!(
        Duration::from_secs(10),
        gw.metric("mcpgw_sessions_ended_total{reason=\"expired\"}")
            .await
            == 1.0,
        "the idle session expired"
    );
    let resp = legacy_call(&sid, 5, "whoami").send(gw.addr).await;
    assert_eq!(resp.json()["error"]["data"]["reason"], "expired");
}

#[tokio::test]
async fn server_everything_sessions_survive_a_sigkill_too() {
    let mut a = PythonPeer::everything("everything-a", 0).await;
    let mut b = PythonPeer::everything("everything-b", 0).await;
    let gw = Gateway::start(&format!(
        "pools:\n  ev: {{ backends: [{}, {}], failure-cooldown-ms: 60000 }}\nroutes:\n  - path: /mcp\n    mode: stateful\n    pool: ev\n",
        a.addr(),
        b.addr()
    ))
    .await;
    let mut client = ReplClient::connect("mcp1", &gw.url("/mcp"), None).await;
    let env = client.call_text("get-env", json!({})).await;
    let pinned_a = env.contains("everything-a");
    assert!(pinned_a || env.contains("everything-b"), "{env}");
    if pinned_a {
        a.kill().await;
    } else {
        b.kill().await;
    }
    assert_eq!(
        client
            .call_text("echo", json!({"message": "still here"}))
            .await,
        "Echo: still here"
    );
    let env = client.call_text("get-env", json!({})).await;
    assert!(
        env.contains(if pinned_a {
            "everything-b"
        } else {
            "everything-a"
        }),
        "{env}"
    );
    assert!(client.close().await);
    assert_eq!(gw.metric("mcpgw_session_reinits_total").await, 1.0);
}
