//! The per-request metric families, counted as a request ends (`logging`) and as it is
//! classified: finished requests and their durations, JSON-RPC errors answered with 200, tool
//! calls, requests by era, open GET streams. Registered by [`RequestMetrics::register`], held
//! by the [`Gateway`](crate::request::Gateway); a route's children of the busiest families are resolved
//! once (`metrics::RouteMetrics`), as are the era families'.

use crate::metrics::{Registrar, Resolved, RouteMetrics, ANSWERED, TOOL_SLOTS};
use crate::upstream::Backend;
use mcp_wire::{BackendEra, Era};
use pingora_prometheus::prometheus::{HistogramVec, IntCounter, IntCounterVec, IntGaugeVec};
use std::sync::Arc;

/// The per-request families.
#[derive(Clone)]
pub struct RequestMetrics {
    /// `mcpgw_requests_total{route,method,outcome}`: finished requests; outcome is `ok`, the
    /// upstream status class (`4xx`, `5xx`), the gateway error kind, or what a 200 answer
    /// said: `tool-error` (a result with `isError: true`), `rpc-error` (a JSON-RPC error).
    pub requests: IntCounterVec,
    /// `mcpgw_rpc_errors_total{route,method,code}`: JSON-RPC errors backends answered with
    /// HTTP 200, by code (JSON-RPC's reserved range, else `other`).
    pub rpc_errors: IntCounterVec,
    /// `mcpgw_request_duration_seconds{route,method}`: time from request head to last byte.
    pub request_duration: HistogramVec,
    /// `mcpgw_tool_calls_total{route,tool,outcome}`: `tools/call` requests; `tool` only from
    /// the configured `metric-tools`, else `other`.
    pub tool_calls: IntCounterVec,
    /// `mcpgw_requests_by_era_total{era}`: requests by protocol era.
    pub requests_by_era: IntCounterVec,
    /// `mcpgw_requests_by_eras_total{client_era,backend_era}`: finished requests by the
    /// client's era (legacy, stateless) and the era of the backend that answered (legacy,
    /// modern, dual, unknown; `none` when the gateway answered itself).
    pub requests_by_eras: IntCounterVec,
    /// `mcpgw_open_streams{route}`: server→client SSE streams (GET) open right now.
    pub open_streams: IntGaugeVec,
    /// `mcpgw_client_connections`: client connections admitted and open now (within
    /// `limits.max-connections`).
    pub client_connections: IntGaugeVec,
    /// `mcpgw_virtual_member_events_total{route,member,event}`: a virtual route's members:
    /// `routed` (a call sent to the member), `left-out` (it failed or missed its deadline,
    /// and an answer was merged without it), `collision` (an item of it left out: an earlier
    /// member exposes the name), and `unknown-name` (member `-`: a call no member takes).
    pub virtual_members: IntCounterVec,
    /// The era families' children, resolved once.
    eras: Arc<EraMetrics>,
}

impl RequestMetrics {
    /// Creates the families and registers them.
    pub fn register(families: &Registrar) -> RequestMetrics {
        RequestMetrics {
            eras: Arc::new(EraMetrics {
                by_era: Resolved::new(2),
                by_eras: Resolved::new(2 * BACKEND_ERAS.len()),
            }),
            requests: families.counter(
                "mcpgw_requests_total",
                "Finished requests by route, MCP method and outcome",
                &["route", "method", "outcome"],
            ),
            rpc_errors: families.counter(
                "mcpgw_rpc_errors_total",
                "JSON-RPC errors answered with HTTP 200, by route, method and code",
                &["route", "method", "code"],
            ),
            request_duration: families.histogram(
                "mcpgw_request_duration_seconds",
                "Time from request head to the last response byte",
                &["route", "method"],
                crate::metrics::exponential_buckets(0.0005, 2.0, 16),
            ),
            tool_calls: families.counter(
                "mcpgw_tool_calls_total",
                "tools/call requests by route, tool (configured metric-tools only) and outcome",
                &["route", "tool", "outcome"],
            ),
            requests_by_era: families.counter(
                "mcpgw_requests_by_era_total",
                "Requests by MCP protocol era (legacy, stateless)",
                &["era"],
            ),
            requests_by_eras: families.counter(
                "mcpgw_requests_by_eras_total",
                "Finished requests by client era and the era of the backend that answered",
                &["client_era", "backend_era"],
            ),
            open_streams: families.gauge(
                "mcpgw_open_streams",
                "Server-to-client SSE streams (GET) open right now",
                &["route"],
            ),
            client_connections: families.gauge(
                "mcpgw_client_connections",
                "Client connections admitted and open right now",
                &[],
            ),
            virtual_members: families.counter(
                "mcpgw_virtual_member_events_total",
                "Virtual routes' members: calls routed, answers merged without them, collisions",
                &["route", "member", "event"],
            ),
        }
    }
}

