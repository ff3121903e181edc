//! The metric families of the session lifecycle: sessions created, moved (re-initialized),
//! ended, and bound to each backend. Registered by [`SessionMetrics::register`], held by the
//! [`SessionManager`](super::SessionManager).

use crate::metrics::Registrar;
use pingora_prometheus::prometheus::{IntCounterVec, IntGaugeVec};
use std::collections::HashSet;
use std::net::SocketAddr;

/// The session lifecycle families.
#[derive(Clone)]
pub struct SessionMetrics {
    /// `mcpgw_sessions_active{pool,backend}`: gateway sessions bound to each backend.
    pub sessions_active: IntGaugeVec,
    /// `mcpgw_sessions_created_total{pool}`: sessions created by a client's initialize.
    pub sessions_created: IntCounterVec,
    /// `mcpgw_session_reinits_total{pool,reason}`: sessions moved to another backend by
    /// replaying initialize; reason is backend-down, connect-refused, session-unknown or
    /// connection-lost.
    pub session_reinits: IntCounterVec,
    /// `mcpgw_session_moves_started_total{pool,trigger}`: moves this replica began
    /// (re-initializing on a survivor), by trigger: `on-demand` (a request found the binding
    /// unusable) or `background` (the backend was known dead: `session/evacuate.rs`).
    pub session_moves_started: IntCounterVec,
    /// `mcpgw_session_moves_finished_total{pool,trigger,outcome}`: those moves finished:
    /// `moved`, `lost-race` (another replica moved it first), `failed`.
    pub session_moves_finished: IntCounterVec,
    /// `mcpgw_sessions_ended_total{pool,reason}`: sessions ended: expired, deleted, or lost
    /// (version-mismatch: no backend could take them over).
    pub sessions_ended: IntCounterVec,
}

impl SessionMetrics {
    /// Creates the families and registers them.
    pub fn register(families: &Registrar) -> SessionMetrics {
        SessionMetrics {
            sessions_active: families.gauge(
                "mcpgw_sessions_active",
                "Gateway sessions bound to each backend",
                &["pool", "backend"],
            ),
            sessions_created: families.counter(
                "mcpgw_sessions_created_total",
                "Sessions created by a client's initialize",
                &["pool"],
            ),
            session_reinits: families.counter(
                "mcpgw_session_reinits_total",
                "Sessions re-initialized on another backend, by reason",
                &["pool", "reason"],
            ),
            session_moves_started: families.counter(
                "mcpgw_session_moves_started_total",
                "Session moves begun by this replica, by trigger (on-demand, background)",
                &["pool", "trigger"],
            ),
            session_moves_finished: families.counter(
                "mcpgw_session_moves_finished_total",
                "Session moves finished, by trigger and outcome (moved, lost-race, failed)",
                &["pool", "trigger", "outcome"],
            ),
            sessions_ended: families.counter(
                "mcpgw_sessions_ended_total",
                "Sessions ended, by reason (expired, deleted, version-mismatch)",
                &["pool", "reason"],
            ),
        }
    }
}

impl SessionMetrics {
    /// Sets `mcpgw_sessions_active` of `pool`'s members from the store's `counts` (at scrape
    /// time, off the hot path).
    pub fn publish_active(&self, pool: &crate::upstream::Pool, counts: &[(SocketAddr, usize)]) {
        for b in pool.backends().iter() {
            let n = counts
                .iter()
                .find(|(addr, _)| *addr == b.addr)
                .map_or(0, |(_, n)| *n);
            self.sessions_active
                .with_label_values(&[pool.name.as_str(), b.label.as_str()])
                .set(n as i64);
        }
    }

    /// Removes the `mcpgw_sessions_active` series whose `(pool, backend label)` is not in
    /// `live`; the number removed.
    pub fn retain_backends(&self, live: &HashSet<(&str, &str)>) -> usize {
        crate::metrics::retain_backends(&self.sessions_active, live)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replaced_backend_loses_its_sessions_series() {
        let m = crate::metrics::scratch(SessionMetrics::register);
        m.sessions_active
            .with_label_values(&["p", "10.0.0.1:80"])
            .set(2);
        m.sessions_active
            .with_label_values(&["p", "10.0.0.2:80"])
            .set(1);
        let live = HashSet::from([("p", "10.0.0.2:80")]);
        assert_eq!(m.retain_backends(&live), 1);
        assert_eq!(m.retain_backends(&live), 0);
        assert_eq!(
            m.sessions_active
                .with_label_values(&["p", "10.0.0.2:80"])
                .get(),
            1
        );
    }
}
