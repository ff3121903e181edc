//! The resilience benchmark: the Kubernetes study's scenarios reproduced on loopback, each cell
//! repeated and reported as median and range, written as Markdown tables with SVG charts.
//!
//! - M1 scale-out: 1, 2, 4 backends; legacy dialect via nginx round robin vs via mcp-gateway
//!   `stateful`; stateless dialect via mcp-gateway; new connection per call and reused ones.
//! - M3 pod kill: SIGKILL one of two backends at `--kill-at` of a `--m3-duration` run, and a
//!   variant that restarts it on the same port `--restart-after` seconds later.
//! - Real peers: the same with FastMCP 1.30.0 servers at a rate they sustain.
//! - Overhead: closed-loop throughput, CPU per request and open-loop latency, direct vs nginx
//!   vs bare pingora vs mcp-gateway (and a baseline mcp-gateway build, interleaved).
//! - Memory: gateway RSS with `--memory-sessions` idle sessions (and the baseline's).
//! - Store: memory vs Redis session store (req/s, re-initialization latency, Redis bytes per
//!   session).

mod auth;
mod cost;
mod overhead;
pub(crate) mod pin;
pub(crate) mod procs;
mod report;
mod resume;
mod setup;
mod store;

pub use setup::{Setup, Via};

use crate::chart;
use crate::run::{self, Event, LoadConfig, RunResult};
use clap::Args;
use procs::{Backend, BackendKind, Programs, Proxy};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// `mcp-load suite` options.
#[derive(Args, Debug, Clone)]
pub struct SuiteArgs {
    /// Output directory (results.md, results.json, charts/).
    #[arg(long, default_value = "bench/out/resilience")]
    out: PathBuf,
    /// Repository root (for tests/peers and .venv-mcp1).
    #[arg(long, default_value = ".")]
    root: PathBuf,
    /// Directory of mcp-gateway, mock-mcp and bare-pingora (default: next to mcp-load).
    #[arg(long)]
    bin_dir: Option<PathBuf>,
    /// The mcp-gateway binary to measure (default: mcp-gateway in the binary directory).
    #[arg(long)]
    gateway_bin: Option<PathBuf>,
    /// A second mcp-gateway binary (say, a build of the previous commit): overhead and memory
    /// run it interleaved with the first and show both side by side with their ratio.
    #[arg(long)]
    baseline_gateway_bin: Option<PathBuf>,
    /// Seconds per overhead run (closed loop and 1000 rps alike).
    #[arg(long, default_value_t = 5.0)]
    overhead_duration: f64,
    /// Overhead part: the measured proxy on the last CPU with one worker thread, the load
    /// generator and the backend on the others (else every process shares every core).
    #[arg(long)]
    pin: bool,
    /// Runs per cell (median and range are reported).
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Offered rate of M1 and M3 (the study's 200 rps).
    #[arg(long, default_value_t = 200.0)]
    rate: f64,
    /// Seconds per M1 run.
    #[arg(long, default_value_t = 10.0)]
    m1_duration: f64,
    /// Seconds per M3 run.
    #[arg(long, default_value_t = 60.0)]
    m3_duration: f64,
    /// When M3 kills a backend (s).
    #[arg(long, default_value_t = 20.0)]
    kill_at: f64,
    /// How long after the kill the restart variant brings it back (s).
    #[arg(long, default_value_t = 2.0)]
    restart_after: f64,
    /// Offered rate for the real FastMCP 1.30.0 cells.
    #[arg(long, default_value_t = 40.0)]
    real_rate: f64,
    /// Legacy dialect: sessions (virtual clients) per run.
    #[arg(long, default_value_t = 20)]
    sessions: usize,
    /// Sessions opened for the Redis memory measurement (store part).
    #[arg(long, default_value_t = 100_000)]
    store_sessions: usize,
    /// Idle sessions for the memory measurement.
    #[arg(long, default_value_t = 100_000)]
    memory_sessions: usize,
    /// Parts to run: any of m1, m3, real, overhead, memory, store (memory vs Redis session
    /// store; needs redis-server), resume (resumable streams on vs off), auth (JWT validation off
    /// vs RS256 vs ES256), cost (each feature on alone vs the default config; needs
    /// redis-server).
    #[arg(
        long,
        default_value = "m1,m3,real,overhead,memory",
        value_delimiter = ','
    )]
    only: Vec<String>,
}

