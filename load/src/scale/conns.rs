//! Connections: idle kept-alive client connections (each sent one 2026-07-28 call, then
//! nothing), and held GET streams (legacy sessions' standalone streams, the gateway holding
//! each upstream). Per point: the gateway's RSS, descriptors, and its threads' context
//! switches (wake-ups) and CPU over `--idle-seconds` of idleness.

use super::{fake, gateway, growth, mock, plot::Series, raw, Ctx, Proc, Stats};
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::sync::Semaphore;

struct Row {
    n: usize,
    held: usize,
    base: Stats,
    loaded: Stats,
    wakeups: f64,
    cpu_pct: f64,
    base_wakeups: f64,
}

/// Wake-ups per second and CPU % of `gw` over `secs` of idleness.
async fn idle_rate(gw: &Proc, secs: f64) -> (f64, f64) {
    let a = gw.stats();
    tokio::time::sleep(Duration::from_secs_f64(secs)).await;
    let b = gw.stats();
    (
        (b.switches - a.switches) as f64 / secs,
        (b.cpu_ticks - a.cpu_ticks) as f64 / secs, // ticks are 1/100 s: percent of a core
    )
}

/// Opens connections with `open` (k: index) 200 at a time; keeps those that succeed.
pub(crate) async fn open_many<F, Fut>(n: usize, open: F) -> Vec<TcpStream>
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Option<TcpStream>> + Send + 'static,
{
    open_many_at(n, 200, open).await
}

/// [`open_many`], `at` at a time.
pub(crate) async fn open_many_at<F, Fut>(n: usize, at: usize, open: F) -> Vec<TcpStream>
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Option<TcpStream>> + Send + 'static,
{
    let open = Arc::new(open);
    let gate = Arc::new(Semaphore::new(at.max(1)));
    let mut tasks = tokio::task::JoinSet::new();
    for k in 0..n {
        let (open, gate) = (open.clone(), gate.clone());
        tasks.spawn(async move {
            let _permit = gate.acquire().await.expect("gate");
            open(k).await
        });
    }
    let mut held = Vec::with_capacity(n);
    while let Some(r) = tasks.join_next().await {
        if let Ok(Some(s)) = r {
            held.push(s);
        }
    }
    held
}

fn table(md: &mut String, what: &str, rows: &[Row]) {
    let _ = writeln!(
        md,
        "| {what} | held | gateway RSS | RSS per {what} | descriptors | wake-ups/s idle | CPU idle (% of a core) |\n|---:|---:|---:|---:|---:|---:|---:|"
    );
    for r in rows {
        let per =
            r.loaded.rss_kib.saturating_sub(r.base.rss_kib) as f64 * 1024.0 / r.held.max(1) as f64;
        let _ = writeln!(
            md,
            "| {} | {} | {:.1} MiB | {:.0} bytes | {} | {:.1} | {:.2} |",
            r.n,
            r.held,
            r.loaded.rss_kib as f64 / 1024.0,
            per,
            r.loaded.fds,
            r.wakeups,
            r.cpu_pct
        );
    }
    if let Some(r) = rows.first() {
        let _ = writeln!(
            md,
            "\nBefore the connections: {:.1} MiB RSS, {} descriptors, {:.1} wake-ups/s.",
            r.base.rss_kib as f64 / 1024.0,
            r.base.fds,
            r.base_wakeups
        );
    }
}

fn plots(ctx: &Ctx, md: &mut String, name: &str, what: &str, rows: &[Row]) {
    let per: Vec<(f64, f64)> = rows
        .iter()
        .map(|r| {
            let b = r.loaded.rss_kib.saturating_sub(r.base.rss_kib) as f64 * 1024.0;
            (r.held as f64, b / r.held.max(1) as f64)
        })
        .collect();
    let rss: Vec<(f64, f64)> = rows
        .iter()
        .map(|r| (r.held as f64, r.loaded.rss_kib as f64 / 1024.0))
        .collect();
    let wake: Vec<(f64, f64)> = rows.iter().map(|r| (r.held as f64, r.wakeups)).collect();
    let fds: Vec<(f64, f64)> = rows
        .iter()
        .map(|r| (r.held as f64, r.loaded.fds as f64 / r.held.max(1) as f64))
        .collect();
    let a = ctx.plot(
        &format!("{name}-memory"),
        &format!("Gateway RSS with {what}s held"),
        what,
        "MiB",
        &[Series {
            name: "RSS".into(),
            points: rss.clone(),
        }],
    );
    let b = ctx.plot(
        &format!("{name}-wakeups"),
        &format!("Gateway wake-ups per second, {what}s idle"),
        what,
        "context switches / s",
        &[Series {
            name: "wake-ups/s".into(),
            points: wake.clone(),
        }],
    );
    let _ = writeln!(
        md,
        "\n![]({a}) ![]({b})\n\nRSS: {}; RSS per {what}: {}; descriptors per {what}: {}; \
         wake-ups/s: {}.\n",
        growth(&rss),
        growth(&per),
        growth(&fds),
        growth(&wake)
    );
}

