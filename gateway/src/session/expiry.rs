//! Idle expiry: a background sweep that ends sessions unused for `sessions.idle-timeout-s`,
//! with a best-effort DELETE to their backend, and forgets old tombstones and idle
//! rate-limiter keys.

use super::reinit::Sessions;
use super::{now_ms, GoneReason};
use crate::state::State;
use arc_swap::ArcSwap;
use async_trait::async_trait;
use pingora::server::ShutdownWatch;
use pingora::services::background::BackgroundService;
use std::sync::Arc;
use std::time::Duration;

/// Tombstones (for `data.reason` on 404) are kept at least this long.
const TOMBSTONE_MIN: Duration = Duration::from_secs(600);

/// The sweeper, run as a pingora background service.
pub struct ExpiryService {
    sessions: Arc<Sessions>,
    state: Arc<ArcSwap<State>>,
}

impl ExpiryService {
    /// Sweeps `sessions` with the idle timeout of the current config.
    pub fn new(sessions: Arc<Sessions>, state: Arc<ArcSwap<State>>) -> ExpiryService {
        ExpiryService { sessions, state }
    }

    /// Ends every session idle past the timeout; returns how many.
    pub async fn sweep(&self) -> usize {
        let state = self.state.load_full();
        let idle = state.config.sessions.idle_timeout;
        let now = now_ms();
        let cutoff = now.saturating_sub(idle.as_millis() as u64);
        let mut ended = 0;
        for id in self.sessions.store.idle_since(cutoff).await {
            let pool_name = match self.sessions.store.lookup(&id).await {
                super::Lookup::Live(r) => r.pool,
                _ => continue,
            };
            let Some(pool) = state.pools.iter().find(|p| *p.name == *pool_name) else {
                continue;
            };
            if let Some(record) = self
                .sessions
                .end(pool, &id, GoneReason::Expired, "expired")
                .await
            {
                self.sessions.delete_upstream(pool, &record).await;
                ended += 1;
            }
        }
        state.admission.prune();
        let keep = idle.max(TOMBSTONE_MIN).as_millis() as u64;
        self.sessions
            .store
            .prune_tombstones(now.saturating_sub(keep))
            .await;
        ended
    }
}

#[async_trait]
impl BackgroundService for ExpiryService {
    async fn start(&self, mut shutdown: ShutdownWatch) {
        loop {
            let idle = self.state.load().config.sessions.idle_timeout;
            let period = (idle / 4).clamp(Duration::from_millis(100), Duration::from_secs(15));
            tokio::select! {
                _ = shutdown.changed() => return,
                _ = tokio::time::sleep(period) => {
                    let n = self.sweep().await;
                    if n > 0 {
                        tracing::info!(expired = n, "idle sessions expired");
                    }
                }
            }
        }
    }
}
