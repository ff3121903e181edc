//! Dynamic pool membership: a watched file of endpoints, or a DNS name re-resolved on an
//! interval (a Kubernetes headless Service answers one address per ready pod). New members
//! take new sessions at once (least-sessions); members that disappear drain first
//! (`drain-timeout-s`) and then leave, their sessions moving at their next request.

use super::{LivePools, MembershipChange, Pool};
use crate::config::Discovery;
use crate::metrics::Metrics;
use async_trait::async_trait;
use pingora::server::ShutdownWatch;
use pingora::services::background::BackgroundService;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// Reads the endpoints of a discovery source once. `None` when the source cannot be read
/// (the current membership is then kept: a broken source must not empty a pool).
pub async fn read_source(source: &Discovery) -> Option<Vec<SocketAddr>> {
    match source {
        Discovery::File { path, .. } => {
            let text = tokio::fs::read_to_string(path).await.ok()?;
            Some(parse_endpoints(&text))
        }
        Discovery::Dns {
            name,
            port,
            resolver: None,
            ..
        } => {
            let mut addrs: Vec<SocketAddr> = tokio::net::lookup_host((name.as_str(), *port))
                .await
                .ok()?
                .collect();
            addrs.sort();
            addrs.dedup();
            Some(addrs)
        }
        Discovery::Dns {
            name,
            port,
            resolver: Some(server),
            ..
        } => resolve_with(*server, name, *port).await,
    }
}

/// Resolves `name` with the DNS server at `server` (UDP), bypassing the system resolver.
async fn resolve_with(server: SocketAddr, name: &str, port: u16) -> Option<Vec<SocketAddr>> {
    use hickory_resolver::config::{ConnectionConfig, NameServerConfig, ResolverConfig};
    use hickory_resolver::net::runtime::TokioRuntimeProvider;
    let mut udp = ConnectionConfig::udp();
    udp.port = server.port();
    let config = ResolverConfig::from_name_servers(vec![NameServerConfig::new(
        server.ip(),
        true,
        vec![udp],
    )]);
    let resolver =
        hickory_resolver::Resolver::builder_with_config(config, TokioRuntimeProvider::default())
            .build()
            .ok()?;
    let fqdn = if name.ends_with('.') {
        name.to_owned()
    } else {
        format!("{name}.")
    };
    let lookup = resolver.lookup_ip(fqdn.as_str()).await.ok()?;
    let mut addrs: Vec<SocketAddr> = lookup.iter().map(|ip| SocketAddr::new(ip, port)).collect();
    addrs.sort();
    addrs.dedup();
    Some(addrs)
}

/// `ip:port` per line; blank lines and `#` comments ignored; bad lines skipped.
pub fn parse_endpoints(text: &str) -> Vec<SocketAddr> {
    let mut out: Vec<SocketAddr> = text
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .filter_map(|l| l.parse().ok())
        .collect();
    out.sort();
    out.dedup();
    out
}

fn interval(source: &Discovery) -> Duration {
    match source {
        Discovery::File { interval, .. } | Discovery::Dns { interval, .. } => *interval,
    }
}

/// Runs every pool's discovery.
pub struct DiscoveryService {
    pools: Arc<dyn LivePools>,
    metrics: Metrics,
}

impl DiscoveryService {
    /// Discovery for the pools in force.
    pub fn new(pools: Arc<dyn LivePools>, metrics: Metrics) -> DiscoveryService {
        DiscoveryService { pools, metrics }
    }

    /// One round over all pools with a discovery source.
    pub async fn refresh(&self) {
        for (cfg, pool) in self.pools.pools() {
            let Some(source) = &cfg.discovery else {
                continue;
            };
            let Some(found) = read_source(source).await else {
                tracing::warn!(pool = %pool.name, "discovery source unreadable; keeping members");
                continue;
            };
            let change = pool.sync(&found, cfg.drain_timeout);
            self.record(&pool, &change);
        }
    }

    fn record(&self, pool: &Pool, change: &MembershipChange) {
        for (kind, addrs) in [
            ("added", &change.added),
            ("draining", &change.drained),
            ("removed", &change.removed),
        ] {
            if addrs.is_empty() {
                continue;
            }
            self.metrics
                .discovery_changes
                .with_label_values(&[&pool.name, kind])
                .inc_by(addrs.len() as u64);
            tracing::info!(pool = %pool.name, change = kind, backends = ?addrs, "pool membership changed");
        }
    }
}

#[async_trait]
impl BackgroundService for DiscoveryService {
    async fn start(&self, mut shutdown: ShutdownWatch) {
        loop {
            self.refresh().await;
            let every = self
                .pools
                .pools()
                .iter()
                .filter_map(|(p, _)| p.discovery.as_ref().map(interval))
                .min()
                .unwrap_or(Duration::from_secs(5));
            tokio::select! {
                _ = shutdown.changed() => return,
                _ = tokio::time::sleep(every) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_files_allow_comments_and_skip_bad_lines() {
        let text = "# pods\n127.0.0.1:2\n\n127.0.0.1:1  # first\nnot-an-address\n127.0.0.1:2\n";
        let addrs = parse_endpoints(text);
        assert_eq!(
            addrs,
            vec![
                "127.0.0.1:1".parse().unwrap(),
                "127.0.0.1:2".parse().unwrap()
            ]
        );
    }
}
