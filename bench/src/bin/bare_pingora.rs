//! `bare-pingora`: the floor pingora sets. A `ProxyHttp` that only picks the (single) peer and
//! sets `Host`, run with the same `ServerConf` as the gateway (gateway/src/server.rs), so that
//! `mcp-load suite --only overhead` can tell the framework's cost from the gateway's.
//!
//! ```text
//! bare-pingora --listen 127.0.0.1:P --upstream 127.0.0.1:Q [--threads 1]
//!              [--work-stealing true|false] [--listener-tasks N] [--keepalive-pool N]
//!              [--idle-timeout-s N]
//! ```
//! The extra knobs exist for the tuning experiments; their defaults are the gateway's settings.

use async_trait::async_trait;
use pingora::prelude::*;
use pingora::proxy::http_proxy_service_with_name;
use pingora::server::configuration::ServerConf;
use std::net::SocketAddr;
use std::time::Duration;

struct Bare {
    upstream: SocketAddr,
    host: String,
    idle_timeout: Option<Duration>,
}

#[async_trait]
impl ProxyHttp for Bare {
    type CTX = ();
    fn new_ctx(&self) {}

    async fn upstream_peer(&self, _s: &mut Session, _c: &mut ()) -> Result<Box<HttpPeer>> {
        let mut peer = HttpPeer::new(self.upstream, false, String::new());
        peer.options.idle_timeout = self.idle_timeout;
        Ok(Box::new(peer))
    }

    async fn upstream_request_filter(
        &self,
        _s: &mut Session,
        upstream: &mut RequestHeader,
        _c: &mut (),
    ) -> Result<()> {
        upstream.insert_header("host", self.host.as_str())
    }
}

struct Args {
    listen: String,
    upstream: SocketAddr,
    threads: usize,
    work_stealing: bool,
    listener_tasks: usize,
    keepalive_pool: usize,
    idle_timeout: Option<Duration>,
}

fn usage() -> ! {
    eprintln!(
        "usage: bare-pingora --listen ADDR --upstream ADDR [--threads N] \
         [--work-stealing true|false] [--listener-tasks N] [--keepalive-pool N] \
         [--idle-timeout-s N (0 = none)]"
    );
    std::process::exit(2)
}

fn parse_args() -> Args {
    let mut listen = None;
    let mut upstream = None;
    // Defaults mirror gateway/src/server.rs and gateway/src/upstream/mod.rs.
    let mut a = Args {
        listen: String::new(),
        upstream: "127.0.0.1:1".parse().unwrap(),
        threads: 1,
        work_stealing: ServerConf::default().work_stealing,
        listener_tasks: ServerConf::default().listener_tasks_per_fd,
        keepalive_pool: 1024,
        idle_timeout: Some(Duration::from_secs(60)),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().unwrap_or_else(|| usage());
        let num = || value.parse::<usize>().unwrap_or_else(|_| usage());
        match flag.as_str() {
            "--listen" => listen = Some(value.clone()),
            "--upstream" => upstream = Some(value.parse().unwrap_or_else(|_| usage())),
            "--threads" => a.threads = num(),
            "--work-stealing" => a.work_stealing = value.parse().unwrap_or_else(|_| usage()),
            "--listener-tasks" => a.listener_tasks = num(),
            "--keepalive-pool" => a.keepalive_pool = num(),
            "--idle-timeout-s" => {
                a.idle_timeout = Some(num())
                    .filter(|s| *s > 0)
                    .map(|s| Duration::from_secs(s as u64))
            }
            _ => usage(),
        }
    }
    a.listen = listen.unwrap_or_else(|| usage());
    a.upstream = upstream.unwrap_or_else(|| usage());
    a
}

fn main() {
    let a = parse_args();
    // Same settings as the gateway's server::build.
    let conf = ServerConf {
        threads: a.threads,
        work_stealing: a.work_stealing,
        listener_tasks_per_fd: a.listener_tasks,
        upstream_keepalive_pool_size: a.keepalive_pool,
        grace_period_seconds: Some(0),
        graceful_shutdown_timeout_seconds: Some(5),
        ..ServerConf::default()
    };
    let mut server = Server::new_with_opt_and_conf(None, conf);
    server.bootstrap();
    let bare = Bare {
        upstream: a.upstream,
        host: a.upstream.to_string(),
        idle_timeout: a.idle_timeout,
    };
    let mut proxy = http_proxy_service_with_name(&server.configuration, bare, "bare-pingora");
    proxy.add_tcp(&a.listen);
    proxy.threads = Some(a.threads);
    server.add_service(proxy);
    server.run_forever()
}

/// The allocator follows the gateway's (the default feature; see bench/Cargo.toml).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
