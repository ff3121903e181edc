//! The store part of the suite: what the shared Redis session store costs against the memory
//! store, in one run (stateful req/s and latency, interleaved), and what a session weighs in
//! Redis. Needs Debian's `redis-server` (and `redis-cli`).

use super::overhead::open_sessions;
use super::procs::{free_port, Backend, BackendKind, Proxy};
use super::report::median;
use super::{Cell, Setup, Suite, Via};
use crate::http::Client;
use crate::mcp::{verdict, Dialect, Verdict, Wire};
use std::fmt::Write as _;
use std::process::Stdio;
use std::time::Duration;
use tokio::process::{Child, Command};

/// The gateway config lines putting sessions in Redis at `url`, keys under `tag`.
pub(super) fn redis_sessions(url: &str, tag: &str) -> String {
    format!("sessions:\n  max: 1000000\n  store: redis\n  redis: {{ urls: [\"{url}\"], key-prefix: \"{tag}:\" }}\n")
}

/// A redis-server for the part (no persistence: this measures the store, not the disk).
pub(super) async fn start_redis() -> (Child, u16) {
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

/// Call latency before and with a re-initialization.
struct Reinit {
    plain: (f64, f64),
    moved: (f64, f64),
    failed: usize,
}

/// (p50, p99) of `ms`.
fn percentiles(ms: &mut [f64]) -> (f64, f64) {
    if ms.is_empty() {
        return (0.0, 0.0);
    }
    ms.sort_by(f64::total_cmp);
    let at = |q: f64| ms[((ms.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.99))
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
        let mut reinit = Vec::new();
        for setup in &setups {
            reinit.push(self.reinit_latency(setup.via).await);
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
        md.push_str(
            "\nRe-initialization: 200 sessions on one backend, the backend killed and restarted on \
             its port (it forgets every session), then one call per session, one after another: \
             each call includes the gateway's replay of the client's `initialize` and \
             `notifications/initialized` on the restarted backend. Calls before the restart for \
             comparison.\n\n| store | call p50 ms | call p99 ms | call with re-initialization p50 ms | p99 ms | failed |\n|---|---|---|---|---|---|\n",
        );
        for (name, r) in ["memory", "redis"].iter().zip(&reinit) {
            let _ = writeln!(
                md,
                "| {name} | {:.3} | {:.3} | {:.3} | {:.3} | {} |",
                r.plain.0, r.plain.1, r.moved.0, r.moved.1, r.failed
            );
        }
        let _ = writeln!(md, "\n{per_session}");
        md
    }

    /// Call latency (p50, p99) before and right after every session had to be re-initialized.
    async fn reinit_latency(&self, via: Via) -> Reinit {
        let p = &self.programs;
        let mut backend = Backend::start(p, BackendKind::MockLegacy, "pod-0", 0).await;
        let dir = self.args.out.join("work").join(format!("reinit-{via:?}"));
        let extra = match via {
            Via::GatewayStatefulRedis => {
                redis_sessions(self.redis_url.get().expect("redis"), "reinit")
            }
            _ => String::new(),
        };
        let gw = Proxy::gateway(&p.gateway, &dir, "stateful", &[backend.addr], &extra).await;
        let client = Client::new(gw.addr, true, Duration::from_secs(10));
        let wire = Wire {
            path: "/mcp".into(),
            host: gw.addr.to_string(),
            close: false,
            tool: "whoami".into(),
            bearer: None,
        };
        let mut sids = Vec::new();
        for i in 0..200 {
            let Ok(resp) = client.send(&wire.initialize(i)).await else {
                continue;
            };
            if let Some(sid) = resp.session_id {
                let _ = client.send(&wire.initialized(&sid)).await;
                sids.push(sid);
            }
        }
        let timed = |sids: Vec<String>| {
            let (client, wire) = (&client, &wire);
            async move {
                let mut ms = Vec::new();
                let mut failed = 0;
                for (i, sid) in sids.iter().enumerate() {
                    let t = std::time::Instant::now();
                    let req = wire.call(Dialect::Legacy, i as u64, Some(sid));
                    match client.send(&req).await {
                        Ok(resp) if verdict(&resp) == Verdict::Ok => {
                            ms.push(t.elapsed().as_secs_f64() * 1000.0)
                        }
                        _ => failed += 1,
                    }
                }
                (percentiles(&mut ms), failed)
            }
        };
        let (plain, _) = timed(sids.clone()).await;
        let (kind, name, port) = backend.restart_spec();
        backend.kill().await;
        let _restarted = Backend::start(p, kind, &name, port).await;
        let (moved, failed) = timed(sids).await;
        Reinit {
            plain,
            moved,
            failed,
        }
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
