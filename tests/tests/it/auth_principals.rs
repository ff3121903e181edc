//! Sessions bound to their principal (issue 14), against Rust legacy mocks: another principal
//! presenting a session id gets exactly the unknown-id answer, on one gateway and on every
//! replica sharing Redis.

use mcp_gateway_tests::auth::{auth_yaml, token, RESOURCE};
use mcp_gateway_tests::{Gateway, MockServer, Request};

#[tokio::test]
async fn a_session_presented_by_another_principal_is_exactly_as_unknown_as_a_made_up_id() {
    const V: &str = "2025-11-25";
    let pod = MockServer::legacy("pod", 0, V).await;
    let yaml = format!(
        "{}pools:\n  legacy: {{ backends: [{}] }}\nroutes:\n  - path: /mcp\n    mode: stateful\n    pool: legacy\n",
        auth_yaml(RESOURCE),
        pod.addr
    );
    let gw = Gateway::start(&yaml).await;
    let (alice, mallory) = (token("alice", "tools"), token("mallory", "tools"));
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let opened = Request::post("/mcp", init)
        .header("Authorization", &format!("Bearer {alice}"))
        .send(gw.addr)
        .await;
    assert_eq!(opened.status(), 200);
    let sid = opened.head.header("mcp-session-id").unwrap().to_owned();
    let call = |sid: &str, who: &str| {
        Request::post(
            "/mcp",
            r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"whoami","arguments":{}}}"#,
        )
        .header("Mcp-Session-Id", sid)
        .header("MCP-Protocol-Version", V)
        .header("Authorization", &format!("Bearer {who}"))
    };
    let stolen = call(&sid, &mallory).send(gw.addr).await;
    let made_up = call("0123456789abcdef0123456789abcdef", &mallory)
        .send(gw.addr)
        .await;
    assert_eq!(stolen.status(), 404);
    assert_eq!(stolen.json()["error"]["code"], -32015);
    assert_eq!(stolen.json()["error"]["data"]["reason"], "unknown");
    assert_eq!(stolen.body, made_up.body, "the answers differ: an oracle");
    assert_eq!(stolen.status(), made_up.status());
    let own = call(&sid, &alice).send(gw.addr).await;
    assert_eq!(own.status(), 200, "{}", String::from_utf8_lossy(&own.body));
    // Without any token the session is not reachable either.
    let bare = Request::post("/mcp", "{}")
        .header("Mcp-Session-Id", &sid)
        .send(gw.addr)
        .await;
    assert_eq!(bare.status(), 401);
}

#[tokio::test]
async fn a_session_stays_bound_to_its_principal_on_every_replica_sharing_redis() {
    const V: &str = "2025-11-25";
    let redis = mcp_gateway_tests::redis::RedisServer::start().await;
    let pod = MockServer::legacy("pod", 0, V).await;
    let yaml = format!(
        "{}sessions:\n  store: redis\n  redis: {{ urls: [\"{}\"], key-prefix: \"auth-test:\" }}\n\
         pools:\n  legacy: {{ backends: [{}] }}\nroutes:\n  - {{ path: /mcp, mode: stateful, pool: legacy }}\n",
        auth_yaml(RESOURCE),
        redis.url(),
        pod.addr
    );
    let (one, two) = (Gateway::start(&yaml).await, Gateway::start(&yaml).await);
    let (alice, mallory) = (token("alice", "tools"), token("mallory", "tools"));
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let opened = Request::post("/mcp", init)
        .header("Authorization", &format!("Bearer {alice}"))
        .send(one.addr)
        .await;
    let sid = opened.head.header("mcp-session-id").unwrap().to_owned();
    let call = |who: &str| {
        Request::post(
            "/mcp",
            r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"whoami","arguments":{}}}"#,
        )
        .header("Mcp-Session-Id", &sid)
        .header("MCP-Protocol-Version", V)
        .header("Authorization", &format!("Bearer {who}"))
    };
    let stolen = call(&mallory).send(two.addr).await;
    assert_eq!(stolen.status(), 404);
    assert_eq!(stolen.json()["error"]["data"]["reason"], "unknown");
    let own = call(&alice).send(two.addr).await;
    assert_eq!(own.status(), 200, "{}", String::from_utf8_lossy(&own.body));
}
