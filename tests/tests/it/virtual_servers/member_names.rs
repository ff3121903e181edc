//! Virtual servers' member names, end to end with real SDK peers on 127.0.0.1 and raw
//! 2026-07-28 requests: `name-match: folded` on the route reaches the members' tool filters
//! (`ADMIN_reset` and fullwidth `ＡＤＭＩＮ_reset` are refused, never forwarded, by a member's
//! `exclude: ["admin_*"]`); a bare member (`prefix: never`, listed first) never takes a name
//! carrying another member's prefix (`b__whoami` reaches `b`); a name no member exposes, called
//! again and again, reads the members' lists once.
//!
//! Peers: FastMCP 1.30.0 (`legacy_server.py`, with `--alias-tool TOOL`: a tool named `TOOL`,
//! e.g. `b__whoami`) and PyPI mcp 2.3.0 (`stateless_server.py`).

use super::hub::{answered, assert_unknown, bare_a_and_b, call, hub_yaml, routed};
use super::{names, rpc, text};
use mcp_gateway_tests::{Gateway, PythonPeer};
use serde_json::{json, Value};

/// Issue: `name-match: folded` folded the route's `authz` and `rules` globs but not the
/// members' `tools.exclude`, so with `exclude: ["admin_*"]` the old gateway forwarded
/// `m.ADMIN_reset` and `m.ＡＤＭＩＮ_reset` to the member as `ADMIN_reset` / `ＡＤＭＩＮ_reset`
/// (a backend that normalizes names would run `admin_reset`; these SDKs answer "unknown tool",
/// not the gateway's -32037, and the call is counted `routed`). Now the members' filters read
/// names folded on such a route: every spelling is -32037 and reaches no member, on the fast
/// path (a 2026-07-28 member, PyPI mcp 2.3.0) and the gateway-driven one (a FastMCP 1.30.0
/// member through the reverse bridge), while allowed tools are served.
#[tokio::test]
async fn folded_name_match_reaches_the_members_tool_exclude() {
    let m = PythonPeer::start(
        "mcp2",
        "stateless_server.py",
        &["--port", "0", "--name", "m"],
    )
    .await;
    let r = PythonPeer::start(
        "mcp1",
        "resource_rules_server.py",
        &["--port", "0", "--name", "r"],
    )
    .await;
    let yaml = hub_yaml(
        &[("m", None, m.addr()), ("r", Some("legacy"), r.addr())],
        "    name-match: folded\n",
        r#"      - { name: m, pool: m, prefix: "m.", tools: { exclude: ["admin_*"] } }
      - { name: r, pool: r, tools: { exclude: ["admin_*"] } }
"#,
    );
    let gw = Gateway::start(&yaml).await;
    let list = answered(&gw, rpc(1, "tools/list", json!({})), "tools/list").await;
    let tools = names(&list.json());
    for shown in ["m.whoami", "r__whoami"] {
        assert!(tools.contains(&shown.to_owned()), "{shown} in {tools:?}");
    }
    for hidden in ["m.admin_reset", "r__admin_reset"] {
        assert!(!tools.contains(&hidden.to_owned()), "{hidden} in {tools:?}");
    }
    let fullwidth = "\u{ff21}\u{ff24}\u{ff2d}\u{ff29}\u{ff2e}_reset";
    let mut id = 10;
    for prefix in ["m.", "r__"] {
        for own in ["admin_reset", "ADMIN_reset", "Admin_Reset", fullwidth] {
            id += 1;
            let name = format!("{prefix}{own}");
            let resp = answered(&gw, call(id, &name), &name).await;
            assert_unknown(&resp, id, &name);
        }
    }
    let resp = answered(&gw, call(2, "m.whoami"), "m.whoami").await;
    assert_eq!(text(&resp), "m", "{}", resp.text());
    let resp = answered(&gw, call(3, "r__whoami"), "r__whoami").await;
    assert_eq!(text(&resp), "r", "{}", resp.text());
    // only the allowed calls reached a member
    assert_eq!(routed(&gw, "m").await, 1.0, "m: only m.whoami was routed");
    assert_eq!(routed(&gw, "r").await, 1.0, "r: only r__whoami was routed");
}

