//! A frame from a real running state and session manager (no backend): what it holds, and
//! that a later frame carries only what is new.

use super::*;
use crate::metrics::scratch;
use crate::session::store::Ttl;
use crate::session::timeline::Happened;
use crate::session::MemoryStore;

fn sources() -> Sources {
    let yaml = "pools:\n  legacy: { backends: [127.0.0.1:9001, 127.0.0.1:9002], upstream-auth: { headers: { x-api-key: { env: MCPGW_CONSOLE_TEST_UNSET } } } }\n  tools: { era: legacy, backends: [127.0.0.1:9003] }\n\
        routes:\n  - { path: /mcp, mode: stateful, pool: legacy }\n  \
        - path: /hub\n    mode: virtual\n    members:\n      - { name: evil, pool: tools, mode: stateful }\n";
    let config = crate::config::parse(yaml).unwrap();
    let state = State::new(
        config,
        scratch(crate::admission::metrics::AdmissionMetrics::register),
        crate::cache::Common {
            metrics: scratch(crate::cache::metrics::CacheMetrics::register),
            shared: None,
            generations: Default::default(),
        },
    );
    let engine = Arc::new(crate::upstream::attempt::Engine::new(scratch(
        crate::upstream::metrics::UpstreamMetrics::register,
    )));
    let ttl = Ttl {
        idle: Duration::from_secs(60),
        tombstone: Duration::from_secs(60),
    };
    let sessions = SessionManager::new(
        Arc::new(MemoryStore::new(ttl)),
        engine,
        scratch(crate::session::SessionMetrics::register),
    );
    Sources {
        state: Arc::new(ArcSwap::from_pointee(state)),
        sessions: Arc::new(sessions),
        tasks: crate::tasks::Tasks::new(
            None,
            scratch(crate::tasks::metrics::TaskMetrics::register),
        ),
        samples: Arc::new(Mutex::new(Samples::new(1))),
    }
}

fn moved(session: &str) -> Happened<'_> {
    Happened {
        kind: "reinitialized",
        pool: "legacy",
        session,
        from: "127.0.0.1:9001".parse().ok(),
        to: "127.0.0.1:9002".parse().ok(),
        reason: "backend-down",
        trigger: "background",
    }
}

#[tokio::test]
async fn a_frame_holds_routes_pools_credentials_and_members_and_the_next_only_what_is_new() {
    let src = sources();
    src.sessions.timeline().record(moved("first-session-id"));
    let (first, cursor) = frame(&src, Cursor::default()).await;
    let modes: Vec<&str> = (first["routes"].as_array().unwrap().iter())
        .map(|r| r["mode"].as_str().unwrap())
        .collect();
    assert_eq!(modes, ["stateful", "virtual"]);
    let legacy = &first["pools"][0];
    assert_eq!(legacy["backends"].as_array().unwrap().len(), 2);
    assert_eq!(legacy["backends"][0]["state"], "up");
    assert_eq!(legacy["credentials"]["kinds"][0], "headers");
    assert_eq!(legacy["credentials"]["headers"][0]["from"], "env");
    assert_eq!(first["virtual"][0]["members"][0]["name"], "evil");
    assert_eq!(first["store"]["kind"], "memory");
    let events = first["events"].as_array().unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["to"], "127.0.0.1:9002");
    assert!(
        !first.to_string().contains("first-session-id"),
        "ids hashed"
    );

    src.sessions.timeline().record(moved("second-session-id"));
    let (next, _) = frame(&src, cursor).await;
    let events = next["events"].as_array().unwrap();
    assert_eq!(events.len(), 1, "only the new event: {next}");
    assert_eq!(events[0]["kind"], "reinitialized");
}

/// `n` backends of pool `legacy`, as the sampler sees them.
fn fleet(n: usize) -> Vec<crate::console::samples::BackendSample> {
    (0..n)
        .map(|i| crate::console::samples::BackendSample {
            pool: "legacy".into(),
            backend: format!("10.0.{}.{}:8080", i / 250, i % 250).into(),
            state: "up",
            sessions: 3,
            inflight: 1,
            failed_ms: None,
        })
        .collect()
}

#[tokio::test]
async fn the_first_frame_carries_a_bounded_history_whatever_the_fleet() {
    let src = sources();
    let backends = fleet(300);
    {
        let mut s = crate::sync::lock(&src.samples);
        for t in 0..900 {
            s.seconds.push(Sample {
                at_ms: 1_000 + t,
                routes: Vec::new(),
                backends: backends.clone(),
                moves: 0,
            });
        }
    }
    let (first, _) = frame(&src, Cursor::default()).await;
    let samples = first["samples"].as_array().unwrap();
    let rows: usize = (samples.iter())
        .map(|s| 1 + s["b"].as_array().unwrap().len() + s["r"].as_array().unwrap().len())
        .sum();
    assert!(rows <= SAMPLE_ROWS, "{rows} rows");
    assert!(samples.len() >= 100, "still minutes of history");
    assert!(samples
        .iter()
        .all(|s| s["b"].as_array().unwrap().len() == SERIES_SHOWN));
    assert_eq!(samples.last().unwrap()["t"], 1_899, "the newest kept");
    // what the frame would hold unbounded: every sample with every backend (as before)
    let whole: usize = (crate::sync::lock(&src.samples).seconds.iter())
        .map(|s| {
            let b: Vec<Value> = (s.backends.iter())
                .map(|b| json!([&*b.pool, &*b.backend, b.state, b.sessions, b.inflight]))
                .collect();
            json!({"t": s.at_ms, "r": [], "b": b, "m": s.moves})
                .to_string()
                .len()
        })
        .sum();
    let size = first.to_string().len();
    eprintln!("first frame with 900 samples of 300 backends: {size} bytes (unbounded: {whole})");
    assert!(size < 320 * 1024, "{size} bytes");
    // a later frame carries the one new sample, as bounded
    let (_, cursor) = frame(&src, Cursor::default()).await;
    crate::sync::lock(&src.samples).seconds.push(Sample {
        at_ms: 1_900,
        routes: Vec::new(),
        backends,
        moves: 0,
    });
    let (next, _) = frame(&src, cursor).await;
    assert_eq!(next["samples"].as_array().unwrap().len(), 1);
}
