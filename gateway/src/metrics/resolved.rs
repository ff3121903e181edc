//! Per-request metric children resolved once: a route's (`mcpgw_requests_total`,
//! `mcpgw_request_duration_seconds`) and the era families'.

use super::Metrics;
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
const ANSWERED: [&str; 7] = [
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
    requests: Resolved<IntCounter>,
    /// `mcpgw_request_duration_seconds`, by method.
    duration: Resolved<Histogram>,
}

impl Default for RouteMetrics {
    fn default() -> Self {
        let methods = mcp_wire::METHOD_LABELS;
        RouteMetrics {
            requests: Resolved::new(methods * ANSWERED.len()),
            duration: Resolved::new(methods),
        }
    }
}

impl Metrics {
    /// Records a finished request in `mcpgw_requests_total` and
    /// `mcpgw_request_duration_seconds`: through its route's resolved children when it has a
    /// route (`route`), by lookup otherwise and for rejections (many kinds, rarer).
    pub fn finished(
        &self,
        route: Option<&RouteMetrics>,
        label: &str,
        method: &'static str,
        outcome: &str,
        seconds: f64,
    ) {
        let m = mcp_wire::method_index(method);
        let answered = ANSWERED.iter().position(|o| *o == outcome);
        let labels = [label, method, outcome];
        let counter = route.zip(answered).and_then(|(r, o)| {
            let make = || self.requests.with_label_values(&labels);
            r.requests.get(m * ANSWERED.len() + o, make)
        });
        match counter {
            Some(c) => c.inc(),
            None => self.requests.with_label_values(&labels).inc(),
        }
        let make = || self.request_duration.with_label_values(&[label, method]);
        match route.and_then(|r| r.duration.get(m, make)) {
            Some(h) => h.observe(seconds),
            None => self
                .request_duration
                .with_label_values(&[label, method])
                .observe(seconds),
        }
    }
}

/// The children of the per-request families whose labels are fixed sets (eras).
#[derive(Debug)]
pub struct EraMetrics {
    /// `mcpgw_requests_by_era_total`, by client era.
    pub(super) by_era: Resolved<IntCounter>,
    /// `mcpgw_requests_by_eras_total`, by client era and backend era.
    pub(super) by_eras: Resolved<IntCounter>,
}

/// Backend era labels of `mcpgw_requests_by_eras_total`.
pub(super) const BACKEND_ERAS: [&str; 5] = ["none", "unknown", "legacy", "modern", "dual"];

impl Metrics {
    /// Counts a request of `era` in `mcpgw_requests_by_era_total`.
    pub fn count_era(&self, era: mcp_wire::Era) {
        let label = era.as_str();
        let make = || self.requests_by_era.with_label_values(&[label]);
        match self.eras.by_era.get(era as usize, make) {
            Some(c) => c.inc(),
            None => self.requests_by_era.with_label_values(&[label]).inc(),
        }
    }

    /// Counts a finished request in `mcpgw_requests_by_eras_total`.
    pub fn count_eras(&self, client: mcp_wire::Era, backend: &'static str) {
        let labels = [client.as_str(), backend];
        let slot = BACKEND_ERAS
            .iter()
            .position(|b| *b == backend)
            .map(|b| client as usize * BACKEND_ERAS.len() + b);
        let make = || self.requests_by_eras.with_label_values(&labels);
        match slot.and_then(|i| self.eras.by_eras.get(i, make)) {
            Some(c) => c.inc(),
            None => self.requests_by_eras.with_label_values(&labels).inc(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pingora_prometheus::prometheus::Registry;

    #[test]
    fn resolved_counts_land_in_the_same_series_as_a_lookup() {
        let m = Metrics::new(&Registry::new());
        let route = RouteMetrics::default();
        let r = Some(&route);
        for _ in 0..3 {
            m.finished(r, "/mcp", "tools/call", "ok", 0.1);
        }
        m.finished(r, "/mcp", "tools/call", "tool-error", 0.1);
        // a rejection has no slot: counted by a lookup, in the same family
        m.finished(r, "/mcp", "tools/call", "rate-limited", 0.1);
        m.finished(r, "/mcp", "other", "ok", 0.1);
        // no route (none matched): looked up
        m.finished(None, "none", "none", "no-route", 0.1);
        let get = |o: &str, method: &str| m.requests.with_label_values(&["/mcp", method, o]).get();
        assert_eq!(get("ok", "tools/call"), 3);
        assert_eq!(get("tool-error", "tools/call"), 1);
        assert_eq!(get("rate-limited", "tools/call"), 1);
        assert_eq!(get("ok", "other"), 1);
        assert_eq!(get("ok", "tools/list"), 0);
        let none = m.requests.with_label_values(&["none", "none", "no-route"]);
        assert_eq!(none.get(), 1);
        let h = m
            .request_duration
            .with_label_values(&["/mcp", "tools/call"]);
        assert_eq!(h.get_sample_count(), 5);
        let h = m.request_duration.with_label_values(&["/mcp", "other"]);
        assert_eq!(h.get_sample_count(), 1);
    }

    #[test]
    fn era_counts_keep_their_labels_apart() {
        use mcp_wire::Era;
        let m = Metrics::new(&Registry::new());
        m.count_era(Era::Legacy);
        m.count_era(Era::Stateless);
        m.count_era(Era::Stateless);
        m.count_eras(Era::Stateless, "modern");
        m.count_eras(Era::Legacy, "modern");
        m.count_eras(Era::Legacy, "none");
        let era = |e: &str| m.requests_by_era.with_label_values(&[e]).get();
        assert_eq!((era("legacy"), era("stateless")), (1, 2));
        let eras = |c: &str, b: &str| m.requests_by_eras.with_label_values(&[c, b]).get();
        assert_eq!(eras("stateless", "modern"), 1);
        assert_eq!(eras("legacy", "modern"), 1);
        assert_eq!(eras("legacy", "none"), 1);
        assert_eq!(eras("stateless", "none"), 0);
    }

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
