//! Dynamic pool membership: a watched file of endpoints, or a DNS name re-resolved on an
//! interval (a Kubernetes headless Service answers one address per ready pod). New members
//! take new sessions at once (least-sessions); members that disappear drain first
//! (`drain-timeout-s`) and then leave, their sessions moving at their next request.

use super::metrics::UpstreamMetrics;
use super::{LivePools, MembershipChange, Pool};
use crate::config::Discovery;
use async_trait::async_trait;
use pingora::server::ShutdownWatch;
use pingora::services::background::BackgroundService;
use std::collections::HashSet;
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

/// Drops the metric series of backends in none of `pools`' members (removed by discovery, or
/// by a reload), so the series stay bounded by the pool lists (docs/metrics.md): `retain`
/// removes a concern's series outside the live set given it and says how many. Run after
/// each discovery round (upstream's families) and before each `/metrics` answer (every
/// concern's).
pub fn drop_departed<'a>(
    pools: impl Iterator<Item = &'a Arc<Pool>>,
    retain: impl FnOnce(&HashSet<(&str, &str)>) -> usize,
) {
    let members: Vec<_> = pools.map(|p| (p, p.backends())).collect();
    let live: HashSet<(&str, &str)> = members
        .iter()
        .flat_map(|(p, bs)| bs.iter().map(move |b| (&*p.name, &*b.label)))
        .collect();
    let removed = retain(&live);
    if removed > 0 {
        tracing::debug!(
            series = removed,
            "metric series of departed backends removed"
        );
    }
}

/// Runs every pool's discovery.
pub struct DiscoveryService {
    pools: Arc<dyn LivePools>,
    metrics: UpstreamMetrics,
    held: Option<Arc<dyn super::HeldWork>>,
}

impl DiscoveryService {
    /// Discovery for the pools in force.
    pub fn new(pools: Arc<dyn LivePools>, metrics: UpstreamMetrics) -> DiscoveryService {
        DiscoveryService {
            pools,
            metrics,
            held: None,
        }
    }

    /// Keeps an undiscovered member in its pool while it holds `held` work.
    pub fn holding(mut self, held: Arc<dyn super::HeldWork>) -> DiscoveryService {
        self.held = Some(held);
        self
    }

    /// One round over all pools with a discovery source.
    pub async fn refresh(&self) {
        let pools = self.pools.pools();
        for (cfg, pool) in &pools {
            let Some(source) = &cfg.discovery else {
                continue;
            };
            let Some(found) = read_source(source).await else {
                tracing::warn!(pool = %pool.name, "discovery source unreadable; keeping members");
                continue;
            };
            let holding = self
                .held
                .as_ref()
                .map(|h| h.holding(&pool.name))
                .unwrap_or_default();
            let change = pool.sync(&found, cfg.drain_timeout, &holding);
            self.record(pool, &change);
        }
        let metrics = &self.metrics;
        drop_departed(pools.iter().map(|(_, p)| p), |live| {
            metrics.retain_backends(live)
        });
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
    use crate::config::{parse, PoolConfig};

    struct Fixed(Vec<(PoolConfig, Arc<Pool>)>);

    impl LivePools for Fixed {
        fn pools(&self) -> Vec<(PoolConfig, Arc<Pool>)> {
            self.0.clone()
        }
        fn mcp_path(&self, _: usize) -> String {
            "/mcp".into()
        }
    }

    fn series_of(registry: &pingora_prometheus::prometheus::Registry, backend: &str) -> usize {
        let by = |m: &&pingora_prometheus::prometheus::proto::Metric| {
            m.get_label()
                .iter()
                .any(|l| l.name() == "backend" && l.value() == backend)
        };
        registry
            .gather()
            .iter()
            .flat_map(|f| f.get_metric().iter().filter(by).collect::<Vec<_>>())
            .count()
    }

    #[tokio::test]
    async fn a_backend_discovery_replaced_loses_its_metric_series() {
        let dir = std::env::temp_dir().join(format!("mcpgw-disc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("endpoints");
        std::fs::write(&file, "127.0.0.1:7101\n").unwrap();
        let yaml = format!(
            "pools: {{ p: {{ discovery: {{ file: {}, interval-ms: 100 }}, drain-timeout-s: 0 }} }}\nroutes: [ {{ path: /mcp, pool: p }} ]\n",
            file.display()
        );
        let cfg = parse(&yaml).unwrap().pools[0].clone();
        let pool = Arc::new(Pool::new(&cfg));
        let registry = pingora_prometheus::prometheus::Registry::new();
        let metrics = UpstreamMetrics::register(&crate::metrics::Registrar::new(&registry));
        let service =
            DiscoveryService::new(Arc::new(Fixed(vec![(cfg, pool.clone())])), metrics.clone());
        service.refresh().await;
        let old = pool.backends()[0].label.clone();
        let labels = ["p", &*old];
        metrics
            .upstream_connect_failures
            .with_label_values(&labels)
            .inc();
        metrics.backend_up.with_label_values(&labels).set(1);
        service.refresh().await;
        assert_eq!(series_of(&registry, &old), 2, "a member keeps its series");
        // the pod is replaced
        std::fs::write(&file, "127.0.0.1:7102\n").unwrap();
        for _ in 0..50 {
            service.refresh().await;
            if pool.backends().iter().all(|b| b.label != old) {
                break;
            }
            tokio::task::yield_now().await;
        }
        assert!(
            pool.backends().iter().all(|b| b.label != old),
            "the old pod left"
        );
        assert_eq!(series_of(&registry, &old), 0, "its series went with it");
        let _ = std::fs::remove_dir_all(&dir);
    }

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
