//! The session store trait and its embedded in-memory implementation. A shared store (Redis)
//! implements the same trait; `generation` is its fencing token.

use super::{Binding, GoneReason, Lookup, SessionRecord};
use async_trait::async_trait;
use dashmap::DashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The store is at its configured capacity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreFull {
    /// The configured maximum.
    pub max: usize,
}

/// Where session records live.
#[async_trait]
pub trait SessionStore: Send + Sync + 'static {
    /// Adds a new session, unless the store is full.
    async fn insert(&self, record: SessionRecord) -> Result<(), StoreFull>;
    /// Finds a session by gateway id.
    async fn lookup(&self, id: &str) -> Lookup;
    /// Records use at `now_ms`.
    async fn touch(&self, id: &str, now_ms: u64);
    /// Replaces the binding if the session is still at `expected_generation`; otherwise
    /// returns the current state (someone else re-bound it first).
    async fn rebind(
        &self,
        id: &str,
        expected_generation: u64,
        binding: Binding,
    ) -> Result<SessionRecord, Lookup>;
    /// Marks the binding of `generation` stale (its backend is suspect).
    async fn mark_stale(&self, id: &str, generation: u64);
    /// Stores the `logging/setLevel` params.
    async fn set_log_level(&self, id: &str, params: Arc<str>);
    /// Adds or removes a resource subscription.
    async fn set_subscription(&self, id: &str, uri: Arc<str>, subscribed: bool);
    /// Ends a session, leaving a tombstone with the reason.
    async fn remove(&self, id: &str, reason: GoneReason) -> Option<SessionRecord>;
    /// Ids of sessions not used since `cutoff_ms`.
    async fn idle_since(&self, cutoff_ms: u64) -> Vec<Arc<str>>;
    /// Forgets tombstones older than `cutoff_ms`.
    async fn prune_tombstones(&self, cutoff_ms: u64);
    /// Live sessions.
    fn len(&self) -> usize;
    /// Whether there are no live sessions.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Sessions in this process's memory (the embedded default).
pub struct MemoryStore {
    max: usize,
    live: DashMap<Arc<str>, SessionRecord>,
    gone: DashMap<Arc<str>, (GoneReason, u64)>,
    count: AtomicUsize,
}

impl MemoryStore {
    /// An empty store holding at most `max` sessions.
    pub fn new(max: usize) -> MemoryStore {
        MemoryStore {
            max,
            live: DashMap::new(),
            gone: DashMap::new(),
            count: AtomicUsize::new(0),
        }
    }
}

#[async_trait]
impl SessionStore for MemoryStore {
    async fn insert(&self, record: SessionRecord) -> Result<(), StoreFull> {
        if self.count.fetch_add(1, Ordering::AcqRel) >= self.max {
            self.count.fetch_sub(1, Ordering::AcqRel);
            return Err(StoreFull { max: self.max });
        }
        self.live.insert(record.id.clone(), record);
        Ok(())
    }

    async fn lookup(&self, id: &str) -> Lookup {
        if let Some(r) = self.live.get(id) {
            return Lookup::Live(r.clone());
        }
        match self.gone.get(id) {
            Some(g) => Lookup::Gone(g.0),
            None => Lookup::Unknown,
        }
    }

    async fn touch(&self, id: &str, now_ms: u64) {
        if let Some(mut r) = self.live.get_mut(id) {
            r.last_use_ms = now_ms;
        }
    }

    async fn rebind(
        &self,
        id: &str,
        expected_generation: u64,
        binding: Binding,
    ) -> Result<SessionRecord, Lookup> {
        match self.live.get_mut(id) {
            Some(mut r) if r.binding.generation == expected_generation => {
                r.binding = binding;
                Ok(r.clone())
            }
            Some(r) => Err(Lookup::Live(r.clone())),
            None => Err(self.lookup(id).await),
        }
    }

    async fn mark_stale(&self, id: &str, generation: u64) {
        if let Some(mut r) = self.live.get_mut(id) {
            if r.binding.generation == generation {
                r.binding.stale = true;
            }
        }
    }

