//! Traffic shapes: bodies of 1 KiB to 4 MiB on both paths (the gateway's peak RSS: it must not
//! buffer what it can stream), and `tools/list` of 10 to 10,000 tools filtered by `authz`
//! rules (latency and peak RSS). The backend is the synthetic one ([`super::fake`]).

use super::{fake, gateway, growth, percentiles, plot::Series, raw, Ctx};
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// `total` requests from `req(i)` over `workers` kept-alive connections: latencies (ms) and
/// failures (not 200 with a result).
async fn drive(
    target: SocketAddr,
    workers: usize,
    total: usize,
    req: Arc<dyn Fn(usize) -> Vec<u8> + Send + Sync>,
) -> (Vec<f64>, usize) {
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    for w in 0..workers {
        let (next, req) = (next.clone(), req.clone());
        tasks.spawn(async move {
            let mut ms = Vec::new();
            let mut failed = 0;
            let mut conn = None;
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= total {
                    break;
                }
                if conn.is_none() {
                    conn = raw::connect(target, w).await.ok();
                }
                let Some(s) = conn.as_mut() else {
                    failed += 1;
                    continue;
                };
                let bytes = req(i);
                let t = Instant::now();
                let r =
                    tokio::time::timeout(Duration::from_secs(30), raw::exchange(s, &bytes, true))
                        .await;
                match r {
                    Ok(Ok(a)) if a.status == 200 && a.result => {
                        ms.push(t.elapsed().as_secs_f64() * 1000.0)
                    }
                    _ => {
                        failed += 1;
                        conn = None;
                    }
                }
            }
            (ms, failed)
        });
    }
    let (mut all, mut failed) = (Vec::new(), 0);
    while let Some(r) = tasks.join_next().await {
        if let Ok((ms, f)) = r {
            all.extend(ms);
            failed += f;
        }
    }
    (all, failed)
}

/// A session id opened through the gateway (legacy path).
async fn session(target: SocketAddr) -> String {
    let client = crate::http::Client::new(target, true, Duration::from_secs(10));
    let wire = crate::mcp::Wire {
        path: "/mcp".into(),
        host: target.to_string(),
        close: false,
        tool: "whoami".into(),
        bearer: None,
    };
    let resp = client.send(&wire.initialize(1)).await.expect("initialize");
    let sid = resp.session_id.expect("a session id");
    let _ = client.send(&wire.initialized(&sid)).await;
    sid
}

struct BodyRow {
    kib: usize,
    path: &'static str,
    direction: &'static str,
    base_kib: u64,
    hwm_kib: u64,
    p50: f64,
    ok: usize,
    failed: usize,
}

