//! The `cache` section, parsed from whole configs: each bad input and its answer.

use crate::config::parse;

/// The problems of a config with `cache` and a route's `extra` keys, as `path: message`.
fn problems(cache: &str, extra: &str) -> Vec<String> {
    let yaml = format!(
        "cache: {cache}\npools: {{ p: {{ backends: [\"127.0.0.1:9\"] }} }}\nroutes: [ {{ path: /mcp, pool: p{extra} }} ]\n"
    );
    match parse(&yaml) {
        Ok(_) => Vec::new(),
        Err(errors) => errors
            .into_iter()
            .map(|e| format!("{}: {}", e.path, e.message))
            .collect(),
    }
}

/// Each bad `cache` input and its answer (the table in docs/caching.md's "Bounds").
#[test]
fn each_bad_cache_setting_is_named_with_its_reason() {
    let rows: [(&str, &str, &str); 13] = [
        (
            "{ max-ttl-ms: 0 }",
            "",
            "cache.max-ttl-ms: must be at least 1",
        ),
        (
            "{ max-bytes: 1000, max-private-bytes: 2000 }",
            "",
            "cache.max-private-bytes: must be at most max-bytes",
        ),
        (
            "{ max-private-bytes: 1000, max-bytes-per-context: 2000, max-entry-bytes: 100 }",
            "",
            "cache.max-bytes-per-context: must be at most max-private-bytes",
        ),
        (
            "{ vary-headers: [\"x tool\"] }",
            "",
            "cache.vary-headers[0]: `x tool` is no header name",
        ),
        (
            "{ context-headers: [x-api-key, X-Api-Key] }",
            "",
            "cache.context-headers[1]: `X-Api-Key` is listed twice",
        ),
        (
            "{ store: redis }",
            "",
            "cache.store: `redis` shares the Redis of the sessions",
        ),
        (
            "{ store: disk }",
            "",
            "cache.store: `disk`: use memory or redis",
        ),
        (
            "{ max-bytes: 0 }",
            "",
            "cache.max-bytes: must be at least 1",
        ),
        (
            "{ max-bytes: 1000, max-bytes-per-context: 2000, max-entry-bytes: 100 }",
            "",
            "cache.max-bytes-per-context: must be at most max-bytes",
        ),
        (
            "{ max-bytes-per-context: 100, max-entry-bytes: 200 }",
            "",
            "cache.max-entry-bytes: must be at most max-bytes-per-context",
        ),
        ("{ stores: memory }", "", "cache.stores: unknown key"),
        (
            "{}",
            ", cache: sometimes",
            "routes[0].cache: `sometimes`: give on or off",
        ),
        (
            "{ max-entry-bytes: 0 }",
            "",
            "cache.max-entry-bytes: must be at least 1",
        ),
    ];
    for (cache, extra, expected) in rows {
        let found = problems(cache, extra);
        assert!(
            found.iter().any(|p| p.starts_with(expected)),
            "{cache} {extra}: {found:?}"
        );
    }
}

#[test]
fn defaults_fit_each_other_and_a_small_whole_lowers_the_defaults_below_it() {
    let config = parse(
        "pools: { p: { backends: [\"127.0.0.1:9\"] } }\nroutes: [ { path: /mcp, pool: p, cache: off } ]\n",
    )
    .unwrap();
    assert_eq!(config.cache, super::CacheConfig::default());
    assert!(!config.routes[0].cache);
    let small = parse(
        "cache: { max-bytes: 1000 }\npools: { p: { backends: [\"127.0.0.1:9\"] } }\nroutes: [ { path: /mcp, pool: p } ]\n",
    )
    .unwrap();
    assert_eq!(small.cache.max_bytes_per_context, 1000);
    assert_eq!(small.cache.max_private_bytes, 1000);
    assert_eq!(small.cache.max_entry_bytes, 1000);
    assert_eq!(
        config.cache.max_private_bytes,
        16 << 20,
        "a quarter of the whole"
    );
    assert_eq!(config.cache.max_ttl_ms, 3_600_000);
}

#[test]
fn vary_and_context_headers_are_read_in_lower_case_in_their_order() {
    let config = parse(
        "cache: { vary-headers: [X-Toolset], context-headers: [X-Api-Key, cookie] }\npools: { p: { backends: [\"127.0.0.1:9\"] } }\nroutes: [ { path: /mcp, pool: p } ]\n",
    )
    .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(config.cache.vary_headers, ["x-toolset"]);
    assert_eq!(config.cache.context_headers, ["x-api-key", "cookie"]);
}

#[test]
fn a_redis_store_shares_the_sessions_redis() {
    let bare = "sessions: { store: redis, redis: { urls: [\"redis://127.0.0.1:6379\"] } }\ncache: { store: redis }\npools: { p: { backends: [\"127.0.0.1:9\"] } }\nroutes: [ { path: /mcp, pool: p } ]\n";
    let unsigned = parse(bare).err().unwrap_or_default();
    assert!(
        unsigned.iter().any(|e| e.path == "cache.store"
            && e.message.contains("needs bridge.request-state-key-file")),
        "{unsigned:?}"
    );
    let key = std::env::temp_dir().join(format!("mcpgw-cache-key-{}", std::process::id()));
    std::fs::write(&key, "ab".repeat(32)).unwrap();
    let yaml = format!(
        "bridge: {{ request-state-key-file: {} }}\n{bare}",
        key.display()
    );
    let config = parse(&yaml).unwrap_or_else(|e| panic!("{e:?}"));
    assert!(config.cache.shared);
    let memory = parse(&bare.replace("store: redis }\npools", "store: memory }\npools"));
    assert!(!memory.unwrap_or_else(|e| panic!("{e:?}")).cache.shared);
}
