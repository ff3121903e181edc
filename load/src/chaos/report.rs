//! The chaos run's verdict: every call (mock legacy, mock 2026-07-28, SDK loops) laid against
//! the kills. Each failure belongs to the last kill before it was done: to its window when done
//! within `window` seconds of it, else "after" it. The bound: per kill, failures in the window ≤ calls in flight at the kill, none
//! after, none before the first kill, no session lost. Also RSS and descriptors per replica
//! (sampled every 5 s from /proc) and latency percentiles; rendered as Markdown.

use super::sdk::SdkResult;
use super::ChaosArgs;
use crate::run::{Latency, RunResult};
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::Duration;

/// What a kill hits.
#[derive(Debug, Clone, Copy, Serialize)]
pub enum Victim {
    /// Gateway replica N.
    Replica(usize),
    /// Legacy backend N.
    Legacy(usize),
    /// 2026-07-28 backend N.
    Modern(usize),
    /// The Redis master of the moment (the Nth of the masters then).
    RedisMaster(usize),
}

impl Victim {
    /// For the labels.
    pub fn name(&self) -> String {
        match self {
            Victim::Replica(i) => format!("replica-{i}"),
            Victim::Legacy(i) => format!("legacy-{i}"),
            Victim::Modern(i) => format!("modern-{i}"),
            Victim::RedisMaster(_) => "redis-master".into(),
        }
    }
}

/// One /proc sample of a replica.
#[derive(Debug, Clone, Serialize)]
pub struct Sample {
    pub t_s: f64,
    pub replica: usize,
    pub pid: u32,
    pub rss_kib: u64,
    pub fds: u64,
}

/// What the run collected.
pub struct Input<'a> {
    pub seed: u64,
    pub args: &'a ChaosArgs,
    pub schedule: &'a [(Duration, Victim)],
    pub notes: Vec<String>,
    pub legacy: RunResult,
    pub modern: RunResult,
    pub sdk: Vec<SdkResult>,
    pub samples: Vec<Sample>,
    pub redis_pids: Vec<u32>,
}

#[derive(Debug, Serialize)]
pub struct Kill {
    pub n: usize,
    pub at_s: f64,
    pub victim: String,
    pub detail: String,
    pub inflight: u64,
    pub failed_in_window: u64,
    pub failed_after: u64,
    /// Failure classes in the window and after.
    pub errors: BTreeMap<String, u64>,
    pub within_bound: bool,
}

#[derive(Debug, Serialize)]
pub struct Load {
    pub name: String,
    pub calls: u64,
    pub failed: u64,
    pub sessions_lost: u64,
    pub errors: BTreeMap<String, u64>,
    /// The SDK loops: the first answer line of each failure class.
    pub messages: BTreeMap<String, String>,
    pub latency_ms: Latency,
}

#[derive(Debug, Serialize)]
pub struct ReplicaMem {
    pub replica: usize,
    pub processes: usize,
    pub rss_first_kib: u64,
    pub rss_max_kib: u64,
    pub rss_last_kib: u64,
    pub fds_first: u64,
    pub fds_max: u64,
    pub fds_last: u64,
}

#[derive(Debug, Serialize)]
pub struct Report {
    pub seed: u64,
    pub duration_s: f64,
    pub kill_every_s: f64,
    pub window_s: f64,
    pub backends: String,
    pub kills: Vec<Kill>,
    pub loads: Vec<Load>,
    pub total_calls: u64,
    pub failed_calls: u64,
    pub failed_before_first_kill: u64,
    pub failed_after_windows: u64,
    pub inflight_at_kills: u64,
    pub sessions_lost: u64,
    pub replicas: Vec<ReplicaMem>,
    pub redis_nodes_alive_at_end: usize,
    pub samples: Vec<Sample>,
    /// Loads that never ran (no call made, or their client process could not start): each
    /// fails the run.
    pub never_ran: Vec<String>,
    pub passed: bool,
}

