//! The Redis store against real redis-server processes: one server, a three-master cluster,
//! an outage and its recovery.
use super::*;
use crate::session::store::suite;
use std::sync::Arc;

/// A `redis-server` of Debian's on a free loopback port, stopped when dropped.
pub(crate) struct RedisServer {
    child: std::process::Child,
    /// `redis://127.0.0.1:PORT/0`
    pub(crate) url: String,
}

impl RedisServer {
    pub(crate) async fn start() -> RedisServer {
        Self::start_on(None).await
    }

    /// On `port` (a restart), or on a free one.
    pub(crate) async fn start_on(port: Option<u16>) -> RedisServer {
        for _ in 0..8 {
            let port = port.unwrap_or_else(|| {
                std::net::TcpListener::bind("127.0.0.1:0")
                    .and_then(|l| l.local_addr())
                    .map(|a| a.port())
                    .expect("a free port")
            });
            let child = std::process::Command::new("redis-server")
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args(["--save", "", "--appendonly", "no"])
                .stdout(std::process::Stdio::null())
                .spawn()
                .expect("redis-server (Debian's redis-server package) must be installed");
            let mut server = RedisServer {
                child,
                url: format!("redis://127.0.0.1:{port}/0"),
            };
            for _ in 0..100 {
                if let Ok(Some(_)) = server.child.try_wait() {
                    break; // the port was taken: try another
                }
                let probe = redis::Client::open(server.url.as_str()).unwrap();
                if let Ok(mut c) = probe.get_multiplexed_async_connection().await {
                    let pong: Result<String, _> = redis::cmd("PING").query_async(&mut c).await;
                    if pong.is_ok() {
                        return server;
                    }
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        panic!("redis-server did not start");
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A config for one server, each store of a suite run under its own key prefix.
fn numbered(url: &str, name: &str, n: &std::sync::atomic::AtomicUsize) -> RedisConfig {
    RedisConfig {
        urls: vec![url.to_owned()],
        cluster: false,
        sentinel: None,
        key_prefix: format!("{name}{}:", n.fetch_add(1, Ordering::Relaxed)),
    }
}

#[tokio::test]
async fn the_redis_store_passes_the_store_suite() {
    let server = RedisServer::start().await;
    let n = std::sync::atomic::AtomicUsize::new(0);
    suite::run_all(|ttl| Arc::new(RedisStore::new(numbered(&server.url, "suite", &n), ttl))).await;
}

/// Three redis-server masters on loopback joined into a Redis Cluster, stopped when dropped.
struct Cluster {
    nodes: Vec<std::process::Child>,
    ports: Vec<u16>,
    dir: std::path::PathBuf,
}

impl Cluster {
    async fn start() -> Cluster {
        let dir = std::env::temp_dir().join(format!("mcpgw-cluster-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // the cluster bus listens on port + 10000: both must be free
        let free = |p: u16| std::net::TcpListener::bind(("127.0.0.1", p)).is_ok();
        let mut ports = Vec::new();
        let mut candidate = 20000 + (std::process::id() % 5000) as u16;
        while ports.len() < 3 {
            candidate += 1;
            if free(candidate) && free(candidate + 10000) {
                ports.push(candidate);
            }
        }
        let nodes = ports
            .iter()
            .map(|p| {
                std::process::Command::new("redis-server")
                    .args(["--port", &p.to_string(), "--bind", "127.0.0.1"])
                    .args([
                        "--cluster-enabled",
                        "yes",
                        "--save",
                        "",
                        "--appendonly",
                        "no",
                    ])
                    .args(["--cluster-config-file", &format!("nodes-{p}.conf")])
                    .arg("--dir")
                    .arg(&dir)
                    .stdout(std::process::Stdio::null())
                    .spawn()
                    .expect("redis-server")
            })
            .collect();
        let cluster = Cluster { nodes, ports, dir };
        let addrs: Vec<String> = cluster
            .ports
            .iter()
            .map(|p| format!("127.0.0.1:{p}"))
            .collect();
        for _ in 0..100 {
            let up = cluster
                .ports
                .iter()
                .all(|p| std::net::TcpStream::connect(("127.0.0.1", *p)).is_ok());
            if up {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let created = std::process::Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(&addrs)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .stdout(std::process::Stdio::null())
            .status()
            .expect("redis-cli");
        assert!(created.success(), "redis-cli --cluster create failed");
        for _ in 0..200 {
            let ok = cluster.ports.iter().all(|p| {
                std::process::Command::new("redis-cli")
                    .args(["-p", &p.to_string(), "cluster", "info"])
                    .output()
                    .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("cluster_state:ok"))
            });
            if ok {
                return cluster;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the cluster never became ok");
    }

    fn urls(&self) -> Vec<String> {
        self.ports
            .iter()
            .map(|p| format!("redis://127.0.0.1:{p}"))
            .collect()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for node in &mut self.nodes {
            let _ = node.kill();
            let _ = node.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[tokio::test]
async fn the_redis_store_passes_the_store_suite_on_a_three_master_cluster() {
    let cluster = Cluster::start().await;
    // every node agrees the cluster is up; the client's first contact (slot map) may still
    // take a moment
    let probe = RedisStore::new(
        RedisConfig {
            urls: cluster.urls(),
            cluster: true,
            sentinel: None,
            key_prefix: "probe:".into(),
        },
        Ttl {
            idle: Duration::from_secs(1),
            tombstone: Duration::from_secs(1),
        },
    );
    let mut ready = false;
    for _ in 0..50 {
        if probe.get("x").await.is_ok() {
            ready = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(ready, "the cluster answers");
    let n = std::sync::atomic::AtomicUsize::new(0);
    suite::run_all(|ttl| {
        let config = RedisConfig {
            urls: cluster.urls(),
            cluster: true,
            sentinel: None,
            key_prefix: format!("cluster{}:", n.fetch_add(1, Ordering::Relaxed)),
        };
        Arc::new(RedisStore::new(config, ttl))
    })
    .await;
}

#[tokio::test]
async fn a_store_that_is_down_answers_with_an_error_not_a_panic_and_recovers() {
    let mut server = RedisServer::start().await;
    let config = RedisConfig {
        urls: vec![server.url.clone()],
        cluster: false,
        sentinel: None,
        key_prefix: "down:".into(),
    };
    let ttl = Ttl {
        idle: Duration::from_secs(60),
        tombstone: Duration::from_secs(60),
    };
    let store = RedisStore::new(config, ttl);
    store.ping().await.unwrap();
    let _ = server.child.kill();
    let _ = server.child.wait();
    assert!(store.get("x").await.is_err());
    assert!(store.ping().await.is_err());
    let port = server
        .url
        .rsplit(':')
        .next()
        .and_then(|p| p.split('/').next());
    let port = port.and_then(|p| p.parse().ok());
    let _restarted = RedisServer::start_on(port).await;
    let mut recovered = false;
    for _ in 0..50 {
        if store.ping().await.is_ok() {
            recovered = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(recovered, "the store reconnects by itself");
    assert_eq!(store.get("x").await.unwrap(), Lookup::Unknown);
}

#[tokio::test]
async fn the_redis_store_behind_the_replica_cache_passes_the_store_suite() {
    let server = RedisServer::start().await;
    let n = std::sync::atomic::AtomicUsize::new(0);
    suite::run_all(|ttl| {
        let config = RedisConfig {
            urls: vec![server.url.clone()],
            cluster: false,
            sentinel: None,
            key_prefix: format!("cached{}:", n.fetch_add(1, Ordering::Relaxed)),
        };
        Arc::new(crate::session::store::Cached::new(Arc::new(
            RedisStore::new(config, ttl),
        )))
    })
    .await;
}
