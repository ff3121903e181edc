//! A per-replica cache in front of a shared store: the records this replica read or wrote, so a
//! request does not wait for the network to find its session's binding, and so a session this
//! replica serves survives an outage of the store.
//!
//! The cache is a hint, not truth. A record read or written in the last [`FRESH`] is used
//! without asking the store; what it may get wrong is corrected where it matters: the session
//! manager re-reads the store ([`SessionStore::get_fresh`]) before it moves a session, so a
//! binding another replica changed is found the moment the old backend refuses the connection
//! or no longer knows the session (the replica that moved it deletes the session it left on a
//! live backend); every change this replica makes goes through to the store and updates or
//! drops its entry.
//!
//! When the store fails (docs/failover.md, "When the session store fails"), a session whose
//! record this replica holds (used within the idle timeout) is served from that copy: its
//! backend confirms the binding by answering, as always. Writes that cannot wait are kept by
//! the rule of `pending.rs` and retried by one task until the store takes them; while the
//! outage lasts (`outage.rs`) copies are served without asking the store first. A client's
//! end (DELETE) of a session this replica holds is queued too (`pending.rs`), and the session is
//! gone here at once. What needs the store itself (a new session, a move, the counts) still
//! fails, and the request gets 503 -32006.

use super::metrics::StoreMetrics;
use super::outage::Outage;
use super::pending::{Pending, Retried};
use super::{CreateError, Hold, Quota, Rebound, SessionStore, StoreError, Ttl};
use crate::session::{Binding, GoneReason, Lookup, SessionRecord, SettingChange};
use async_trait::async_trait;
use dashmap::DashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a cached record is used without asking the store.
const FRESH: Duration = Duration::from_secs(2);
/// How often owed writes are retried during an outage.
const RETRY_EVERY: Duration = Duration::from_millis(250);

/// `inner`, with the records this replica uses kept in this process.
pub struct Cached {
    shared: Arc<Shared>,
}

struct Shared {
    inner: Arc<dyn SessionStore>,
    /// Each record with when it was last read from or written to the store.
    records: DashMap<Arc<str>, (SessionRecord, Instant)>,
    pending: Arc<Pending>,
    outage: Outage,
    /// How long a copy is kept for an outage: the idle timeout.
    keep_ms: AtomicU64,
}

impl Cached {
    /// Caches reads of `inner` (outages not counted).
    #[cfg(test)]
    pub(crate) fn new(inner: Arc<dyn SessionStore>) -> Cached {
        Cached::with_metrics(inner, None)
    }

    /// Caches reads of `inner`, counting outages into `metrics`.
    pub fn measured(inner: Arc<dyn SessionStore>, metrics: StoreMetrics) -> Cached {
        Cached::with_metrics(inner, Some(metrics))
    }

    fn with_metrics(inner: Arc<dyn SessionStore>, metrics: Option<StoreMetrics>) -> Cached {
        Cached {
            shared: Arc::new(Shared {
                inner,
                records: DashMap::new(),
                pending: Arc::new(Pending::default()),
                outage: Outage::new(metrics),
                keep_ms: AtomicU64::new(30 * 60 * 1000),
            }),
        }
    }
}

impl Shared {
    fn keep(&self, record: &SessionRecord) {
        let mut record = record.clone();
        self.pending.apply_queued(&mut record);
        self.records
            .insert(record.id.clone(), (record, Instant::now()));
    }

    fn forget(&self, id: &str) {
        self.records.remove(id);
        self.pending.forget(id);
    }

    /// The copy of `id`, if it is recent enough to serve during an outage.
    fn copy(&self, id: &str) -> Option<SessionRecord> {
        let entry = self.records.get(id)?;
        let keep = self.keep_ms.load(Ordering::Relaxed);
        let idle = crate::session::now_ms().saturating_sub(entry.0.last_use_ms);
        (idle < keep || entry.1.elapsed() < Duration::from_millis(keep)).then(|| entry.0.clone())
    }

    /// Notes a failure; starts the retry task when none runs.
    fn failed(self: &Arc<Self>, op: &str, e: &StoreError) {
        if self.outage.failed(op, e) {
            let shared = self.clone();
            tokio::spawn(async move { shared.retry_until_back().await });
        }
    }

    /// `answer` of the store to `op`, a failure noted first ([`Shared::failed`]).
    fn noted<T>(
        self: &Arc<Self>,
        op: &str,
        answer: Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        if let Err(e) = &answer {
            self.failed(op, e);
        }
        answer
    }

