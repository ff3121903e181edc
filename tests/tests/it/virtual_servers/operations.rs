//! Issue 33, operating virtual routes: a member that goes down and comes back, `authz` rules
//! and cursors that read the exposed names and the caller, a reload that adds and removes
//! members. Real FastMCP 1.30.0 and PyPI mcp 2.3.0 members, raw 2026-07-28 requests.

use super::{names, rpc, rpc_on, text};
use mcp_gateway_tests::{Gateway, PythonPeer, Request};
use serde_json::{json, Value};

/// A whole member down (its only pod SIGKILLed) and back on the same port: its tools leave
/// the merged list (counted `left-out`), a call to one gets the gateway's JSON-RPC error
/// naming the member, the other members answer throughout, and its tools return with it.
#[tokio::test]
async fn a_member_that_is_down_leaves_the_lists_its_calls_name_it_and_it_comes_back() {
    let a = PythonPeer::start("mcp1", "legacy_server.py", &["--port", "0", "--name", "a"]).await;
    let mut m = PythonPeer::start(
        "mcp2",
        "stateless_server.py",
        &["--port", "0", "--name", "m"],
    )
    .await;
    let port = m.addr().rsplit(':').next().unwrap().to_owned();
    let yaml = format!(
        "pools:\n  a: {{ era: legacy, backends: [{}] }}\n  m: {{ backends: [{}] }}\n\
         routes:\n  - path: /hub\n    mode: virtual\n    upstream-path: /mcp\n    members:\n      - {{ name: a, pool: a }}\n      - {{ name: m, pool: m }}\n",
        a.addr(),
        m.addr()
    );
    let gw = Gateway::start(&yaml).await;
    let listed = |v: &Value, name: &str| names(v).contains(&name.to_owned());
    let list = rpc(1, "tools/list", json!({})).send(gw.addr).await.json();
    assert!(
        listed(&list, "m__whoami") && listed(&list, "a__whoami"),
        "{list}"
    );
    m.kill().await;
    let list = rpc(2, "tools/list", json!({})).send(gw.addr).await.json();
    assert!(!listed(&list, "m__whoami"), "m's tools left: {list}");
    assert!(listed(&list, "a__whoami"), "a still listed: {list}");
    let left_out =
        "mcpgw_virtual_member_events_total{event=\"left-out\",member=\"m\",route=\"/hub\"}";
    assert!(gw.metric(left_out).await >= 1.0);
    let resp = rpc(
        3,
        "tools/call",
        json!({"name": "m__whoami", "arguments": {}}),
    )
    .send(gw.addr)
    .await;
    let v = resp.json();
    assert_eq!(v["id"], 3, "{v}");
    assert_eq!(v["error"]["code"], -32011, "{v}");
    assert_eq!(v["error"]["data"]["member"], "m", "{v}");
    let resp = rpc(
        4,
        "tools/call",
        json!({"name": "a__whoami", "arguments": {}}),
    )
    .send(gw.addr)
    .await;
    assert_eq!(text(&resp), "a", "the other member never noticed");
    // the admin API shows each member's state and what it exposes
    let (status, body) = gw.admin_get("/admin/virtual").await;
    assert_eq!(status, 200, "{body}");
    let view: Value = serde_json::from_str(&body).unwrap();
    let member = |name: &str| {
        view["virtual"][0]["members"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} in {view}"))
    };
    assert_eq!(member("m")["state"], "down", "{view}");
    assert_eq!(member("a")["state"], "up", "{view}");
    assert!(member("a")["tools"].as_u64().unwrap() > 0, "{view}");
    let _m = PythonPeer::start(
        "mcp2",
        "stateless_server.py",
        &["--port", &port, "--name", "m"],
    )
    .await;
    mcp_gateway_tests::assert_eventually!(
        std::time::Duration::from_secs(10),
        listed(
            &rpc(5, "tools/list", json!({})).send(gw.addr).await.json(),
            "m__whoami"
        ),
        "m's tools came back with it"
    );
    let resp = rpc(
        6,
        "tools/call",
        json!({"name": "m__whoami", "arguments": {}}),
    )
    .send(gw.addr)
    .await;
    assert_eq!(text(&resp), "m");
}

