//! The Rust SDK peer with the Tasks extension (`tasks-server`, `src/bin/tasks_server.rs`: rmcp
//! 3.11, 2026-07-28, stateless, SEP-2663 `io.modelcontextprotocol/tasks`), and the raw
//! 2026-07-28 requests that drive it: bodies with `params._meta` (protocol version, client info
//! and capabilities, the tasks extension declared or not) and the `MCP-Protocol-Version`,
//! `Mcp-Method` and `Mcp-Name` headers (`Mcp-Name` = the tool for `tools/call`, the task id for
//! `tasks/*`). `tests/peers/README.md` documents the server and its exact answers.
//!
//! ```ignore
//! let peer = TasksPeer::start("pod-a").await;
//! let handle = tasks::tools_call("/mcp", 1, "slow_task", json!({"polls": 2}), true).send(peer.addr()).await;
//! let task = tasks::task_id(&handle);
//! let got = tasks::tasks_get("/mcp", 2, &task).send(peer.addr()).await;
//! assert_eq!(tasks::result(&got)["status"], "working");
//! ```

use crate::client::{Request, Response};
use crate::harness::workspace_bin;
use crate::ports::prove_ownership;
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// The Tasks extension's id, as clients declare it in `clientCapabilities.extensions` and
/// servers in `capabilities.extensions`.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// The protocol version these requests speak.
pub const PROTOCOL_VERSION: &str = "2026-07-28";

/// The response header naming the `tasks-server` process that answered (`--name`); the only
/// thing the binary adds to rmcp's answers.
pub const PEER_HEADER: &str = "x-tasks-server";

/// A `tasks-server` process on 127.0.0.1, killed on drop.
pub struct TasksPeer {
    /// Its port on 127.0.0.1.
    pub port: u16,
    /// Its `--name` (the text of `whoami`, the prefix of its tools' results).
    pub name: String,
    child: Child,
}

impl TasksPeer {
    /// The binary beside the test binaries (`target/<profile>/tasks-server`; cargo builds it
    /// for this package's integration tests).
    pub fn bin() -> PathBuf {
        workspace_bin("tasks-server")
    }

    /// A server named `name` on a free port, its tasks in its own memory (rmcp's `TaskManager`).
    pub async fn start(name: &str) -> TasksPeer {
        Self::start_with(Self::bin(), name, &[]).await
    }

    /// A server named `name` on a free port, keeping its tasks in `dir`, shared with every other
    /// one started on `dir` (any of them answers for any task).
    pub async fn shared(name: &str, dir: &Path) -> TasksPeer {
        let dir = dir.to_str().expect("a UTF-8 path");
        Self::start_with(Self::bin(), name, &["--shared-state", dir]).await
    }

    /// Starts `bin` (`env!("CARGO_BIN_EXE_tasks-server")` from an integration test, or
    /// [`TasksPeer::bin`]) with `--name name` and more arguments (`--port P` for a fixed port,
    /// else `--port 0`; `--ttl-ms N`, `--shared-state DIR`, `--json-response`,
    /// `--poll-interval-ms N`, `--serve PATH=NAME` for one more server at PATH); waits for `READY <port>` and proves the port is its own. A fixed
    /// port still held by someone else is tried again for a while.
    pub async fn start_with(bin: impl AsRef<Path>, name: &str, args: &[&str]) -> TasksPeer {
        let fixed = args.contains(&"--port");
        let mut failures = Vec::new();
        for _ in 0..if fixed { 40 } else { 8 } {
            match Self::try_start(bin.as_ref(), name, args).await {
                Ok(peer) => return peer,
                Err(why) => failures.push(why),
            }
            if fixed {
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        }
        panic!("tasks-server {name} {args:?} never got a port of its own: {failures:#?}");
    }

    async fn try_start(bin: &Path, name: &str, args: &[&str]) -> Result<TasksPeer, String> {
        let mut command = Command::new(bin);
        command.args(["--name", name]).args(args);
        if !args.contains(&"--port") {
            command.args(["--port", "0"]);
        }
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {}: {e}", bin.display()));
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let ready = tokio::time::timeout(Duration::from_secs(30), async {
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(p) = line.strip_prefix("READY ") {
                    return p.trim().parse::<u16>().ok();
                }
            }
            None
        })
        .await
        .unwrap_or_else(|_| panic!("tasks-server {name} did not print READY within 30 s"));
        let Some(port) = ready else {
            let status = child.wait().await.map(|s| s.to_string());
            return Err(format!("exited before READY: {status:?}"));
        };
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        match prove_ownership(&mut child, &[port], "tasks-server", Duration::from_secs(10)).await {
            Ok(()) => Ok(TasksPeer {
                port,
                name: name.to_owned(),
                child,
            }),
            Err(why) => {
                let _ = child.kill().await;
                Err(format!("port {port}: {why}"))
            }
        }
    }

