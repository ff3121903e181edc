//! Virtual servers, round 5 (commit fa2e457), end to end with real SDK peers on 127.0.0.1 and
//! raw 2026-07-28 requests: resource-template matching is linear in the URI (a URI no list
//! names, built so that trying every split takes forever, is answered -32037 at once); a
//! template is no way around a member's resource `exclude` or `rename` (the URI itself is
//! filtered); `name-match: folded` on the route reaches the members' tool filters
//! (`ADMIN_reset` and fullwidth `ＡＤＭＩＮ_reset` are refused, never forwarded, by a member's
//! `exclude: ["admin_*"]`); a bare member (`prefix: never`, listed first) never takes a name
//! carrying another member's prefix (`b__whoami` reaches `b`).
//!
//! Peers: FastMCP 1.30.0 (`legacy_server.py`, `resource_rules_server.py`) and PyPI mcp 2.3.0
//! (`stateless_server.py`, `resource_rules_server.py`), with two options added for these tests:
//! `resource_rules_server.py --greedy-template` (the template `run://{a}{b}{c}{d}{e}!`) and
//! `legacy_server.py --alias-tool TOOL` (a tool named `TOOL`, e.g. `b__whoami`).

use super::{names, rpc, rpc_on, text, META};
use base64::Engine;
use mcp_gateway_tests::{Gateway, PythonPeer, Request, Response};
use serde_json::{json, Value};
use std::time::Duration;

/// A generous bound on every answer (a debug build on a loaded machine answers in well under a
/// second): the failure signal of a gateway stuck in a match, never a timing assertion.
const ANSWER_WITHIN: Duration = Duration::from_secs(20);

/// `req` sent to the gateway, answered within [`ANSWER_WITHIN`].
async fn answered(gw: &Gateway, req: Request, what: &str) -> Response {
    tokio::time::timeout(ANSWER_WITHIN, req.send(gw.addr))
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer within {ANSWER_WITHIN:?}"))
}

/// A 2026-07-28 `resources/read` of `uri` on `/hub` (`Mcp-Name` is the URI, as the body says).
fn read(id: u64, uri: &str) -> Request {
    rpc_on("/hub", id, "resources/read", json!({"uri": uri})).header("Mcp-Name", uri)
}

/// A 2026-07-28 `tools/call` of `name` on `/hub`; a name that is not ASCII goes in `Mcp-Name` in
/// its `=?base64?…?=` form (a header value carries no raw UTF-8).
fn call(id: u64, name: &str) -> Request {
    let header = if name.is_ascii() {
        name.to_owned()
    } else {
        let b64 = base64::engine::general_purpose::STANDARD.encode(name.as_bytes());
        format!("=?base64?{b64}?=")
    };
    let mut body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": {}}});
    body["params"]["_meta"] = serde_json::from_str(META).unwrap();
    Request::post("/hub", body.to_string())
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", &header)
}

/// The gateway's own -32037 `unknown-name` for `name`, with the request's id.
fn assert_unknown(resp: &Response, id: u64, name: &str) {
    assert_eq!(resp.status(), 200, "{name}: {}", resp.text());
    let v = resp.json();
    assert_eq!(v["id"], id, "{name}: {v}");
    assert_eq!(v["error"]["code"], -32037, "{name}: {v}");
    assert_eq!(v["error"]["data"]["reason"], "unknown-name", "{name}: {v}");
    assert_eq!(v["error"]["data"]["name"], name, "{name}: {v}");
}

