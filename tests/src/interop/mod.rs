//! The interop matrix: every real SDK client against every real SDK server, through a gateway
//! route of every mode. A cell that can work must list tools, call a tool that reports progress
//! (notifications over SSE) and end its session; a cell that cannot must be refused with the
//! documented JSON-RPC error at connect time, not hang and not end in a bare HTTP error. The
//! elicit server's cells (issue 17) instead open new sessions that call a tool at once whose
//! server sends `elicitation/create` / `sampling/createMessage` on the session's GET stream, and
//! must get the client's answer back every time. What each cell must do is one table,
//! [`EXPECTED`] (`expected.rs`), against which docs/interoperability.md is checked.

mod expected;

pub use expected::{
    expected, expected_summary, expected_table, Expect, ELICIT_ANSWERS, EXPECTED, SESSION_REQUIRED,
};

use crate::harness::{Gateway, PythonPeer, ReplClient};
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::time::Duration;

/// A server implementation, run as two replicas behind one pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Server {
    /// FastMCP from PyPI `mcp==1.30.0`: legacy sessions only.
    FastMcp1,
    /// MCPServer from `mcp==2.3.0` with `stateless_http=True`.
    Stateless2,
    /// MCPServer from `mcp==2.3.0`, default transport: legacy sessions, and 2026-07-28
    /// requests served statelessly.
    Sessions2,
    /// npm `@modelcontextprotocol/server-everything@2026.8.31`: legacy sessions only.
    Everything,
    /// `tests/peers/node/elicit_server.mjs`, `@modelcontextprotocol/sdk@1.32.2` `McpServer`:
    /// legacy sessions only; its tools `ask` and `sample` send `elicitation/create` and
    /// `sampling/createMessage` with no related request id, so on the session's standalone GET
    /// stream only (dropped when none is open: issue 17).
    Elicit,
}

/// A client implementation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Client {
    /// `mcp==1.30.0` `ClientSession` (2025-11-25 handshake).
    Py1,
    /// `mcp==2.3.0` `Client(mode="auto")`: probes `server/discover`, falls back to initialize.
    Py2Auto,
    /// `mcp==2.3.0` `Client(mode="legacy")`.
    Py2Legacy,
    /// `@modelcontextprotocol/sdk@1.32.2` `Client` over Streamable HTTP.
    Ts,
}

/// A route mode (the gateway's `mode:` values).
pub const MODES: [&str; 3] = ["stateful", "stateless", "auto"];
/// Every server, in table order.
pub const SERVERS: [Server; 5] = [
    Server::FastMcp1,
    Server::Stateless2,
    Server::Sessions2,
    Server::Everything,
    Server::Elicit,
];
/// Every client, in table order.
pub const CLIENTS: [Client; 4] = [Client::Py1, Client::Py2Auto, Client::Py2Legacy, Client::Ts];
/// New sessions per tool (`ask`, `sample`) in an elicit server cell, each calling at once.
pub const ELICIT_SESSIONS: usize = 5;
/// How long the elicit server's tools wait for the client's answer before failing (a request
/// lost on the way shows as a failed call after this long, not as a hang).
const ELICIT_REQUEST_TIMEOUT_MS: u64 = 5000;
/// The elicit server's tools, and what they return when the REPL clients' callbacks answered
/// (`fresh_calls` in tests/peers/repl_client.py and tests/peers/node/repl_client.mjs).
const ELICIT_TOOLS: [(&str, &str); 2] = [("ask", "accept:42"), ("sample", "hello from the client")];

impl Server {
    /// Column heading / row label.
    pub fn label(self) -> &'static str {
        match self {
            Server::FastMcp1 => "FastMCP 1.30.0",
            Server::Stateless2 => "MCPServer 2.3.0 stateless",
            Server::Sessions2 => "MCPServer 2.3.0 default",
            Server::Everything => "server-everything 2026.8.31",
            Server::Elicit => "elicit_server (TS SDK 1.32.2)",
        }
    }

    /// The pool (and route path segment) serving it.
    pub fn slug(self) -> &'static str {
        match self {
            Server::FastMcp1 => "fastmcp1",
            Server::Stateless2 => "stateless2",
            Server::Sessions2 => "sessions2",
            Server::Everything => "everything",
            Server::Elicit => "elicit",
        }
    }

    /// Starts one replica.
    pub async fn start(self, name: &str) -> Replica {
        match self {
            Server::FastMcp1 => Replica::Peer(PythonPeer::legacy_v1(name, 0).await),
            Server::Stateless2 => Replica::Peer(PythonPeer::stateless_v2(name).await),
            Server::Sessions2 => Replica::Peer(PythonPeer::sessions_v2(name).await),
            Server::Everything => Replica::Peer(PythonPeer::everything(name, 0).await),
            Server::Elicit => Replica::elicit().await,
        }
    }

    /// A tool call that reports three progress notifications, and the tool that must be listed.
    fn progress_command(self) -> (Value, &'static str) {
        match self {
            Server::Everything => (
                json!({"op": "progress", "name": "trigger-long-running-operation",
                       "args": {"duration": 0.3, "steps": 3}}),
                "trigger-long-running-operation",
            ),
            _ => (
                json!({"op": "progress", "steps": 3, "delay_ms": 50}),
                "slow_progress",
            ),
        }
    }
}

