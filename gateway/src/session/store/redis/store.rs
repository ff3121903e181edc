//! `RedisStore`: the sessions in Redis and its `SessionStore` implementation, under the key
//! layout `mod.rs` describes (scripts and decoding in `layout.rs`).

use super::super::{CreateError, Hold, Quota, Rebound, SessionStore, StoreError, Ttl};
use super::conn::Conn;
use super::holder::Holder;
use super::layout::{
    decode, failed, json, parse_reason, Base, CLAIM_EXPIRED, CREATE, END, MARK_STALE, REBIND,
    SETTINGS, TOUCH,
};
use super::timeout::TIMEOUT;
use super::RedisConfig;
use crate::session::{Binding, GoneReason, Lookup, SessionRecord, SettingChange, Settings};
use async_trait::async_trait;
use redis::{Cmd, Pipeline, Script};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Sessions in Redis.
pub struct RedisStore {
    pub(super) config: RedisConfig,
    conn: Holder,
    idle_ms: AtomicU64,
    /// The longest idle timeout this store has had: due times written under it may be that
    /// much later than the current one says.
    max_idle_ms: AtomicU64,
    tombstone_ms: AtomicU64,
}

impl RedisStore {
    /// A store for `config`; connects on first use (and reconnects by itself).
    pub fn new(config: RedisConfig, ttl: Ttl) -> RedisStore {
        RedisStore {
            config,
            conn: Holder::default(),
            idle_ms: AtomicU64::new(ttl.idle.as_millis() as u64),
            max_idle_ms: AtomicU64::new(ttl.idle.as_millis() as u64),
            tombstone_ms: AtomicU64::new(ttl.tombstone.as_millis() as u64),
        }
    }

    pub(super) async fn conn(&self) -> Result<Conn, StoreError> {
        self.conn.get(&self.config).await
    }

    /// A command's result, noted for the connection holder.
    fn noted<T>(&self, r: Result<T, StoreError>) -> Result<T, StoreError> {
        if r.is_err() {
            self.conn.failed(&self.config);
        }
        r
    }

    /// Runs a command, bounded by the store timeout.
    async fn query<T: redis::FromRedisValue>(&self, cmd: &Cmd) -> Result<T, StoreError> {
        let mut conn = self.conn().await?;
        self.noted(
            match tokio::time::timeout(TIMEOUT, cmd.query_async(&mut conn)).await {
                Ok(result) => result.map_err(failed),
                Err(_) => Err(failed("Redis did not answer in time")),
            },
        )
    }

    /// Runs a pipeline (its keys must share a slot in a cluster), bounded by the store timeout.
    /// For the stream events kept beside the sessions (`events.rs`, `held.rs`).
    pub(super) async fn run<T: redis::FromRedisValue>(
        &self,
        pipe: &Pipeline,
    ) -> Result<T, StoreError> {
        let mut conn = self.conn().await?;
        self.noted(
            match tokio::time::timeout(TIMEOUT, pipe.query_async(&mut conn)).await {
                Ok(result) => result.map_err(failed),
                Err(_) => Err(failed("Redis did not answer in time")),
            },
        )
    }

    /// A key in the slot of session `id` (`<prefix>{id}:<name>`).
    pub(super) fn session_key(&self, id: &str, name: &str) -> String {
        format!("{}{{{id}}}:{name}", self.config.key_prefix)
    }

    /// A key outside any session's slot (`<prefix><name>`).
    pub(super) fn plain_key(&self, name: &str) -> String {
        self.key(name)
    }

    /// Runs a script on the session's slot (its keys are `rec` and `gone`).
    async fn script<T: redis::FromRedisValue>(
        &self,
        script: &Script,
        id: &str,
        args: &[String],
    ) -> Result<T, StoreError> {
        let mut invocation = script.prepare_invoke();
        invocation.key(self.rec_key(id)).key(self.gone_key(id));
        for a in args {
            invocation.arg(a);
        }
        let mut conn = self.conn().await?;
        let answer = tokio::time::timeout(TIMEOUT, invocation.invoke_async(&mut conn)).await;
        self.noted(match answer {
            Ok(result) => result.map_err(failed),
            Err(_) => Err(failed("Redis did not answer in time")),
        })
    }

    fn rec_key(&self, id: &str) -> String {
        format!("{}{{{id}}}:rec", self.config.key_prefix)
    }

    fn gone_key(&self, id: &str) -> String {
        format!("{}{{{id}}}:gone", self.config.key_prefix)
    }

    fn key(&self, name: &str) -> String {
        format!("{}{name}", self.config.key_prefix)
    }

