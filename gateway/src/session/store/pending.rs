//! The writes [`super::Cached`] could not make while the shared store was down, and the reads
//! it owes: kept here and retried by one task until the store takes them all.
//!
//! The rule (docs/failover.md, "When the session store fails"):
//! - a last-use touch is coalesced per session (the latest time wins) and retried; losing one
//!   only means the session's time-to-live counts from its previous recorded use;
//! - a settings change (`logging/setLevel`, `resources/subscribe`) is queued in order per
//!   session, applied to this replica's copy at once, and written before the session's touch;
//!   past [`MAX_SETTINGS`] queued changes for one session, or [`MAX_SESSIONS`] sessions with
//!   queued writes, a new change is dropped and counted (`op="dropped"`);
//! - a session served from its copy is read again from the store when it answers, so the copy
//!   follows what other replicas changed meanwhile;
//! - an end (a client's DELETE of a session this replica holds a copy of) is queued, and the
//!   session is gone for this replica at once: its other queued writes are dropped, and it is
//!   ended in the store before anything else is retried for it. The DELETE is answered as done
//!   (a command that timed out may still run when the store resumes: queued, the end happens
//!   either way, which is what the client was told).

use super::{SessionStore, StoreError};
use crate::session::{GoneReason, Lookup, SessionRecord, SettingChange};
use dashmap::DashMap;
use std::sync::Arc;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

/// Queued settings changes per session.
pub(super) const MAX_SETTINGS: usize = 64;
/// Sessions with queued writes.
pub(super) const MAX_SESSIONS: usize = 100_000;
/// Store operations of one retry round in flight at once.
const CONCURRENCY: usize = 64;

/// What is owed to the store.
#[derive(Default)]
pub(super) struct Pending {
    touches: DashMap<Arc<str>, u64>,
    settings: DashMap<Arc<str>, Vec<SettingChange>>,
    reads: DashMap<Arc<str>, ()>,
    ends: DashMap<Arc<str>, GoneReason>,
}

/// The outcome of one session's retried operations.
pub(super) enum Retried {
    /// Written (and read back, when a read was owed): the record the store holds, if asked.
    Done(Option<Lookup>),
    /// The store failed again (the operations are queued again).
    Failed(StoreError),
}

impl Pending {
    /// Queues a touch (the latest time wins).
    pub(super) fn touch(&self, id: &str, now_ms: u64) -> bool {
        if let Some(mut t) = self.touches.get_mut(id) {
            *t = (*t).max(now_ms);
            return true;
        }
        if self.touches.len() >= MAX_SESSIONS {
            return false;
        }
        self.touches.insert(id.into(), now_ms);
        true
    }

    /// Queues a settings change; `false` when it is dropped (over the bounds).
    pub(super) fn setting(&self, id: &str, change: SettingChange) -> bool {
        if !self.settings.contains_key(id) && self.settings.len() >= MAX_SESSIONS {
            return false;
        }
        let mut queue = self.settings.entry(id.into()).or_default();
        if queue.len() >= MAX_SETTINGS {
            return false;
        }
        queue.push(change);
        true
    }

    /// Queues the end of a session (its other owed writes are dropped); `false` when it is
    /// not queued (over the bounds).
    pub(super) fn end(&self, id: &str, reason: GoneReason) -> bool {
        if !self.ends.contains_key(id) && self.ends.len() >= MAX_SESSIONS {
            return false;
        }
        self.touches.remove(id);
        self.settings.remove(id);
        self.reads.remove(id);
        self.ends.insert(id.into(), reason);
        true
    }

    /// Why `id` ended, if its end is queued (it is gone for this replica).
    pub(super) fn ended(&self, id: &str) -> Option<GoneReason> {
        self.ends.get(id).map(|r| *r)
    }

    /// Asks for a read of `id` once the store answers.
    pub(super) fn read(&self, id: &str) {
        if self.reads.len() < MAX_SESSIONS {
            self.reads.insert(id.into(), ());
        }
    }

