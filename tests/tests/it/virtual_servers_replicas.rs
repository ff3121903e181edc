//! Issue 33 with two gateway replicas sharing Redis (`sessions.store: redis`) and the sealing
//! key (`bridge.request-state-key-file`), behind a front that sends every request to the other
//! replica ([`RrProxy`]): a legacy client's virtual session (its id is its member sessions'
//! ids, sealed) is served by both, each member session kept on its pod, and a 2026-07-28
//! client pages a merged list whose cursors one replica sealed and the other opens; a legacy
//! client cut mid-call resumes its answer through replicas taking turns.

use mcp_gateway_tests::harness::{unique_temp_path, ReplClient};
use mcp_gateway_tests::redis::RedisServer;
use mcp_gateway_tests::rr_proxy::RrProxy;
use mcp_gateway_tests::{Gateway, PythonPeer, Request};
use serde_json::{json, Value};

#[tokio::test]
async fn both_replicas_serve_one_virtual_session_and_one_pagination() {
    let redis = RedisServer::start().await;
    let a = PythonPeer::start("mcp1", "legacy_server.py", &["--port", "0", "--name", "a"]).await;
    let pg = PythonPeer::start("mcp2", "paged_server.py", &["--port", "0", "--name", "pg"]).await;
    let dir = unique_temp_path("mcpgw-virtual-replicas");
    std::fs::create_dir_all(&dir).unwrap();
    let key_file = dir.join("state.key");
    std::fs::write(&key_file, "cd".repeat(32)).unwrap();
    let yaml = format!(
        "sessions:\n  store: redis\n  redis: {{ urls: [\"{}\"], key-prefix: \"vs:\" }}\nbridge: {{ request-state-key-file: {} }}\n\
         pools:\n  a: {{ era: legacy, backends: [{}] }}\n  pg: {{ backends: [{}] }}\n\
         routes:\n  - path: /hub\n    mode: virtual\n    upstream-path: /mcp\n    members:\n      - {{ name: a, pool: a, mode: stateful }}\n      - {{ name: pg, pool: pg, mode: stateless }}\n",
        redis.url(),
        key_file.display(),
        a.addr(),
        pg.addr()
    );
    let replicas = [Gateway::start(&yaml).await, Gateway::start(&yaml).await];
    let front = RrProxy::start(&[replicas[0].addr, replicas[1].addr]).await;

    // a legacy client: every request on the other replica, one session throughout
    let mut client = ReplClient::connect("mcp1", &front.url("/hub"), None).await;
    let counts: Vec<String> = {
        let mut out = Vec::new();
        for _ in 0..4 {
            out.push(client.call_text("a__count", json!({})).await);
        }
        out
    };
    assert_eq!(
        counts,
        ["1", "2", "3", "4"],
        "one member session, both replicas"
    );
    assert_eq!(client.call_text("pg__t01", json!({})).await, "pg:t01");
    assert!(client.close().await);

    // a 2026-07-28 client pages through the merged list across both replicas
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"}});
    let mut cursor: Option<String> = None;
    let mut tools = Vec::new();
    for id in 1..10 {
        let mut params = json!({"_meta": meta});
        if let Some(c) = &cursor {
            params["cursor"] = Value::String(c.clone());
        }
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": params});
        let resp = Request::post("/hub", body.to_string())
            .header("MCP-Protocol-Version", "2026-07-28")
            .header("Mcp-Method", "tools/list")
            .send(front.addr)
            .await;
        assert_eq!(resp.status(), 200, "{}", resp.text());
        let v = resp.json();
        for t in v["result"]["tools"].as_array().unwrap() {
            tools.push(t["name"].as_str().unwrap().to_owned());
        }
        cursor = v["result"]["nextCursor"].as_str().map(str::to_owned);
        if cursor.is_none() {
            break;
        }
    }
    let paged: Vec<&str> = tools
        .iter()
        .map(String::as_str)
        .filter(|t| t.starts_with("pg__"))
        .collect();
    assert_eq!(
        paged.len(),
        7,
        "every page of pg, whichever replica sealed its cursor: {tools:?}"
    );
    assert!(tools.contains(&"a__count".to_owned()), "{tools:?}");
}

/// A legacy client's call answer on a virtual route, its connection cut midway, resumed through
/// two replicas taking turns (the front alternates): the member session's events are in
/// Redis, the client's id names the member.
#[tokio::test]
async fn a_virtual_call_cut_midway_resumes_on_the_other_replica() {
    let redis = RedisServer::start().await;
    let a = PythonPeer::legacy_v1("a", 0).await;
    let dir = unique_temp_path("mcpgw-virtual-resume");
    std::fs::create_dir_all(&dir).unwrap();
    let key_file = dir.join("state.key");
    std::fs::write(&key_file, "ef".repeat(32)).unwrap();
    let yaml = format!(
        "sessions:\n  store: redis\n  redis: {{ urls: [\"{}\"], key-prefix: \"vr:\" }}\nbridge: {{ request-state-key-file: {} }}\n\
         pools:\n  a: {{ era: legacy, backends: [{}] }}\n\
         routes:\n  - path: /hub\n    mode: virtual\n    upstream-path: /mcp\n    members:\n      - {{ name: a, pool: a, mode: stateful }}\n",
        redis.url(),
        key_file.display(),
        a.addr()
    );
    let replicas = [Gateway::start(&yaml).await, Gateway::start(&yaml).await];
    let front = RrProxy::start(&[replicas[0].addr, replicas[1].addr]).await;
    let mut client = ReplClient::connect("mcp1", &front.url("/hub"), None).await;
    front.cut_after("notifications/progress", 2);
    let call = json!({"op": "progress", "name": "a__slow_progress",
        "args": {"steps": 5, "delay_ms": 400}});
    let report = client.cmd(call).await;
    assert!(client.close().await);
    crate::resume::assert_every_notification_once_and_the_result(&report, &front);
    let mut resumed = 0.0;
    for r in &replicas {
        resumed += r.metric("mcpgw_streams_resumed_total").await;
    }
    assert!(resumed >= 1.0, "a replica resumed the answer");
}
