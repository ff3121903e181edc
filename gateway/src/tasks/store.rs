//! Where task records live: this replica's bounded map ([`LocalTasks`]), and behind it, with
//! `sessions.store: redis`, the shared store every replica reads ([`TaskStore`], implemented
//! by `session::store::RedisStore`: one key per task, expiring with the task).

use super::TaskRecord;
use crate::session::store::StoreError;
use async_trait::async_trait;
use dashmap::DashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A store of task records shared by replicas.
#[async_trait]
pub trait TaskStore: Send + Sync + 'static {
    /// Keeps `record` under `key` for `ttl`.
    async fn put_task(
        &self,
        key: &str,
        record: &TaskRecord,
        ttl: Duration,
    ) -> Result<(), StoreError>;
    /// The record under `key`, if it is still kept.
    async fn get_task(&self, key: &str) -> Result<Option<TaskRecord>, StoreError>;
}

/// Why a record was not kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// `max-records` are kept (none of them expired).
    Full,
    /// Its owner holds `max-per-principal` records.
    OwnerFull,
}

/// This replica's records, bounded in all and per owner; a record past its expiry is gone
/// (dropped when met, and swept when the map is full).
#[derive(Default)]
pub struct LocalTasks {
    /// Shared, so a lookup on every task request copies a pointer, not the record.
    records: DashMap<Arc<str>, Arc<TaskRecord>>,
    owners: DashMap<Arc<str>, usize>,
    len: AtomicUsize,
}

impl LocalTasks {
    /// Keeps `record` under `key` (replacing what was there), within the bounds.
    pub fn put(
        &self,
        key: Arc<str>,
        record: TaskRecord,
        max: usize,
        max_per_owner: usize,
        now_ms: u64,
    ) -> Result<(), Refused> {
        if let Some(mut old) = self.records.get_mut(&key) {
            if old.owner == record.owner {
                *old = Arc::new(record);
                return Ok(());
            }
        }
        if self.len.load(Ordering::Relaxed) >= max && self.sweep(now_ms) == 0 {
            return Err(Refused::Full);
        }
        let owned = self.owners.get(&record.owner).map_or(0, |n| *n);
        if owned >= max_per_owner {
            // its own expired records may be what holds the share
            self.sweep(now_ms);
            if self.owners.get(&record.owner).map_or(0, |n| *n) >= max_per_owner {
                return Err(Refused::OwnerFull);
            }
        }
        *self.owners.entry(record.owner.clone()).or_insert(0) += 1;
        if let Some(old) = self.records.insert(key, Arc::new(record)) {
            self.uncount(&old.owner);
        } else {
            self.len.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }

    /// The live record under `key`; an expired one is dropped (`Err(())` tells the caller it
    /// expired).
    pub fn get(&self, key: &str, now_ms: u64) -> Result<Option<Arc<TaskRecord>>, ()> {
        let Some(found) = self.records.get(key).map(|r| r.clone()) else {
            return Ok(None);
        };
        if found.expires_ms > now_ms {
            return Ok(Some(found));
        }
        self.remove(key);
        Err(())
    }

    /// Forgets the record under `key`.
    pub fn remove(&self, key: &str) {
        if let Some((_, old)) = self.records.remove(key) {
            self.len.fetch_sub(1, Ordering::Relaxed);
            self.uncount(&old.owner);
        }
    }

    /// Records kept.
    pub fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }

    /// Drops every expired record; how many.
    pub fn sweep(&self, now_ms: u64) -> usize {
        let expired: Vec<Arc<str>> = self
            .records
            .iter()
            .filter(|r| r.expires_ms <= now_ms)
            .map(|r| r.key().clone())
            .collect();
        for key in &expired {
            self.remove(key);
        }
        expired.len()
    }

    /// Marks the live record under `key` ended; the record as it is now, if there is one
    /// that was not ended yet.
    pub fn end(&self, key: &str, now_ms: u64) -> Option<TaskRecord> {
        let mut record = self.records.get_mut(key)?;
        if record.ended || record.expires_ms <= now_ms {
            return None;
        }
        Arc::make_mut(&mut record).ended = true;
        Some(TaskRecord::clone(&record))
    }

