//! `mcp-load rollout`: a rolling upgrade from legacy to 2026-07-28 pods under load (issue 22,
//! test 3). One pool of `--pods` FastMCP 1.30.0 servers (`era: detect`) behind an `auto` route;
//! every `--every` seconds one pod is SIGKILLed and replaced at its address by a modern-only
//! TypeScript SDK v2 server (`createMcpHandler({legacy: 'reject'})`), while legacy sessions and
//! 2026-07-28 calls run at once (the 2026-07-28 load starts once the first modern pod is in:
//! before that no backend can serve it).
//!
//! Reported per replacement: calls in flight, failures among them, failures after it; the
//! failures after the last replacement; the eras `/admin/backends` shows at the end. It passes
//! when every failure was a call in flight at a replacement and nothing fails after the last
//! one settled. Once the last legacy pod is gone the legacy sessions continue on the era
//! bridge (same session ids); `--replace` fewer than `--pods` measures the rollout up to a
//! point.

use crate::fleet::{admin_get, kill_and_replace, GatewayProc};
use crate::mcp::Dialect;
use crate::run::{self, Event, RunResult};
use crate::suite::procs::{free_port, Backend, BackendKind, Programs};
use clap::Args;
use serde::Serialize;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// `mcp-load rollout` options.
#[derive(Args, Debug, Clone)]
pub struct RolloutArgs {
    /// Legacy pods at the start.
    #[arg(long, default_value_t = 3)]
    pods: usize,
    /// How many of them are replaced by modern pods (default: all).
    #[arg(long)]
    replace: Option<usize>,
    /// Seconds between replacements (the first one after this long).
    #[arg(long, default_value_t = 10.0)]
    every: f64,
    /// Seconds of load after the last replacement.
    #[arg(long, default_value_t = 10.0)]
    after: f64,
    /// Legacy calls per second.
    #[arg(long, default_value_t = 50.0)]
    legacy_rate: f64,
    /// Legacy sessions the calls are spread over.
    #[arg(long, default_value_t = 20)]
    sessions: usize,
    /// 2026-07-28 calls per second.
    #[arg(long, default_value_t = 50.0)]
    modern_rate: f64,
    /// Directory of mcp-gateway (default: next to mcp-load).
    #[arg(long)]
    bin_dir: Option<PathBuf>,
    /// Write the result (both runs) here as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
}

/// One replacement, as both loads saw it.
#[derive(Debug, Serialize)]
struct Replacement {
    label: String,
    at_s: f64,
    inflight: usize,
    failed_in_flight: u64,
    failed_after: u64,
}

#[derive(Debug, Serialize)]
struct Report {
    legacy: RunResult,
    modern: RunResult,
    replacements: Vec<Replacement>,
    /// Failures that were not in flight at any replacement (must be 0).
    failed_outside: u64,
    /// Failures of calls started after the last replacement had settled (2 s).
    failed_after_last: u64,
    /// `era` of each backend in `/admin/backends` at the end.
    eras_at_end: serde_json::Value,
    passed: bool,
}

fn config(listen: u16, admin: u16, pods: &[SocketAddr]) -> String {
    let list: Vec<String> = pods.iter().map(ToString::to_string).collect();
    format!(
        "listen: 127.0.0.1:{listen}\nadmin: 127.0.0.1:{admin}\nthreads: 2\n\
         pools:\n  pods: {{ backends: [{}], era: detect, failure-cooldown-ms: 1000, \
         health: {{ interval-ms: 200, timeout-ms: 200, fall: 1, rise: 1 }} }}\n\
         routes:\n  - {{ path: /mcp, mode: auto, pool: pods }}\n",
        list.join(", ")
    )
}

