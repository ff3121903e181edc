//! `mcp-load chaos`: three gateway replicas sharing a Redis Cluster (3 masters + 3 replicas,
//! `cluster-node-timeout` 2 s) behind a per-request front (nginx round robin, keep-alive), three
//! legacy and three 2026-07-28 backends, legacy-session and 2026-07-28 load from mock clients
//! plus real SDK clients (mcp 1.30.0 legacy sessions, mcp 2.3.0 `mode="2026-07-28"`). Every
//! `--kill-every` seconds a random victim is SIGKILLed: a replica or a backend, started again
//! on its port `--restart-after` seconds later, or the Redis master of the moment, whose node
//! is started again once a replica took over (it rejoins as a replica).
//!
//! Reported per kill (`report.rs`): calls in flight, failures within its window, failures after
//! the window; at the end: calls, failures, sessions lost, RSS and descriptors per replica,
//! latency. A Markdown table on stdout and in `--out`, the JSON next to it.

mod peers;
mod redis;
mod report;
mod sdk;

use crate::fleet::{kill_and_replace, rss_and_fds, GatewayProc, Pool};
use crate::mcp::Dialect;
use crate::run::{self, Event};
use crate::suite::procs::{free_port, Backend, BackendKind, Programs, Proxy};
use clap::Args;
use rand::{Rng, SeedableRng};
use report::{Sample, Victim};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// `mcp-load chaos` options.
#[derive(Args, Debug, Clone)]
pub struct ChaosArgs {
    /// Seconds of load.
    #[arg(long, default_value_t = 600.0)]
    duration: f64,
    /// Seconds between kills (the first one after this long).
    #[arg(long, default_value_t = 20.0)]
    kill_every: f64,
    /// Seconds after which a killed replica or backend is started again on its port.
    #[arg(long, default_value_t = 3.0)]
    restart_after: f64,
    /// Seconds after a kill within which its failures count against it; a failure of a call
    /// sent later (before the next kill) is a failure "after" it.
    #[arg(long, default_value_t = 10.0)]
    window: f64,
    /// Legacy calls per second (mock clients).
    #[arg(long, default_value_t = 40.0)]
    legacy_rate: f64,
    /// Legacy sessions the mock calls are spread over.
    #[arg(long, default_value_t = 30)]
    sessions: usize,
    /// 2026-07-28 calls per second (mock clients).
    #[arg(long, default_value_t = 40.0)]
    modern_rate: f64,
    /// Backends: `mock` (mock-mcp legacy and stateless) or `real` (FastMCP 1.30.0 and the
    /// TypeScript SDK v2 modern-only server).
    #[arg(long, default_value = "real", value_parser = ["mock", "real"])]
    backends: String,
    /// mcp 1.30.0 legacy-session client loops.
    #[arg(long, default_value_t = 2)]
    sdk_legacy: usize,
    /// mcp 2.3.0 `mode="2026-07-28"` client loops.
    #[arg(long, default_value_t = 2)]
    sdk_modern: usize,
    /// Milliseconds between an SDK client's calls.
    #[arg(long, default_value_t = 500)]
    sdk_interval_ms: u64,
    /// Seed of the victim sequence (default: from the clock; printed).
    #[arg(long)]
    seed: Option<u64>,
    /// `RUST_LOG` of the replicas (their stderr goes to `replica-N.log` next to `--out`).
    #[arg(long, default_value = "warn")]
    log: String,
    /// Directory of mcp-gateway and mock-mcp (default: next to mcp-load).
    #[arg(long)]
    bin_dir: Option<PathBuf>,
    /// Write the Markdown report here, the JSON next to it (`.json`).
    #[arg(long, default_value = "bench/out/chaos/chaos.md")]
    out: PathBuf,
}

/// Everything the kills reach.
#[derive(Clone)]
struct Fleet {
    programs: Programs,
    replicas: Arc<tokio::sync::Mutex<Vec<GatewayProc>>>,
    legacy: Pool,
    modern: Pool,
    cluster: Arc<tokio::sync::Mutex<redis::Cluster>>,
    /// What each kill hit, filled in as it happens (a Redis port, the takeover time).
    notes: Arc<Mutex<Vec<String>>>,
    restart_after: Duration,
}

