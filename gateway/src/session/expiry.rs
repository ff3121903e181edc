//! Idle expiry, run as a background service: the store says which sessions' time-to-live ran
//! out; the manager ends them (with a best-effort DELETE to their backend). The sweep also
//! forgets idle rate-limiter keys.

use super::SessionManager;
use crate::state::State;
use arc_swap::ArcSwap;
use async_trait::async_trait;
use pingora::server::ShutdownWatch;
use pingora::services::background::BackgroundService;
use std::sync::Arc;
use std::time::Duration;

/// The sweeper.
pub struct ExpiryService {
    sessions: Arc<SessionManager>,
    state: Arc<ArcSwap<State>>,
}

impl ExpiryService {
    /// Sweeps `sessions` with the idle timeout of the current config.
    pub fn new(sessions: Arc<SessionManager>, state: Arc<ArcSwap<State>>) -> ExpiryService {
        ExpiryService { sessions, state }
    }

    /// Ends every session idle past the timeout; returns how many.
    pub async fn sweep(&self) -> usize {
        let state = self.state.load_full();
        self.sessions.configure(&state.config.sessions);
        state.admission.prune();
        match self.sessions.expire(&state.pools).await {
            Ok(n) => n,
            Err(e) => {
                tracing::warn!(error = %e, "session expiry could not run");
                0
            }
        }
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
