//! Issue 49: a virtual server's member requests are served in the config snapshot their client
//! request started with. A member is asked by calling the plain route's handler with a context
//! made from the parent's snapshot (`virtual_servers/fanout.rs`), never through a pingora
//! subrequest whose context loaded the state in force when it started: there, a reload that
//! shifted the pools between the client request's start and a member request's made the member
//! request resolve its pool's index in the new config: another pool's backends, with that
//! pool's credentials.

use super::rpc;
use mcp_gateway_tests::mock::modern::ModernMock;
use mcp_gateway_tests::{Gateway, MockServer, Request};
use serde_json::json;
use std::time::Duration;

/// `/hub` over `a` (bare: `prefix: never`) and `b`, with `extra` pools listed first.
fn hub(a: &ModernMock, b: &ModernMock, extra: &str) -> String {
    format!(
        "pools:\n{extra}  a: {{ backends: [{}] }}\n  b: {{ backends: [{}] }}\n\
         routes:\n  - path: /hub\n    mode: virtual\n    upstream-path: /mcp\n    members:\n\
         \x20     - {{ name: a, pool: a, prefix: never }}\n      - {{ name: b, pool: b }}\n",
        a.addr, b.addr
    )
}

/// A bare name the names map has not seen is looked up in the members' lists first (`a`'s
/// takes 1.5 s), then called on its member. A reload in between adds a pool `_z` (mock `z`)
/// that comes first (pools are numbered in name order: `_z` before `a` and `b`; a `z` would
/// come last and move nothing), so every pool's index moves: the call still reaches `a` (its
/// pool in the snapshot the call started with), and `z` hears nothing of it. Then the next
/// call, in the new snapshot, also reaches `a`, by its name.
#[tokio::test]
async fn a_reload_during_a_members_lookup_sends_the_call_to_the_members_own_pool() {
    let a = ModernMock::start("slow-a").await;
    let b = ModernMock::start("b").await;
    let z = ModernMock::start("z").await;
    let gw = Gateway::start(&hub(&a, &b, "")).await;
    let call = |id| rpc(id, "tools/call", json!({"name": "whoami", "arguments": {}}));
    let (req, addr) = (call(1), gw.addr);
    let first = tokio::spawn(async move { req.send(addr).await });
    // the lookup is under way: the members' lists were asked for
    mcp_gateway_tests::assert_eventually!(
        Duration::from_secs(5),
        a.requests().iter().any(|m| m["method"] == "tools/list"),
        "a was asked for its list"
    );
    let applied = gw
        .metric("mcpgw_config_reloads_total{result=\"applied\"}")
        .await;
    gw.rewrite_config(&hub(
        &a,
        &b,
        &format!("  _z: {{ backends: [{}] }}\n", z.addr),
    ));
    mcp_gateway_tests::assert_eventually!(
        Duration::from_secs(5),
        gw.metric("mcpgw_config_reloads_total{result=\"applied\"}")
            .await
            > applied,
        "the reload applied"
    );
    let resp = tokio::time::timeout(Duration::from_secs(15), first)
        .await
        .expect("the call answered")
        .expect("the call's task");
    let v = resp.json();
    assert_eq!(v["result"]["content"][0]["text"], "slow-a", "{v}");
    let z_heard: Vec<_> = z
        .requests()
        .into_iter()
        .filter(|m| {
            m["method"]
                .as_str()
                .is_some_and(|m| m.starts_with("tools/"))
        })
        .collect();
    assert!(z_heard.is_empty(), "z heard {z_heard:?}");
    let again = call(2).send(gw.addr).await.json();
    assert_eq!(again["result"]["content"][0]["text"], "slow-a", "{again}");
}

/// `/hub` for legacy clients over the `stateful` members `a` (two pods) and `b`, with `extra`
/// pools listed first.
fn session_hub(a: &[MockServer; 2], b: &MockServer, extra: &str) -> String {
    format!(
        "pools:\n{extra}  a: {{ era: legacy, backends: [{}, {}] }}\n  b: {{ era: legacy, backends: [{}] }}\n\
         routes:\n  - path: /hub\n    mode: virtual\n    upstream-path: /mcp\n    members:\n\
         \x20     - {{ name: a, pool: a, mode: stateful, prefix: never }}\n      - {{ name: b, pool: b, mode: stateful }}\n",
        a[0].addr, a[1].addr, b.addr
    )
}

/// The session-stream GETs a mock received.
fn gets(mock: &MockServer) -> usize {
    mock.requests()
        .iter()
        .filter(|r| r.head.method == "GET")
        .count()
}