/// The text of a `resources/read` answer's first content.
fn contents(resp: &Response) -> String {
    let v = resp.json();
    v["result"]["contents"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no contents: {v}"))
        .to_owned()
}

/// How many calls the gateway routed to `member` of `/hub`.
async fn routed(gw: &Gateway, member: &str) -> f64 {
    gw.metric(&format!(
        "mcpgw_virtual_member_events_total{{event=\"routed\",member=\"{member}\",route=\"/hub\"}}"
    ))
    .await
}

/// A virtual route `/hub` (upstream path `/mcp`) with `extra` route keys and these members;
/// `pools` are `(name, era, address)` (`None`: the era is found out).
fn hub_yaml(pools: &[(&str, Option<&str>, String)], extra: &str, members: &str) -> String {
    let mut yaml = String::from("pools:\n");
    for (name, era, addr) in pools {
        let era = era.map(|e| format!("era: {e}, ")).unwrap_or_default();
        yaml.push_str(&format!("  {name}: {{ {era}backends: [{addr}] }}\n"));
    }
    yaml.push_str(&format!(
        "routes:\n  - path: /hub\n    mode: virtual\n    upstream-path: /mcp\n{extra}    members:\n{members}"
    ));
    yaml
}

/// `/hub` over two legacy peers: `a` bare (`prefix: never`, listed first) and `b` prefixed.
fn bare_a_and_b(a: &PythonPeer, b: &PythonPeer) -> String {
    hub_yaml(
        &[
            ("a", Some("legacy"), a.addr()),
            ("b", Some("legacy"), b.addr()),
        ],
        "",
        "      - { name: a, pool: a, prefix: never }\n      - { name: b, pool: b }\n",
    )
}

/// Issue: the old matcher tried every split of the URI between a template's expressions, one
/// recursion per expression (`(1..=limit).rev().any(...)`): against `run://{a}{b}{c}{d}{e}!`
/// (five expressions in a row, then a literal that never comes) a 300-byte URI means some
/// C(300, 5) ≈ 2·10^10 tries, so on the old gateway the read below is never answered (the
/// worker spins; the 20 s bound fails the test). The automaton reads the URI once: -32037 at
/// once, and the route goes on serving (the read through the same template, a call).
#[tokio::test]
async fn a_long_uri_no_member_lists_is_answered_unknown_at_once_and_the_route_goes_on() {
    let r = PythonPeer::start(
        "mcp1",
        "resource_rules_server.py",
        &["--port", "0", "--name", "r", "--greedy-template"],
    )
    .await;
    let yaml = hub_yaml(
        &[("r", Some("legacy"), r.addr())],
        "",
        "      - { name: r, pool: r }\n",
    );
    let gw = Gateway::start(&yaml).await;
    // the member's templates reach the merged list (the long URI below is matched against them)
    let list = answered(
        &gw,
        rpc(1, "resources/templates/list", json!({})),
        "templates",
    )
    .await;
    assert_eq!(list.status(), 200, "{}", list.text());
    let v = list.json();
    let templates: Vec<&str> = v["result"]["resourceTemplates"]
        .as_array()
        .unwrap_or_else(|| panic!("no templates: {v}"))
        .iter()
        .filter_map(|t| t["uriTemplate"].as_str())
        .collect();
    assert!(templates.contains(&"run://{a}{b}{c}{d}{e}!"), "{v}");
    // a URI it expands goes to the member through the template
    let uri = "run://abcde!";
    let resp = answered(&gw, read(2, uri), uri).await;
    assert_eq!(contents(&resp), "run a b c d e", "{}", resp.text());

    let long = format!("run://{}", "y".repeat(300));
    let resp = answered(&gw, read(3, &long), "the 300-byte URI").await;
    assert_unknown(&resp, 3, &long);

    // the route still serves: a read through the other template, a static resource, a call
    let resp = answered(&gw, read(4, "admin://users/ada"), "admin://users/ada").await;
    assert_eq!(contents(&resp), "user ada", "{}", resp.text());
    let resp = answered(&gw, read(5, "public://info"), "public://info").await;
    assert_eq!(contents(&resp), "info", "{}", resp.text());
    let resp = answered(&gw, call(6, "r__whoami"), "r__whoami").await;
    assert_eq!(text(&resp), "r", "{}", resp.text());
}

/// Issue: a URI no list names went to the first member with a template expanding it, the
/// member's resource filters never asked, so `exclude: ["admin://users/root"]` was bypassed by
/// the template `admin://users/{uid}` (the old gateway forwarded it: "user root"), and a URI
/// renamed away was still read under its own name. The URI itself is now filtered: the excluded
/// and the renamed-away URIs are -32037 (nothing forwarded), another URI of the template is
/// served, and the renamed URI reaches the member under its own URI. A PyPI mcp 2.3.0 member (a
/// 2026-07-28 backend).
#[tokio::test]
async fn a_template_is_no_way_around_a_members_resource_exclude_or_rename() {
    let r = PythonPeer::start(
        "mcp2",
        "resource_rules_server.py",
        &["--port", "0", "--name", "r"],
    )
    .await;
    let yaml = hub_yaml(
        &[("r", None, r.addr())],
        "",
        r#"      - name: r
        pool: r
        resources:
          exclude: ["admin://users/root"]
          rename: { "admin://users/ada": "admin://users/lovelace" }
"#,
    );
    let gw = Gateway::start(&yaml).await;
    let resp = answered(&gw, read(1, "admin://users/grace"), "grace").await;
    assert_eq!(contents(&resp), "user grace", "{}", resp.text());
    for (id, uri) in [(2, "admin://users/root"), (3, "admin://users/ada")] {
        let resp = answered(&gw, read(id, uri), uri).await;
        assert_unknown(&resp, id, uri);
    }
    let resp = answered(&gw, read(4, "admin://users/lovelace"), "lovelace").await;
    assert_eq!(
        contents(&resp),
        "user ada",
        "the member read its own URI: {}",
        resp.text()
    );
    // a listed resource is unaffected
    let resp = answered(&gw, read(5, "public://info"), "public://info").await;
    assert_eq!(contents(&resp), "info", "{}", resp.text());
    assert_eq!(
        routed(&gw, "r").await,
        3.0,
        "the refused reads were not routed"
    );
}

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

/// Issue 48, item 8: merged lists hold a bounded number of bytes of members' answers. With
/// `limits.max-merged-list-bytes` below what two FastMCP 1.30.0 members list, `tools/list`
/// is refused with 503 -32018 (`reason: merged-list-bytes`, the caller's share named), never
/// a list silently missing a member; a call on the same route goes on; with the default
/// bound the same list is merged whole. (Before, nothing bounded them: a 16 MB member list
/// cost 50–75 MB per concurrent merge.)
#[tokio::test]
async fn merged_lists_are_refused_past_their_byte_bound_and_nothing_else_is() {
    let a = PythonPeer::legacy_v1("a", 0).await;
    let b = PythonPeer::legacy_v1("b", 0).await;
    let pools = [
        ("a", Some("legacy"), a.addr()),
        ("b", Some("legacy"), b.addr()),
    ];
    let members = "      - { name: a, pool: a }\n      - { name: b, pool: b }\n";
    let tight = format!(
        "limits: {{ max-merged-list-bytes: 400 }}\n{}",
        hub_yaml(&pools, "", members)
    );
    let gw = Gateway::start(&tight).await;
    let list = answered(&gw, rpc(1, "tools/list", json!({})), "tools/list").await;
    assert_eq!(list.status(), 503, "{}", list.text());
    assert!(list.head.header("retry-after").is_some(), "{:?}", list.head);
    let v = list.json();
    assert_eq!(v["id"], 1, "{v}");
    assert_eq!(v["error"]["code"], -32018, "{v}");
    assert_eq!(v["error"]["data"]["reason"], "merged-list-bytes", "{v}");
    assert_eq!(v["error"]["data"]["scope"], "caller", "{v}");
    assert_eq!(v["error"]["data"]["limit"], 100, "a quarter of 400: {v}");
    let resp = answered(&gw, call(2, "a__whoami"), "a__whoami").await;
    assert_eq!(text(&resp), "a", "{}", resp.text());
    drop(gw);
    let gw = Gateway::start(&hub_yaml(&pools, "", members)).await;
    let list = answered(&gw, rpc(3, "tools/list", json!({})), "tools/list").await;
    assert_eq!(list.status(), 200, "{}", list.text());
    let tools = names(&list.json());
    for shown in ["a__whoami", "b__whoami"] {
        assert!(tools.contains(&shown.to_owned()), "{shown} in {tools:?}");
    }
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
