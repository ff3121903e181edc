//! Legacy (2025-11-25) tasks on a stateful route, with the real PyPI `mcp==1.30.0` peers: the
//! experimental tasks of `tests/peers/tasks_v1_server.py`, driven by the SDK's `ClientSession`
//! in `tests/peers/tasks_v1_client.py` (one session, one command a line). Inside a session a
//! task stays on its pod; when that pod dies and the session moves, a request for a task it
//! held gets -32038 `task-lost` (`session-moved`), not the new pod's "Task not found", while
//! the tasks of sessions on the surviving pod go on. Needs `scripts/setup-peers`.

use mcp_gateway_tests::harness::{python, workspace};
use mcp_gateway_tests::{Gateway, PythonPeer};
use serde_json::{json, Value};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// `tasks_v1_client.py`: one session, one command a line, one JSON answer a line.
struct TaskClient {
    _child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
}

impl TaskClient {
    async fn connect(url: &str) -> TaskClient {
        let mut child = Command::new(python("mcp1"))
            .arg(workspace().join("tests/peers/tasks_v1_client.py"))
            .args(["--url", url, "--timeout", "20"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn tasks_v1_client.py");
        let stdin = child.stdin.take().expect("stdin");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let ready = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .expect("the client starts in time")
            .expect("read")
            .unwrap_or_default();
        assert_eq!(ready.trim(), "READY", "the client did not start: {ready}");
        TaskClient {
            _child: child,
            stdin,
            lines,
        }
    }

    async fn cmd(&mut self, line: &str) -> Value {
        self.stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .expect("write");
        self.stdin.flush().await.expect("flush");
        let answer = tokio::time::timeout(Duration::from_secs(30), self.lines.next_line())
            .await
            .expect("an answer in time")
            .expect("read")
            .expect("a line");
        serde_json::from_str(&answer).unwrap_or_else(|_| panic!("not JSON: {answer}"))
    }

    async fn whoami(&mut self) -> String {
        let v = self.cmd("call whoami {}").await;
        v["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{v}"))
            .to_owned()
    }

    async fn create(&mut self, tool: &str, args: Value) -> String {
        let v = self.cmd(&format!("create {tool} {args}")).await;
        v["taskId"]
            .as_str()
            .unwrap_or_else(|| panic!("no task: {v}"))
            .to_owned()
    }
}

async fn pods() -> Vec<(String, PythonPeer)> {
    let mut pods = Vec::new();
    for name in ["pod-a", "pod-b"] {
        let port = "0".to_owned();
        let peer = PythonPeer::start(
            "mcp1",
            "tasks_v1_server.py",
            &["--port", &port, "--name", name],
        )
        .await;
        pods.push((name.to_owned(), peer));
    }
    pods
}

fn yaml(pods: &[(String, PythonPeer)]) -> String {
    let list: Vec<String> = pods.iter().map(|(_, p)| p.addr()).collect();
    format!(
        "pools:\n  legacy: {{ backends: [{}], failure-cooldown-ms: 60000 }}\nroutes:\n  - path: /mcp\n    mode: stateful\n    pool: legacy\n",
        list.join(", ")
    )
}

#[tokio::test]
async fn a_task_whose_pod_died_is_lost_with_a_clear_error_and_the_other_pods_tasks_go_on() {
    let mut pods = pods().await;
    let gw = Gateway::start(&yaml(&pods)).await;
    let url = gw.url("/mcp");
    // two sessions: the gateway puts a new session on the backend with the fewest
    let mut first = TaskClient::connect(&url).await;
    let mut second = TaskClient::connect(&url).await;
    let (on_first, on_second) = (first.whoami().await, second.whoami().await);
    assert_ne!(on_first, on_second, "one session on each pod");

    // tasks pass through in the session: created, polled, their result read
    let quick = first.create("slow_task", json!({"ms": 100})).await;
    let result = first.cmd(&format!("result {quick}")).await;
    assert_eq!(result["text"], format!("{on_first}:done"), "{result}");
    let listed = first.cmd("list").await;
    assert!(
        listed["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == &json!(quick)),
        "{listed}"
    );

    let doomed = first.create("long_task", json!({})).await;
    let survivor = second.create("long_task", json!({})).await;
    assert_eq!(
        first.cmd(&format!("get {doomed}")).await["status"],
        "working"
    );

    // the first session's pod dies: its next request moves the session to the other pod
    let (_, peer) = pods.iter_mut().find(|(n, _)| *n == on_first).unwrap();
    peer.kill().await;
    let lost = first.cmd(&format!("get {doomed}")).await;
    assert_eq!(lost["error"]["code"], -32038, "{lost}");
    assert_eq!(lost["error"]["data"]["reason"], "session-moved", "{lost}");
    assert_eq!(lost["error"]["data"]["taskId"], json!(doomed), "{lost}");
    assert!(
        !lost.to_string().contains(&peer.addr()),
        "the pod's address is never shown: {lost}"
    );
    // every later request for it is told the same; the session itself lives on elsewhere
    let again = first.cmd(&format!("cancel {doomed}")).await;
    assert_eq!(again["error"]["code"], -32038, "{again}");
    assert_eq!(first.whoami().await, on_second, "the session moved");
    // a task created after the move is served by the new pod
    let fresh = first.create("slow_task", json!({"ms": 100})).await;
    let done = first.cmd(&format!("result {fresh}")).await;
    assert_eq!(done["text"], format!("{on_second}:done"), "{done}");

    // the other pod's task is unaffected
    assert_eq!(
        second.cmd(&format!("get {survivor}")).await["status"],
        "working"
    );
    let cancelled = second.cmd(&format!("cancel {survivor}")).await;
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");

    let lost_count = gw
        .metric("mcpgw_tasks_total{pool=\"legacy\",event=\"lost\"}")
        .await;
    assert_eq!(lost_count, 2.0);
    let created = gw
        .metric("mcpgw_tasks_total{pool=\"legacy\",event=\"created\"}")
        .await;
    assert_eq!(created, 4.0, "every task handle recorded");
}
