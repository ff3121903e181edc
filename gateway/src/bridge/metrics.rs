//! The metric families of the era bridges: `input_required` rounds fulfilled for legacy
//! clients and the bridge errors answered to them; the pooled backend sessions held for
//! 2026-07-28 clients on legacy backends and their calls parked for input. Registered by
//! [`BridgeMetrics::register`], held by the bridges.

use crate::metrics::Registrar;
use pingora_prometheus::prometheus::{IntCounterVec, IntGaugeVec};

/// The era bridges' families.
#[derive(Clone)]
pub struct BridgeMetrics {
    /// `mcpgw_bridge_rounds_total{pool}`: `input_required` rounds the bridge fulfilled for
    /// legacy clients (server→client requests sent, call retried).
    pub bridge_rounds: IntCounterVec,
    /// `mcpgw_bridge_errors_total{pool,kind}`: bridged calls answered with a bridge error
    /// (missing-client-capability, bridge-rounds-exceeded, not-bridged, input-not-given,
    /// untranslatable).
    pub bridge_errors: IntCounterVec,
    /// `mcpgw_pooled_sessions{pool}`: backend sessions the gateway holds open on legacy
    /// backends for 2026-07-28 clients (the reverse bridge).
    pub pooled_sessions: IntGaugeVec,
    /// `mcpgw_pooled_session_events_total{pool,event}`: pooled backend sessions `opened`,
    /// `reused`, `expired` (idle, DELETE sent), `evicted` (room for another), `dropped` (the
    /// backend forgot it or died).
    pub pooled_session_events: IntCounterVec,
    /// `mcpgw_mrtr_parked{pool}`: calls of legacy backends parked while a 2026-07-28 client
    /// answers an `input_required`.
    pub mrtr_parked: IntGaugeVec,
    /// `mcpgw_mrtr_events_total{pool,event}`: `parked` (an `input_required` round answered),
    /// `resumed` (its retry taken), `expired` (nobody retried: answered upstream), `refused`
    /// (the client lacked the capability: -32021), `bad-state` (a retry refused: -32602),
    /// `forwarded` / `forward-failed` (a retry sent on to the replica holding its call).
    pub mrtr_events: IntCounterVec,
}

impl BridgeMetrics {
    /// Creates the families and registers them.
    pub fn register(families: &Registrar) -> BridgeMetrics {
        BridgeMetrics {
            bridge_rounds: families.counter(
                "mcpgw_bridge_rounds_total",
                "input_required rounds the era bridge fulfilled for legacy clients",
                &["pool"],
            ),
            bridge_errors: families.counter(
                "mcpgw_bridge_errors_total",
                "Bridged calls answered with a bridge error, by kind",
                &["pool", "kind"],
            ),
            pooled_sessions: families.gauge(
                "mcpgw_pooled_sessions",
                "Backend sessions held open on legacy backends for 2026-07-28 clients",
                &["pool"],
            ),
            pooled_session_events: families.counter(
                "mcpgw_pooled_session_events_total",
                "Pooled backend sessions opened, reused, expired, evicted, dropped",
                &["pool", "event"],
            ),
            mrtr_parked: families.gauge(
                "mcpgw_mrtr_parked",
                "Calls of legacy backends parked for a 2026-07-28 client's input",
                &["pool"],
            ),
            mrtr_events: families.counter(
                "mcpgw_mrtr_events_total",
                "input_required rounds for 2026-07-28 clients on legacy backends: parked, resumed, expired, refused, bad-state, forwarded, forward-failed",
                &["pool", "event"],
            ),
        }
    }
}
