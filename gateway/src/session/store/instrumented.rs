//! A store wrapper that measures every operation of the store it wraps: latency by operation
//! (`mcpgw_store_duration_seconds{op}`) and failures (`mcpgw_store_errors_total{op}`), so an
//! operator sees a slow or failing shared store before clients do.

use super::metrics::StoreMetrics;
use super::{CreateError, Hold, Quota, Rebound, SessionStore, StoreError, Ttl};
use crate::session::{Binding, GoneReason, Lookup, SessionRecord, SettingChange};
use async_trait::async_trait;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Measures `inner`.
pub struct Instrumented {
    inner: Arc<dyn SessionStore>,
    metrics: StoreMetrics,
}

impl Instrumented {
    /// `inner`, measured into `metrics`.
    pub fn new(inner: Arc<dyn SessionStore>, metrics: StoreMetrics) -> Instrumented {
        Instrumented { inner, metrics }
    }

    fn record(&self, op: &str, started: Instant, failed: bool) {
        self.metrics
            .store_duration
            .with_label_values(&[op])
            .observe(started.elapsed().as_secs_f64());
        if failed {
            self.metrics.store_errors.with_label_values(&[op]).inc();
        }
    }

    fn measured<T>(
        &self,
        op: &str,
        started: Instant,
        r: Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.record(op, started, r.is_err());
        r
    }
}

#[async_trait]
impl SessionStore for Instrumented {
    async fn create(&self, record: SessionRecord, quota: Quota) -> Result<(), CreateError> {
        let t = Instant::now();
        let r = self.inner.create(record, quota).await;
        self.record("create", t, matches!(r, Err(CreateError::Store(_))));
        r
    }

    async fn get(&self, id: &str) -> Result<Lookup, StoreError> {
        let t = Instant::now();
        self.measured("get", t, self.inner.get(id).await)
    }

    async fn get_fresh(&self, id: &str) -> Result<Lookup, StoreError> {
        let t = Instant::now();
        self.measured("get", t, self.inner.get_fresh(id).await)
    }

    async fn touch(&self, id: &str, now_ms: u64) -> Result<(), StoreError> {
        let t = Instant::now();
        self.measured("touch", t, self.inner.touch(id, now_ms).await)
    }

    async fn rebind(
        &self,
        id: &str,
        expected_generation: u64,
        binding: Binding,
    ) -> Result<Rebound, StoreError> {
        let t = Instant::now();
        let r = self.inner.rebind(id, expected_generation, binding).await;
        self.measured("rebind", t, r)
    }

    async fn mark_stale(&self, id: &str, generation: u64) -> Result<(), StoreError> {
        let t = Instant::now();
        self.measured("mark_stale", t, self.inner.mark_stale(id, generation).await)
    }

    async fn update_settings(&self, id: &str, change: SettingChange) -> Result<(), StoreError> {
        let t = Instant::now();
        let r = self.inner.update_settings(id, change).await;
        self.measured("update_settings", t, r)
    }

    async fn end(&self, id: &str, reason: GoneReason) -> Result<Option<SessionRecord>, StoreError> {
        let t = Instant::now();
        self.measured("end", t, self.inner.end(id, reason).await)
    }

    async fn take_expired(
        &self,
        now_ms: u64,
        max: usize,
    ) -> Result<Vec<SessionRecord>, StoreError> {
        let t = Instant::now();
        self.measured(
            "take_expired",
            t,
            self.inner.take_expired(now_ms, max).await,
        )
    }

    async fn count(&self) -> Result<usize, StoreError> {
        let t = Instant::now();
        self.measured("count", t, self.inner.count().await)
    }

    async fn backend_counts(&self, pool: &str) -> Result<Vec<(SocketAddr, usize)>, StoreError> {
        let t = Instant::now();
        self.measured("backend_counts", t, self.inner.backend_counts(pool).await)
    }

    async fn sessions_on(
        &self,
        pool: &str,
        backend: SocketAddr,
    ) -> Result<Vec<Arc<str>>, StoreError> {
        let t = Instant::now();
        let r = self.inner.sessions_on(pool, backend).await;
        self.measured("sessions_on", t, r)
    }

    async fn client_count(&self, client: &str) -> Result<usize, StoreError> {
        let t = Instant::now();
        self.measured("client_count", t, self.inner.client_count(client).await)
    }

    async fn claim_move(
        &self,
        id: &str,
        generation: u64,
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        let t = Instant::now();
        let r = self.inner.claim_move(id, generation, ttl).await;
        self.measured("claim_move", t, r)
    }

    async fn hold_lease(&self, id: &str, owner: &str, ttl: Duration) -> Result<Hold, StoreError> {
        let t = Instant::now();
        let r = self.inner.hold_lease(id, owner, ttl).await;
        self.measured("hold_lease", t, r)
    }

    async fn release_lease(&self, id: &str, owner: &str) -> Result<(), StoreError> {
        let t = Instant::now();
        let r = self.inner.release_lease(id, owner).await;
        self.measured("release_lease", t, r)
    }

    async fn ping(&self) -> Result<(), StoreError> {
        let t = Instant::now();
        self.measured("ping", t, self.inner.ping().await)
    }

    fn set_ttl(&self, ttl: Ttl) {
        self.inner.set_ttl(ttl);
    }
}