    /// Live records per pool and backend, and how many of them have not ended (the admin
    /// API).
    pub fn per_backend(&self, now_ms: u64) -> Vec<(String, std::net::SocketAddr, usize, usize)> {
        let mut counts: std::collections::BTreeMap<(String, std::net::SocketAddr), (usize, usize)> =
            Default::default();
        for r in self.records.iter().filter(|r| r.expires_ms > now_ms) {
            let n = counts.entry((r.pool.clone(), r.backend)).or_default();
            n.0 += 1;
            n.1 += usize::from(!r.ended);
        }
        counts
            .into_iter()
            .map(|((p, b), (n, open))| (p, b, n, open))
            .collect()
    }

    /// The backends of `pool` holding a live task that has not ended (a draining pod stays
    /// in its pool while it holds one). One pass over the records: called once per discovery
    /// round, never per request.
    pub fn open_backends(
        &self,
        pool: &str,
        now_ms: u64,
    ) -> std::collections::HashSet<std::net::SocketAddr> {
        self.records
            .iter()
            .filter(|r| r.pool == pool && !r.ended && r.expires_ms > now_ms)
            .map(|r| r.backend)
            .collect()
    }

    fn uncount(&self, owner: &Arc<str>) {
        let empty = match self.owners.get_mut(owner) {
            Some(mut n) => {
                *n = n.saturating_sub(1);
                *n == 0
            }
            None => false,
        };
        if empty {
            self.owners.remove_if(owner, |_, n| *n == 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(owner: &str, expires_ms: u64) -> TaskRecord {
        TaskRecord {
            pool: "p".into(),
            backend: "127.0.0.1:1".parse().unwrap(),
            principal: None,
            owner: owner.into(),
            expires_ms,
            generation: None,
            ended: false,
        }
    }

    #[test]
    fn bounded_in_all_and_per_owner_and_expired_records_make_room() {
        let t = LocalTasks::default();
        for i in 0..3 {
            let key: Arc<str> = format!("k{i}").into();
            t.put(key, record("a", 100), 4, 3, 0).unwrap();
        }
        assert_eq!(
            t.put("k3".into(), record("a", 100), 4, 3, 0),
            Err(Refused::OwnerFull)
        );
        t.put("k3".into(), record("b", 100), 4, 3, 0).unwrap();
        assert_eq!(
            t.put("k4".into(), record("c", 100), 4, 3, 0),
            Err(Refused::Full)
        );
        // at time 100 every record has expired: the sweep makes room
        t.put("k4".into(), record("c", 200), 4, 3, 100).unwrap();
        assert_eq!(t.len(), 1);
        assert_eq!(t.get("k0", 100), Ok(None));
        assert!(t.get("k4", 150).unwrap().is_some());
        assert_eq!(t.get("k4", 200), Err(()));
        assert_eq!(t.len(), 0);
        assert!(t.owners.is_empty());
    }

    #[test]
    fn an_ended_task_no_longer_holds_its_backend() {
        let t = LocalTasks::default();
        t.put("k0".into(), record("a", 100), 4, 3, 0).unwrap();
        t.put("k1".into(), record("a", 100), 4, 3, 0).unwrap();
        let pod = "127.0.0.1:1".parse().unwrap();
        assert!(t.open_backends("p", 0).contains(&pod));
        assert!(t.end("k0", 0).is_some_and(|r| r.ended));
        assert!(t.end("k0", 0).is_none(), "ended once");
        assert!(t.open_backends("p", 0).contains(&pod), "k1 is still open");
        t.end("k1", 0);
        assert!(t.open_backends("p", 0).is_empty());
        assert!(t.open_backends("q", 0).is_empty());
        assert_eq!(t.per_backend(0), vec![("p".to_owned(), pod, 2, 0)]);
        // expired records hold nothing
        t.put("k2".into(), record("a", 100), 4, 3, 0).unwrap();
        assert!(t.open_backends("p", 100).is_empty());
    }

    #[test]
    fn a_key_taken_by_another_owner_moves_its_count() {
        let t = LocalTasks::default();
        t.put("k".into(), record("a", 100), 4, 3, 0).unwrap();
        t.put("k".into(), record("b", 100), 4, 3, 0).unwrap();
        assert_eq!(t.len(), 1);
        assert_eq!(&*t.get("k", 0).unwrap().unwrap().owner, "b");
        assert_eq!(t.owners.get("a").map(|n| *n), None);
    }
}
