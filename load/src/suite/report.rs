//! Markdown tables of the suite: medians with their range over the runs of each cell.

use super::{Cell, SuiteArgs};
use crate::run::RunResult;
use std::fmt::Write as _;

/// An M1 cell and its runs.
pub struct M1Row {
    pub cell: Cell,
    pub runs: Vec<RunResult>,
    pub chart: Option<String>,
}

/// An M3 cell and its runs.
pub struct M3Row {
    pub cell: Cell,
    pub runs: Vec<RunResult>,
    pub chart: Option<String>,
    pub variant: &'static str,
}

/// Median of values (mean of the middle two for an even count).
pub fn median(values: &[f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2.0
    }
}

/// "median (min–max)" with `decimals`.
fn spread(values: &[f64], decimals: usize) -> String {
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let m = median(values);
    if values.len() < 2 || min == max {
        format!("{m:.decimals$}")
    } else {
        format!("{m:.decimals$} ({min:.decimals$}–{max:.decimals$})")
    }
}

fn col(runs: &[RunResult], f: impl Fn(&RunResult) -> f64) -> Vec<f64> {
    runs.iter().map(f).collect()
}

/// The run whose failures are the median (for charts).
pub fn median_run(runs: &[RunResult]) -> &RunResult {
    let mut order: Vec<&RunResult> = runs.iter().collect();
    order.sort_by_key(|r| r.failed);
    order[order.len() / 2]
}

/// The report's opening: what was run and how to reproduce it.
pub fn header(args: &SuiteArgs) -> String {
    format!(
        "# Resilience benchmark (mcp-load suite)\n\n\
         Every cell ran {} times; tables show the median and (min–max). Offered rate {} rps, open loop \
         (requests start on the clock; latency counts from the scheduled start). Legacy clients spread \
         their calls over {} sessions and re-initialize on 404, on a 400 naming the session and on 5xx, \
         without retrying the lost call. Machine: 2 cores, everything on 127.0.0.1.\n\n",
        args.runs, args.rate, args.sessions
    )
}

/// The M1 table.
pub fn m1(rows: &[M1Row], rate: f64) -> String {
    let mut md = format!(
        "## M1 scale-out ({rate} rps offered)\n\n\
         | backends | path | connections | achieved rps | failed requests | session losses | p50 ms | p99 ms |\n\
         |---|---|---|---|---|---|---|---|\n"
    );
    for r in rows {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            r.cell.backends,
            r.cell.setup.label(),
            if r.cell.reuse { "reuse" } else { "new" },
            spread(&col(&r.runs, |x| x.achieved_rps), 1),
            spread(&col(&r.runs, |x| x.failed as f64), 0),
            spread(&col(&r.runs, |x| x.session_losses as f64), 0),
            spread(&col(&r.runs, |x| x.latency_ms.p50), 2),
            spread(&col(&r.runs, |x| x.latency_ms.p99), 2),
        );
    }
    let charts: Vec<String> = rows
        .iter()
        .filter_map(|r| {
            r.chart
                .as_ref()
                .map(|c| format!("![{}]({c})", r.cell.setup.label()))
        })
        .collect();
    if !charts.is_empty() {
        md.push('\n');
        md.push_str(&charts.join("\n"));
        md.push('\n');
    }
    md.push('\n');
    md
}

