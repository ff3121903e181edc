//! Background moves against tiny hand-written legacy backends on loopback: the sessions of a
//! dead backend move to the survivor, paced, counted as `background`, and a request that
//! arrives during its session's move waits for that move instead of starting another.

use super::{Evacuated, EvacuationService, Pacer};
use crate::auth::Caller;
use crate::config::{parse, SessionConfig};
use crate::session::reinit::Reason;
use crate::session::store::{Quota, SessionStore, Ttl};
use crate::session::SessionMetrics as Metrics;
use crate::session::{now_ms, Binding, MemoryStore, SessionManager, SessionRecord, Settings};
use crate::session::{Lookup, SweepSource};
use crate::upstream::attempt::Engine;
use crate::upstream::deaths::Death;
use crate::upstream::Pool;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A legacy backend that accepts every `initialize` (after `delay`) and every other POST.
struct Survivor {
    addr: SocketAddr,
    initializes: Arc<AtomicUsize>,
}

impl Survivor {
    async fn start(delay: Duration) -> Survivor {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let initializes = Arc::new(AtomicUsize::new(0));
        let counted = initializes.clone();
        tokio::spawn(async move {
            while let Ok((mut conn, _)) = listener.accept().await {
                let counted = counted.clone();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 64 * 1024];
                    let mut seen = Vec::new();
                    loop {
                        let Ok(n) = conn.read(&mut buf).await else {
                            return;
                        };
                        if n == 0 {
                            return;
                        }
                        seen.extend_from_slice(&buf[..n]);
                        // one request per read is enough for these small bodies
                        let text = String::from_utf8_lossy(&seen).to_string();
                        let Some(head_end) = text.find("\r\n\r\n") else {
                            continue;
                        };
                        let len = text[..head_end]
                            .lines()
                            .find_map(|l| {
                                let (k, v) = l.split_once(':')?;
                                k.eq_ignore_ascii_case("content-length")
                                    .then(|| v.trim().parse::<usize>().ok())?
                            })
                            .unwrap_or(0);
                        if seen.len() < head_end + 4 + len {
                            continue;
                        }
                        let body = text[head_end + 4..head_end + 4 + len].to_string();
                        seen.clear();
                        let answer = if body.contains("\"initialize\"") {
                            let n = counted.fetch_add(1, Ordering::SeqCst);
                            tokio::time::sleep(delay).await;
                            let json = r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}"#;
                            format!("HTTP/1.1 200 OK\r\nmcp-session-id: s{n}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{json}", json.len())
                        } else {
                            "HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n".to_owned()
                        };
                        if conn.write_all(answer.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        Survivor { addr, initializes }
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

struct Setup {
    sessions: Arc<SessionManager>,
    store: Arc<MemoryStore>,
    pool: Arc<Pool>,
    dead: SocketAddr,
    metrics: Metrics,
}

/// A pool of a dead backend (nobody listens) and `survivor`, `n` sessions on the dead one.
async fn setup(survivor: &Survivor, n: usize) -> Setup {
    let dead: SocketAddr = ([127, 0, 0, 1], free_port()).into();
    let yaml = format!(
        "pools: {{ p: {{ backends: [{dead}, {}], failure-cooldown-ms: 60000 }} }}\nroutes: [ {{ path: /mcp, pool: p, mode: stateful }} ]\n",
        survivor.addr
    );
    let pool = Arc::new(Pool::new(&parse(&yaml).unwrap().pools[0]));
    let metrics = crate::metrics::scratch(Metrics::register);
    let engine = Arc::new(Engine::new(crate::metrics::scratch(
        crate::upstream::metrics::UpstreamMetrics::register,
    )));
    let store = Arc::new(MemoryStore::new(Ttl {
        idle: Duration::from_secs(60),
        tombstone: Duration::from_secs(60),
    }));
    let sessions = Arc::new(SessionManager::new(store.clone(), engine, metrics.clone()));
    let quota = Quota {
        max_sessions: 1000,
        max_per_client: None,
    };
    for i in 0..n {
        store.create(record(dead, i), quota).await.unwrap();
    }
    Setup {
        sessions,
        store,
        pool,
        dead,
        metrics,
    }
}

fn record(backend: SocketAddr, i: usize) -> SessionRecord {
    SessionRecord {
        id: crate::session::new_session_id(),
        pool: "p".into(),
        client: "".into(),
        principal: None,
        path: "/mcp".into(),
        init_params: r#"{"protocolVersion":"2025-11-25","capabilities":{}}"#.into(),
        protocol_version: "2025-11-25".into(),
        binding: Binding {
            backend,
            backend_session: format!("old-{i}").into(),
            generation: 1,
            stale: false,
        },
        settings: Settings::default(),
        last_use_ms: now_ms(),
    }
}

struct Source {
    pool: Arc<Pool>,
    config: SessionConfig,
}

impl SweepSource for Source {
    fn session_config(&self) -> SessionConfig {
        self.config.clone()
    }
    fn pools(&self) -> Vec<Arc<Pool>> {
        vec![self.pool.clone()]
    }
    fn prune_limits(&self) {}
}

fn moves(metrics: &Metrics, trigger: &str, outcome: Option<&str>) -> u64 {
    match outcome {
        None => metrics
            .session_moves_started
            .with_label_values(&["p", trigger])
            .get(),
        Some(o) => metrics
            .session_moves_finished
            .with_label_values(&["p", trigger, o])
            .get(),
    }
}

#[tokio::test]
async fn the_pacer_spaces_the_starts_of_moves_by_the_rate() {
    let pacer = Pacer::default();
    let started = Instant::now();
    for _ in 0..6 {
        pacer.wait(50).await; // one per 20 ms: the first at once
    }
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(95), "{took:?}");
    assert!(took < Duration::from_millis(400), "{took:?}");
}

#[tokio::test]
async fn every_session_of_a_dead_backend_moves_in_the_background() {
    let survivor = Survivor::start(Duration::ZERO).await;
    let s = setup(&survivor, 5).await;
    let dead = s.pool.find(s.dead).unwrap();
    s.pool.mark_failed(&dead);
    let service = service(&s, 100);
    service.spawn(Death {
        pool: "p".into(),
        backend: s.dead,
        cause: "probe",
    });
    // a second announcement while it runs starts nothing more
    service.spawn(Death {
        pool: "p".into(),
        backend: s.dead,
        cause: "probe",
    });
    let deadline = Instant::now() + Duration::from_secs(5);
    while !s.store.sessions_on("p", s.dead).await.unwrap().is_empty() {
        assert!(
            Instant::now() < deadline,
            "sessions still on the dead backend"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        s.store.sessions_on("p", survivor.addr).await.unwrap().len(),
        5
    );
    assert_eq!(survivor.initializes.load(Ordering::SeqCst), 5);
    assert_eq!(moves(&s.metrics, "background", None), 5);
    assert_eq!(moves(&s.metrics, "background", Some("moved")), 5);
    assert_eq!(moves(&s.metrics, "on-demand", None), 0);
    let reinits = s
        .metrics
        .session_reinits
        .with_label_values(&["p", "backend-down"]);
    assert_eq!(reinits.get(), 5);
}

#[tokio::test]
async fn a_request_during_its_sessions_background_move_waits_for_that_move() {
    let survivor = Survivor::start(Duration::from_millis(300)).await;
    let s = setup(&survivor, 1).await;
    let dead = s.pool.find(s.dead).unwrap();
    s.pool.mark_failed(&dead);
    let id = s.store.sessions_on("p", s.dead).await.unwrap()[0].clone();
    let seen = match s.store.get(&id).await.unwrap() {
        Lookup::Live(r) => r,
        other => panic!("{other:?}"),
    };
    let background = {
        let (sessions, pool, id) = (s.sessions.clone(), s.pool.clone(), id.clone());
        tokio::spawn(async move {
            sessions
                .evacuate_one(&pool, &id, s.dead, Reason::BackendDown)
                .await
        })
    };
    // the move is under way: its initialize reached the survivor, which holds it 300 ms
    until("the move's initialize reached the survivor", || {
        survivor.initializes.load(Ordering::SeqCst) == 1
    })
    .await;
    let asked = Instant::now();
    let adopted = s
        .sessions
        .recover(&s.pool, &seen, Reason::BackendDown, &Caller::default())
        .await
        .unwrap();
    assert!(
        asked.elapsed() < Duration::from_millis(600),
        "waited for one move only"
    );
    assert_eq!(background.await.unwrap(), Evacuated::Moved);
    assert_eq!(adopted.binding.backend, survivor.addr);
    assert_eq!(adopted.binding.generation, 2);
    assert_eq!(survivor.initializes.load(Ordering::SeqCst), 1, "one move");
    assert_eq!(moves(&s.metrics, "on-demand", None), 0);
    // moved already: a later announcement finds nothing to do
    let again = s
        .sessions
        .evacuate_one(&s.pool, &id, s.dead, Reason::BackendDown)
        .await;
    assert_eq!(again, Evacuated::Skipped);
}

fn service(s: &Setup, per_second: u32) -> EvacuationService {
    let config = SessionConfig {
        background_moves_per_second: per_second,
        ..SessionConfig::default()
    };
    let pool = s.pool.clone();
    EvacuationService::new(s.sessions.clone(), Arc::new(Source { pool, config }))
}

#[tokio::test]
async fn nothing_moves_at_a_rate_of_0_or_off_a_backend_that_reads_up() {
    let survivor = Survivor::start(Duration::ZERO).await;
    let off = setup(&survivor, 3).await;
    off.pool.mark_failed(&off.pool.find(off.dead).unwrap());
    let up = setup(&survivor, 3).await; // announced, but nothing marks it down
    let (off_service, up_service) = (service(&off, 0), service(&up, 100));
    for (s, service) in [(&off, &off_service), (&up, &up_service)] {
        service.spawn(Death {
            pool: "p".into(),
            backend: s.dead,
            cause: "probe",
        });
    }
    // at a rate of 0 the announcement starts nothing; off a backend that reads up, the
    // evacuation starts (this test's runtime has one thread: it has not run yet), finds the
    // backend up, and ends
    assert!(crate::sync::lock(&off_service.running).is_empty());
    assert_eq!(crate::sync::lock(&up_service.running).len(), 1);
    until("the evacuation off the live backend ended", || {
        crate::sync::lock(&up_service.running).is_empty()
    })
    .await;
    assert_eq!(survivor.initializes.load(Ordering::SeqCst), 0);
    for s in [&off, &up] {
        assert_eq!(s.store.sessions_on("p", s.dead).await.unwrap().len(), 3);
    }
}

/// Polls `settled` every 10 ms until it holds; panics naming `what` after 5 s.
async fn until(what: &str, mut settled: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !settled() {
        assert!(Instant::now() < deadline, "not within 5 s: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
