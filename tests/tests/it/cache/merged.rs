//! A virtual server's own answers through the cache: its merged lists and `server/discover`
//! are kept as results of their own, fresh as long as the least fresh member's, `public` only
//! when every member's is; a warm merged list asks no member; a member that goes down is a new
//! key (its tools are not served from before), and an answer that left a member out is not
//! kept.

use super::{request_at, Backend};
use serde_json::{json, Value};
use std::time::Duration;

fn list(tool: &str, ttl: u64, scope: &str) -> String {
    format!(
        r#"{{"resultType":"complete","tools":[{{"name":"{tool}","inputSchema":{{"type":"object"}}}}],"ttlMs":{ttl},"cacheScope":"{scope}"}}"#
    )
}

fn discover(ttl: u64) -> String {
    format!(
        r#"{{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{{"tools":{{}}}},"ttlMs":{ttl},"cacheScope":"public"}}"#
    )
}

/// A virtual route `/hub` over members `a` and `b` (pools `a` and `b`, `pool_extra` on each).
fn hub(a: &Backend, b: &Backend, pool_extra: &str) -> String {
    format!(
        "pools:\n  a: {{ backends: [{}]{pool_extra} }}\n  b: {{ backends: [{}]{pool_extra} }}\n\
         routes:\n  - path: /hub\n    mode: virtual\n    server-info: {{ name: hub, version: 1.0.0 }}\n    members:\n\
         \x20     - {{ name: a, pool: a, prefix: never }}\n      - {{ name: b, pool: b, prefix: never }}\n",
        a.addr, b.addr
    )
}

fn names(answer: &Value) -> Vec<String> {
    let tools = answer["result"]["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    tools
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn a_warm_merged_list_and_discover_ask_no_member_and_live_as_long_as_the_least_fresh() {
    let a_list = list("x", 60_000, "public");
    let b_list = list("y", 30_000, "public");
    let (a_discover, b_discover) = (discover(60_000), discover(20_000));
    let a = Backend::start(
        &[("tools/list", &a_list), ("server/discover", &a_discover)],
        Duration::ZERO,
    )
    .await;
    let b = Backend::start(
        &[("tools/list", &b_list), ("server/discover", &b_discover)],
        Duration::ZERO,
    )
    .await;
    let gw = mcp_gateway_tests::Gateway::start(&hub(&a, &b, "")).await;
    for (method, ttl) in [("tools/list", 30_000), ("server/discover", 20_000)] {
        let first = request_at("/hub", "1", method, json!({}), None)
            .send(gw.addr)
            .await;
        assert_eq!(first.status(), 200, "{}", first.text());
        assert_eq!(
            first.head.header("mcp-gateway-cache"),
            Some("miss"),
            "{method}"
        );
        let v = first.json();
        assert_eq!(v["result"]["ttlMs"], ttl, "the least fresh member's: {v}");
        assert_eq!(v["result"]["cacheScope"], "public", "{v}");
        // (the era probe may send `server/discover` too: counted from here)
        let asked = (a.count(method), b.count(method));
        let second = request_at("/hub", r#""again""#, method, json!({}), Some("anyone"))
            .send(gw.addr)
            .await;
        assert_eq!(
            second.head.header("mcp-gateway-cache"),
            Some("hit"),
            "{method}"
        );
        let v = second.json();
        assert_eq!(v["id"], "again");
        assert!(v["result"]["ttlMs"].as_u64().unwrap() <= ttl, "{v}");
        let now = (a.count(method), b.count(method));
        assert_eq!(now, asked, "{method}: a warm answer asks no member");
    }
    let merged = request_at("/hub", "3", "tools/list", json!({}), None)
        .send(gw.addr)
        .await;
    assert_eq!(names(&merged.json()), ["x", "y"]);
    let hits = gw
        .metric("mcpgw_cache_total{method=\"tools/list\",result=\"hit\",route=\"/hub\"}")
        .await;
    assert_eq!(hits, 2.0);
}

#[tokio::test]
async fn a_private_member_makes_the_merged_list_private_to_each_token() {
    let a_list = list("x", 60_000, "public");
    let b_list = list("y", 60_000, "private");
    let a = Backend::start(&[("tools/list", &a_list)], Duration::ZERO).await;
    let b = Backend::start(&[("tools/list", &b_list)], Duration::ZERO).await;
    let contexts = "cache: { context-headers: [authorization] }\n";
    let gw = mcp_gateway_tests::Gateway::start(&format!("{contexts}{}", hub(&a, &b, ""))).await;
    let addr = gw.addr;
    let send = move |id: &'static str, token: Option<&'static str>| async move {
        request_at("/hub", id, "tools/list", json!({}), token)
            .send(addr)
            .await
    };
    // no credential, no private cache: asked afresh each time
    for id in ["1", "2"] {
        let r = send(id, None).await;
        assert_eq!(r.head.header("mcp-gateway-cache"), Some("bypass"));
        assert_eq!(r.json()["result"]["cacheScope"], "private");
    }
    assert_eq!(b.count("tools/list"), 2);
    assert_eq!(
        send("3", Some("alice"))
            .await
            .head
            .header("mcp-gateway-cache"),
        Some("miss")
    );
    assert_eq!(
        send("4", Some("alice"))
            .await
            .head
            .header("mcp-gateway-cache"),
        Some("hit")
    );
    assert_eq!(
        b.count("tools/list"),
        3,
        "alice's second list asked no member"
    );
    let bob = send("5", Some("bob")).await;
    assert_eq!(
        bob.head.header("mcp-gateway-cache"),
        Some("miss"),
        "never alice's"
    );
    assert_eq!(b.count("tools/list"), 4);
}

#[tokio::test]
async fn a_member_that_goes_down_is_not_served_from_before_and_its_absence_is_not_kept() {
    let a_list = list("x", 60_000, "public");
    let b_list = list("y", 60_000, "public");
    let a = Backend::start(&[("tools/list", &a_list)], Duration::ZERO).await;
    let b = Backend::start(&[("tools/list", &b_list)], Duration::ZERO).await;
    let health = ", health: { interval-ms: 100, timeout-ms: 200, fall: 1, rise: 1 }";
    let gw = mcp_gateway_tests::Gateway::start(&hub(&a, &b, health)).await;
    let addr = gw.addr;
    let send = move |id: &'static str| async move {
        request_at("/hub", id, "tools/list", json!({}), None)
            .send(addr)
            .await
    };
    assert_eq!(
        send("1").await.head.header("mcp-gateway-cache"),
        Some("miss")
    );
    assert_eq!(
        send("2").await.head.header("mcp-gateway-cache"),
        Some("hit")
    );
    b.stop();
    // once the health checks mark b down, the merged list is a new key: asked afresh, of a
    // alone, and not kept (it left b out)
    mcp_gateway_tests::assert_eventually!(
        Duration::from_secs(5),
        send("3").await.head.header("mcp-gateway-cache") != Some("hit"),
        "the merged list stops being served from before b went down"
    );
    let without_b = send("4").await;
    assert_eq!(without_b.head.header("mcp-gateway-cache"), Some("bypass"));
    let v = without_b.json();
    assert_eq!(names(&v), ["x"], "{v}");
    assert_eq!(v["result"]["ttlMs"], 0, "{v}");
    assert_eq!(
        a.count("tools/list"),
        1,
        "a's own result is still kept under a"
    );
}
