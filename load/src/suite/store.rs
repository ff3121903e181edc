//! The store part of the suite: what the shared Redis session store costs against the memory
//! store, in one run (stateful req/s and latency, interleaved), and what a session weighs in
//! Redis. Needs Debian's `redis-server` (and `redis-cli`).

use super::overhead::open_sessions;
use super::procs::{free_port, Backend, BackendKind, Proxy};
use super::report::median;
use super::{Cell, Setup, Suite, Via};
use crate::mcp::Dialect;
use std::fmt::Write as _;
use std::process::Stdio;
use std::time::Duration;
use tokio::process::{Child, Command};

/// The gateway config lines putting sessions in Redis at `url`, keys under `tag`.
pub(super) fn redis_sessions(url: &str, tag: &str) -> String {
    format!("sessions:\n  max: 1000000\n  store: redis\n  redis: {{ urls: [\"{url}\"], key-prefix: \"{tag}:\" }}\n")
}

/// A redis-server for the part (no persistence: this measures the store, not the disk).
async fn start_redis() -> (Child, u16) {
    let port = free_port();
    let child = Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .stdout(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("redis-server (Debian's redis-server package)");
    for _ in 0..200 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return (child, port);
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("redis-server did not listen on {port}");
}

/// `used_memory` of the Redis at `port`, in bytes.
async fn used_memory(port: u16) -> u64 {
    let out = Command::new("redis-cli")
        .args(["-p", &port.to_string(), "info", "memory"])
        .output()
        .await
        .expect("redis-cli");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

impl Suite {
    pub(super) async fn store(&self) -> String {
        let (_redis, port) = start_redis().await;
        let _ = self.redis_url.set(format!("redis://127.0.0.1:{port}/0"));
        let setups = [Via::GatewayStateful, Via::GatewayStatefulRedis].map(|via| Setup {
            via,
            backend: BackendKind::MockLegacy,
            dialect: Dialect::Legacy,
            baseline: false,
        });
        let runs = self.args.runs.max(3);
        let mut rps = [Vec::new(), Vec::new()];
        let mut p50 = [Vec::new(), Vec::new()];
        let mut p99 = [Vec::new(), Vec::new()];
        for i in 0..runs {
            for (k, setup) in setups.iter().enumerate() {
                let cell = Cell {
                    setup: *setup,
                    backends: 1,
                    reuse: true,
                    rate: 0.0,
                    duration: self.args.overhead_duration,
                    kill: None,
                    concurrency: 32,
                };
                let r = self
                    .run_cell(&cell, &format!("store-{}-{i}", setup.slug()))
                    .await;
                eprintln!(
                    "  store {} ({}/{runs}): {}",
                    setup.label(),
                    i + 1,
                    crate::summary_line(&r)
                );
                rps[k].push(r.achieved_rps);
                p50[k].push(r.latency_ms.p50);
                p99[k].push(r.latency_ms.p99);
            }
        }
        let per_session = self.redis_bytes_per_session(port).await;
        let mut md = String::from("\n## Session store: memory vs Redis\n\n");
        let _ = writeln!(
            md,
            "mcp-gateway stateful route, one legacy mock backend, closed loop (32 in flight, \
             {} sessions, reused connections), {runs} interleaved runs of {} s, medians. Redis \
             is a local redis-server without persistence.\n",
            self.args.sessions, self.args.overhead_duration
        );
        md.push_str("| store | req/s | p50 ms | p99 ms |\n|---|---|---|---|\n");
        for (k, name) in ["memory", "redis"].iter().enumerate() {
            let _ = writeln!(
                md,
                "| {name} | {:.0} | {:.3} | {:.3} |",
                median(&rps[k]),
                median(&p50[k]),
                median(&p99[k])
            );
        }
        let ratio = median(&rps[1]) / median(&rps[0]).max(1.0);
        let _ = writeln!(md, "\nRedis / memory req/s: **{ratio:.2}x**.\n");
        let _ = writeln!(md, "{per_session}");
        md
    }

    /// Redis `used_memory` before and after opening `--store-sessions` sessions.
    async fn redis_bytes_per_session(&self, port: u16) -> String {
        let n = self.args.store_sessions;
        let p = &self.programs;
        let backend = Backend::start(p, BackendKind::MockLegacy, "pod-0", 0).await;
        let dir = self.args.out.join("work").join("store-memory");
        let url = format!("redis://127.0.0.1:{port}/0");
        let extra = redis_sessions(&url, "weigh");
        let gw = Proxy::gateway(&p.gateway, &dir, "stateful", &[backend.addr], &extra).await;
        let before = used_memory(port).await;
        let opened = open_sessions(gw.addr, n, 64).await;
        let after = used_memory(port).await;
        let per = after.saturating_sub(before) / (opened.max(1) as u64);
        eprintln!("  store memory: {opened} sessions, Redis {before} -> {after} bytes");
        format!(
            "Redis memory: {opened} of {n} sessions opened; `used_memory` {:.1} MiB before, \
             {:.1} MiB after: **{per} bytes per session** (record, due-time entry, counts).\n",
            before as f64 / 1048576.0,
            after as f64 / 1048576.0
        )
    }
}