/// Issue: a bare member (`prefix: never`) listed first that lists a tool literally named
/// `b__whoami` took that name from member `b` (prefix `b__`) by the run-time collision rule
/// (the first member in the config keeps a name): once the lists were read, the old gateway's
/// merged list showed `a`'s alias under `b__whoami` and a call of `b__whoami` reached `a` with
/// `b`'s caller's arguments. A prefix now belongs to its member: `a`'s `b__whoami` is left out
/// (no collision), the listed `b__whoami` is `b`'s own `whoami`, and the call reaches `b`.
#[tokio::test]
async fn a_bare_member_never_takes_a_name_carrying_another_members_prefix() {
    let a = PythonPeer::start(
        "mcp1",
        "legacy_server.py",
        &["--port", "0", "--name", "a", "--alias-tool", "b__whoami"],
    )
    .await;
    let b = PythonPeer::legacy_v1("b", 0).await;
    let yaml = bare_a_and_b(&a, &b);
    let gw = Gateway::start(&yaml).await;
    // twice: the second list is merged with what the first one taught the names map
    for id in [1, 2] {
        let list = answered(&gw, rpc(id, "tools/list", json!({})), "tools/list").await;
        assert_eq!(list.status(), 200, "{}", list.text());
        let v = list.json();
        let tools = names(&v);
        for shown in ["whoami", "count", "b__count"] {
            assert!(tools.contains(&shown.to_owned()), "{shown} in {tools:?}");
        }
        let listed: Vec<&Value> = v["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["name"] == "b__whoami")
            .collect();
        assert_eq!(listed.len(), 1, "one b__whoami: {v}");
        assert_eq!(
            listed[0]["description"], "Return this backend's name.",
            "b's own whoami, not a's alias: {v}"
        );
    }
    let resp = answered(&gw, call(3, "b__whoami"), "b__whoami").await;
    assert_eq!(text(&resp), "b", "b__whoami reached b: {}", resp.text());
    let resp = answered(&gw, call(4, "whoami"), "whoami").await;
    assert_eq!(text(&resp), "a", "a's bare names are a's: {}", resp.text());
    let collisions = gw
        .metric("mcpgw_virtual_member_events_total{event=\"collision\",route=\"/hub\"}")
        .await;
    assert_eq!(collisions, 0.0, "a's b__whoami never competed with b's");
    assert_eq!(routed(&gw, "a").await, 1.0, "a got only its own whoami");
}

/// Issue 48, item 13: a name no member exposes, on a route with a bare (`prefix: never`)
/// member, was looked up in every member's lists on every call (10 calls: 200 upstream list
/// requests). A lookup now answers for what it did not find for a few seconds: ten calls of an
/// unknown name read each member's `tools/list` once, and every one is answered -32037.
#[tokio::test]
async fn an_unknown_name_called_again_and_again_reads_the_lists_once() {
    let a = PythonPeer::legacy_v1("a", 0).await;
    let b = PythonPeer::legacy_v1("b", 0).await;
    let yaml = bare_a_and_b(&a, &b);
    let gw = Gateway::start(&yaml).await;
    let lists = |member: &'static str| {
        let gw = &gw;
        async move {
            gw.metric(&format!(
                "mcpgw_requests_total{{method=\"tools/list\",outcome=\"ok\",route=\"/hub#{member}\"}}"
            ))
            .await
        }
    };
    for id in 0..10 {
        let resp = answered(&gw, call(id, "no_such_tool"), "no_such_tool").await;
        assert_unknown(&resp, id, "no_such_tool");
    }
    assert_eq!(lists("a").await, 1.0, "one lookup read a's list");
    assert_eq!(lists("b").await, 1.0, "one lookup read b's list");
    // a name the lookup found is still served
    let resp = answered(&gw, call(20, "whoami"), "whoami").await;
    assert_eq!(text(&resp), "a", "{}", resp.text());
}
