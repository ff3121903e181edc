//! A per-replica cache in front of a shared store: the records this replica read or wrote in
//! the last moments, so a request does not wait for the network to find its session's binding.
//!
//! The cache is a hint, not truth. What it may get wrong is bounded by its lifetime (2 s) and
//! corrected where it matters: the session manager re-reads the store ([`SessionStore::get_fresh`])
//! before it moves a session, so a binding another replica changed is found the moment the
//! old backend refuses the connection or no longer knows the session (the replica that moved
//! it deletes the session it left on a live backend); every change this replica makes goes
//! through to the store and updates or drops its entry.

use super::{CreateError, Hold, Quota, Rebound, SessionStore, StoreError, Ttl};
use crate::session::{Binding, GoneReason, Lookup, SessionRecord, SettingChange};
use async_trait::async_trait;
use dashmap::DashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a cached record is used without asking the store.
const FRESH: Duration = Duration::from_secs(2);

/// `inner`, with recently used records kept in this process.
pub struct Cached {
    inner: Arc<dyn SessionStore>,
    records: DashMap<Arc<str>, (SessionRecord, Instant)>,
}

impl Cached {
    /// Caches reads of `inner`.
    pub fn new(inner: Arc<dyn SessionStore>) -> Cached {
        Cached {
            inner,
            records: DashMap::new(),
        }
    }

    fn keep(&self, record: &SessionRecord) {
        self.records
            .insert(record.id.clone(), (record.clone(), Instant::now()));
    }

    fn forget(&self, id: &str) {
        self.records.remove(id);
    }
}

#[async_trait]
impl SessionStore for Cached {
    async fn create(&self, record: SessionRecord, quota: Quota) -> Result<(), CreateError> {
        self.inner.create(record.clone(), quota).await?;
        self.keep(&record);
        Ok(())
    }

    async fn get(&self, id: &str) -> Result<Lookup, StoreError> {
        if let Some(entry) = self.records.get(id) {
            if entry.1.elapsed() < FRESH {
                return Ok(Lookup::Live(entry.0.clone()));
            }
        }
        self.get_fresh(id).await
    }

    async fn get_fresh(&self, id: &str) -> Result<Lookup, StoreError> {
        let found = self.inner.get(id).await?;
        match &found {
            Lookup::Live(record) => self.keep(record),
            _ => self.forget(id),
        }
        Ok(found)
    }

    async fn touch(&self, id: &str, now_ms: u64) -> Result<(), StoreError> {
        self.inner.touch(id, now_ms).await?;
        if let Some(mut entry) = self.records.get_mut(id) {
            entry.0.last_use_ms = entry.0.last_use_ms.max(now_ms);
        }
        Ok(())
    }

    async fn rebind(
        &self,
        id: &str,
        expected_generation: u64,
        binding: Binding,
    ) -> Result<Rebound, StoreError> {
        let rebound = self.inner.rebind(id, expected_generation, binding).await;
        match &rebound {
            Ok(Rebound::Won(record)) | Ok(Rebound::Lost(Lookup::Live(record))) => self.keep(record),
            _ => self.forget(id),
        }
        rebound
    }

    async fn mark_stale(&self, id: &str, generation: u64) -> Result<(), StoreError> {
        self.forget(id);
        self.inner.mark_stale(id, generation).await
    }

    async fn update_settings(&self, id: &str, change: SettingChange) -> Result<(), StoreError> {
        self.forget(id);
        self.inner.update_settings(id, change).await
    }

    async fn end(&self, id: &str, reason: GoneReason) -> Result<Option<SessionRecord>, StoreError> {
        self.forget(id);
        self.inner.end(id, reason).await
    }

    async fn take_expired(
        &self,
        now_ms: u64,
        max: usize,
    ) -> Result<Vec<SessionRecord>, StoreError> {
        let expired = self.inner.take_expired(now_ms, max).await?;
        for record in &expired {
            self.forget(&record.id);
        }
        // the sweep also keeps the cache to what is fresh
        self.records.retain(|_, (_, at)| at.elapsed() < FRESH);
        Ok(expired)
    }

    async fn count(&self) -> Result<usize, StoreError> {
        self.inner.count().await
    }

    async fn backend_counts(&self, pool: &str) -> Result<Vec<(SocketAddr, usize)>, StoreError> {
        self.inner.backend_counts(pool).await
    }

    async fn client_count(&self, client: &str) -> Result<usize, StoreError> {
        self.inner.client_count(client).await
    }

    async fn claim_move(
        &self,
        id: &str,
        generation: u64,
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        self.inner.claim_move(id, generation, ttl).await
    }

    async fn hold_lease(&self, id: &str, owner: &str, ttl: Duration) -> Result<Hold, StoreError> {
        self.inner.hold_lease(id, owner, ttl).await
    }

    async fn release_lease(&self, id: &str, owner: &str) -> Result<(), StoreError> {
        self.inner.release_lease(id, owner).await
    }

    async fn ping(&self) -> Result<(), StoreError> {
        self.inner.ping().await
    }

    fn set_ttl(&self, ttl: Ttl) {
        self.inner.set_ttl(ttl);
    }
}