    /// Retries what is owed every [`RETRY_EVERY`] until the outage is over.
    async fn retry_until_back(self: Arc<Self>) {
        let mut replayed = 0;
        loop {
            tokio::time::sleep(RETRY_EVERY).await;
            // a store that does not answer a ping is not sent the whole queue again
            if let Err(e) = self.inner.ping().await {
                self.outage.failed("ping", &e);
                continue;
            }
            let mut clean = true;
            for (id, outcome) in self.pending.retry(&self.inner).await {
                match outcome {
                    Retried::Done(found) => {
                        replayed += 1;
                        match found {
                            Some(Lookup::Live(record)) => self.keep(&record),
                            Some(_) => self.forget(&id),
                            None => {}
                        }
                    }
                    Retried::Failed(e) => {
                        self.outage.failed("retry", &e);
                        clean = false;
                    }
                }
            }
            if self
                .outage
                .settle(clean && self.pending.is_empty(), replayed)
            {
                return;
            }
        }
    }
}

#[async_trait]
impl SessionStore for Cached {
    async fn create(&self, record: SessionRecord, quota: Quota) -> Result<(), CreateError> {
        let s = &self.shared;
        match s.inner.create(record.clone(), quota).await {
            Err(CreateError::Store(e)) => {
                s.failed("create", &e);
                Err(CreateError::Store(e))
            }
            Err(e) => Err(e),
            Ok(()) => {
                s.keep(&record);
                Ok(())
            }
        }
    }

    async fn get(&self, id: &str) -> Result<Lookup, StoreError> {
        let s = &self.shared;
        if let Some(reason) = s.pending.ended(id) {
            return Ok(Lookup::Gone(reason));
        }
        if let Some(entry) = s.records.get(id) {
            if entry.1.elapsed() < FRESH {
                return Ok(Lookup::Live(entry.0.clone()));
            }
        }
        if s.outage.down() {
            if let Some(copy) = s.copy(id) {
                // no waiting on a store that is down: read again once it answers
                s.pending.read(id);
                s.outage.fell_back("get");
                return Ok(Lookup::Live(copy));
            }
        }
        match self.get_fresh(id).await {
            Err(e) => match s.copy(id) {
                Some(copy) => {
                    s.pending.read(id);
                    s.outage.fell_back("get");
                    Ok(Lookup::Live(copy))
                }
                None => Err(e),
            },
            found => found,
        }
    }

    async fn get_fresh(&self, id: &str) -> Result<Lookup, StoreError> {
        let s = &self.shared;
        let found = s.noted("get", s.inner.get(id).await)?;
        match &found {
            // its end is queued: the store does not have it yet
            Lookup::Live(_) if s.pending.ended(id).is_some() => {
                return Ok(Lookup::Gone(
                    s.pending.ended(id).unwrap_or(GoneReason::Deleted),
                ));
            }
            Lookup::Live(record) => {
                s.keep(record);
                if s.pending.writes_for(id) {
                    // what this replica wrote meanwhile is not in the store yet
                    let mut record = record.clone();
                    s.pending.apply_queued(&mut record);
                    return Ok(Lookup::Live(record));
                }
            }
            _ => s.forget(id),
        }
        Ok(found)
    }

