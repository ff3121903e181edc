//! `mcp-load`: a dual-dialect MCP load generator (legacy sessions and 2026-07-28 stateless),
//! open loop by default, and the resilience benchmark suite built on it.
//!
//! `mcp-load run --target 127.0.0.1:8080 --dialect legacy --rate 200 --duration 60`
//! `mcp-load suite --out bench/out/resilience` (see `mcp-load suite --help`)
//! `mcp-load rollout --pods 3 --every 10` (legacy pods replaced by 2026-07-28 pods under load)
//! `mcp-load chaos --duration 600` (replicas, backends and Redis masters SIGKILLed under load)
//! `mcp-load scale --only sessions` (cost curves: see `mcp-load scale --help`)
//! `mcp-load clients` (what a client costs against nginx and bare pingora: `--help`)

mod chaos;
mod chart;
mod clients;
mod fleet;
mod http;
mod mcp;
mod rollout;
mod run;
mod scale;
mod soak;
mod suite;

use clap::{Args, Parser, Subcommand};
use mcp::Dialect;
use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Parser)]
#[command(
    name = "mcp-load",
    version,
    about = "Dual-dialect MCP load generator and resilience benchmark"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// One load run against one target; prints a summary, writes JSON and an SVG chart.
    Run(RunArgs),
    /// The resilience benchmark: scale-out, pod kills, overhead and memory, against mock and
    /// real backends; writes a Markdown report with charts.
    Suite(suite::SuiteArgs),
    /// Mixed legacy and stateless load while backends are SIGKILLed and the config reloads:
    /// failures vs calls in flight at the kills, RSS slope, file descriptors, sessions.
    Soak(soak::SoakArgs),
    /// A rolling upgrade: legacy (FastMCP 1.30.0) pods replaced one by one by modern-only
    /// (TypeScript SDK v2) pods under legacy and 2026-07-28 load: failures vs calls in flight
    /// per replacement, failures after the last, the eras the gateway shows.
    Rollout(rollout::RolloutArgs),
    /// Three gateway replicas on a Redis Cluster, legacy and 2026-07-28 backends, mock and
    /// real SDK clients; a random replica, backend or Redis master SIGKILLed every 20 s:
    /// failures vs calls in flight per kill, sessions lost, RSS and descriptors per replica.
    Chaos(chaos::ChaosArgs),
    /// Cost curves (issue 36): sessions, connections, held streams, bodies, list filtering,
    /// routing rules and backends per pool, each point in a fresh gateway; Markdown tables and
    /// SVG plots.
    Scale(scale::ScaleArgs),
    /// What a client costs (issue 52): memory and descriptors per idle connection, per held
    /// 2026-07-28 stream and per held legacy GET stream, and CPU per request, for nginx, bare
    /// pingora and mcp-gateway side by side, each pinned to one core.
    Clients(clients::ClientsArgs),
}

#[derive(Args)]
struct RunArgs {
    /// Target address (127.0.0.1:PORT).
    #[arg(long)]
    target: SocketAddr,
    /// MCP endpoint path.
    #[arg(long, default_value = "/mcp")]
    path: String,
    /// Protocol era the client speaks.
    #[arg(long, value_enum, default_value = "legacy")]
    dialect: Dialect,
    /// Offered requests per second (open loop); 0 = closed loop, as fast as answers come.
    #[arg(long, default_value_t = 200.0)]
    rate: f64,
    /// Seconds during which requests are started.
    #[arg(long, default_value_t = 60.0)]
    duration: f64,
    /// Most requests in flight at once.
    #[arg(long, default_value_t = 256)]
    concurrency: usize,
    /// Legacy dialect: sessions (virtual clients) the requests are spread over.
    #[arg(long, default_value_t = 20)]
    sessions: usize,
    /// Connection mode: `reuse` (keep-alive) or `new` (a connection per request).
    #[arg(long, default_value = "reuse", value_parser = ["reuse", "new"])]
    connections: String,
    /// The tool every call invokes; `tasks/get:ID` (stateless dialect): every request polls
    /// task ID instead; `tools/list` (stateless dialect): every request is a `tools/list`
    /// (the response cache's benchmark, `scripts/bench-cache`).
    #[arg(long, default_value = "whoami")]
    tool: String,
    /// Per-request timeout in milliseconds.
    #[arg(long, default_value_t = 10_000)]
    timeout_ms: u64,
    /// Write the JSON result here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write the SVG chart here.
    #[arg(long)]
    svg: Option<PathBuf>,
}

fn main() {
    let cli = Cli::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let code = runtime.block_on(async {
        match cli.command {
            Command::Run(args) => run_once(args).await,
            Command::Suite(args) => suite::main(args).await,
            Command::Soak(args) => soak::main(args).await,
            Command::Rollout(args) => rollout::main(args).await,
            Command::Chaos(args) => chaos::main(args).await,
            Command::Scale(args) => scale::main(args).await,
            Command::Clients(args) => clients::main(args).await,
        }
    });
    std::process::exit(code);
}

async fn run_once(args: RunArgs) -> i32 {
    let cfg = run::LoadConfig {
        target: args.target,
        path: args.path,
        dialect: args.dialect,
        rate: args.rate,
        duration: Duration::from_secs_f64(args.duration),
        concurrency: args.concurrency,
        sessions: args.sessions,
        reuse: args.connections == "reuse",
        tool: args.tool,
        timeout: Duration::from_millis(args.timeout_ms),
        progress: std::io::stderr().is_terminal(),
        bearer: None,
    };
    let result = run::run(cfg, Vec::new()).await;
    println!("{}", summary_line(&result));
    let json = serde_json::to_string_pretty(&result).expect("result serializes");
    if let Some(path) = args.json {
        if let Err(e) = std::fs::write(&path, json) {
            eprintln!("cannot write {}: {e}", path.display());
            return 1;
        }
    } else {
        println!("{json}");
    }
    if let Some(path) = args.svg {
        let title = format!(
            "{} {:?} {} rps",
            result.target, result.dialect, result.offered_rate
        );
        if let Err(e) = std::fs::write(&path, chart::svg(&title, &result)) {
            eprintln!("cannot write {}: {e}", path.display());
            return 1;
        }
    }
    0
}

/// One line: achieved rate, losses, errors, latency.
pub fn summary_line(r: &run::RunResult) -> String {
    format!(
        "{} {:?} {}: offered {} ({} rps), ok {} ({:.1} rps), failed {} (session losses {}), p50 {:.2} ms, p99 {:.2} ms",
        r.target,
        r.dialect,
        r.connections,
        r.offered,
        r.offered_rate,
        r.ok,
        r.achieved_rps,
        r.failed,
        r.session_losses,
        r.latency_ms.p50,
        r.latency_ms.p99
    )
}
