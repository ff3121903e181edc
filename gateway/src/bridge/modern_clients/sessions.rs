//! The pooled backend sessions of this process (`Sessions`): the table by `Key`, a session
//! taken or opened for a request (`acquire`, counted in flight while `InUse`), an anonymous
//! caller's closed after its call, one dropped when its backend forgot it, and the sweep that
//! closes idle ones (DELETE upstream); `room.rs` makes room within the bounds.

use super::acquire_error::AcquireError;
use super::entry::Entry;
use super::key::Key;
use super::open;
use super::owner::Owner;
use crate::auth::Caller;
use crate::bridge::metrics::BridgeMetrics;
use crate::config::PooledSessions;
use crate::sync::lock;
use crate::upstream::attempt::Engine;
use crate::upstream::{Backend, Pool};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use tokio::sync::OnceCell;

/// How often idle pooled sessions are looked for.
const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// A pooled session in use by one request; counted in flight until dropped (then closed when
/// it is an anonymous caller's).
pub(crate) struct InUse(pub(crate) Arc<Entry>, Option<Sessions>);

impl Drop for InUse {
    fn drop(&mut self) {
        *lock(&self.0.last_use) = Instant::now();
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
        if let Some(sessions) = &self.1 {
            sessions.retire(&self.0);
        }
    }
}

pub(super) type Slot = Arc<OnceCell<Arc<Entry>>>;

/// A place in the table: its owner (counted in its share while it opens, too) and its slot.
pub(super) struct Held {
    pub(super) owner: Owner,
    pub(super) slot: Slot,
}

/// The pooled backend sessions of this process.
pub struct Sessions {
    pub(super) inner: Arc<Inner>,
}

pub(super) struct Inner {
    engine: Arc<Engine>,
    metrics: BridgeMetrics,
    pub(super) table: Mutex<HashMap<Key, Held>>,
    /// `idle-s` of the running config, in seconds (read by the sweep).
    idle_s: AtomicU64,
    sweeping: OnceLock<()>,
    next_id: AtomicU64,
    /// Makes an anonymous caller's key unique to its call.
    next_single: AtomicU64,
}

/// How a pooled session was found.
pub(crate) enum Acquired {
    /// One already open.
    Reused(InUse),
    /// Opened for this request.
    Opened(InUse),
}

impl Acquired {
    pub(crate) fn into_inner(self) -> InUse {
        match self {
            Acquired::Reused(u) | Acquired::Opened(u) => u,
        }
    }
}

impl Sessions {
    /// An empty table sending through `engine`, counted into `metrics`.
    pub fn new(engine: Arc<Engine>, metrics: BridgeMetrics) -> Sessions {
        Sessions {
            inner: Arc::new(Inner {
                engine,
                metrics,
                table: Mutex::new(HashMap::new()),
                idle_s: AtomicU64::new(60),
                sweeping: OnceLock::new(),
                next_id: AtomicU64::new(1),
                next_single: AtomicU64::new(1),
            }),
        }
    }

    /// A fresh id for a request the gateway sends in a pooled session.
    pub(crate) fn next_id(&self) -> String {
        let n = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        format!("mcpgw-pool-{n}")
    }

    fn metrics(&self) -> &BridgeMetrics {
        &self.inner.metrics
    }