/// The loads of `loads` that never ran, with why: no call at all, or a client process that
/// could not be started (a missing venv: `start: spawn: ...`).
fn never_ran(loads: &[Load]) -> Vec<String> {
    loads
        .iter()
        .filter_map(|l| {
            let spawn = l.errors.iter().find(|(k, _)| k.starts_with("start: spawn"));
            match (l.calls, spawn) {
                (_, Some((k, n))) => Some(format!("{}: {k} ×{n}", l.name)),
                (0, None) => Some(format!("{}: no call made", l.name)),
                _ => None,
            }
        })
        .collect()
}

/// (sent, done, class) of every failure on one clock, µs.
fn failures(i: &Input) -> Vec<(u64, u64, String)> {
    let mut f: Vec<(u64, u64, String)> = i.legacy.failure_spans.clone();
    f.extend(i.modern.failure_spans.iter().cloned());
    for r in &i.sdk {
        for c in &r.calls {
            if let Some(e) = &c.error {
                f.push((c.sent_us, c.done_us, format!("sdk:{e}")));
            }
        }
    }
    f
}

fn sdk_latency(r: &SdkResult) -> Latency {
    let mut ms: Vec<f64> = r
        .calls
        .iter()
        .filter(|c| c.error.is_none())
        .map(|c| (c.done_us - c.sent_us) as f64 / 1000.0)
        .collect();
    if ms.is_empty() {
        return Latency::default();
    }
    ms.sort_by(f64::total_cmp);
    let q = |q: f64| ms[((ms.len() - 1) as f64 * q).round() as usize];
    Latency {
        p50: q(0.5),
        p90: q(0.9),
        p99: q(0.99),
        max: ms[ms.len() - 1],
    }
}

/// Per kill (at `ats`): failures in its window, failures after it, and their classes. Each
/// failure belongs to the last kill before it was done (`end`: the end of the last one's span).
fn partition(
    ats: &[Duration],
    fails: &[(u64, u64, String)],
    window: Duration,
    end: Duration,
) -> Vec<(u64, u64, BTreeMap<String, u64>)> {
    let us = |d: Duration| d.as_micros() as u64;
    ats.iter()
        .enumerate()
        .map(|(n, at)| {
            let next = ats.get(n + 1).copied().unwrap_or(end);
            let (from, to, until) = (us(*at), us(*at + window), us(next));
            let mut errors = BTreeMap::new();
            let (mut in_window, mut after) = (0, 0);
            for (_, done, class) in fails.iter().filter(|f| f.1 >= from && f.1 < until) {
                if *done < to {
                    in_window += 1;
                    *errors.entry(class.clone()).or_default() += 1;
                } else {
                    after += 1;
                    *errors.entry(format!("after: {class}")).or_default() += 1;
                }
            }
            (in_window, after, errors)
        })
        .collect()
}

