//! The overhead and memory parts of the suite: what the gateway costs against a direct
//! connection, nginx and a bare pingora passthrough (the framework's floor), and what an idle
//! session weighs; with `--baseline-gateway-bin`, the same for a second build, interleaved, so
//! that a change is measured before and after in one run.

use super::procs::{Backend, BackendKind, Proxy};
use super::{report, Cell, Setup, Suite, Via};
use crate::http::Client;
use crate::mcp::{Dialect, Wire};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

impl Suite {
    /// The targets, by dialect: direct, nginx, bare pingora (when built), mcp-gateway and the
    /// baseline mcp-gateway (when given).
    fn overhead_setups(&self) -> Vec<Setup> {
        let p = &self.programs;
        let mut setups = Vec::new();
        for (dialect, backend, route) in [
            (
                Dialect::Stateless,
                BackendKind::MockStateless,
                Via::GatewayStateless,
            ),
            (
                Dialect::Legacy,
                BackendKind::MockLegacy,
                Via::GatewayStateful,
            ),
        ] {
            let direct = Setup {
                via: Via::Direct,
                backend,
                dialect,
                baseline: false,
            };
            setups.push(direct);
            setups.push(Setup {
                via: Via::Nginx,
                ..direct
            });
            if p.bare_pingora.is_some() {
                setups.push(Setup {
                    via: Via::BarePingora,
                    ..direct
                });
            }
            setups.push(Setup {
                via: route,
                ..direct
            });
            if p.baseline_gateway.is_some() {
                setups.push(Setup {
                    via: route,
                    baseline: true,
                    ..direct
                });
            }
        }
        setups
    }

    pub(super) async fn overhead(&self) -> String {
        let setups = self.overhead_setups();
        super::pin::pin(self.args.pin);
        let runs = self.args.runs.max(3);
        let duration = self.args.overhead_duration;
        let mut rows: Vec<report::OverheadRow> = setups
            .iter()
            .map(|setup| report::OverheadRow {
                setup: *setup,
                throughput: Vec::new(),
                cpu: Vec::new(),
                latency: Vec::new(),
            })
            .collect();
        // Interleaved, so a slow moment of the machine hits every target alike.
        for i in 0..runs {
            for row in rows.iter_mut() {
                let setup = row.setup;
                let closed = Cell {
                    setup,
                    backends: 1,
                    reuse: true,
                    rate: 0.0,
                    duration,
                    kill: None,
                    concurrency: 32,
                };
                let (r, cpu) = self
                    .run_cell_cpu(&closed, &format!("overhead-max-{}-{i}", setup.slug()))
                    .await;
                eprintln!(
                    "  overhead max {} ({}/{runs}): {}, CPU {} µs/req",
                    setup.label(),
                    i + 1,
                    crate::summary_line(&r),
                    cpu.map_or("?".into(), |c| format!("{c:.1}"))
                );
                row.throughput.push(r);
                row.cpu.extend(cpu);
                let open = Cell {
                    rate: 1000.0,
                    concurrency: 256,
                    ..closed
                };
                let r = self
                    .run_cell(&open, &format!("overhead-lat-{}-{i}", setup.slug()))
                    .await;
                eprintln!(
                    "  overhead 1000 rps {}: {}",
                    setup.label(),
                    crate::summary_line(&r)
                );
                row.latency.push(r);
            }
        }
        let bare_missing = self
            .programs
            .bare_pingora
            .is_none()
            .then_some("bare-pingora is not in the binary directory (cargo build --release -p mcp-gateway-bench)");
        let binaries = (
            self.programs.gateway.as_path(),
            self.programs.baseline_gateway.as_deref(),
        );
        let pinned = super::pin::is_pinned();
        super::pin::pin(false);
        report::overhead(&rows, duration, bare_missing, binaries, pinned)
    }

    pub(super) async fn memory(&self) -> String {
        let p = &self.programs;
        let mut rows = vec![self.memory_of(&p.gateway, "measured").await];
        if let Some(baseline) = &p.baseline_gateway {
            rows.push(self.memory_of(baseline, "baseline").await);
        }
        report::memory(&rows)
    }

    /// Gateway RSS before and after opening `--memory-sessions` idle sessions.
    async fn memory_of(&self, bin: &Path, tag: &str) -> report::MemoryRow {
        let p = &self.programs;
        let n = self.args.memory_sessions;
        let backend = Backend::start(p, BackendKind::MockLegacy, "pod-0", 0).await;
        let dir = self.args.out.join("work").join(format!("memory-{tag}"));
        let extra = format!("sessions: {{ max: {}, idle-timeout-s: 3600 }}\n", n + 1000);
        let gw = Proxy::gateway(bin, &dir, "stateful", &[backend.addr], &extra).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let before = gw.rss_kib().unwrap_or(0);
        let opened = open_sessions(gw.addr, n, 64).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        let after = gw.rss_kib().unwrap_or(0);
        eprintln!("  memory {tag}: {opened} sessions, RSS {before} KiB -> {after} KiB");
        let binary = if self.programs.baseline_gateway.is_some() {
            format!("mcp-gateway `{}` ({tag}): ", bin.display())
        } else {
            "mcp-gateway ".to_owned()
        };
        report::MemoryRow {
            binary,
            asked: n,
            opened,
            before_kib: before,
            after_kib: after,
        }
    }
}

/// Opens `n` sessions (initialize + notifications/initialized), `concurrency` at a time;
/// returns how many succeeded.
pub(super) async fn open_sessions(target: SocketAddr, n: usize, concurrency: usize) -> usize {
    let client = Arc::new(Client::new(target, true, Duration::from_secs(10)));
    let wire = Arc::new(Wire {
        path: "/mcp".into(),
        host: target.to_string(),
        close: false,
        tool: "whoami".into(),
        bearer: None,
    });
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let ok = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..concurrency {
        let (client, wire, next, ok) = (client.clone(), wire.clone(), next.clone(), ok.clone());
        workers.spawn(async move {
            use std::sync::atomic::Ordering::Relaxed;
            while next.fetch_add(1, Relaxed) < n {
                let Ok(resp) = client.send(&wire.initialize(1)).await else {
                    continue;
                };
                let Some(sid) = resp.session_id else { continue };
                if client.send(&wire.initialized(&sid)).await.is_ok() {
                    ok.fetch_add(1, Relaxed);
                }
            }
        });
    }
    while workers.join_next().await.is_some() {}
    ok.load(std::sync::atomic::Ordering::Relaxed)
}
