//! Markdown tables of the suite: medians with their range over the runs of each cell.

use super::{Cell, Setup, SuiteArgs, Via};
use crate::run::RunResult;
use std::fmt::Write as _;
use std::path::Path;

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

/// An overhead target and its interleaved runs.
pub struct OverheadRow {
    pub setup: Setup,
    /// Closed-loop runs (throughput).
    pub throughput: Vec<RunResult>,
    /// CPU µs per request of the proxy (direct: of the backend) in each closed-loop run.
    pub cpu: Vec<f64>,
    /// Open-loop runs at 1000 rps (latency).
    pub latency: Vec<RunResult>,
}

impl OverheadRow {
    fn rps(&self) -> f64 {
        median(&col(&self.throughput, |x| x.achieved_rps))
    }

    fn p50(&self) -> f64 {
        median(&col(&self.latency, |x| x.service_ms.p50))
    }

    fn p99(&self) -> f64 {
        median(&col(&self.latency, |x| x.service_ms.p99))
    }
}

/// The overhead tables: closed-loop throughput, CPU per request and latency at a fixed rate,
/// each target against the references of its dialect (direct, nginx, bare pingora); then, with
/// a baseline build (`binaries`: measured, baseline), mcp-gateway against it.
pub fn overhead(
    rows: &[OverheadRow],
    duration: f64,
    bare_missing: Option<&str>,
    binaries: (&Path, Option<&Path>),
    pinned: bool,
) -> String {
    let placement = if pinned {
        "Pinned (`--pin`): each proxy (nginx 1 worker; bare pingora and mcp-gateway 1 thread) alone on \
         the last core, load generator and backend on the others, so a proxy's req/s is its cost per request"
    } else {
        "Load generator, proxies (nginx 1 worker; bare pingora and mcp-gateway 2 threads) and backend share \
         the 2 cores, unpinned, so compare ratios, not absolute numbers"
    };
    let mut md = format!(
        "## Overhead\n\nOne backend. Throughput: closed loop, 32 concurrent requests on reused connections, \
         {duration} s per run, runs interleaved across targets. CPU µs/req: CPU time of the proxy process \
         (direct: of the backend) per successful request of the closed-loop runs, the steadiest number when \
         other work shares the machine. Latency: open loop at 1000 rps, from send to answer (service time). \
         {placement}.\n\n\
         | path | req/s (closed loop) | vs direct | vs nginx | vs bare pingora | CPU µs/req | p50 ms @1000 rps | p99 ms @1000 rps | added p50 ms | added p99 ms |\n\
         |---|---|---|---|---|---|---|---|---|---|\n",
    );
    let reference = |row: &OverheadRow, via: Via| {
        rows.iter()
            .find(|r| r.setup.dialect == row.setup.dialect && r.setup.via == via)
    };
    for row in rows {
        let ratio = |via: Via| {
            reference(row, via).map_or(String::new(), |r| format!("{:.2}x", row.rps() / r.rps()))
        };
        let direct = reference(row, Via::Direct);
        let added = |q: fn(&OverheadRow) -> f64| match direct {
            Some(d) if row.setup.via != Via::Direct => format!("{:+.3}", q(row) - q(d)),
            _ => String::new(),
        };
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {:.3} | {:.3} | {} | {} |",
            row.setup.label(),
            spread(&col(&row.throughput, |x| x.achieved_rps), 0),
            ratio(Via::Direct),
            ratio(Via::Nginx),
            ratio(Via::BarePingora),
            if row.cpu.is_empty() {
                "-".to_owned()
            } else {
                format!("{:.1}", median(&row.cpu))
            },
            row.p50(),
            row.p99(),
            added(OverheadRow::p50),
            added(OverheadRow::p99),
        );
    }
    if let Some(why) = bare_missing {
        let _ = writeln!(md, "\nNo bare pingora column: {why}.");
    }
    md.push_str(&guard(rows));
    md.push('\n');
    if let (measured, Some(baseline)) = binaries {
        md.push_str(&against_baseline(rows, measured, baseline));
    }
    md
}