    /// Keeps a value of another concern beside the sessions, under `<prefix><key>`, for `ttl`
    /// (the task records, `tasks/store.rs`).
    pub async fn put_value(&self, key: &str, value: &str, ttl: Duration) -> Result<(), StoreError> {
        let mut cmd = redis::cmd("SET");
        cmd.arg(self.key(key))
            .arg(value)
            .arg("PX")
            .arg(ttl.as_millis().max(1) as u64);
        self.query::<()>(&cmd).await
    }

    /// The value [`RedisStore::put_value`] keeps under `key`, while it lives.
    pub async fn get_value(&self, key: &str) -> Result<Option<String>, StoreError> {
        let mut cmd = redis::cmd("GET");
        cmd.arg(self.key(key));
        self.query(&cmd).await
    }

    /// Adds one to the counter under `key` (of another concern, kept forever: the response
    /// cache's epoch); its new value.
    pub async fn increment(&self, key: &str) -> Result<u64, StoreError> {
        let mut cmd = redis::cmd("INCR");
        cmd.arg(self.key(key));
        self.query(&cmd).await
    }

    /// The fields of the hash of another concern under `<prefix><key>` (the tool pins,
    /// `pinning/store.rs`), when it has at most `max` of them (`None`: more).
    pub async fn hash_all(
        &self,
        key: &str,
        max: usize,
    ) -> Result<Option<Vec<(String, String)>>, StoreError> {
        let mut len = redis::cmd("HLEN");
        len.arg(self.key(key));
        let n: usize = self.query(&len).await?;
        if n > max {
            return Ok(None);
        }
        let mut all = redis::cmd("HGETALL");
        all.arg(self.key(key));
        self.query(&all).await.map(Some)
    }

    /// Sets one field of the hash of another concern under `<prefix><key>` (kept forever).
    pub async fn hash_put(&self, key: &str, field: &str, value: &str) -> Result<(), StoreError> {
        let mut cmd = redis::cmd("HSET");
        cmd.arg(self.key(key)).arg(field).arg(value);
        self.query::<()>(&cmd).await
    }

    fn backends_key(&self, pool: &str) -> String {
        format!("{}backends:{pool}", self.config.key_prefix)
    }

    /// The record key's lifetime: past the idle timeout, so the sweep claims it first.
    fn record_ttl_ms(&self) -> u64 {
        self.idle_ms.load(Ordering::Relaxed) * 2 + 60_000
    }

    /// Moves the counts for a session opening (`by` 1) or ending (`by` -1).
    async fn count(&self, rec: &SessionRecord, by: i64) -> Result<(), StoreError> {
        let _: i64 = self
            .query(redis::cmd("INCRBY").arg(self.key("total")).arg(by))
            .await?;
        self.count_backend(&rec.pool, rec.binding.backend, &rec.id, by)
            .await?;
        if !rec.client.is_empty() {
            let _: i64 = self
                .query(
                    redis::cmd("HINCRBY")
                        .arg(self.key("clients"))
                        .arg(&*rec.client)
                        .arg(by),
                )
                .await?;
        }
        Ok(())
    }

    /// The key of the set of session ids on one backend.
    fn on_key(&self, pool: &str, addr: SocketAddr) -> String {
        format!("{}on:{pool}:{addr}", self.config.key_prefix)
    }

    /// Moves the count of a backend by `by` and adds (`by` > 0) or removes session `id` from
    /// its index.
    async fn count_backend(
        &self,
        pool: &str,
        addr: SocketAddr,
        id: &str,
        by: i64,
    ) -> Result<(), StoreError> {
        let _: i64 = self
            .query(
                redis::cmd("HINCRBY")
                    .arg(self.backends_key(pool))
                    .arg(addr.to_string())
                    .arg(by),
            )
            .await?;
        let index = match by > 0 {
            true => "SADD",
            false => "SREM",
        };
        let _: i64 = self
            .query(redis::cmd(index).arg(self.on_key(pool, addr)).arg(id))
            .await?;
        Ok(())
    }

    async fn forget_due(&self, id: &str) -> Result<(), StoreError> {
        let _: i64 = self
            .query(redis::cmd("ZREM").arg(self.key("due")).arg(id))
            .await?;
        Ok(())
    }
}

