//! Virtual servers' merged lists hold a bounded number of bytes of their members' answers
//! (`limits.max-merged-list-bytes`), end to end with FastMCP 1.30.0 members on 127.0.0.1: past
//! the bound, 503 -32018, never a list with a member silently left out.

use super::hub::{answered, call, hub_yaml};
use super::{names, rpc, text};
use mcp_gateway_tests::{Gateway, PythonPeer};
use serde_json::json;

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
