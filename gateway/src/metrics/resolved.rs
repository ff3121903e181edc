//! Per-request metric children resolved once: [`Resolved`], and a route's children
//! (`mcpgw_requests_total`, `mcpgw_request_duration_seconds`, families of
//! `proxy::metrics::RequestMetrics`) kept with the route.

use pingora_prometheus::prometheus::{Histogram, IntCounter};
use std::sync::OnceLock;

/// Children of one metric family, each looked up the first time its label values are used and
/// then kept. `with_label_values` hashes the values and takes the family's lock on every call;
/// a request made several such calls. Slot `i` must always stand for the same label values.
pub struct Resolved<M>(Box<[OnceLock<M>]>);

impl<M> Resolved<M> {
    /// `slots` empty slots.
    pub fn new(slots: usize) -> Resolved<M> {
        Resolved((0..slots).map(|_| OnceLock::new()).collect())
    }

    /// Slot `i`'s child, looked up by `make` the first time; `None` past the last slot.
    pub fn get(&self, i: usize, make: impl FnOnce() -> M) -> Option<&M> {
        self.0.get(i).map(|slot| slot.get_or_init(make))
    }
}

impl<M> std::fmt::Debug for Resolved<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let used = self.0.iter().filter(|s| s.get().is_some()).count();
        write!(f, "Resolved({used} of {})", self.0.len())
    }
}

/// The outcomes of a request the backend answered: the ones with a slot in [`RouteMetrics`].
pub const ANSWERED: [&str; 7] = [
    "ok",
    "4xx",
    "5xx",
    "dropped",
    "client-gone",
    "tool-error",
    "rpc-error",
];

/// A route's children of the per-request families, resolved once per route (a config load
/// builds new routes, which resolve again: the series stay the registry's).
#[derive(Debug)]
pub struct RouteMetrics {
    /// `mcpgw_requests_total`, by method and answered outcome.
    pub(crate) requests: Resolved<IntCounter>,
    /// `mcpgw_request_duration_seconds`, by method.
    pub(crate) duration: Resolved<Histogram>,
    /// `mcpgw_tool_calls_total`, by tool (the first [`TOOL_SLOTS`] of `metrics.tools`, then
    /// `other`) and answered outcome.
    pub(crate) tool_calls: Resolved<IntCounter>,
}

/// The named tools of `metrics.tools` whose `mcpgw_tool_calls_total` children a route keeps
/// (any further one is looked up per call); slot [`TOOL_SLOTS`] is `other`.
pub const TOOL_SLOTS: usize = 16;

impl Default for RouteMetrics {
    fn default() -> Self {
        let methods = mcp_wire::METHOD_LABELS;
        RouteMetrics {
            requests: Resolved::new(methods * ANSWERED.len()),
            duration: Resolved::new(methods),
            tool_calls: Resolved::new((TOOL_SLOTS + 1) * ANSWERED.len()),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn method_labels_have_distinct_slots() {
        use mcp_wire::{method_index, method_label, KNOWN_METHODS, METHOD_LABELS};
        let mut seen = std::collections::HashSet::new();
        for m in KNOWN_METHODS {
            assert!(seen.insert(method_index(method_label(Some(m)))));
        }
        assert!(seen.insert(method_index(method_label(None))));
        assert!(seen.insert(method_index(method_label(Some("x/unknown")))));
        assert!(seen.iter().all(|i| *i < METHOD_LABELS));
        // the same text from elsewhere finds the same slot
        let owned = String::from("tools/call");
        assert_eq!(method_index(&owned), method_index("tools/call"));
    }
}