    /// The pooled session for `key` (opened with `init_params` when there is none yet: one
    /// opening per key at a time, later requests wait for it), counted in flight. Without a
    /// principal the key is made unique to this call: a session of its own, closed after it.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn acquire(
        &self,
        pool: &Arc<Pool>,
        backend: &Arc<Backend>,
        mut key: Key,
        init_params: &str,
        caller: &Caller,
        owner: &Owner,
        bounds: PooledSessions,
    ) -> Result<Acquired, AcquireError> {
        self.inner
            .idle_s
            .store(bounds.idle.as_secs().max(1), Ordering::Relaxed);
        self.start_sweep();
        let single_use = key.principal.is_none();
        if single_use {
            // anonymous keys are never looked up by another call: no two share a session
            let n = self.inner.next_single.fetch_add(1, Ordering::Relaxed);
            key.digest[24..].copy_from_slice(&n.to_be_bytes());
        }
        let slot = self.slot(&pool.name, &key, owner, bounds)?;
        let mut opened = false;
        let entry = slot
            .get_or_try_init(|| async {
                opened = true;
                open::open(
                    &self.inner.engine,
                    pool,
                    backend,
                    key.clone(),
                    init_params,
                    caller,
                )
                .await
            })
            .await;
        let entry = match entry {
            Ok(e) => e.clone(),
            Err(e) => {
                self.forget(&key, &slot);
                return Err(e);
            }
        };
        entry.in_flight.fetch_add(1, Ordering::AcqRel);
        let retire = single_use.then(|| Sessions {
            inner: self.inner.clone(),
        });
        let used = InUse(entry, retire);
        if used.0.is_gone() {
            // dropped while this request waited for it: open another
            drop(used);
            let again = self.acquire(pool, backend, key, init_params, caller, owner, bounds);
            return Box::pin(again).await;
        }
        let event = if opened { "opened" } else { "reused" };
        self.metrics()
            .pooled_session_events
            .with_label_values(&[&pool.name, event])
            .inc();
        if opened {
            self.gauge(&pool.name, 1);
            Ok(Acquired::Opened(used))
        } else {
            Ok(Acquired::Reused(used))
        }
    }

    fn forget(&self, key: &Key, slot: &Slot) {
        let mut table = lock(&self.inner.table);
        if table.get(key).is_some_and(|h| Arc::ptr_eq(&h.slot, slot)) {
            table.remove(key);
        }
    }

    /// Closes an anonymous caller's session once its call is done (DELETE upstream), unless
    /// it was dropped already.
    fn retire(&self, entry: &Arc<Entry>) {
        if self.unlink(entry) {
            self.count(&entry.pool.name, "closed");
            self.gauge(&entry.pool.name, -1);
            let engine = &self.inner.engine;
            engine.spawn_delete_session(
                entry.pool.clone(),
                entry.backend.clone(),
                entry.session.clone(),
                entry.caller.clone(),
            );
        }
    }

    /// Drops a pooled session the backend forgot or that died with its backend: no request
    /// uses it again (nothing is sent upstream).
    pub(crate) fn drop_entry(&self, entry: &Arc<Entry>) {
        if self.unlink(entry) {
            self.count(&entry.pool.name, "dropped");
            self.gauge(&entry.pool.name, -1);
            tracing::debug!(backend = %entry.backend.label, "pooled backend session dropped");
        }
    }

    /// Removes `entry` from the table; whether it was there.
    fn unlink(&self, entry: &Arc<Entry>) -> bool {
        if entry.gone.swap(true, Ordering::AcqRel) {
            return false;
        }
        let mut table = lock(&self.inner.table);
        let ours = table
            .get(&entry.key)
            .and_then(|h| h.slot.get())
            .is_some_and(|e| Arc::ptr_eq(e, entry));
        if ours {
            table.remove(&entry.key);
        }
        true
    }

    /// Closes a pooled session: out of the table, DELETE upstream in the background.
    pub(super) fn close(&self, entry: &Arc<Entry>, why: &str) {
        entry.gone.store(true, Ordering::Release);
        self.count(&entry.pool.name, why);
        self.gauge(&entry.pool.name, -1);
        let (engine, entry) = (self.inner.engine.clone(), entry.clone());
        engine.spawn_delete_session(
            entry.pool.clone(),
            entry.backend.clone(),
            entry.session.clone(),
            entry.caller.clone(),
        );
    }

    pub(super) fn count(&self, pool: &str, event: &str) {
        self.metrics()
            .pooled_session_events
            .with_label_values(&[pool, event])
            .inc();
    }

    fn gauge(&self, pool: &str, by: i64) {
        self.metrics()
            .pooled_sessions
            .with_label_values(&[pool])
            .add(by);
    }

    /// Closes the idle sessions older than the configured `idle-s` (DELETE upstream).
    pub(crate) fn sweep(&self) {
        let idle = Duration::from_secs(self.inner.idle_s.load(Ordering::Relaxed));
        let expired: Vec<Arc<Entry>> = {
            let mut table = lock(&self.inner.table);
            let keys: Vec<Key> = table
                .iter()
                .filter_map(|(k, h)| h.slot.get().map(|e| (k, e)))
                .filter(|(_, e)| e.in_flight.load(Ordering::Acquire) == 0 && e.idle_for() >= idle)
                .map(|(k, _)| k.clone())
                .collect();
            keys.iter()
                .filter_map(|k| table.remove(k))
                .filter_map(|h| h.slot.get().cloned())
                .collect()
        };
        for entry in expired {
            tracing::debug!(backend = %entry.backend.label, "pooled backend session expired");
            self.close(&entry, "expired");
        }
    }

    fn start_sweep(&self) {
        self.inner.sweeping.get_or_init(|| {
            let me = Sessions {
                inner: self.inner.clone(),
            };
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(SWEEP_EVERY).await;
                    me.sweep();
                }
            });
        });
    }
}
