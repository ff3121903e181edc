//! Issue 49: a virtual server's member requests are served in the config snapshot their client
//! request started with. A member is asked by calling the plain route's handler with a context
//! made from the parent's snapshot (`virtual_servers/fanout.rs`), never through a pingora
//! subrequest whose context loaded the state in force when it started: there, a reload that
//! shifted the pools between the client request's start and a member request's made the member
//! request resolve its pool's index in the new config: another pool's backends, with that
//! pool's credentials.

use super::rpc;
use mcp_gateway_tests::mock::modern::ModernMock;
use mcp_gateway_tests::Gateway;
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
