//! Idle expiry, run as a background service: the store says which sessions' time-to-live ran
//! out; the manager ends them (with a best-effort DELETE to their backend). The sweep also
//! forgets idle rate-limiter keys.

use super::SessionManager;
use crate::config::SessionConfig;
use crate::upstream::Pool;
use async_trait::async_trait;
use pingora::server::ShutdownWatch;
use pingora::services::background::BackgroundService;
use std::sync::Arc;
use std::time::Duration;

/// What the sweep reads each round (the running state implements it).
pub trait SweepSource: Send + Sync {
    /// The session config in force.
    fn session_config(&self) -> SessionConfig;
    /// The pools in force.
    fn pools(&self) -> Vec<Arc<Pool>>;
    /// Forgets idle rate-limiter keys.
    fn prune_limits(&self);
}

/// The sweeper.
pub struct ExpiryService {
    sessions: Arc<SessionManager>,
    source: Arc<dyn SweepSource>,
}

impl ExpiryService {
    /// Sweeps `sessions` with the idle timeout of the current config.
    pub fn new(sessions: Arc<SessionManager>, source: Arc<dyn SweepSource>) -> ExpiryService {
        ExpiryService { sessions, source }
    }

    /// Ends every session idle past the timeout; returns how many.
    pub async fn sweep(&self) -> usize {
        self.sessions.configure(&self.source.session_config());
        self.source.prune_limits();
        match self.sessions.expire(&self.source.pools()).await {
            Ok(n) => n,
            // the store's outage has its own WARN (`store/outage.rs`); the sweep runs again soon
            Err(e) => {
                crate::quiet::STORE.failed("session expiry could not run", &e);
                0
            }
        }
    }
}

#[async_trait]
impl BackgroundService for ExpiryService {
    async fn start(&self, mut shutdown: ShutdownWatch) {
        loop {
            let idle = self.source.session_config().idle_timeout;
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
