//! Session manager behaviour that needs no backend: lookups and their answers.

use super::manager::{Requester, SessionManager};
use super::store::{Quota, SessionStore, Ttl};
use super::{now_ms, Binding, GoneReason, MemoryStore, SessionRecord, Settings};
use crate::upstream::attempt::Engine;
use std::sync::Arc;
use std::time::Duration;

fn manager() -> (SessionManager, Arc<MemoryStore>) {
    let engine = Arc::new(Engine::new(crate::metrics::scratch(
        crate::upstream::metrics::UpstreamMetrics::register,
    )));
    let store = Arc::new(MemoryStore::new(Ttl {
        idle: Duration::from_secs(60),
        tombstone: Duration::from_secs(60),
    }));
    let metrics = crate::metrics::scratch(super::SessionMetrics::register);
    (SessionManager::new(store.clone(), engine, metrics), store)
}

fn record(principal: Option<&str>) -> SessionRecord {
    SessionRecord {
        id: super::new_session_id(),
        pool: "p".into(),
        client: "".into(),
        principal: principal.map(Arc::from),
        path: "/mcp".into(),
        init_params: "{}".into(),
        protocol_version: "2025-11-25".into(),
        binding: Binding {
            backend: "127.0.0.1:1".parse().unwrap(),
            backend_session: "b".into(),
            generation: 1,
            stale: false,
        },
        settings: Settings::default(),
        last_use_ms: now_ms(),
    }
}

const OPEN: Quota = Quota {
    max_sessions: 10,
    max_per_client: None,
};

#[tokio::test]
async fn a_session_of_another_principal_is_exactly_as_unknown_as_a_missing_one() {
    let (sessions, store) = manager();
    let rec = record(Some("alice"));
    store.create(rec.clone(), OPEN).await.unwrap();
    let alice = Requester {
        identity: "".into(),
        principal: Some("alice".into()),
    };
    let mallory = Requester {
        identity: "".into(),
        principal: Some("mallory".into()),
    };
    assert_eq!(sessions.lookup(&rec.id, &alice).await.unwrap(), rec);
    let foreign = sessions.lookup(&rec.id, &mallory).await.unwrap_err();
    let missing = sessions.lookup("no-such-id", &mallory).await.unwrap_err();
    assert_eq!(foreign, missing);
    assert_eq!(foreign.data["reason"], "unknown");
}

#[tokio::test]
async fn ended_sessions_answer_with_their_reason() {
    let (sessions, store) = manager();
    let rec = record(None);
    store.create(rec.clone(), OPEN).await.unwrap();
    store.end(&rec.id, GoneReason::Expired).await.unwrap();
    let err = sessions
        .lookup(&rec.id, &Requester::default())
        .await
        .unwrap_err();
    assert_eq!(err.data["reason"], "expired");
}