/// Policy reads the exposed names: an `authz` rule on `m.*` (scope `admin`, which neither API
/// key has) refuses a call of `m.whoami` with 403 -32024 and filters `m.*` out of the merged
/// list, while the bare names of the other member stay callable; a merged cursor is the
/// caller's own (another principal's use of it is refused by name); a listen naming a URI a
/// rule keeps from the caller is refused.
#[tokio::test]
async fn authz_rules_and_cursors_read_the_exposed_names_and_the_caller() {
    let a = PythonPeer::start("mcp1", "legacy_server.py", &["--port", "0", "--name", "a"]).await;
    let m = PythonPeer::start("mcp2", "paged_server.py", &["--port", "0", "--name", "m"]).await;
    let yaml = format!(
        "{}pools:\n  a: {{ era: legacy, backends: [{}] }}\n  m: {{ backends: [{}] }}\n\
         routes:\n  - path: /other\n    mode: virtual\n    upstream-path: /mcp\n    members:\n      - {{ name: m, pool: m, prefix: \"m.\" }}\n  - path: /hub\n    mode: virtual\n    upstream-path: /mcp\n    members:\n      - {{ name: a, pool: a, prefix: never }}\n      - {{ name: m, pool: m, prefix: \"m.\" }}\n    authz:\n      - {{ match: {{ method: tools/call, name: \"m.*\" }}, require: {{ scope: admin }} }}\n      - {{ match: {{ method: resources/subscribe, name: \"secret://*\" }}, require: {{ scope: admin }} }}\n",
        crate::pooled_bridge::keys_yaml(),
        a.addr(),
        m.addr()
    );
    let gw = Gateway::start(&yaml).await;
    let as_one = |r: Request| r.header("X-Api-Key", "k-one");
    let refused = as_one(rpc(
        1,
        "tools/call",
        json!({"name": "m.t00", "arguments": {}}),
    ))
    .send(gw.addr)
    .await;
    assert_eq!(refused.status(), 403, "{}", refused.text());
    assert_eq!(refused.json()["error"]["code"], -32024);
    let allowed = as_one(rpc(
        2,
        "tools/call",
        json!({"name": "whoami", "arguments": {}}),
    ))
    .send(gw.addr)
    .await;
    assert_eq!(text(&allowed), "a");
    let list = as_one(rpc(3, "tools/list", json!({})))
        .send(gw.addr)
        .await
        .json();
    let tools = names(&list);
    assert!(tools.contains(&"whoami".to_owned()), "{tools:?}");
    assert!(
        tools.iter().all(|t| !t.starts_with("m.")),
        "m.* filtered: {tools:?}"
    );
    let cursor = list["result"]["nextCursor"]
        .as_str()
        .expect("m pages")
        .to_owned();
    let theirs = rpc(4, "tools/list", json!({"cursor": cursor}))
        .header("X-Api-Key", "k-two")
        .send(gw.addr)
        .await;
    assert_eq!(theirs.status(), 400, "{}", theirs.text());
    assert_eq!(
        theirs.json()["error"]["data"]["reason"],
        "cursor-of-another-caller"
    );
    let elsewhere = as_one(rpc_on("/other", 6, "tools/list", json!({"cursor": cursor})))
        .send(gw.addr)
        .await;
    assert_eq!(elsewhere.status(), 400, "{}", elsewhere.text());
    assert_eq!(
        elsewhere.json()["error"]["data"]["reason"],
        "cursor-of-another-virtual-server"
    );
    // a listen naming a URI the caller may not subscribe to: refused whole, as on a plain route
    let filter = json!({"notifications": {"toolsListChanged": true,
        "resourceSubscriptions": ["secret://plans"]}});
    let listen = as_one(rpc(7, "subscriptions/listen", filter))
        .send(gw.addr)
        .await;
    assert_eq!(listen.status(), 403, "{}", listen.text());
    assert_eq!(listen.json()["id"], 7);
    assert_eq!(listen.json()["error"]["code"], -32024);
    let mine = as_one(rpc(5, "tools/list", json!({"cursor": cursor})))
        .send(gw.addr)
        .await;
    assert_eq!(mine.status(), 200, "{}", mine.text());
    // a session-era client of the same principal: the same rules on the same names
    let legacy = |body: Value, sid: Option<&str>| {
        let mut r = Request::post("/hub", body.to_string()).header("X-Api-Key", "k-one");
        if let Some(sid) = sid {
            r = r
                .header("Mcp-Session-Id", sid)
                .header("MCP-Protocol-Version", "2025-11-25");
        }
        r
    };
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
    let resp = legacy(init, None).send(gw.addr).await;
    let sid = resp
        .head
        .header("mcp-session-id")
        .expect("a session")
        .to_owned();
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let tools = names(&legacy(list, Some(&sid)).send(gw.addr).await.json());
    assert!(tools.contains(&"whoami".to_owned()), "{tools:?}");
    assert!(
        tools.iter().all(|t| !t.starts_with("m.")),
        "m.* filtered for legacy clients too: {tools:?}"
    );
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "m.t00", "arguments": {}}});
    let refused = legacy(call, Some(&sid)).send(gw.addr).await;
    assert_eq!(refused.status(), 403, "{}", refused.text());
    assert_eq!(refused.json()["id"], 3);
}

/// A reload adds a member and removes another without a restart: the next merged list has the
/// new member's items and not the removed one's, and a call of a removed member's name is
/// -32037.
#[tokio::test]
async fn a_reload_adds_and_removes_members() {
    let a = PythonPeer::start("mcp1", "legacy_server.py", &["--port", "0", "--name", "a"]).await;
    let m = PythonPeer::start(
        "mcp2",
        "stateless_server.py",
        &["--port", "0", "--name", "m"],
    )
    .await;
    let config = |members: &str| {
        format!(
            "pools:\n  a: {{ era: legacy, backends: [{}] }}\n  m: {{ backends: [{}] }}\n\
             routes:\n  - path: /hub\n    mode: virtual\n    upstream-path: /mcp\n    members:\n{members}",
            a.addr(),
            m.addr()
        )
    };
    let gw = Gateway::start(&config("      - { name: a, pool: a }\n")).await;
    let list = |id| rpc(id, "tools/list", json!({}));
    let tools = names(&list(1).send(gw.addr).await.json());
    assert!(tools.contains(&"a__whoami".to_owned()) && !tools.iter().any(|t| t.starts_with("m__")));
    gw.rewrite_config(&config("      - { name: m, pool: m }\n"));
    mcp_gateway_tests::assert_eventually!(
        std::time::Duration::from_secs(10),
        names(&list(2).send(gw.addr).await.json()).contains(&"m__whoami".to_owned()),
        "the added member's tools are listed"
    );
    let tools = names(&list(3).send(gw.addr).await.json());
    assert!(!tools.iter().any(|t| t.starts_with("a__")), "{tools:?}");
    let gone = rpc(
        4,
        "tools/call",
        json!({"name": "a__whoami", "arguments": {}}),
    )
    .send(gw.addr)
    .await;
    assert_eq!(gone.json()["error"]["code"], -32037, "{}", gone.text());
}
