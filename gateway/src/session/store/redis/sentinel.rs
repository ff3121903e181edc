//! The Redis store's connection through Redis Sentinel (`sessions.redis.sentinel`): the
//! Sentinels name the primary of `master-name` (redis-rs' `sentinel` support, which also checks
//! that the node it names answers `ROLE` as a primary), and every command goes to it over one
//! multiplexed connection. When that connection breaks, times out, or the node answers as a
//! replica (`READONLY`: it was demoted), the connection is dropped and the next command asks
//! the Sentinels again, so the store follows a failover by itself. Commands that fail meanwhile
//! are the store's outage (`session/store/cached.rs` serves sessions from their copies).

use super::timeout::TIMEOUT;
use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::sentinel::{SentinelClient, SentinelServerType};
use redis::{AsyncConnectionConfig, Cmd, ErrorKind, Pipeline, RedisError, RedisFuture, Value};
use std::sync::{Arc, Mutex};

/// A connection to whichever node the Sentinels name primary now.
#[derive(Clone)]
pub(super) struct SentinelConn {
    shared: Arc<Shared>,
}

struct Shared {
    /// Asks the Sentinels; one lookup at a time.
    sentinels: tokio::sync::Mutex<SentinelClient>,
    /// The primary's connection, until it fails.
    primary: Mutex<Option<MultiplexedConnection>>,
}

impl SentinelConn {
    /// A connection for the primary of `master_name`, as the Sentinels at `nodes` say; connects
    /// on first use.
    pub(super) fn new(master_name: &str, nodes: &[String]) -> Result<SentinelConn, RedisError> {
        let client = SentinelClient::build(
            nodes.to_vec(),
            master_name.to_owned(),
            None,
            SentinelServerType::Master,
        )?;
        Ok(SentinelConn {
            shared: Arc::new(Shared {
                sentinels: tokio::sync::Mutex::new(client),
                primary: Mutex::new(None),
            }),
        })
    }

    async fn primary(&self) -> Result<MultiplexedConnection, RedisError> {
        if let Some(conn) = crate::sync::lock(&self.shared.primary).clone() {
            return Ok(conn);
        }
        let mut sentinels = self.shared.sentinels.lock().await;
        if let Some(conn) = crate::sync::lock(&self.shared.primary).clone() {
            return Ok(conn); // found by the lookup this one waited for
        }
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(TIMEOUT))
            .set_response_timeout(Some(TIMEOUT));
        let conn = sentinels.get_async_connection_with_config(&config).await?;
        *crate::sync::lock(&self.shared.primary) = Some(conn.clone());
        Ok(conn)
    }

    /// Drops the primary's connection after an error that says it is gone or no longer primary.
    fn failed(&self, e: &RedisError) {
        let demoted = matches!(
            e.kind(),
            ErrorKind::Server(redis::ServerErrorKind::ReadOnly)
        );
        if demoted || e.is_io_error() || e.is_connection_dropped() || e.is_timeout() {
            crate::sync::lock(&self.shared.primary).take();
        }
    }
}

impl ConnectionLike for SentinelConn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            let mut conn = self.primary().await?;
            let answer = conn.req_packed_command(cmd).await;
            if let Err(e) = &answer {
                self.failed(e);
            }
            answer
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            let mut conn = self.primary().await?;
            let answer = conn.req_packed_commands(pipeline, offset, count).await;
            if let Err(e) = &answer {
                self.failed(e);
            }
            answer
        })
    }

    fn get_db(&self) -> i64 {
        0
    }
}
