//! The interceptors' metric families. Registered by [`InterceptorMetrics::register`] at start
//! (`server.rs`), held by every snapshot's [`super::Interceptors`] (the same families across
//! reloads). Labels are bounded: `interceptor` is `SERVER/NAME` of a list cut to
//! `max-interceptors`, from configured servers; `phase` and `result` are fixed words.

use crate::metrics::Registrar;
use pingora_prometheus::prometheus::{HistogramVec, IntCounterVec};
use std::time::Duration;

/// The interceptors' families.
#[derive(Clone)]
pub struct InterceptorMetrics {
    /// `mcpgw_interceptor_invocations_total{interceptor,phase,result}`: each invocation by
    /// what came of it: `pass`, `deny`, `mutated`, `unchanged`, `recorded` (a sink), `audit-deny`
    /// and `audit-mutated` (audit mode: recorded, not applied), or a failure (`timeout`,
    /// `unreachable`, `garbage`, `error`, `invalid-mutation`, `payload-too-large`), suffixed
    /// `-open` when it was passed by (`failOpen` or audit mode).
    pub invocations: IntCounterVec,
    /// `mcpgw_interceptor_duration_seconds{interceptor,phase}`: each invocation's time.
    pub duration: HistogramVec,
    /// `mcpgw_interceptor_lists_total{server,result}`: `interceptors/list` asked: `ok`, or a
    /// failure reason.
    pub lists: IntCounterVec,
    /// `mcpgw_interceptor_tokens_total{server,event}`: client-credentials tokens of
    /// interceptor servers (as `mcpgw_upstream_tokens_total` for pools).
    pub tokens: IntCounterVec,
}

impl InterceptorMetrics {
    /// Creates the families and registers them.
    pub fn register(families: &Registrar) -> InterceptorMetrics {
        InterceptorMetrics {
            invocations: families.counter(
                "mcpgw_interceptor_invocations_total",
                "Interceptor invocations (SEP-2624) by interceptor, phase and result",
                &["interceptor", "phase", "result"],
            ),
            duration: families.histogram(
                "mcpgw_interceptor_duration_seconds",
                "The time of one interceptor invocation",
                &["interceptor", "phase"],
                crate::metrics::exponential_buckets(0.0005, 2.0, 16),
            ),
            lists: families.counter(
                "mcpgw_interceptor_lists_total",
                "interceptors/list requests to interceptor servers, by server and result",
                &["server", "result"],
            ),
            tokens: families.counter(
                "mcpgw_interceptor_tokens_total",
                "Interceptor servers' tokens (client credentials): hit, fetched, refreshed, invalidated, failed-<reason>",
                &["server", "event"],
            ),
        }
    }

    /// Families registered nowhere (a snapshot built before `server.rs` hands it the real ones,
    /// and tests).
    pub fn unregistered() -> InterceptorMetrics {
        let registry = pingora_prometheus::prometheus::Registry::new();
        InterceptorMetrics::register(&Registrar::new(&registry))
    }

    /// Counts one invocation and its time.
    pub fn invoked(&self, interceptor: &str, phase: &str, result: &str, took: Duration) {
        self.invocations
            .with_label_values(&[interceptor, phase, result])
            .inc();
        self.duration
            .with_label_values(&[interceptor, phase])
            .observe(took.as_secs_f64());
    }
}
