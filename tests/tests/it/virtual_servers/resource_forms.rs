//! Issue 59, item 19: a member's resource `exclude` and `rename` decide on every form the
//! member may read a URI as, as `authz` does (`auth/resource_uri.rs`: as sent, WHATWG-parsed,
//! each percent-decoded once). A PyPI mcp 2.3.0 template unquotes the parameters it extracts,
//! so `admin://users/r%6Fot` read through `admin://users/{uid}` is the user `root`: before, the
//! gateway matched the member's filters on the URI as sent only, and `exclude:
//! ["admin://users/root"]` (or a rename of `admin://users/ada` away) was bypassed by
//! percent-encoding ("user root" came back). Now every such spelling is -32037 and reaches no
//! member, while an encoded spelling of an allowed URI is still served.

use super::rpc_on;
use mcp_gateway_tests::{Gateway, PythonPeer, Request, Response};
use serde_json::json;

/// A 2026-07-28 `resources/read` of `uri` on `/hub`.
fn read(id: u64, uri: &str) -> Request {
    rpc_on("/hub", id, "resources/read", json!({"uri": uri})).header("Mcp-Name", uri)
}

/// The text of a `resources/read` answer's first content.
fn contents(resp: &Response) -> String {
    let v = resp.json();
    v["result"]["contents"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no contents: {v}"))
        .to_owned()
}

#[tokio::test]
async fn percent_encoding_is_no_way_around_a_members_resource_exclude_or_rename() {
    let r = PythonPeer::start(
        "mcp2",
        "resource_rules_server.py",
        &["--port", "0", "--name", "r"],
    )
    .await;
    let yaml = format!(
        "pools:\n  r: {{ backends: [{}] }}\nroutes:\n  - path: /hub\n    mode: virtual\n    upstream-path: /mcp\n    members:\n\
         \x20     - name: r\n        pool: r\n        resources:\n          exclude: [\"admin://users/root\"]\n          rename: {{ \"admin://users/ada\": \"admin://users/lovelace\" }}\n",
        r.addr()
    );
    let gw = Gateway::start(&yaml).await;
    // the member unquotes what its template extracts: an allowed URI, however spelt, is served
    let resp = read(1, "admin://users/gr%61ce").send(gw.addr).await;
    assert_eq!(contents(&resp), "user grace", "{}", resp.text());
    for (id, uri) in [
        (2, "admin://users/r%6Fot"),
        (3, "admin://users/%72oot"),
        (4, "admin://users/%72%6f%6f%74"),
        (5, "admin://users/%61da"),
    ] {
        let resp = read(id, uri).send(gw.addr).await;
        assert_eq!(resp.status(), 200, "{uri}: {}", resp.text());
        let v = resp.json();
        assert_eq!(v["id"], id, "{uri}: {v}");
        assert_eq!(v["error"]["code"], -32037, "{uri}: {v}");
        assert_eq!(v["error"]["data"]["reason"], "unknown-name", "{uri}: {v}");
    }
    // the renamed URI still reaches the member under its own
    let resp = read(6, "admin://users/lovelace").send(gw.addr).await;
    assert_eq!(contents(&resp), "user ada", "{}", resp.text());
    let routed = gw
        .metric("mcpgw_virtual_member_events_total{event=\"routed\",member=\"r\",route=\"/hub\"}")
        .await;
    assert_eq!(routed, 2.0, "the refused reads were not routed");
}
