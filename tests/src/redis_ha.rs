//! Highly available Redis on loopback for the store failover tests, from Debian's
//! `redis-server` (which runs Sentinel too, as `redis-server sentinel.conf --sentinel`):
//! - [`RedisCluster`]: masters with one replica each, joined by `redis-cli --cluster create`;
//! - [`RedisSentinel`]: a primary, a replica and three Sentinels watching them.
//!
//! Every process runs on a port proven its own (a cluster node also on its bus port, +10000),
//! with its files in a temp dir; everything is SIGKILLed when dropped. `kill_master` /
//! `kill_primary` SIGKILL the node that serves writes right now: the outage under test.

use crate::harness::unique_temp_path;
use crate::ports::prove_ownership;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{Duration, Instant};
use tokio::process::{Child, Command};

/// Ports handed out in 20000..45000, so a cluster node's bus port (+10000) stays below 55000
/// (under the ephemeral range, where connections take their local ports).
static NEXT: AtomicU16 = AtomicU16::new(0);

fn candidate_port() -> u16 {
    if NEXT.load(Ordering::Relaxed) == 0 {
        let seed = (std::process::id() as u64)
            ^ std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64);
        let _ = NEXT.compare_exchange(
            0,
            20000 + (seed % 20000) as u16,
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
    }
    let p = NEXT.fetch_add(1, Ordering::Relaxed);
    if p >= 45000 {
        NEXT.store(20000, Ordering::Relaxed);
    }
    p
}

fn bindable(port: u16) -> bool {
    std::net::TcpListener::bind(("127.0.0.1", port)).is_ok()
}

/// One redis-server (or Sentinel) process.
struct Node {
    port: u16,
    child: Option<Child>,
}

