//! Live sessions: the memory store (gateway RSS per session) and Redis (Redis `used_memory`
//! per session), and a call's latency at each size. Each point: a fresh gateway on a stateful
//! route over one legacy mock, N real `initialize` + `notifications/initialized` exchanges
//! (64 in flight), then `--calls` timed `tools/call`s one after another on sessions sampled
//! over the whole range.

use super::{gateway, growth, mock, percentiles, plot::Series, Ctx};
use crate::http::Client;
use crate::mcp::{verdict, Dialect, Verdict, Wire};
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn wire(target: SocketAddr) -> Wire {
    Wire {
        path: "/mcp".into(),
        host: target.to_string(),
        close: false,
        tool: "whoami".into(),
        bearer: None,
    }
}

/// Opens `n` sessions; returns how many opened and a sample of at most 1,000 of their ids,
/// spread over the whole range.
pub async fn open(target: SocketAddr, n: usize, concurrency: usize) -> (usize, Vec<String>) {
    let client = Arc::new(Client::new(target, true, Duration::from_secs(30)));
    let wire = Arc::new(wire(target));
    let next = Arc::new(AtomicUsize::new(0));
    let ok = Arc::new(AtomicUsize::new(0));
    let sample = Arc::new(Mutex::new(Vec::new()));
    let every = (n / 1000).max(1);
    let started = Instant::now();
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..concurrency {
        let (client, wire, next, ok, sample) = (
            client.clone(),
            wire.clone(),
            next.clone(),
            ok.clone(),
            sample.clone(),
        );
        workers.spawn(async move {
            loop {
                let i = next.fetch_add(1, Relaxed);
                if i >= n {
                    break;
                }
                let Ok(resp) = client.send(&wire.initialize(1)).await else {
                    continue;
                };
                let Some(sid) = resp.session_id else { continue };
                if client.send(&wire.initialized(&sid)).await.is_ok() {
                    let done = ok.fetch_add(1, Relaxed) + 1;
                    if done % 100_000 == 0 {
                        eprintln!(
                            "    {done} sessions, {:.0}/s",
                            done as f64 / started.elapsed().as_secs_f64()
                        );
                    }
                    if i % every == 0 {
                        sample.lock().expect("sample").push(sid);
                    }
                }
            }
        });
    }
    while workers.join_next().await.is_some() {}
    let sids = std::mem::take(&mut *sample.lock().expect("sample"));
    (ok.load(Relaxed), sids)
}

/// `calls` timed calls, one after another, over `sids`: (p50, p99) ms and failures.
pub async fn timed_calls(target: SocketAddr, sids: &[String], calls: usize) -> (f64, f64, usize) {
    let client = Client::new(target, true, Duration::from_secs(10));
    let wire = wire(target);
    let mut ms = Vec::with_capacity(calls);
    let mut failed = 0;
    for i in 0..calls {
        let sid = &sids[i % sids.len().max(1)];
        let req = wire.call(Dialect::Legacy, i as u64, Some(sid));
        let t = Instant::now();
        match client.send(&req).await {
            Ok(resp) if verdict(&resp) == Verdict::Ok => {
                ms.push(t.elapsed().as_secs_f64() * 1000.0)
            }
            _ => failed += 1,
        }
    }
    let (p50, p99) = percentiles(&mut ms);
    (p50, p99, failed)
}

const SESSIONS: &str = "sessions:\n  max: 2000000\n";

