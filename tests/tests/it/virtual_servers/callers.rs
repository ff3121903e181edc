//! Issue 49: two callers whose member lists differ each get their own routing. Where a member's
//! pool exchanges the caller's token (`upstream-auth.token-exchange`), what a member lists
//! depends on who asks, so the virtual route keeps a names map per principal
//! (`routing/name_maps.rs`): what one caller's lists (or lookups) taught never decides where
//! another caller's call goes, on either path (the gateway-driven one, which looks a bare name
//! up in the caller's own lists, and the fast path, which resolves `Mcp-Name` in the caller's
//! map).

use super::rpc;
use crate::real_peers_client_credentials::secrets_dir;
use crate::real_peers_token_exchange::{exchange, sts};
use mcp_gateway_tests::auth::{auth_yaml, token, RESOURCE};
use mcp_gateway_tests::mock::modern::ModernMock;
use mcp_gateway_tests::{Gateway, Request};
use serde_json::{json, Value};

/// `request` as `caller` (a JWT of the test IdP).
fn as_caller(request: Request, caller: &str) -> Request {
    request.header(
        "Authorization",
        &format!("Bearer {}", token(caller, "tools")),
    )
}

/// The tool names of a merged `tools/list`, sorted.
fn listed(v: &Value) -> Vec<String> {
    let mut names: Vec<String> = v["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools: {v}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    names
}

/// The names of the tools/calls a member received, in order.
fn calls_heard(member: &ModernMock) -> Vec<String> {
    member
        .requests()
        .into_iter()
        .filter(|m| m["method"] == "tools/call")
        .map(|m| m["params"]["name"].as_str().unwrap_or("").to_owned())
        .collect()
}

/// `/hub` over `a` and `b`, both bare (`prefix: never`), each behind a pool that exchanges the
/// caller's token; each member lists per caller (the exchanged token's `sub`): alice sees `x`
/// on `a` and `y` on `b`, bob sees `y` on `a` and `x` and `bobs` on `b`. So the bare name `x`
/// is `a`'s for alice and `b`'s for bob, and `bobs` exists for bob alone.
///
/// alice lists first (her map: `x` → `a`, `y` → `b`) and calls `bobs` (unknown to her: -32037,
/// and her map remembers she just read every list). Then bob, who never listed, calls `x` and
/// `bobs`: with one map for both, `x` would resolve at once to `a` (alice's list; `a` refuses
/// it: bob may not see `x` there) and `bobs` would be unknown without a look (alice's lookup
/// just read every list); with his own map, `x` is looked up in his own lists (which teach his
/// map `bobs` too) and both reach `b`, `bobs` resolved at once (the fast path). alice's next
/// call of `x`, resolved at once in her map, still reaches `a`; each caller's list shows only
/// its own tools, and `y` goes to `b` for alice and to `a` for bob. Every member's answer
/// names the caller whose exchanged token it got.
#[tokio::test]
async fn two_callers_whose_members_list_differently_each_reach_their_own_member() {
    let dir = secrets_dir("mcpgw-vs-callers");
    let sts = sts(&dir).await;
    let a = ModernMock::per_caller("a", &[("alice", &["x"]), ("bob", &["y"])]).await;
    let b = ModernMock::per_caller("b", &[("alice", &["y"]), ("bob", &["x", "bobs"])]).await;
    let te = exchange(&sts, &dir, "user-mcp");
    let yaml = format!(
        "{}pools:\n  a: {{ era: modern, backends: [{}], {te} }}\n  b: {{ era: modern, backends: [{}], {te} }}\n\
         routes:\n  - path: /hub\n    mode: virtual\n    upstream-path: /mcp\n    members:\n\
         \x20     - {{ name: a, pool: a, prefix: never }}\n      - {{ name: b, pool: b, prefix: never }}\n",
        auth_yaml(RESOURCE),
        a.addr,
        b.addr
    );
    let gw = Gateway::start(&yaml).await;
    let list = |id, caller| as_caller(rpc(id, "tools/list", json!({})), caller);
    let call = |id, name: &str, caller| {
        let params = json!({"name": name, "arguments": {}});
        as_caller(rpc(id, "tools/call", params), caller)
    };
    let text = |resp: mcp_gateway_tests::Response| {
        let v = resp.json();
        v["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("no text: {v}"))
            .to_owned()
    };

    let alices = list(1, "alice").send(gw.addr).await.json();
    assert_eq!(listed(&alices), ["x", "y"], "{alices}");
    let unknown = call(2, "bobs", "alice").send(gw.addr).await.json();
    assert_eq!(unknown["error"]["code"], -32037, "{unknown}");
    assert_eq!(
        unknown["error"]["data"]["reason"], "unknown-name",
        "{unknown}"
    );

    // bob has listed nothing: his calls are looked up in his own lists
    let bob_x = call(3, "x", "bob").send(gw.addr).await;
    assert_eq!(text(bob_x), "b:x:bob", "bob's x is b's");
    let bob_bobs = call(4, "bobs", "bob").send(gw.addr).await;
    assert_eq!(text(bob_bobs), "b:bobs:bob", "bob's own tool");
    // alice's map is hers: bob's lookups changed nothing in it
    let alice_x = call(5, "x", "alice").send(gw.addr).await;
    assert_eq!(text(alice_x), "a:x:alice", "alice's x is a's");

    let bobs = list(6, "bob").send(gw.addr).await.json();
    assert_eq!(listed(&bobs), ["bobs", "x", "y"], "{bobs}");
    let alices = list(7, "alice").send(gw.addr).await.json();
    assert_eq!(
        listed(&alices),
        ["x", "y"],
        "bob's tools are not alice's: {alices}"
    );
    for (id, caller, name, answered) in [
        (8, "alice", "y", "b:y:alice"),
        (9, "bob", "y", "a:y:bob"),
        (10, "bob", "x", "b:x:bob"),
        (11, "alice", "x", "a:x:alice"),
    ] {
        let resp = call(id, name, caller).send(gw.addr).await;
        assert_eq!(text(resp), answered, "{caller} calls {name}");
    }
    // every call a member heard was one it answers for that caller: none went astray
    assert_eq!(calls_heard(&a), ["x", "y", "x"]);
    assert_eq!(calls_heard(&b), ["x", "bobs", "y", "x"]);
    let _ = std::fs::remove_dir_all(dir);
}
