//! Several gateway replicas sharing their sessions through Redis (`sessions.store: redis`),
//! against Rust legacy mocks and Debian's redis-server: any replica serves any session, a
//! restarted gateway loses nothing, a backend death moves each session once across replicas,
//! and a Redis outage is survived by the sessions a replica holds, answered explicitly for the
//! rest (never with a new session) and recovered from without a restart.

use mcp_gateway_tests::harness::workspace_bin;
use mcp_gateway_tests::redis::RedisServer;
use mcp_gateway_tests::rr_proxy::RrProxy;
use mcp_gateway_tests::{assert_eventually, open_session, Gateway, MockServer, Request};
use std::time::Duration;

const V: &str = "2025-11-25";

fn config(redis: &RedisServer, backends: &[&MockServer]) -> String {
    config_with(redis, backends, "")
}

/// `sessions_extra`: more `sessions:` keys, each line indented by two spaces.
fn config_with(redis: &RedisServer, backends: &[&MockServer], sessions_extra: &str) -> String {
    let list: Vec<String> = backends.iter().map(|m| m.addr.to_string()).collect();
    format!(
        "sessions:\n{sessions_extra}  store: redis\n  redis: {{ urls: [\"{}\"], key-prefix: \"test:\" }}\npools:\n  legacy: {{ backends: [{}], failure-cooldown-ms: 60000 }}\nroutes:\n  - {{ path: /mcp, mode: stateful, pool: legacy }}\n",
        redis.url(),
        list.join(", ")
    )
}

/// Redis, two legacy backends and two gateway replicas sharing the sessions.
struct Pair {
    redis: RedisServer,
    a: MockServer,
    b: MockServer,
    replicas: [Gateway; 2],
}

impl Pair {
    async fn start() -> Pair {
        let redis = RedisServer::start().await;
        let (a, b) = (
            MockServer::legacy("a", 0, V).await,
            MockServer::legacy("b", 0, V).await,
        );
        let yaml = config(&redis, &[&a, &b]);
        let replicas = [Gateway::start(&yaml).await, Gateway::start(&yaml).await];
        Pair {
            redis,
            a,
            b,
            replicas,
        }
    }
}

fn upstream_deletes(mock: &MockServer) -> usize {
    mock.requests()
        .iter()
        .filter(|r| r.head.method == "DELETE")
        .count()
}

fn whoami(sid: &str, id: u64) -> Request {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"whoami","arguments":{{}}}}}}"#
    );
    Request::post("/mcp", body)
        .header("Mcp-Session-Id", sid)
        .header("MCP-Protocol-Version", V)
}

fn initializes(mocks: &[&MockServer]) -> usize {
    mocks.iter().map(|m| m.sessions().initializes()).sum()
}

#[tokio::test]
async fn two_replicas_serve_one_session_alternately_without_reinitializing() {
    let Pair {
        redis: _redis,
        a,
        b,
        replicas,
    } = Pair::start().await;
    let sid = open_session(replicas[0].addr).await;
    let mut served_by = Vec::new();
    for i in 0..20 {
        let resp = whoami(&sid, i).send(replicas[i as usize % 2].addr).await;
        assert_eq!(
            resp.status(),
            200,
            "{}",
            String::from_utf8_lossy(&resp.body)
        );
        served_by.push(resp.tool_text());
    }
    served_by.dedup();
    assert_eq!(
        served_by.len(),
        1,
        "one backend served the session: {served_by:?}"
    );
    assert_eq!(initializes(&[&a, &b]), 1, "nothing was re-initialized");
    // both replicas count the session on its backend
    for gw in &replicas {
        assert_eq!(gw.metric("mcpgw_sessions_active").await, 1.0);
    }
    let resp = Request::session_delete(&sid).send(replicas[1].addr).await;
    assert_eq!(resp.status(), 200);
    let gone = whoami(&sid, 99).send(replicas[0].addr).await;
    assert_eq!(gone.status(), 404);
    assert_eq!(gone.json()["error"]["data"]["reason"], "deleted");
}

#[tokio::test]
async fn a_restarted_gateway_serves_the_sessions_it_had() {
    let redis = RedisServer::start().await;
    let a = MockServer::legacy("a", 0, V).await;
    let yaml = config(&redis, &[&a]);
    let first = Gateway::start(&yaml).await;
    let sids = [
        open_session(first.addr).await,
        open_session(first.addr).await,
    ];
    assert_eq!(whoami(&sids[0], 1).send(first.addr).await.tool_text(), "a");
    drop(first); // the process is killed
    let second = Gateway::start(&yaml).await;
    for (i, sid) in sids.iter().enumerate() {
        let resp = whoami(sid, 10 + i as u64).send(second.addr).await;
        assert_eq!(resp.status(), 200);
        assert_eq!(resp.tool_text(), "a");
    }
    assert_eq!(
        a.sessions().initializes(),
        2,
        "no session was re-initialized"
    );
}

