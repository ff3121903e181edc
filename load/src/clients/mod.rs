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

mod cpu;
mod memory;
mod report;

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
                let m = memory::memory(&ctx, kind, held, run).await;
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
                    let c = cpu::cpu(&ctx, kind, legacy, run).await;
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
    let table = report::table(&args, &mems, &cpus, pinned);
    let runs = report::runs_md(&mems, &cpus, &load_at_start, elapsed);
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
            let got = super::cpu::one_call(&mut c, &req, &mut buf)
                .await
                .expect("call");
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