/// The regression guard: mcp-gateway against the bare pingora proxy on each route, by req/s
/// and by CPU per request (bare's CPU / the gateway's: above 1 the gateway is cheaper), with
/// the target (0.95x). A report, not an assertion: the box is shared and noisy.
fn guard(rows: &[OverheadRow]) -> String {
    const TARGET: f64 = 0.95;
    let mut lines = Vec::new();
    for row in rows.iter().filter(|r| !r.setup.baseline) {
        if !matches!(row.setup.via, Via::GatewayStateless | Via::GatewayStateful) {
            continue;
        }
        let Some(bare) = rows
            .iter()
            .find(|r| r.setup.dialect == row.setup.dialect && r.setup.via == Via::BarePingora)
        else {
            continue;
        };
        let rps = row.rps() / bare.rps();
        let (cpu, bare_cpu) = (median(&row.cpu), median(&bare.cpu));
        let cpu = if cpu > 0.0 { bare_cpu / cpu } else { 0.0 };
        let verdict = if rps >= TARGET && cpu >= TARGET {
            "at target"
        } else {
            "**below target**"
        };
        lines.push(format!(
            "- {}: {rps:.2}x bare pingora's req/s, {cpu:.2}x its CPU per request: {verdict}",
            row.setup.label()
        ));
    }
    if lines.is_empty() {
        return String::new();
    }
    format!(
        "\n**Guard** (target: at least {TARGET:.2}x the bare pingora proxy, both ratios):\n\n{}\n",
        lines.join("\n")
    )
}

/// mcp-gateway against the baseline build, route by route (empty without a baseline).
fn against_baseline(rows: &[OverheadRow], measured: &Path, baseline: &Path) -> String {
    let pairs: Vec<(&OverheadRow, &OverheadRow)> = rows
        .iter()
        .filter(|r| r.setup.baseline)
        .filter_map(|b| {
            let measured = rows.iter().find(|r| {
                !r.setup.baseline
                    && r.setup.via == b.setup.via
                    && r.setup.dialect == b.setup.dialect
            })?;
            Some((b, measured))
        })
        .collect();
    if pairs.is_empty() {
        return String::new();
    }
    let mut md = format!(
        "### mcp-gateway against the baseline build\n\nMeasured: `{}`; baseline: `{}`. Same runs \
         as above (interleaved: the two builds alternate). Ratio: measured / baseline.\n\n\
         | route | req/s baseline | req/s | ratio | CPU µs/req baseline | CPU µs/req | ratio | p50 ms baseline | p50 ms | p99 ms baseline | p99 ms |\n\
         |---|---|---|---|---|---|---|---|---|---|---|\n",
        measured.display(),
        baseline.display()
    );
    for (b, m) in pairs {
        let route = match m.setup.via {
            Via::GatewayStateful => "stateful (legacy dialect)",
            _ => "stateless (2026-07-28 dialect)",
        };
        let (cb, cm) = (median(&b.cpu), median(&m.cpu));
        let _ = writeln!(
            md,
            "| {route} | {} | {} | **{:.2}x** | {cb:.1} | {cm:.1} | {:.2}x | {:.3} | {:.3} | {:.3} | {:.3} |",
            spread(&col(&b.throughput, |x| x.achieved_rps), 0),
            spread(&col(&m.throughput, |x| x.achieved_rps), 0),
            m.rps() / b.rps(),
            if cb > 0.0 { cm / cb } else { f64::NAN },
            b.p50(),
            m.p50(),
            b.p99(),
            m.p99(),
        );
    }
    md.push('\n');
    md
}

/// One memory measurement: which binary, sessions asked and opened, RSS before and after (KiB).
pub struct MemoryRow {
    pub binary: String,
    pub asked: usize,
    pub opened: usize,
    pub before_kib: u64,
    pub after_kib: u64,
}