    async fn touch(&self, id: &str, now_ms: u64) -> Result<(), StoreError> {
        let s = &self.shared;
        if s.pending.ended(id).is_some() {
            return Ok(());
        }
        let written = match s.outage.down() {
            true => Err(None),
            false => s.inner.touch(id, now_ms).await.map_err(Some),
        };
        if let Err(e) = written {
            if let Some(e) = &e {
                s.failed("touch", e);
            }
            let op = match s.pending.touch(id, now_ms) {
                true => "touch",
                false => "dropped",
            };
            s.outage.fell_back(op);
        }
        if let Some(mut entry) = s.records.get_mut(id) {
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
        let s = &self.shared;
        let rebound = s.inner.rebind(id, expected_generation, binding).await;
        match &rebound {
            Ok(Rebound::Won(record)) | Ok(Rebound::Lost(Lookup::Live(record))) => s.keep(record),
            // the binding is unchanged: the copy stays (the move waits for the store)
            Err(e) => s.failed("rebind", e),
            _ => s.forget(id),
        }
        rebound
    }

    async fn mark_stale(&self, id: &str, generation: u64) -> Result<(), StoreError> {
        let s = &self.shared;
        match s.inner.mark_stale(id, generation).await {
            Ok(()) => {
                s.records.remove(id);
            }
            // The mark stays in this replica's copy: the next request here moves the session
            // first (which needs the store: 503 -32006 until it is back). The call that lost its
            // connection is still answered -32013, never "retry" (it may have run).
            Err(e) => {
                s.failed("mark_stale", &e);
                s.outage.fell_back("mark_stale");
                if let Some(mut entry) = s.records.get_mut(id) {
                    if entry.0.binding.generation == generation {
                        entry.0.binding.stale = true;
                    }
                }
            }
        }
        Ok(())
    }

    async fn update_settings(&self, id: &str, change: SettingChange) -> Result<(), StoreError> {
        let s = &self.shared;
        let written = match s.outage.down() {
            true => Err(None),
            false => s
                .inner
                .update_settings(id, change.clone())
                .await
                .map_err(Some),
        };
        match written {
            // the next read takes the record as the store has it now
            Ok(()) => {
                s.records.remove(id);
            }
            Err(e) => {
                if let Some(e) = &e {
                    s.failed("update_settings", e);
                }
                let op = match s.pending.setting(id, change.clone()) {
                    true => "update_settings",
                    false => "dropped",
                };
                s.outage.fell_back(op);
                if let Some(mut entry) = s.records.get_mut(id) {
                    entry.0.settings.apply(change);
                }
            }
        }
        Ok(())
    }

    /// Ends a session. When the store fails (or is known down), the end of a session this
    /// replica holds a copy of is queued and answered as done: a command that timed out may
    /// still run once the store resumes, so "failed" could not be promised; queued, the end
    /// happens either way. One with no copy here fails (503 -32006).
    async fn end(&self, id: &str, reason: GoneReason) -> Result<Option<SessionRecord>, StoreError> {
        let s = &self.shared;
        if s.pending.ended(id).is_some() {
            return Ok(None);
        }
        let failed = match s.outage.down() {
            true => StoreError {
                detail: "the session store is unavailable".into(),
            },
            false => match s.inner.end(id, reason).await {
                Ok(ended) => {
                    s.forget(id);
                    return Ok(ended);
                }
                Err(e) => {
                    s.failed("end", &e);
                    e
                }
            },
        };
        let Some(copy) = s.copy(id) else {
            return Err(failed);
        };
        if !s.pending.end(id, reason) {
            s.outage.fell_back("dropped");
            return Err(failed);
        }
        s.records.remove(id);
        s.outage.fell_back("end");
        Ok(Some(copy))
    }

    async fn take_expired(
        &self,
        now_ms: u64,
        max: usize,
    ) -> Result<Vec<SessionRecord>, StoreError> {
        let s = &self.shared;
        let expired = s.noted("take_expired", s.inner.take_expired(now_ms, max).await)?;
        for record in &expired {
            s.forget(&record.id);
        }
        // the sweep also keeps the cache to the copies an outage may need
        let keep = s.keep_ms.load(Ordering::Relaxed);
        s.records
            .retain(|_, (r, _)| now_ms.saturating_sub(r.last_use_ms) < keep);
        Ok(expired)
    }

    async fn count(&self) -> Result<usize, StoreError> {
        let s = &self.shared;
        s.noted("count", s.inner.count().await)
    }

    async fn backend_counts(&self, pool: &str) -> Result<Vec<(SocketAddr, usize)>, StoreError> {
        let s = &self.shared;
        s.noted("backend_counts", s.inner.backend_counts(pool).await)
    }

    async fn sessions_on(
        &self,
        pool: &str,
        backend: SocketAddr,
    ) -> Result<Vec<Arc<str>>, StoreError> {
        let s = &self.shared;
        s.noted("sessions_on", s.inner.sessions_on(pool, backend).await)
    }

    async fn client_count(&self, client: &str) -> Result<usize, StoreError> {
        let s = &self.shared;
        s.noted("client_count", s.inner.client_count(client).await)
    }

    async fn claim_move(
        &self,
        id: &str,
        generation: u64,
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        let s = &self.shared;
        s.noted("claim_move", s.inner.claim_move(id, generation, ttl).await)
    }

    async fn hold_lease(&self, id: &str, owner: &str, ttl: Duration) -> Result<Hold, StoreError> {
        self.shared.inner.hold_lease(id, owner, ttl).await
    }

    async fn release_lease(&self, id: &str, owner: &str) -> Result<(), StoreError> {
        self.shared.inner.release_lease(id, owner).await
    }

    async fn ping(&self) -> Result<(), StoreError> {
        self.shared.inner.ping().await
    }

    fn set_ttl(&self, ttl: Ttl) {
        let keep = ttl.idle.as_millis() as u64;
        self.shared.keep_ms.store(keep, Ordering::Relaxed);
        self.shared.inner.set_ttl(ttl);
    }
}

#[cfg(test)]
#[path = "cached_tests.rs"]
mod tests;
