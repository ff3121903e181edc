//! Issue 48, a task's member: two members of a virtual route on ONE pool that differ only by
//! `upstream-path` (`a` at `/one`, `b` at `/two`, default prefixes `a__`, `b__`), in front of
//! one real 2026-07-28 peer with the Tasks extension (`tasks-server`, rmcp 3.11) serving an
//! independent server at each path (`--serve /one=one --serve /two=two`: each path its own
//! name and its own tasks, so a task made at `/two` is unknown at `/one`).
//!
//! A task created through `b__slow_task` is recorded with the member that answered (`b`), and
//! every `tasks/get`, `tasks/update` and `tasks/cancel` of it reaches `b`'s path: the task's
//! status on every poll, then `completed` with `two:done`. Before the fix the record held only
//! the pool, and the gateway sent the task's requests to the first member on that pool (`a`,
//! `/one`), whose server never saw the task: a false "unknown task" (or -32038 `task-lost`) on
//! the first poll. Both ways a 2026-07-28 call goes: the fast path (`check-headers`, the default)
//! and the gateway-driven path (`check-headers: false`, which reads the body first).

use mcp_gateway_tests::tasks::{self, TasksPeer, PEER_HEADER};
use mcp_gateway_tests::{Gateway, Request, Response};
use serde_json::{json, Value};

/// One `tasks-server` process: `/one` is server `one`, `/two` is server `two` (and `/mcp`,
/// which no member reaches, `pod`).
async fn backend() -> TasksPeer {
    TasksPeer::start_with(
        env!("CARGO_BIN_EXE_tasks-server"),
        "pod",
        &["--serve", "/one=one", "--serve", "/two=two"],
    )
    .await
}

/// The virtual route `/hub`: one pool `pod`, members `a` (`/one`) and `b` (`/two`); `extra`
/// goes into the route (`check-headers: false`).
fn yaml(peer: &TasksPeer, extra: &str) -> String {
    format!(
        "pools:\n  pod: {{ era: modern, backends: [{}] }}\n\
         routes:\n  - path: /hub\n    mode: virtual\n    server-info: {{ name: hub, version: 1.0.0 }}\n{extra}    members:\n\
         \x20     - {{ name: a, pool: pod, upstream-path: /one }}\n\
         \x20     - {{ name: b, pool: pod, upstream-path: /two }}\n",
        peer.addr()
    )
}

/// `req` through the gateway; its answer, which must be a JSON-RPC result (an error shows the
/// answer, labelled `what`).
async fn result_of(gw: &Gateway, req: Request, what: &str) -> (Response, Value) {
    let resp = req.send(gw.addr).await;
    let v = resp.json();
    assert!(
        v["error"].is_null() && v["result"].is_object(),
        "{what}: not a result (HTTP {}): {v}",
        resp.status()
    );
    let result = v["result"].clone();
    (resp, result)
}

/// The server of the tasks-server that answered (`x-tasks-server`, passed through).
fn answered_by(resp: &Response) -> Option<&str> {
    resp.head.header(PEER_HEADER)
}

/// A task of `tool` (`a__slow_task`, `b__ask_task`, ...) with `arguments`, made through `/hub`
/// by the member's server `server`: its id.
async fn create(gw: &Gateway, n: u64, tool: &str, arguments: Value, server: &str) -> String {
    let req = tasks::tools_call("/hub", n, tool, arguments, true);
    let (resp, handle) = result_of(gw, req, &format!("tools/call {tool}")).await;
    assert_eq!(
        handle["resultType"], "task",
        "{tool}: a task handle: {handle}"
    );
    assert_eq!(handle["status"], "working", "{handle}");
    assert_eq!(
        answered_by(&resp),
        Some(server),
        "{tool} reached its member's path"
    );
    tasks::task_id(&resp)
}

/// `tasks/get` of `id` through `/hub`: the task's status, answered by `server` (its member's
/// path), never an error (the task-lost or unknown-task of a request sent to the other path).
async fn get(gw: &Gateway, n: u64, id: &str, server: &str) -> Value {
    let what = format!("tasks/get {n} of {id} (made by {server})");
    let (resp, task) = result_of(gw, tasks::tasks_get("/hub", n, id), &what).await;
    assert_eq!(answered_by(&resp), Some(server), "{what}: {task}");
    assert_eq!(task["taskId"], id, "{what}: {task}");
    assert!(task["status"].is_string(), "{what}: {task}");
    task
}

