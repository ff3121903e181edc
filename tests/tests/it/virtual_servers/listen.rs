//! Issue 33, `subscriptions/listen` of 2026-07-28 clients on a virtual route: one stream the
//! gateway writes, fed by a listen on each member (a FastMCP 1.30.0 member through the reverse
//! bridge, a PyPI mcp 2.3.0 member passed through), the resource URIs given to the member that
//! owns them, every notification stamped with the client's subscription id, and the list
//! changes of a member coming and going.

use super::rpc;
use mcp_gateway_tests::ticker::{open_stream, Event};
use mcp_gateway_tests::{Gateway, PythonPeer};
use serde_json::{json, Value};
use std::time::Duration;

const HEALTH: &str = "health: { path: /mcp, interval-ms: 200, timeout-ms: 500, fall: 1, rise: 1 }";

/// `notes` (FastMCP 1.30.0 with a subscribable `note://counter` and a `bump` tool that
/// changes it and its tool list, bare names) and `m` (PyPI mcp 2.3.0, 2026-07-28, `m.`).
async fn hub() -> (Vec<PythonPeer>, Gateway) {
    let notes = PythonPeer::start(
        "mcp1",
        "subscribe_server.py",
        &["--port", "0", "--name", "notes"],
    )
    .await;
    let m = PythonPeer::start(
        "mcp2",
        "stateless_server.py",
        &["--port", "0", "--name", "m"],
    )
    .await;
    let yaml = format!(
        "pools:\n  notes: {{ era: legacy, backends: [{}] }}\n  m: {{ backends: [{}], {HEALTH} }}\n\
         routes:\n  - path: /hub\n    mode: virtual\n    upstream-path: /mcp\n    members:\n\
         \x20     - {{ name: notes, pool: notes, prefix: never }}\n      - {{ name: m, pool: m, prefix: \"m.\" }}\n",
        notes.addr(),
        m.addr()
    );
    let gw = Gateway::start(&yaml).await;
    (vec![notes, m], gw)
}

/// PyPI mcp 2.3.0's own `Client.listen` on the virtual route: the URI honoured by the member
/// that owns it, the list changes by the virtual server; `bump` (routed to `notes` by its bare
/// name) makes that member send `resources/updated` and `tools/list_changed`, and the client
/// hears both on the one stream.
#[tokio::test]
async fn a_2026_client_listens_on_a_virtual_route_and_hears_the_member_that_owns_the_uri() {
    let (_peers, gw) = hub().await;
    let discover = rpc(1, "server/discover", json!({}))
        .send(gw.addr)
        .await
        .json();
    let caps = &discover["result"]["capabilities"];
    assert_eq!(caps["tools"]["listChanged"], true, "{discover}");
    assert_eq!(caps["resources"]["subscribe"], true, "{discover}");
    let v = crate::real_peers_listen::listened(&gw.url("/hub")).await;
    assert_eq!(
        v["honored"],
        json!({"toolsListChanged": true, "promptsListChanged": true,
            "resourceSubscriptions": ["note://counter"]}),
        "{v}"
    );
    assert_eq!(v["bumped"], "1", "{v}");
    let events: Vec<&str> = v["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(events.contains(&"updated note://counter"), "{v}");
    assert!(events.contains(&"tools changed"), "{v}");
    assert_eq!(v["counter"], "1", "{v}");
}

/// A raw listen: the acknowledgement first (a URI no member owns is not honoured), then, when
/// member `m`'s only pod is SIGKILLed (health checks see it), `notifications/tools/list_changed`
/// stamped with the listen's id; a filter with nothing to hear ends at once with its result;
/// a URI over the bounds is refused as a session's subscription is.
#[tokio::test]
async fn a_member_going_away_is_heard_on_a_listen_stream_with_the_subscription_id() {
    let (mut peers, gw) = hub().await;
    let filter = json!({"notifications": {"toolsListChanged": true,
        "resourceSubscriptions": ["note://counter", "nobody://owns"]}});
    let (status, mut events) = open_stream(rpc(7, "subscriptions/listen", filter), gw.addr).await;
    assert_eq!(status, 200);
    let ack = next(&mut events).await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true, "resourceSubscriptions": ["note://counter"]}),
        "{ack}"
    );
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        7
    );
    peers[1].kill().await;
    let changed = next(&mut events).await;
    assert_eq!(
        changed["method"], "notifications/tools/list_changed",
        "{changed}"
    );
    assert_eq!(
        changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 7,
        "{changed}"
    );

    // nothing any member could hear: acknowledged empty, then the listen's result
    let nothing = json!({"notifications": {"resourceSubscriptions": ["nobody://owns"]}});
    let resp = rpc(8, "subscriptions/listen", nothing).send(gw.addr).await;
    assert_eq!(resp.status(), 200, "{}", resp.text());
    let body = resp.text();
    assert!(
        body.contains("notifications/subscriptions/acknowledged"),
        "{body}"
    );
    assert!(
        body.contains(r#""id":8"#) && body.contains(r#""result""#),
        "{body}"
    );

    // a URI longer than a session's subscription may be: -32036, before any member is asked
    let long = format!("note://{}", "x".repeat(5000));
    let over = json!({"notifications": {"resourceSubscriptions": [long]}});
    let resp = rpc(9, "subscriptions/listen", over).send(gw.addr).await;
    let v = resp.json();
    assert_eq!(v["id"], 9, "{v}");
    assert_eq!(v["error"]["code"], -32036, "{v}");
}

/// The next event of a listen stream, as JSON (10 s at most).
async fn next(events: &mut tokio::sync::mpsc::UnboundedReceiver<Event>) -> Value {
    let e = tokio::time::timeout(Duration::from_secs(10), events.recv())
        .await
        .expect("an event in time")
        .expect("the stream is open");
    serde_json::from_str(&e.data).expect("JSON")
}
