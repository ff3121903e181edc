//! Tool pinning's metric families, registered once at start (the same across reloads).

use crate::metrics::Registrar;
use pingora_prometheus::prometheus::IntCounterVec;

/// Tool pinning's families.
#[derive(Clone)]
pub struct PinMetrics {
    /// `mcpgw_tool_definition_changes_total{pool,kind}`: a definition seen that differs from
    /// the pin (`changed`), a tool without a pin after the first list (`new`), the pin seen
    /// again after a change (`reverted`).
    pub changes: IntCounterVec,
    /// `mcpgw_tool_pins_refused_total{pool,reason}`: definitions not pinned for a bound
    /// (`too-many-tools`, `definition-too-large`) or a tool entry without a name (`unnamed`).
    pub refused: IntCounterVec,
    /// `mcpgw_tool_pins_store_errors_total{pool}`: pins not written to (or read from) the
    /// state file or Redis.
    pub store_errors: IntCounterVec,
    /// `mcpgw_tool_pins_decisions_total{pool,decision}`: operators' `approved` and `rejected`.
    pub decisions: IntCounterVec,
}

impl PinMetrics {
    /// Families counted nowhere (a snapshot without the process's pins).
    pub fn unregistered() -> PinMetrics {
        PinMetrics::register(&Registrar::new(
            &pingora_prometheus::prometheus::Registry::new(),
        ))
    }

    /// Creates the families and registers them.
    pub fn register(families: &Registrar) -> PinMetrics {
        PinMetrics {
            changes: families.counter(
                "mcpgw_tool_definition_changes_total",
                "Tool definitions seen in a pool's lists that differ from their pins, by pool and kind (new, changed, reverted)",
                &["pool", "kind"],
            ),
            refused: families.counter(
                "mcpgw_tool_pins_refused_total",
                "Tool definitions not pinned for a bound, by pool and reason",
                &["pool", "reason"],
            ),
            store_errors: families.counter(
                "mcpgw_tool_pins_store_errors_total",
                "Tool pins not written to or read from the state file or Redis, by pool",
                &["pool"],
            ),
            decisions: families.counter(
                "mcpgw_tool_pins_decisions_total",
                "Operators' decisions on pending tool definitions, by pool and decision",
                &["pool", "decision"],
            ),
        }
    }
}
