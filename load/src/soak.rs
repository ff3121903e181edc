//! `mcp-load soak`: the gateway under steady mixed load while its backends die and its config
//! changes. Legacy sessions (default 100 rps over 50 sessions) on a stateful route and
//! stateless 2026-07-28 calls (50 rps) on another, three mock backends each; every
//! `--kill-every` seconds one backend (the pools in turn) is SIGKILLed and restarted 3 s later;
//! every `--reload-every` seconds the config file is rewritten (a reload). Sampled every 5 s:
//! the gateway's RSS, open file descriptors and sessions held.
//!
//! It passes when no call fails that was not in flight at a kill, the file descriptors end
//! where they began (±`--fd-slack`), and the sessions held are back to the sessions the load
//! keeps. It reports the RSS slope after warm-up (the first kill cycle) so growth can be told
//! from warm-up. 30 minutes: `mcp-load soak --duration 1800`; CI runs two minutes.

use crate::fleet::{kill_and_replace, rss_and_fds, sessions_held, GatewayProc};
use crate::mcp::Dialect;
use crate::run::{self, Event, RunResult};
use crate::suite::procs::{free_port, Backend, BackendKind, Programs};
use clap::Args;
use serde::Serialize;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// `mcp-load soak` options.
#[derive(Args, Debug, Clone)]
pub struct SoakArgs {
    /// Seconds of load.
    #[arg(long, default_value_t = 1800.0)]
    duration: f64,
    /// Seconds between backend kills.
    #[arg(long, default_value_t = 60.0)]
    kill_every: f64,
    /// Seconds between config reloads.
    #[arg(long, default_value_t = 90.0)]
    reload_every: f64,
    /// Legacy calls per second.
    #[arg(long, default_value_t = 100.0)]
    legacy_rate: f64,
    /// Legacy sessions the calls are spread over.
    #[arg(long, default_value_t = 50)]
    sessions: usize,
    /// Stateless calls per second.
    #[arg(long, default_value_t = 50.0)]
    stateless_rate: f64,
    /// Open file descriptors the gateway may end with above its count after warm-up.
    #[arg(long, default_value_t = 16)]
    fd_slack: i64,
    /// Directory of mcp-gateway and mock-mcp (default: next to mcp-load).
    #[arg(long)]
    bin_dir: Option<PathBuf>,
    /// Write the full result (both runs, samples) here as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
}

/// One sample of the gateway process.
#[derive(Debug, Clone, Serialize)]
struct Sample {
    t_s: f64,
    rss_kib: u64,
    fds: u64,
    sessions: f64,
}

/// What the soak found.
#[derive(Debug, Serialize)]
struct Report {
    legacy: RunResult,
    stateless: RunResult,
    samples: Vec<Sample>,
    kills: usize,
    reloads: usize,
    /// Calls that failed, and calls in flight at the instants of the kills.
    failed: u64,
    inflight_at_kills: u64,
    /// Failed calls that were in flight while a kill took effect (the `-32013` "outcome
    /// unknown" a call in flight gets), and the failures outside every kill (must be 0).
    failed_in_flight_at_kills: u64,
    failed_outside_kills: u64,
    /// RSS least-squares slope after warm-up, KiB per minute.
    rss_slope_kib_per_min: f64,
    rss_first_after_warmup_kib: u64,
    rss_last_kib: u64,
    fds_after_warmup: u64,
    fds_last: u64,
    sessions_expected: usize,
    /// Sessions held in the last sample under load (the load keeps `sessions_expected`).
    sessions_under_load: f64,
    /// Sessions held after the load ended them all (DELETE): 0 when none leaked.
    sessions_after_end: f64,
    passed: bool,
}

