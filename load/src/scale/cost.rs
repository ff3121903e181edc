//! Per-request costs the clock is too noisy for on this box, counted by callgrind: routing
//! rules on a route, and backends in a pool (the pick of each balancing mode; for sessions the
//! pick of a new session's backend and the lookup of a session's backend). The gateway runs
//! under callgrind with one worker thread; 3 s of warm-up, then the counters are zeroed and
//! `--count-seconds` of closed-loop load (4 in flight) are counted; the totals and the
//! inclusive cost of the named functions (`callgrind_annotate --inclusive=yes`) are divided by
//! the answered requests.

use super::{counted, fake, gateway, growth, mock, plot::Series, sessions, Ctx, Proc};
use crate::mcp::Dialect;
use crate::run::{self, LoadConfig};
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::time::Duration;

fn load(target: SocketAddr, dialect: Dialect, secs: f64, tool: &str) -> LoadConfig {
    LoadConfig {
        target,
        path: "/mcp".into(),
        dialect,
        rate: 0.0,
        duration: Duration::from_secs_f64(secs),
        concurrency: 4,
        sessions: 4,
        reuse: true,
        tool: tool.into(),
        timeout: Duration::from_secs(30),
        progress: false,
        bearer: None,
    }
}

/// Inclusive instructions of each function whose name contains one of `names`, from the
/// point's callgrind dump.
async fn inclusive(ctx: &Ctx, tag: &str, names: &[&str]) -> Vec<u64> {
    let dir = ctx.out.join("work").join(tag);
    let dump = std::fs::read_dir(&dir).ok().and_then(|d| {
        d.flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("callgrind.out."))
            })
            .min()
    });
    let Some(dump) = dump else {
        return vec![0; names.len()];
    };
    let out = tokio::process::Command::new("callgrind_annotate")
        .args(["--inclusive=yes", "--threshold=100"])
        .arg(&dump)
        .output()
        .await
        .expect("callgrind_annotate");
    let text = String::from_utf8_lossy(&out.stdout);
    names
        .iter()
        .map(|name| {
            text.lines()
                .filter(|l| {
                    l.split_whitespace().any(|w| {
                        w.ends_with(&format!("::{name}")) || w.contains(&format!("::{name} "))
                    }) || l.contains(&format!("::{name} ["))
                })
                .filter_map(|l| {
                    l.split_whitespace()
                        .next()?
                        .replace(',', "")
                        .parse::<u64>()
                        .ok()
                })
                .max()
                .unwrap_or(0)
        })
        .collect()
}

/// Runs `cfg` against `gw` counted; (instructions per answered request, answered).
async fn count_run(ctx: &Ctx, gw: &Proc, tag: &str, cfg: LoadConfig) -> (f64, u64) {
    let mut warm = cfg.clone();
    warm.duration = Duration::from_secs(3);
    let _ = run::run(warm, Vec::new()).await;
    let (total, ok) = counted(ctx, gw, tag, async {
        let r = run::run(cfg, Vec::new()).await;
        r.ok
    })
    .await;
    (total as f64 / ok.max(1) as f64, ok)
}