/// A legacy client's GET stream on a virtual route merges every member's own stream, each a
/// member request of the one client request; a member's stream that ends is opened again
/// (after 500 ms) by that same client request, in the snapshot it started with
/// (`virtual_servers/stream.rs`): it is the member request a reload can come before while the
/// client's request lives. Here the stream is open; a reload adds a pool `_z` (mock `z`) that
/// comes first in name order, so every pool's index moves; then the pod holding `a`'s member
/// session dies, and `a`'s stream ends.
/// Opened again, it goes to `a`'s own pool: its session moves to `a`'s other pod (initialized
/// there) and the stream is read there; `z` hears nothing, `b`'s stream is left as it was, and
/// the client's stream is still the one it opened. (A member request resolving its pool in the
/// newer config would take `a`'s old index, now `z`'s, and open `a`'s session on `z`.)
#[tokio::test]
async fn a_reload_during_a_virtual_get_stream_reopens_a_members_stream_in_its_own_pool() {
    const V: &str = "2025-11-25";
    let a = [
        MockServer::legacy("a1", 0, V).await,
        MockServer::legacy("a2", 0, V).await,
    ];
    let b = MockServer::legacy("b", 0, V).await;
    let z = MockServer::legacy("z", 0, V).await;
    let gw = Gateway::start(&session_hub(&a, &b, "")).await;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": V, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
    let resp = Request::post("/hub", init.to_string()).send(gw.addr).await;
    assert_eq!(resp.status(), 200, "{}", resp.text());
    let sid = resp
        .head
        .header("mcp-session-id")
        .expect("a session id")
        .to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let resp = Request::post("/hub", initialized.to_string())
        .header("Mcp-Session-Id", &sid)
        .header("MCP-Protocol-Version", V)
        .send(gw.addr)
        .await;
    assert_eq!(resp.status(), 202, "{}", resp.text());
    let (head, mut stream) = Request::bare("GET", "/hub")
        .header("Mcp-Session-Id", &sid)
        .header("MCP-Protocol-Version", V)
        .header("Accept", "text/event-stream")
        .send_for_head(gw.addr)
        .await;
    assert_eq!(head.status, 200, "{head:?}");
    // both members' streams are open: at the pod holding `a`'s session, and at `b`
    mcp_gateway_tests::assert_eventually!(
        Duration::from_secs(5),
        gets(&a[0]) + gets(&a[1]) == 1 && gets(&b) == 1,
        "the members' streams were opened"
    );
    let holder = if gets(&a[0]) == 1 { 0 } else { 1 };
    let other = &a[1 - holder];
    assert_eq!(
        other.sessions().initializes(),
        0,
        "one pod holds a's session"
    );

    let applied = gw
        .metric("mcpgw_config_reloads_total{result=\"applied\"}")
        .await;
    gw.rewrite_config(&session_hub(
        &a,
        &b,
        &format!("  _z: {{ era: legacy, backends: [{}] }}\n", z.addr),
    ));
    mcp_gateway_tests::assert_eventually!(
        Duration::from_secs(5),
        gw.metric("mcpgw_config_reloads_total{result=\"applied\"}")
            .await
            > applied,
        "the reload applied"
    );
    a[holder].die().await;
    // `a`'s stream, opened again by the client's request: on `a`'s other pod, never on `z`
    mcp_gateway_tests::assert_eventually!(
        Duration::from_secs(10),
        gets(other) + gets(&z) > 0,
        "a's stream was opened again"
    );
    let z_heard: Vec<String> = z
        .requests()
        .iter()
        .map(|r| format!("{} {}", r.head.method, String::from_utf8_lossy(&r.body)))
        .collect();
    assert!(z_heard.is_empty(), "z heard {z_heard:?}");
    assert_eq!(
        (other.sessions().initializes(), gets(other)),
        (1, 1),
        "a's session moved to its other pod, and its stream with it"
    );
    assert_eq!(
        (b.sessions().initializes(), gets(&b)),
        (1, 1),
        "b's session and stream as they were"
    );
    // the client's stream has not ended: the request that opened it made the new member request
    use tokio::io::AsyncBufReadExt;
    let mut line = String::new();
    let read = tokio::time::timeout(Duration::from_secs(2), stream.read_line(&mut line)).await;
    assert!(
        !matches!(read, Ok(Ok(0)) | Ok(Err(_))),
        "the client's stream ended: {read:?}"
    );
}
