//! The replica cache over a store that goes down and comes back: sessions served from their
//! copies, writes queued by the rule and landing in order, what needs the store refused, one
//! outage counted once.

use super::StoreMetrics as Metrics;
use super::{Cached, FRESH};
use crate::session::store::suite::record;
use crate::session::store::{
    CreateError, Hold, MemoryStore, Quota, Rebound, SessionStore, StoreError, Ttl,
};
use crate::session::{now_ms, Binding, GoneReason, Lookup, SessionRecord, SettingChange};
use async_trait::async_trait;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const TTL: Ttl = Ttl {
    idle: Duration::from_secs(60),
    tombstone: Duration::from_secs(60),
};
const OPEN: Quota = Quota {
    max_sessions: 100,
    max_per_client: None,
};

/// A memory store that fails every call while `down`, counting the calls it refused.
#[derive(Default)]
struct Flaky {
    inner: Option<MemoryStore>,
    down: AtomicBool,
    refused: AtomicUsize,
}

impl Flaky {
    fn new() -> Arc<Flaky> {
        Arc::new(Flaky {
            inner: Some(MemoryStore::new(TTL)),
            ..Flaky::default()
        })
    }
    fn store(&self) -> Result<&MemoryStore, StoreError> {
        if self.down.load(Ordering::Relaxed) {
            self.refused.fetch_add(1, Ordering::Relaxed);
            return Err(StoreError {
                detail: "connection refused".into(),
            });
        }
        Ok(self.inner.as_ref().expect("store"))
    }
}

#[async_trait]
impl SessionStore for Flaky {
    async fn create(&self, record: SessionRecord, quota: Quota) -> Result<(), CreateError> {
        self.store()
            .map_err(CreateError::Store)?
            .create(record, quota)
            .await
    }
    async fn get(&self, id: &str) -> Result<Lookup, StoreError> {
        self.store()?.get(id).await
    }
    async fn touch(&self, id: &str, now_ms: u64) -> Result<(), StoreError> {
        self.store()?.touch(id, now_ms).await
    }
    async fn rebind(&self, id: &str, g: u64, b: Binding) -> Result<Rebound, StoreError> {
        self.store()?.rebind(id, g, b).await
    }
    async fn mark_stale(&self, id: &str, generation: u64) -> Result<(), StoreError> {
        self.store()?.mark_stale(id, generation).await
    }
    async fn update_settings(&self, id: &str, change: SettingChange) -> Result<(), StoreError> {
        self.store()?.update_settings(id, change).await
    }
    async fn end(&self, id: &str, reason: GoneReason) -> Result<Option<SessionRecord>, StoreError> {
        self.store()?.end(id, reason).await
    }
    async fn take_expired(&self, now: u64, max: usize) -> Result<Vec<SessionRecord>, StoreError> {
        self.store()?.take_expired(now, max).await
    }
    async fn count(&self) -> Result<usize, StoreError> {
        self.store()?.count().await
    }
    async fn backend_counts(&self, pool: &str) -> Result<Vec<(SocketAddr, usize)>, StoreError> {
        self.store()?.backend_counts(pool).await
    }
    async fn client_count(&self, client: &str) -> Result<usize, StoreError> {
        self.store()?.client_count(client).await
    }
    async fn sessions_on(&self, pool: &str, at: SocketAddr) -> Result<Vec<Arc<str>>, StoreError> {
        self.store()?.sessions_on(pool, at).await
    }
    async fn hold_lease(&self, id: &str, owner: &str, ttl: Duration) -> Result<Hold, StoreError> {
        self.store()?.hold_lease(id, owner, ttl).await
    }
    async fn release_lease(&self, id: &str, owner: &str) -> Result<(), StoreError> {
        self.store()?.release_lease(id, owner).await
    }
    async fn ping(&self) -> Result<(), StoreError> {
        self.store().map(|_| ())
    }
    fn set_ttl(&self, ttl: Ttl) {
        self.inner.as_ref().expect("store").set_ttl(ttl);
    }
}

fn cached(flaky: &Arc<Flaky>) -> (Cached, Metrics) {
    let metrics = crate::metrics::scratch(Metrics::register);
    let cached = Cached::measured(flaky.clone(), metrics.clone());
    cached.set_ttl(TTL);
    (cached, metrics)
}

/// Makes every copy older than [`FRESH`], so a read asks the store.
fn age(cached: &Cached) {
    for mut entry in cached.shared.records.iter_mut() {
        entry.1 = Instant::now() - FRESH;
    }
}

fn live(found: Lookup) -> SessionRecord {
    match found {
        Lookup::Live(r) => r,
        other => panic!("not live: {other:?}"),
    }
}