    /// `127.0.0.1:port`.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// `http://127.0.0.1:port/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr())
    }

    /// Sends SIGTERM and waits for the exit (status 143, at once).
    pub async fn terminate(&mut self) -> std::process::ExitStatus {
        if let Some(pid) = self.child.id() {
            let _ = std::process::Command::new("kill")
                .args(["-TERM", &pid.to_string()])
                .status();
        }
        self.child.wait().await.expect("wait for tasks-server")
    }

    /// Kills the process (SIGKILL) and waits for it: a pod gone without a word.
    pub async fn kill(&mut self) {
        let _ = self.child.kill().await;
    }
}

/// The `_meta` of a 2026-07-28 request: protocol version, client info and capabilities, the
/// capabilities declaring the tasks extension when `tasks`.
pub fn meta(tasks: bool) -> Value {
    let capabilities = if tasks {
        json!({"extensions": {TASKS_EXTENSION: {}}})
    } else {
        json!({})
    };
    json!({
        "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
        "io.modelcontextprotocol/clientInfo": {"name": "mcp-gateway-tests", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    })
}

/// A 2026-07-28 request to `path`: the JSON-RPC body with `params` (an object) plus
/// [`meta`]`(tasks)` as `params._meta`, and the headers `MCP-Protocol-Version`, `Mcp-Method`
/// and, when given, `Mcp-Name`.
pub fn request(
    path: &str,
    id: u64,
    method: &str,
    name: Option<&str>,
    mut params: Value,
    tasks: bool,
) -> Request {
    params
        .as_object_mut()
        .expect("params are an object")
        .insert("_meta".into(), meta(tasks));
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let req = Request::post(path, body.to_string())
        .header("MCP-Protocol-Version", PROTOCOL_VERSION)
        .header("Mcp-Method", method);
    match name {
        Some(name) => req.header("Mcp-Name", name),
        None => req,
    }
}

/// `server/discover`.
pub fn discover(path: &str, id: u64) -> Request {
    request(path, id, "server/discover", None, json!({}), true)
}

/// `tools/call` of `tool` with `arguments`, the tasks extension declared when `tasks` (without
/// it the server answers the call directly).
pub fn tools_call(path: &str, id: u64, tool: &str, arguments: Value, tasks: bool) -> Request {
    let params = json!({"name": tool, "arguments": arguments});
    request(path, id, "tools/call", Some(tool), params, tasks)
}

/// `tasks/get` of `task_id`, `Mcp-Name: task_id`.
pub fn tasks_get(path: &str, id: u64, task_id: &str) -> Request {
    let params = json!({"taskId": task_id});
    request(path, id, "tasks/get", Some(task_id), params, true)
}

/// `tasks/update` of `task_id` with `inputResponses` (see [`ask_response`]).
pub fn tasks_update(path: &str, id: u64, task_id: &str, input_responses: Value) -> Request {
    let params = json!({"taskId": task_id, "inputResponses": input_responses});
    request(path, id, "tasks/update", Some(task_id), params, true)
}

/// `tasks/cancel` of `task_id`.
pub fn tasks_cancel(path: &str, id: u64, task_id: &str) -> Request {
    let params = json!({"taskId": task_id});
    request(path, id, "tasks/cancel", Some(task_id), params, true)
}

/// The `inputResponses` answering `ask_task`'s elicitation (key `name`) with `name`.
pub fn ask_response(name: &str) -> Value {
    json!({"name": {"action": "accept", "content": {"name": name}}})
}

/// The JSON-RPC `result` of an answer (JSON or SSE), or a panic showing the answer.
pub fn result(resp: &Response) -> Value {
    let v = resp.json();
    match v.get("result") {
        Some(result) => result.clone(),
        None => panic!("not a result: status {} {v}", resp.status()),
    }
}

/// The `taskId` of a `resultType: "task"` answer (a task handle).
pub fn task_id(resp: &Response) -> String {
    let r = result(resp);
    assert_eq!(r["resultType"], "task", "not a task handle: {r}");
    r["taskId"].as_str().expect("a taskId").to_owned()
}

/// The text of a completed task's result (`result.content[0].text` of a `tasks/get` result).
pub fn task_text(task: &Value) -> String {
    task["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("not a completed task: {task}"))
        .to_owned()
}

/// Polls `tasks/get` of `task_id` at `addr` (`path`) until its status is terminal, at most
/// `limit` times; returns every `tasks/get` result in order (the last one terminal).
pub async fn poll_to_end(addr: SocketAddr, path: &str, task_id: &str, limit: usize) -> Vec<Value> {
    let mut seen = Vec::new();
    for n in 0..limit {
        let r = result(&tasks_get(path, 100 + n as u64, task_id).send(addr).await);
        let terminal = matches!(
            r["status"].as_str(),
            Some("completed" | "failed" | "cancelled")
        );
        seen.push(r);
        if terminal {
            return seen;
        }
    }
    panic!("task {task_id} not terminal after {limit} polls: {seen:#?}");
}