#[tokio::test]
async fn a_backend_death_moves_each_session_once_across_replicas_and_leaks_no_backend_session() {
    let Pair {
        redis: _redis,
        a,
        b,
        replicas,
    } = Pair::start().await;
    let mut sids = Vec::new();
    for _ in 0..4 {
        sids.push(open_session(replicas[0].addr).await);
    }
    let on_a = a.sessions().live();
    assert!(
        on_a > 0,
        "least-sessions spreads sessions over both backends"
    );
    a.kill();
    // every session, at once on both replicas: each moves exactly once
    let mut calls = Vec::new();
    for (i, sid) in sids.iter().enumerate() {
        for gw in &replicas {
            let (req, addr) = (whoami(sid, i as u64), gw.addr);
            calls.push(tokio::spawn(async move { req.send(addr).await }));
        }
    }
    for call in calls {
        let resp = call.await.unwrap();
        assert_eq!(resp.status(), 200);
        assert_eq!(resp.tool_text(), "b");
    }
    // one re-initialization per moved session across both replicas (the first claims the
    // move in Redis, the other adopts its binding), and b holds exactly one backend session
    // per client session
    assert_eq!(
        b.sessions().initializes(),
        sids.len(),
        "{on_a} sessions moved to b, each initialized there once"
    );
    assert_eventually!(
        Duration::from_secs(5),
        b.sessions().live() == sids.len(),
        "b holds {} backend sessions for {} sessions",
        b.sessions().live(),
        sids.len()
    );
}

#[tokio::test]
async fn a_redis_outage_serves_the_sessions_a_replica_holds_refuses_the_rest_and_is_recovered_from()
{
    let mut redis = RedisServer::start().await;
    let a = MockServer::legacy("a", 0, V).await;
    let yaml = config(&redis, &[&a]);
    let (gw, other) = (Gateway::start(&yaml).await, Gateway::start(&yaml).await);
    let sid = open_session(gw.addr).await;
    // a session opened on the other replica: this one holds no copy of it
    let foreign = open_session(other.addr).await;
    assert_eq!(gw.admin_get("/readyz").await.0, 200);
    redis.kill().await;
    // the session this replica serves goes on from the copy it holds, past the 2 s in which a
    // copy is used without asking Redis (docs/failover.md, "When the session store fails"):
    // until the replica has asked the dead store and served the copy instead
    let mut i = 0;
    assert_eventually!(
        Duration::from_secs(10),
        {
            let resp = whoami(&sid, i).send(gw.addr).await;
            i += 1;
            assert_eq!(
                resp.status(),
                200,
                "{}",
                String::from_utf8_lossy(&resp.body)
            );
            assert_eq!(resp.tool_text(), "a");
            gw.metric("mcpgw_store_fallbacks_total{op=\"get\"}").await > 0.0
        },
        "the replica asked the dead store and served the session from its copy"
    );
    // a session it cannot read gets 503 + Retry-After, never a new session
    let resp = whoami(&foreign, 7).send(gw.addr).await;
    assert_eq!(resp.status(), 503);
    assert!(resp.head.header("retry-after").is_some());
    assert_eq!(resp.json()["id"], 7);
    assert_eq!(resp.json()["error"]["code"], -32006);
    assert_eq!(resp.json()["error"]["data"]["kind"], "store-unavailable");
    // a new session cannot be kept either
    let init = r#"{"jsonrpc":"2.0","id":8,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let resp = Request::post("/mcp", init).send(gw.addr).await;
    assert_eq!(resp.status(), 503);
    assert_eq!(resp.json()["error"]["code"], -32006);
    // still ready (degraded): every replica out of the Service at once would fail the
    // sessions it serves
    let (status, body) = gw.admin_get("/readyz").await;
    assert_eq!(status, 200);
    assert!(
        body.starts_with("ready (degraded): the session store"),
        "{body}"
    );
    assert_eq!(a.sessions().initializes(), 2);
    assert!(gw.metric("mcpgw_store_errors_total{op=\"get\"}").await >= 1.0);
    assert_eq!(gw.metric("mcpgw_store_unavailable_total").await, 1.0);
    assert!(gw.metric("mcpgw_store_fallbacks_total{op=\"get\"}").await >= 1.0);
    // back, with what it had appended: both sessions continue where they were
    redis.restart().await;
    assert_eventually!(
        Duration::from_secs(10),
        gw.admin_get("/readyz").await.1 == "ready\n",
        "ready again"
    );
    for (id, s) in [(9, &sid), (10, &foreign)] {
        let resp = whoami(s, id).send(gw.addr).await;
        assert_eq!(resp.status(), 200);
        assert_eq!(resp.tool_text(), "a");
    }
    assert_eq!(a.sessions().initializes(), 2, "nothing was re-initialized");
}

