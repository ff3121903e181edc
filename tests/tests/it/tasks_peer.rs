//! The Rust SDK peer with the Tasks extension (`tasks-server`: rmcp 3.11, 2026-07-28,
//! SEP-2663), spoken to directly in raw HTTP, no gateway: what it advertises, its task handles,
//! polling, `tasks/update`, `tasks/cancel`, the error answers the gateway will meet, and tasks
//! shared by two processes on one `--shared-state` directory.

use mcp_gateway_tests::harness::unique_temp_path;
use mcp_gateway_tests::tasks::{self, TasksPeer, PEER_HEADER, TASKS_EXTENSION};
use serde_json::{json, Value};

async fn peer(name: &str, args: &[&str]) -> TasksPeer {
    TasksPeer::start_with(env!("CARGO_BIN_EXE_tasks-server"), name, args).await
}

fn statuses(polls: &[Value]) -> Vec<&str> {
    polls
        .iter()
        .map(|p| p["status"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn discover_advertises_tasks_and_slow_task_completes_on_the_poll_after_n() {
    let a = peer("pod-a", &[]).await;
    let discover = tasks::discover("/mcp", 1).send(a.addr()).await;
    assert_eq!(discover.status(), 200);
    let info = tasks::result(&discover);
    assert_eq!(
        info["capabilities"]["extensions"][TASKS_EXTENSION],
        json!({}),
        "{info}"
    );
    assert!(info["supportedVersions"]
        .as_array()
        .unwrap()
        .contains(&json!("2026-07-28")));
    assert_eq!(
        info["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "pod-a"
    );

    let whoami = tasks::tools_call("/mcp", 2, "whoami", json!({}), true)
        .send(a.addr())
        .await;
    assert_eq!(whoami.tool_text(), "pod-a");

    let handle = tasks::tools_call("/mcp", 3, "slow_task", json!({"polls": 3}), true)
        .send(a.addr())
        .await;
    assert_eq!(handle.status(), 200);
    assert!(handle.head.header("mcp-session-id").is_none());
    let h = tasks::result(&handle);
    assert_eq!(h["resultType"], "task");
    assert_eq!(h["status"], "working");
    assert_eq!(h["ttlMs"], 300_000);
    assert_eq!(h["pollIntervalMs"], 1000);
    assert_eq!(h["createdAt"], h["lastUpdatedAt"]);
    let id = tasks::task_id(&handle);

    let polls = tasks::poll_to_end(a.addr(), "/mcp", &id, 10).await;
    assert_eq!(
        statuses(&polls),
        ["working", "working", "working", "completed"]
    );
    let done = polls.last().unwrap();
    assert_eq!(done["resultType"], "complete");
    assert_eq!(done["taskId"], id.as_str());
    assert_eq!(tasks::task_text(done), "pod-a:done");
    assert_eq!(done["result"]["isError"], false);
    // read again: still there, still completed
    let again = tasks::result(&tasks::tasks_get("/mcp", 9, &id).send(a.addr()).await);
    assert_eq!(&again, done);
}

#[tokio::test]
async fn ask_task_goes_input_required_and_completes_after_tasks_update() {
    let a = peer("pod-a", &[]).await;
    let id = tasks::task_id(
        &tasks::tools_call("/mcp", 1, "ask_task", json!({}), true)
            .send(a.addr())
            .await,
    );
    let waiting = tasks::result(&tasks::tasks_get("/mcp", 2, &id).send(a.addr()).await);
    assert_eq!(waiting["status"], "input_required", "{waiting}");
    let ask = &waiting["inputRequests"]["name"];
    assert_eq!(ask["method"], "elicitation/create");
    assert_eq!(ask["params"]["message"], "What is your name?");

    let ack = tasks::tasks_update("/mcp", 3, &id, tasks::ask_response("Ada"))
        .send(a.addr())
        .await;
    assert_eq!(ack.status(), 200);
    assert_eq!(tasks::result(&ack), json!({"resultType": "complete"}));
    let done = tasks::result(&tasks::tasks_get("/mcp", 4, &id).send(a.addr()).await);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(tasks::task_text(&done), "pod-a:hello Ada");

    // an update for a completed task is acknowledged all the same
    let late = tasks::tasks_update("/mcp", 5, &id, tasks::ask_response("Bo"))
        .send(a.addr())
        .await;
    assert_eq!(tasks::result(&late), json!({"resultType": "complete"}));
}

#[tokio::test]
async fn sleep_task_completes_and_a_cancelled_one_settles_cancelled() {
    let a = peer("pod-a", &[]).await;
    let short = tasks::task_id(
        &tasks::tools_call("/mcp", 1, "sleep_task", json!({"ms": 100}), true)
            .send(a.addr())
            .await,
    );
    let long = tasks::task_id(
        &tasks::tools_call("/mcp", 2, "sleep_task", json!({"ms": 60_000}), true)
            .send(a.addr())
            .await,
    );
    let started = std::time::Instant::now();
    let slept = loop {
        let r = tasks::result(&tasks::tasks_get("/mcp", 3, &short).send(a.addr()).await);
        if r["status"] != "working" || started.elapsed() > std::time::Duration::from_secs(10) {
            break r;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    assert_eq!(tasks::task_text(&slept), "pod-a:slept");

    let ack = tasks::tasks_cancel("/mcp", 4, &long).send(a.addr()).await;
    assert_eq!(tasks::result(&ack), json!({"resultType": "complete"}));
    let cancelled = tasks::result(&tasks::tasks_get("/mcp", 5, &long).send(a.addr()).await);
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    assert!(cancelled.get("result").is_none());
}

#[tokio::test]
async fn error_answers() {
    let a = peer("pod-a", &[]).await;
    let error = |v: Value| v["error"].clone();

    // an unknown task: an in-band JSON-RPC error, HTTP 200
    for (n, req) in [
        tasks::tasks_get("/mcp", 1, "no-such-task"),
        tasks::tasks_cancel("/mcp", 2, "no-such-task"),
        tasks::tasks_update("/mcp", 3, "no-such-task", json!({})),
    ]
    .into_iter()
    .enumerate()
    {
        let resp = req.send(a.addr()).await;
        assert_eq!(resp.status(), 200, "request {n}");
        assert_eq!(
            error(resp.json()),
            json!({"code": -32602, "message": "unknown task: no-such-task"})
        );
    }

    // tasks/get without Mcp-Name: 400, -32020, plain JSON
    let id = tasks::task_id(
        &tasks::tools_call("/mcp", 4, "slow_task", json!({"polls": 1}), true)
            .send(a.addr())
            .await,
    );
    let body = json!({"jsonrpc": "2.0", "id": 5, "method": "tasks/get",
        "params": {"taskId": id, "_meta": tasks::meta(true)}});
    let bare = mcp_gateway_tests::Request::post("/mcp", body.to_string())
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tasks/get")
        .send(a.addr())
        .await;
    assert_eq!(bare.status(), 400);
    assert_eq!(bare.head.header("content-type"), Some("application/json"));
    assert_eq!(
        bare.json(),
        json!({"jsonrpc": "2.0", "id": 5, "error": {"code": -32020,
            "message": "missing required Mcp-Name header for `tasks/get`"}})
    );

    // tasks/get from a client that did not declare the extension: 400, -32021
    let body = json!({"jsonrpc": "2.0", "id": 6, "method": "tasks/get",
        "params": {"taskId": id, "_meta": tasks::meta(false)}});
    let undeclared = mcp_gateway_tests::Request::post("/mcp", body.to_string())
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tasks/get")
        .header("Mcp-Name", &id)
        .send(a.addr())
        .await;
    assert_eq!(undeclared.status(), 400);
    assert_eq!(
        error(undeclared.json()),
        json!({"code": -32021, "message": "Missing required client capability",
            "data": {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}})
    );

    // slow_task from a client that did not declare the extension: answered directly
    let direct = tasks::tools_call("/mcp", 7, "slow_task", json!({"polls": 5}), false)
        .send(a.addr())
        .await;
    assert_eq!(direct.status(), 200);
    assert_eq!(
        tasks::result(&direct),
        json!({"resultType": "complete", "content": [{"type": "text", "text": "pod-a:done"}],
            "isError": false})
    );

    // ask_task without the extension: the 2026-07-28 input_required round trip instead
    let first = tasks::tools_call("/mcp", 8, "ask_task", json!({}), false)
        .send(a.addr())
        .await;
    let r = tasks::result(&first);
    assert_eq!(r["resultType"], "input_required");
    assert_eq!(r["inputRequests"]["name"]["method"], "elicitation/create");
    let params = json!({"name": "ask_task", "arguments": {},
        "inputResponses": tasks::ask_response("Bo")});
    let retry = tasks::request("/mcp", 9, "tools/call", Some("ask_task"), params, false)
        .send(a.addr())
        .await;
    assert_eq!(retry.tool_text(), "pod-a:hello Bo");
}

#[tokio::test]
async fn tasks_on_one_shared_state_dir_are_served_by_every_process() {
    let dir = unique_temp_path("tasks-shared");
    let d = dir.to_str().unwrap();
    let args = ["--shared-state", d];
    let (a, b) = tokio::join!(peer("pod-a", &args), peer("pod-b", &args));
    let alone = peer("pod-c", &[]).await;

    // made on A, polled to completion through B (the poll count lives in the shared record)
    let handle = tasks::tools_call("/mcp", 1, "slow_task", json!({"polls": 2}), true)
        .send(a.addr())
        .await;
    assert_eq!(handle.head.header(PEER_HEADER), Some("pod-a"));
    let id = tasks::task_id(&handle);
    let first = tasks::tasks_get("/mcp", 2, &id).send(b.addr()).await;
    assert_eq!(first.head.header(PEER_HEADER), Some("pod-b"));
    assert_eq!(tasks::result(&first)["status"], "working");
    let rest = tasks::poll_to_end(b.addr(), "/mcp", &id, 10).await;
    assert_eq!(statuses(&rest), ["working", "completed"]);
    // the result names the process that ran the call; A sees the same record
    assert_eq!(tasks::task_text(rest.last().unwrap()), "pod-a:done");
    let on_a = tasks::result(&tasks::tasks_get("/mcp", 3, &id).send(a.addr()).await);
    assert_eq!(&on_a, rest.last().unwrap());

    // a process that does not share the directory does not know the task
    let unknown = tasks::tasks_get("/mcp", 4, &id).send(alone.addr()).await;
    assert_eq!(unknown.json()["error"]["code"], -32602);

    // asked on B, answered through A, read on B
    let ask = tasks::task_id(
        &tasks::tools_call("/mcp", 5, "ask_task", json!({}), true)
            .send(b.addr())
            .await,
    );
    let waiting = tasks::result(&tasks::tasks_get("/mcp", 6, &ask).send(a.addr()).await);
    assert_eq!(waiting["status"], "input_required");
    assert_eq!(
        waiting["inputRequests"]["name"]["method"],
        "elicitation/create"
    );
    let ack = tasks::tasks_update("/mcp", 7, &ask, tasks::ask_response("Ada"))
        .send(a.addr())
        .await;
    assert_eq!(tasks::result(&ack), json!({"resultType": "complete"}));
    let done = tasks::result(&tasks::tasks_get("/mcp", 8, &ask).send(b.addr()).await);
    assert_eq!(tasks::task_text(&done), "pod-b:hello Ada");

    // made on A, cancelled through B after A is gone
    let long = tasks::task_id(
        &tasks::tools_call("/mcp", 9, "sleep_task", json!({"ms": 60_000}), true)
            .send(a.addr())
            .await,
    );
    let mut a = a;
    a.kill().await;
    let ack = tasks::tasks_cancel("/mcp", 10, &long).send(b.addr()).await;
    assert_eq!(tasks::result(&ack), json!({"resultType": "complete"}));
    let cancelled = tasks::result(&tasks::tasks_get("/mcp", 11, &long).send(b.addr()).await);
    assert_eq!(cancelled["status"], "cancelled");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn an_expired_task_fails_then_is_forgotten_in_memory_and_in_shared_state() {
    let dir = unique_temp_path("tasks-ttl");
    let d = dir.to_str().unwrap();
    let shared_args = ["--ttl-ms", "300", "--shared-state", d];
    let (memory, shared) = tokio::join!(
        peer("pod-m", &["--ttl-ms", "300"]),
        peer("pod-s", &shared_args)
    );
    for a in [&memory, &shared] {
        let id = tasks::task_id(
            &tasks::tools_call("/mcp", 1, "sleep_task", json!({"ms": 60_000}), true)
                .send(a.addr())
                .await,
        );
        tokio::time::sleep(std::time::Duration::from_millis(400)).await;
        let failed = tasks::result(&tasks::tasks_get("/mcp", 2, &id).send(a.addr()).await);
        assert_eq!(failed["status"], "failed", "{}: {failed}", a.name);
        assert_eq!(
            failed["error"],
            json!({"code": -32603, "message": "task expired: TTL elapsed before completion"}),
            "{}",
            a.name
        );
        tokio::time::sleep(std::time::Duration::from_millis(400)).await;
        let gone = tasks::tasks_get("/mcp", 3, &id).send(a.addr()).await;
        assert_eq!(gone.json()["error"]["code"], -32602, "{}", a.name);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn sigterm_exits_at_once() {
    let mut a = peer("pod-a", &[]).await;
    let started = std::time::Instant::now();
    let status = a.terminate().await;
    assert_eq!(status.code(), Some(143));
    assert!(started.elapsed() < std::time::Duration::from_secs(2));
}
