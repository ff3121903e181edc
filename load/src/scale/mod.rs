//! `mcp-load scale`: how the gateway's costs grow (issue 36), each curve measured point by point
//! on this machine, each point in a fresh gateway: a Markdown table and an SVG plot per curve.
//!
//! - `sessions`: 1k to 1M live sessions in the memory store (RSS per session, a call's latency)
//! - `redis`: the same in Redis (Redis bytes per session, latency)
//! - `idle`: 100 to 20,000 idle client connections (RSS, descriptors, wake-ups per second)
//! - `streams`: 1,000 to 50,000 held GET streams (the same)
//! - `bodies`: 1 KiB to 4 MiB request and answer bodies on both paths (peak RSS)
//! - `lists`: `tools/list` of 10 to 10,000 tools through `authz` rules (latency, peak RSS)
//! - `rules`: 1 to 1,000 routing rules on a route (instructions per request, callgrind)
//! - `backends`: 3 to 10,000 backends in a pool, each balancing mode (instructions per
//!   request, callgrind; RSS)

pub(crate) mod conns;
mod cost;
pub(crate) mod fake;
mod plot;
pub(crate) mod raw;
mod sessions;
mod traffic;

use clap::Args;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::process::{Child, Command};

/// `mcp-load scale` options.
#[derive(Args, Debug, Clone)]
pub struct ScaleArgs {
    /// Output directory (results.md, results.json, scale-*.svg).
    #[arg(long, default_value = "bench/out/scale")]
    out: PathBuf,
    /// Directory of mcp-gateway and mock-mcp (default: next to mcp-load).
    #[arg(long)]
    bin_dir: Option<PathBuf>,
    /// Also copy the plots here (docs/img).
    #[arg(long)]
    img: Option<PathBuf>,
    /// Curves to run: sessions, redis, idle, streams, bodies, lists, rules, backends.
    #[arg(
        long,
        default_value = "sessions,redis,idle,streams,bodies,lists,rules,backends",
        value_delimiter = ','
    )]
    only: Vec<String>,
    /// Session counts of the `sessions` and `redis` curves.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "1000,10000,100000,1000000"
    )]
    sessions: Vec<usize>,
    /// Idle connection counts.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "100,1000,5000,10000,20000"
    )]
    idle: Vec<usize>,
    /// Held GET stream counts.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "1000,5000,10000,20000,50000"
    )]
    streams: Vec<usize>,
    /// Body sizes in KiB.
    #[arg(long, value_delimiter = ',', default_value = "1,16,256,1024,4095")]
    bodies_kib: Vec<usize>,
    /// Tool counts of `tools/list`.
    #[arg(long, value_delimiter = ',', default_value = "10,100,1000,10000")]
    tools: Vec<usize>,
    /// Routing rule counts.
    #[arg(long, value_delimiter = ',', default_value = "1,10,100,1000")]
    rules: Vec<usize>,
    /// Pool sizes.
    #[arg(long, value_delimiter = ',', default_value = "3,100,1000,10000")]
    backends: Vec<usize>,
    /// Seconds of counted load per callgrind point.
    #[arg(long, default_value_t = 8.0)]
    count_seconds: f64,
    /// Timed calls per latency point.
    #[arg(long, default_value_t = 2000)]
    calls: usize,
    /// Seconds over which idle wake-ups are counted.
    #[arg(long, default_value_t = 15.0)]
    idle_seconds: f64,
    /// The mcp-gateway binary (default: in the binary directory).
    #[arg(long)]
    gateway_bin: Option<PathBuf>,
}

/// Where things are.
pub struct Ctx {
    args: ScaleArgs,
    gateway: PathBuf,
    mock: PathBuf,
    out: PathBuf,
}