#[async_trait]
impl SessionStore for RedisStore {
    async fn create(&self, record: SessionRecord, quota: Quota) -> Result<(), CreateError> {
        let total: Option<i64> = self
            .query(redis::cmd("GET").arg(self.key("total")))
            .await
            .map_err(CreateError::Store)?;
        if total.unwrap_or(0).max(0) as usize >= quota.max_sessions {
            return Err(CreateError::Full {
                max: quota.max_sessions,
            });
        }
        if let (Some(max), false) = (quota.max_per_client, record.client.is_empty()) {
            if self
                .client_count(&record.client)
                .await
                .map_err(CreateError::Store)?
                >= max
            {
                return Err(CreateError::ClientFull { max });
            }
        }
        let base = Base {
            id: record.id.clone(),
            pool: record.pool.clone(),
            client: record.client.clone(),
            principal: record.principal.clone(),
            path: record.path.clone(),
            init_params: record.init_params.clone(),
            protocol_version: record.protocol_version.clone(),
        };
        let args = [
            json(&base).map_err(CreateError::Store)?,
            json(&record.binding).map_err(CreateError::Store)?,
            record.binding.generation.to_string(),
            json(&record.settings).map_err(CreateError::Store)?,
            record.last_use_ms.to_string(),
            self.record_ttl_ms().to_string(),
        ];
        let created: i64 = self
            .script(&CREATE, &record.id, &args)
            .await
            .map_err(CreateError::Store)?;
        if created != 1 {
            return Err(CreateError::Store(failed("session id already taken")));
        }
        self.count(&record, 1).await.map_err(CreateError::Store)?;
        let due = record.last_use_ms + self.idle_ms.load(Ordering::Relaxed);
        let _: i64 = self
            .query(
                redis::cmd("ZADD")
                    .arg(self.key("due"))
                    .arg(due)
                    .arg(&*record.id),
            )
            .await
            .map_err(CreateError::Store)?;
        Ok(())
    }

    async fn get(&self, id: &str) -> Result<Lookup, StoreError> {
        let fields: Vec<String> = self
            .query(redis::cmd("HGETALL").arg(self.rec_key(id)))
            .await?;
        if !fields.is_empty() {
            return Ok(Lookup::Live(decode(&fields)?));
        }
        let gone: Option<String> = self.query(redis::cmd("GET").arg(self.gone_key(id))).await?;
        Ok(match gone.as_deref().and_then(parse_reason) {
            Some(reason) => Lookup::Gone(reason),
            None => Lookup::Unknown,
        })
    }

    async fn touch(&self, id: &str, now_ms: u64) -> Result<(), StoreError> {
        let args = [now_ms.to_string(), self.record_ttl_ms().to_string()];
        let _: i64 = self.script(&TOUCH, id, &args).await?;
        Ok(())
    }

    async fn rebind(
        &self,
        id: &str,
        expected_generation: u64,
        binding: Binding,
    ) -> Result<Rebound, StoreError> {
        let args = [
            expected_generation.to_string(),
            json(&binding)?,
            binding.generation.to_string(),
        ];
        let answer: Vec<String> = self.script(&REBIND, id, &args).await?;
        match answer.split_first() {
            Some((status, rest)) if status == "won" && !rest.is_empty() => {
                let old: Binding = serde_json::from_str(&rest[0]).map_err(failed)?;
                let record = decode(&rest[1..])?;
                let pool = &record.pool;
                self.count_backend(pool, old.backend, id, -1).await?;
                self.count_backend(pool, record.binding.backend, id, 1)
                    .await?;
                Ok(Rebound::Won(record))
            }
            Some((status, fields)) if status == "lost" => {
                Ok(Rebound::Lost(Lookup::Live(decode(fields)?)))
            }
            _ => Ok(Rebound::Lost(self.get(id).await?)),
        }
    }

    async fn mark_stale(&self, id: &str, generation: u64) -> Result<(), StoreError> {
        let _: i64 = self
            .script(&MARK_STALE, id, &[generation.to_string()])
            .await?;
        Ok(())
    }

    async fn update_settings(&self, id: &str, change: SettingChange) -> Result<(), StoreError> {
        for _ in 0..8 {
            let current: Option<String> = self
                .query(redis::cmd("HGET").arg(self.rec_key(id)).arg("settings"))
                .await?;
            let Some(current) = current else {
                return Ok(()); // ended meanwhile
            };
            let mut settings: Settings = serde_json::from_str(&current).map_err(failed)?;
            settings.apply(change.clone());
            let args = [current, json(&settings)?];
            let done: i64 = self.script(&SETTINGS, id, &args).await?;
            if done != 0 {
                return Ok(());
            }
        }
        Err(failed("session settings kept changing under the update"))
    }

    async fn end(&self, id: &str, reason: GoneReason) -> Result<Option<SessionRecord>, StoreError> {
        let args = [
            reason.as_str().to_owned(),
            self.tombstone_ms.load(Ordering::Relaxed).to_string(),
        ];
        let fields: Vec<String> = self.script(&END, id, &args).await?;
        if fields.is_empty() {
            return Ok(None);
        }
        let record = decode(&fields)?;
        self.count(&record, -1).await?;
        self.forget_due(id).await?;
        Ok(Some(record))
    }