/// Routing rules per route.
pub async fn rules(ctx: &Ctx) -> String {
    let backend = mock(ctx, false).await;
    let mut rows = Vec::new();
    for &n in &ctx.args.rules {
        let mut rules = String::new();
        for i in 0..n {
            // the last rule is the one the calls match: every rule is looked at
            let name = if i + 1 == n {
                "whoami".to_owned()
            } else {
                format!("tool_{i}_*")
            };
            let _ = writeln!(
                rules,
                "      - {{ match: {{ method: tools/call, name: \"{name}\" }}, pool: ruled }}"
            );
        }
        let yaml = format!(
            "pools:\n  pods: {{ backends: [{b}], era: modern, health: {{ enabled: false }} }}\n  ruled: {{ backends: [{b}], era: modern, health: {{ enabled: false }} }}\n\
             routes:\n  - path: /mcp\n    mode: stateless\n    pool: pods\n    rules:\n{rules}",
            b = backend.addr
        );
        let tag = format!("rules-{n}");
        let gw = gateway(ctx, &tag, &yaml, true).await;
        let cfg = load(
            gw.addr,
            Dialect::Stateless,
            ctx.args.count_seconds,
            "whoami",
        );
        let (per, ok) = count_run(ctx, &gw, &tag, cfg).await;
        drop(gw);
        eprintln!("  {tag}: {per:.0} instructions per request ({ok} requests)");
        rows.push((n, per, ok));
    }
    let mut md = String::from(
        "\n## Routing rules per route\n\nA stateless route with N rules (`{match: {method: \
         tools/call, name: GLOB}, pool: ruled}`), the calls matching only the last one, so \
         every rule is looked at; instructions per request of the whole gateway (callgrind, \
         one worker thread).\n\n| rules | instructions per request | over 1 rule | requests counted |\n|---:|---:|---:|---:|\n",
    );
    let first = rows.first().map_or(0.0, |r| r.1);
    for (n, per, ok) in &rows {
        let _ = writeln!(md, "| {n} | {per:.0} | {:+.0} | {ok} |", per - first);
    }
    let pts: Vec<(f64, f64)> = rows.iter().map(|r| (r.0 as f64, r.1)).collect();
    let over: Vec<(f64, f64)> = rows
        .iter()
        .map(|r| (r.0 as f64, (r.1 - first).max(1.0)))
        .collect();
    let a = ctx.plot(
        "rules",
        "Instructions per request by routing rules",
        "rules on the route",
        "instructions",
        &[Series {
            name: "per request".into(),
            points: pts.clone(),
        }],
    );
    let _ = writeln!(
        md,
        "\n![]({a})\n\nInstructions per request: {}; the part above one rule: {}.\n",
        growth(&pts),
        growth(&over)
    );
    md
}

