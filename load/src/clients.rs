//! `mcp-load clients`: what a client costs (issue 52), for nginx (a plain reverse proxy,
//! `proxy_buffering off`, keep-alive upstream), the bare pingora floor (`bare-pingora`) and
//! mcp-gateway, in one run, each proxy alone on the last core with one worker (the suite's
//! `--pin`), the load generator and the backends on the others:
//!
//! - `idle`: memory per idle keep-alive connection: N clients each send one 2026-07-28
//!   `tools/call` (answered), then stay open and silent;
//! - `listen`: memory per held 2026-07-28 stream on a stateless route: N clients each POST
//!   `subscriptions/listen`, answered with an event stream of one event, then held open;
//! - `get`: memory per held legacy GET stream on a stateful route: N legacy sessions (opened
//!   through the proxy: nginx and bare pingora pass the backend's session ids through), then a
//!   standalone GET each, held (the backend never writes on it);
//! - `cpu`: CPU per request (the proxy's utime + stime over the requests it answered), closed
//!   loop for `--cpu-seconds`: a 2026-07-28 `tools/call` on a stateless route, and a
//!   `tools/call` in a legacy session on a stateful route (nginx and bare pingora forward the
//!   same bytes, session id header included).
//!
//! Memory is the proxy's RSS growth (`VmRSS` of /proc/PID/status, nginx's worker) from before
//! the N clients to `--settle` seconds after the last opened, over the clients held;
//! descriptors the growth of /proc/PID/fd over the same. The memory parts run against the
//! synthetic backend of `mcp-load scale` (in this process), the CPU part against the Rust mock
//! (`mock-mcp`), as `mcp-load suite --only overhead` does. Each measurement in fresh processes;
//! `--runs` rounds, the targets interleaved within a round; medians.

use crate::scale::{conns, fake, raw, Stats};
use crate::suite::pin;
use crate::suite::procs::{self, Backend, BackendKind, Programs, Proxy};
use clap::Args;
use serde::Serialize;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;

/// `mcp-load clients` options.
#[derive(Args, Debug, Clone)]
pub struct ClientsArgs {
    /// Output directory: clients.md (the table), clients-runs.md (every run), clients.json,
    /// work/clients/ (the proxies' configs and logs).
    #[arg(long, default_value = "bench/out")]
    out: PathBuf,
    /// Directory of mcp-gateway, bare-pingora and mock-mcp (default: next to mcp-load).
    #[arg(long)]
    bin_dir: Option<PathBuf>,
    /// The mcp-gateway binary to measure (default: mcp-gateway in the binary directory).
    #[arg(long)]
    gateway_bin: Option<PathBuf>,
    /// Clients (connections or streams) held per memory measurement.
    #[arg(long, default_value_t = 3000)]
    clients: usize,
    /// Rounds (medians are reported).
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Seconds of counted closed-loop load per CPU measurement (after 1 s of warm-up).
    #[arg(long, default_value_t = 5.0)]
    cpu_seconds: f64,
    /// Connections of the CPU part (one call in flight on each): enough to keep the pinned
    /// proxy busy.
    #[arg(long, default_value_t = 32)]
    concurrency: usize,
    /// Seconds between the last client opened and the reading of RSS and descriptors.
    #[arg(long, default_value_t = 2.0)]
    settle: f64,
    /// Parts to run: idle, listen, get, cpu.
    #[arg(long, default_value = "idle,listen,get,cpu", value_delimiter = ',')]
    only: Vec<String>,
    /// Run every process on every core (2 proxy threads) instead of pinning the proxy.
    #[arg(long)]
    shared: bool,
}

/// The proxies compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
enum Kind {
    Nginx,
    Bare,
    Gateway,
}

const KINDS: [Kind; 3] = [Kind::Nginx, Kind::Bare, Kind::Gateway];

impl Kind {
    fn label(self) -> &'static str {
        match self {
            Kind::Nginx => "nginx",
            Kind::Bare => "bare pingora",
            Kind::Gateway => "mcp-gateway",
        }
    }
}

/// What a memory measurement holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
enum Held {
    /// Idle keep-alive connections, each after one 2026-07-28 call.
    Idle,
    /// 2026-07-28 `subscriptions/listen` streams (stateless route).
    Listen,
    /// Legacy sessions' standalone GET streams (stateful route).
    Get,
}