    async fn take_expired(
        &self,
        now_ms: u64,
        max: usize,
    ) -> Result<Vec<SessionRecord>, StoreError> {
        let idle = self.idle_ms.load(Ordering::Relaxed);
        // due times written under a longer idle timeout are looked at early enough
        let slack = self
            .max_idle_ms
            .load(Ordering::Relaxed)
            .saturating_sub(idle);
        let ids: Vec<String> = self
            .query(
                redis::cmd("ZRANGEBYSCORE")
                    .arg(self.key("due"))
                    .arg("-inf")
                    .arg(now_ms + slack)
                    .arg("LIMIT")
                    .arg(0)
                    .arg(max),
            )
            .await?;
        let tomb = self.tombstone_ms.load(Ordering::Relaxed);
        let mut expired = Vec::new();
        for id in ids {
            let args = [now_ms.to_string(), idle.to_string(), tomb.to_string()];
            let answer: Vec<String> = self.script(&CLAIM_EXPIRED, &id, &args).await?;
            match answer.split_first() {
                Some((status, fields)) if status == "expired" => {
                    let record = decode(fields)?;
                    self.count(&record, -1).await?;
                    self.forget_due(&id).await?;
                    expired.push(record);
                }
                Some((status, due)) if status == "later" => {
                    let due = due.first().cloned().unwrap_or_default();
                    let _: i64 = self
                        .query(redis::cmd("ZADD").arg(self.key("due")).arg(due).arg(&id))
                        .await?;
                }
                // gone meanwhile (ended, or claimed by another replica)
                _ => self.forget_due(&id).await?,
            }
        }
        Ok(expired)
    }

    async fn count(&self) -> Result<usize, StoreError> {
        let total: Option<i64> = self.query(redis::cmd("GET").arg(self.key("total"))).await?;
        Ok(total.unwrap_or(0).max(0) as usize)
    }

    async fn backend_counts(&self, pool: &str) -> Result<Vec<(SocketAddr, usize)>, StoreError> {
        let fields: HashMap<String, i64> = self
            .query(redis::cmd("HGETALL").arg(self.backends_key(pool)))
            .await?;
        Ok(fields
            .into_iter()
            .filter_map(|(addr, n)| Some((addr.parse().ok()?, n.max(0) as usize)))
            .filter(|(_, n)| *n > 0)
            .collect())
    }

    async fn sessions_on(
        &self,
        pool: &str,
        backend: SocketAddr,
    ) -> Result<Vec<Arc<str>>, StoreError> {
        let ids: Vec<String> = self
            .query(redis::cmd("SMEMBERS").arg(self.on_key(pool, backend)))
            .await?;
        Ok(ids.into_iter().map(Arc::from).collect())
    }

    async fn client_count(&self, client: &str) -> Result<usize, StoreError> {
        let n: Option<i64> = self
            .query(redis::cmd("HGET").arg(self.key("clients")).arg(client))
            .await?;
        Ok(n.unwrap_or(0).max(0) as usize)
    }

    async fn claim_move(
        &self,
        id: &str,
        generation: u64,
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        let key = format!("{}{{{id}}}:move:{generation}", self.config.key_prefix);
        let set: Option<String> = self
            .query(
                redis::cmd("SET")
                    .arg(key)
                    .arg("1")
                    .arg("NX")
                    .arg("PX")
                    .arg(ttl.as_millis() as u64),
            )
            .await?;
        Ok(set.is_some())
    }

    async fn hold_lease(&self, id: &str, owner: &str, ttl: Duration) -> Result<Hold, StoreError> {
        self.hold_lease_in_redis(id, owner, ttl).await
    }

    async fn release_lease(&self, id: &str, owner: &str) -> Result<(), StoreError> {
        self.release_lease_in_redis(id, owner).await
    }

    async fn ping(&self) -> Result<(), StoreError> {
        let _: String = self.query(&redis::cmd("PING")).await?;
        Ok(())
    }

    fn set_ttl(&self, ttl: Ttl) {
        let idle = ttl.idle.as_millis() as u64;
        self.idle_ms.store(idle, Ordering::Relaxed);
        self.max_idle_ms.fetch_max(idle, Ordering::Relaxed);
        self.tombstone_ms
            .store(ttl.tombstone.as_millis() as u64, Ordering::Relaxed);
    }
}

#[cfg(test)]
#[path = "events_tests.rs"]
mod events_tests;
#[cfg(test)]
#[path = "tests.rs"]
mod tests;