/// Runs the curves; returns the exit code.
pub async fn main(mut args: ScaleArgs) -> i32 {
    std::fs::create_dir_all(&args.out).expect("output dir");
    args.out = std::fs::canonicalize(&args.out).expect("output dir");
    let bin = match &args.bin_dir {
        Some(d) => d.clone(),
        None => std::env::current_exe()
            .expect("own path")
            .parent()
            .expect("binary dir")
            .to_path_buf(),
    };
    let ctx = Ctx {
        gateway: args
            .gateway_bin
            .clone()
            .unwrap_or_else(|| bin.join("mcp-gateway")),
        mock: bin.join("mock-mcp"),
        out: args.out.clone(),
        args: args.clone(),
    };
    for p in [&ctx.gateway, &ctx.mock] {
        if !p.exists() {
            eprintln!("mcp-load scale: {} missing", p.display());
            return 1;
        }
    }
    let mut md = format!("# Cost curves\n\n{}\n", machine_line(&ctx.gateway));
    for curve in &args.only {
        eprintln!("== {curve}");
        let part = match curve.as_str() {
            "sessions" => sessions::memory(&ctx).await,
            "redis" => sessions::redis(&ctx).await,
            "idle" => conns::idle(&ctx).await,
            "streams" => conns::streams(&ctx).await,
            "bodies" => traffic::bodies(&ctx).await,
            "lists" => traffic::lists(&ctx).await,
            "rules" => cost::rules(&ctx).await,
            "backends" => cost::backends(&ctx).await,
            other => {
                eprintln!("mcp-load scale: unknown curve {other}");
                return 2;
            }
        };
        std::fs::write(ctx.out.join(format!("{curve}.md")), &part).expect("write part");
        md.push_str(&part);
    }
    std::fs::write(ctx.out.join("results.md"), &md).expect("write results.md");
    println!("{md}");
    0
}

fn machine_line(gateway: &Path) -> String {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let modified = std::fs::metadata(gateway)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs());
    format!(
        "Machine: {cpus} CPUs (shared), load average at start {}; gateway {} (modified {modified}, \
         unix time).",
        load.split_whitespace().take(3).collect::<Vec<_>>().join(" "),
        gateway.display()
    )
}

impl Ctx {
    /// A work directory for one point.
    fn dir(&self, tag: &str) -> PathBuf {
        let d = self.out.join("work").join(tag);
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("work dir");
        d
    }

    /// Writes a plot as `scale-NAME.svg` (and into `--img`); returns its file name.
    fn plot(&self, name: &str, title: &str, x: &str, y: &str, series: &[plot::Series]) -> String {
        let file = format!("scale-{name}.svg");
        let svg = plot::svg(title, x, y, series);
        std::fs::write(self.out.join(&file), &svg).expect("write plot");
        if let Some(img) = &self.args.img {
            std::fs::create_dir_all(img).expect("img dir");
            std::fs::write(img.join(&file), &svg).expect("write plot");
        }
        file
    }
}

/// A process of a point, killed on drop.
pub struct Proc {
    /// Where it listens.
    pub addr: SocketAddr,
    child: Child,
}

impl Proc {
    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id().unwrap_or(0)
    }

    /// Its counters now.
    pub fn stats(&self) -> Stats {
        Stats::of(self.pid())
    }
}

/// A free port on 127.0.0.1.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

async fn wait_listening(addr: SocketAddr, what: &str, secs: u64) {
    for _ in 0..secs * 20 {
        if tokio::net::TcpStream::connect(addr).await.is_ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{what} did not listen on {addr}");
}

/// mcp-gateway with `body` after its `listen` and `threads` lines; under callgrind with
/// `valgrind` (one worker thread).
pub async fn gateway(ctx: &Ctx, tag: &str, body: &str, valgrind: bool) -> Proc {
    let dir = ctx.dir(tag);
    let port = free_port();
    let threads = if valgrind { 1 } else { 2 };
    let yaml = format!("listen: 127.0.0.1:{port}\nthreads: {threads}\n{body}");
    let path = dir.join("gateway.yaml");
    std::fs::write(&path, yaml).expect("write gateway.yaml");
    let log = std::fs::File::create(dir.join("gateway.log")).expect("log");
    let mut cmd = if valgrind {
        let mut c = Command::new("valgrind");
        c.arg("--tool=callgrind")
            .arg(format!(
                "--callgrind-out-file={}",
                dir.join("callgrind.out").display()
            ))
            .arg("--dump-instr=no")
            .arg(&ctx.gateway);
        c
    } else {
        Command::new(&ctx.gateway)
    };
    let child = cmd
        .arg("--config")
        .arg(&path)
        .env("RUST_LOG", "error")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .kill_on_drop(true)
        .spawn()
        .expect("start mcp-gateway");
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    wait_listening(addr, "mcp-gateway", if valgrind { 120 } else { 60 }).await;
    Proc { addr, child }
}

/// The mock backend (`legacy`: 2025-11-25 with sessions).
pub async fn mock(ctx: &Ctx, legacy: bool) -> Proc {
    let port = free_port();
    let mut c = Command::new(&ctx.mock);
    c.args(["--port", &port.to_string(), "--name", "pod", "--no-capture"]);
    if legacy {
        c.args(["--legacy", "2025-11-25"]);
    }
    let child = c
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("start mock-mcp");
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    wait_listening(addr, "mock-mcp", 30).await;
    Proc { addr, child }
}

/// A redis-server without persistence.
pub async fn redis() -> Proc {
    let port = free_port();
    let child = Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .stdout(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("redis-server");
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    wait_listening(addr, "redis-server", 30).await;
    Proc { addr, child }
}

/// A process's memory, descriptors, context switches and CPU time.
#[derive(Debug, Clone, Copy, Default)]
pub struct Stats {
    /// Resident set, KiB.
    pub rss_kib: u64,
    /// Peak resident set, KiB.
    pub hwm_kib: u64,
    /// Open descriptors.
    pub fds: u64,
    /// Context switches of all its threads (voluntary and not): its wake-ups.
    pub switches: u64,
    /// User + system CPU, clock ticks.
    pub cpu_ticks: u64,
}

impl Stats {
    pub(crate) fn of(pid: u32) -> Stats {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let field = |text: &str, name: &str| -> u64 {
            text.lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.split_whitespace().next())
                .and_then(|v| v.parse().ok())
                .unwrap_or(0)
        };
        let mut switches = 0;
        if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
            for t in tasks.flatten() {
                let s = std::fs::read_to_string(t.path().join("status")).unwrap_or_default();
                switches += field(&s, "voluntary_ctxt_switches:")
                    + field(&s, "nonvoluntary_ctxt_switches:");
            }
        }
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let cpu_ticks = stat
            .rfind(')')
            .map(|at| {
                let f: Vec<&str> = stat[at + 2..].split_whitespace().collect();
                let n = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
                n(11) + n(12)
            })
            .unwrap_or(0);
        Stats {
            rss_kib: field(&status, "VmRSS:"),
            hwm_kib: field(&status, "VmHWM:"),
            fds: std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count() as u64),
            switches,
            cpu_ticks,
        }
    }
}

