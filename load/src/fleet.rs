//! What the fault runs (`soak`, `rollout`, `chaos`) share: an mcp-gateway process started from
//! a config file that can be SIGKILLed and started again on the same ports, its RSS and open
//! descriptors read from /proc, GETs on its admin listener, and a backend of a pool SIGKILLed
//! and replaced at its address a little later (a pod restarted in place).

use crate::mcp::Dialect;
use crate::run::LoadConfig;
use crate::suite::procs::{Backend, BackendKind, Programs};
use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::process::{Child, Command};

/// One mcp-gateway process (a replica): its config file and listener stay, the process may
/// be killed and started again.
pub struct GatewayProc {
    bin: PathBuf,
    config: PathBuf,
    log: String,
    /// Where clients connect.
    pub addr: SocketAddr,
    /// The admin listener.
    pub admin: SocketAddr,
    child: Option<Child>,
    /// Where its stderr goes (`None`: inherited).
    stderr: Option<PathBuf>,
}

impl GatewayProc {
    /// Starts `bin --config config` with `RUST_LOG=log` and waits until `addr` accepts; its
    /// stderr is appended to `stderr` when given.
    pub async fn start(
        bin: &Path,
        config: &Path,
        log: &str,
        addr: SocketAddr,
        admin: SocketAddr,
        stderr: Option<PathBuf>,
    ) -> GatewayProc {
        let mut g = GatewayProc {
            bin: bin.to_owned(),
            config: config.to_owned(),
            log: log.to_owned(),
            addr,
            admin,
            child: None,
            stderr,
        };
        g.restart().await;
        g
    }

    /// Starts the process (again), waiting until it listens.
    pub async fn restart(&mut self) {
        let err = match &self.stderr {
            Some(p) => std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .map(Stdio::from)
                .unwrap_or_else(|_| Stdio::null()),
            None => Stdio::inherit(),
        };
        let child = Command::new(&self.bin)
            .arg("--config")
            .arg(&self.config)
            .env("RUST_LOG", &self.log)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(err)
            .kill_on_drop(true)
            .spawn()
            .expect("start mcp-gateway");
        self.child = Some(child);
        wait_listening(self.addr).await;
    }

    /// SIGKILL; the future completes once the process has exited.
    pub fn kill(&mut self) -> impl Future<Output = ()> + Send + 'static {
        let child = self.child.take();
        async move {
            if let Some(mut c) = child {
                let _ = c.kill().await;
            }
        }
    }

    /// Its process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref()?.id()
    }
}

/// Waits (up to 10 s) until `addr` accepts connections.
pub async fn wait_listening(addr: SocketAddr) {
    for _ in 0..400 {
        if tokio::net::TcpStream::connect(addr).await.is_ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Resident memory (KiB) and open file descriptors of a process, from /proc.
pub fn rss_and_fds(pid: u32) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let rss = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count() as u64;
    Some((rss, fds))
}

/// `GET path` on an admin listener (no token on loopback without `admin-token`): the body.
pub async fn admin_get(admin: SocketAddr, path: &str) -> Option<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(admin).await.ok()?;
    let req = format!("GET {path} HTTP/1.1\r\nHost: {admin}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).await.ok()?;
    Some(text.split_once("\r\n\r\n")?.1.to_owned())
}

/// The sum of `mcpgw_sessions_active` on an admin listener.
pub async fn sessions_held(admin: SocketAddr) -> Option<f64> {
    let text = admin_get(admin, "/metrics").await?;
    Some(
        text.lines()
            .filter(|l| l.starts_with("mcpgw_sessions_active{"))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum(),
    )
}

/// A pool of backend processes shared with the events that kill them.
pub type Pool = Arc<Mutex<Vec<Backend>>>;

/// SIGKILLs backend `i` of `pool` and, `after` its exit, starts `kind` named `name` at the
/// same address in its place; completes once the kill took effect (the new backend comes up in
/// the background).
pub fn kill_and_replace(
    pool: &Pool,
    i: usize,
    programs: &Programs,
    replacement: Option<(BackendKind, String)>,
    after: Duration,
) -> Pin<Box<dyn Future<Output = ()> + Send>> {
    let (kill, spec) = {
        let mut backends = pool.lock().expect("backends");
        (backends[i].kill(), backends[i].restart_spec())
    };
    let (kind, name) = replacement.unwrap_or((spec.0, spec.1));
    let (pool, programs, port) = (pool.clone(), programs.clone(), spec.2);
    Box::pin(async move {
        kill.await;
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            let b = Backend::start(&programs, kind, &name, port).await;
            pool.lock().expect("backends")[i] = b;
        });
    })
}

/// The open-loop `whoami` load every fault run offers: `rate` requests per second for
/// `duration` on kept-alive connections (up to 256 in flight, 10 s timeout).
pub fn fault_load(
    target: SocketAddr,
    path: &str,
    dialect: Dialect,
    rate: f64,
    sessions: usize,
    duration: Duration,
) -> LoadConfig {
    LoadConfig {
        target,
        path: path.into(),
        dialect,
        rate,
        duration,
        concurrency: 256,
        sessions,
        reuse: true,
        tool: "whoami".into(),
        timeout: Duration::from_secs(10),
        progress: false,
        bearer: None,
    }
}
