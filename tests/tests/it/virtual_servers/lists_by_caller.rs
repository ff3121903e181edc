//! Issue 59, item 9: a member whose list depends on who asks keeps its names per caller,
//! whatever tells callers apart. Issue 49 gave each caller a names map of its own only where a
//! member's pool exchanges the caller's token; a pool that sends identity headers, or a
//! gateway without `auth` that passes the client's own `Authorization` on, still had every
//! caller list into one map, so one caller's list added names to another's (and removed
//! them), and decided which member ran another caller's call. Now each caller has its own map
//! there too (`routing/name_maps.rs`): its principal's behind identity headers, its
//! `Authorization`'s (a digest) where that goes to the members.
//!
//! Peers: two PyPI mcp 2.3.0 servers (`header_tools_server.py`, 2026-07-28, stateless) that
//! list tools by a request header: `X-User` (the gateway's identity header) or `Authorization`
//! (the client's own, passed through). Calls take both paths: the fast path (a name the
//! caller's map resolves at once) and the gateway-driven one (a bare name looked up in the
//! caller's own lists).

use super::rpc;
use mcp_gateway_tests::auth::{auth_yaml, token, RESOURCE};
use mcp_gateway_tests::{Gateway, PythonPeer, Request, Response};
use serde_json::{json, Value};

/// Two members, both bare (`prefix: never`): alice sees `x` on `a` and `y` on `b`; bob sees
/// `y` on `a` and `x` and `bobs` on `b`. So `x` is `a`'s for alice and `b`'s for bob, and
/// `bobs` is bob's alone. `by` is the header the peers read the caller from.
async fn members(by: &str) -> (PythonPeer, PythonPeer) {
    let peer = |name: &'static str, alice: &'static str, bob: &'static str| {
        let (alice, bob) = (format!("alice={alice}"), format!("bob={bob}"));
        let by = by.to_owned();
        async move {
            let args = [
                "--port", "0", "--name", name, "--by", &by, "--tools", &alice, "--tools", &bob,
            ];
            PythonPeer::start("mcp2", "header_tools_server.py", &args).await
        }
    };
    (peer("a", "x", "y").await, peer("b", "y", "x,bobs").await)
}

/// `/hub` over `a` and `b` (pools `a` and `b`, `pool_extra` on each), after `head`.
fn hub(head: &str, a: &PythonPeer, b: &PythonPeer, pool_extra: &str) -> String {
    format!(
        "{head}pools:\n  a: {{ era: modern, backends: [{}]{pool_extra} }}\n  b: {{ era: modern, backends: [{}]{pool_extra} }}\n\
         routes:\n  - path: /hub\n    mode: virtual\n    upstream-path: /mcp\n    members:\n\
         \x20     - {{ name: a, pool: a, prefix: never }}\n      - {{ name: b, pool: b, prefix: never }}\n",
        a.addr(),
        b.addr()
    )
}

/// The tool names of a merged `tools/list`, sorted.
fn listed(v: &Value) -> Vec<String> {
    let mut names: Vec<String> = v["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools: {v}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap_or("").to_owned())
        .collect();
    names.sort();
    names
}

fn text(resp: Response) -> String {
    let v = resp.json();
    v["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text: {v}"))
        .to_owned()
}

/// alice lists first and calls `bobs` (not hers: -32037); bob, who never listed, then calls
/// `x` and `bobs`: with one map for both, `x` went at once to `a` (alice's list; `a` has no
/// `x` for bob) and `bobs` was unknown without a look (alice's lookup had just read every
/// list). With his own map both reach `b`. Each caller's list shows only its own tools, after
/// the other listed too, and each one's calls reach the member that serves them that name,
/// while a name only the other has stays unknown (-32037) to it.
async fn each_caller_sees_and_calls_only_its_own_names(
    gw: &Gateway,
    as_caller: fn(Request, &str) -> Request,
) {
    let list = |id, caller| as_caller(rpc(id, "tools/list", json!({})), caller);
    let call = |id, name: &str, caller| {
        as_caller(
            rpc(id, "tools/call", json!({"name": name, "arguments": {}})),
            caller,
        )
    };
    let unknown = |v: Value, what: &str| {
        assert_eq!(v["error"]["code"], -32037, "{what}: {v}");
        assert_eq!(v["error"]["data"]["reason"], "unknown-name", "{what}: {v}");
    };
    let alices = list(1, "alice").send(gw.addr).await.json();
    assert_eq!(listed(&alices), ["x", "y"], "{alices}");
    unknown(
        call(2, "bobs", "alice").send(gw.addr).await.json(),
        "alice's bobs",
    );

    assert_eq!(
        text(call(3, "x", "bob").send(gw.addr).await),
        "b:x:bob",
        "bob's x is b's"
    );
    assert_eq!(
        text(call(4, "bobs", "bob").send(gw.addr).await),
        "b:bobs:bob"
    );
    assert_eq!(text(call(5, "x", "alice").send(gw.addr).await), "a:x:alice");

    let bobs = list(6, "bob").send(gw.addr).await.json();
    assert_eq!(listed(&bobs), ["bobs", "x", "y"], "{bobs}");
    let alices = list(7, "alice").send(gw.addr).await.json();
    assert_eq!(
        listed(&alices),
        ["x", "y"],
        "bob's list added nothing: {alices}"
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
    unknown(
        call(12, "bobs", "alice").send(gw.addr).await.json(),
        "alice's bobs after bob's list",
    );
}

/// Members behind pools that send the caller's `sub` as `X-User` (`identity-headers`), on a
/// gateway that authenticates callers (JWTs of the test IdP).
#[tokio::test]
async fn behind_identity_headers_each_caller_sees_and_calls_only_its_own_names() {
    let (a, b) = members("x-user").await;
    let yaml = hub(
        &auth_yaml(RESOURCE),
        &a,
        &b,
        ", identity-headers: { subject: X-User }",
    );
    let gw = Gateway::start(&yaml).await;
    fn as_caller(request: Request, caller: &str) -> Request {
        let bearer = format!("Bearer {}", token(caller, "tools"));
        request.header("Authorization", &bearer)
    }
    each_caller_sees_and_calls_only_its_own_names(&gw, as_caller).await;
}

/// Members that get the client's own `Authorization` (a gateway without `auth` passes it on).
#[tokio::test]
async fn with_the_clients_authorization_passed_on_each_caller_sees_and_calls_only_its_own_names() {
    let (a, b) = members("authorization").await;
    let gw = Gateway::start(&hub("", &a, &b, "")).await;
    fn as_caller(request: Request, caller: &str) -> Request {
        request.header("Authorization", &format!("Bearer {caller}"))
    }
    each_caller_sees_and_calls_only_its_own_names(&gw, as_caller).await;
}