/// (p50, p99) of `ms`, in ms.
pub fn percentiles(ms: &mut [f64]) -> (f64, f64) {
    if ms.is_empty() {
        return (0.0, 0.0);
    }
    ms.sort_by(f64::total_cmp);
    let at = |q: f64| ms[((ms.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.99))
}

/// Growth of `y` over `x` from the first to the last point: the exponent b of y ~ x^b (0:
/// constant, 1: linear), as a word with the numbers.
pub fn growth(points: &[(f64, f64)]) -> String {
    let (Some(&(x0, y0)), Some(&(x1, y1))) = (points.first(), points.last()) else {
        return "no points".into();
    };
    if x1 <= x0 || y0 <= 0.0 || y1 <= 0.0 {
        return "not measured".into();
    }
    let b = (y1 / y0).ln() / (x1 / x0).ln();
    let word = if b < 0.1 {
        "flat (constant)"
    } else if b < 0.5 {
        "sublinear"
    } else if b < 1.2 {
        "linear"
    } else {
        "superlinear"
    };
    format!(
        "{word}: x{:.0} in size, x{:.2} in cost (exponent {b:.2})",
        x1 / x0,
        y1 / y0
    )
}

/// Counts the instructions of a gateway under callgrind across `body` (zeroed before, dumped
/// after); returns the total.
pub async fn counted<F: std::future::Future<Output = u64>>(
    ctx: &Ctx,
    gw: &Proc,
    tag: &str,
    body: F,
) -> (u64, u64) {
    let pid = gw.pid().to_string();
    let _ = Command::new("callgrind_control")
        .args(["-z", &pid])
        .stdout(Stdio::null())
        .status()
        .await;
    let ok = body.await;
    let _ = Command::new("callgrind_control")
        .args(["-d", &pid])
        .stdout(Stdio::null())
        .status()
        .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let dir = ctx.out.join("work").join(tag);
    let mut dumps: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("callgrind.out."))
                })
                .collect()
        })
        .unwrap_or_default();
    dumps.sort();
    let total = dumps
        .first()
        .and_then(|p| std::fs::read_to_string(p).ok())
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("summary:"))
                .and_then(|v| v.trim().parse().ok())
        })
        .unwrap_or(0);
    (total, ok)
}

#[cfg(test)]
mod tests {
    #[test]
    fn growth_names_flat_and_linear_curves() {
        assert!(super::growth(&[(1e3, 800.0), (1e6, 820.0)]).starts_with("flat"));
        assert!(super::growth(&[(1e2, 1.0), (1e4, 100.0)]).starts_with("linear"));
        assert!(super::growth(&[(10.0, 5.0), (1e4, 9.0)]).starts_with("flat"));
    }
}
