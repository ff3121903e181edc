//! Issue 60: a task's request goes through the one sender like any other request. It honours
//! the route's deadline (`limits.timeout-ms`): a pod that holds a task poll past it costs the
//! client the deadline and a -32012 with the request's id, and the held poll is cancelled
//! (its connection closed). And a 2026-07-28 task poll on an `auto` route that comes without
//! the `MCP-Protocol-Version` header is routed to the pod that holds its task, as one with the
//! header is (before, it went the session handler's way, balanced: to whichever pod).
//!
//! The pods are raw 2026-07-28 servers (the real SDK servers refuse a body without the
//! version header, so they cannot stand for a client that leaves it out): a `tools/call` is
//! answered with a task handle, a `tasks/get` of the pod's own task with the task `working`
//! (held first, when the pod holds polls), any other task id with rmcp's "unknown task".

use mcp_gateway_tests::tasks;
use mcp_gateway_tests::wire::{read_body, read_head};
use mcp_gateway_tests::{eventually_async, Gateway, Request};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

/// The route's deadline.
const DEADLINE_MS: u64 = 300;
/// How long a holding pod holds a poll: far past the deadline, far below the test's patience.
const HOLD: Duration = Duration::from_secs(60);

/// What a pod saw.
#[derive(Default)]
struct Seen {
    /// `tasks/get` requests that reached it.
    polls: AtomicUsize,
    /// Held polls whose connection the gateway closed before the pod answered.
    cancelled: AtomicUsize,
}

/// A raw pod on 127.0.0.1; its task is `<name>-task`.
struct Pod {
    addr: SocketAddr,
    seen: Arc<Seen>,
    accepting: tokio::task::JoinHandle<()>,
}

impl Drop for Pod {
    fn drop(&mut self) {
        self.accepting.abort();
    }
}

