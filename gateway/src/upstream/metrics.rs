//! The metric families of upstream: attempts (latency, refused connects, calls lost), the
//! backends' gauges, discovery's changes and the era probes. Registered by
//! [`UpstreamMetrics::register`], held by the attempt engine (`attempt.rs`), the discovery and
//! era services, and read by `/metrics` through [`UpstreamMetrics::publish_backends`].

use super::Pool;
use crate::metrics::Registrar;
use pingora_prometheus::prometheus::{HistogramVec, IntCounterVec, IntGaugeVec};
use std::collections::HashSet;

/// The upstream families: attempts, backends, discovery, eras.
#[derive(Clone)]
pub struct UpstreamMetrics {
    /// `mcpgw_upstream_duration_seconds{pool}`: from sending a request upstream to its
    /// response head.
    pub upstream_duration: HistogramVec,
    /// `mcpgw_upstream_connect_failures_total{pool,backend}`: refused or timed-out connects.
    pub upstream_connect_failures: IntCounterVec,
    /// `mcpgw_backend_inflight_requests{pool,backend}`: requests in flight per backend.
    pub backend_inflight: IntGaugeVec,
    /// `mcpgw_backend_up{pool,backend}`: 1 unless a recent connect failure marks it.
    pub backend_up: IntGaugeVec,
    /// `mcpgw_backend_draining{pool,backend}`: 1 while a backend drains.
    pub backend_draining: IntGaugeVec,
    /// `mcpgw_discovery_changes_total{pool,change}`: members added, draining (no longer
    /// discovered) and removed by discovery.
    pub discovery_changes: IntCounterVec,
    /// `mcpgw_backends{pool,era}`: backends per protocol era (legacy, modern, dual, unknown).
    pub backends_by_era: IntGaugeVec,
    /// `mcpgw_era_probes_total{pool,result}`: era probes by result (legacy, modern, dual,
    /// inconclusive).
    pub era_probes: IntCounterVec,
    /// `mcpgw_inflight_calls_lost_total{pool,method}`: calls whose backend died mid-answer and
    /// that were not safe to repeat (answered with -32013).
    pub inflight_lost: IntCounterVec,
    /// `mcpgw_upstream_tokens_total{pool,event}`: client-credentials tokens: `hit` (a request
    /// found one cached), `fetched`, `refreshed`, `invalidated` (a backend's 401),
    /// `failed-<reason>`.
    pub upstream_tokens: IntCounterVec,
}

impl UpstreamMetrics {
    /// Creates the families and registers them.
    pub fn register(families: &Registrar) -> UpstreamMetrics {
        UpstreamMetrics {
            upstream_duration: families.histogram(
                "mcpgw_upstream_duration_seconds",
                "From sending a request upstream to its response head",
                &["pool"],
                crate::metrics::exponential_buckets(0.0005, 2.0, 16),
            ),
            upstream_connect_failures: families.counter(
                "mcpgw_upstream_connect_failures_total",
                "Upstream connections refused or timed out",
                &["pool", "backend"],
            ),
            backend_inflight: families.gauge(
                "mcpgw_backend_inflight_requests",
                "Requests in flight per backend",
                &["pool", "backend"],
            ),
            backend_up: families.gauge(
                "mcpgw_backend_up",
                "1 when the backend is not marked failed by a recent connect failure",
                &["pool", "backend"],
            ),
            backend_draining: families.gauge(
                "mcpgw_backend_draining",
                "1 while a backend drains (no new sessions)",
                &["pool", "backend"],
            ),
            discovery_changes: families.counter(
                "mcpgw_discovery_changes_total",
                "Pool membership changes by discovery: added, draining, removed",
                &["pool", "change"],
            ),
            backends_by_era: families.gauge(
                "mcpgw_backends",
                "Backends per protocol era: legacy, modern, dual, unknown (probe pending)",
                &["pool", "era"],
            ),
            era_probes: families.counter(
                "mcpgw_era_probes_total",
                "Era probes (server/discover, then initialize) by result",
                &["pool", "result"],
            ),
            inflight_lost: families.counter(
                "mcpgw_inflight_calls_lost_total",
                "Calls lost with their backend that were not safe to repeat",
                &["pool", "method"],
            ),
            upstream_tokens: families.counter(
                "mcpgw_upstream_tokens_total",
                "Backend tokens (client credentials): hit, fetched, refreshed, invalidated, failed-<reason>",
                &["pool", "event"],
            ),
        }
    }
}

impl UpstreamMetrics {
    /// Counts a call lost with its backend that was not safe to repeat (answered -32013):
    /// `mcpgw_inflight_calls_lost_total`.
    pub fn count_lost(&self, pool: &str, method_label: &str) {
        self.inflight_lost
            .with_label_values(&[pool, method_label])
            .inc();
    }

    /// Sets the backend gauges of `pool`'s members (at scrape time, off the hot path).
    pub fn publish_backends(&self, pool: &Pool) {
        for b in pool.backends().iter() {
            let labels = [pool.name.as_str(), b.label.as_str()];
            self.backend_inflight
                .with_label_values(&labels)
                .set(b.inflight() as i64);
            self.backend_up
                .with_label_values(&labels)
                .set(i64::from(!b.is_failed()));
            self.backend_draining
                .with_label_values(&labels)
                .set(i64::from(b.is_draining()));
        }
    }

    /// Removes the series of every family labelled by backend whose `(pool, backend label)`
    /// is not in `live`; the number removed.
    pub fn retain_backends(&self, live: &HashSet<(&str, &str)>) -> usize {
        use crate::metrics::retain_backends;
        retain_backends(&self.upstream_connect_failures, live)
            + retain_backends(&self.backend_inflight, live)
            + retain_backends(&self.backend_up, live)
            + retain_backends(&self.backend_draining, live)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pingora_prometheus::prometheus::{Encoder, Registry, TextEncoder};

    fn text(registry: &Registry) -> String {
        let mut out = Vec::new();
        TextEncoder::new()
            .encode(&registry.gather(), &mut out)
            .unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn a_replaced_backend_loses_every_series_labelled_by_it() {
        let registry = Registry::new();
        let m = UpstreamMetrics::register(&Registrar::new(&registry));
        for backend in ["10.0.0.1:80", "10.0.0.2:80"] {
            let labels = ["p", backend];
            m.upstream_connect_failures.with_label_values(&labels).inc();
            m.backend_inflight.with_label_values(&labels).set(1);
            m.backend_up.with_label_values(&labels).set(1);
            m.backend_draining.with_label_values(&labels).set(0);
        }
        m.backend_up.with_label_values(&["q", "10.0.0.1:80"]).set(1);
        // 10.0.0.1 was replaced by 10.0.0.3 in pool p; pool q keeps it
        let live = HashSet::from([
            ("p", "10.0.0.2:80"),
            ("p", "10.0.0.3:80"),
            ("q", "10.0.0.1:80"),
        ]);
        assert_eq!(m.retain_backends(&live), 4);
        let out = text(&registry);
        assert!(
            !out.contains(r#"pool="p",backend="10.0.0.1:80""#)
                && !out.contains(r#"backend="10.0.0.1:80",pool="p""#),
            "{out}"
        );
        assert!(out.contains("10.0.0.2:80"), "{out}");
        assert!(
            out.contains(r#"mcpgw_backend_up{backend="10.0.0.1:80",pool="q"} 1"#),
            "{out}"
        );
        assert_eq!(m.retain_backends(&live), 0);
    }
}
