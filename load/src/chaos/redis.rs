//! The chaos run's Redis Cluster: Debian's `redis-server` on loopback, `masters` masters with
//! one replica each, joined by `redis-cli --cluster create` (as tests/src/redis_ha.rs does for
//! the store failover tests). A master can be SIGKILLed and its node started again on the same
//! port with the same `nodes-PORT.conf`, once a replica has taken over: it rejoins as a replica.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{Duration, Instant};
use tokio::process::{Child, Command};

/// Ports tried in 20000..45000, so a node's bus port (+10000) stays under the ephemeral range.
static NEXT: AtomicU16 = AtomicU16::new(0);

fn candidate_port() -> u16 {
    if NEXT.load(Ordering::Relaxed) == 0 {
        let seed = std::process::id() as u64 * 7919
            + std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64);
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

/// One cluster node.
struct Node {
    port: u16,
    child: Option<Child>,
}

/// A Redis Cluster on loopback; every node is SIGKILLed when dropped.
pub struct Cluster {
    nodes: Vec<Node>,
    dir: PathBuf,
    node_timeout_ms: u64,
}

fn spawn(dir: &Path, port: u16, node_timeout_ms: u64) -> Child {
    let conf = format!("nodes-{port}.conf");
    let timeout = node_timeout_ms.to_string();
    let port_s = port.to_string();
    Command::new("redis-server")
        .args(["--port", &port_s, "--bind", "127.0.0.1", "--save", ""])
        .args(["--appendonly", "no", "--cluster-enabled", "yes"])
        .args(["--cluster-config-file", &conf])
        .args(["--cluster-node-timeout", &timeout])
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("redis-server (Debian's redis-server package)")
}

/// `redis-cli -p PORT args...`, its stdout.
pub async fn cli(port: u16, args: &[&str]) -> String {
    let out = Command::new("redis-cli")
        .args(["-p", &port.to_string()])
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .await;
    out.map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default()
}

impl Cluster {
    /// Starts `masters` × 2 nodes in `dir` and joins them; returns once every node says the
    /// cluster is ok and every replica is in sync.
    pub async fn start(
        dir: &Path,
        masters: usize,
        node_timeout_ms: u64,
    ) -> Result<Cluster, String> {
        std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
        let mut nodes = Vec::new();
        while nodes.len() < masters * 2 {
            let port = candidate_port();
            if !bindable(port) || !bindable(port + 10000) {
                continue;
            }
            let mut child = spawn(dir, port, node_timeout_ms);
            let started = Instant::now();
            let mut up = false;
            while !up && started.elapsed() < Duration::from_secs(10) {
                tokio::time::sleep(Duration::from_millis(50)).await;
                up = cli(port, &["ping"]).await.trim() == "PONG";
            }
            if !up {
                let _ = child.kill().await;
                continue;
            }
            nodes.push(Node {
                port,
                child: Some(child),
            });
        }
        let cluster = Cluster {
            nodes,
            dir: dir.to_owned(),
            node_timeout_ms,
        };
        let addrs: Vec<String> = cluster
            .ports()
            .iter()
            .map(|p| format!("127.0.0.1:{p}"))
            .collect();
        let created = Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(&addrs)
            .args(["--cluster-replicas", "1", "--cluster-yes"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .await
            .map_err(|e| format!("redis-cli: {e}"))?;
        if !created.success() {
            return Err("redis-cli --cluster create failed".into());
        }
        if !cluster.until_healthy(Duration::from_secs(30)).await {
            return Err("the cluster did not become ok with every replica in sync".into());
        }
        Ok(cluster)
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

    /// Process ids of the live nodes.
    pub fn pids(&self) -> Vec<u32> {
        self.nodes
            .iter()
            .filter_map(|n| n.child.as_ref()?.id())
            .collect()
    }

    /// Ports of the live nodes that say they are masters now.
    pub async fn masters(&self) -> Vec<u16> {
        let mut out = Vec::new();
        for n in self.nodes.iter().filter(|n| n.child.is_some()) {
            if cli(n.port, &["role"]).await.starts_with("master") {
                out.push(n.port);
            }
        }
        out
    }

    /// Every node live, the cluster ok on each, every replica's link up, and as many masters
    /// as at the start, within `limit`.
    pub async fn until_healthy(&self, limit: Duration) -> bool {
        let started = Instant::now();
        while started.elapsed() < limit {
            if self.healthy().await {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        false
    }

    async fn healthy(&self) -> bool {
        for p in self.ports() {
            if !cli(p, &["cluster", "info"])
                .await
                .contains("cluster_state:ok")
            {
                return false;
            }
            let info = cli(p, &["info", "replication"]).await;
            if !(info.contains("role:master") || info.contains("master_link_status:up")) {
                return false;
            }
        }
        self.masters().await.len() == self.nodes.len() / 2
    }

    /// As many live masters as at the start and the cluster ok on every live node.
    async fn taken_over(&self) -> bool {
        if self.masters().await.len() != self.nodes.len() / 2 {
            return false;
        }
        for n in self.nodes.iter().filter(|n| n.child.is_some()) {
            if !cli(n.port, &["cluster", "info"])
                .await
                .contains("cluster_state:ok")
            {
                return false;
            }
        }
        true
    }

    /// SIGKILLs master `pick % masters`; its port and the future of its exit.
    pub async fn kill_master(&mut self, pick: usize) -> Option<u16> {
        let masters = self.masters().await;
        let port = *masters.get(pick % masters.len().max(1))?;
        let node = self.nodes.iter_mut().find(|n| n.port == port)?;
        if let Some(mut c) = node.child.take() {
            let _ = c.kill().await;
        }
        Some(port)
    }

    /// Once a replica has taken over from the master killed on `port` (as many live masters
    /// as at the start, the cluster ok on the live nodes; at most `limit`), starts its node
    /// again: it rejoins as a replica. Returns how long the takeover took (`None`: not within
    /// `limit`, the node is started anyway).
    pub async fn rejoin(&mut self, port: u16, limit: Duration) -> Option<Duration> {
        let started = Instant::now();
        let mut took = None;
        while started.elapsed() < limit {
            if self.taken_over().await {
                took = Some(started.elapsed());
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let child = spawn(&self.dir, port, self.node_timeout_ms);
        if let Some(node) = self.nodes.iter_mut().find(|n| n.port == port) {
            node.child = Some(child);
        }
        took
    }
}

impl Cluster {
    /// SIGKILLs every node.
    pub fn stop(&mut self) {
        for node in &mut self.nodes {
            if let Some(child) = node.child.as_mut() {
                let _ = child.start_kill();
            }
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