/// Bodies on both paths, both directions.
pub async fn bodies(ctx: &Ctx) -> String {
    const WORKERS: usize = 8;
    let mut rows = Vec::new();
    for &(path, legacy) in &[("stateless", false), ("stateful", true)] {
        for &(direction, up) in &[("request", true), ("answer", false)] {
            for &kib in &ctx.args.bodies_kib {
                let bytes = kib * 1024;
                let backend = fake::start(
                    1,
                    fake::Shape {
                        legacy,
                        tools: 1,
                        answer_bytes: if up { 16 } else { bytes },
                    },
                )
                .await;
                let yaml = format!(
                    "pools:\n  pods: {{ backends: [{}], era: {} }}\nroutes:\n  - {{ path: /mcp, mode: {path}, pool: pods }}\n",
                    backend.addrs[0],
                    if legacy { "legacy" } else { "modern" }
                );
                let tag = format!("bodies-{path}-{direction}-{kib}");
                let gw = gateway(ctx, &tag, &yaml, false).await;
                let host = gw.addr.to_string();
                let sid = if legacy {
                    session(gw.addr).await
                } else {
                    String::new()
                };
                let make = |pad: usize| -> Arc<dyn Fn(usize) -> Vec<u8> + Send + Sync> {
                    let (host, sid) = (host.clone(), sid.clone());
                    Arc::new(move |i| {
                        if sid.is_empty() {
                            raw::stateless_call(&host, i as u64, pad)
                        } else {
                            raw::session_call(&host, &sid, i as u64, pad)
                        }
                    })
                };
                // warm with small bodies, then the baseline
                let _ = drive(gw.addr, WORKERS, 64, make(16)).await;
                tokio::time::sleep(Duration::from_millis(300)).await;
                let base_kib = gw.stats().rss_kib;
                let pad = if up { bytes.saturating_sub(400) } else { 16 };
                let total = (256 * 1024 * 1024 / bytes.max(1)).clamp(64, 2000);
                let (mut ms, failed) = drive(gw.addr, WORKERS, total, make(pad)).await;
                let hwm_kib = gw.stats().hwm_kib;
                let ok = ms.len();
                let (p50, _) = percentiles(&mut ms);
                eprintln!(
                    "  {tag}: {ok} ok, {failed} failed, RSS {base_kib} KiB, peak {hwm_kib} KiB, p50 {p50:.2} ms"
                );
                rows.push(BodyRow {
                    kib,
                    path,
                    direction,
                    base_kib,
                    hwm_kib,
                    p50,
                    ok,
                    failed,
                });
            }
        }
    }
    let mut md = String::from(
        "\n## Bodies\n\nPer point a fresh gateway and the synthetic backend; 8 connections, each \
         with one request in flight (so 8 bodies in flight at once), until 256 MiB have \
         crossed (64 to 2,000 requests). \"request\": the request body is the size, the answer \
         small; \"answer\": the other way. Peak RSS is the gateway's `VmHWM`, over its RSS \
         after a warm-up with small bodies.\n\n\
         | path | body | size | RSS before | peak RSS | peak over before | 8 bodies would be | p50 ms | ok | failed |\n\
         |---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    let mut series = Vec::new();
    for r in &rows {
        let over = r.hwm_kib.saturating_sub(r.base_kib) as f64 / 1024.0;
        let _ = writeln!(
            md,
            "| {} | {} | {} KiB | {:.1} MiB | {:.1} MiB | {over:.1} MiB | {:.1} MiB | {:.2} | {} | {} |",
            r.path,
            r.direction,
            r.kib,
            r.base_kib as f64 / 1024.0,
            r.hwm_kib as f64 / 1024.0,
            (8 * r.kib) as f64 / 1024.0,
            r.p50,
            r.ok,
            r.failed
        );
        let name = format!("{} {}", r.path, r.direction);
        if !series.iter().any(|s: &Series| s.name == name) {
            series.push(Series {
                name: name.clone(),
                points: Vec::new(),
            });
        }
        let s = series.iter_mut().find(|s| s.name == name).expect("series");
        s.points.push((r.kib as f64, over));
    }
    let a = ctx.plot(
        "bodies",
        "Gateway peak RSS over baseline, 8 bodies in flight",
        "body KiB",
        "MiB",
        &series,
    );
    let _ = writeln!(md, "\n![]({a})\n");
    for s in &series {
        let _ = writeln!(md, "- {}: {}", s.name, growth(&s.points));
    }
    md
}

/// `tools/list` through `authz`.
pub async fn lists(ctx: &Ctx) -> String {
    let key = "scale-benchmark-key-0123456789";
    let hash = tokio::process::Command::new("sh")
        .args(["-c", &format!("printf %s '{key}' | sha256sum")])
        .output()
        .await
        .expect("sha256sum");
    let hash = String::from_utf8_lossy(&hash.stdout)
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_owned();
    let mut rows = Vec::new();
    for &n in &ctx.args.tools {
        let backend = fake::start(
            1,
            fake::Shape {
                legacy: false,
                tools: n,
                answer_bytes: 16,
            },
        )
        .await;
        let tag = format!("lists-{n}");
        let dir = ctx.out.join("work").join(format!("{tag}-keys"));
        std::fs::create_dir_all(&dir).expect("keys dir");
        let keys = dir.join("keys.txt");
        std::fs::write(&keys, format!("{hash} bench tools\n")).expect("keys");
        let yaml = format!(
            "auth:\n  resource: http://127.0.0.1/mcp\n  api-keys: {{ file: {} }}\npools:\n  pods: {{ backends: [{}], era: modern }}\n\
             routes:\n  - path: /mcp\n    mode: stateless\n    pool: pods\n    authz:\n\
             \x20     - {{ match: {{ method: tools/call, name: \"admin_*\" }}, require: {{ scope: admin }} }}\n",
            keys.display(),
            backend.addrs[0]
        );
        let gw = gateway(ctx, &tag, &yaml, false).await;
        let calls = (ctx.args.calls * 10 / n.max(10)).clamp(50, ctx.args.calls);
        let mut timed = Vec::new();
        let mut sizes = Vec::new();
        for target in [backend.addrs[0], gw.addr] {
            let host = target.to_string();
            let req: Arc<dyn Fn(usize) -> Vec<u8> + Send + Sync> =
                Arc::new(move |i| raw::stateless_list(&host, i as u64, key));
            let _ = drive(target, 1, 10, req.clone()).await;
            // one answer's size
            let mut s = raw::connect(target, 0).await.expect("connect");
            let a = raw::exchange(&mut s, &req(0), true).await.expect("list");
            sizes.push(a.body_len);
            let base = gw.stats().rss_kib;
            let (mut ms, failed) = drive(target, 1, calls, req.clone()).await;
            let (p50, p99) = percentiles(&mut ms);
            timed.push((p50, p99, failed, base));
        }
        let hwm = gw.stats().hwm_kib;
        eprintln!(
            "  {tag}: direct p50 {:.3} ms, gateway p50 {:.3} ms, answer {} -> {} bytes, peak {hwm} KiB",
            timed[0].0, timed[1].0, sizes[0], sizes[1]
        );
        rows.push((n, timed, sizes, hwm, calls));
    }
    let mut md = String::from(
        "\n## tools/list through authz\n\nA 2026-07-28 `tools/list` of N tools (half named \
         `admin_*`, ~100 bytes each) from the synthetic backend, one `authz` rule denying \
         `admin_*` to a caller without the `admin` scope (an API key), so the gateway parses \
         the answer and removes half of the tools. One request at a time; \"direct\" is the \
         same request to the backend. Peak RSS is the gateway's `VmHWM`.\n\n\
         | tools | answer bytes from backend | to client | direct p50 ms | gateway p50 ms | gateway p99 ms | gateway minus direct, µs per tool | gateway RSS before | peak RSS | calls | failed |\n\
         |---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    let mut extra = Vec::new();
    let mut peak = Vec::new();
    for (n, t, sizes, hwm, calls) in &rows {
        let per_tool = (t[1].0 - t[0].0) * 1000.0 / *n as f64;
        let _ = writeln!(
            md,
            "| {n} | {} | {} | {:.3} | {:.3} | {:.3} | {per_tool:.3} | {:.1} MiB | {:.1} MiB | {calls} | {} |",
            sizes[0],
            sizes[1],
            t[0].0,
            t[1].0,
            t[1].1,
            t[1].3 as f64 / 1024.0,
            *hwm as f64 / 1024.0,
            t[1].2
        );
        extra.push((*n as f64, (t[1].0 - t[0].0).max(0.0) * 1000.0));
        peak.push((*n as f64, (*hwm as f64 - t[1].3 as f64).max(0.0) / 1024.0));
    }
    let a = ctx.plot(
        "lists-latency",
        "tools/list through authz: gateway p50 minus direct",
        "tools",
        "µs",
        &[Series {
            name: "added p50".into(),
            points: extra.clone(),
        }],
    );
    let b = ctx.plot(
        "lists-memory",
        "tools/list through authz: peak RSS over baseline",
        "tools",
        "MiB",
        &[Series {
            name: "peak over before".into(),
            points: peak.clone(),
        }],
    );
    let _ = writeln!(
        md,
        "\n![]({a}) ![]({b})\n\nAdded latency: {}. Peak RSS over baseline: {}.\n",
        growth(&extra),
        growth(&peak)
    );
    md
}
