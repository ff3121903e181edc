//! Virtual servers' resource templates, end to end with real SDK peers on 127.0.0.1 and raw
//! 2026-07-28 requests: matching a URI against a template is linear in the URI (a URI no list
//! names, built so that trying every split takes forever, is answered -32037 at once), and a
//! template is no way around a member's resource `exclude` or `rename` (the URI itself is
//! filtered).
//!
//! Peers: FastMCP 1.30.0 and PyPI mcp 2.3.0 (`resource_rules_server.py`, with
//! `--greedy-template`: the template `run://{a}{b}{c}{d}{e}!`).

use super::hub::{answered, assert_unknown, call, contents, hub_yaml, read, routed};
use super::{rpc, text};
use mcp_gateway_tests::{Gateway, PythonPeer};
use serde_json::json;

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
