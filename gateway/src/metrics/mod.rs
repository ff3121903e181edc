//! How the gateway's Prometheus metric families are made. Each concern owns a struct of its
//! families, built by its `register` into the registry that is passed in (never global
//! statics), as linkerd2-proxy passes registries in: `proxy::metrics::RequestMetrics`,
//! `admission::metrics::AdmissionMetrics`, `upstream::metrics::UpstreamMetrics`,
//! `session::metrics::SessionMetrics`, `session::store::metrics::StoreMetrics`,
//! `stream::metrics::StreamMetrics`, `bridge::metrics::BridgeMetrics`, `reload::ReloadMetrics`
//! (`server.rs` registers them all at start and hands each to its concern). Code reaches only
//! the families of its own concern. Labels are bounded: route and pool names come from config,
//! methods from [`mcp_wire::KNOWN_METHODS`], backends from the pool lists.
//!
//! Here: the [`Registrar`] the families are registered through, per-request children resolved
//! once (`resolved.rs`), and the series of departed backends dropped (`backends.rs`).

mod backends;
mod resolved;

pub use backends::retain_backends;
pub use resolved::{Resolved, RouteMetrics, ANSWERED, TOOL_SLOTS};

use pingora_prometheus::prometheus::{
    HistogramOpts, HistogramVec, IntCounterVec, IntGaugeVec, Opts, Registry,
};
use std::cell::RefCell;

/// `count` bucket bounds from `start`, each `factor` times the one before: prometheus's
/// `exponential_buckets` without its `Result`, for the literal arguments it never refuses.
pub fn exponential_buckets(start: f64, factor: f64, count: usize) -> Vec<f64> {
    std::iter::successors(Some(start), |bound| Some(bound * factor))
        .take(count)
        .collect()
}

/// Registers metric families into one registry, noting every family name.
pub struct Registrar<'r> {
    registry: &'r Registry,
    names: RefCell<Vec<String>>,
}

impl<'r> Registrar<'r> {
    /// Families registered into `registry`.
    pub fn new(registry: &'r Registry) -> Registrar<'r> {
        Registrar {
            registry,
            names: RefCell::new(Vec::new()),
        }
    }

    /// A counter family `name` with `labels`, registered.
    #[expect(
        clippy::expect_used,
        reason = "called at start with a literal name, help and labels, each family once into a fresh registry: a bad or repeated name is a bug the tests catch, not an input"
    )]
    pub fn counter(&self, name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
        let c = IntCounterVec::new(Opts::new(name, help), labels).expect("valid metric");
        self.add(name, Box::new(c.clone()));
        c
    }

    /// A gauge family `name` with `labels`, registered.
    #[expect(
        clippy::expect_used,
        reason = "called at start with a literal name, help and labels, each family once into a fresh registry: a bad or repeated name is a bug the tests catch, not an input"
    )]
    pub fn gauge(&self, name: &str, help: &str, labels: &[&str]) -> IntGaugeVec {
        let g = IntGaugeVec::new(Opts::new(name, help), labels).expect("valid metric");
        self.add(name, Box::new(g.clone()));
        g
    }

    /// A histogram family `name` with `labels` and `buckets`, registered.
    #[expect(
        clippy::expect_used,
        reason = "called at start with a literal name, help and labels, each family once into a fresh registry: a bad or repeated name is a bug the tests catch, not an input"
    )]
    pub fn histogram(
        &self,
        name: &str,
        help: &str,
        labels: &[&str],
        buckets: Vec<f64>,
    ) -> HistogramVec {
        let opts = HistogramOpts::new(name, help).buckets(buckets);
        let h = HistogramVec::new(opts, labels).expect("valid metric");
        self.add(name, Box::new(h.clone()));
        h
    }

    #[expect(
        clippy::expect_used,
        reason = "called at start with a literal name, help and labels, each family once into a fresh registry: a bad or repeated name is a bug the tests catch, not an input"
    )]
    fn add(&self, name: &str, family: Box<dyn pingora_prometheus::prometheus::core::Collector>) {
        self.registry.register(family).expect("unique metric");
        self.names.borrow_mut().push(name.to_owned());
    }

    /// Every family name registered through this registrar, in order.
    pub fn names(&self) -> Vec<String> {
        self.names.borrow().clone()
    }
}

/// Families of one concern registered into a registry of their own (for tests).
#[cfg(test)]
pub(crate) fn scratch<T>(register: impl FnOnce(&Registrar) -> T) -> T {
    register(&Registrar::new(&Registry::new()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_buckets_are_prometheus_own() {
        let theirs = pingora_prometheus::prometheus::exponential_buckets(0.0005, 2.0, 16).unwrap();
        assert_eq!(super::exponential_buckets(0.0005, 2.0, 16), theirs);
    }
}