/// Lays the calls against the kills.
pub fn build(i: Input) -> Report {
    let fails = failures(&i);
    let us = |d: Duration| d.as_micros() as u64;
    let window = Duration::from_secs_f64(i.args.window);
    let end = Duration::from_secs_f64(i.args.duration + 60.0);
    let ats: Vec<Duration> = i.schedule.iter().map(|(t, _)| *t).collect();
    let parts = partition(&ats, &fails, window, end);
    let mut kills = Vec::new();
    for (n, (at, victim)) in i.schedule.iter().enumerate() {
        let label = format!("#{} {}", n + 1, victim.name());
        let events: Vec<_> = [&i.legacy, &i.modern]
            .iter()
            .filter_map(|r| r.events.iter().find(|e| e.label == label))
            .collect();
        let mock_inflight: usize = events.iter().map(|e| e.inflight).sum();
        // an SDK call in flight: sent before the kill took effect, done after it was done
        let effective = events
            .first()
            .map_or(us(*at), |e| (e.effective_s * 1e6) as u64);
        let sdk_inflight = i
            .sdk
            .iter()
            .flat_map(|r| &r.calls)
            .filter(|c| c.sent_us < effective && c.done_us >= us(*at))
            .count();
        let (in_window, after, errors) = parts[n].clone();
        let inflight = (mock_inflight + sdk_inflight) as u64;
        kills.push(Kill {
            n: n + 1,
            at_s: at.as_secs_f64(),
            victim: victim.name(),
            detail: i.notes.get(n).cloned().unwrap_or_default(),
            inflight,
            failed_in_window: in_window,
            failed_after: after,
            errors,
            within_bound: in_window <= inflight && after == 0,
        });
    }
    let first = i.schedule.first().map_or(end, |(t, _)| *t);
    let failed_before_first_kill = fails.iter().filter(|f| f.1 < us(first)).count() as u64;
    let mut loads = vec![
        Load {
            name: "mock legacy sessions".into(),
            calls: i.legacy.ok + i.legacy.failed,
            failed: i.legacy.failed,
            sessions_lost: i.legacy.session_losses,
            errors: i.legacy.errors.clone(),
            messages: BTreeMap::new(),
            latency_ms: i.legacy.latency_ms.clone(),
        },
        Load {
            name: "mock 2026-07-28".into(),
            calls: i.modern.ok + i.modern.failed,
            failed: i.modern.failed,
            sessions_lost: 0,
            errors: i.modern.errors.clone(),
            messages: BTreeMap::new(),
            latency_ms: i.modern.latency_ms.clone(),
        },
    ];
    for r in &i.sdk {
        loads.push(Load {
            name: r.label.clone(),
            calls: r.total,
            failed: r.failed,
            sessions_lost: r.sessions_lost,
            errors: r.errors.clone(),
            messages: r.messages.clone(),
            latency_ms: sdk_latency(r),
        });
    }
    let replicas = (0..3)
        .map(|n| {
            let s: Vec<&Sample> = i.samples.iter().filter(|s| s.replica == n).collect();
            let mut pids: Vec<u32> = s.iter().map(|s| s.pid).collect();
            pids.dedup();
            ReplicaMem {
                replica: n,
                processes: pids.len(),
                rss_first_kib: s.first().map_or(0, |s| s.rss_kib),
                rss_max_kib: s.iter().map(|s| s.rss_kib).max().unwrap_or(0),
                rss_last_kib: s.last().map_or(0, |s| s.rss_kib),
                fds_first: s.first().map_or(0, |s| s.fds),
                fds_max: s.iter().map(|s| s.fds).max().unwrap_or(0),
                fds_last: s.last().map_or(0, |s| s.fds),
            }
        })
        .collect();
    let failed_after_windows = kills.iter().map(|k| k.failed_after).sum();
    let sessions_lost = loads.iter().map(|l| l.sessions_lost).sum();
    let never_ran = never_ran(&loads);
    let passed = kills.iter().all(|k| k.within_bound)
        && failed_before_first_kill == 0
        && sessions_lost == 0
        && never_ran.is_empty();
    Report {
        seed: i.seed,
        duration_s: i.args.duration,
        kill_every_s: i.args.kill_every,
        window_s: i.args.window,
        backends: i.args.backends.clone(),
        total_calls: loads.iter().map(|l| l.calls).sum(),
        failed_calls: loads.iter().map(|l| l.failed).sum(),
        inflight_at_kills: kills.iter().map(|k| k.inflight).sum(),
        failed_before_first_kill,
        failed_after_windows,
        sessions_lost,
        kills,
        loads: std::mem::take(&mut loads),
        replicas,
        redis_nodes_alive_at_end: i.redis_pids.len(),
        samples: i.samples,
        never_ran,
        passed,
    }
}

fn classes(m: &BTreeMap<String, u64>) -> String {
    let v: Vec<String> = m.iter().map(|(k, n)| format!("{k} ×{n}")).collect();
    v.join(", ")
}

