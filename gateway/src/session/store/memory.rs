//! Sessions in this process's memory (the embedded default store).
//!
//! Expiry without scanning: every live session has an entry in a min-heap of due times. A
//! `touch` only updates the record; when an entry comes due, a session used since then is
//! pushed back with its real due time, so the sweep costs O(sessions due) rather than
//! O(sessions). Tombstones are kept in the order they were made and forgotten from the front.

use super::{CreateError, Hold, LeaseMap, Quota, Rebound, SessionStore, StoreError, Ttl};
use crate::session::{now_ms, Binding, GoneReason, Lookup, SessionRecord, SettingChange};
use async_trait::async_trait;
use dashmap::DashMap;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Most tombstones kept: beyond it the oldest is forgotten first (its id then reads as
/// unknown rather than deleted, which a client answers the same way), so ending sessions in a
/// loop cannot grow memory for the whole tombstone time.
pub const MAX_TOMBSTONES: usize = 10_000;

/// Due times, earliest first: (due at, session id).
type DueQueue = BinaryHeap<Reverse<(u64, Arc<str>)>>;

/// Sessions in this process's memory.
pub struct MemoryStore {
    live: DashMap<Arc<str>, SessionRecord>,
    gone: DashMap<Arc<str>, GoneReason>,
    /// Tombstones oldest first: (made at, id).
    gone_order: Mutex<VecDeque<(u64, Arc<str>)>>,
    /// When each live session may expire, earliest first (lazily corrected on `touch`).
    due: Mutex<DueQueue>,
    count: AtomicUsize,
    /// The ids of the live sessions on each backend of each pool: its counts and the index
    /// a dead backend's sessions are found by.
    per_backend: DashMap<(Arc<str>, SocketAddr), HashSet<Arc<str>>>,
    per_client: DashMap<Arc<str>, usize>,
    idle_ms: AtomicU64,
    tombstone_ms: AtomicU64,
    /// Stream leases (`lease.rs`).
    leases: LeaseMap,
}

/// A poisoned lock only means another thread panicked while holding it; the data (a queue of
/// hints) is still usable.
use crate::sync::lock;

impl MemoryStore {
    /// An empty store whose records and tombstones live as long as `ttl` says.
    pub fn new(ttl: Ttl) -> MemoryStore {
        MemoryStore {
            live: DashMap::new(),
            gone: DashMap::new(),
            gone_order: Mutex::new(VecDeque::new()),
            due: Mutex::new(BinaryHeap::new()),
            count: AtomicUsize::new(0),
            per_backend: DashMap::new(),
            per_client: DashMap::new(),
            idle_ms: AtomicU64::new(ttl.idle.as_millis() as u64),
            tombstone_ms: AtomicU64::new(ttl.tombstone.as_millis() as u64),
            leases: LeaseMap::default(),
        }
    }

    fn idle_ms(&self) -> u64 {
        self.idle_ms.load(Ordering::Relaxed)
    }

    fn count_backend(&self, pool: &Arc<str>, addr: SocketAddr, id: &Arc<str>, opened: bool) {
        let key = (pool.clone(), addr);
        if opened {
            self.per_backend.entry(key).or_default().insert(id.clone());
        } else {
            self.per_backend.remove_if_mut(&key, |_, ids| {
                ids.remove(id);
                ids.is_empty()
            });
        }
    }

    fn uncount_client(&self, client: &str) {
        if !client.is_empty() {
            self.per_client.remove_if_mut(client, |_, n| {
                *n = n.saturating_sub(1);
                *n == 0
            });
        }
    }

    /// Removes a live session and leaves its tombstone.
    fn remove(&self, id: &str, reason: GoneReason) -> Option<SessionRecord> {
        let (key, record) = self.live.remove(id)?;
        self.leases.forget(id);
        self.count.fetch_sub(1, Ordering::AcqRel);
        self.count_backend(&record.pool, record.binding.backend, &record.id, false);
        self.uncount_client(&record.client);
        self.gone.insert(key.clone(), reason);
        let mut order = lock(&self.gone_order);
        order.push_back((now_ms(), key));
        while order.len() > MAX_TOMBSTONES {
            if let Some((_, oldest)) = order.pop_front() {
                self.gone.remove(&oldest);
            }
        }
        drop(order);
        Some(record)
    }
}

#[async_trait]
impl SessionStore for MemoryStore {
    async fn create(&self, record: SessionRecord, quota: Quota) -> Result<(), CreateError> {
        if self.count.fetch_add(1, Ordering::AcqRel) >= quota.max_sessions {
            self.count.fetch_sub(1, Ordering::AcqRel);
            return Err(CreateError::Full {
                max: quota.max_sessions,
            });
        }
        if let (Some(max), false) = (quota.max_per_client, record.client.is_empty()) {
            let mut held = self.per_client.entry(record.client.clone()).or_insert(0);
            if *held >= max {
                drop(held);
                self.count.fetch_sub(1, Ordering::AcqRel);
                return Err(CreateError::ClientFull { max });
            }
            *held += 1;
        } else if !record.client.is_empty() {
            *self.per_client.entry(record.client.clone()).or_insert(0) += 1;
        }
        self.count_backend(&record.pool, record.binding.backend, &record.id, true);
        let due = record.last_use_ms + self.idle_ms();
        lock(&self.due).push(Reverse((due, record.id.clone())));
        self.live.insert(record.id.clone(), record);
        Ok(())
    }

    async fn get(&self, id: &str) -> Result<Lookup, StoreError> {
        if let Some(r) = self.live.get(id) {
            return Ok(Lookup::Live(r.clone()));
        }
        Ok(match self.gone.get(id) {
            Some(g) => Lookup::Gone(*g),
            None => Lookup::Unknown,
        })
    }

    async fn touch(&self, id: &str, now_ms: u64) -> Result<(), StoreError> {
        if let Some(mut r) = self.live.get_mut(id) {
            r.last_use_ms = r.last_use_ms.max(now_ms);
        }
        Ok(())
    }

    async fn rebind(
        &self,
        id: &str,
        expected_generation: u64,
        binding: Binding,
    ) -> Result<Rebound, StoreError> {
        let (record, old) = match self.live.get_mut(id) {
            Some(mut r) if r.binding.generation == expected_generation => {
                let old = r.binding.backend;
                r.binding = binding;
                (r.clone(), old)
            }
            Some(r) => return Ok(Rebound::Lost(Lookup::Live(r.clone()))),
            None => return Ok(Rebound::Lost(self.get(id).await?)),
        };
        self.count_backend(&record.pool, old, &record.id, false);
        self.count_backend(&record.pool, record.binding.backend, &record.id, true);
        Ok(Rebound::Won(record))
    }

    async fn mark_stale(&self, id: &str, generation: u64) -> Result<(), StoreError> {
        if let Some(mut r) = self.live.get_mut(id) {
            if r.binding.generation == generation {
                r.binding.stale = true;
            }
        }
        Ok(())
    }

    async fn update_settings(&self, id: &str, change: SettingChange) -> Result<(), StoreError> {
        if let Some(mut r) = self.live.get_mut(id) {
            r.settings.apply(change);
        }
        Ok(())
    }

    async fn end(&self, id: &str, reason: GoneReason) -> Result<Option<SessionRecord>, StoreError> {
        Ok(self.remove(id, reason))
    }

    async fn hold_lease(
        &self,
        id: &str,
        owner: &str,
        ttl: std::time::Duration,
    ) -> Result<Hold, StoreError> {
        if !self.live.contains_key(id) {
            return Ok(Hold::Gone);
        }
        Ok(self.leases.hold(id, owner, ttl))
    }

    async fn release_lease(&self, id: &str, owner: &str) -> Result<(), StoreError> {
        self.leases.release(id, owner);
        Ok(())
    }

    async fn take_expired(
        &self,
        now_ms: u64,
        max: usize,
    ) -> Result<Vec<SessionRecord>, StoreError> {
        let idle = self.idle_ms();
        let mut expired = Vec::new();
        while expired.len() < max {
            let id = {
                let mut due = lock(&self.due);
                match due.peek() {
                    Some(Reverse((at, _))) if *at <= now_ms => {}
                    _ => break,
                }
                match due.pop() {
                    Some(Reverse((_, id))) => id,
                    None => break,
                }
            };
            let real_due = match self.live.get(&id) {
                Some(r) => r.last_use_ms + idle,
                None => continue, // ended meanwhile
            };
            if real_due > now_ms {
                lock(&self.due).push(Reverse((real_due, id)));
            } else if let Some(record) = self.remove(&id, GoneReason::Expired) {
                expired.push(record);
            }
        }
        let keep = self.tombstone_ms.load(Ordering::Relaxed);
        // (the count cap is kept where tombstones are made, in `remove`)
        let mut order = lock(&self.gone_order);
        while let Some((at, _)) = order.front() {
            if at + keep > now_ms {
                break;
            }
            if let Some((_, id)) = order.pop_front() {
                self.gone.remove(&id);
            }
        }
        Ok(expired)
    }

    async fn count(&self) -> Result<usize, StoreError> {
        Ok(self.count.load(Ordering::Acquire))
    }

    async fn backend_counts(&self, pool: &str) -> Result<Vec<(SocketAddr, usize)>, StoreError> {
        Ok(self
            .per_backend
            .iter()
            .filter(|e| &*e.key().0 == pool)
            .map(|e| (e.key().1, e.value().len()))
            .collect())
    }

    async fn sessions_on(
        &self,
        pool: &str,
        backend: SocketAddr,
    ) -> Result<Vec<Arc<str>>, StoreError> {
        let key = (Arc::<str>::from(pool), backend);
        Ok(self
            .per_backend
            .get(&key)
            .map_or_else(Vec::new, |ids| ids.iter().cloned().collect()))
    }

    async fn client_count(&self, client: &str) -> Result<usize, StoreError> {
        Ok(self.per_client.get(client).map_or(0, |n| *n))
    }

    fn set_ttl(&self, ttl: Ttl) {
        let idle = ttl.idle.as_millis() as u64;
        self.tombstone_ms
            .store(ttl.tombstone.as_millis() as u64, Ordering::Relaxed);
        if self.idle_ms.swap(idle, Ordering::Relaxed) != idle {
            // Due times change for everyone: rebuild the queue once.
            let rebuilt = self
                .live
                .iter()
                .map(|r| Reverse((r.last_use_ms + idle, r.id.clone())))
                .collect();
            *lock(&self.due) = rebuilt;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn ending_sessions_in_a_loop_keeps_at_most_the_tombstone_cap() {
        let ttl = Ttl {
            idle: std::time::Duration::from_secs(1800),
            tombstone: std::time::Duration::from_secs(1800),
        };
        let store = MemoryStore::new(ttl);
        let quota = Quota {
            max_sessions: usize::MAX,
            max_per_client: None,
        };
        let mut last = String::new();
        for _ in 0..MAX_TOMBSTONES + 500 {
            let record = super::super::suite::record("c", 1, now_ms());
            last = record.id.to_string();
            store.create(record, quota).await.expect("created");
            store.end(&last, GoneReason::Deleted).await.expect("ended");
        }
        assert_eq!(store.gone.len(), MAX_TOMBSTONES);
        assert_eq!(lock(&store.gone_order).len(), MAX_TOMBSTONES);
        assert!(matches!(
            store.get(&last).await,
            Ok(Lookup::Gone(GoneReason::Deleted))
        ));
    }

    #[tokio::test]
    async fn the_memory_store_passes_the_store_suite() {
        super::super::suite::run_all(|ttl| Arc::new(MemoryStore::new(ttl))).await;
    }
}