/// Backends per pool, each balancing mode, and the session path.
pub async fn backends(ctx: &Ctx) -> String {
    let modes = ["round-robin", "least-requests", "power-of-two-choices"];
    let mut rows = Vec::new();
    for &n in &ctx.args.backends {
        // one process holds every backend's port: the stateless ones first, then the legacy
        // ones (both at once would be 20,000 descriptors)
        let modern = fake::start(
            n,
            fake::Shape {
                legacy: false,
                tools: 1,
                answer_bytes: 16,
            },
        )
        .await;
        let list = |f: &fake::Fake| {
            f.addrs[..n]
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        // memory and idle CPU with the default health checks
        let yaml = format!(
            "pools:\n  pods: {{ backends: [{}], era: modern }}\nroutes:\n  - {{ path: /mcp, mode: stateless, pool: pods }}\n",
            list(&modern)
        );
        let gw = gateway(ctx, &format!("backends-{n}-rss"), &yaml, false).await;
        tokio::time::sleep(Duration::from_secs(3)).await;
        let a = gw.stats();
        tokio::time::sleep(Duration::from_secs(10)).await;
        let b = gw.stats();
        let idle_cpu = (b.cpu_ticks - a.cpu_ticks) as f64 / 10.0;
        let rss = b.rss_kib;
        drop(gw);
        let mut picks = Vec::new();
        for mode in modes {
            let yaml = format!(
                "pools:\n  pods: {{ backends: [{}], era: modern, balance: {mode}, health: {{ enabled: false }} }}\nroutes:\n  - {{ path: /mcp, mode: stateless, pool: pods }}\n",
                list(&modern)
            );
            let tag = format!("backends-{n}-{mode}");
            let gw = gateway(ctx, &tag, &yaml, true).await;
            let cfg = load(
                gw.addr,
                Dialect::Stateless,
                ctx.args.count_seconds,
                "whoami",
            );
            let (per, ok) = count_run(ctx, &gw, &tag, cfg).await;
            drop(gw);
            let f = inclusive(ctx, &tag, &["pick"]).await;
            let pick = f[0] as f64 / ok.max(1) as f64;
            eprintln!("  {tag}: {per:.0} instructions per request, pick {pick:.0} ({ok} requests)");
            picks.push((per, pick));
        }
        drop(modern);
        // sessions: n held sessions (about one per backend), then a session per call
        let legacy = fake::start(
            n,
            fake::Shape {
                legacy: true,
                tools: 1,
                answer_bytes: 16,
            },
        )
        .await;
        let yaml = format!(
            "sessions:\n  max: 2000000\npools:\n  pods: {{ backends: [{}], era: legacy, health: {{ enabled: false }} }}\nroutes:\n  - {{ path: /mcp, mode: stateful, pool: pods }}\n",
            list(&legacy)
        );
        let tag = format!("backends-{n}-sessions");
        let gw = gateway(ctx, &tag, &yaml, true).await;
        let _ = sessions::open(gw.addr, n, 8).await;
        let cfg = load(
            gw.addr,
            Dialect::SessionPerCall,
            ctx.args.count_seconds,
            "whoami",
        );
        let (per, ok) = count_run(ctx, &gw, &tag, cfg).await;
        drop(gw);
        let f = inclusive(ctx, &tag, &["select_for_session", "backend_counts", "find"]).await;
        let each = |v: u64| v as f64 / ok.max(1) as f64;
        eprintln!(
            "  {tag}: {per:.0} instructions per session-per-call, select_for_session {:.0}, backend_counts {:.0}, Pool::find {:.0} ({ok})",
            each(f[0]),
            each(f[1]),
            each(f[2])
        );
        rows.push((
            n,
            rss,
            idle_cpu,
            picks,
            per,
            each(f[0]),
            each(f[1]),
            each(f[2]),
        ));
    }
    let mut md = String::from(
        "\n## Backends per pool\n\nA pool of N backends (the synthetic backend, N ports of this \
         process). Stateless: instructions per 2026-07-28 call of the whole gateway and the \
         inclusive cost of `upstream::balance::pick`, per balancing mode (health checks off, so \
         only requests are counted). Sessions: N sessions opened first (about one per \
         backend), then each call is a whole session (`initialize`, `notifications/initialized`, \
         the call, `DELETE`): the inclusive cost per call of `Pool::select_for_session` (the \
         new session's backend) and of the store's `backend_counts` it is given. RSS and idle \
         CPU: the gateway with the default health checks (a TCP connect to each backend every \
         2 s), idle.\n\n\
         | backends | RSS | idle CPU (% of a core) | round-robin: instr/request | pick | least-requests | pick | power-of-two | pick | session per call: instr | select_for_session | backend_counts |\n\
         |---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for (n, rss, cpu, picks, per, sel, counts, _find) in &rows {
        let _ = write!(md, "| {n} | {:.1} MiB | {cpu:.1} |", *rss as f64 / 1024.0);
        for (total, pick) in picks {
            let _ = write!(md, " {total:.0} | {pick:.0} |");
        }
        let _ = writeln!(md, " {per:.0} | {sel:.0} | {counts:.0} |");
    }
    let mut series: Vec<Series> = modes
        .iter()
        .enumerate()
        .map(|(k, m)| Series {
            name: format!("pick, {m}"),
            points: rows
                .iter()
                .map(|r| (r.0 as f64, r.3[k].1.max(1.0)))
                .collect(),
        })
        .collect();
    series.push(Series {
        name: "select_for_session".into(),
        points: rows.iter().map(|r| (r.0 as f64, r.5.max(1.0))).collect(),
    });
    let a = ctx.plot(
        "backends",
        "Instructions per request to choose a backend",
        "backends in the pool",
        "instructions",
        &series,
    );
    let _ = writeln!(md, "\n![]({a})\n");
    for s in &series {
        let _ = writeln!(md, "- {}: {}", s.name, growth(&s.points));
    }
    let rss: Vec<(f64, f64)> = rows.iter().map(|r| (r.0 as f64, r.1 as f64)).collect();
    let _ = writeln!(md, "- RSS: {}", growth(&rss));
    md
}
