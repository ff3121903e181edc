//! Active health checks, on by default: a probe per backend on an interval, a TCP connect
//! unless the pool names an HTTP `path`. Any HTTP answer below 500 counts as alive (legacy session servers refuse a sessionless GET with 4xx, and that still means
//! the process is up); a refused connection, a timeout or a 5xx counts as a failure.
//! `fall` failures in a row mark a backend down, `rise` successes bring it back; one success
//! clears a passive mark (a refused connection), which otherwise stays until a request succeeds.

use super::Backend;
use crate::config::HealthCheck;
use crate::state::State;
use arc_swap::ArcSwap;
use async_trait::async_trait;
use pingora::server::ShutdownWatch;
use pingora::services::background::BackgroundService;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Probes one backend: a TCP connect, or `GET path` with its Host; true when it connects (and
/// answers below 500) in time.
pub async fn probe(backend: &Backend, check: &HealthCheck) -> bool {
    let attempt = async {
        let mut stream = tokio::net::TcpStream::connect(backend.addr).await.ok()?;
        let Some(path) = check.path.as_deref() else {
            return Some(true);
        };
        let request = format!(
            "GET {} HTTP/1.1\r\nHost: {}\r\nAccept: application/json, text/event-stream\r\nConnection: close\r\n\r\n",
            path, backend.host
        );
        stream.write_all(request.as_bytes()).await.ok()?;
        let mut head = [0u8; 16];
        let n = stream.read(&mut head).await.ok()?;
        let line = std::str::from_utf8(&head[..n]).ok()?;
        let status: u16 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(status < 500)
    };
    tokio::time::timeout(check.timeout, attempt)
        .await
        .ok()
        .flatten()
        .unwrap_or(false)
}

/// Runs the active checks of every pool that has them.
pub struct HealthService {
    state: Arc<ArcSwap<State>>,
}

impl HealthService {
    /// Health checks for the pools of the running state.
    pub fn new(state: Arc<ArcSwap<State>>) -> HealthService {
        HealthService { state }
    }

    /// One round of probes over every member of every checked pool, concurrently.
    pub async fn round(&self) {
        let state = self.state.load_full();
        let mut probes = Vec::new();
        for (cfg, pool) in state.config.pools.iter().zip(&state.pools) {
            let Some(check) = cfg.health.clone() else {
                continue;
            };
            for backend in pool.backends().iter().cloned() {
                let (check, pool_name) = (check.clone(), pool.name.clone());
                let detect = pool.era == crate::config::EraSetting::Detect;
                probes.push(tokio::spawn(async move {
                    let ok = probe(&backend, &check).await;
                    if let Some(down) = backend.record_probe(ok, check.fall, check.rise) {
                        let state = if down { "down" } else { "up" };
                        tracing::info!(pool = %pool_name, backend = %backend.addr, state, "health changed");
                        // down: what comes back may be another image (another era); back up:
                        // probe it again
                        if down && detect {
                            backend.era_went_stale();
                        } else if !down {
                            backend.recheck_era();
                        }
                    }
                }));
            }
        }
        for p in probes {
            let _ = p.await;
        }
    }
}

#[async_trait]
impl BackgroundService for HealthService {
    async fn start(&self, mut shutdown: ShutdownWatch) {
        loop {
            self.round().await;
            let every = self
                .state
                .load()
                .config
                .pools
                .iter()
                .filter_map(|p| p.health.as_ref().map(|h| h.interval))
                .min()
                .unwrap_or(Duration::from_secs(60));
            tokio::select! {
                _ = shutdown.changed() => return,
                _ = tokio::time::sleep(every) => {}
            }
        }
    }
}
