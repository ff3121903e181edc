//! The metric family of admission control: requests and connections refused, by reason.
//! Registered by [`AdmissionMetrics::register`], held by the running state (connections
//! refused by the listener) and the proxy (requests answered with a rejection).

use crate::metrics::Registrar;
use pingora_prometheus::prometheus::IntCounterVec;

/// The admission families.
#[derive(Clone)]
pub struct AdmissionMetrics {
    /// `mcpgw_rejections_total{reason}`: requests refused by admission control: rate-limited,
    /// overloaded, session-limit, body-too-large.
    pub rejections: IntCounterVec,
}

impl AdmissionMetrics {
    /// Creates the families and registers them.
    pub fn register(families: &Registrar) -> AdmissionMetrics {
        AdmissionMetrics {
            rejections: families.counter(
                "mcpgw_rejections_total",
                "Requests refused by admission control, by reason",
                &["reason"],
            ),
        }
    }
}

impl AdmissionMetrics {
    /// Counts a refusal for `reason` (a rejection kind, `connections`, `client-connections`).
    pub fn rejected(&self, reason: &str) {
        self.rejections.with_label_values(&[reason]).inc();
    }
}