fn config(
    listen: u16,
    admin: u16,
    urls: &[String],
    legacy: &[SocketAddr],
    modern: &[SocketAddr],
) -> String {
    let list = |v: &[SocketAddr]| {
        v.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let urls: Vec<String> = urls.iter().map(|u| format!("\"{u}\"")).collect();
    format!(
        "listen: 127.0.0.1:{listen}\nadmin: 127.0.0.1:{admin}\nthreads: 2\n\
         sessions:\n  store: redis\n  redis: {{ urls: [{}], cluster: true, key-prefix: \"chaos:\" }}\n\
         pools:\n  legacy: {{ backends: [{}], failure-cooldown-ms: 1000 }}\n  \
         modern: {{ backends: [{}], failure-cooldown-ms: 1000 }}\n\
         routes:\n  - {{ path: /legacy, upstream-path: /mcp, mode: stateful, pool: legacy }}\n  \
         - {{ path: /mcp, mode: stateless, pool: modern }}\n",
        urls.join(", "),
        list(legacy),
        list(modern)
    )
}

impl Fleet {
    /// Kills `victim` (kill number `n`); completes once the kill took effect, the restart
    /// follows in the background.
    async fn kill(&self, n: usize, victim: Victim) {
        let note = |s: String| self.notes.lock().expect("notes")[n] = s;
        match victim {
            Victim::Replica(i) => {
                let kill = self.replicas.lock().await[i].kill();
                kill.await;
                let (replicas, after) = (self.replicas.clone(), self.restart_after);
                tokio::spawn(async move {
                    tokio::time::sleep(after).await;
                    replicas.lock().await[i].restart().await;
                });
            }
            Victim::Legacy(i) => {
                kill_and_replace(&self.legacy, i, &self.programs, None, self.restart_after).await
            }
            Victim::Modern(i) => {
                kill_and_replace(&self.modern, i, &self.programs, None, self.restart_after).await
            }
            Victim::RedisMaster(pick) => {
                let Some(port) = self.cluster.lock().await.kill_master(pick).await else {
                    note("no master found".into());
                    return;
                };
                note(format!("master :{port}"));
                let (cluster, notes) = (self.cluster.clone(), self.notes.clone());
                tokio::spawn(async move {
                    let took = cluster
                        .lock()
                        .await
                        .rejoin(port, Duration::from_secs(30))
                        .await;
                    notes.lock().expect("notes")[n] = match took {
                        Some(t) => format!(
                            "master :{port}, replica took over in {:.1} s",
                            t.as_secs_f64()
                        ),
                        None => format!("master :{port}, no takeover within 30 s"),
                    };
                });
            }
        }
    }
}

/// Runs the chaos; the process exit code.
pub async fn main(args: ChaosArgs) -> i32 {
    let root = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let sdk_modern = match args.backends.as_str() {
        // mock-mcp's tools/list lacks what the 2.3.0 client validates (cacheScope, ttlMs)
        "mock" => 0,
        _ => args.sdk_modern,
    };
    let missing = peers::missing(&root, args.sdk_legacy, sdk_modern, args.backends == "real");
    if !missing.is_empty() {
        eprintln!("{}", peers::refusal(&missing));
        return 2;
    }
    let programs = match Programs::find(std::path::Path::new("."), args.bin_dir.clone(), None, None)
    {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{e}");
            return 2;
        }
    };
    let out_dir = args
        .out
        .parent()
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."));
    if let Err(e) = std::fs::create_dir_all(&out_dir) {
        eprintln!("cannot create {}: {e}", out_dir.display());
        return 2;
    }
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_secs())
    });
    let dir = std::env::temp_dir().join(format!("mcp-load-chaos-{}", std::process::id()));
    let cluster = match redis::Cluster::start(&dir.join("redis"), 3, 2000).await {
        Ok(c) => c,
        Err(e) => {
            eprintln!("Redis Cluster: {e}");
            return 2;
        }
    };
    let (legacy_kind, modern_kind) = match args.backends.as_str() {
        "real" => (BackendKind::FastMcp1, BackendKind::ModernTs),
        _ => (BackendKind::MockLegacy, BackendKind::MockStateless),
    };
    let (mut legacy, mut modern) = (Vec::new(), Vec::new());
    for i in 0..3 {
        legacy.push(Backend::start(&programs, legacy_kind, &format!("legacy-{i}"), 0).await);
        modern.push(Backend::start(&programs, modern_kind, &format!("modern-{i}"), 0).await);
    }
    let addrs = |v: &[Backend]| v.iter().map(|b| b.addr).collect::<Vec<_>>();
    let (legacy_addrs, modern_addrs) = (addrs(&legacy), addrs(&modern));
    let mut replicas = Vec::new();
    for i in 0..3 {
        let (port, admin) = (free_port(), free_port());
        let path = dir.join(format!("replica-{i}.yaml"));
        let yaml = config(port, admin, &cluster.urls(), &legacy_addrs, &modern_addrs);
        std::fs::write(&path, yaml).expect("write replica config");
        let (addr, admin) = (
            SocketAddr::from(([127, 0, 0, 1], port)),
            SocketAddr::from(([127, 0, 0, 1], admin)),
        );
        let log = out_dir.join(format!("replica-{i}.log"));
        let _ = std::fs::remove_file(&log);
        replicas.push(
            GatewayProc::start(&programs.gateway, &path, &args.log, addr, admin, Some(log)).await,
        );
    }
    let front = Proxy::nginx(
        &programs,
        &dir.join("nginx"),
        &replicas.iter().map(|r| r.addr).collect::<Vec<_>>(),
    )
    .await;
    let fleet = Fleet {
        programs: programs.clone(),
        replicas: Arc::new(tokio::sync::Mutex::new(replicas)),
        legacy: Arc::new(Mutex::new(legacy)),
        modern: Arc::new(Mutex::new(modern)),
        cluster: Arc::new(tokio::sync::Mutex::new(cluster)),
        notes: Arc::new(Mutex::new(Vec::new())),
        restart_after: Duration::from_secs_f64(args.restart_after),
    };

    // the victims, drawn now from the seed
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut schedule = Vec::new();
    let mut at = args.kill_every;
    while at + 5.0 < args.duration {
        let i = rng.random_range(0..3usize);
        let victim = match rng.random_range(0..4) {
            0 => Victim::Replica(i),
            1 => Victim::Legacy(i),
            2 => Victim::Modern(i),
            _ => Victim::RedisMaster(i),
        };
        schedule.push((Duration::from_secs_f64(at), victim));
        at += args.kill_every;
    }
    *fleet.notes.lock().expect("notes") = vec![String::new(); schedule.len()];
    let label = |n: usize, v: &Victim| format!("#{} {}", n + 1, v.name());
    // the legacy load does the kills; the 2026-07-28 load marks them, each marker taking
    // effect when its kill did (so both count the calls started while the victim died)
    let (killed_tx, killed_rx) = tokio::sync::watch::channel(0usize);
    let killed_tx = Arc::new(killed_tx);
    let kill_events: Vec<Event> = schedule
        .iter()
        .enumerate()
        .map(|(n, (at, victim))| {
            let (fleet, victim, done) = (fleet.clone(), *victim, killed_tx.clone());
            Event {
                at: *at,
                label: label(n, &victim),
                action: Box::new(move || {
                    Box::pin(async move {
                        let t = Instant::now();
                        fleet.kill(n, victim).await;
                        done.send_replace(n + 1);
                        eprintln!(
                            "chaos: kill #{} {} took effect in {:?}",
                            n + 1,
                            victim.name(),
                            t.elapsed()
                        );
                    })
                }),
            }
        })
        .collect();
    let markers: Vec<Event> = schedule
        .iter()
        .enumerate()
        .map(|(n, (at, victim))| {
            let mut killed = killed_rx.clone();
            Event {
                at: *at,
                label: label(n, victim),
                action: Box::new(move || {
                    Box::pin(async move {
                        let wait = killed.wait_for(|k| *k > n);
                        let _ = tokio::time::timeout(Duration::from_secs(10), wait).await;
                    })
                }),
            }
        })
        .collect();
    eprintln!(
        "chaos: seed {seed}, {} kills over {} s; front {}, replicas' logs in {}",
        schedule.len(),
        args.duration,
        front.addr,
        out_dir.display()
    );

    let duration = Duration::from_secs_f64(args.duration);
    let load = |path: &str, dialect, rate, sessions| {
        crate::fleet::fault_load(front.addr, path, dialect, rate, sessions, duration)
    };
    let mut loops = Vec::new();
    let script = root.join("tests/peers/repl_client.py");
    for i in 0..args.sdk_legacy + sdk_modern {
        let legacy = i < args.sdk_legacy;
        loops.push(sdk::SdkLoop {
            label: match legacy {
                true => format!("mcp 1.30.0 legacy #{i}"),
                false => format!("mcp 2.3.0 2026-07-28 #{}", i - args.sdk_legacy),
            },
            python: root
                .join(if legacy { ".venv-mcp1" } else { ".venv-mcp2" })
                .join("bin/python"),
            script: script.clone(),
            url: format!(
                "http://{}/{}",
                front.addr,
                if legacy { "legacy" } else { "mcp" }
            ),
            mode: (if legacy { "legacy" } else { "2026-07-28" }).into(),
            interval: Duration::from_millis(args.sdk_interval_ms),
        });
    }
    let samples = Arc::new(Mutex::new(Vec::<Sample>::new()));
    let t0 = Instant::now();
    let sampler = {
        let (samples, replicas) = (samples.clone(), fleet.replicas.clone());
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(5)).await;
                let pids: Vec<Option<u32>> =
                    replicas.lock().await.iter().map(|r| r.pid()).collect();
                let t_s = t0.elapsed().as_secs_f64();
                let mut s = samples.lock().expect("samples");
                for (replica, pid) in pids.into_iter().enumerate() {
                    if let Some((rss_kib, fds)) = pid.and_then(rss_and_fds) {
                        s.push(Sample {
                            t_s,
                            replica,
                            pid: pid.unwrap_or(0),
                            rss_kib,
                            fds,
                        });
                    }
                }
            }
        })
    };
    let sdk_runs = loops
        .into_iter()
        .map(|l| tokio::spawn(sdk::run(l, t0, duration)))
        .collect::<Vec<_>>();
    let (legacy_result, modern_result) = tokio::join!(
        run::run(
            load("/legacy", Dialect::Legacy, args.legacy_rate, args.sessions),
            kill_events
        ),
        run::run(
            load("/mcp", Dialect::Stateless, args.modern_rate, 1),
            markers
        ),
    );
    eprintln!("chaos: the mock loads ended; waiting for the SDK loops");
    let mut sdk_results = Vec::new();
    for h in sdk_runs {
        if let Ok(r) = h.await {
            sdk_results.push(r);
        }
    }
    sampler.abort();
    let redis_pids = fleet.cluster.lock().await.pids();
    let notes = fleet.notes.lock().expect("notes").clone();
    let samples = samples.lock().expect("samples").clone();
    let input = report::Input {
        seed,
        args: &args,
        schedule: &schedule,
        notes,
        legacy: legacy_result,
        modern: modern_result,
        sdk: sdk_results,
        samples,
        redis_pids,
    };
    let report = report::build(input);
    let md = report::markdown(&report);
    println!("{md}");
    let json = serde_json::to_string_pretty(&report).expect("report serializes");
    let json_path = args.out.with_extension("json");
    for (path, text) in [(&args.out, md), (&json_path, json)] {
        if let Err(e) = std::fs::write(path, text) {
            eprintln!("cannot write {}: {e}", path.display());
        }
    }
    drop(front);
    // (restart tasks may still hold the fleet: stop every process now)
    for r in fleet.replicas.lock().await.iter_mut() {
        r.kill().await;
    }
    fleet.legacy.lock().expect("backends").clear();
    fleet.modern.lock().expect("backends").clear();
    fleet.cluster.lock().await.stop();
    let _ = std::fs::remove_dir_all(&dir);
    if report.passed {
        0
    } else {
        1
    }
}