impl MemoryRow {
    fn per_session(&self) -> f64 {
        (self.after_kib.saturating_sub(self.before_kib) * 1024) as f64 / self.opened.max(1) as f64
    }
}

/// The memory lines (the measured binary first, then the baseline, and their ratio).
pub fn memory(rows: &[MemoryRow]) -> String {
    let mut md = String::from("## Memory\n\n");
    for r in rows {
        let _ = writeln!(
            md,
            "{}RSS with idle sessions (stateful route, one legacy mock backend): \
             {} of {} sessions opened; RSS {:.1} MiB before, {:.1} MiB after: **{:.0} bytes per session**.\n",
            r.binary,
            r.opened,
            r.asked,
            r.before_kib as f64 / 1024.0,
            r.after_kib as f64 / 1024.0,
            r.per_session(),
        );
    }
    if let [measured, baseline] = rows {
        let _ = writeln!(
            md,
            "Bytes per session, measured / baseline: **{:.2}x**.\n",
            measured.per_session() / baseline.per_session()
        );
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::Dialect;
    use crate::run::Latency;
    use crate::suite::procs::BackendKind;
    use std::path::Path;

    fn run(rps: f64, p50: f64) -> RunResult {
        RunResult {
            dialect: Dialect::Stateless,
            target: String::new(),
            connections: "reuse",
            offered_rate: 0.0,
            duration_s: 1.0,
            offered: 0,
            ok: 0,
            failed: 0,
            achieved_rps: rps,
            session_losses: 0,
            initializes: 0,
            errors: Default::default(),
            latency_ms: Latency::default(),
            service_ms: Latency {
                p50,
                ..Latency::default()
            },
            timeline: Vec::new(),
            events: Vec::new(),
            failure_spans: Vec::new(),
        }
    }

    fn row(via: Via, baseline: bool, rps: f64, cpu: f64) -> OverheadRow {
        OverheadRow {
            setup: Setup {
                via,
                backend: BackendKind::MockStateless,
                dialect: Dialect::Stateless,
                baseline,
            },
            throughput: vec![run(rps, 0.0)],
            cpu: vec![cpu],
            latency: vec![run(0.0, 0.5)],
        }
    }

    #[test]
    fn overhead_rows_carry_ratios_to_each_reference_and_to_the_baseline() {
        let rows = [
            row(Via::Direct, false, 20000.0, 10.0),
            row(Via::Nginx, false, 16000.0, 20.0),
            row(Via::BarePingora, false, 10000.0, 40.0),
            row(Via::GatewayStateless, false, 11000.0, 44.0),
            row(Via::GatewayStateless, true, 10000.0, 48.0),
        ];
        let md = overhead(
            &rows,
            5.0,
            None,
            (
                Path::new("new/mcp-gateway"),
                Some(Path::new("old/mcp-gateway")),
            ),
            true,
        );
        assert!(md.contains("Pinned (`--pin`)"), "{md}");
        assert!(
            md.contains(
                "| stateless via mcp-gateway stateless | 11000 | 0.55x | 0.69x | 1.10x | 44.0 |"
            ),
            "{md}"
        );
        assert!(md.contains("Measured: `new/mcp-gateway`; baseline: `old/mcp-gateway`"));
        assert!(
            md.contains("| stateless (2026-07-28 dialect) | 10000 | 11000 | **1.10x** | 48.0 | 44.0 | 0.92x |"),
            "{md}"
        );
        let alone = overhead(&rows[..4], 5.0, None, (Path::new("gw"), None), false);
        assert!(!alone.contains("baseline"), "{alone}");
        assert!(alone.contains("unpinned"), "{alone}");
    }

    #[test]
    fn medians_and_ranges() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(spread(&[1.0, 2.0, 3.0], 0), "2 (1–3)");
        assert_eq!(spread(&[5.0, 5.0], 1), "5.0");
    }
}
