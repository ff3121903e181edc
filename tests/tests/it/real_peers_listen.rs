//! Issue 23: `subscriptions/listen` from the PyPI mcp 2.3.0 client pinned to 2026-07-28 on a
//! FastMCP 1.30.0 backend (sessions only) through the reverse era bridge: the gateway holds a
//! backend session for the stream (`resources/subscribe` for the filter's URI, its GET stream
//! read), acknowledges what the backend honours (the URI it accepted, `toolsListChanged` it
//! declares; not `promptsListChanged`, which it does not), and relays a tool's
//! `notifications/resources/updated` and `notifications/tools/list_changed`, sent on that
//! session's GET stream, as the stamped listen notifications the client's `listen()` yields.

use mcp_gateway_tests::harness::{python, workspace};
use mcp_gateway_tests::{Gateway, PythonPeer};
use serde_json::{json, Value};
use std::time::Duration;
use tokio::process::Command;

#[tokio::test]
async fn a_pinned_client_listens_on_a_legacy_backend_and_hears_a_tools_resource_update() {
    let peer = PythonPeer::start(
        "mcp1",
        "subscribe_server.py",
        &["--port", "0", "--name", "b1"],
    )
    .await;
    let yaml = format!(
        "pools:\n  p: {{ era: legacy, backends: [{}] }}\nroutes: [ {{ path: /mcp, pool: p, mode: stateless }} ]\n",
        peer.addr()
    );
    let gw = Gateway::start(&yaml).await;
    let mut cmd = Command::new(python("mcp2"));
    cmd.arg(workspace().join("tests/peers/listen_client_v2.py"))
        .args(["--url", &gw.url("/mcp")])
        .kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .expect("the client finished")
        .expect("ran");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let v: Value = serde_json::from_str(stdout.lines().last().unwrap_or("{}")).unwrap_or_default();
    assert!(
        out.status.success(),
        "{v} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        v["honored"],
        json!({"toolsListChanged": true, "resourceSubscriptions": ["note://counter"]}),
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