impl Held {
    fn part(self) -> &'static str {
        match self {
            Held::Idle => "idle",
            Held::Listen => "listen",
            Held::Get => "get",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Held::Idle => "idle keep-alive connection (after one 2026-07-28 call)",
            Held::Listen => {
                "held 2026-07-28 stream (`subscriptions/listen`, one event, then open; stateless route)"
            }
            Held::Get => "held legacy GET stream (a session's, silent; stateful route)",
        }
    }

    fn short(self) -> &'static str {
        match self {
            Held::Idle => "idle keep-alive connection",
            Held::Listen => "held 2026-07-28 stream",
            Held::Get => "held legacy GET stream",
        }
    }
}

/// One memory measurement.
#[derive(Debug, Clone, Serialize)]
struct Mem {
    kind: Kind,
    held_what: Held,
    run: usize,
    asked: usize,
    held: usize,
    base_rss_kib: u64,
    loaded_rss_kib: u64,
    base_fds: u64,
    loaded_fds: u64,
}

impl Mem {
    fn bytes_per(&self) -> f64 {
        self.loaded_rss_kib.saturating_sub(self.base_rss_kib) as f64 * 1024.0
            / self.held.max(1) as f64
    }

    fn fds_per(&self) -> f64 {
        self.loaded_fds.saturating_sub(self.base_fds) as f64 / self.held.max(1) as f64
    }
}

/// One CPU measurement.
#[derive(Debug, Clone, Serialize)]
struct Cpu {
    kind: Kind,
    legacy: bool,
    run: usize,
    ok: u64,
    failed: u64,
    rps: f64,
    cpu_s: f64,
    /// CPU time over wall time: how busy the pinned proxy was (1.0 = its core).
    busy: f64,
    us_per_req: f64,
    /// CPU µs per answered call of the backend and of this process (the load generator): the
    /// other core's work, which sets the rate when the proxy is not busy.
    backend_us: f64,
    generator_us: f64,
}

struct Ctx {
    args: ClientsArgs,
    programs: Programs,
    bare: PathBuf,
    work: PathBuf,
}

/// Runs the benchmark; returns the exit code.
pub async fn main(mut args: ClientsArgs) -> i32 {
    std::fs::create_dir_all(&args.out).expect("output dir");
    args.out = std::fs::canonicalize(&args.out).expect("output dir");
    let programs = match Programs::find(
        std::path::Path::new("."),
        args.bin_dir.clone(),
        args.gateway_bin.clone(),
        None,
    ) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("mcp-load clients: {e}");
            return 1;
        }
    };
    let Some(bare) = programs.bare_pingora.clone() else {
        eprintln!(
            "mcp-load clients: bare-pingora missing: cargo build --release -p mcp-gateway-bench"
        );
        return 1;
    };
    let work = args.out.join("work").join("clients");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).expect("work dir");
    let ctx = Ctx {
        args: args.clone(),
        programs,
        bare,
        work,
    };
    let wants = |part: &str| args.only.iter().any(|o| o == part);
    for part in &args.only {
        if !["idle", "listen", "get", "cpu"].contains(&part.as_str()) {
            eprintln!("mcp-load clients: unknown part {part}");
            return 2;
        }
    }
    let started = std::time::Instant::now();
    let load_at_start = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    pin::pin(!args.shared);
    let mut mems: Vec<Mem> = Vec::new();
    let mut cpus: Vec<Cpu> = Vec::new();
    for run in 0..args.runs.max(1) {
        for held in [Held::Idle, Held::Listen, Held::Get] {
            if !wants(held.part()) {
                continue;
            }
            for kind in KINDS {
                let m = memory(&ctx, kind, held, run).await;
                eprintln!(
                    "  [{}/{}] {} via {}: {} of {} held, RSS {} -> {} KiB ({:.0} bytes each), \
                     fds {} -> {} ({:.2} each)",
                    run + 1,
                    args.runs,
                    held.part(),
                    kind.label(),
                    m.held,
                    m.asked,
                    m.base_rss_kib,
                    m.loaded_rss_kib,
                    m.bytes_per(),
                    m.base_fds,
                    m.loaded_fds,
                    m.fds_per()
                );
                mems.push(m);
            }
        }
        if wants("cpu") {
            for legacy in [false, true] {
                for kind in KINDS {
                    let c = cpu(&ctx, kind, legacy, run).await;
                    eprintln!(
                        "  [{}/{}] cpu {} via {}: {} ok ({} failed), {:.0} req/s, {:.1} µs/req, \
                         busy {:.0}% (backend {:.1}, generator {:.1} µs/req)",
                        run + 1,
                        args.runs,
                        if legacy { "legacy" } else { "2026-07-28" },
                        kind.label(),
                        c.ok,
                        c.failed,
                        c.rps,
                        c.us_per_req,
                        c.busy * 100.0,
                        c.backend_us,
                        c.generator_us
                    );
                    cpus.push(c);
                }
            }
        }
    }
    let pinned = pin::is_pinned();
    pin::pin(false);
    let elapsed = started.elapsed().as_secs_f64();
    let table = table(&args, &mems, &cpus, pinned);
    let runs = runs_md(&mems, &cpus, &load_at_start, elapsed);
    std::fs::write(args.out.join("clients.md"), &table).expect("write clients.md");
    std::fs::write(args.out.join("clients-runs.md"), &runs).expect("write clients-runs.md");
    let json = serde_json::json!({"clients": args.clients, "runs": args.runs, "pinned": pinned,
        "elapsed_s": elapsed, "memory": mems, "cpu": cpus});
    std::fs::write(
        args.out.join("clients.json"),
        serde_json::to_string_pretty(&json).expect("json"),
    )
    .expect("write clients.json");
    print!("{table}");
    eprintln!(
        "wrote {} ({elapsed:.0} s)",
        args.out.join("clients.md").display()
    );
    0
}