    async fn set_log_level(&self, id: &str, params: Arc<str>) {
        if let Some(mut r) = self.live.get_mut(id) {
            r.settings.log_level = Some(params);
        }
    }

    async fn set_subscription(&self, id: &str, uri: Arc<str>, subscribed: bool) {
        if let Some(mut r) = self.live.get_mut(id) {
            let subs = &mut r.settings.subscriptions;
            subs.retain(|u| *u != uri);
            if subscribed {
                subs.push(uri);
            }
        }
    }

    async fn remove(&self, id: &str, reason: GoneReason) -> Option<SessionRecord> {
        let (key, record) = self.live.remove(id)?;
        self.count.fetch_sub(1, Ordering::AcqRel);
        self.gone.insert(key, (reason, record.last_use_ms));
        Some(record)
    }

    async fn idle_since(&self, cutoff_ms: u64) -> Vec<Arc<str>> {
        self.live
            .iter()
            .filter(|r| r.last_use_ms < cutoff_ms)
            .map(|r| r.id.clone())
            .collect()
    }

    async fn prune_tombstones(&self, cutoff_ms: u64) {
        self.gone.retain(|_, (_, at)| *at >= cutoff_ms);
    }

    fn len(&self) -> usize {
        self.count.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::Settings;

    fn record(id: &str, generation: u64) -> SessionRecord {
        SessionRecord {
            id: id.into(),
            pool: "p".into(),
            client: "".into(),
            path: "/mcp".into(),
            init_params: "{}".into(),
            protocol_version: "2025-11-25".into(),
            binding: Binding {
                backend: "127.0.0.1:1".parse().unwrap(),
                backend_session: "b1".into(),
                generation,
                stale: false,
            },
            settings: Settings::default(),
            last_use_ms: 10,
        }
    }

    #[tokio::test]
    async fn rebind_is_fenced_by_generation() {
        let store = MemoryStore::new(10);
        store.insert(record("s", 1)).await.unwrap();
        let mut next = record("s", 2).binding;
        next.backend_session = "b2".into();
        let bound = store.rebind("s", 1, next.clone()).await.unwrap();
        assert_eq!(bound.binding.backend_session.as_ref(), "b2");
        // a second re-binder that read generation 1 loses and sees the winner's binding
        match store.rebind("s", 1, record("s", 2).binding).await {
            Err(Lookup::Live(current)) => assert_eq!(current.binding, next),
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn removed_sessions_leave_a_reason_and_free_capacity() {
        let store = MemoryStore::new(1);
        store.insert(record("a", 1)).await.unwrap();
        assert_eq!(
            store.insert(record("b", 1)).await,
            Err(StoreFull { max: 1 })
        );
        store.remove("a", GoneReason::Deleted).await.unwrap();
        assert!(matches!(
            store.lookup("a").await,
            Lookup::Gone(GoneReason::Deleted)
        ));
        assert!(matches!(store.lookup("zzz").await, Lookup::Unknown));
        store.insert(record("b", 1)).await.unwrap();
        assert_eq!(store.len(), 1);
        store.prune_tombstones(100).await;
        assert!(matches!(store.lookup("a").await, Lookup::Unknown));
    }

    #[tokio::test]
    async fn settings_and_idle_scan() {
        let store = MemoryStore::new(10);
        store.insert(record("a", 1)).await.unwrap();
        store.insert(record("b", 1)).await.unwrap();
        store.touch("b", 500).await;
        store
            .set_log_level("a", r#"{"level":"debug"}"#.into())
            .await;
        store.set_subscription("a", "file:///x".into(), true).await;
        store.set_subscription("a", "file:///y".into(), true).await;
        store.set_subscription("a", "file:///x".into(), false).await;
        let Lookup::Live(a) = store.lookup("a").await else {
            panic!()
        };
        assert_eq!(
            a.settings.log_level.as_deref(),
            Some(r#"{"level":"debug"}"#)
        );
        assert_eq!(
            a.settings.subscriptions,
            vec![Arc::<str>::from("file:///y")]
        );
        assert_eq!(store.idle_since(100).await, vec![Arc::<str>::from("a")]);
    }
}