/// One running server replica, killed on drop.
pub enum Replica {
    /// A peer from the harness.
    Peer(PythonPeer),
    /// `elicit_server.mjs`.
    Node(crate::elicit::ElicitServer),
}

impl Replica {
    /// `elicit_server.mjs` on a free port.
    async fn elicit() -> Replica {
        Replica::Node(crate::elicit::ElicitServer::start(ELICIT_REQUEST_TIMEOUT_MS).await)
    }

    /// `127.0.0.1:port`.
    pub fn addr(&self) -> String {
        match self {
            Replica::Peer(p) => p.addr(),
            Replica::Node(server) => server.addr(),
        }
    }
}

impl Client {
    /// Column heading.
    pub fn label(self) -> &'static str {
        match self {
            Client::Py1 => "Python 1.30.0 ClientSession",
            Client::Py2Auto => "Python 2.3.0 Client auto",
            Client::Py2Legacy => "Python 2.3.0 Client legacy",
            Client::Ts => "TypeScript SDK 1.32.2",
        }
    }

    async fn connect(self, url: &str) -> Result<ReplClient, Value> {
        match self {
            Client::Py1 => ReplClient::try_connect("mcp1", url, None).await,
            Client::Py2Auto => ReplClient::try_connect("mcp2", url, Some("auto")).await,
            Client::Py2Legacy => ReplClient::try_connect("mcp2", url, Some("legacy")).await,
            Client::Ts => ReplClient::try_connect_ts(url).await,
        }
    }
}

/// What a cell did.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Listed, called (with progress, or answering the server's requests) and ended its
    /// session(s).
    Worked {
        /// The negotiated protocol version (tells the era used).
        protocol: String,
        /// Progress notifications received.
        progress: usize,
        /// Calls whose server request the client answered (the elicit server's cells).
        answered: usize,
    },
    /// Refused at connect with a JSON-RPC error.
    Refused {
        /// Its code.
        code: i64,
        /// Its message.
        message: String,
    },
    /// Anything else: what broke.
    Broken(String),
}

impl Outcome {
    /// Whether it is what `expect` asks for.
    pub fn meets(&self, expect: Expect) -> bool {
        match (self, expect) {
            (
                Outcome::Worked {
                    protocol, progress, ..
                },
                Expect::Works(want),
            ) => protocol == want && *progress >= 3,
            (
                Outcome::Worked {
                    protocol, answered, ..
                },
                Expect::Answers(version, want),
            ) => protocol == version && *answered == want,
            (Outcome::Refused { code, .. }, Expect::Refused(want)) => *code == want,
            _ => false,
        }
    }

    fn short(&self) -> String {
        match self {
            Outcome::Worked {
                protocol, answered, ..
            } if *answered > 0 => format!("✓ {protocol} ({answered} answered)"),
            Outcome::Worked { protocol, .. } => format!("✓ {protocol}"),
            Outcome::Refused { code, .. } => format!("{code}"),
            Outcome::Broken(why) => format!("✗ {why}"),
        }
    }
}

/// Runs one cell: connect, list, call with progress, close; bounded so a hang is a failure.
pub async fn run_cell(client: Client, server: Server, url: &str) -> Outcome {
    match tokio::time::timeout(Duration::from_secs(60), cell(client, server, url)).await {
        Ok(outcome) => outcome,
        Err(_) => Outcome::Broken("hung for 60 s".into()),
    }
}

async fn cell(client: Client, server: Server, url: &str) -> Outcome {
    let mut c = match client.connect(url).await {
        Ok(c) => c,
        Err(hello) => {
            return match hello["code"].as_i64() {
                Some(code) => Outcome::Refused {
                    code,
                    message: hello["message"].as_str().unwrap_or_default().to_owned(),
                },
                None => Outcome::Broken(format!("connect: {}", hello["error"])),
            }
        }
    };
    let protocol = c.hello["protocol"].as_str().unwrap_or("?").to_owned();
    if server == Server::Elicit {
        return elicit_cell(c, protocol).await;
    }
    let (progress_cmd, tool) = server.progress_command();
    let listed = c.cmd(json!({"op": "list"})).await;
    let has_tool = listed["tools"]
        .as_array()
        .is_some_and(|t| t.iter().any(|n| n == tool));
    if listed["ok"] != true || !has_tool {
        return Outcome::Broken(format!("list: {listed}"));
    }
    let called = c.cmd(progress_cmd).await;
    if called["ok"] != true || called["isError"] != false {
        return Outcome::Broken(format!("call: {called}"));
    }
    let progress = called["progress_times"].as_array().map_or(0, Vec::len);
    if !c.close().await {
        return Outcome::Broken("close failed".into());
    }
    Outcome::Worked {
        protocol,
        progress,
        answered: 0,
    }
}

