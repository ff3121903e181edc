//! The task records' metric families: every decision about a task, by pool. Registered by
//! [`TaskMetrics::register`], held by [`super::Tasks`].

use crate::metrics::{Registrar, Resolved};
use pingora_prometheus::prometheus::{IntCounter, IntCounterVec, IntGaugeVec};

/// The events of `mcpgw_tasks_total`, each a slot of a pool's resolved children.
const EVENTS: [&str; 8] = [
    "created",
    "unrecorded",
    "routed",
    "balanced",
    "unknown",
    "foreign",
    "lost",
    "expired",
];

/// The task records' families.
#[derive(Clone)]
pub struct TaskMetrics {
    /// `mcpgw_tasks_total{pool,event}`: `created` (a task handle recorded), `unrecorded` (a
    /// handle past `tasks.max-records` or `max-per-principal`, or with an id over
    /// `max-id-bytes`: not recorded), `routed` (a task request sent to the pod holding the
    /// task), `balanced` (one for a task of a `tasks: shared` pool, balanced), `unknown` (one
    /// for a task the gateway has no record of, balanced), `foreign` (one for another
    /// principal's task: answered as unknown), `lost` (answered -32038: the pod is gone or
    /// forgot it), `expired` (a record past its TTL, dropped).
    pub events: IntCounterVec,
    /// `mcpgw_task_records`: the task records this replica holds (its own cache in front of
    /// Redis).
    pub records: IntGaugeVec,
    /// Each pool's `events` children, resolved once (a task request counts one; prometheus'
    /// `with_label_values` hashes both values and takes the family's lock every time).
    resolved: std::sync::Arc<dashmap::DashMap<String, Resolved<IntCounter>>>,
}

impl TaskMetrics {
    /// Creates the families and registers them.
    pub fn register(families: &Registrar) -> TaskMetrics {
        TaskMetrics {
            events: families.counter(
                "mcpgw_tasks_total",
                "Task handles recorded and task requests routed, balanced, lost, by pool",
                &["pool", "event"],
            ),
            records: families.gauge(
                "mcpgw_task_records",
                "Task records held by this replica",
                &[],
            ),
            resolved: Default::default(),
        }
    }

    /// Counts one `event` of `pool`.
    pub fn count(&self, pool: &str, event: &str) {
        let Some(slot) = EVENTS.iter().position(|e| *e == event) else {
            self.events.with_label_values(&[pool, event]).inc();
            return;
        };
        let make = || self.events.with_label_values(&[pool, event]);
        if let Some(children) = self.resolved.get(pool) {
            if let Some(c) = children.get(slot, make) {
                c.inc();
            }
            return;
        }
        let children = self
            .resolved
            .entry(pool.to_owned())
            .or_insert_with(|| Resolved::new(EVENTS.len()));
        if let Some(c) = children.get(slot, make) {
            c.inc();
        }
    }
}