/// The proxy `kind` in front of `backend`: nginx sized for `connections`, bare pingora, or
/// mcp-gateway with the config `gateway_yaml`.
async fn proxy(
    ctx: &Ctx,
    kind: Kind,
    tag: &str,
    backend: SocketAddr,
    connections: usize,
    gateway_yaml: &str,
) -> Proxy {
    let dir = ctx.work.join(tag);
    std::fs::create_dir_all(&dir).expect("work dir");
    match kind {
        Kind::Nginx => Proxy::nginx_sized(&ctx.programs, &dir, &[backend], connections).await,
        Kind::Bare => Proxy::bare_pingora(&ctx.bare, backend).await,
        Kind::Gateway => Proxy::gateway_yaml(&ctx.programs.gateway, &dir, gateway_yaml).await,
    }
}

/// Idle clients opened at once (and warm-up connections): few, so that the upstream
/// connections their calls take are few and already pooled when the base is read.
const OPEN_AT: usize = 8;

/// The pid whose memory and descriptors count (nginx's worker, once forked).
async fn serving(px: &Proxy) -> u32 {
    for _ in 0..100 {
        if let Some(pid) = px.serving_pid() {
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the proxy has no serving process");
}

/// One 2026-07-28 call on a fresh connection; the connection if answered with a result.
async fn called(target: SocketAddr, k: usize) -> Option<TcpStream> {
    let req = raw::stateless_call(&target.to_string(), k as u64, 0);
    let mut s = raw::connect(target, k).await.ok()?;
    let a = raw::exchange(&mut s, &req, true).await.ok()?;
    (a.status == 200 && a.result).then_some(s)
}

/// A `subscriptions/listen` stream on a fresh connection, once its first event came.
async fn listening(target: SocketAddr, k: usize) -> Option<TcpStream> {
    let req = raw::stateless_listen(&target.to_string(), k as u64);
    let mut s = raw::connect(target, k).await.ok()?;
    let got = tokio::time::timeout(Duration::from_secs(10), raw::first_event(&mut s, &req));
    (got.await.ok()?.ok()? == 200).then_some(s)
}

/// A session's GET stream on a fresh connection, once its head came.
async fn getting(target: SocketAddr, k: usize, sid: &str) -> Option<TcpStream> {
    let req = raw::session_get(&target.to_string(), sid);
    let mut s = raw::connect(target, k).await.ok()?;
    let got = tokio::time::timeout(Duration::from_secs(10), raw::exchange(&mut s, &req, false));
    (got.await.ok()?.ok()?.status == 200).then_some(s)
}

/// Memory and descriptors of `kind` holding `ctx.args.clients` clients of `held`.
async fn memory(ctx: &Ctx, kind: Kind, held: Held, run: usize) -> Mem {
    let n = ctx.args.clients;
    let legacy = held == Held::Get;
    let backend = fake::start(
        1,
        fake::Shape {
            legacy,
            tools: 1,
            answer_bytes: 16,
        },
    )
    .await;
    let addr = backend.addrs[0];
    let yaml = if legacy {
        format!(
            "sessions:\n  max: 2000000\nlimits:\n  max-connections-per-client: 1000000\n\
             pools:\n  pods: {{ backends: [{addr}], era: legacy, max-idle-connections: 4096 }}\n\
             routes:\n  - {{ path: /mcp, mode: stateful, pool: pods }}\n"
        )
    } else {
        format!(
            "limits:\n  max-connections-per-client: 1000000\n\
             pools:\n  pods: {{ backends: [{addr}] }}\n\
             routes:\n  - {{ path: /mcp, mode: stateless, pool: pods }}\n"
        )
    };
    let tag = format!("{}-{}-{run}", held.part(), kind.label().replace(' ', "-"));
    // clients and upstream connections, with room
    let px = proxy(ctx, kind, &tag, addr, 2 * n + 1024, &yaml).await;
    let pid = serving(&px).await;
    let target = px.addr;
    // Warm-up on OPEN_AT connections at once (first-use allocations, and as many upstream
    // connections in the proxy's pool as opening the idle clients OPEN_AT at a time takes),
    // closed before the base is read.
    let mut warm = tokio::task::JoinSet::new();
    for k in 0..if legacy { 0 } else { OPEN_AT } {
        warm.spawn(async move {
            if let Some(mut s) = called(target, k).await {
                for i in 0..3u64 {
                    let req = raw::stateless_call(&target.to_string(), 100 + i, 0);
                    let _ = raw::exchange(&mut s, &req, true).await;
                }
            }
        });
    }
    while warm.join_next().await.is_some() {}
    let mut sids: Vec<String> = Vec::new();
    match held {
        Held::Idle => {}
        Held::Listen => {
            for k in 0..4 {
                drop(listening(target, k).await);
            }
        }
        Held::Get => {
            // N sessions for the streams, 4 more for the warm-up's streams (a held upstream
            // stream outlives its client's GET in the gateway)
            sids = conns::all_sessions(target, n + 4).await;
            for (k, sid) in sids.iter().rev().take(4).enumerate() {
                drop(getting(target, k, sid).await);
            }
            sids.truncate(sids.len().saturating_sub(4));
        }
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let base = Stats::of(pid);
    let clients = match held {
        Held::Idle => conns::open_many_at(n, OPEN_AT, move |k| called(target, k)).await,
        Held::Listen => conns::open_many_at(n, 64, move |k| listening(target, k)).await,
        Held::Get => {
            let sids = Arc::new(sids);
            let count = sids.len();
            conns::open_many_at(count, 64, move |k| {
                let sids = sids.clone();
                async move { getting(target, k, &sids[k]).await }
            })
            .await
        }
    };
    tokio::time::sleep(Duration::from_secs_f64(ctx.args.settle)).await;
    let loaded = Stats::of(pid);
    let m = Mem {
        kind,
        held_what: held,
        run,
        asked: n,
        held: clients.len(),
        base_rss_kib: base.rss_kib,
        loaded_rss_kib: loaded.rss_kib,
        base_fds: base.fds,
        loaded_fds: loaded.fds,
    };
    drop(clients);
    drop(px);
    drop(backend);
    // the proxy's sockets gone before the next one starts
    tokio::time::sleep(Duration::from_millis(300)).await;
    m
}

/// CPU per request of `kind` (a 2026-07-28 call on a stateless route, or with `legacy` a call
/// in a legacy session on a stateful one), closed loop against the Rust mock.
async fn cpu(ctx: &Ctx, kind: Kind, legacy: bool, run: usize) -> Cpu {
    let p = &ctx.programs;
    let backend_kind = if legacy {
        BackendKind::MockLegacy
    } else {
        BackendKind::MockStateless
    };
    let backend = Backend::start(p, backend_kind, "pod-0", 0).await;
    let dialect = if legacy { "legacy" } else { "stateless" };
    let tag = format!("cpu-{dialect}-{}-{run}", kind.label().replace(' ', "-"));
    let mode = if legacy { "stateful" } else { "stateless" };
    // the gateway as `mcp-load suite --only overhead` runs it
    let yaml = format!(
        "pools:\n  pods: {{ backends: [{}], failure-cooldown-ms: 1000 }}\n\
         routes:\n  - {{ path: /mcp, mode: {mode}, pool: pods }}\n",
        backend.addr
    );
    let px = proxy(ctx, kind, &tag, backend.addr, 4096, &yaml).await;
    let target = px.addr;
    let host = target.to_string();
    // the requests, built once: a legacy call names one of 20 sessions opened through the
    // proxy (nginx and bare pingora pass the backend's ids through)
    let requests: Vec<Vec<u8>> = if legacy {
        let sids = conns::all_sessions(target, 20).await;
        assert!(
            !sids.is_empty(),
            "no legacy session opened via {}",
            kind.label()
        );
        sids.iter()
            .map(|sid| raw::session_call(&host, sid, 1, 0))
            .collect()
    } else {
        vec![raw::stateless_call(&host, 1, 0)]
    };
    let requests = Arc::new(requests);
    let _ = closed_loop(target, &requests, ctx.args.concurrency, 1.0).await;
    let pid = px.pid().expect("the proxy runs");
    // the other core's processes (this one: the load generator), without their children
    let others = [backend.pid().unwrap_or(0), std::process::id()];
    let own_ticks = |p: u32| Stats::of(p).cpu_ticks as f64 / 100.0;
    let before = procs::cpu_seconds(pid).unwrap_or(0.0);
    let others_before = others.map(own_ticks);
    let result = closed_loop(
        target,
        &requests,
        ctx.args.concurrency,
        ctx.args.cpu_seconds,
    )
    .await;
    let after = procs::cpu_seconds(pid).unwrap_or(before);
    let others_after = others.map(own_ticks);
    let cpu_s = after - before;
    let per = |i: usize| (others_after[i] - others_before[i]) * 1e6 / result.ok.max(1) as f64;
    drop(px);
    drop(backend);
    Cpu {
        kind,
        legacy,
        run,
        ok: result.ok,
        failed: result.failed,
        rps: result.ok as f64 / result.seconds.max(1e-9),
        cpu_s,
        busy: cpu_s / result.seconds.max(1e-9),
        us_per_req: cpu_s * 1e6 / result.ok.max(1) as f64,
        backend_us: per(0),
        generator_us: per(1),
    }
}

/// What a closed loop did.
struct Looped {
    ok: u64,
    failed: u64,
    seconds: f64,
}

/// `concurrency` connections, each sending `requests[k % len]` and reading its answer, one at a
/// time, for `secs`: a lean generator (the requests built once, one buffer per connection, the
/// answer checked for a 200 and a `"result"` only), so that the other core's work per call
/// (generator and backend) stays below the pinned proxy's and the proxy is what is busy.
async fn closed_loop(
    target: SocketAddr,
    requests: &Arc<Vec<Vec<u8>>>,
    concurrency: usize,
    secs: f64,
) -> Looped {
    let started = tokio::time::Instant::now();
    let deadline = started + Duration::from_secs_f64(secs);
    let mut workers = tokio::task::JoinSet::new();
    for k in 0..concurrency {
        let requests = requests.clone();
        workers.spawn(async move {
            let req = &requests[k % requests.len()];
            let (mut ok, mut failed) = (0u64, 0u64);
            let Ok(mut s) = raw::connect(target, k).await else {
                return (0, 1);
            };
            let mut buf = vec![0u8; 64 * 1024];
            while tokio::time::Instant::now() < deadline {
                let answered =
                    tokio::time::timeout(Duration::from_secs(10), one_call(&mut s, req, &mut buf));
                match answered.await {
                    Ok(Ok(Some(true))) => ok += 1,
                    Ok(Ok(Some(false))) => failed += 1,
                    // closed before any byte of the answer: a kept-alive connection the proxy
                    // ended (nginx after `keepalive_requests`), sent again on a fresh one
                    Ok(Ok(None)) => match raw::connect(target, k).await {
                        Ok(fresh) => s = fresh,
                        Err(_) => break,
                    },
                    _ => {
                        failed += 1;
                        match raw::connect(target, k).await {
                            Ok(fresh) => s = fresh,
                            Err(_) => break,
                        }
                    }
                }
            }
            (ok, failed)
        });
    }
    let (mut ok, mut failed) = (0, 0);
    while let Some(r) = workers.join_next().await {
        if let Ok((o, f)) = r {
            ok += o;
            failed += f;
        }
    }
    Looped {
        ok,
        failed,
        seconds: started.elapsed().as_secs_f64(),
    }
}

/// Sends `req` on `s` and reads its whole answer into `buf` (`Content-Length` or chunked);
/// whether it was a 200 with a JSON-RPC result, `None` when the connection was closed before
/// the answer began.
async fn one_call(s: &mut TcpStream, req: &[u8], buf: &mut [u8]) -> std::io::Result<Option<bool>> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    if s.write_all(req).await.is_err() {
        return Ok(None);
    }
    let mut have = 0;
    let mut head_end = None;
    let mut length: Option<usize> = None;
    loop {
        if have == buf.len() {
            return Err(std::io::ErrorKind::InvalidData.into());
        }
        let n = match s.read(&mut buf[have..]).await {
            Ok(0) | Err(_) if have == 0 => return Ok(None),
            Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => n,
            Err(e) => return Err(e),
        };
        have += n;
        if head_end.is_none() {
            let Some(at) = fake::find(&buf[..have], b"\r\n\r\n") else {
                continue;
            };
            head_end = Some(at + 4);
            let head = String::from_utf8_lossy(&buf[..at]).to_ascii_lowercase();
            length = fake::header(&head, "content-length").and_then(|v| v.parse().ok());
        }
        let end = head_end.unwrap_or(0);
        let complete = match length {
            Some(len) => have >= end + len,
            None => buf[..have].ends_with(b"0\r\n\r\n"),
        };
        if complete {
            let status_ok = buf.starts_with(b"HTTP/1.1 200");
            return Ok(Some(
                status_ok && fake::find(&buf[end..have], b"\"result\"").is_some(),
            ));
        }
    }
}

fn median(mut v: Vec<f64>) -> Option<f64> {
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
fn table(args: &ClientsArgs, mems: &[Mem], cpus: &[Cpu], pinned: bool) -> String {
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
fn runs_md(mems: &[Mem], cpus: &[Cpu], load: &str, elapsed: f64) -> String {
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

#[cfg(test)]
mod fake_tests {
    use super::{fake, raw};
    use std::time::Duration;

    #[tokio::test]
    async fn the_fake_holds_a_listen_after_one_event_and_answers_calls_for_the_loop() {
        let f = fake::start(
            1,
            fake::Shape {
                legacy: false,
                tools: 1,
                answer_bytes: 16,
            },
        )
        .await;
        let target = f.addrs[0];
        let host = target.to_string();
        let mut s = raw::connect(target, 0).await.expect("connect");
        let status = raw::first_event(&mut s, &raw::stateless_listen(&host, 7))
            .await
            .expect("the first event");
        assert_eq!(status, 200);
        // held: nothing more comes, and the connection stays open
        let mut byte = [0u8; 1];
        let more = tokio::time::timeout(
            Duration::from_millis(300),
            tokio::io::AsyncReadExt::read(&mut s, &mut byte),
        );
        assert!(more.await.is_err(), "the stream stays open and silent");
        // the closed loop's reader: a whole answer, a result
        let mut c = raw::connect(target, 1).await.expect("connect");
        let mut buf = vec![0u8; 64 * 1024];
        let req = raw::stateless_call(&host, 1, 0);
        for _ in 0..3 {
            let got = super::one_call(&mut c, &req, &mut buf).await.expect("call");
            assert_eq!(got, Some(true));
        }
    }

    #[tokio::test]
    async fn the_legacy_fake_gives_each_session_its_own_id() {
        let f = fake::start(
            1,
            fake::Shape {
                legacy: true,
                tools: 1,
                answer_bytes: 16,
            },
        )
        .await;
        let sids = crate::scale::conns::all_sessions(f.addrs[0], 3).await;
        let mut unique = sids.clone();
        unique.sort();
        unique.dedup();
        assert_eq!((sids.len(), unique.len()), (3, 3), "{sids:?}");
    }
}
