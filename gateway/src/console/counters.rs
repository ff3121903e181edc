//! The gateway's own counters as the console reads them: the families it charts, taken from
//! one gather of the registry every concern registered into (no second set of counters on the
//! request path), and the difference of two readings.

use pingora_prometheus::prometheus::proto::{Metric, MetricFamily};
use std::collections::BTreeMap;

/// Outcomes of `mcpgw_requests_total` that are not errors: an answer, a tool's own error
/// result (the call worked), a client that left.
const NOT_ERRORS: [&str; 3] = ["ok", "tool-error", "client-gone"];

/// One route's counters (summed over methods).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RouteCounters {
    /// Finished requests.
    pub requests: u64,
    /// Finished requests whose outcome was an error.
    pub errors: u64,
    /// The duration histogram's buckets: upper bound (seconds) and cumulative count.
    pub buckets: Vec<(f64, u64)>,
    /// Errors by JSON-RPC code (a backend's error answered with 200) or by the gateway's
    /// outcome (its error kind, an upstream status class).
    pub codes: BTreeMap<String, u64>,
}

/// What one gather of the registry says, for the console.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counters {
    /// By route label.
    pub routes: BTreeMap<String, RouteCounters>,
    /// Sessions re-initialized on another backend (every pool).
    pub reinits: u64,
    /// Config reloads applied, and rejected.
    pub reloads: (u64, u64),
    /// Requests and connections refused by admission control, by reason.
    pub refusals: BTreeMap<String, u64>,
    /// Virtual servers' member events by (route, member, event).
    pub members: BTreeMap<(String, String, String), u64>,
}

fn label<'m>(m: &'m Metric, name: &str) -> &'m str {
    (m.get_label().iter())
        .find(|l| l.name() == name)
        .map_or("", |l| l.value())
}

fn count(m: &Metric) -> u64 {
    m.get_counter().value().max(0.0) as u64
}

impl Counters {
    /// Reads the families the console charts out of `families` (one `Registry::gather`).
    pub fn read(families: &[MetricFamily]) -> Counters {
        let mut c = Counters::default();
        for family in families {
            for m in family.get_metric() {
                c.add(family.name(), m);
            }
        }
        c
    }

    fn add(&mut self, family: &str, m: &Metric) {
        match family {
            "mcpgw_requests_total" => {
                let route = self.routes.entry(label(m, "route").to_owned()).or_default();
                let outcome = label(m, "outcome");
                route.requests += count(m);
                // a 200 answer with a JSON-RPC error is counted by code below
                if !NOT_ERRORS.contains(&outcome) && outcome != "rpc-error" {
                    route.errors += count(m);
                    *route.codes.entry(outcome.to_owned()).or_default() += count(m);
                }
            }
            "mcpgw_rpc_errors_total" => {
                let route = self.routes.entry(label(m, "route").to_owned()).or_default();
                route.errors += count(m);
                *route.codes.entry(label(m, "code").to_owned()).or_default() += count(m);
            }
            "mcpgw_request_duration_seconds" => {
                let route = self.routes.entry(label(m, "route").to_owned()).or_default();
                add_buckets(&mut route.buckets, m);
            }
            "mcpgw_session_reinits_total" => self.reinits += count(m),
            "mcpgw_config_reloads_total" => match label(m, "result") {
                "applied" => self.reloads.0 += count(m),
                _ => self.reloads.1 += count(m),
            },
            "mcpgw_rejections_total" => {
                *self
                    .refusals
                    .entry(label(m, "reason").to_owned())
                    .or_default() += count(m);
            }
            "mcpgw_virtual_member_events_total" => {
                let key = (label(m, "route"), label(m, "member"), label(m, "event"));
                let key = (key.0.to_owned(), key.1.to_owned(), key.2.to_owned());
                *self.members.entry(key).or_default() += count(m);
            }
            _ => {}
        }
    }

    /// The member events of `route`'s `member` of kind `event`.
    pub fn member_events(&self, route: &str, member: &str, event: &str) -> u64 {
        let key = (route.to_owned(), member.to_owned(), event.to_owned());
        self.members.get(&key).copied().unwrap_or(0)
    }
}

/// Sums one histogram's buckets into `into` (the methods of a route share the bounds).
fn add_buckets(into: &mut Vec<(f64, u64)>, m: &Metric) {
    let buckets = m.get_histogram().get_bucket();
    if into.is_empty() {
        into.extend(buckets.iter().map(|b| (b.upper_bound(), 0)));
    }
    for (slot, b) in into.iter_mut().zip(buckets) {
        slot.1 += b.cumulative_count();
    }
}