/// Idle client connections.
pub async fn idle(ctx: &Ctx) -> String {
    let mut rows = Vec::new();
    // (the x of the plots is what was held: a process's descriptor limit may stop short)
    for &n in &ctx.args.idle {
        let backend = mock(ctx, false).await;
        let yaml = format!(
            "limits:\n  max-connections-per-client: 1000000\npools:\n  pods: {{ backends: [{}] }}\n\
             routes:\n  - {{ path: /mcp, mode: stateless, pool: pods }}\n",
            backend.addr
        );
        let gw = gateway(ctx, &format!("idle-{n}"), &yaml, false).await;
        tokio::time::sleep(Duration::from_secs(1)).await;
        let (base_wakeups, _) = idle_rate(&gw, 5.0).await;
        let base = gw.stats();
        let target = gw.addr;
        let host = target.to_string();
        let held = open_many(n, move |k| {
            let req = raw::stateless_call(&host, k as u64, 0);
            async move {
                let mut s = raw::connect(target, k).await.ok()?;
                let a = raw::exchange(&mut s, &req, true).await.ok()?;
                (a.status == 200 && a.result).then_some(s)
            }
        })
        .await;
        tokio::time::sleep(Duration::from_secs(2)).await;
        let loaded = gw.stats();
        let (wakeups, cpu_pct) = idle_rate(&gw, ctx.args.idle_seconds).await;
        eprintln!(
            "  idle {n}: {} held, RSS {} -> {} KiB, fds {}, {wakeups:.1} wake-ups/s",
            held.len(),
            base.rss_kib,
            loaded.rss_kib,
            loaded.fds
        );
        rows.push(Row {
            n,
            held: held.len(),
            base,
            loaded,
            wakeups,
            cpu_pct,
            base_wakeups,
        });
        drop(held);
        drop(gw);
    }
    let mut md = String::from(
        "\n## Idle client connections\n\nEach connection sent one 2026-07-28 `tools/call` \
         (answered), then stays open and silent; the gateway's RSS and descriptors with all \
         of them open, its context switches and CPU over the idle window after.\n\n",
    );
    table(&mut md, "connection", &rows);
    plots(ctx, &mut md, "idle", "connection", &rows);
    md
}

/// Held GET streams.
pub async fn streams(ctx: &Ctx) -> String {
    let mut rows = Vec::new();
    for &n in &ctx.args.streams {
        // upstream: at most ~17k streams per backend port (the ephemeral range is per
        // destination)
        let pods = n.div_ceil(17_000).max(1);
        // the synthetic backend: its streams stay silent (the mock beats every 100 ms)
        let backends = fake::start(
            pods,
            fake::Shape {
                legacy: true,
                tools: 1,
                answer_bytes: 16,
            },
        )
        .await;
        let list: Vec<String> = backends.addrs.iter().map(ToString::to_string).collect();
        let yaml = format!(
            "sessions:\n  max: 2000000\nlimits:\n  max-connections-per-client: 1000000\n\
             pools:\n  pods: {{ backends: [{}], era: legacy, max-idle-connections: 4096 }}\n\
             routes:\n  - {{ path: /mcp, mode: stateful, pool: pods }}\n",
            list.join(", ")
        );
        let gw = gateway(ctx, &format!("streams-{n}"), &yaml, false).await;
        let sids = all_sessions(gw.addr, n).await;
        tokio::time::sleep(Duration::from_secs(1)).await;
        let (base_wakeups, _) = idle_rate(&gw, 5.0).await;
        let base = gw.stats();
        let target = gw.addr;
        let host = target.to_string();
        let sids = Arc::new(sids);
        let held = open_many(sids.len(), move |k| {
            let req = raw::session_get(&host, &sids[k]);
            async move {
                let mut s = raw::connect(target, k).await.ok()?;
                let a = raw::exchange(&mut s, &req, false).await.ok()?;
                (a.status == 200).then_some(s)
            }
        })
        .await;
        tokio::time::sleep(Duration::from_secs(2)).await;
        let loaded = gw.stats();
        let (wakeups, cpu_pct) = idle_rate(&gw, ctx.args.idle_seconds).await;
        eprintln!(
            "  streams {n}: {} held, RSS {} -> {} KiB, fds {} -> {}, {wakeups:.1} wake-ups/s",
            held.len(),
            base.rss_kib,
            loaded.rss_kib,
            base.fds,
            loaded.fds
        );
        rows.push(Row {
            n,
            held: held.len(),
            base,
            loaded,
            wakeups,
            cpu_pct,
            base_wakeups,
        });
        drop(held);
        drop(gw);
        drop(backends);
    }
    let mut md = String::from(
        "\n## Held GET streams\n\nN legacy sessions opened, then one standalone GET stream per \
         session, held open and never written to by the backend (the synthetic one) (the gateway holds each \
         upstream stream, `sessions.hold-streams` on); \"RSS per stream\" is over the RSS with \
         the sessions alone. The gateway writes an SSE keep-alive comment on each idle client \
         stream every 15 s (`sessions.resume.keep-alive-s`), inside the idle window.\n\n",
    );
    table(&mut md, "stream", &rows);
    plots(ctx, &mut md, "streams", "stream", &rows);
    md
}

/// Opens `n` sessions and returns every id (the sample of [`sessions::open`] keeps 1,000).
pub(crate) async fn all_sessions(target: SocketAddr, n: usize) -> Vec<String> {
    let client = Arc::new(crate::http::Client::new(
        target,
        true,
        Duration::from_secs(30),
    ));
    let wire = Arc::new(crate::mcp::Wire {
        path: "/mcp".into(),
        host: target.to_string(),
        close: false,
        tool: "whoami".into(),
        bearer: None,
    });
    let gate = Arc::new(Semaphore::new(64));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..n {
        let (client, wire, gate) = (client.clone(), wire.clone(), gate.clone());
        tasks.spawn(async move {
            let _permit = gate.acquire().await.expect("gate");
            let resp = client.send(&wire.initialize(1)).await.ok()?;
            let sid = resp.session_id?;
            client.send(&wire.initialized(&sid)).await.ok()?;
            Some(sid)
        });
    }
    let mut sids = Vec::with_capacity(n);
    while let Some(r) = tasks.join_next().await {
        if let Ok(Some(s)) = r {
            sids.push(s);
        }
    }
    sids
}
