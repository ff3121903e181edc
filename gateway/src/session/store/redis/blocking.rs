//! A connection of its own for blocking reads (`XREAD BLOCK`): the store's shared connection
//! is multiplexed, and a blocking command on it would hold up every other caller. One is
//! opened per client GET that follows a session's held stream from another replica
//! (`held.rs` `Follower`, for `stream/shared.rs`), and closed with it.

use super::conn::{self, Conn};
use super::layout::failed;
use super::RedisStore;
use crate::session::store::StoreError;
use redis::Pipeline;
use std::time::Duration;

/// A connection for one blocking reader.
pub(super) struct Blocking(Conn);

impl Blocking {
    /// Runs `pipe` (blocking for at most `block` inside Redis), bounded by `block` + 1 s.
    pub(super) async fn run<T: redis::FromRedisValue>(
        &mut self,
        pipe: &Pipeline,
        block: Duration,
    ) -> Result<T, StoreError> {
        let bound = block + super::timeout::TIMEOUT;
        match tokio::time::timeout(bound, pipe.query_async(&mut self.0)).await {
            Ok(result) => result.map_err(failed),
            Err(_) => Err(failed("Redis did not answer in time")),
        }
    }
}

impl RedisStore {
    /// A new connection for blocking reads (the config's server or cluster).
    pub(super) async fn blocking(&self) -> Result<Blocking, StoreError> {
        let conn = tokio::time::timeout(super::timeout::TIMEOUT, conn::connect(&self.config))
            .await
            .map_err(|_| failed("connecting to Redis timed out"))??;
        Ok(Blocking(conn))
    }
}