/// The elicit server's cell: list, then per tool [`ELICIT_SESSIONS`] new sessions, each calling
/// the tool as soon as it is connected (the client's GET and its call race to the server), and
/// the result must carry the client's answer; then close the first session.
async fn elicit_cell(mut c: ReplClient, protocol: String) -> Outcome {
    let listed = c.cmd(json!({"op": "list"})).await;
    let has_tools = ELICIT_TOOLS.iter().all(|(tool, _)| {
        listed["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|n| n == tool))
    });
    if listed["ok"] != true || !has_tools {
        return Outcome::Broken(format!("list: {listed}"));
    }
    let mut answered = 0;
    let mut failures = Vec::new();
    for (tool, answer) in ELICIT_TOOLS {
        let got = c
            .cmd(json!({"op": "fresh_calls", "name": tool, "sessions": ELICIT_SESSIONS}))
            .await;
        if got["ok"] != true {
            failures.push(format!("{tool}: {got}"));
            continue;
        }
        let texts = got["texts"].as_array().cloned().unwrap_or_default();
        for (i, text) in texts.iter().enumerate() {
            if text == answer && got["isError"][i] == false {
                answered += 1;
            } else {
                failures.push(format!("{tool} #{i}: {text} after {} ms", got["ms"][i]));
            }
        }
    }
    if !c.close().await {
        failures.push("close failed".into());
    }
    if !failures.is_empty() {
        return Outcome::Broken(format!("{answered} answered; {}", failures.join("; ")));
    }
    Outcome::Worked {
        protocol,
        progress: 0,
        answered,
    }
}

/// The gateway config: one pool per server (its two replicas), one route per server and mode
/// at `/<server>/<mode>`.
pub fn gateway_config(pools: &[(Server, Vec<String>)]) -> String {
    let mut yaml = String::from("pools:\n");
    for (server, addrs) in pools {
        let _ = writeln!(
            yaml,
            "  {}: {{ backends: [{}] }}",
            server.slug(),
            addrs.join(", ")
        );
    }
    yaml.push_str("routes:\n");
    for (server, _) in pools {
        for mode in MODES {
            let _ = write!(
                yaml,
                "  - path: /{slug}/{mode}\n    mode: {mode}\n    pool: {slug}\n    upstream-path: /mcp\n",
                slug = server.slug()
            );
        }
    }
    yaml
}

/// One row of results: a server behind a route mode, each client's outcome.
pub type Row = (Server, &'static str, Vec<(Client, Outcome)>);

/// The matrix as a Markdown table in the doc's layout (a failed expectation is marked
/// `MISMATCH`).
pub fn table(rows: &[Row]) -> String {
    expected::markdown(rows.iter().map(|(server, mode, cells)| {
        let cells = cells
            .iter()
            .map(|(client, outcome)| {
                let mark = if outcome.meets(expected(*client, *server, mode)) {
                    ""
                } else {
                    " MISMATCH"
                };
                format!("{}{mark}", outcome.short())
            })
            .collect();
        (*server, *mode, cells)
    }))
}

/// Runs the whole matrix through `gw` (routes from [`gateway_config`]), a few cells at a time.
pub async fn run_matrix(gw: &Gateway) -> Vec<Row> {
    let limit = std::sync::Arc::new(tokio::sync::Semaphore::new(3));
    let mut tasks = Vec::new();
    for server in SERVERS {
        for mode in MODES {
            for client in CLIENTS {
                let url = gw.url(&format!("/{}/{mode}", server.slug()));
                let limit = limit.clone();
                tasks.push(tokio::spawn(async move {
                    let _slot = limit.acquire_owned().await.expect("semaphore");
                    run_cell(client, server, &url).await
                }));
            }
        }
    }
    let mut results = tasks.into_iter();
    let mut rows = Vec::new();
    for server in SERVERS {
        for mode in MODES {
            let mut cells = Vec::new();
            for client in CLIENTS {
                let task = results.next().expect("one task per cell");
                cells.push((client, task.await.expect("cell task")));
            }
            rows.push((server, mode, cells));
        }
    }
    rows
}