/// Runs the rollout; the process exit code.
pub async fn main(args: RolloutArgs) -> i32 {
    let programs = match Programs::find(std::path::Path::new("."), args.bin_dir.clone(), None, None)
    {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{e}");
            return 2;
        }
    };
    let replace = args.replace.unwrap_or(args.pods).min(args.pods);
    let mut pods = Vec::new();
    for i in 0..args.pods {
        pods.push(
            Backend::start(&programs, BackendKind::FastMcp1, &format!("legacy-{i}"), 0).await,
        );
    }
    let addrs: Vec<SocketAddr> = pods.iter().map(|b| b.addr).collect();
    let (port, admin_port) = (free_port(), free_port());
    let dir = std::env::temp_dir().join(format!("mcp-load-rollout-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("rollout dir");
    let path = dir.join("gateway.yaml");
    std::fs::write(&path, config(port, admin_port, &addrs)).expect("write config");
    let (target, admin) = (
        SocketAddr::from(([127, 0, 0, 1], port)),
        SocketAddr::from(([127, 0, 0, 1], admin_port)),
    );
    let gateway = GatewayProc::start(&programs.gateway, &path, "info", target, admin, None).await;

    let pods = Arc::new(Mutex::new(pods));
    let every = Duration::from_secs_f64(args.every);
    let mut legacy_events = Vec::new();
    for i in 0..replace {
        let (pods, programs) = (pods.clone(), programs.clone());
        legacy_events.push(Event {
            at: every * (i as u32 + 1),
            label: format!("replace legacy-{i} by modern-{i}"),
            action: Box::new(move || {
                // the new image comes up at the same address, like a pod restarted in place
                let modern = (BackendKind::ModernTs, format!("modern-{i}"));
                kill_and_replace(&pods, i, &programs, Some(modern), Duration::ZERO)
            }),
        });
    }
    let total = every * (replace as u32) + Duration::from_secs_f64(args.after);
    // the 2026-07-28 load starts 2 s after the first replacement (a modern pod is probed by
    // then); its markers are the same replacements, on its own clock
    let modern_delay = every + Duration::from_secs(2);
    let modern_events: Vec<Event> = (1..replace)
        .map(|i| Event {
            at: every * (i as u32 + 1) - modern_delay,
            label: format!("replace legacy-{i} by modern-{i}"),
            action: Box::new(|| Box::pin(async {})),
        })
        .collect();
    let load = |dialect, rate, sessions, duration| {
        crate::fleet::fault_load(target, "/mcp", dialect, rate, sessions, duration)
    };
    let legacy_cfg = load(Dialect::Legacy, args.legacy_rate, args.sessions, total);
    let modern_cfg = load(
        Dialect::Stateless,
        args.modern_rate,
        1,
        total.saturating_sub(modern_delay),
    );
    let (legacy, modern) = tokio::join!(run::run(legacy_cfg, legacy_events), async {
        tokio::time::sleep(modern_delay).await;
        run::run(modern_cfg, modern_events).await
    });
    let eras_at_end = admin_get(gateway.admin, "/admin/backends")
        .await
        .and_then(|b| serde_json::from_str::<serde_json::Value>(&b).ok())
        .map(|v| {
            let backends = v["pools"][0]["backends"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            serde_json::Value::Array(
                backends
                    .iter()
                    .map(|b| serde_json::json!({"address": b["address"], "era": b["era"]}))
                    .collect(),
            )
        })
        .unwrap_or_default();
    drop(gateway);
    let _ = std::fs::remove_dir_all(&dir);
    let report = report(
        legacy,
        modern,
        eras_at_end,
        every * (replace as u32),
        modern_delay,
    );
    print_report(&report);
    if let Some(out) = &args.json {
        let json = serde_json::to_string_pretty(&report).expect("report serializes");
        if let Err(e) = std::fs::write(out, json) {
            eprintln!("cannot write {}: {e}", out.display());
        }
    }
    if report.passed {
        0
    } else {
        1
    }
}

fn report(
    legacy: RunResult,
    modern: RunResult,
    eras_at_end: serde_json::Value,
    last: Duration,
    modern_delay: Duration,
) -> Report {
    let replacements: Vec<Replacement> = legacy
        .events
        .iter()
        .map(|e| {
            let m = modern.events.iter().find(|m| m.label == e.label);
            Replacement {
                label: e.label.clone(),
                at_s: e.at_s,
                inflight: e.inflight + m.map_or(0, |m| m.inflight),
                failed_in_flight: e.failed_in_flight + m.map_or(0, |m| m.failed_in_flight),
                failed_after: e.failed_after + m.map_or(0, |m| m.failed_after),
            }
        })
        .collect();
    // failures completed in the seconds after the last replacement settled (2 s)
    let settled = last.as_secs() + 2;
    let after = |r: &RunResult, offset: u64| -> u64 {
        r.timeline
            .iter()
            .filter(|s| s.t + offset >= settled)
            .map(|s| s.failed)
            .sum()
    };
    let failed_after_last = after(&legacy, 0) + after(&modern, modern_delay.as_secs());
    // (as in the soak: a call in flight at a replacement is one started before the old pod
    // was gone and finished after the replacement began, which includes a call sent in the
    // very instant of the kill on a connection that dies under it)
    let in_flight: u64 = replacements.iter().map(|r| r.failed_in_flight).sum();
    let failed_outside = (legacy.failed + modern.failed).saturating_sub(in_flight);
    let passed = failed_after_last == 0 && failed_outside == 0;
    Report {
        legacy,
        modern,
        replacements,
        failed_outside,
        failed_after_last,
        eras_at_end,
        passed,
    }
}

fn print_report(r: &Report) {
    println!("{}", crate::summary_line(&r.legacy));
    println!("{}", crate::summary_line(&r.modern));
    for p in &r.replacements {
        println!(
            "{} at {:.1}s: {} calls in flight, {} of them failed; {} failed after it",
            p.label, p.at_s, p.inflight, p.failed_in_flight, p.failed_after
        );
    }
    println!("legacy errors: {:?}", r.legacy.errors);
    println!("2026-07-28 errors: {:?}", r.modern.errors);
    println!(
        "failed outside the replacements: {}; failed after the last one settled: {}; eras at the end: {}; {}",
        r.failed_outside,
        r.failed_after_last,
        r.eras_at_end,
        if r.passed { "PASSED" } else { "FAILED" }
    );
}
