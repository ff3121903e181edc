//! Sessions under a failover of the shared store (docs/failover.md, "When the session store
//! fails"): a Redis Cluster master, or a Sentinel-watched primary, SIGKILLed while 40 legacy
//! sessions make 5 calls a second each over two backends. Every call is answered (the gateway
//! serves each session from its copy and queues its writes while the store cannot be read), no
//! session is lost or re-initialized, and the outage is one WARN and one count, not one per
//! request. What needs the store (a new session) still gets 503 -32006 while it is down.

use mcp_gateway_tests::client::Connection;
use mcp_gateway_tests::machine;
use mcp_gateway_tests::redis_ha::{RedisCluster, RedisSentinel, MASTER_NAME};
use mcp_gateway_tests::{assert_eventually, open_session, Gateway, MockServer, Request};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const V: &str = "2025-11-25";
const SESSIONS: usize = 40;
const EVERY: Duration = Duration::from_millis(200);

fn config(redis: &str, backends: &[&MockServer]) -> String {
    let list: Vec<String> = backends.iter().map(|m| m.addr.to_string()).collect();
    format!(
        "sessions:\n  idle-timeout-s: 20\n  store: redis\n  redis: {redis}\npools:\n  legacy: {{ backends: [{}] }}\nroutes:\n  - {{ path: /mcp, mode: stateful, pool: legacy }}\n",
        list.join(", ")
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

/// What the load saw.
#[derive(Default)]
struct Tally {
    calls: usize,
    failed: Vec<String>,
    /// Each session's backend, as its first answer named it.
    backend: Vec<Option<String>>,
    moved: usize,
}

/// One task per session, a call every [`EVERY`] on a keep-alive connection, until `stop`.
fn load(
    gw: std::net::SocketAddr,
    sids: &[String],
    stop: &Arc<AtomicBool>,
) -> (Arc<Mutex<Tally>>, Vec<tokio::task::JoinHandle<()>>) {
    let tally = Arc::new(Mutex::new(Tally {
        backend: vec![None; sids.len()],
        ..Tally::default()
    }));
    let tasks = sids
        .iter()
        .enumerate()
        .map(|(i, sid)| {
            let (sid, stop, tally) = (sid.clone(), stop.clone(), tally.clone());
            tokio::spawn(async move {
                let mut conn = Connection::open(gw).await;
                let mut n = 0u64;
                let mut next = tokio::time::Instant::now();
                while !stop.load(Ordering::Relaxed) {
                    next += EVERY;
                    n += 1;
                    let resp = conn.send(&whoami(&sid, n)).await;
                    let ok = resp.status() == 200 && resp.json().get("result").is_some();
                    {
                        let mut t = tally.lock().unwrap();
                        t.calls += 1;
                        if ok {
                            let text = resp.tool_text();
                            match &t.backend[i] {
                                None => t.backend[i] = Some(text),
                                Some(b) if *b != text => t.moved += 1,
                                Some(_) => {}
                            }
                        } else {
                            t.failed.push(format!(
                                "session {i} call {n}: {} {}",
                                resp.status(),
                                String::from_utf8_lossy(&resp.body)
                            ));
                        }
                    }
                    // the load's pace is the behaviour: a call every EVERY per session
                    tokio::time::sleep_until(next).await;
                }
            })
        })
        .collect();
    (tally, tasks)
}

/// Opens the sessions, runs the load, calls `fault` once every session has made ten calls (two
/// seconds of load), keeps the load on until `fault` returned and fifteen calls a session more
/// (three seconds); returns the tally.
async fn under_load<F, Fut>(gw: &Gateway, mocks: &[&MockServer], fault: F) -> Tally
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut sids = Vec::new();
    for _ in 0..SESSIONS {
        sids.push(open_session(gw.addr).await);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let (tally, tasks) = load(gw.addr, &sids, &stop);
    let calls = || tally.lock().unwrap().calls;
    assert_eventually!(
        Duration::from_secs(30),
        calls() >= SESSIONS * 10,
        "the load made ten calls a session"
    );
    let started = Instant::now();
    fault().await;
    eprintln!("store failover took {:?}", started.elapsed());
    let at_fault = calls();
    assert_eventually!(
        Duration::from_secs(30),
        calls() >= at_fault + SESSIONS * 15,
        "the load made fifteen calls a session after the failover"
    );
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        t.await.expect("load task");
    }
    // every session still answers, on the backend it had
    for (i, sid) in sids.iter().enumerate() {
        let resp = whoami(sid, 1_000_000).send(gw.addr).await;
        assert_eq!(resp.status(), 200, "session {i} after the failover");
        let backend = tally.lock().unwrap().backend[i].clone();
        assert_eq!(Some(resp.tool_text()), backend, "session {i} moved");
    }
    let initializes: usize = mocks.iter().map(|m| m.sessions().initializes()).sum();
    assert_eq!(initializes, SESSIONS, "a session was re-initialized");
    // and the store takes new sessions and ends them again (a cluster connection that kept
    // routing to the dead master started over: `session/store/redis/holder.rs`)
    let fresh = open_session(gw.addr).await;
    let ended = Request::session_delete(&fresh).send(gw.addr).await;
    assert_eq!(ended.status(), 200);
    let gone = whoami(&fresh, 1).send(gw.addr).await;
    assert_eq!(gone.status(), 404);
    assert_eq!(gone.json()["error"]["data"]["reason"], "deleted");
    Arc::try_unwrap(tally)
        .ok()
        .expect("tasks done")
        .into_inner()
        .unwrap()
}

async fn assert_served_through(gw: &Gateway, tally: &Tally) {
    eprintln!(
        "{} calls, {} failed; outages {}, served from copies {}, touches queued {}",
        tally.calls,
        tally.failed.len(),
        gw.metric("mcpgw_store_unavailable_total").await,
        gw.metric("mcpgw_store_fallbacks_total{op=\"get\"}").await,
        gw.metric("mcpgw_store_fallbacks_total{op=\"touch\"}").await,
    );
    assert!(
        tally.failed.is_empty(),
        "{} of {} calls failed during the failover: {:#?}",
        tally.failed.len(),
        tally.calls,
        &tally.failed[..tally.failed.len().min(5)]
    );
    assert_eq!(tally.moved, 0, "no session moved");
    assert!(
        tally.calls > SESSIONS * 5 * 6,
        "the load ran: {} calls",
        tally.calls
    );
    assert!(
        gw.metric("mcpgw_store_fallbacks_total{op=\"get\"}").await > 0.0,
        "sessions were served from the replica's copies"
    );
    let outages = gw.metric("mcpgw_store_unavailable_total").await;
    assert_eq!(outages, 1.0, "one outage, counted (and logged) once");
}

#[tokio::test]
async fn sessions_keep_working_while_a_redis_cluster_master_fails_over() {
    let _machine = machine::exclusive().await;
    let mut cluster = RedisCluster::start(3, 2000).await;
    let (a, b) = (
        MockServer::legacy("a", 0, V).await,
        MockServer::legacy("b", 0, V).await,
    );
    let urls: Vec<String> = cluster.urls().iter().map(|u| format!("\"{u}\"")).collect();
    let redis = format!(
        "{{ urls: [{}], cluster: true, key-prefix: \"fo:\" }}",
        urls.join(", ")
    );
    let gw = Gateway::start(&config(&redis, &[&a, &b])).await;
    let tally = under_load(&gw, &[&a, &b], || async {
        let killed = cluster.kill_master().await;
        eprintln!("killed master {killed}");
        cluster
            .until_failed_over(killed, Duration::from_secs(20))
            .await;
    })
    .await;
    assert_served_through(&gw, &tally).await;
}

#[tokio::test]
async fn sessions_keep_working_while_a_sentinel_primary_fails_over() {
    let _machine = machine::exclusive().await;
    let mut sentinel = RedisSentinel::start(1000).await;
    let (a, b) = (
        MockServer::legacy("a", 0, V).await,
        MockServer::legacy("b", 0, V).await,
    );
    let nodes: Vec<String> = sentinel.urls().iter().map(|u| format!("\"{u}\"")).collect();
    let redis = format!(
        "{{ sentinel: {{ master-name: {MASTER_NAME}, nodes: [{}] }}, key-prefix: \"fo:\" }}",
        nodes.join(", ")
    );
    let gw = Gateway::start(&config(&redis, &[&a, &b])).await;
    let tally = under_load(&gw, &[&a, &b], || async {
        let killed = sentinel.kill_primary().await;
        eprintln!("killed primary {killed}");
        // while no primary answers, a new session cannot be kept: 503 -32006, not a session
        // that would be lost
        let body = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
        let refused = Request::post("/mcp", body).send(gw.addr).await;
        assert_eq!(refused.status(), 503, "{}", String::from_utf8_lossy(&refused.body));
        assert_eq!(refused.json()["error"]["code"], -32006);
        sentinel
            .until_failed_over(killed, Duration::from_secs(20))
            .await;
    })
    .await;
    assert_served_through(&gw, &tally).await;
}