/// One cell's shape.
#[derive(Debug, Clone)]
pub struct Cell {
    setup: Setup,
    backends: usize,
    reuse: bool,
    rate: f64,
    duration: f64,
    /// Kill backend 0 at this second; restart it this much later.
    kill: Option<(f64, Option<f64>)>,
    concurrency: usize,
}

struct Suite {
    args: SuiteArgs,
    programs: Programs,
    all: Mutex<Vec<serde_json::Value>>,
    /// The store part's Redis, once started.
    redis_url: std::sync::OnceLock<String>,
}

/// Runs the suite; returns the exit code.
pub async fn main(mut args: SuiteArgs) -> i32 {
    // nginx resolves relative paths against its prefix: everything absolute.
    let _ = std::fs::remove_dir_all(&args.out);
    std::fs::create_dir_all(args.out.join("charts")).expect("output dir");
    args.out = std::fs::canonicalize(&args.out).expect("output dir");
    let programs = match Programs::find(
        &args.root,
        args.bin_dir.clone(),
        args.gateway_bin.clone(),
        args.baseline_gateway_bin.clone(),
    ) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("mcp-load suite: {e}");
            return 1;
        }
    };
    let wants = |part: &str| args.only.iter().any(|o| o == part);
    if wants("real") && !programs.python1.exists() {
        eprintln!(
            "mcp-load suite: {} missing: run scripts/setup-peers",
            programs.python1.display()
        );
        return 1;
    }
    let suite = Suite {
        args: args.clone(),
        programs,
        all: Mutex::new(Vec::new()),
        redis_url: std::sync::OnceLock::new(),
    };
    let mut md = report::header(&args);
    if wants("m1") {
        md.push_str(&suite.m1().await);
    }
    if wants("m3") {
        md.push_str(&suite.m3().await);
    }
    if wants("real") {
        md.push_str(&suite.real().await);
    }
    if wants("overhead") {
        md.push_str(&suite.overhead().await);
    }
    if wants("auth") {
        md.push_str(&suite.auth().await);
    }
    if wants("cost") {
        md.push_str(&suite.cost().await);
    }
    if wants("memory") {
        md.push_str(&suite.memory().await);
    }
    if wants("store") {
        md.push_str(&suite.store().await);
    }
    if wants("resume") {
        md.push_str(&suite.resume().await);
    }
    let json = serde_json::Value::Array(suite.all.lock().expect("all").clone());
    std::fs::write(
        args.out.join("results.json"),
        serde_json::to_string_pretty(&json).expect("json"),
    )
    .expect("write results.json");
    std::fs::write(args.out.join("results.md"), &md).expect("write results.md");
    println!("{md}");
    eprintln!("wrote {}", args.out.join("results.md").display());
    0
}

impl Suite {
    /// Runs a cell `runs` times; the runs and their charts are kept.
    async fn repeat(&self, tag: &str, cell: &Cell, runs: usize) -> Vec<RunResult> {
        let mut results = Vec::new();
        for i in 0..runs {
            let r = self.run_cell(cell, &format!("{tag}-{i}")).await;
            eprintln!("  {tag} run {}/{runs}: {}", i + 1, crate::summary_line(&r));
            self.all
                .lock()
                .expect("all")
                .push(serde_json::json!({"cell": tag, "run": i, "result": r}));
            results.push(r);
        }
        results
    }

    /// Starts the backends and the proxy, runs the load (with the kill), stops everything.
    async fn run_cell(&self, cell: &Cell, tag: &str) -> RunResult {
        self.run_cell_cpu(cell, tag).await.0
    }