/// An M3 table.
pub fn m3(title: &str, rows: &[M3Row], args: &SuiteArgs) -> String {
    let mut md = format!(
        "## {title}\n\n2 backends; SIGKILL of pod-0 at {} s of {} s runs; the restart variant brings it back \
         on the same port {} s later. \"In flight at kill\": requests in flight when the SIGKILL was sent; \
         \"failed in flight\": failures among requests sent before the killed process had exited (it \
         takes about a millisecond) and still open at the SIGKILL; \"failed after\": failures among \
         requests sent after the process had exited.\n\n\
         | path | variant | connections | achieved rps | failed (total) | in flight at kill | failed in flight | failed after | session losses | errors (all runs) |\n\
         |---|---|---|---|---|---|---|---|---|---|\n",
        args.kill_at, args.m3_duration, args.restart_after
    );
    for r in rows {
        let event =
            |x: &RunResult, f: fn(&crate::run::EventResult) -> f64| x.events.first().map_or(0.0, f);
        let mut errors = std::collections::BTreeMap::<String, u64>::new();
        for run in &r.runs {
            for (k, v) in &run.errors {
                *errors.entry(k.clone()).or_default() += v;
            }
        }
        let errors: Vec<String> = errors.iter().map(|(k, v)| format!("{k}: {v}")).collect();
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.cell.setup.label(),
            r.variant,
            if r.cell.reuse { "reuse" } else { "new" },
            spread(&col(&r.runs, |x| x.achieved_rps), 1),
            spread(&col(&r.runs, |x| x.failed as f64), 0),
            spread(&col(&r.runs, |x| event(x, |e| e.inflight as f64)), 0),
            spread(
                &col(&r.runs, |x| event(x, |e| e.failed_in_flight as f64)),
                0
            ),
            spread(&col(&r.runs, |x| event(x, |e| e.failed_after as f64)), 0),
            spread(&col(&r.runs, |x| x.session_losses as f64), 0),
            if errors.is_empty() {
                "none".to_owned()
            } else {
                errors.join(", ")
            },
        );
    }
    md.push('\n');
    for r in rows {
        if let Some(c) = &r.chart {
            let _ = writeln!(md, "![{} ({})]({c})", r.cell.setup.label(), r.variant);
        }
    }
    md.push('\n');
    md
}

/// The overhead tables: closed-loop throughput and latency at a fixed rate, each target
/// against its direct reference (first of its dialect).
pub fn overhead(
    labels: &[String],
    throughput: &[Vec<RunResult>],
    latency: &[Vec<RunResult>],
) -> String {
    let mut md = String::from(
        "## Overhead\n\nOne backend. Throughput: closed loop, 32 concurrent requests on reused connections, 5 s \
         per run, runs interleaved across targets. Latency: open loop at 1000 rps, from send to answer \
         (service time). Load generator, \
         proxy and backend share the 2 cores, so compare ratios, not absolute numbers.\n\n\
         | path | req/s (closed loop) | vs direct | vs nginx | p50 ms @1000 rps | p99 ms @1000 rps | added p50 ms | added p99 ms |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    // Targets come in dialect groups of three: direct, nginx, mcp-gateway.
    for (k, label) in labels.iter().enumerate() {
        let base = k - k % 3;
        let rps = |i: usize| median(&col(&throughput[i], |x| x.achieved_rps));
        let p = |i: usize, q: fn(&RunResult) -> f64| median(&col(&latency[i], q));
        let p50 = |x: &RunResult| x.service_ms.p50;
        let p99 = |x: &RunResult| x.service_ms.p99;
        let vs_nginx = if k % 3 == 2 {
            format!("{:.2}x", rps(k) / rps(base + 1))
        } else {
            "".into()
        };
        let added = |q: fn(&RunResult) -> f64| {
            if k % 3 == 0 {
                "".to_owned()
            } else {
                format!("{:+.3}", p(k, q) - p(base, q))
            }
        };
        let _ = writeln!(
            md,
            "| {label} | {} | {:.2}x | {vs_nginx} | {:.3} | {:.3} | {} | {} |",
            spread(&col(&throughput[k], |x| x.achieved_rps), 0),
            rps(k) / rps(base),
            p(k, p50),
            p(k, p99),
            added(p50),
            added(p99),
        );
    }
    md.push('\n');
    md
}

/// The memory line.
pub fn memory(n: usize, opened: usize, before_kib: u64, after_kib: u64) -> String {
    let per = (after_kib.saturating_sub(before_kib) * 1024) as f64 / opened.max(1) as f64;
    format!(
        "## Memory\n\nmcp-gateway RSS with idle sessions (stateful route, one legacy mock backend): \
         {opened} of {n} sessions opened; RSS {:.1} MiB before, {:.1} MiB after: **{per:.0} bytes per session**.\n\n",
        before_kib as f64 / 1024.0,
        after_kib as f64 / 1024.0
    )
}

#[cfg(test)]
mod tests {
    use super::{median, spread};

    #[test]
    fn medians_and_ranges() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(spread(&[1.0, 2.0, 3.0], 0), "2 (1–3)");
        assert_eq!(spread(&[5.0, 5.0], 1), "5.0");
    }
}
