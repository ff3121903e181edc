//! The cache against the real SDKs' servers and clients: mcp 2.3.0 (Python) and the
//! TypeScript SDK v2, each server setting `ttlMs`/`cacheScope` its own way, fresh clients
//! starting one after another as agents do.

use mcp_gateway_tests::Gateway;
use serde_json::Value;
use std::time::Duration;

/// Real peers: an mcp 2.3.0 server whose cacheable results say `ttlMs: 60000` and
/// `cacheScope: public` (`MCPServer(cache_hints=...)`), and fresh mcp 2.3.0 clients pinned to
/// 2026-07-28, one process after another, as agents start: the first one's `tools/list` reaches
/// the server, the next ones are answered at the gateway, and the real client takes the answer
/// (its id, the lowered `ttlMs`) as the server's.
#[tokio::test]
async fn fresh_real_clients_list_from_the_cache_of_a_real_servers_public_results() {
    let peer = mcp_gateway_tests::PythonPeer::start(
        "mcp2",
        "stateless_server.py",
        &[
            "--port",
            "0",
            "--name",
            "s",
            "--cache-ttl-ms",
            "60000",
            "--cache-scope",
            "public",
        ],
    )
    .await;
    let yaml = format!(
        "pools:\n  p: {{ backends: [{}] }}\nroutes:\n  - {{ path: /mcp, pool: p }}\n",
        peer.addr()
    );
    let gw = Gateway::start(&yaml).await;
    for _ in 0..3 {
        let (ok, v) =
            mcp_gateway_tests::harness::client_v2(&gw.url("/mcp"), "stateless", &["list"]).await;
        assert!(ok, "{v}");
        let tools = v["tools"].as_array().unwrap();
        assert!(tools.iter().any(|t| t == "whoami"), "{v}");
    }
    first_list_asked_then_two_hits(&gw).await;
}

/// Real peers of the other SDK: a TypeScript SDK v2 server whose `cacheHints` make its lists
/// `public` for a minute, and fresh TypeScript SDK v2 clients pinned to 2026-07-28 starting one
/// after another (connect, list, call): the first list reaches the server, the next ones are
/// answered at the gateway, and each client takes the answer (its `ttlMs` lowered by age).
#[tokio::test]
async fn fresh_typescript_clients_list_from_the_cache_of_a_typescript_servers_public_results() {
    let hints = ["--cache-ttl-ms", "60000", "--cache-scope", "public"];
    let peer = mcp_gateway_tests::PythonPeer::modern_ts_with("ts", &hints).await;
    let yaml = format!(
        "pools:\n  p: {{ backends: [{}] }}\nroutes:\n  - {{ path: /mcp, pool: p }}\n",
        peer.addr()
    );
    let gw = Gateway::start(&yaml).await;
    for _ in 0..3 {
        let mut cmd = tokio::process::Command::new(mcp_gateway_tests::harness::node());
        cmd.arg(mcp_gateway_tests::harness::workspace().join("tests/peers/node/modern_client.mjs"))
            .args(["--url", &gw.url("/mcp"), "list"])
            .kill_on_drop(true);
        let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
            .await
            .expect("the client finished")
            .expect("ran");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let v: Value =
            serde_json::from_str(stdout.lines().last().unwrap_or("{}")).unwrap_or_default();
        assert!(
            out.status.success(),
            "{v} {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(v["whoami"], "ts", "{v}");
        assert!(
            v["tools"].as_array().unwrap().iter().any(|t| t == "echo"),
            "{v}"
        );
        let ttl = v["ttl"].as_u64().unwrap_or(0);
        assert!((1..=60_000).contains(&ttl), "{v}");
    }
    first_list_asked_then_two_hits(&gw).await;
}

/// Three fresh clients listed on `/mcp`: the first client's list was asked upstream, the next
/// two were answered at the gateway.
async fn first_list_asked_then_two_hits(gw: &Gateway) {
    let count = |result: &'static str| {
        let name = format!(
            "mcpgw_cache_total{{method=\"tools/list\",result=\"{result}\",route=\"/mcp\"}}"
        );
        async move { gw.metric(&name).await }
    };
    assert_eq!(count("miss").await, 1.0, "the first list asked upstream");
    assert_eq!(
        count("hit").await,
        2.0,
        "the next two answered at the gateway"
    );
}