fn config(
    listen: u16,
    admin: u16,
    legacy: &[SocketAddr],
    modern: &[SocketAddr],
    n: usize,
) -> String {
    let list = |v: &[SocketAddr]| {
        v.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    format!(
        "# reload {n}\nlisten: 127.0.0.1:{listen}\nadmin: 127.0.0.1:{admin}\nthreads: 2\n\
         pools:\n  legacy: {{ backends: [{}], failure-cooldown-ms: 1000 }}\n  \
         modern: {{ backends: [{}], failure-cooldown-ms: 1000 }}\n\
         routes:\n  - {{ path: /legacy, mode: stateful, pool: legacy }}\n  \
         - {{ path: /mcp, mode: stateless, pool: modern }}\n",
        list(legacy),
        list(modern)
    )
}

/// Least-squares slope of `(x, y)` points.
fn slope(points: &[(f64, f64)]) -> f64 {
    let n = points.len() as f64;
    if n < 2.0 {
        return 0.0;
    }
    let (sx, sy) = points
        .iter()
        .fold((0.0, 0.0), |(a, b), (x, y)| (a + x, b + y));
    let (mx, my) = (sx / n, sy / n);
    let (num, den) = points.iter().fold((0.0, 0.0), |(a, b), (x, y)| {
        (a + (x - mx) * (y - my), b + (x - mx) * (x - mx))
    });
    if den == 0.0 {
        0.0
    } else {
        num / den
    }
}

/// Runs the soak; the process exit code.
pub async fn main(args: SoakArgs) -> i32 {
    let programs = match Programs::find(std::path::Path::new("."), args.bin_dir.clone(), None, None)
    {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{e}");
            return 2;
        }
    };
    let mut legacy = Vec::new();
    let mut modern = Vec::new();
    for i in 0..3 {
        legacy.push(
            Backend::start(
                &programs,
                BackendKind::MockLegacy,
                &format!("legacy-{i}"),
                0,
            )
            .await,
        );
        modern.push(
            Backend::start(
                &programs,
                BackendKind::MockStateless,
                &format!("modern-{i}"),
                0,
            )
            .await,
        );
    }
    let legacy_addrs: Vec<SocketAddr> = legacy.iter().map(|b| b.addr).collect();
    let modern_addrs: Vec<SocketAddr> = modern.iter().map(|b| b.addr).collect();
    let (port, admin_port) = (free_port(), free_port());
    let dir = std::env::temp_dir().join(format!("mcp-load-soak-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("soak dir");
    let path = dir.join("gateway.yaml");
    let write = move |n| config(port, admin_port, &legacy_addrs, &modern_addrs, n);
    std::fs::write(&path, write(0)).expect("write config");
    let (target, admin) = (
        SocketAddr::from(([127, 0, 0, 1], port)),
        SocketAddr::from(([127, 0, 0, 1], admin_port)),
    );
    let gateway = GatewayProc::start(&programs.gateway, &path, "warn", target, admin, None).await;
    let pid = gateway.pid().expect("gateway pid");

    // kills: the pools in turn, each backend restarted 3 s after its kill
    let duration = Duration::from_secs_f64(args.duration);
    let pools = [Arc::new(Mutex::new(legacy)), Arc::new(Mutex::new(modern))];
    let (mut legacy_events, mut modern_events) = (Vec::new(), Vec::new());
    let mut kills = 0;
    let mut at = args.kill_every;
    while at + 5.0 < args.duration {
        let (pool, which) = (pools[kills % 2].clone(), (kills / 2) % 3);
        let programs = programs.clone();
        let event = Event {
            at: Duration::from_secs_f64(at),
            label: format!(
                "SIGKILL {} {which}",
                if kills % 2 == 0 { "legacy" } else { "modern" }
            ),
            action: Box::new(move || {
                kill_and_replace(&pool, which, &programs, None, Duration::from_secs(3))
            }),
        };
        if kills % 2 == 0 {
            legacy_events.push(event);
        } else {
            modern_events.push(event);
        }
        kills += 1;
        at += args.kill_every;
    }

    // reloads and samples, until the load ends
    let started = Instant::now();
    let samples = Arc::new(Mutex::new(Vec::new()));
    let watcher = {
        let (samples, path) = (samples.clone(), path.clone());
        let reload_every = Duration::from_secs_f64(args.reload_every);
        tokio::spawn(async move {
            let mut reloads = 0;
            let mut next_reload = reload_every;
            while started.elapsed() < duration + Duration::from_secs(10) {
                tokio::time::sleep(Duration::from_secs(5)).await;
                if started.elapsed() >= next_reload && started.elapsed() < duration {
                    reloads += 1;
                    let _ = std::fs::write(&path, write(reloads));
                    next_reload += reload_every;
                }
                if let (Some((rss, fds)), Some(sessions)) =
                    (rss_and_fds(pid), sessions_held(admin).await)
                {
                    samples.lock().expect("samples").push(Sample {
                        t_s: started.elapsed().as_secs_f64(),
                        rss_kib: rss,
                        fds,
                        sessions,
                    });
                }
            }
            reloads
        })
    };
    let load = |path: &str, dialect, rate, sessions| {
        crate::fleet::fault_load(target, path, dialect, rate, sessions, duration)
    };
    let (legacy_result, stateless_result) = tokio::join!(
        run::run(
            load("/legacy", Dialect::Legacy, args.legacy_rate, args.sessions),
            legacy_events
        ),
        run::run(
            load("/mcp", Dialect::Stateless, args.stateless_rate, 1),
            modern_events
        ),
    );
    let reloads = watcher.await.unwrap_or(0);
    let samples = samples.lock().expect("samples").clone();
    let report = report(
        &args,
        legacy_result,
        stateless_result,
        samples,
        kills,
        reloads,
    );
    print_report(&report);
    if let Some(out) = &args.json {
        let json = serde_json::to_string_pretty(&report).expect("report serializes");
        if let Err(e) = std::fs::write(out, json) {
            eprintln!("cannot write {}: {e}", out.display());
        }
    }
    drop(gateway);
    let _ = std::fs::remove_dir_all(&dir);
    if report.passed {
        0
    } else {
        1
    }
}

fn report(
    args: &SoakArgs,
    legacy: RunResult,
    stateless: RunResult,
    samples: Vec<Sample>,
    kills: usize,
    reloads: usize,
) -> Report {
    let events = legacy.events.iter().chain(&stateless.events);
    let inflight_at_kills: u64 = events.clone().map(|e| e.inflight as u64).sum();
    // (a failure after one kill may be in flight at the next: `failed_after` of each event
    // counts it again, so failures outside the kills are what the in-flight ones leave)
    let failed_in_flight_at_kills: u64 = events.map(|e| e.failed_in_flight).sum();
    let failed = legacy.failed + stateless.failed;
    let failed_outside_kills = failed.saturating_sub(failed_in_flight_at_kills);
    // warm-up: until the first kill cycle has passed (every backend has died once and the
    // pools have each had a move), or the first fifth of a short run
    let warmup = (args.kill_every * 2.0 + 10.0).min(args.duration / 5.0);
    let after: Vec<&Sample> = samples.iter().filter(|s| s.t_s >= warmup).collect();
    let points: Vec<(f64, f64)> = after
        .iter()
        .map(|s| (s.t_s / 60.0, s.rss_kib as f64))
        .collect();
    let first = after.first().copied();
    let last = samples.last();
    let fds_after_warmup = first.map_or(0, |s| s.fds);
    let fds_last = last.map_or(0, |s| s.fds);
    let under_load = samples
        .iter()
        .rev()
        .find(|s| s.t_s < args.duration)
        .map_or(0.0, |s| s.sessions);
    let sessions_after_end = last.map_or(f64::NAN, |s| s.sessions);
    let passed = failed_outside_kills == 0
        && (fds_last as i64 - fds_after_warmup as i64) <= args.fd_slack
        && under_load == args.sessions as f64
        && sessions_after_end == 0.0;
    Report {
        legacy,
        stateless,
        kills,
        reloads,
        failed,
        inflight_at_kills,
        failed_in_flight_at_kills,
        failed_outside_kills,
        rss_slope_kib_per_min: slope(&points),
        rss_first_after_warmup_kib: first.map_or(0, |s| s.rss_kib),
        rss_last_kib: last.map_or(0, |s| s.rss_kib),
        fds_after_warmup,
        fds_last,
        sessions_expected: args.sessions,
        sessions_under_load: under_load,
        sessions_after_end,
        samples,
        passed,
    }
}

fn print_report(r: &Report) {
    println!("{}", crate::summary_line(&r.legacy));
    println!("{}", crate::summary_line(&r.stateless));
    println!(
        "soak: {} kills, {} reloads; failed {} (calls in flight at the kills {}, failed of those \
         {}, failed outside the kills {}); \
         RSS {} -> {} KiB after warm-up, slope {:.1} KiB/min; fds {} -> {}; sessions {} under load \
         (expected {}), {} after the load ended them; {}",
        r.kills,
        r.reloads,
        r.failed,
        r.inflight_at_kills,
        r.failed_in_flight_at_kills,
        r.failed_outside_kills,
        r.rss_first_after_warmup_kib,
        r.rss_last_kib,
        r.rss_slope_kib_per_min,
        r.fds_after_warmup,
        r.fds_last,
        r.sessions_under_load,
        r.sessions_expected,
        r.sessions_after_end,
        if r.passed { "PASSED" } else { "FAILED" }
    );
    let rss: Vec<String> = r
        .samples
        .iter()
        .map(|s| format!("{:.0}s:{}", s.t_s, s.rss_kib))
        .collect();
    println!("rss samples (KiB): {}", rss.join(" "));
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_slope_of_a_line_is_its_gradient_and_of_a_flat_run_zero() {
        assert!((super::slope(&[(0.0, 1.0), (1.0, 3.0), (2.0, 5.0)]) - 2.0).abs() < 1e-9);
        assert_eq!(super::slope(&[(0.0, 4.0), (1.0, 4.0)]), 0.0);
        assert_eq!(super::slope(&[(0.0, 4.0)]), 0.0);
    }
}
