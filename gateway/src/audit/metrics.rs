//! The audit trail's metric families.

use crate::metrics::Registrar;
use pingora_prometheus::prometheus::{IntCounterVec, IntGaugeVec, Registry};

/// The audit trail's families.
#[derive(Clone)]
pub struct AuditMetrics {
    /// `mcpgw_audit_records_total{event}`: records handed to the sinks, by event.
    pub records: IntCounterVec,
    /// `mcpgw_audit_dropped_total{reason}`: records lost: `queue-full` (the writer was behind;
    /// never waited for), `unwritable` (the file or standard output refused it), `otlp` (the
    /// collector did not take the batch).
    pub dropped: IntCounterVec,
    /// `mcpgw_audit_sink_healthy`: 1 while the sink writes (or audit is off), 0 while it
    /// cannot (with `audit.required` calls are refused then).
    pub healthy: IntGaugeVec,
}

impl AuditMetrics {
    /// Creates the families and registers them.
    pub fn register(families: &Registrar) -> AuditMetrics {
        let metrics = AuditMetrics {
            records: families.counter(
                "mcpgw_audit_records_total",
                "Audit records handed to the sinks, by event",
                &["event"],
            ),
            dropped: families.counter(
                "mcpgw_audit_dropped_total",
                "Audit records lost: queue-full, unwritable, otlp",
                &["reason"],
            ),
            healthy: families.gauge(
                "mcpgw_audit_sink_healthy",
                "1 while the audit sink writes (or audit is off), 0 while it cannot",
                &[],
            ),
        };
        metrics.healthy.with_label_values::<&str>(&[]).set(1);
        metrics
    }

    /// Families in a registry of their own (tests, and a handle no server registered).
    pub fn unregistered() -> AuditMetrics {
        AuditMetrics::register(&Registrar::new(&Registry::new()))
    }

    /// Counts one record lost for `reason`.
    pub(super) fn drop_one(&self, reason: &str) {
        self.dropped.with_label_values(&[reason]).inc();
    }

    /// Sets the health gauge.
    pub(super) fn set_healthy(&self, healthy: bool) {
        self.healthy
            .with_label_values::<&str>(&[])
            .set(i64::from(healthy));
    }
}