    /// [`Self::run_cell`], also returning the CPU time per successful request (µs) of the
    /// proxy, or of the (first) backend when there is none.
    async fn run_cell_cpu(&self, cell: &Cell, tag: &str) -> (RunResult, Option<f64>) {
        let p = &self.programs;
        let mut backends = Vec::new();
        for i in 0..cell.backends {
            backends.push(Backend::start(p, cell.setup.backend, &format!("pod-{i}"), 0).await);
        }
        let addrs: Vec<SocketAddr> = backends.iter().map(|b| b.addr).collect();
        let dir = self.args.out.join("work").join(tag);
        let gateway = self.gateway_bin(cell.setup);
        let proxy = match cell.setup.via {
            Via::Direct => None,
            Via::Nginx => Some(Proxy::nginx(p, &dir, &addrs).await),
            Via::L4Random => Some(Proxy::l4_random(p, &dir, &addrs).await),
            Via::BarePingora => {
                let bin = p.bare_pingora.as_ref().expect("bare-pingora checked");
                Some(Proxy::bare_pingora(bin, addrs[0]).await)
            }
            Via::GatewayStateful => {
                Some(Proxy::gateway(gateway, &dir, "stateful", &addrs, "").await)
            }
            Via::GatewayStateless => {
                Some(Proxy::gateway(gateway, &dir, "stateless", &addrs, "").await)
            }
            Via::GatewayStatefulRedis => {
                let url = self.redis_url.get().expect("the store part started Redis");
                let extra = store::redis_sessions(url, tag);
                Some(Proxy::gateway(gateway, &dir, "stateful", &addrs, &extra).await)
            }
        };
        let target = proxy.as_ref().map_or(addrs[0], |px| px.addr);
        let measured = proxy.as_ref().map_or(backends[0].pid(), Proxy::pid);
        let backends = Arc::new(Mutex::new(backends));
        let restarted = Arc::new(Mutex::new(None));
        let mut events = Vec::new();
        if let Some((at, restart)) = cell.kill {
            let pods = backends.clone();
            events.push(Event {
                at: Duration::from_secs_f64(at),
                label: "SIGKILL pod-0".into(),
                action: Box::new(move || Box::pin(pods.lock().expect("pods")[0].kill())),
            });
            if let Some(after) = restart {
                let spec = backends.lock().expect("pods")[0].restart_spec();
                let (programs, slot) = (p.clone(), restarted.clone());
                events.push(Event {
                    at: Duration::from_secs_f64(at + after),
                    label: "restart pod-0".into(),
                    action: Box::new(move || {
                        *slot.lock().expect("restart") =
                            Some(procs::restart_later(programs, spec, Duration::ZERO));
                        Box::pin(async {})
                    }),
                });
            }
        }
        let cfg = LoadConfig {
            target,
            path: "/mcp".into(),
            dialect: cell.setup.dialect,
            rate: cell.rate,
            duration: Duration::from_secs_f64(cell.duration),
            concurrency: cell.concurrency,
            sessions: self.args.sessions,
            reuse: cell.reuse,
            tool: "whoami".into(),
            timeout: Duration::from_secs(10),
            progress: false,
            bearer: None,
        };
        let cpu_before = measured.and_then(procs::cpu_seconds);
        let result = run::run(cfg, events).await;
        let cpu = match (cpu_before, measured.and_then(procs::cpu_seconds)) {
            (Some(a), Some(b)) if result.ok > 0 => Some((b - a) * 1e6 / result.ok as f64),
            _ => None,
        };
        drop(proxy);
        let handle = restarted.lock().expect("restart").take();
        if let Some(h) = handle {
            drop(h.await);
        }
        drop(backends);
        (result, cpu)
    }

    /// The mcp-gateway binary of a setup.
    fn gateway_bin(&self, setup: Setup) -> &std::path::Path {
        let p = &self.programs;
        match (&p.baseline_gateway, setup.baseline) {
            (Some(baseline), true) => baseline,
            _ => &p.gateway,
        }
    }

    /// The legacy paths to compare: the naive proxies, then mcp-gateway.
    fn legacy_setups(&self) -> Vec<Setup> {
        let mut setups = vec![Setup::NGINX_LEGACY];
        if self.programs.stream_module.is_some() {
            setups.push(Setup::L4_LEGACY);
        }
        setups.push(Setup::GATEWAY_LEGACY);
        setups
    }