    /// Forgets everything owed for a session that ended.
    pub(super) fn forget(&self, id: &str) {
        self.touches.remove(id);
        self.settings.remove(id);
        self.reads.remove(id);
        self.ends.remove(id);
    }

    /// Whether `id` has writes queued (its copy is newer than the store).
    pub(super) fn writes_for(&self, id: &str) -> bool {
        self.settings.contains_key(id)
            || self.touches.contains_key(id)
            || self.ends.contains_key(id)
    }

    /// Queued settings of `id`, applied to a record read from the store (which does not have
    /// them yet).
    pub(super) fn apply_queued(&self, record: &mut SessionRecord) {
        if let Some(queue) = self.settings.get(&record.id) {
            for change in queue.iter() {
                record.settings.apply(change.clone());
            }
        }
        if let Some(t) = self.touches.get(&record.id) {
            record.last_use_ms = record.last_use_ms.max(*t);
        }
    }

    /// Whether nothing is owed.
    pub(super) fn is_empty(&self) -> bool {
        self.touches.is_empty()
            && self.settings.is_empty()
            && self.reads.is_empty()
            && self.ends.is_empty()
    }

    /// One retry round: every session's owed operations (settings in order, then the touch,
    /// then the read), sessions concurrently. Returns each session's outcome; what failed is
    /// queued again (before anything queued meanwhile).
    pub(super) async fn retry(
        self: &Arc<Self>,
        store: &Arc<dyn SessionStore>,
    ) -> Vec<(Arc<str>, Retried)> {
        let mut ids: Vec<Arc<str>> = self.settings.iter().map(|e| e.key().clone()).collect();
        ids.extend(self.touches.iter().map(|e| e.key().clone()));
        ids.extend(self.reads.iter().map(|e| e.key().clone()));
        ids.extend(self.ends.iter().map(|e| e.key().clone()));
        ids.sort();
        ids.dedup();
        let gate = Arc::new(Semaphore::new(CONCURRENCY));
        let mut tasks = JoinSet::new();
        for id in ids {
            let (pending, store, gate) = (self.clone(), store.clone(), gate.clone());
            tasks.spawn(async move {
                let _permit = gate.acquire_owned().await;
                let outcome = pending.retry_one(&store, &id).await;
                (id, outcome)
            });
        }
        let mut out = Vec::new();
        while let Some(done) = tasks.join_next().await {
            if let Ok(done) = done {
                out.push(done);
            }
        }
        out
    }

    async fn retry_one(&self, store: &Arc<dyn SessionStore>, id: &Arc<str>) -> Retried {
        if let Some(reason) = self.ended(id) {
            // the session is over: nothing else is written for it (ending one already ended is
            // a no-op, so a timed-out end that ran meanwhile does no harm)
            return match store.end(id, reason).await {
                Ok(_) => Retried::Done(Some(Lookup::Gone(reason))),
                Err(e) => Retried::Failed(e),
            };
        }
        let queued = self.settings.remove(id).map(|(_, q)| q).unwrap_or_default();
        for (i, change) in queued.iter().enumerate() {
            if let Err(e) = store.update_settings(id, change.clone()).await {
                // put back what is left, before anything queued meanwhile
                let mut queue = self.settings.entry(id.clone()).or_default();
                let newer = std::mem::take(&mut *queue);
                queue.extend(queued[i..].iter().cloned());
                queue.extend(newer);
                return Retried::Failed(e);
            }
        }
        if let Some((_, at)) = self.touches.remove(id) {
            if let Err(e) = store.touch(id, at).await {
                self.touch(id, at);
                return Retried::Failed(e);
            }
        }
        if self.reads.remove(id).is_none() {
            return Retried::Done(None);
        }
        match store.get(id).await {
            Ok(found) => Retried::Done(Some(found)),
            Err(e) => {
                self.read(id);
                Retried::Failed(e)
            }
        }
    }
}
