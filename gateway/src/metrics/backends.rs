//! The series labelled by backend (`pool`, `backend`) follow the pools' members: a backend
//! that left its pool (discovery removed it, a reload dropped it or its pool) loses every
//! series, so their number stays bounded by the pool lists however many pods were replaced.
//! Each concern with such families drops its own (`upstream::metrics`, `session::metrics`).

use pingora_prometheus::prometheus::core::{Collector, MetricVec, MetricVecBuilder};
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

/// Removes the series of `family` (labelled `pool`, `backend` in that order) whose
/// `(pool, backend label)` is not in `live`; the number removed.
pub fn retain_backends<T: MetricVecBuilder>(
    family: &MetricVec<T>,
    live: &HashSet<(&str, &str)>,
) -> usize {
    let keep = |(p, b): &(String, String)| live.contains(&(p.as_str(), b.as_str()));
    let mut removed = 0;
    for (p, b) in labelled(family.collect()).iter().filter(|s| !keep(s)) {
        removed += usize::from(family.remove_label_values(&[p, b]).is_ok());
    }
    removed
}