    fn chart(&self, name: &str, title: &str, run: &RunResult) -> String {
        let file = format!("charts/{name}.svg");
        std::fs::write(self.args.out.join(&file), chart::svg(title, run)).expect("write chart");
        file
    }

    async fn m1(&self) -> String {
        let mut rows = Vec::new();
        for backends in [1, 2, 4] {
            let mut setups = self.legacy_setups();
            setups.push(Setup::GATEWAY_STATELESS);
            for setup in setups {
                for reuse in [false, true] {
                    let cell = Cell {
                        setup,
                        backends,
                        reuse,
                        rate: self.args.rate,
                        duration: self.args.m1_duration,
                        kill: None,
                        concurrency: 256,
                    };
                    let conn = if reuse { "reuse" } else { "new" };
                    let tag = format!("m1-{backends}-{}-{conn}", setup.slug());
                    let runs = self.repeat(&tag, &cell, self.args.runs).await;
                    let chart = (backends == 4).then(|| {
                        self.chart(
                            &tag,
                            &format!("M1, 4 backends: {}", setup.label()),
                            &runs[0],
                        )
                    });
                    rows.push(report::M1Row { cell, runs, chart });
                }
            }
        }
        report::m1(&rows, self.args.rate)
    }

    async fn m3(&self) -> String {
        let mut rows = Vec::new();
        let mut setups = self.legacy_setups();
        setups.push(Setup::GATEWAY_STATELESS);
        for restart in [None, Some(self.args.restart_after)] {
            for setup in setups.iter().copied() {
                rows.push(self.m3_cell(setup, self.args.rate, restart, "m3").await);
            }
        }
        report::m3("M3 pod kill (Rust mock backends)", &rows, &self.args)
    }

    async fn m3_cell(
        &self,
        setup: Setup,
        rate: f64,
        restart: Option<f64>,
        prefix: &str,
    ) -> report::M3Row {
        let cell = Cell {
            setup,
            backends: 2,
            reuse: true,
            rate,
            duration: self.args.m3_duration,
            kill: Some((self.args.kill_at, restart)),
            concurrency: 256,
        };
        let variant = if restart.is_some() {
            "kill+restart"
        } else {
            "kill"
        };
        let tag = format!("{prefix}-{}-{variant}", setup.slug());
        let runs = self.repeat(&tag, &cell, self.args.runs).await;
        let title = format!("{}: {} ({variant})", prefix.to_uppercase(), setup.label());
        let chart = Some(self.chart(&tag, &title, report::median_run(&runs)));
        report::M3Row {
            cell,
            runs,
            chart,
            variant,
        }
    }

    async fn real(&self) -> String {
        let rate = self.args.real_rate;
        let mut m1_rows = Vec::new();
        for setup in self.legacy_setups() {
            let cell = Cell {
                setup: setup.with_backend(BackendKind::FastMcp1),
                backends: 2,
                // Kept-alive connections, as with the mocks: the ~40 ms per call once seen
                // here was Nagle on the peers' sockets (see procs::NODELAY_PRELUDE).
                reuse: true,
                rate,
                duration: self.args.m1_duration,
                kill: None,
                concurrency: 64,
            };
            let tag = format!("real-m1-{}", setup.slug());
            let runs = self.repeat(&tag, &cell, self.args.runs).await;
            m1_rows.push(report::M1Row {
                cell,
                runs,
                chart: None,
            });
        }
        let mut m3_rows = Vec::new();
        for setup in self.legacy_setups() {
            let setup = setup.with_backend(BackendKind::FastMcp1);
            m3_rows.push(self.m3_cell(setup, rate, None, "real-m3").await);
        }
        let mut md = String::from("## Real peers: FastMCP 1.30.0 backends\n\n");
        md.push_str(
            &report::m1(&m1_rows, rate)
                .replace("## M1 scale-out", "### M1 with 2 FastMCP 1.30.0 backends"),
        );
        md.push_str(
            &report::m3(
                "M3 pod kill with FastMCP 1.30.0 backends",
                &m3_rows,
                &self.args,
            )
            .replace("## ", "### "),
        );
        md
    }
}
