//! Logs an operator can trust: what the gateway keeps out of its WARN and ERROR lines, and
//! how what it keeps out is still counted.
//!
//! - [`demoted`]: log records moved down to DEBUG (by `logging.rs`, for pingora's records,
//!   and by [`Outage`]), counted in `mcpgw_log_records_demoted_total{record}`. The `log` facade
//!   is global, so this one family is a process-wide static, registered into the admin
//!   registry by [`register`] (every other family is built in `metrics.rs`).
//! - [`Outage`]: one WARN per outage, not one per request. The first failure after
//!   [`Outage::QUIET`] without any is logged at WARN; the ones that follow it (the same outage)
//!   at DEBUG, counted as `record="store-outage"` (the store's own failures are also in
//!   `mcpgw_store_errors_total{op}`).

use pingora_prometheus::prometheus::{IntCounterVec, Opts, Registry};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Records moved to DEBUG: `pool-race` (pingora's "failed to acquire reusable stream"),
/// `client-gone` (pingora's `Downstream` errors), `answered` (pingora's "Fail to proxy" for
/// a request the gateway answered with a documented error), `retried` (pingora's retry
/// warning after a refused connect the gateway retried elsewhere), `store-outage` (a session
/// store failure within an outage already logged), `store-client` (the `redis` crate's own
/// records of failed connects and slot refreshes).
pub const RECORDS: &[&str] = &[
    "pool-race",
    "client-gone",
    "answered",
    "retried",
    "store-outage",
    "store-client",
];

fn family() -> &'static IntCounterVec {
    static FAMILY: OnceLock<IntCounterVec> = OnceLock::new();
    FAMILY.get_or_init(|| {
        #[expect(
            clippy::expect_used,
            reason = "a literal name, help and label: valid for any run, as the tests show"
        )]
        let c = IntCounterVec::new(
            Opts::new(
                "mcpgw_log_records_demoted_total",
                "Log records moved to DEBUG (handled conditions), by record",
            ),
            &["record"],
        )
        .expect("valid metric");
        for r in RECORDS {
            c.with_label_values(&[r]);
        }
        c
    })
}

/// Counts a record moved to DEBUG; `record` is one of [`RECORDS`].
pub fn demoted(record: &'static str) {
    family().with_label_values(&[record]).inc();
}

/// How many records of this kind were moved to DEBUG so far (tests).
pub fn demoted_count(record: &str) -> u64 {
    family().with_label_values(&[record]).get()
}

/// Registers `mcpgw_log_records_demoted_total` into the admin registry (once per registry).
pub fn register(registry: &Registry) {
    let _ = registry.register(Box::new(family().clone()));
}

/// A dependency whose failures come in outages (the session store): one WARN per outage.
pub struct Outage {
    name: &'static str,
    last: Mutex<Option<Instant>>,
}

/// The session store (memory or Redis): failures that do not fail the request (recording a
/// session's use, a setting, a lost binding, a stream event written through).
pub static STORE: Outage = Outage::new("session store");

impl Outage {
    /// Failures further apart than this are separate outages.
    pub const QUIET: Duration = Duration::from_secs(10);

    /// An outage tracker for `name`.
    pub const fn new(name: &'static str) -> Outage {
        Outage {
            name,
            last: Mutex::new(None),
        }
    }

    /// Whether a failure now starts a new outage (and notes it): the caller logs its WARN,
    /// or, when not, counts the failure with [`demoted`]`("store-outage")`.
    pub fn starts_outage(&self, now: Instant) -> bool {
        let mut last = crate::sync::lock(&self.last);
        let fresh = last.is_none_or(|t| now.duration_since(t) > Self::QUIET);
        *last = Some(now);
        fresh
    }

    /// A failure: `what` did not happen because of `error`. WARN if it starts an outage,
    /// else DEBUG (counted).
    pub fn failed(&self, what: &'static str, error: &dyn std::fmt::Display) {
        if self.starts_outage(Instant::now()) {
            tracing::warn!(
                dependency = self.name,
                error = %error,
                "{what}: the {} is failing; further failures are logged at debug until it has been quiet for {} s (counted in mcpgw_store_errors_total and mcpgw_log_records_demoted_total)",
                self.name,
                Self::QUIET.as_secs()
            );
        } else {
            demoted("store-outage");
            tracing::debug!(dependency = self.name, error = %error, "{what}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_outage_warns_once_and_a_later_one_again() {
        let o = Outage::new("test store");
        let t0 = Instant::now();
        assert!(o.starts_outage(t0));
        for i in 1..50 {
            assert!(!o.starts_outage(t0 + Duration::from_millis(100 * i)));
        }
        let later = t0 + Duration::from_millis(4900) + Outage::QUIET + Duration::from_secs(1);
        assert!(o.starts_outage(later));
    }

    #[test]
    fn demoted_records_are_counted() {
        let before = demoted_count("store-outage");
        STORE.failed("test", &"boom");
        STORE.failed("test", &"boom");
        assert!(demoted_count("store-outage") > before);
    }
}
