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
