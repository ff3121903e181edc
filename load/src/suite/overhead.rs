//! The overhead and memory parts of the suite: what the gateway costs against a direct
//! connection and nginx, and what an idle session weighs.

use super::procs::{Backend, BackendKind, Proxy};
use super::{report, Cell, Setup, Suite, Via};
use crate::http::Client;
use crate::mcp::{Dialect, Wire};
use crate::run::RunResult;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

impl Suite {
    pub(super) async fn overhead(&self) -> String {
        let legacy_direct = Setup {
            via: Via::Direct,
            backend: BackendKind::MockLegacy,
            dialect: Dialect::Legacy,
        };
        let stateless_direct = Setup {
            via: Via::Direct,
            backend: BackendKind::MockStateless,
            dialect: Dialect::Stateless,
        };
        let stateless_nginx = Setup {
            via: Via::Nginx,
            ..stateless_direct
        };
        let setups = [
            stateless_direct,
            stateless_nginx,
            Setup::GATEWAY_STATELESS,
            legacy_direct,
            Setup::NGINX_LEGACY,
            Setup::GATEWAY_LEGACY,
        ];
        let runs = self.args.runs.max(3);
        let mut throughput: Vec<Vec<RunResult>> = vec![Vec::new(); setups.len()];
        let mut latency: Vec<Vec<RunResult>> = vec![Vec::new(); setups.len()];
        // Interleaved, so a slow moment of the machine hits every target alike.
        for i in 0..runs {
            for (k, setup) in setups.iter().enumerate() {
                let closed = Cell {
                    setup: *setup,
                    backends: 1,
                    reuse: true,
                    rate: 0.0,
                    duration: 5.0,
                    kill: None,
                    concurrency: 32,
                };
                let r = self
                    .run_cell(&closed, &format!("overhead-max-{}-{i}", setup.slug()))
                    .await;
                eprintln!(
                    "  overhead max {}: {}",
                    setup.label(),
                    crate::summary_line(&r)
                );
                throughput[k].push(r);
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
                latency[k].push(r);
            }
        }
        let labels: Vec<String> = setups.iter().map(Setup::label).collect();
        report::overhead(&labels, &throughput, &latency)
    }

    pub(super) async fn memory(&self) -> String {
        let p = &self.programs;
        let n = self.args.memory_sessions;
        let backend = Backend::start(p, BackendKind::MockLegacy, "pod-0", 0).await;
        let dir = self.args.out.join("work").join("memory");
        let extra = format!("sessions: {{ max: {}, idle-timeout-s: 3600 }}\n", n + 1000);
        let gw = Proxy::gateway(p, &dir, "stateful", &[backend.addr], &extra).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let before = gw.rss_kib().unwrap_or(0);
        let opened = open_sessions(gw.addr, n, 64).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        let after = gw.rss_kib().unwrap_or(0);
        report::memory(n, opened, before, after)
    }
}

/// Opens `n` sessions (initialize + notifications/initialized), `concurrency` at a time;
/// returns how many succeeded.
async fn open_sessions(target: SocketAddr, n: usize, concurrency: usize) -> usize {
    let client = Arc::new(Client::new(target, true, Duration::from_secs(10)));
    let wire = Arc::new(Wire {
        path: "/mcp".into(),
        host: target.to_string(),
        close: false,
        tool: "whoami".into(),
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
