//! The attempt engine's own tests: a refused backend marked once, a message that cannot be
//! built is no refused connection, and the retry loop's rules.

use super::*;
use crate::auth::Caller;
use crate::config::parse;
use crate::upstream::own::{BackendSession, PostError};
use crate::upstream::request::{self, Target};
use std::time::Duration;

/// A pool of one backend nobody listens on, with a 10 s failure cooldown.
fn dead_pool() -> Arc<Pool> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let yaml = format!(
        "pools: {{ p: {{ backends: [127.0.0.1:{port}], retries: 0, failure-cooldown-ms: 10000 }} }}\nroutes: [ {{ path: /mcp, pool: p }} ]\n"
    );
    Arc::new(Pool::new(&parse(&yaml).unwrap().pools[0]))
}

fn engine() -> Engine {
    Engine::new(crate::metrics::scratch(UpstreamMetrics::register))
}

#[tokio::test]
async fn a_refused_backend_is_marked_once_when_the_connection_failed() {
    let (engine, pool) = (engine(), dead_pool());
    let marked_at = std::sync::Mutex::new(0);
    let (e, p, m) = (&engine, &pool, &marked_at);
    let _ = engine
        .each_backend(p, Pick::Request, &mut Vec::new(), |b| {
            Box::pin(async move {
                let req = request::own(
                    http::Method::GET,
                    Target {
                        path: "/mcp",
                        host: &b.host_header,
                    },
                    None,
                    None,
                    0,
                    &Caller::default(),
                )
                .unwrap();
                let sent = e.send(p, &b, &req, Bytes::new(), true).await;
                assert!(matches!(sent, Err(CallError::Connect(_))));
                *m.lock().unwrap() = b.failed_until_ms.load(std::sync::atomic::Ordering::Relaxed);
                // The attempt goes on a while after the refusal (a timeout, a log line).
                tokio::time::sleep(Duration::from_millis(100)).await;
                Step::<()>::Unreachable
            })
        })
        .await;
    let until = pool.backends()[0]
        .failed_until_ms
        .load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(
        until,
        *marked_at.lock().unwrap(),
        "the cooldown counts from the refusal, marked once"
    );
}

#[tokio::test]
async fn a_message_that_cannot_be_built_is_not_a_refused_connection() {
    let (engine, pool) = (engine(), dead_pool());
    let backend = pool.backends()[0].clone();
    let session = BackendSession {
        id: "bad\nid".into(),
        path: "/mcp".into(),
        protocol_version: "2025-06-18".into(),
    };
    let sent = engine
        .post_in_session(&pool, &backend, &session, "{}".into(), &Caller::default())
        .await;
    assert!(
        matches!(sent, Err(PostError::Unbuilt(_))),
        "a header the gateway may not send is no connection failure"
    );
    assert!(!backend.is_failed());
}

/// A pool of `n` backends nobody listens on, with `retries: 2`.
fn dead_pool_of(n: usize) -> Arc<Pool> {
    let backends: Vec<String> = (0..n)
        .map(|_| {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().to_string()
        })
        .collect();
    let yaml = format!(
        "pools: {{ p: {{ backends: [{}], retries: 2, failure-cooldown-ms: 60000 }} }}\nroutes: [ {{ path: /mcp, pool: p }} ]\n",
        backends.join(", ")
    );
    Arc::new(Pool::new(&parse(&yaml).unwrap().pools[0]))
}

#[tokio::test]
async fn a_pick_among_some_backends_never_tries_the_others() {
    let (engine, pool) = (engine(), dead_pool_of(3));
    let second = pool.backends()[1].addr;
    let only = move |b: &Backend| b.addr == second;
    let mut tried = Vec::new();
    let refused = engine
        .each_backend(&pool, Pick::Among(&only), &mut tried, |_| {
            Box::pin(async { Step::<()>::Refused })
        })
        .await;
    assert_eq!(tried, vec![second]);
    let err = refused.expect_err("no backend left");
    assert_eq!(err.kind, crate::error::ErrorKind::BackendUnavailable);
}

#[tokio::test]
async fn a_lost_request_is_repeated_only_when_safe_and_its_backend_marked() {
    for (repeatable, attempts) in [(true, 3), (false, 1)] {
        let (engine, pool) = (engine(), dead_pool_of(3));
        let mut tried = Vec::new();
        let lost = engine
            .each_backend(&pool, Pick::Request, &mut tried, |_| {
                Box::pin(async move { Step::<()>::lost(repeatable) })
            })
            .await;
        assert_eq!(tried.len(), attempts, "repeatable: {repeatable}");
        let want = match repeatable {
            true => crate::error::ErrorKind::BackendUnavailable,
            false => crate::error::ErrorKind::BackendLost,
        };
        assert_eq!(lost.err().map(|e| e.kind), Some(want));
        for addr in tried {
            assert!(pool.find(addr).unwrap().is_failed(), "marked failed");
        }
    }
}

#[tokio::test]
async fn a_refused_connection_announces_a_serving_backend_dead_once() {
    let yaml = "pools: { p: { backends: [127.0.0.1:9], failure-cooldown-ms: 10000 } }\nroutes: [ { path: /mcp, pool: p } ]\n";
    let pool = crate::upstream::Pool::new(&crate::config::parse(yaml).unwrap().pools[0]);
    let registry = pingora_prometheus::prometheus::Registry::new();
    let engine =
        crate::upstream::attempt::Engine::new(crate::upstream::metrics::UpstreamMetrics::register(
            &crate::metrics::Registrar::new(&registry),
        ));
    let mut deaths = engine.deaths().subscribe();
    let backend = pool.backends()[0].clone();
    engine.connect_failed(&pool, &backend);
    engine.connect_failed(&pool, &backend); // still marked: no second death
    let death = deaths.try_recv().expect("announced");
    assert_eq!(
        (death.backend, death.cause),
        (backend.addr, "connect-refused")
    );
    assert!(deaths.try_recv().is_err(), "once per death");
}
