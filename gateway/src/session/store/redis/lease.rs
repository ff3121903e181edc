//! The stream lease in Redis: key `PREFIX{ID}:hold` (in the session's slot) holds the owner,
//! with `PX` as the expiry, so an expired lease is simply gone and the next asker takes it.
//! Taking, renewing and taking over is one script: it checks that the session is live (its
//! `rec` key) and that the lease is free or the caller's, then sets it; release deletes it
//! only when the caller still holds it (a compare-and-delete).

use super::RedisStore;
use crate::session::store::{Hold, StoreError};
use redis::Script;
use std::sync::LazyLock;
use std::time::Duration;

/// KEYS: rec, hold. ARGV: owner, ttl ms. Returns 1 (mine), 0 (session not live) or the holder.
static HOLD: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local holder = redis.call('GET', KEYS[2])
if holder and holder ~= ARGV[1] then return holder end
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
return 1",
    )
});

/// KEYS: hold. ARGV: owner.
static RELEASE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0",
    )
});

impl RedisStore {
    async fn invoke<T: redis::FromRedisValue>(
        &self,
        invocation: &redis::ScriptInvocation<'_>,
    ) -> Result<T, StoreError> {
        let mut conn = self.conn().await?;
        match tokio::time::timeout(super::timeout::TIMEOUT, invocation.invoke_async(&mut conn))
            .await
        {
            Ok(result) => result.map_err(super::layout::failed),
            Err(_) => Err(super::layout::failed("Redis did not answer in time")),
        }
    }

    fn hold_key(&self, id: &str) -> String {
        self.session_key(id, "hold")
    }

    pub(super) async fn hold_lease_in_redis(
        &self,
        id: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<Hold, StoreError> {
        let mut invocation = HOLD.prepare_invoke();
        invocation
            .key(self.session_key(id, "rec"))
            .key(self.hold_key(id))
            .arg(owner)
            .arg(ttl.as_millis().max(1) as u64);
        let answer: redis::Value = self.invoke(&invocation).await?;
        Ok(match answer {
            redis::Value::Int(1) => Hold::Mine,
            redis::Value::Int(_) => Hold::Gone,
            other => Hold::Theirs(redis::from_redis_value(other).map_err(super::layout::failed)?),
        })
    }

    pub(super) async fn release_lease_in_redis(
        &self,
        id: &str,
        owner: &str,
    ) -> Result<(), StoreError> {
        let mut invocation = RELEASE.prepare_invoke();
        invocation.key(self.hold_key(id)).arg(owner);
        let _: i64 = self.invoke(&invocation).await?;
        Ok(())
    }
}