/// `now - before` for a route's counters (a counter that went back, as after a series was
/// dropped, counts from zero).
pub fn route_delta(now: &RouteCounters, before: Option<&RouteCounters>) -> RouteCounters {
    let Some(before) = before else {
        return now.clone();
    };
    let codes = (now.codes.iter())
        .map(|(code, n)| {
            let was = before.codes.get(code).copied().unwrap_or(0);
            (code.clone(), n.saturating_sub(was))
        })
        .filter(|(_, n)| *n > 0)
        .collect();
    let buckets = (now.buckets.iter())
        .enumerate()
        .map(|(i, (bound, n))| {
            let was = before.buckets.get(i).map_or(0, |b| b.1);
            (*bound, n.saturating_sub(was))
        })
        .collect();
    RouteCounters {
        requests: now.requests.saturating_sub(before.requests),
        errors: now.errors.saturating_sub(before.errors),
        buckets,
        codes,
    }
}

/// The `q` quantile (0..1) of a cumulative histogram, in milliseconds, interpolated within its
/// bucket as Prometheus' `histogram_quantile` does; `None` without observations. Past the last
/// finite bound it is that bound (the histogram says no more).
pub fn quantile_ms(q: f64, buckets: &[(f64, u64)]) -> Option<f64> {
    let total = buckets.last()?.1;
    if total == 0 {
        return None;
    }
    let rank = q * total as f64;
    let mut lower = (0.0, 0u64);
    for &(bound, cumulative) in buckets {
        if cumulative as f64 >= rank {
            if bound.is_infinite() {
                return Some(lower.0 * 1000.0);
            }
            let in_bucket = (cumulative - lower.1) as f64;
            let within = if in_bucket > 0.0 {
                (rank - lower.1 as f64) / in_bucket
            } else {
                0.0
            };
            return Some((lower.0 + (bound - lower.0) * within) * 1000.0);
        }
        lower = (bound, cumulative);
    }
    Some(lower.0 * 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Registrar;
    use pingora_prometheus::prometheus::Registry;

    #[test]
    fn requests_errors_codes_and_durations_are_read_per_route() {
        let registry = Registry::new();
        let m = crate::request::metrics::RequestMetrics::register(&Registrar::new(&registry));
        m.requests
            .with_label_values(&["/mcp", "tools/call", "ok"])
            .inc_by(7);
        m.requests
            .with_label_values(&["/mcp", "tools/call", "rpc-error"])
            .inc();
        m.requests
            .with_label_values(&["/mcp", "tools/call", "unavailable"])
            .inc_by(2);
        m.requests
            .with_label_values(&["/mcp", "tools/call", "tool-error"])
            .inc();
        m.rpc_errors
            .with_label_values(&["/mcp", "tools/call", "-32601"])
            .inc();
        let d = m
            .request_duration
            .with_label_values(&["/mcp", "tools/call"]);
        d.observe(0.002);
        d.observe(0.003);
        let c = Counters::read(&registry.gather());
        let route = &c.routes["/mcp"];
        assert_eq!((route.requests, route.errors), (11, 3));
        assert_eq!(route.codes["-32601"], 1);
        assert_eq!(route.codes["unavailable"], 2);
        assert_eq!(route.buckets.last().unwrap().1, 2);
        let p50 = quantile_ms(0.5, &route.buckets).unwrap();
        assert!((1.0..=4.0).contains(&p50), "{p50}");
    }

    #[test]
    fn a_delta_counts_only_what_happened_in_between() {
        let before = RouteCounters {
            requests: 10,
            errors: 1,
            buckets: vec![(0.001, 5), (f64::INFINITY, 10)],
            codes: BTreeMap::from([("-32601".into(), 1)]),
        };
        let now = RouteCounters {
            requests: 14,
            errors: 2,
            buckets: vec![(0.001, 5), (f64::INFINITY, 14)],
            codes: BTreeMap::from([("-32601".into(), 1), ("unavailable".into(), 1)]),
        };
        let d = route_delta(&now, Some(&before));
        assert_eq!((d.requests, d.errors), (4, 1));
        assert_eq!(d.codes, BTreeMap::from([("unavailable".into(), 1)]));
        assert_eq!(d.buckets, vec![(0.001, 0), (f64::INFINITY, 4)]);
        // every observation past the last finite bound: that bound, not infinity
        assert_eq!(quantile_ms(0.99, &d.buckets), Some(1.0));
        assert_eq!(quantile_ms(0.5, &[(0.01, 0), (f64::INFINITY, 0)]), None);
    }

    #[test]
    fn the_quantile_interpolates_within_its_bucket() {
        let buckets = [(0.001, 0), (0.002, 100), (f64::INFINITY, 100)];
        let p50 = quantile_ms(0.5, &buckets).unwrap();
        assert!((p50 - 1.5).abs() < 1e-9, "{p50}");
    }
}
