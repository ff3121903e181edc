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
    let peer = subscribe_server().await;
    let yaml = format!(
        "pools:\n  p: {{ era: legacy, backends: [{}] }}\nroutes: [ {{ path: /mcp, pool: p, mode: stateless }} ]\n",
        peer.addr()
    );
    let gw = Gateway::start(&yaml).await;
    let v = listened(&gw.url("/mcp")).await;
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

/// The FastMCP 1.30.0 server whose tool `bump` changes a resource and the tools list.
async fn subscribe_server() -> PythonPeer {
    let args = ["--port", "0", "--name", "b1"];
    PythonPeer::start("mcp1", "subscribe_server.py", &args).await
}

/// Runs the listen client (PyPI mcp 2.3.0's `Client.listen`, then `bump`) against `url`: its
/// report, once it succeeded.
pub(crate) async fn listened(url: &str) -> Value {
    let mut cmd = Command::new(python("mcp2"));
    cmd.arg(workspace().join("tests/peers/listen_client_v2.py"))
        .args(["--url", url])
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
    v
}

/// Runs the listen client with an API key; `expect_error`: the listen is to be refused.
async fn listen_as(url: &str, key: &str, expect_error: bool) -> (bool, Value, String) {
    let mut cmd = Command::new(python("mcp2"));
    cmd.arg(workspace().join("tests/peers/listen_client_v2.py"))
        .args(["--url", url, "--api-key", key])
        .kill_on_drop(true);
    if expect_error {
        cmd.arg("--expect-error");
    }
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .expect("the client finished")
        .expect("ran");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let v: Value = serde_json::from_str(stdout.lines().last().unwrap_or("{}")).unwrap_or_default();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.success(), v, stderr)
}

/// Issue 31, item 10: a principal an `authz` rule refuses `resources/read` and
/// `resources/subscribe` of a URI cannot hear its updates by naming it in a listen filter: the
/// whole listen is refused (403 -32024) before the gateway opens a backend session for it (the
/// passthrough case, with a spy backend: `pooled_listen.rs`), while a principal
/// the rule lets through listens and hears the update as before.
#[tokio::test]
async fn a_listen_filter_naming_a_uri_the_principal_may_not_subscribe_to_is_refused() {
    use mcp_gateway_tests::auth::sha256_hex;
    let peer = subscribe_server().await;
    let dir = mcp_gateway_tests::harness::unique_temp_path("mcpgw-listen-keys");
    std::fs::create_dir_all(&dir).unwrap();
    let keys = dir.join("api-keys.txt");
    let line = |key: &str, name: &str, scopes: &str| {
        format!("{} {name} {scopes}\n", sha256_hex(key.as_bytes()))
    };
    let lines = line("k-user", "user", "tools") + &line("k-admin", "admin", "tools admin");
    std::fs::write(&keys, lines).unwrap();
    let auth = mcp_gateway_tests::auth::auth_yaml("http://127.0.0.1/mcp").replace(
        "  jwt:",
        &format!("  api-keys: {{ file: {} }}\n  jwt:", keys.display()),
    );
    let yaml = format!(
        "{auth}pools:\n  p: {{ era: legacy, backends: [{}] }}\nroutes:\n  \
         - path: /mcp\n    pool: p\n    mode: stateless\n    authz:\n      \
         - {{ match: {{ method: \"resources/*\", name: \"note://*\" }}, require: {{ scope: admin }} }}\n",
        peer.addr()
    );
    let gw = Gateway::start(&yaml).await;
    let url = gw.url("/mcp");
    // the rule lets the admin key through: it listens and hears the tool's update
    let (ok, v, stderr) = listen_as(&url, "k-admin", false).await;
    assert!(ok, "{v} {stderr}");
    assert_eq!(
        v["honored"]["resourceSubscriptions"],
        json!(["note://counter"]),
        "{v}"
    );
    // the user key is refused the whole listen, as it is refused a subscribe of the URI
    let (ok, v, stderr) = listen_as(&url, "k-user", true).await;
    assert!(ok, "{v} {stderr}");
    assert_eq!(v["code"], -32024, "{v}");
    assert_eq!(v["data"]["kind"], "forbidden", "{v}");
    assert_eq!(v["data"]["scope"], "admin", "{v}");
    std::fs::remove_dir_all(&dir).ok();
}

/// Issue 50: a `tools/list_changed` the legacy backend sends on the GET stream the bridge holds
/// for a listen drops the bridged lists the cache kept (`bridge.cache-hints` public): the
/// next list reaches the backend again.
#[tokio::test]
async fn a_change_on_a_bridged_listen_drops_the_cached_bridged_lists() {
    let peer = subscribe_server().await;
    let yaml = format!(
        "bridge: {{ cache-hints: {{ scope: public, ttl-ms: 600000 }} }}\npools:\n  p: {{ era: legacy, backends: [{}] }}\nroutes: [ {{ path: /mcp, pool: p, mode: stateless }} ]\n",
        peer.addr()
    );
    let gw = Gateway::start(&yaml).await;
    let addr = gw.addr;
    let list = move |id: u64| async move {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": {"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        }}});
        mcp_gateway_tests::Request::post("/mcp", body.to_string())
            .header("MCP-Protocol-Version", "2026-07-28")
            .header("Mcp-Method", "tools/list")
            .send(addr)
            .await
    };
    for (id, how) in [(1, "miss"), (2, "hit")] {
        let r = list(id).await;
        assert_eq!(
            r.head.header("mcp-gateway-cache"),
            Some(how),
            "{}",
            r.text()
        );
    }
    let v = listened(&gw.url("/mcp")).await;
    assert!(
        v["events"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e == "tools changed"),
        "{v}"
    );
    // the client itself may list again after the change (and find it asked afresh): either
    // way, a list reached the backend after the change
    let r = list(3).await;
    assert!(r.head.header("mcp-gateway-cache").is_some(), "{}", r.text());
    let misses = gw
        .metric("mcpgw_cache_total{method=\"tools/list\",result=\"miss\",route=\"/mcp\"}")
        .await;
    assert!(
        misses >= 2.0,
        "the backend was asked again after the change: {misses}"
    );
}