async fn back_within(cached: &Cached, limit: Duration) {
    let started = Instant::now();
    while cached.shared.outage.down() || !cached.shared.pending.is_empty() {
        assert!(started.elapsed() < limit, "the outage never ended");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_session_is_served_from_its_copy_while_the_store_is_down() {
    let flaky = Flaky::new();
    let (cached, metrics) = cached(&flaky);
    let rec = record("", 1, now_ms());
    cached.create(rec.clone(), OPEN).await.unwrap();
    age(&cached);
    flaky.down.store(true, Ordering::Relaxed);
    assert_eq!(live(cached.get(&rec.id).await.unwrap()), rec);
    let refused = flaky.refused.load(Ordering::Relaxed);
    // during the outage a copy is served without asking the store first
    for _ in 0..20 {
        assert_eq!(live(cached.get(&rec.id).await.unwrap()).id, rec.id);
    }
    assert!(
        flaky.refused.load(Ordering::Relaxed) <= refused + 2,
        "requests waited on a store that is down"
    );
    // what needs the store still fails: a new session, a move
    let other = record("", 1, now_ms());
    assert!(matches!(
        cached.create(other, OPEN).await,
        Err(CreateError::Store(_))
    ));
    let binding = Binding {
        generation: 2,
        ..rec.binding.clone()
    };
    assert!(cached.rebind(&rec.id, 1, binding).await.is_err());
    assert!(cached.get_fresh(&rec.id).await.is_err());
    // a lost connection is marked in the copy (the call is answered -32013, not "retry"); the
    // next request then moves the session, which needs the store
    cached.mark_stale(&rec.id, 1).await.unwrap();
    assert!(live(cached.get(&rec.id).await.unwrap()).binding.stale);
    // a session this replica holds no copy of cannot be served
    assert!(cached.get("never-seen").await.is_err());
    assert_eq!(
        metrics
            .store_unavailable
            .with_label_values::<&str>(&[])
            .get(),
        1
    );
    assert!(metrics.store_fallbacks.with_label_values(&["get"]).get() >= 20);
    flaky.down.store(false, Ordering::Relaxed);
    back_within(&cached, Duration::from_secs(5)).await;
    assert_eq!(
        metrics
            .store_unavailable
            .with_label_values::<&str>(&[])
            .get(),
        1,
        "one outage, counted once"
    );
}

#[tokio::test]
async fn writes_made_during_an_outage_land_in_order_when_the_store_returns() {
    let flaky = Flaky::new();
    let (cached, _metrics) = cached(&flaky);
    let rec = record("", 1, now_ms() - 10_000);
    cached.create(rec.clone(), OPEN).await.unwrap();
    flaky.down.store(true, Ordering::Relaxed);
    let level = |l: &str| SettingChange::LogLevel(format!(r#"{{"level":"{l}"}}"#).into());
    let uri: Arc<str> = "file:///a".into();
    for change in [
        level("debug"),
        SettingChange::Subscribe(uri.clone(), 64),
        level("error"),
    ] {
        cached.update_settings(&rec.id, change).await.unwrap();
    }
    let (t1, t2) = (now_ms() - 5_000, now_ms());
    cached.touch(&rec.id, t2).await.unwrap();
    cached.touch(&rec.id, t1).await.unwrap();
    // the copy has the changes at once
    age(&cached);
    let copy = live(cached.get(&rec.id).await.unwrap());
    assert_eq!(
        copy.settings.log_level.as_deref(),
        Some(r#"{"level":"error"}"#)
    );
    assert_eq!(copy.settings.subscriptions, vec![uri.clone()]);
    assert_eq!(copy.last_use_ms, t2);
    flaky.down.store(false, Ordering::Relaxed);
    back_within(&cached, Duration::from_secs(5)).await;
    let stored = live(flaky.get(&rec.id).await.unwrap());
    assert_eq!(stored.settings, copy.settings, "every change, in order");
    assert_eq!(stored.last_use_ms, t2, "touches coalesced: the latest wins");
}

#[tokio::test]
async fn a_session_ended_elsewhere_during_the_outage_is_dropped_from_the_copies() {
    let flaky = Flaky::new();
    let (cached, _metrics) = cached(&flaky);
    let rec = record("", 1, now_ms());
    cached.create(rec.clone(), OPEN).await.unwrap();
    age(&cached);
    flaky.down.store(true, Ordering::Relaxed);
    assert!(cached.get(&rec.id).await.is_ok());
    flaky.down.store(false, Ordering::Relaxed);
    // another replica ends it as the store comes back
    flaky.end(&rec.id, GoneReason::Deleted).await.unwrap();
    back_within(&cached, Duration::from_secs(5)).await;
    assert_eq!(
        cached.get(&rec.id).await.unwrap(),
        Lookup::Gone(GoneReason::Deleted)
    );
}

#[tokio::test]
async fn an_end_during_an_outage_is_queued_answered_as_done_and_lands_when_the_store_returns() {
    let flaky = Flaky::new();
    let (cached, metrics) = cached(&flaky);
    let rec = record("", 1, now_ms());
    cached.create(rec.clone(), OPEN).await.unwrap();
    flaky.down.store(true, Ordering::Relaxed);
    // the store fails the end: queued, answered with the record (the backend session is
    // deleted by the caller), and the session is gone for this replica at once
    let ended = cached.end(&rec.id, GoneReason::Deleted).await.unwrap();
    assert_eq!(ended.map(|r| r.id), Some(rec.id.clone()));
    assert!(matches!(
        cached.get(&rec.id).await.unwrap(),
        Lookup::Gone(GoneReason::Deleted)
    ));
    cached.touch(&rec.id, now_ms()).await.unwrap();
    assert!(
        cached
            .end(&rec.id, GoneReason::Deleted)
            .await
            .unwrap()
            .is_none(),
        "ended once"
    );
    assert_eq!(metrics.store_fallbacks.with_label_values(&["end"]).get(), 1);
    // a session with no copy here cannot be ended without the store
    assert!(cached.end("never-seen", GoneReason::Deleted).await.is_err());
    flaky.down.store(false, Ordering::Relaxed);
    back_within(&cached, Duration::from_secs(5)).await;
    let stored = flaky.inner.as_ref().expect("store").get(&rec.id).await;
    assert!(
        matches!(stored, Ok(Lookup::Gone(GoneReason::Deleted))),
        "ended in the store: {stored:?}"
    );
    assert!(matches!(
        cached.get(&rec.id).await.unwrap(),
        Lookup::Gone(GoneReason::Deleted)
    ));
}