impl RequestMetrics {
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

    /// Counts a finished `tools/call` in `mcpgw_tool_calls_total`: `index` is the tool's place
    /// in `metrics.tools` (`usize::MAX`: another tool, counted as `tool`, `other`).
    pub fn tool_call(
        &self,
        route: Option<&RouteMetrics>,
        label: &str,
        (index, tool): (usize, &str),
        outcome: &str,
    ) {
        let slot = match index {
            usize::MAX => Some(TOOL_SLOTS),
            i => Some(i).filter(|&i| i < TOOL_SLOTS),
        };
        let answered = ANSWERED.iter().position(|o| *o == outcome);
        let make = || self.tool_calls.with_label_values(&[label, tool, outcome]);
        let counter = route
            .zip(slot.zip(answered))
            .and_then(|(r, (s, o))| r.tool_calls.get(s * ANSWERED.len() + o, make));
        match counter {
            Some(c) => c.inc(),
            None => self
                .tool_calls
                .with_label_values(&[label, tool, outcome])
                .inc(),
        }
    }

    /// Counts a request of `era` in `mcpgw_requests_by_era_total`.
    pub fn count_era(&self, era: Era) {
        let label = era.as_str();
        let make = || self.requests_by_era.with_label_values(&[label]);
        match self.eras.by_era.get(era as usize, make) {
            Some(c) => c.inc(),
            None => self.requests_by_era.with_label_values(&[label]).inc(),
        }
    }

    /// Counts a finished request by the client's era and the era of the backend that answered
    /// it (`None`: the gateway answered itself) in `mcpgw_requests_by_eras_total`.
    pub fn count_eras(&self, client: Era, backend: Option<&Backend>) {
        let backend = match backend {
            None => "none",
            Some(b) => b.era().map_or("unknown", BackendEra::as_str),
        };
        self.count_eras_labelled(client, backend);
    }

    fn count_eras_labelled(&self, client: Era, backend: &'static str) {
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

/// The children of the per-request families whose labels are fixed sets (eras).
#[derive(Debug)]
struct EraMetrics {
    /// `mcpgw_requests_by_era_total`, by client era.
    by_era: Resolved<IntCounter>,
    /// `mcpgw_requests_by_eras_total`, by client era and backend era.
    by_eras: Resolved<IntCounter>,
}

/// Backend era labels of `mcpgw_requests_by_eras_total`.
const BACKEND_ERAS: [&str; 5] = ["none", "unknown", "legacy", "modern", "dual"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolved_counts_land_in_the_same_series_as_a_lookup() {
        let m = crate::metrics::scratch(RequestMetrics::register);
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
        let m = crate::metrics::scratch(RequestMetrics::register);
        m.count_era(Era::Legacy);
        m.count_era(Era::Stateless);
        m.count_era(Era::Stateless);
        m.count_eras_labelled(Era::Stateless, "modern");
        m.count_eras_labelled(Era::Legacy, "modern");
        m.count_eras(Era::Legacy, None);
        let era = |e: &str| m.requests_by_era.with_label_values(&[e]).get();
        assert_eq!((era("legacy"), era("stateless")), (1, 2));
        let eras = |c: &str, b: &str| m.requests_by_eras.with_label_values(&[c, b]).get();
        assert_eq!(eras("stateless", "modern"), 1);
        assert_eq!(eras("legacy", "modern"), 1);
        assert_eq!(eras("legacy", "none"), 1);
        assert_eq!(eras("stateless", "none"), 0);
    }
}
