//! The `sessions.redis.sentinel` section, parsed from whole configs.

use crate::config::{parse as parse_config, Config, SentinelConfig, StoreConfig};

fn parse(redis: &str) -> Result<Config, String> {
    let yaml = format!(
        "sessions: {{ store: redis, redis: {redis} }}\npools: {{ p: {{ backends: [\"127.0.0.1:9\"] }} }}\nroutes: [ {{ path: /mcp, pool: p, mode: stateful }} ]\n"
    );
    parse_config(&yaml).map_err(|e| format!("{e:?}"))
}

#[test]
fn a_sentinel_store_names_its_primary_and_its_sentinels() {
    let config = parse(
        "{ sentinel: { master-name: sessions, nodes: [\"redis://127.0.0.1:26379\", \"redis://127.0.0.1:26380\"] } }",
    )
    .unwrap();
    let StoreConfig::Redis(redis) = &config.sessions.store else {
        panic!("a redis store");
    };
    assert!(redis.urls.is_empty() && !redis.cluster);
    assert_eq!(
        redis.sentinel,
        Some(SentinelConfig {
            master_name: "sessions".into(),
            nodes: vec![
                "redis://127.0.0.1:26379".into(),
                "redis://127.0.0.1:26380".into()
            ],
        })
    );
}

#[test]
fn every_problem_of_a_sentinel_section_is_listed() {
    let err = parse(
        "{ urls: [\"redis://127.0.0.1:6379\"], cluster: true, sentinel: { nodes: [\"http://x\"], quorum: 2 } }",
    )
    .unwrap_err();
    for path in [
        "sessions.redis.sentinel.master-name",
        "sessions.redis.sentinel.nodes[0]",
        "sessions.redis.sentinel.quorum",
        "sessions.redis.urls",
        "sessions.redis.cluster",
    ] {
        assert!(err.contains(path), "{path} missing from {err}");
    }
    let empty = parse("{ sentinel: { master-name: s } }").unwrap_err();
    assert!(empty.contains("sessions.redis.sentinel.nodes"), "{empty}");
}
