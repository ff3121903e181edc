//! Active health checks, on by default: a probe per backend on an interval, a TCP connect
//! unless the pool names an HTTP `path`. Any HTTP answer below 500 counts as alive (legacy session servers refuse a sessionless GET with 4xx, and that still means
//! the process is up); a refused connection, a timeout or a 5xx counts as a failure.
//! `fall` failures in a row mark a backend down, `rise` successes bring it back; one success
//! clears a passive mark (a refused connection), which otherwise stays until a request succeeds.
//! A backend marked down is announced as a death (`deaths.rs`).

use super::client::UpstreamClient;
use super::deaths::Deaths;
use super::{Backend, LivePools, Pool};
use crate::config::HealthCheck;
use async_trait::async_trait;
use bytes::Bytes;
use pingora::http::RequestHeader;
use pingora::server::ShutdownWatch;
use pingora::services::background::BackgroundService;
use std::sync::Arc;
use std::time::Duration;

/// Probes one backend: a TCP connect, or `GET path` with its Host over the pool's transport
/// (TLS for a `tls` pool, through the same connector settings as requests); true when it
/// connects (and its whole status line says below 500) in time.
pub async fn probe(
    client: &UpstreamClient,
    pool: &Pool,
    backend: &Backend,
    check: &HealthCheck,
) -> bool {
    let attempt = async {
        let Some(path) = check.path.as_deref() else {
            return tokio::net::TcpStream::connect(backend.addr).await.is_ok();
        };
        let Ok(mut req) = RequestHeader::build(http::Method::GET, path.as_bytes(), Some(4)) else {
            return false;
        };
        if req
            .insert_header(http::header::HOST, backend.host_header.clone())
            .is_err()
        {
            return false;
        }
        let headers = [
            ("accept", "application/json, text/event-stream"),
            ("connection", "close"),
        ];
        for (name, value) in headers {
            if req.insert_header(name, value).is_err() {
                return false;
            }
        }
        pool.credentials.apply(&mut req);
        match client
            .send(pool.peer(backend), &req, Bytes::new(), true)
            .await
        {
            Ok(exchange) => exchange.header().status.as_u16() < 500,
            Err(_) => false,
        }
    };
    tokio::time::timeout(check.timeout, attempt)
        .await
        .unwrap_or(false)
}

/// Runs the active checks of every pool that has them.
pub struct HealthService {
    pools: Arc<dyn LivePools>,
    client: Arc<UpstreamClient>,
    deaths: Option<Deaths>,
}

impl HealthService {
    /// Health checks for the pools in force.
    pub fn new(pools: Arc<dyn LivePools>) -> HealthService {
        HealthService {
            pools,
            client: Arc::new(UpstreamClient::default()),
            deaths: None,
        }
    }

    /// Announces each backend the checks mark down on `deaths`.
    pub fn announcing(mut self, deaths: Deaths) -> HealthService {
        self.deaths = Some(deaths);
        self
    }

    /// One round of probes over every member of every checked pool, concurrently.
    pub async fn round(&self) {
        let mut probes = Vec::new();
        for (cfg, pool) in self.pools.pools() {
            let Some(check) = cfg.health.clone() else {
                continue;
            };
            for backend in pool.backends().iter().cloned() {
                let (check, pool, client) = (check.clone(), pool.clone(), self.client.clone());
                let detect = pool.era == crate::config::EraSetting::Detect;
                let deaths = self.deaths.clone();
                probes.push(tokio::spawn(async move {
                    let ok = probe(&client, &pool, &backend, &check).await;
                    if let Some(down) = backend.record_probe(ok, check.fall, check.rise) {
                        let state = if down { "down" } else { "up" };
                        tracing::info!(pool = %pool.name, backend = %backend.addr, state, "health changed");
                        if let Some(deaths) = deaths.as_ref().filter(|_| down) {
                            deaths.announce(&pool.name, backend.addr, "probe");
                        }
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
                .pools
                .pools()
                .iter()
                .filter_map(|(p, _)| p.health.as_ref().map(|h| h.interval))
                .min()
                .unwrap_or(Duration::from_secs(60));
            tokio::select! {
                _ = shutdown.changed() => return,
                _ = tokio::time::sleep(every) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests;