/// Polls `id` through `/hub` until it is terminal (at most `limit` polls), each poll checked
/// by [`get`]: the statuses seen, and the last answer.
async fn poll_to_end(gw: &Gateway, id: &str, server: &str, limit: u64) -> (Vec<String>, Value) {
    let mut statuses = Vec::new();
    for n in 0..limit {
        let task = get(gw, 100 + n, id, server).await;
        let status = task["status"].as_str().unwrap().to_owned();
        statuses.push(status.clone());
        if matches!(status.as_str(), "completed" | "failed" | "cancelled") {
            return (statuses, task);
        }
    }
    panic!("task {id} not terminal after {limit} polls: {statuses:?}");
}

/// The slow task of each member polled to the end through `/hub`: `b`'s on `/two` (the
/// member that answered, not the first member of the pool), `a`'s on `/one`.
async fn slow_tasks_poll_on_their_members_path(gw: &Gateway) {
    // the members differ by their path alone: each reaches its own server
    for (tool, server) in [("a__whoami", "one"), ("b__whoami", "two")] {
        let req = tasks::tools_call("/hub", 1, tool, json!({}), true);
        let (resp, r) = result_of(gw, req, tool).await;
        assert_eq!(r["content"][0]["text"], server, "{tool}: {r}");
        assert_eq!(answered_by(&resp), Some(server));
    }

    let b = create(gw, 2, "b__slow_task", json!({"polls": 3}), "two").await;
    let a = create(gw, 3, "a__slow_task", json!({"polls": 1}), "one").await;
    let (seen, done) = poll_to_end(gw, &b, "two", 8).await;
    assert_eq!(
        seen,
        ["working", "working", "working", "completed"],
        "{done}"
    );
    assert_eq!(tasks::task_text(&done), "two:done", "{done}");
    assert_eq!(done["result"]["isError"], false, "{done}");
    let (seen, done) = poll_to_end(gw, &a, "one", 8).await;
    assert_eq!(seen, ["working", "completed"], "{done}");
    assert_eq!(tasks::task_text(&done), "one:done", "{done}");

    // every poll went to the task's pod, none was answered as unknown by the gateway (a poll
    // is counted once its answer was relayed: the last count may land just after the client
    // read its answer)
    let routed = "mcpgw_tasks_total{pool=\"pod\",event=\"routed\"}";
    mcp_gateway_tests::assert_eventually!(
        std::time::Duration::from_secs(2),
        gw.metric(routed).await == 6.0,
        "four polls of b's task, two of a's: {}",
        gw.metric(routed).await
    );
    let unknown = gw
        .metric("mcpgw_tasks_total{pool=\"-\",event=\"unknown\"}")
        .await;
    assert_eq!(unknown, 0.0);
}

#[tokio::test]
async fn a_task_of_the_second_member_on_a_shared_pool_is_polled_on_its_path() {
    let peer = backend().await;
    let gw = Gateway::start(&yaml(&peer, "")).await;
    slow_tasks_poll_on_their_members_path(&gw).await;

    // tasks/update reaches b's path: b's ask_task answered there and completed
    let asked = create(&gw, 10, "b__ask_task", json!({}), "two").await;
    let waiting = get(&gw, 11, &asked, "two").await;
    assert_eq!(waiting["status"], "input_required", "{waiting}");
    let update = tasks::tasks_update("/hub", 12, &asked, tasks::ask_response("Ada"));
    let (resp, ack) = result_of(&gw, update, "tasks/update of b's task").await;
    assert_eq!(ack, json!({"resultType": "complete"}));
    assert_eq!(answered_by(&resp), Some("two"));
    let done = get(&gw, 13, &asked, "two").await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(tasks::task_text(&done), "two:hello Ada", "{done}");

    // tasks/cancel reaches b's path: b's long sleep_task cancelled there
    let long = create(&gw, 20, "b__sleep_task", json!({"ms": 60_000}), "two").await;
    let cancel = tasks::tasks_cancel("/hub", 21, &long);
    let (resp, ack) = result_of(&gw, cancel, "tasks/cancel of b's task").await;
    assert_eq!(ack, json!({"resultType": "complete"}));
    assert_eq!(answered_by(&resp), Some("two"));
    let cancelled = get(&gw, 22, &long, "two").await;
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
}

#[tokio::test]
async fn a_task_of_the_second_member_on_a_shared_pool_is_polled_on_its_path_without_the_fast_path()
{
    let peer = backend().await;
    let gw = Gateway::start(&yaml(&peer, "    check-headers: false\n")).await;
    slow_tasks_poll_on_their_members_path(&gw).await;
}
