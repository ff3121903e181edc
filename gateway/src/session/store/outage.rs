//! Whether the shared session store is in an outage, as this replica sees it: one WARN when an
//! outage begins and one INFO when it ends (never one line per request), counted in
//! `mcpgw_store_unavailable_total`, and the answer [`super::Cached`] reads to serve sessions
//! from the copies it holds without waiting on a store that is down.
//!
//! An outage begins with the first failed store operation and ends once the store has
//! answered every retried write and every probe for [`QUIET`] with no failure in between: a
//! cluster whose one failed master is being replaced answers for the other slots meanwhile, and
//! that is not the end of the outage.

use super::metrics::StoreMetrics;
use super::StoreError;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long the store must answer without a failure before an outage is over.
pub(super) const QUIET: Duration = Duration::from_secs(2);

#[derive(Default)]
struct State {
    /// When the outage began (`None`: no outage).
    since: Option<Instant>,
    last_failure: Option<Instant>,
    /// Failures seen in this outage.
    failures: u64,
    /// The retry task runs (one per store at a time).
    retrying: bool,
}

/// The store's availability, as this replica sees it.
pub(super) struct Outage {
    state: Mutex<State>,
    metrics: Option<StoreMetrics>,
}

impl Outage {
    /// Counted into `metrics` (`None` in unit tests that need no registry).
    pub(super) fn new(metrics: Option<StoreMetrics>) -> Outage {
        Outage {
            state: Mutex::new(State::default()),
            metrics,
        }
    }

    /// Records a failed operation; `true` when the caller must start the retry task (none
    /// runs yet).
    pub(super) fn failed(&self, op: &str, e: &StoreError) -> bool {
        let mut s = crate::sync::lock(&self.state);
        let now = Instant::now();
        s.last_failure = Some(now);
        s.failures += 1;
        if s.since.is_none() {
            s.since = Some(now);
            if let Some(m) = &self.metrics {
                m.store_unavailable.with_label_values::<&str>(&[]).inc();
            }
            // one WARN per outage, whichever part of the gateway sees it fail first
            if crate::quiet::STORE.starts_outage(now) {
                tracing::warn!(
                    op,
                    error = %e.detail,
                    "session store unavailable: sessions are served from this replica's copies, \
                     their writes queued; new sessions and moves get 503 -32006 until it is back"
                );
            } else {
                crate::quiet::demoted("store-outage");
            }
        }
        !std::mem::replace(&mut s.retrying, true)
    }

    /// Whether an outage is on.
    pub(super) fn down(&self) -> bool {
        crate::sync::lock(&self.state).since.is_some()
    }

    /// After a retry round: `clean` when everything in it succeeded. Returns `true` when the
    /// outage is over (the retry task stops), logging its end once.
    pub(super) fn settle(&self, clean: bool, replayed: usize) -> bool {
        let mut s = crate::sync::lock(&self.state);
        let quiet = s.last_failure.is_none_or(|t| t.elapsed() >= QUIET);
        if !(clean && quiet) {
            return false;
        }
        if let Some(since) = s.since.take() {
            tracing::info!(
                outage_ms = since.elapsed().as_millis() as u64,
                failures = s.failures,
                replayed,
                "session store available again"
            );
        }
        s.failures = 0;
        s.retrying = false;
        true
    }

    /// Counts an operation done without the store (`mcpgw_store_fallbacks_total{op}`).
    pub(super) fn fell_back(&self, op: &str) {
        if let Some(m) = &self.metrics {
            m.store_fallbacks.with_label_values(&[op]).inc();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err() -> StoreError {
        StoreError {
            detail: "down".into(),
        }
    }

    #[test]
    fn an_outage_starts_the_retry_task_once_and_ends_only_after_a_quiet_clean_round() {
        let outage = Outage::new(None);
        assert!(!outage.down());
        assert!(
            outage.failed("get", &err()),
            "the first failure starts the task"
        );
        assert!(!outage.failed("touch", &err()), "one task per outage");
        assert!(outage.down());
        assert!(!outage.settle(false, 0), "a round with a failure");
        assert!(
            !outage.settle(true, 0),
            "clean, but a failure was just seen"
        );
        crate::sync::lock(&outage.state).last_failure = Some(Instant::now() - QUIET);
        assert!(outage.settle(true, 3));
        assert!(!outage.down());
        assert!(
            outage.failed("get", &err()),
            "a new outage starts a new task"
        );
    }
}