/// Starts `redis-server` with `args` (after `--port P`) until it owns its port(s); `bus`: it
/// also listens on port + 10000.
async fn spawn(dir: &Path, bus: bool, args: impl Fn(u16) -> Vec<String>) -> Node {
    for _ in 0..20 {
        let port = candidate_port();
        if !bindable(port) || (bus && !bindable(port + 10000)) {
            continue;
        }
        let mut child = Command::new("redis-server")
            .args(args(port))
            .current_dir(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("redis-server (Debian's redis-server package)");
        let ports: Vec<u16> = match bus {
            true => vec![port, port + 10000],
            false => vec![port],
        };
        let proven = prove_ownership(&mut child, &ports, "redis-server", Duration::from_secs(10));
        match proven.await {
            Ok(()) => {
                return Node {
                    port,
                    child: Some(child),
                }
            }
            Err(_) => {
                let _ = child.kill().await;
            }
        }
    }
    panic!("redis-server never got a port of its own");
}

fn server_args(port: u16) -> Vec<String> {
    [
        "--port",
        &port.to_string(),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// `redis-cli -p PORT args...`, its stdout.
pub fn cli(port: u16, args: &[&str]) -> String {
    let out = std::process::Command::new("redis-cli")
        .args(["-p", &port.to_string()])
        .args(args)
        .output()
        .expect("redis-cli");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

async fn until(what: &str, limit: Duration, mut ok: impl FnMut() -> bool) {
    let started = Instant::now();
    while !ok() {
        assert!(started.elapsed() < limit, "{what} within {limit:?}");
        // the poll interval of this bounded wait
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A Redis Cluster: `masters` masters, one replica each.
pub struct RedisCluster {
    nodes: Vec<Node>,
    dir: PathBuf,
}

impl RedisCluster {
    /// Starts and joins the cluster with `cluster-node-timeout` `node_timeout_ms`; returns once
    /// every node says the cluster is ok and every replica is in sync.
    pub async fn start(masters: usize, node_timeout_ms: u64) -> RedisCluster {
        let dir = unique_temp_path("mcpgw-cluster");
        std::fs::create_dir_all(&dir).expect("temp dir");
        let mut nodes = Vec::new();
        for _ in 0..masters * 2 {
            let node = spawn(&dir, true, |p| {
                let mut a = server_args(p);
                a.extend(
                    [
                        "--cluster-enabled",
                        "yes",
                        "--cluster-config-file",
                        &format!("nodes-{p}.conf"),
                        "--cluster-node-timeout",
                        &node_timeout_ms.to_string(),
                    ]
                    .map(String::from),
                );
                a
            })
            .await;
            nodes.push(node);
        }
        let cluster = RedisCluster { nodes, dir };
        let addrs: Vec<String> = cluster
            .ports()
            .iter()
            .map(|p| format!("127.0.0.1:{p}"))
            .collect();
        let created = std::process::Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(&addrs)
            .args(["--cluster-replicas", "1", "--cluster-yes"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("redis-cli");
        assert!(created.success(), "redis-cli --cluster create failed");
        let ports = cluster.ports();
        until(
            "the cluster is ok on every node",
            Duration::from_secs(30),
            || {
                ports
                    .iter()
                    .all(|p| cli(*p, &["cluster", "info"]).contains("cluster_state:ok"))
            },
        )
        .await;
        until("every replica is in sync", Duration::from_secs(30), || {
            ports.iter().all(|p| {
                let info = cli(*p, &["info", "replication"]);
                info.contains("role:master") || info.contains("master_link_status:up")
            })
        })
        .await;
        cluster
    }

    fn ports(&self) -> Vec<u16> {
        self.nodes.iter().map(|n| n.port).collect()
    }

    /// The seed URLs (every node).
    pub fn urls(&self) -> Vec<String> {
        self.ports()
            .iter()
            .map(|p| format!("redis://127.0.0.1:{p}"))
            .collect()
    }

    /// Masters (ports) as the live nodes say now.
    pub fn masters(&self) -> Vec<u16> {
        self.nodes
            .iter()
            .filter(|n| n.child.is_some())
            .filter(|n| cli(n.port, &["role"]).starts_with("master"))
            .map(|n| n.port)
            .collect()
    }

    /// SIGKILLs a master; returns its port.
    pub async fn kill_master(&mut self) -> u16 {
        let port = *self.masters().first().expect("a master");
        self.kill(port).await;
        port
    }

    /// SIGKILLs the master that holds `key`; returns its port.
    pub async fn kill_master_of(&mut self, key: &str) -> u16 {
        let port = self
            .masters()
            .into_iter()
            .find(|p| cli(*p, &["exists", key]).trim() == "1")
            .unwrap_or_else(|| panic!("no master holds {key}"));
        self.kill(port).await;
        port
    }

    async fn kill(&mut self, port: u16) {
        let node = self
            .nodes
            .iter_mut()
            .find(|n| n.port == port)
            .expect("node");
        if let Some(mut child) = node.child.take() {
            let _ = child.kill().await;
        }
    }

    /// Waits until a replica took over from the master killed on `killed` (as many live masters
    /// as before) and every live node says the cluster is ok again.
    pub async fn until_failed_over(&self, killed: u16, limit: Duration) {
        let live: Vec<u16> = self
            .nodes
            .iter()
            .filter(|n| n.child.is_some())
            .map(|n| n.port)
            .collect();
        let masters = self.nodes.len() / 2;
        let failed = format!("127.0.0.1:{killed}@");
        until("a replica takes over and the cluster is ok", limit, || {
            self.masters().len() == masters
                && live.iter().all(|p| {
                    cli(*p, &["cluster", "info"]).contains("cluster_state:ok")
                        && cli(*p, &["cluster", "nodes"])
                            .lines()
                            .filter(|l| l.contains(&failed))
                            .all(|l| l.contains("fail"))
                })
        })
        .await;
    }
}

impl Drop for RedisCluster {
    fn drop(&mut self) {
        for node in &mut self.nodes {
            if let Some(child) = node.child.as_mut() {
                let _ = child.start_kill();
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The name the Sentinels know the primary by.
pub const MASTER_NAME: &str = "mcpgw";

/// A primary, a replica and three Sentinels (quorum 2) on loopback.
pub struct RedisSentinel {
    servers: Vec<Node>,
    sentinels: Vec<Node>,
    dir: PathBuf,
}

impl RedisSentinel {
    /// Starts them with `down-after-milliseconds` `down_after_ms`; returns once every Sentinel
    /// knows the primary, the replica and the other Sentinels.
    pub async fn start(down_after_ms: u64) -> RedisSentinel {
        let dir = unique_temp_path("mcpgw-sentinel");
        std::fs::create_dir_all(&dir).expect("temp dir");
        let primary = spawn(&dir, false, server_args).await;
        let primary_port = primary.port;
        let replica = spawn(&dir, false, |p| {
            let mut a = server_args(p);
            a.extend(["--replicaof", "127.0.0.1", &primary_port.to_string()].map(String::from));
            a
        })
        .await;
        until("the replica is in sync", Duration::from_secs(20), || {
            cli(replica.port, &["info", "replication"]).contains("master_link_status:up")
        })
        .await;
        let mut sentinels = Vec::new();
        for i in 0..3 {
            let node = spawn(&dir, false, |p| {
                let conf = dir.join(format!("sentinel-{i}-{p}.conf"));
                let text = format!(
                    "port {p}\nbind 127.0.0.1\ndir {}\nsentinel monitor {MASTER_NAME} 127.0.0.1 {primary_port} 2\n\
                     sentinel down-after-milliseconds {MASTER_NAME} {down_after_ms}\n\
                     sentinel failover-timeout {MASTER_NAME} 10000\nsentinel parallel-syncs {MASTER_NAME} 1\n",
                    dir.display()
                );
                std::fs::write(&conf, text).expect("sentinel.conf");
                vec![conf.display().to_string(), "--sentinel".to_owned()]
            })
            .await;
            sentinels.push(node);
        }
        let set = RedisSentinel {
            servers: vec![primary, replica],
            sentinels,
            dir,
        };
        let ports: Vec<u16> = set.sentinels.iter().map(|n| n.port).collect();
        until(
            "every Sentinel sees the others and the replica",
            Duration::from_secs(30),
            || {
                ports.iter().all(|p| {
                    let master = cli(*p, &["sentinel", "master", MASTER_NAME]);
                    let field = |name: &str| {
                        let mut lines = master.lines();
                        while let Some(l) = lines.next() {
                            if l == name {
                                return lines.next().unwrap_or("").to_owned();
                            }
                        }
                        String::new()
                    };
                    field("num-other-sentinels") == "2" && field("num-slaves") == "1"
                })
            },
        )
        .await;
        set
    }

    /// The Sentinels' URLs.
    pub fn urls(&self) -> Vec<String> {
        self.sentinels
            .iter()
            .map(|n| format!("redis://127.0.0.1:{}", n.port))
            .collect()
    }

    /// The primary's port as the first Sentinel says now.
    pub fn primary(&self) -> u16 {
        let addr = cli(
            self.sentinels[0].port,
            &["sentinel", "get-master-addr-by-name", MASTER_NAME],
        );
        addr.lines()
            .nth(1)
            .and_then(|p| p.trim().parse().ok())
            .expect("the Sentinel names a primary")
    }

    /// SIGKILLs the primary; returns its port.
    pub async fn kill_primary(&mut self) -> u16 {
        let port = self.primary();
        let node = self
            .servers
            .iter_mut()
            .find(|n| n.port == port)
            .expect("the primary is one of ours");
        if let Some(mut child) = node.child.take() {
            let _ = child.kill().await;
        }
        port
    }

    /// Waits until the Sentinels name a primary other than `old`.
    pub async fn until_failed_over(&self, old: u16, limit: Duration) {
        until("the Sentinels promote the replica", limit, || {
            self.primary() != old
        })
        .await;
    }
}

impl Drop for RedisSentinel {
    fn drop(&mut self) {
        for node in self.servers.iter_mut().chain(self.sentinels.iter_mut()) {
            if let Some(child) = node.child.as_mut() {
                let _ = child.start_kill();
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
