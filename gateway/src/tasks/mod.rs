//! Where tasks live (issue 34). A backend that answers a request with a task handle (the
//! Tasks extension's `resultType: "task"`, or a legacy `CreateTaskResult`) keeps that task in
//! its own memory; the gateway records which backend it was ([`TaskRecord`]), bound to the
//! caller's principal, for the task's TTL (at most `tasks.max-ttl-s`), so a `tasks/get`,
//! `tasks/update` or `tasks/cancel` reaches that pod from any replica ([`Tasks::find`]).
//!
//! Records live in this replica's bounded map ([`store::LocalTasks`]) and, with
//! `sessions.store: redis`, in Redis beside the sessions: written when the handle passes
//! (the answer is never held for it), read by a replica that has no copy. The handle itself
//! passes through untouched (`mcp_wire::tasks` reads it).

pub mod errors;
pub mod metrics;
mod misses;
pub mod pinned;
mod record;
pub mod store;

use crate::config::tasks::TasksConfig;
use crate::session::store::{RedisStore, StoreError};
use metrics::TaskMetrics;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use store::{LocalTasks, Refused, TaskStore};

use record::claim_key;
pub use record::{key, owner, Found, TaskRecord};

/// How long a replica that finds no record waits once before it reads the shared store
/// again: the replica that saw the handle writes it while the client reads the answer, so a
/// poll sent at once through another replica can arrive first. Once per key: a key read in
/// vain after the wait is remembered a while, and read without it ([`misses`]).
const SHARED_WRITE_WAIT: Duration = Duration::from_millis(20);

/// The task records and what they decide.
pub struct Tasks {
    local: LocalTasks,
    /// The latest record of each id per scope, whoever's ([`claim_key`]), in the same bounds.
    claims: LocalTasks,
    shared: Option<Arc<dyn TaskStore>>,
    /// Keys just read in vain from `shared`: read again without [`SHARED_WRITE_WAIT`].
    misses: misses::Misses,
    metrics: TaskMetrics,
}

impl Tasks {
    /// Records in this replica only, or also in `shared`.
    pub fn new(shared: Option<Arc<dyn TaskStore>>, metrics: TaskMetrics) -> Arc<Tasks> {
        Arc::new(Tasks {
            local: LocalTasks::default(),
            claims: LocalTasks::default(),
            shared,
            misses: Default::default(),
            metrics,
        })
    }

    /// Records a task handle that just passed (called as the answer streams: never waits).
    /// `ttl_ms` is the server's, bounded by `max-ttl-s`. Returns whether it was recorded.
    pub fn learn(
        self: &Arc<Self>,
        cfg: &TasksConfig,
        scope: &str,
        task_id: &str,
        ttl_ms: Option<u64>,
        mut record: TaskRecord,
    ) -> bool {
        let pool = record.pool.clone();
        if task_id.is_empty() || task_id.len() > cfg.max_id_bytes {
            self.metrics.count(&pool, "unrecorded");
            tracing::debug!(pool, "a task id over tasks.max-id-bytes: not recorded");
            return false;
        }
        let max_ms = cfg.max_ttl.as_millis() as u64;
        let ttl = Duration::from_millis(ttl_ms.map_or(max_ms, |t| t.min(max_ms)).max(1));
        let now = crate::session::now_ms();
        record.expires_ms = now + ttl.as_millis() as u64;
        let key = key(scope, record.principal.as_ref(), task_id);
        let claim = claim_key(scope, task_id);
        let kept = self.local.put(
            key.clone(),
            record.clone(),
            cfg.max_records,
            cfg.max_per_principal,
            now,
        );
        self.metrics
            .records
            .with_label_values::<&str>(&[])
            .set(self.local.len() as i64);
        if let Err(why) = kept {
            self.metrics.count(&pool, "unrecorded");
            let bound = match why {
                Refused::Full => "tasks.max-records",
                Refused::OwnerFull => "tasks.max-per-principal",
            };
            tracing::warn!(
                pool,
                bound,
                "a task handle was not recorded: its polls are balanced"
            );
            return false;
        }
        // within the same bounds; a claim not kept only lets another principal's request
        // for this id be balanced, as before any record
        let _ = self.claims.put(
            claim.clone(),
            record.clone(),
            cfg.max_records,
            cfg.max_per_principal,
            now,
        );
        self.metrics.count(&pool, "created");
        if let Some(shared) = self.shared.clone() {
            tokio::spawn(async move {
                let written = match shared.put_task(&key, &record, ttl).await {
                    Ok(()) => shared.put_task(&claim, &record, ttl).await,
                    failed => failed,
                };
                if let Err(e) = written {
                    tracing::warn!(error = %e, "a task record was not written to the shared store");
                }
            });
        }
        true
    }

    /// What the gateway knows of the task `task_id` in `scope` for `principal` (a record read
    /// from the shared store is kept here within `cfg`'s bounds).
    pub async fn find(
        &self,
        cfg: &TasksConfig,
        scope: &str,
        task_id: &str,
        principal: Option<&Arc<str>>,
    ) -> Result<Found, StoreError> {
        let key = key(scope, principal, task_id);
        let now = crate::session::now_ms();
        let record = match self.local.get(&key, now) {
            Ok(Some(r)) => Some(r),
            Err(()) => {
                self.expired_one(scope);
                None
            }
            Ok(None) => self.read_shared(cfg, &key, now).await?.map(Arc::new),
        };
        if let Some(r) = record.filter(|r| r.principal.as_ref() == principal) {
            return Ok(Found::Mine(r));
        }
        // not the caller's: someone else's, or no one's
        let claim = claim_key(scope, task_id);
        let claimed = match self.claims.get(&claim, now) {
            Ok(Some(r)) => Some(r),
            Err(()) => None,
            Ok(None) => match self.shared.as_ref() {
                Some(shared) => shared.get_task(&claim).await?.map(Arc::new),
                None => None,
            },
        };
        Ok(match claimed {
            Some(c) if c.expires_ms > now && c.principal.as_ref() != principal => Found::Foreign,
            _ => Found::Unknown,
        })
    }

