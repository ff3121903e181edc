//! The task records' metric families: every decision about a task, by pool. Registered by
//! [`TaskMetrics::register`], held by [`super::Tasks`].

use crate::metrics::Registrar;
use pingora_prometheus::prometheus::{IntCounterVec, IntGaugeVec};

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
        }
    }

    /// Counts one `event` of `pool`.
    pub fn count(&self, pool: &str, event: &str) {
        self.events.with_label_values(&[pool, event]).inc();
    }
}
