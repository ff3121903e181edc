//! A DELETE while the session store is stalled (a real `redis-server` SIGSTOPped: its socket
//! takes the command, and it runs it once SIGCONTed) is answered with the truth (issue 31,
//! item 12). Before, the gateway answered 503 -32006 ("the session could not be ended") when
//! its command timed out, and Redis ended the session anyway when it resumed. Now a DELETE of a
//! session this replica holds is queued like the other writes that cannot wait
//! (docs/failover.md, "When the session store fails") and answered 200: the backend session is
//! deleted at once, and the record ends in the store once it answers.

use mcp_gateway_tests::harness::unique_temp_path;
use mcp_gateway_tests::redis::RedisServer;
use mcp_gateway_tests::Request;
use mcp_gateway_tests::{assert_eventually, logs, machine, open_session, Gateway, MockServer};
use serde_json::Value;
use std::time::Duration;

const V: &str = "2025-11-25";

fn whoami(sid: &str) -> Request {
    Request::post(
        "/mcp",
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{}}}"#,
    )
    .header("Mcp-Session-Id", sid)
    .header("MCP-Protocol-Version", V)
}

async fn session_in_store(gw: &Gateway, sid: &str) -> Value {
    let (_, body) = gw.admin_get(&format!("/admin/sessions/{sid}")).await;
    serde_json::from_str(&body).unwrap_or(Value::Null)
}

#[tokio::test]
async fn a_delete_while_redis_is_paused_is_answered_as_what_happens_when_it_resumes() {
    let _machine = machine::exclusive().await;
    let redis = RedisServer::start().await;
    let mock = MockServer::legacy("m", 0, V).await;
    let log = unique_temp_path("mcpgw-paused-delete-log");
    let gw = Gateway::start_logging_to(
        &format!(
            "sessions:\n  idle-timeout-s: 20\n  store: redis\n  redis: {{ urls: [\"{}\"], key-prefix: \"paused:\" }}\npools:\n  legacy: {{ backends: [{}] }}\nroutes:\n  - {{ path: /mcp, mode: stateful, pool: legacy }}\n",
            redis.url(),
            mock.addr
        ),
        &[],
        &log,
    )
    .await;
    // one DELETE first: Redis then holds the end script, so the stalled DELETE's EVALSHA is
    // one command that runs as it is once Redis resumes (a first EVALSHA would only get
    // NOSCRIPT, and the load that follows it is never sent by a caller that gave up)
    let warm = open_session(gw.addr).await;
    let ended = Request::session_delete(&warm)
        .header("MCP-Protocol-Version", V)
        .send(gw.addr)
        .await;
    assert_eq!(ended.status(), 200, "{}", ended.text());
    let sid = open_session(gw.addr).await;
    assert_eq!(whoami(&sid).send(gw.addr).await.status(), 200);
    assert_eq!(mock.sessions().live(), 1);
    assert!(session_in_store(&gw, &sid).await["backend"].is_string());

    redis.pause();
    let deleted = Request::session_delete(&sid)
        .header("MCP-Protocol-Version", V)
        .send(gw.addr)
        .await;
    let status = deleted.status();
    eprintln!("DELETE while paused: {status} {}", deleted.text());
    redis.resume();

    // the outage ends once Redis took every queued write and answered for 2 s
    assert_eventually!(
        Duration::from_secs(30),
        logs::read(&log)
            .iter()
            .any(|l| l.message.starts_with("session store available again")),
        "the end of the outage"
    );
    let stored = session_in_store(&gw, &sid).await;
    let after = whoami(&sid).send(gw.addr).await;
    match status {
        200 => {
            assert_eq!(stored["gone"], "deleted", "answered 200: ended ({stored})");
            assert_eq!(after.status(), 404, "{}", after.text());
        }
        _ => {
            assert!(
                stored["backend"].is_string(),
                "answered {status}: the session must still be live, the store says {stored}"
            );
            assert_eq!(after.status(), 200, "{}", after.text());
        }
    }
    // the answer chosen (docs/failover.md): accepted, the backend session deleted at once
    assert_eq!(status, 200, "{}", deleted.text());
    assert_eq!(mock.sessions().live(), 0, "the backend session was deleted");
}