    /// Counts one `event` of `pool`.
    pub fn count(&self, pool: &str, event: &str) {
        self.metrics.count(pool, event);
    }

    /// Live records per pool and backend, of this replica (the admin API): (pool, backend,
    /// records, of which not ended).
    pub fn per_backend(&self) -> Vec<(String, SocketAddr, usize, usize)> {
        self.local.per_backend(crate::session::now_ms())
    }

    /// A request for `principal`'s task `task_id` of `scope` was answered with the task ended: its
    /// record says so (here and in the shared store), so a draining pod stops waiting for it.
    pub fn ended(self: &Arc<Self>, scope: &str, task_id: &str, principal: Option<&Arc<str>>) {
        let key = key(scope, principal, task_id);
        let now = crate::session::now_ms();
        let Some(record) = self.local.end(&key, now) else {
            return;
        };
        if let Some(shared) = self.shared.clone() {
            let ttl = Duration::from_millis(record.expires_ms.saturating_sub(now).max(1));
            tokio::spawn(async move {
                if let Err(e) = shared.put_task(&key, &record, ttl).await {
                    tracing::warn!(error = %e, "a task record was not written to the shared store");
                }
            });
        }
    }

    /// Drops expired records (the admin API and tests read counts after it).
    pub fn sweep(&self) {
        let now = crate::session::now_ms();
        self.claims.sweep(now);
        self.misses.sweep(now);
        let n = self.local.sweep(now);
        if n > 0 {
            self.metrics
                .events
                .with_label_values(&["-", "expired"])
                .inc_by(n as u64);
        }
        self.metrics
            .records
            .with_label_values::<&str>(&[])
            .set(self.local.len() as i64);
    }

    fn expired_one(&self, _scope: &str) {
        self.metrics
            .events
            .with_label_values(&["-", "expired"])
            .inc();
        self.metrics
            .records
            .with_label_values::<&str>(&[])
            .set(self.local.len() as i64);
    }

    /// The record under `key` in the shared store; waits [`SHARED_WRITE_WAIT`] and reads again
    /// when there is none, unless `key` was read in vain a moment ago.
    async fn read_shared(
        &self,
        cfg: &TasksConfig,
        key: &Arc<str>,
        now: u64,
    ) -> Result<Option<TaskRecord>, StoreError> {
        let Some(shared) = self.shared.as_ref() else {
            return Ok(None);
        };
        let mut found = shared.get_task(key).await?;
        if found.is_none() && !self.misses.recent(key, now) {
            tokio::time::sleep(SHARED_WRITE_WAIT).await;
            found = shared.get_task(key).await?;
        }
        let found = found.filter(|r| r.expires_ms > now);
        match &found {
            None => self.misses.remember(key, now),
            Some(r) => {
                self.misses.forget(key);
                // a copy for this replica's next poll, within the bounds its own records
                // have (unbounded, records read from the store grew the map past them)
                let _ = self.local.put(
                    key.clone(),
                    r.clone(),
                    cfg.max_records,
                    cfg.max_per_principal,
                    now,
                );
            }
        }
        Ok(found)
    }
}

impl crate::upstream::HeldWork for Tasks {
    fn holding(&self, pool: &str) -> std::collections::HashSet<SocketAddr> {
        self.local.open_backends(pool, crate::session::now_ms())
    }
}

/// Whether a pod's answer to a request for `task_id` says it does not know the task: a
/// JSON-RPC error -32602 (invalid params) whose message names the id, as the SDKs answer an id
/// they never issued (rmcp 3.11: `unknown task: ID`; PyPI `mcp` 1.30: `Task not found: ID`).
pub fn says_unknown(sse: bool, answer: &[u8], task_id: &str) -> bool {
    // most answers are the task: a cheap look for the error code before parsing
    if memchr::memmem::find(answer, b"-32602").is_none() {
        return false;
    }
    let message = if sse {
        mcp_wire::sse::response(Some("text/event-stream"), answer)
    } else {
        serde_json::from_slice(answer).ok()
    };
    let Some(message) = message else {
        return false;
    };
    let error = &message["error"];
    error["code"].as_i64() == Some(-32602)
        && error["message"].as_str().is_some_and(|m| {
            m.contains(task_id) && {
                let m = m.to_ascii_lowercase();
                m.contains("unknown") || m.contains("not found")
            }
        })
}

/// Task records in Redis, beside the sessions: one key per task (`<prefix>task:<scope>\n<id>`),
/// expiring with the record.
pub struct RedisTasks(pub Arc<RedisStore>);

#[async_trait::async_trait]
impl TaskStore for RedisTasks {
    async fn put_task(
        &self,
        key: &str,
        record: &TaskRecord,
        ttl: Duration,
    ) -> Result<(), StoreError> {
        let value = serde_json::to_string(record).map_err(|e| StoreError {
            detail: e.to_string(),
        })?;
        self.0.put_value(&format!("task:{key}"), &value, ttl).await
    }

    async fn get_task(&self, key: &str) -> Result<Option<TaskRecord>, StoreError> {
        let Some(value) = self.0.get_value(&format!("task:{key}")).await? else {
            return Ok(None);
        };
        serde_json::from_str(&value)
            .map(Some)
            .map_err(|e| StoreError {
                detail: format!("a task record that does not read: {e}"),
            })
    }
}

#[cfg(test)]
mod tests;
