//! The response cache's metric families. Registered by [`CacheMetrics::register`], held by
//! every snapshot's [`super::Cache`] (the same families across reloads).

use crate::metrics::Registrar;
use pingora_prometheus::prometheus::{IntCounterVec, IntGaugeVec};

/// The response cache's families.
#[derive(Clone)]
pub struct CacheMetrics {
    /// `mcpgw_cache_total{route,method,result}`: `hit` (answered from the cache), `miss`
    /// (asked upstream, the answer kept), `bypass` (asked upstream, nothing kept: not
    /// cacheable, `ttlMs` 0, private without a credential, too large, a retry),
    /// `waited` (a concurrent miss of the same request served by the one in flight),
    /// `evicted` (a result dropped for room).
    pub events: IntCounterVec,
    /// `mcpgw_cache_bytes`: the bytes of the results held.
    pub bytes: IntGaugeVec,
    /// `mcpgw_cache_entries`: the results held.
    pub entries: IntGaugeVec,
}

impl CacheMetrics {
    /// Creates the families and registers them.
    pub fn register(families: &Registrar) -> CacheMetrics {
        CacheMetrics {
            events: families.counter(
                "mcpgw_cache_total",
                "Cacheable 2026-07-28 requests answered from the cache or upstream, by route, method and result",
                &["route", "method", "result"],
            ),
            bytes: families.gauge("mcpgw_cache_bytes", "Bytes of cached results held", &[]),
            entries: families.gauge("mcpgw_cache_entries", "Cached results held", &[]),
        }
    }

    /// Counts one `result` of `method` on `route`.
    pub fn count(&self, route: &str, method: &str, result: &str) {
        self.events
            .with_label_values(&[route, method, result])
            .inc();
    }
}