#[tokio::test]
async fn an_expired_session_is_deleted_upstream_by_exactly_one_replica() {
    let redis = RedisServer::start().await;
    let a = MockServer::legacy("a", 0, V).await;
    let yaml = config_with(&redis, &[&a], "  idle-timeout-s: 1\n");
    let replicas = [Gateway::start(&yaml).await, Gateway::start(&yaml).await];
    let mut sids = Vec::new();
    for i in 0..3 {
        sids.push(open_session(replicas[i % 2].addr).await);
    }
    let ended = r#"mcpgw_sessions_ended_total{pool="legacy",reason="expired"}"#;
    assert_eventually!(
        Duration::from_secs(10),
        replicas[0].metric(ended).await + replicas[1].metric(ended).await == 3.0,
        "both replicas sweep; three sessions expire"
    );
    assert_eq!(upstream_deletes(&a), 3);
    // both replicas go on sweeping (every 250 ms): each takes the expired sessions from the
    // store twice more, so a sweep began on each after the ones that ended the three, and no
    // session is claimed twice
    let sweeps = r#"mcpgw_store_duration_seconds_count{op="take_expired"}"#;
    for gw in &replicas {
        let swept = gw.metric(sweeps).await;
        assert_eventually!(
            Duration::from_secs(10),
            gw.metric(sweeps).await >= swept + 2.0,
            "replica {} swept twice more",
            gw.addr
        );
    }
    assert_eq!(upstream_deletes(&a), 3, "one DELETE per expired session");
    for (i, sid) in sids.iter().enumerate() {
        let resp = whoami(sid, i as u64).send(replicas[i % 2].addr).await;
        assert_eq!(resp.status(), 404);
        assert_eq!(resp.json()["error"]["data"]["reason"], "expired");
    }
}

#[tokio::test]
async fn a_replica_killed_under_load_fails_only_the_calls_it_had_in_flight() {
    let redis = RedisServer::start().await;
    let (a, b) = (
        MockServer::legacy("a", 0, V).await,
        MockServer::legacy("b", 0, V).await,
    );
    let yaml = config(&redis, &[&a, &b]);
    let mut replicas = vec![Gateway::start(&yaml).await, Gateway::start(&yaml).await];
    // an L4-like front: per request round robin, a refused connection tried on the other
    let front = RrProxy::start(&[replicas[0].addr, replicas[1].addr]).await;
    front.retry_refused();
    let dir = mcp_gateway_tests::harness::unique_temp_path("mcp-load-replicas");
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("r.json");
    let load = tokio::process::Command::new(workspace_bin("mcp-load"))
        .args([
            "run",
            "--target",
            &front.addr.to_string(),
            "--dialect",
            "legacy",
        ])
        .args(["--rate", "100", "--duration", "8", "--sessions", "20"])
        .args(["--connections", "new", "--json"])
        .arg(&json)
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("mcp-load");
    // the kill comes while the load is on: once the replica to be killed has served 150 of its
    // requests (about 3 s into it: the load runs on its own clock, 100 a second for 8 s)
    let started = front.elapsed();
    assert_eventually!(
        Duration::from_secs(8),
        front.served(1) >= 150,
        "the second replica serves its share of the load"
    );
    let killed_at = front.elapsed();
    drop(replicas.pop()); // SIGKILL the second replica
    let killed_by = front.elapsed();
    let out = load.wait_with_output().await.expect("mcp-load ran");
    assert!(out.status.success());
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    // What the killed replica can have had in flight: the requests the front handed it in the
    // last 100 ms before the kill (a mock answers in about a millisecond) or during it.
    let in_flight = front
        .log()
        .iter()
        .filter(|s| s.slot == Some(1))
        .filter(|s| s.at + Duration::from_millis(100) >= killed_at && s.at <= killed_by)
        .count() as u64;
    let failed = r["failed"].as_u64().unwrap();
    println!(
        "replica killed at {:.2} s: {failed} failed, {in_flight} handed to it in the 100 ms before, {} ok",
        (killed_at - started).as_secs_f64(),
        r["ok"]
    );
    assert!(
        failed <= in_flight,
        "{failed} failed, more than the {in_flight} the killed replica can have had in flight: {r}"
    );
    let kill_second = (killed_at - started).as_secs();
    let after: u64 = r["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["t"].as_u64().unwrap() > kill_second + 1)
        .map(|s| s["failed"].as_u64().unwrap())
        .sum();
    assert_eq!(after, 0, "no failure after the kill: {r}");
    assert!(r["ok"].as_u64().unwrap() >= 700, "{r}");
}
