//! `mcp-load clients`' report: medians over the runs, the table, and every run.

use super::*;

pub(super) fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    })
}

fn mem_median(mems: &[Mem], held: Held, kind: Kind, f: fn(&Mem) -> f64) -> Option<f64> {
    median(
        mems.iter()
            .filter(|m| m.held_what == held && m.kind == kind)
            .map(f)
            .collect(),
    )
}

fn cpu_median(cpus: &[Cpu], legacy: bool, kind: Kind) -> Option<f64> {
    median(
        cpus.iter()
            .filter(|c| c.legacy == legacy && c.kind == kind)
            .map(|c| c.us_per_req)
            .collect(),
    )
}

/// The table: a row per measurement, a column per proxy (medians), and the gateway's ratio to
/// nginx for CPU.
pub(super) fn table(args: &ClientsArgs, mems: &[Mem], cpus: &[Cpu], pinned: bool) -> String {
    let mut md = String::from(
        "| per client | nginx | bare pingora | mcp-gateway | mcp-gateway / nginx |\n\
         |---|---:|---:|---:|---:|\n",
    );
    let cell = |v: Option<f64>, f: &dyn Fn(f64) -> String| v.map_or("".to_owned(), f);
    for held in [Held::Idle, Held::Listen, Held::Get] {
        if !mems.iter().any(|m| m.held_what == held) {
            continue;
        }
        let kb = |v: f64| format!("{:.1} KB", v / 1000.0);
        let fd = |v: f64| format!("{v:.2}");
        let per: Vec<String> = KINDS
            .iter()
            .map(|&k| cell(mem_median(mems, held, k, Mem::bytes_per), &kb))
            .collect();
        let _ = writeln!(
            md,
            "| {}: RSS | {} | {} | {} | |",
            held.label(),
            per[0],
            per[1],
            per[2]
        );
        let per: Vec<String> = KINDS
            .iter()
            .map(|&k| cell(mem_median(mems, held, k, Mem::fds_per), &fd))
            .collect();
        let _ = writeln!(
            md,
            "| {}: descriptors | {} | {} | {} | |",
            held.short(),
            per[0],
            per[1],
            per[2]
        );
    }
    for legacy in [false, true] {
        if !cpus.iter().any(|c| c.legacy == legacy) {
            continue;
        }
        let us = |v: f64| format!("{v:.1} µs");
        let per: Vec<Option<f64>> = KINDS.iter().map(|&k| cpu_median(cpus, legacy, k)).collect();
        let ratio = match (per[0], per[2]) {
            (Some(n), Some(g)) if n > 0.0 => format!("**{:.2}x**", g / n),
            _ => String::new(),
        };
        let what = if legacy {
            "CPU per `tools/call` in a legacy session (stateful route)"
        } else {
            "CPU per 2026-07-28 `tools/call` (stateless route)"
        };
        let _ = writeln!(
            md,
            "| {what} | {} | {} | {} | {ratio} |",
            cell(per[0], &us),
            cell(per[1], &us),
            cell(per[2], &us)
        );
    }
    let _ = writeln!(
        md,
        "\nMedians of {} runs; {} clients per memory measurement (RSS growth over the clients \
         held, KB = 1,000 bytes; descriptors: growth per client); CPU: the proxy's utime + stime \
         over the calls answered in {} s closed loop, {} connections with one call in flight \
         each; {}.",
        args.runs,
        args.clients,
        args.cpu_seconds,
        args.concurrency,
        if pinned {
            "each proxy alone on the last core, one worker"
        } else {
            "not pinned: every process on every core"
        }
    );
    md
}

/// Every run, for the record.
pub(super) fn runs_md(mems: &[Mem], cpus: &[Cpu], load: &str, elapsed: f64) -> String {
    let mut md = format!(
        "# What a client costs: every run\n\nLoad average at start: {}; run time {elapsed:.0} s.\n\n",
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    if !mems.is_empty() {
        md.push_str(
            "| held | proxy | run | held/asked | RSS before | after | per client | descriptors \
             before | after | per client |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        );
        for m in mems {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {}/{} | {:.1} MiB | {:.1} MiB | {:.0} bytes | {} | {} | {:.2} |",
                m.held_what.part(),
                m.kind.label(),
                m.run + 1,
                m.held,
                m.asked,
                m.base_rss_kib as f64 / 1024.0,
                m.loaded_rss_kib as f64 / 1024.0,
                m.bytes_per(),
                m.base_fds,
                m.loaded_fds,
                m.fds_per()
            );
        }
    }
    if !cpus.is_empty() {
        md.push_str(
            "\n| call | proxy | run | answered | failed | req/s | CPU s | busy | µs/req | backend \
             µs/req | load generator µs/req |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        );
        for c in cpus {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {:.0} | {:.2} | {:.0}% | {:.1} | {:.1} | {:.1} |",
                if c.legacy { "legacy" } else { "2026-07-28" },
                c.kind.label(),
                c.run + 1,
                c.ok,
                c.failed,
                c.rps,
                c.cpu_s,
                c.busy * 100.0,
                c.us_per_req,
                c.backend_us,
                c.generator_us
            );
        }
    }
    md
}

#[cfg(test)]
mod tests {
    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(super::median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(super::median(vec![4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(super::median(Vec::new()), None);
    }
}
