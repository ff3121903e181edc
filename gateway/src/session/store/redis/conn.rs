//! The connection under the Redis store: one server through redis-rs's reconnecting
//! `ConnectionManager`, a cluster, or the primary Redis Sentinel names (`sentinel.rs`), behind
//! one `ConnectionLike`.

use super::layout::failed;
use super::sentinel::SentinelConn;
use super::timeout::TIMEOUT;
use super::RedisConfig;
use crate::session::store::StoreError;
use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::{Cmd, Pipeline, RedisFuture, Value};
use std::time::Duration;

#[derive(Clone)]
pub(super) enum Conn {
    Single(ConnectionManager),
    Cluster(redis::cluster_async::ClusterConnection),
    Sentinel(SentinelConn),
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Conn::Single(c) => c.req_packed_command(cmd),
            Conn::Cluster(c) => c.req_packed_command(cmd),
            Conn::Sentinel(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Conn::Single(c) => c.req_packed_commands(pipeline, offset, count),
            Conn::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
            Conn::Sentinel(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::Single(c) => c.get_db(),
            Conn::Cluster(c) => c.get_db(),
            Conn::Sentinel(c) => c.get_db(),
        }
    }
}

/// Connects to the store (a cluster, the primary the Sentinels name, or one server through a
/// reconnecting manager).
pub(super) async fn connect(config: &RedisConfig) -> Result<Conn, StoreError> {
    if let Some(sentinel) = &config.sentinel {
        let conn = SentinelConn::new(&sentinel.master_name, &sentinel.nodes).map_err(failed)?;
        return Ok(Conn::Sentinel(conn));
    }
    if config.cluster {
        let client = redis::cluster::ClusterClient::builder(config.urls.clone())
            .connection_timeout(TIMEOUT)
            .response_timeout(TIMEOUT)
            .build()
            .map_err(failed)?;
        let conn = client.get_async_connection().await.map_err(failed)?;
        return Ok(Conn::Cluster(conn));
    }
    let url = config.urls.first().ok_or_else(|| failed("no URL"))?;
    let client = redis::Client::open(url.as_str()).map_err(failed)?;
    let config = ConnectionManagerConfig::new()
        .set_connection_timeout(Some(TIMEOUT))
        .set_response_timeout(Some(TIMEOUT))
        .set_number_of_retries(2)
        .set_max_delay(Duration::from_secs(2));
    let conn = ConnectionManager::new_lazy_with_config(client, config).map_err(failed)?;
    Ok(Conn::Single(conn))
}
