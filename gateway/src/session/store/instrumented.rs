//! A store wrapper that measures every operation of the store it wraps: latency by operation
//! (`mcpgw_store_duration_seconds{op}`) and failures (`mcpgw_store_errors_total{op}`), so an
//! operator sees a slow or failing shared store before clients do.

use super::metrics::StoreMetrics;
use super::{CreateError, Hold, Quota, Rebound, SessionStore, StoreError, Ttl};
use crate::session::{Binding, GoneReason, Lookup, SessionRecord, SettingChange};
use async_trait::async_trait;
use std::future::Future;
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

    /// Awaits `call` (an operation of `inner`), measured as `op`.
    async fn timed<T>(
        &self,
        op: &str,
        call: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        let started = Instant::now();
        let r = call.await;
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
        self.timed("get", self.inner.get(id)).await
    }

    async fn get_fresh(&self, id: &str) -> Result<Lookup, StoreError> {
        self.timed("get", self.inner.get_fresh(id)).await
    }

    async fn touch(&self, id: &str, now_ms: u64) -> Result<(), StoreError> {
        self.timed("touch", self.inner.touch(id, now_ms)).await
    }

    async fn rebind(
        &self,
        id: &str,
        expected_generation: u64,
        binding: Binding,
    ) -> Result<Rebound, StoreError> {
        self.timed(
            "rebind",
            self.inner.rebind(id, expected_generation, binding),
        )
        .await
    }

    async fn mark_stale(&self, id: &str, generation: u64) -> Result<(), StoreError> {
        self.timed("mark_stale", self.inner.mark_stale(id, generation))
            .await
    }

    async fn update_settings(&self, id: &str, change: SettingChange) -> Result<(), StoreError> {
        self.timed("update_settings", self.inner.update_settings(id, change))
            .await
    }

    async fn end(&self, id: &str, reason: GoneReason) -> Result<Option<SessionRecord>, StoreError> {
        self.timed("end", self.inner.end(id, reason)).await
    }

    async fn take_expired(
        &self,
        now_ms: u64,
        max: usize,
    ) -> Result<Vec<SessionRecord>, StoreError> {
        self.timed("take_expired", self.inner.take_expired(now_ms, max))
            .await
    }

    async fn count(&self) -> Result<usize, StoreError> {
        self.timed("count", self.inner.count()).await
    }

    async fn backend_counts(&self, pool: &str) -> Result<Vec<(SocketAddr, usize)>, StoreError> {
        self.timed("backend_counts", self.inner.backend_counts(pool))
            .await
    }

    async fn sessions_on(
        &self,
        pool: &str,
        backend: SocketAddr,
    ) -> Result<Vec<Arc<str>>, StoreError> {
        self.timed("sessions_on", self.inner.sessions_on(pool, backend))
            .await
    }

    async fn client_count(&self, client: &str) -> Result<usize, StoreError> {
        self.timed("client_count", self.inner.client_count(client))
            .await
    }

    async fn claim_move(
        &self,
        id: &str,
        generation: u64,
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        self.timed("claim_move", self.inner.claim_move(id, generation, ttl))
            .await
    }

    async fn hold_lease(&self, id: &str, owner: &str, ttl: Duration) -> Result<Hold, StoreError> {
        self.timed("hold_lease", self.inner.hold_lease(id, owner, ttl))
            .await
    }

    async fn release_lease(&self, id: &str, owner: &str) -> Result<(), StoreError> {
        self.timed("release_lease", self.inner.release_lease(id, owner))
            .await
    }

    async fn ping(&self) -> Result<(), StoreError> {
        self.timed("ping", self.inner.ping()).await
    }

    fn set_ttl(&self, ttl: Ttl) {
        self.inner.set_ttl(ttl);
    }
}
