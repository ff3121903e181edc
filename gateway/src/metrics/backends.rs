//! The series labelled by backend (`pool`, `backend`) follow the pools' members: a backend
//! that left its pool (discovery removed it, a reload dropped it or its pool) loses every
//! series, so their number stays bounded by the pool lists however many pods were replaced.

use super::Metrics;
use pingora_prometheus::prometheus::core::Collector;
use pingora_prometheus::prometheus::proto::MetricFamily;
use std::collections::HashSet;

/// The `(pool, backend)` label values of every series in `families`.
fn labelled(families: Vec<MetricFamily>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for family in families {
        for m in family.get_metric() {
            let value = |name: &str| {
                m.get_label()
                    .iter()
                    .find(|l| l.name() == name)
                    .map(|l| l.value().to_owned())
            };
            if let (Some(pool), Some(backend)) = (value("pool"), value("backend")) {
                out.push((pool, backend));
            }
        }
    }
    out
}

impl Metrics {
    /// Removes the series of every family labelled by backend whose `(pool, backend label)`
    /// is not in `live`; the number removed.
    pub fn retain_backends(&self, live: &HashSet<(&str, &str)>) -> usize {
        let keep = |(p, b): &(String, String)| live.contains(&(p.as_str(), b.as_str()));
        let mut removed = 0;
        let counters = [&self.upstream_connect_failures];
        for vec in counters {
            for (p, b) in labelled(vec.collect()).iter().filter(|s| !keep(s)) {
                removed += usize::from(vec.remove_label_values(&[p, b]).is_ok());
            }
        }
        let gauges = [
            &self.backend_inflight,
            &self.backend_up,
            &self.sessions_active,
            &self.backend_draining,
        ];
        for vec in gauges {
            for (p, b) in labelled(vec.collect()).iter().filter(|s| !keep(s)) {
                removed += usize::from(vec.remove_label_values(&[p, b]).is_ok());
            }
        }
        removed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pingora_prometheus::prometheus::{Encoder, Registry, TextEncoder};

    fn text(registry: &Registry) -> String {
        let mut out = Vec::new();
        TextEncoder::new()
            .encode(&registry.gather(), &mut out)
            .unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn a_replaced_backend_loses_every_series_labelled_by_it() {
        let registry = Registry::new();
        let m = Metrics::new(&registry);
        for backend in ["10.0.0.1:80", "10.0.0.2:80"] {
            let labels = ["p", backend];
            m.upstream_connect_failures.with_label_values(&labels).inc();
            m.backend_inflight.with_label_values(&labels).set(1);
            m.backend_up.with_label_values(&labels).set(1);
            m.sessions_active.with_label_values(&labels).set(2);
            m.backend_draining.with_label_values(&labels).set(0);
        }
        m.backend_up.with_label_values(&["q", "10.0.0.1:80"]).set(1);
        // 10.0.0.1 was replaced by 10.0.0.3 in pool p; pool q keeps it
        let live = HashSet::from([
            ("p", "10.0.0.2:80"),
            ("p", "10.0.0.3:80"),
            ("q", "10.0.0.1:80"),
        ]);
        assert_eq!(m.retain_backends(&live), 5);
        let out = text(&registry);
        assert!(
            !out.contains(r#"pool="p",backend="10.0.0.1:80""#)
                && !out.contains(r#"backend="10.0.0.1:80",pool="p""#),
            "{out}"
        );
        assert!(out.contains("10.0.0.2:80"), "{out}");
        assert!(
            out.contains(r#"mcpgw_backend_up{backend="10.0.0.1:80",pool="q"} 1"#),
            "{out}"
        );
        assert_eq!(m.retain_backends(&live), 0);
    }
}
