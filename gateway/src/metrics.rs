//! Prometheus metric families of the gateway, registered into a registry that is passed in
//! (never global statics). Labels are bounded: route and pool names come from config, methods
//! from [`crate::mcp::KNOWN_METHODS`], backends from the pool lists.

use pingora_prometheus::prometheus::{
    exponential_buckets, HistogramOpts, HistogramVec, IntCounterVec, IntGaugeVec, Opts, Registry,
};

/// All metric families.
#[derive(Clone)]
pub struct Metrics {
    /// `mcpgw_requests_total{route,method,outcome}`: finished requests; outcome is `ok`, the
    /// upstream status class (`4xx`, `5xx`) or the gateway error kind.
    pub requests: IntCounterVec,
    /// `mcpgw_request_duration_seconds{route,method}`: time from request head to last byte.
    pub request_duration: HistogramVec,
    /// `mcpgw_requests_by_era_total{era}`: requests by protocol era.
    pub requests_by_era: IntCounterVec,
    /// `mcpgw_upstream_connect_failures_total{pool,backend}`: refused or timed-out connects.
    pub upstream_connect_failures: IntCounterVec,
    /// `mcpgw_backend_inflight_requests{pool,backend}`: requests in flight per backend.
    pub backend_inflight: IntGaugeVec,
    /// `mcpgw_backend_up{pool,backend}`: 1 unless a recent connect failure marks it.
    pub backend_up: IntGaugeVec,
}

impl Metrics {
    /// Creates the families and registers them.
    pub fn new(registry: &Registry) -> Metrics {
        let counter = |name: &str, help: &str, labels: &[&str]| {
            let c = IntCounterVec::new(Opts::new(name, help), labels).expect("valid metric");
            registry
                .register(Box::new(c.clone()))
                .expect("unique metric");
            c
        };
        let gauge = |name: &str, help: &str, labels: &[&str]| {
            let g = IntGaugeVec::new(Opts::new(name, help), labels).expect("valid metric");
            registry
                .register(Box::new(g.clone()))
                .expect("unique metric");
            g
        };
        let request_duration = HistogramVec::new(
            HistogramOpts::new(
                "mcpgw_request_duration_seconds",
                "Time from request head to the last response byte",
            )
            .buckets(exponential_buckets(0.0005, 2.0, 16).expect("valid buckets")),
            &["route", "method"],
        )
        .expect("valid metric");
        registry
            .register(Box::new(request_duration.clone()))
            .expect("unique metric");
        Metrics {
            requests: counter(
                "mcpgw_requests_total",
                "Finished requests by route, MCP method and outcome",
                &["route", "method", "outcome"],
            ),
            request_duration,
            requests_by_era: counter(
                "mcpgw_requests_by_era_total",
                "Requests by MCP protocol era (legacy, stateless)",
                &["era"],
            ),
            upstream_connect_failures: counter(
                "mcpgw_upstream_connect_failures_total",
                "Upstream connections refused or timed out",
                &["pool", "backend"],
            ),
            backend_inflight: gauge(
                "mcpgw_backend_inflight_requests",
                "Requests in flight per backend",
                &["pool", "backend"],
            ),
            backend_up: gauge(
                "mcpgw_backend_up",
                "1 when the backend is not marked failed by a recent connect failure",
                &["pool", "backend"],
            ),
        }
    }
}