impl Pod {
    /// A pod named `name`; `hold`: it holds every poll of its task for [`HOLD`].
    async fn start(name: &'static str, hold: bool) -> Pod {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Seen::default());
        let noted = seen.clone();
        let accepting = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let noted = noted.clone();
                tokio::spawn(async move {
                    let (r, mut w) = stream.into_split();
                    let mut r = BufReader::new(r);
                    while let Ok(Some(head)) = read_head(&mut r, true).await {
                        let Ok(body) = read_body(&mut r, &head, true).await else {
                            return;
                        };
                        let msg: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                        let own = format!("{name}-task");
                        let result = match msg["method"].as_str() {
                            Some("tools/call") => json!({"result": {"resultType": "task",
                                "taskId": own, "status": "working", "ttlMs": 60000,
                                "pollIntervalMs": 100}}),
                            Some("tasks/get") if msg["params"]["taskId"] == own.as_str() => {
                                noted.polls.fetch_add(1, Ordering::SeqCst);
                                if hold {
                                    let mut byte = [0u8; 1];
                                    tokio::select! {
                                        _ = tokio::time::sleep(HOLD) => {}
                                        _ = r.read(&mut byte) => {
                                            noted.cancelled.fetch_add(1, Ordering::SeqCst);
                                            return;
                                        }
                                    }
                                }
                                json!({"result": {"resultType": "complete", "taskId": own,
                                    "status": "working", "ttlMs": 60000, "pollIntervalMs": 100}})
                            }
                            Some("tasks/get") => json!({"error": {"code": -32602,
                                "message": format!("unknown task: {}",
                                    msg["params"]["taskId"].as_str().unwrap_or_default())}}),
                            _ => json!({"error": {"code": -32601, "message": "no"}}),
                        };
                        let mut answer = result;
                        answer["jsonrpc"] = json!("2.0");
                        answer["id"] = msg["id"].clone();
                        let answer = answer.to_string();
                        let out = format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nx-pod: {name}\r\ncontent-length: {}\r\n\r\n{answer}",
                            answer.len()
                        );
                        if w.write_all(out.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        Pod {
            addr,
            seen,
            accepting,
        }
    }
}

/// The gateway's config: one pool `pods` of `pods`, round robin, behind `/mcp` with `route`.
fn config(pods: &[&Pod], route: &str) -> String {
    let list: Vec<String> = pods.iter().map(|p| p.addr.to_string()).collect();
    format!(
        "pools:\n  pods: {{ era: modern, backends: [{}] }}\nroutes:\n  - {{ path: /mcp, pool: pods{route} }}\n",
        list.join(", ")
    )
}

/// `tasks/get` of `task_id` without the `MCP-Protocol-Version` header (its body says
/// 2026-07-28 in `_meta`; `Mcp-Method` and `Mcp-Name` are sent).
fn poll_without_version(id: u64, task_id: &str) -> Request {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tasks/get",
        "params": {"taskId": task_id, "_meta": tasks::meta(true)}});
    Request::post("/mcp", body.to_string())
        .header("Mcp-Method", "tasks/get")
        .header("Mcp-Name", task_id)
}

#[tokio::test]
async fn a_task_poll_held_past_the_routes_deadline_is_answered_with_the_deadline_error() {
    let pod = Pod::start("slow", true).await;
    let route = format!(", mode: stateless, limits: {{ timeout-ms: {DEADLINE_MS} }}");
    let gw = Gateway::start(&config(&[&pod], &route)).await;
    let handle = tasks::tools_call("/mcp", 1, "work", json!({}), true)
        .send(gw.addr)
        .await;
    let task = tasks::task_id(&handle);
    assert_eq!(task, "slow-task");
    let started = Instant::now();
    // bounded: a poll that waits for the pod would wait a minute
    let poll = tasks::tasks_get("/mcp", 7, &task);
    let got = tokio::time::timeout(Duration::from_secs(10), poll.send(gw.addr))
        .await
        .expect("the poll is answered at the route's deadline, not when the pod answers");
    let took = started.elapsed();
    let v = got.json();
    assert_eq!(v["error"]["code"], -32012, "{v}");
    assert_eq!(v["error"]["data"]["timeoutMs"], DEADLINE_MS, "{v}");
    assert_eq!(v["id"], 7, "the request's id: {v}");
    assert!(took >= Duration::from_millis(DEADLINE_MS), "took {took:?}");
    assert_eq!(pod.seen.polls.load(Ordering::SeqCst), 1, "sent to its pod");
    // the held poll was cancelled: its connection closed
    eventually_async(
        "the pod sees its held poll cancelled",
        Duration::from_secs(5),
        || async { pod.seen.cancelled.load(Ordering::SeqCst) == 1 },
    )
    .await;
}

#[tokio::test]
async fn a_task_poll_without_the_version_header_on_an_auto_route_reaches_the_pod_holding_the_task()
{
    let (a, b) = (Pod::start("a", false).await, Pod::start("b", false).await);
    let gw = Gateway::start(&config(&[&a, &b], ", mode: auto")).await;
    let handle = tasks::tools_call("/mcp", 1, "work", json!({}), true)
        .send(gw.addr)
        .await;
    let task = tasks::task_id(&handle);
    let holder = handle.head.header("x-pod").unwrap_or_default().to_owned();
    assert_eq!(task, format!("{holder}-task"));
    // round robin would send every other poll to the pod that does not know the task
    for k in 0..4 {
        let got = poll_without_version(10 + k, &task).send(gw.addr).await;
        let v = got.json();
        assert_eq!(v["result"]["status"], "working", "poll {k}: {v}");
        assert_eq!(v["id"], 10 + k, "{v}");
        assert_eq!(got.head.header("x-pod"), Some(holder.as_str()), "poll {k}");
    }
    // counted once the answer is relayed, so the last count may land just after the client reads
    eventually_async(
        "each poll counted as routed to the task's pod",
        Duration::from_secs(5),
        || async {
            gw.metric("mcpgw_tasks_total{pool=\"pods\",event=\"routed\"}")
                .await
                == 4.0
        },
    )
    .await;
}