/// `used_memory` of the Redis at `addr`, in bytes.
async fn used_memory(addr: SocketAddr) -> u64 {
    let out = tokio::process::Command::new("redis-cli")
        .args(["-p", &addr.port().to_string(), "info", "memory"])
        .output()
        .await
        .expect("redis-cli");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

struct Row {
    n: usize,
    opened: usize,
    secs: f64,
    before: u64,
    after: u64,
    gw_before: u64,
    gw_after: u64,
    p50: f64,
    p99: f64,
    failed: usize,
}

async fn curve(ctx: &Ctx, redis_store: bool) -> Vec<Row> {
    let mut rows = Vec::new();
    for &n in &ctx.args.sessions {
        let store = if redis_store {
            Some(super::redis().await)
        } else {
            None
        };
        let backend = mock(ctx, true).await;
        let extra = match &store {
            Some(r) => format!(
                "{SESSIONS}  store: redis\n  redis: {{ urls: [\"redis://{}/0\"] }}\n",
                r.addr
            ),
            None => SESSIONS.to_owned(),
        };
        let yaml = format!(
            "{extra}limits:\n  max-connections-per-client: 100000\npools:\n  pods: {{ backends: [{}] }}\n\
             routes:\n  - {{ path: /mcp, mode: stateful, pool: pods }}\n",
            backend.addr
        );
        let tag = format!("{}-{n}", if redis_store { "redis" } else { "sessions" });
        let gw = gateway(ctx, &tag, &yaml, false).await;
        // warm: connections, the first allocations
        let _ = open(gw.addr, 64, 8).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        let gw_before = gw.stats().rss_kib * 1024;
        let before = match &store {
            Some(r) => used_memory(r.addr).await,
            None => gw_before,
        };
        let t = Instant::now();
        let (opened, sids) = open(gw.addr, n, 64).await;
        let secs = t.elapsed().as_secs_f64();
        tokio::time::sleep(Duration::from_secs(1)).await;
        let gw_after = gw.stats().rss_kib * 1024;
        let after = match &store {
            Some(r) => used_memory(r.addr).await,
            None => gw_after,
        };
        let (p50, p99, failed) = timed_calls(gw.addr, &sids, ctx.args.calls).await;
        eprintln!(
            "  {tag}: {opened} opened in {secs:.0} s, {before} -> {after} bytes, call p50 {p50:.3} p99 {p99:.3} ms, {failed} failed"
        );
        rows.push(Row {
            n,
            opened,
            secs,
            before,
            after,
            gw_before,
            gw_after,
            p50,
            p99,
            failed,
        });
        drop(gw);
        drop(backend);
        drop(store);
    }
    rows
}

fn per(r: &Row) -> f64 {
    r.after.saturating_sub(r.before) as f64 / r.opened.max(1) as f64
}

/// The memory-store curve.
pub async fn memory(ctx: &Ctx) -> String {
    let rows = curve(ctx, false).await;
    let mut md = String::from("\n## Sessions in the memory store\n\n");
    md.push_str(
        "| sessions | opened in | gateway RSS before | after | per session | call p50 ms | call p99 ms | failed calls |\n\
         |---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in &rows {
        let _ = writeln!(
            md,
            "| {} | {:.1} s | {:.1} MiB | {:.1} MiB | {:.0} bytes | {:.3} | {:.3} | {} |",
            r.opened,
            r.secs,
            r.before as f64 / 1048576.0,
            r.after as f64 / 1048576.0,
            per(r),
            r.p50,
            r.p99,
            r.failed
        );
    }
    let bytes: Vec<(f64, f64)> = rows.iter().map(|r| (r.n as f64, per(r))).collect();
    let p50: Vec<(f64, f64)> = rows.iter().map(|r| (r.n as f64, r.p50 * 1000.0)).collect();
    let p99: Vec<(f64, f64)> = rows.iter().map(|r| (r.n as f64, r.p99 * 1000.0)).collect();
    let a = ctx.plot(
        "sessions-memory",
        "Gateway RSS per session (memory store)",
        "live sessions",
        "bytes per session",
        &[Series {
            name: "RSS / session".into(),
            points: bytes.clone(),
        }],
    );
    let b = ctx.plot(
        "sessions-latency",
        "A call's latency by live sessions (memory store)",
        "live sessions",
        "µs",
        &[
            Series {
                name: "p50".into(),
                points: p50.clone(),
            },
            Series {
                name: "p99".into(),
                points: p99,
            },
        ],
    );
    let _ = writeln!(
        md,
        "\n![]({a}) ![]({b})\n\nBytes per session: {}. Call p50: {}.\n",
        growth(&bytes),
        growth(&p50)
    );
    md
}

/// The Redis-store curve.
pub async fn redis(ctx: &Ctx) -> String {
    let rows = curve(ctx, true).await;
    let mut md = String::from("\n## Sessions in Redis\n\n");
    md.push_str(
        "| sessions | opened in | Redis used_memory before | after | Redis bytes per session | gateway RSS per session | call p50 ms | call p99 ms | failed calls |\n\
         |---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in &rows {
        let gw = r.gw_after.saturating_sub(r.gw_before) as f64 / r.opened.max(1) as f64;
        let _ = writeln!(
            md,
            "| {} | {:.1} s | {:.1} MiB | {:.1} MiB | {:.0} | {:.0} | {:.3} | {:.3} | {} |",
            r.opened,
            r.secs,
            r.before as f64 / 1048576.0,
            r.after as f64 / 1048576.0,
            per(r),
            gw,
            r.p50,
            r.p99,
            r.failed
        );
    }
    let bytes: Vec<(f64, f64)> = rows.iter().map(|r| (r.n as f64, per(r))).collect();
    let p50: Vec<(f64, f64)> = rows.iter().map(|r| (r.n as f64, r.p50 * 1000.0)).collect();
    let p99: Vec<(f64, f64)> = rows.iter().map(|r| (r.n as f64, r.p99 * 1000.0)).collect();
    let a = ctx.plot(
        "redis-memory",
        "Redis bytes per session",
        "live sessions",
        "bytes per session",
        &[Series {
            name: "used_memory / session".into(),
            points: bytes.clone(),
        }],
    );
    let b = ctx.plot(
        "redis-latency",
        "A call's latency by live sessions (Redis store)",
        "live sessions",
        "µs",
        &[
            Series {
                name: "p50".into(),
                points: p50.clone(),
            },
            Series {
                name: "p99".into(),
                points: p99,
            },
        ],
    );
    let _ = writeln!(
        md,
        "\n![]({a}) ![]({b})\n\nRedis bytes per session: {}. Call p50: {}.\n",
        growth(&bytes),
        growth(&p50)
    );
    md
}