/// The report as Markdown tables.
pub fn markdown(r: &Report) -> String {
    let mut s = format!(
        "Chaos run: {:.0} s, a kill every {:.0} s (window {:.0} s), {} backends, seed {}: **{}**\n\n\
         | # | t (s) | victim | in flight | failed in window | failed after | errors |\n\
         |---|---|---|---|---|---|---|\n",
        r.duration_s,
        r.kill_every_s,
        r.window_s,
        r.backends,
        r.seed,
        if r.passed { "PASSED" } else { "FAILED" }
    );
    if !r.never_ran.is_empty() {
        s += &format!(
            "Loads that never ran (the run fails; install the peers with `scripts/setup-peers`): {}\n\n",
            r.never_ran.join("; ")
        );
    }
    for k in &r.kills {
        let victim = match k.detail.is_empty() {
            true => k.victim.clone(),
            false => format!("{} ({})", k.victim, k.detail),
        };
        s += &format!(
            "| {} | {:.0} | {} | {} | {}{} | {} | {} |\n",
            k.n,
            k.at_s,
            victim,
            k.inflight,
            k.failed_in_window,
            if k.within_bound { "" } else { " ⚠" },
            k.failed_after,
            classes(&k.errors)
        );
    }
    s += "\n| load | calls | failed | sessions lost | p50 ms | p99 ms | errors |\n|---|---|---|---|---|---|---|\n";
    for l in &r.loads {
        s += &format!(
            "| {} | {} | {} | {} | {:.1} | {:.1} | {} |\n",
            l.name,
            l.calls,
            l.failed,
            l.sessions_lost,
            l.latency_ms.p50,
            l.latency_ms.p99,
            classes(&l.errors)
        );
    }
    s += &format!(
        "| **all** | {} | {} | {} | | | in flight at the kills {}, failed before the first kill {}, after the windows {} |\n",
        r.total_calls,
        r.failed_calls,
        r.sessions_lost,
        r.inflight_at_kills,
        r.failed_before_first_kill,
        r.failed_after_windows
    );
    s += "\n| replica | processes | RSS first / max / last (MiB) | fds first / max / last |\n|---|---|---|---|\n";
    let mib = |k: u64| k as f64 / 1024.0;
    for m in &r.replicas {
        s += &format!(
            "| {} | {} | {:.1} / {:.1} / {:.1} | {} / {} / {} |\n",
            m.replica,
            m.processes,
            mib(m.rss_first_kib),
            mib(m.rss_max_kib),
            mib(m.rss_last_kib),
            m.fds_first,
            m.fds_max,
            m.fds_last
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::{never_ran, partition, Load};
    use std::time::Duration;

    #[test]
    fn a_load_that_never_ran_fails_the_run() {
        let load = |name: &str, calls: u64, errors: &[(&str, u64)]| Load {
            name: name.into(),
            calls,
            failed: 0,
            sessions_lost: 0,
            errors: errors.iter().map(|(k, n)| (k.to_string(), *n)).collect(),
            messages: Default::default(),
            latency_ms: Default::default(),
        };
        let loads = [
            load("mock legacy", 3600, &[]),
            load(
                "mcp 1.30.0 legacy #0",
                0,
                &[("start: spawn: No such file or directory (os error 2)", 180)],
            ),
            load("mcp 1.30.0 legacy #1", 0, &[]),
            load(
                "mcp 2.3.0 2026-07-28 #0",
                170,
                &[("start: not ready: x", 2)],
            ),
        ];
        let n = never_ran(&loads);
        assert_eq!(n.len(), 2, "{n:?}");
        assert!(
            n[0].starts_with("mcp 1.30.0 legacy #0: start: spawn"),
            "{n:?}"
        );
        assert_eq!(n[1], "mcp 1.30.0 legacy #1: no call made");
    }

    #[test]
    fn each_failure_counts_once_in_the_window_or_after_the_kill_before_it() {
        let s = |t: f64| (t * 1e6) as u64;
        let fail = |sent: f64, done: f64| (s(sent), s(done), "x".to_owned());
        let fails = vec![
            fail(1.0, 2.0),   // before the first kill: no kill's
            fail(19.9, 20.1), // in flight at the kill at 20 s: its window
            fail(25.0, 29.0), // in the window
            fail(31.0, 31.5), // after the window of the kill at 20 s
            fail(39.0, 41.0), // in flight at the kill at 40 s: that kill's, not "after" 20 s
            fail(95.0, 99.0), // after the last one's window, before the end
        ];
        let ats = [Duration::from_secs(20), Duration::from_secs(40)];
        let p = partition(
            &ats,
            &fails,
            Duration::from_secs(10),
            Duration::from_secs(100),
        );
        assert_eq!((p[0].0, p[0].1), (2, 1));
        assert_eq!((p[1].0, p[1].1), (1, 1));
        assert_eq!(p[0].2.get("after: x"), Some(&1));
    }
}
