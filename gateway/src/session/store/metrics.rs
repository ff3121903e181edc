//! The metric families of the session store: operations timed and failed (`Instrumented`),
//! outages and what was done without the store through one (`Cached`, `outage.rs`).
//! Registered by [`StoreMetrics::register`].

use crate::metrics::Registrar;
use pingora_prometheus::prometheus::{HistogramVec, IntCounterVec};

/// The session store families.
#[derive(Clone)]
pub struct StoreMetrics {
    /// `mcpgw_store_duration_seconds{op}`: session store operations (get, create, rebind, ...).
    pub store_duration: HistogramVec,
    /// `mcpgw_store_errors_total{op}`: session store operations that failed (the request was
    /// answered with -32006 where one was waiting).
    pub store_errors: IntCounterVec,
    /// `mcpgw_store_unavailable_total`: outages of the session store as this replica saw them
    /// (one per outage, however many requests it met).
    pub store_unavailable: IntCounterVec,
    /// `mcpgw_store_fallbacks_total{op}`: operations done without the store during an outage:
    /// `get` (a session served from this replica's copy), `touch` and `update_settings`
    /// (queued, written when it is back), `dropped` (over the queue's bounds).
    pub store_fallbacks: IntCounterVec,
}

impl StoreMetrics {
    /// Creates the families and registers them.
    pub fn register(families: &Registrar) -> StoreMetrics {
        StoreMetrics {
            store_duration: families.histogram(
                "mcpgw_store_duration_seconds",
                "Session store operations, by operation",
                &["op"],
                vec![
                    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                    1.0,
                ],
            ),
            store_errors: families.counter(
                "mcpgw_store_errors_total",
                "Session store operations that failed, by operation",
                &["op"],
            ),
            store_unavailable: families.counter(
                "mcpgw_store_unavailable_total",
                "Outages of the session store seen by this replica",
                &[],
            ),
            store_fallbacks: families.counter(
                "mcpgw_store_fallbacks_total",
                "Session store operations done without the store during an outage, by operation",
                &["op"],
            ),
        }
    }
}
