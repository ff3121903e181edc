//! The Redis store's current connection, and starting over when a cluster connection is stuck.
//!
//! redis-rs' cluster client follows a failover by refreshing its slot map when a node fails;
//! seen on loopback (3 masters + 3 replicas, a master SIGKILLed), about one run in three kept
//! routing one slot range to the dead node for more than 90 s after a replica had taken over,
//! every command on it timing out. So when commands have kept failing for [`STUCK`], the cluster
//! connection is dropped and the next command connects again from the seed nodes, which read the
//! slot map as the cluster has it now (at most once per [`STUCK`]). A single server's
//! `ConnectionManager` and the Sentinel connection reconnect by themselves.

use super::conn::{connect, Conn};
use super::layout::failed;
use super::timeout::TIMEOUT;
use super::RedisConfig;
use crate::session::store::StoreError;
use arc_swap::ArcSwapOption;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long commands keep failing before a cluster connection starts over.
const STUCK: Duration = Duration::from_secs(3);

#[derive(Default)]
struct Failing {
    /// The first failure of this run of failures.
    since: Option<Instant>,
    last: Option<Instant>,
}

/// The connection, made on first use.
#[derive(Default)]
pub(super) struct Holder {
    current: ArcSwapOption<Conn>,
    connecting: tokio::sync::Mutex<()>,
    failing: Mutex<Failing>,
}

impl Holder {
    /// The connection, connecting first when there is none (bounded by the store timeout).
    pub(super) async fn get(&self, config: &RedisConfig) -> Result<Conn, StoreError> {
        if let Some(conn) = self.current.load_full() {
            return Ok((*conn).clone());
        }
        let made = async {
            let _one = self.connecting.lock().await;
            if let Some(conn) = self.current.load_full() {
                return Ok((*conn).clone());
            }
            let conn = connect(config).await?;
            self.current.store(Some(Arc::new(conn.clone())));
            Ok(conn)
        };
        tokio::time::timeout(TIMEOUT, made)
            .await
            .map_err(|_| failed("connecting to Redis timed out"))?
    }

    /// A command failed: a cluster connection failing for [`STUCK`] starts over.
    pub(super) fn failed(&self, config: &RedisConfig) {
        let now = Instant::now();
        let mut f = crate::sync::lock(&self.failing);
        // a failure after a quiet [`STUCK`] begins a new run
        if f.last.is_none_or(|t| now - t >= STUCK) {
            f.since = Some(now);
        }
        f.last = Some(now);
        if config.cluster && f.since.is_some_and(|t| now - t >= STUCK) {
            tracing::debug!("the Redis Cluster connection kept failing: connecting again");
            self.current.store(None);
            f.since = Some(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(cluster: bool) -> RedisConfig {
        RedisConfig {
            urls: vec!["redis://127.0.0.1:9/0".into()],
            cluster,
            sentinel: None,
            key_prefix: "h:".into(),
        }
    }

    /// A holder with a (lazy, never connected) connection in it.
    async fn holding() -> Holder {
        let holder = Holder::default();
        holder.get(&config(false)).await.expect("a lazy connection");
        holder
    }

    fn run_for(holder: &Holder, long: Duration) {
        let mut f = crate::sync::lock(&holder.failing);
        f.since = Some(Instant::now() - long);
        f.last = Some(Instant::now());
    }

    #[tokio::test]
    async fn a_cluster_connection_failing_for_three_seconds_starts_over_and_no_other_does() {
        let holder = holding().await;
        holder.failed(&config(true));
        assert!(holder.current.load().is_some(), "one failure is not stuck");
        run_for(&holder, STUCK);
        holder.failed(&config(true));
        assert!(holder.current.load().is_none(), "failing for 3 s: dropped");
        // a single server's manager reconnects by itself: never dropped
        let holder = holding().await;
        run_for(&holder, STUCK * 10);
        holder.failed(&config(false));
        assert!(holder.current.load().is_some());
    }

    #[tokio::test]
    async fn a_failure_after_a_quiet_spell_begins_a_new_run() {
        let holder = holding().await;
        {
            let mut f = crate::sync::lock(&holder.failing);
            f.since = Some(Instant::now() - STUCK * 2);
            f.last = Some(Instant::now() - STUCK);
        }
        holder.failed(&config(true));
        assert!(
            holder.current.load().is_some(),
            "a new run, not a stuck one"
        );
    }
}
