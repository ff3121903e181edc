//! The shared tier (`cache.store: redis`) against Debian's `redis-server`: a pool's changes
//! move its own epoch, in few writes however many it hears; entries carry a MAC, so one changed
//! in Redis is a miss; a replica writes only within `cache.shared-max-bytes`; a Redis that hangs
//! costs a miss one epoch read, no write.

use super::{request, Backend, PUBLIC};
use mcp_gateway_tests::redis::RedisServer;
use mcp_gateway_tests::Gateway;
use serde_json::json;
use std::time::{Duration, Instant};

fn config(redis: &RedisServer, backend: &Backend, cache: &str) -> String {
    format!(
        "sessions:\n  store: redis\n  redis: {{ urls: [\"{}\"], key-prefix: \"tier:\" }}\ncache: {{ store: redis{cache} }}\n{}\
         pools:\n  p: {{ backends: [{}] }}\nroutes:\n  - {{ path: /mcp, pool: p }}\n",
        redis.url(),
        super::signed(),
        backend.addr
    )
}

/// `redis-cli` against `redis` with `args`; its output without the last line end.
fn cli(redis: &RedisServer, args: &[&str]) -> String {
    let port = redis
        .url()
        .rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches("/0")
        .to_owned();
    let out = std::process::Command::new("redis-cli")
        .args(["-p", &port])
        .args(args)
        .output()
        .expect("redis-cli");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.strip_suffix('\n').unwrap_or(&text).to_owned()
}

/// The names of the result entries in Redis (not the epochs).
fn entries(redis: &RedisServer) -> Vec<String> {
    cli(redis, &["--raw", "KEYS", "tier:cache:*"])
        .lines()
        .filter(|k| !k.is_empty() && !k.starts_with("tier:cache:epoch:"))
        .map(str::to_owned)
        .collect()
}

/// Polls `f` until it holds (at most 10 s).
async fn until(what: &str, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + Duration::from_secs(10);
    while !f() {
        assert!(Instant::now() < end, "never: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Two hundred `list_changed` on one stream move the pool's own epoch
/// (`cache:epoch:<pool>`) once, or twice (a trailing write for those heard while the first was
/// written), never once each.
#[tokio::test]
async fn a_burst_of_changes_moves_the_pools_epoch_in_one_or_two_writes() {
    let redis = RedisServer::start().await;
    let event = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n";
    let listen = format!("SSE:{}", event.repeat(200));
    let backend = Backend::start(
        &[("tools/list", PUBLIC), ("subscriptions/listen", &listen)],
        Duration::ZERO,
    )
    .await;
    let gw = Gateway::start(&config(&redis, &backend, "")).await;
    let heard = request(
        "1",
        "subscriptions/listen",
        json!({"notifications": {}}),
        None,
    )
    .send(gw.addr)
    .await;
    assert_eq!(heard.text().matches("list_changed").count(), 200);
    let epoch = || {
        cli(&redis, &["GET", "tier:cache:epoch:p"])
            .parse::<u64>()
            .unwrap_or(0)
    };
    until("the pool's epoch moved", || epoch() >= 1).await;
    assert!(epoch() <= 2, "one write per interval: {}", epoch());
}

/// An entry changed in Redis (by anyone who can write the cache's keys) fails its MAC: the
/// replica that finds it asks the backend, and counts it.
#[tokio::test]
async fn an_entry_changed_in_redis_is_a_miss_and_counted() {
    let redis = RedisServer::start().await;
    let backend = Backend::start(&[("tools/list", PUBLIC)], Duration::ZERO).await;
    let one = Gateway::start(&config(&redis, &backend, "")).await;
    let two = Gateway::start(&config(&redis, &backend, "")).await;
    let first = request("1", "tools/list", json!({}), None)
        .send(one.addr)
        .await;
    assert_eq!(first.head.header("mcp-gateway-cache"), Some("miss"));
    until("the entry was written", || entries(&redis).len() == 1).await;
    let name = entries(&redis).remove(0);
    let value = cli(&redis, &["--raw", "GET", &name]);
    let planted = value.replace("\"name\":\"a\"", "\"name\":\"planted\"");
    assert_ne!(planted, value);
    cli(&redis, &["SET", &name, &planted, "PX", "60000"]);
    let other = request("2", "tools/list", json!({}), None)
        .send(two.addr)
        .await;
    assert_eq!(other.head.header("mcp-gateway-cache"), Some("miss"));
    assert_eq!(other.json()["result"]["tools"][0]["name"], "a");
    assert_eq!(backend.count("tools/list"), 2);
    let forged = two
        .metric("mcpgw_cache_total{method=\"tools/list\",result=\"shared-forged\",route=\"/mcp\"}")
        .await;
    assert_eq!(forged, 1.0);
}

/// With `shared-max-bytes` room for one entry, a replica writes the first public result to
/// Redis and keeps the second in its memory only (`shared-full`).
#[tokio::test]
async fn a_replica_writes_to_redis_only_within_its_byte_budget() {
    let redis = RedisServer::start().await;
    let prompts = r#"{"prompts":[],"ttlMs":60000,"cacheScope":"public"}"#;
    let backend = Backend::start(
        &[("tools/list", PUBLIC), ("prompts/list", prompts)],
        Duration::ZERO,
    )
    .await;
    let gw = Gateway::start(&config(&redis, &backend, ", shared-max-bytes: 400")).await;
    let first = request("1", "tools/list", json!({}), None)
        .send(gw.addr)
        .await;
    assert_eq!(first.head.header("mcp-gateway-cache"), Some("miss"));
    until("the first entry was written", || entries(&redis).len() == 1).await;
    let second = request("2", "prompts/list", json!({}), None)
        .send(gw.addr)
        .await;
    assert_eq!(second.head.header("mcp-gateway-cache"), Some("miss"));
    let full = gw
        .metric("mcpgw_cache_total{method=\"prompts/list\",result=\"shared-full\",route=\"/mcp\"}")
        .await;
    assert_eq!(full, 1.0);
    assert_eq!(entries(&redis).len(), 1);
    let again = request("3", "prompts/list", json!({}), None)
        .send(gw.addr)
        .await;
    assert_eq!(
        again.head.header("mcp-gateway-cache"),
        Some("hit"),
        "kept in memory"
    );
}

/// A Redis that hangs (stopped, its socket open) costs a public miss the epoch read's time-out
/// (one second), not a second one for a write under an epoch it could not read.
#[tokio::test]
async fn a_hanging_redis_costs_a_public_miss_one_epoch_read_and_no_write() {
    let redis = RedisServer::start().await;
    let backend = Backend::start(&[("tools/list", PUBLIC)], Duration::ZERO).await;
    let gw = Gateway::start(&config(&redis, &backend, "")).await;
    redis.pause();
    let started = Instant::now();
    let miss = request("1", "tools/list", json!({}), None)
        .send(gw.addr)
        .await;
    let took = started.elapsed();
    redis.resume();
    assert_eq!(miss.status(), 200, "{}", miss.text());
    assert_eq!(miss.head.header("mcp-gateway-cache"), Some("miss"));
    assert!(
        took < Duration::from_millis(1_800),
        "the miss took {took:?}"
    );
}
