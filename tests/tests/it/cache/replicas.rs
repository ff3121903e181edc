//! `cache.store: redis`: two gateway replicas share public results through Debian's
//! `redis-server` (started here, stopped after), so the backend is asked once for both, and a
//! replica that finds a result another kept lowers its `ttlMs` by its age as that one would;
//! private results stay in the replica that received them.

use super::changes::listen_saying;
use super::{request, Backend, PRIVATE, PUBLIC};
use mcp_gateway_tests::redis::RedisServer;
use mcp_gateway_tests::Gateway;
use serde_json::json;
use std::time::Duration;

fn config(redis: &RedisServer, backend: &Backend) -> String {
    format!(
        "sessions:\n  store: redis\n  redis: {{ urls: [\"{}\"], key-prefix: \"cachetest:\" }}\ncache: {{ store: redis, context-headers: [authorization] }}\n{}\
         pools:\n  p: {{ backends: [{}] }}\nroutes:\n  - {{ path: /mcp, pool: p }}\n",
        redis.url(),
        super::signed(),
        backend.addr
    )
}

#[tokio::test]
async fn two_replicas_ask_the_backend_once_for_a_public_result_and_never_share_a_private_one() {
    let redis = RedisServer::start().await;
    let backend = Backend::start(
        &[("tools/list", PUBLIC), ("prompts/list", PRIVATE)],
        Duration::ZERO,
    )
    .await;
    let one = Gateway::start(&config(&redis, &backend)).await;
    let two = Gateway::start(&config(&redis, &backend)).await;
    let keys = redis_keys(&redis);
    let first = request("1", "tools/list", json!({}), None)
        .send(one.addr)
        .await;
    assert_eq!(
        first.head.header("mcp-gateway-cache"),
        Some("miss"),
        "{}",
        first.text()
    );
    let answered = std::time::Instant::now();
    // the first replica's put reached Redis (it may end after the answer did)
    mcp_gateway_tests::eventually("the result kept in Redis", Duration::from_secs(5), || {
        redis_keys(&redis) > keys
    })
    .await;
    // the result is at least this old when the other replica finds it
    let age = answered.elapsed().as_millis() as u64;
    let other = request("2", "tools/list", json!({}), None)
        .send(two.addr)
        .await;
    assert_eq!(
        other.head.header("mcp-gateway-cache"),
        Some("hit"),
        "{}",
        other.text()
    );
    let v = other.json();
    assert_eq!(v["id"], 2);
    let ttl = v["result"]["ttlMs"].as_u64().unwrap();
    assert!(
        (50_000..60_000 - age.saturating_sub(1)).contains(&ttl),
        "lowered by its age ({age} ms at least) on the other replica: {ttl}"
    );
    assert_eq!(v["result"]["tools"][0]["name"], "a");
    assert_eq!(
        backend.count("tools/list"),
        1,
        "one backend request for the fleet"
    );
    // a private result: kept by the replica that received it, for that token only
    for (gw, how) in [(&one, "miss"), (&one, "hit"), (&two, "miss")] {
        let r = request("3", "prompts/list", json!({}), Some("alice"))
            .send(gw.addr)
            .await;
        assert_eq!(r.head.header("mcp-gateway-cache"), Some(how));
    }
    assert_eq!(backend.count("prompts/list"), 2);
}

#[tokio::test]
async fn a_replica_that_cannot_reach_redis_asks_the_backend_and_says_so() {
    let redis = RedisServer::start().await;
    let backend = Backend::start(&[("tools/list", PUBLIC)], Duration::ZERO).await;
    let gw = Gateway::start(&config(&redis, &backend)).await;
    drop(redis);
    for (id, how) in [("1", "miss"), ("2", "hit")] {
        let r = request(id, "tools/list", json!({}), None)
            .send(gw.addr)
            .await;
        assert_eq!(r.status(), 200, "{}", r.text());
        assert_eq!(
            r.head.header("mcp-gateway-cache"),
            Some(how),
            "this replica's memory still serves"
        );
    }
    let failed = gw
        .metric("mcpgw_cache_total{method=\"tools/list\",result=\"shared-error\",route=\"/mcp\"}")
        .await;
    assert!(failed >= 1.0, "counted: {failed}");
}

/// A change one replica hears (a `list_changed` on a listen stream it relays) reaches the
/// other within a second: its results, in Redis and in its memory, are not served again.
#[tokio::test]
async fn a_change_heard_by_one_replica_drops_the_results_of_both() {
    let redis = RedisServer::start().await;
    let backend = Backend::start(
        &[
            ("tools/list", PUBLIC),
            (
                "subscriptions/listen",
                &listen_saying("notifications/tools/list_changed"),
            ),
        ],
        Duration::ZERO,
    )
    .await;
    let one = Gateway::start(&config(&redis, &backend)).await;
    let two = Gateway::start(&config(&redis, &backend)).await;
    for (gw, how) in [(&one, "miss"), (&two, "hit"), (&two, "hit")] {
        let r = request("1", "tools/list", json!({}), None)
            .send(gw.addr)
            .await;
        assert_eq!(r.head.header("mcp-gateway-cache"), Some(how));
    }
    let listen = request(
        "2",
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
        None,
    )
    .send(one.addr)
    .await;
    assert!(listen.text().contains("list_changed"), "{}", listen.text());
    // asked until it asks the backend again (a hit costs the backend nothing), within the
    // second it may take and some slack
    mcp_gateway_tests::eventually_async(
        "the other replica asks again",
        Duration::from_millis(1_500),
        || async {
            let r = request("3", "tools/list", json!({}), None)
                .send(two.addr)
                .await;
            r.head.header("mcp-gateway-cache") == Some("miss")
        },
    )
    .await;
    assert_eq!(backend.count("tools/list"), 2);
}

/// How many cache keys (`…cache:…`) `redis` holds, in any of its databases (the replicas'
/// own keys, which say they are alive, are not counted).
fn redis_keys(redis: &RedisServer) -> u64 {
    let url = redis.url();
    let port = url
        .rsplit(':')
        .next()
        .and_then(|p| p.split('/').next())
        .unwrap();
    (0..16)
        .map(|db| {
            let out = std::process::Command::new("redis-cli")
                .args([
                    "-p",
                    port,
                    "-n",
                    &db.to_string(),
                    "--scan",
                    "--pattern",
                    "*cache:*",
                ])
                .output()
                .expect("redis-cli");
            String::from_utf8_lossy(&out.stdout).lines().count() as u64
        })
        .sum()
}
