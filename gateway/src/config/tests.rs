use super::*;
use std::time::Duration;

fn repo_file(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("config")
        .join(name)
}

#[test]
fn every_example_config_validates() {
    let dir = repo_file("");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            if let Err(errors) = load(&path) {
                panic!("{} does not validate: {errors:#?}", path.display());
            }
            seen += 1;
        }
    }
    assert!(seen >= 2, "expected example configs in {}", dir.display());
}

#[test]
fn reference_config_parses_to_expected_struct() {
    let config = load(&repo_file("gateway.yaml")).unwrap();
    let pool = |name: &str, backends: &[&str]| PoolConfig {
        name: name.into(),
        era: EraSetting::Detect,
        backends: backends.iter().map(|b| b.parse().unwrap()).collect(),
        balance: Balance::RoundRobin,
        host: None,
        connect_timeout: Duration::from_secs(2),
        read_timeout: Duration::from_secs(300),
        retries: 2,
        failure_cooldown: Duration::from_secs(2),
        max_idle_connections: 128,
        session_not_found: default_not_found(),
        drain_timeout: Duration::from_secs(120),
        discovery: None,
        tls: None,
        identity_headers: Default::default(),
        upstream_auth: Default::default(),
        health: Some(HealthCheck {
            path: None,
            interval: Duration::from_secs(2),
            timeout: Duration::from_secs(1),
            fall: 2,
            rise: 2,
        }),
        tasks_shared: false,
        tool_pinning: crate::config::ToolPinning::off(name),
    };
    let expected = Config {
        listen: "127.0.0.1:8080".parse().unwrap(),
        // a loopback listener guards DNS rebinding by default
        allowed_hosts: LOOPBACK_HOSTS.iter().map(|s| s.to_string()).collect(),
        allowed_origins: LOOPBACK_ORIGINS.iter().map(|s| s.to_string()).collect(),
        admin: Some("127.0.0.1:9090".parse().unwrap()),
        threads: config.threads,
        max_body_bytes: 4 * 1024 * 1024,
        sessions: SessionConfig::default(),
        limits: Limits::default(),
        metric_tools: vec![],
        // pools are indexed in name order: heavy = 0, modern = 1
        pools: vec![
            pool("heavy", &["127.0.0.1:8203"]),
            pool("modern", &["127.0.0.1:8201", "127.0.0.1:8202"]),
        ],
        routes: vec![RouteConfig {
            path: PathMatch::Exact("/mcp".into()),
            mode: Mode::Stateless,
            pool: 1,
            upstream_path: Some("/mcp".into()),
            check_headers: true,
            cache: true,
            limits: RouteLimits::default(),
            rules: vec![RuleConfig {
                method: Pattern::new("tools/call").ok(),
                name: Pattern::new("report_*").ok(),
                pool: 0,
            }],
            auth: RouteAuth::None,
            authz: vec![],
            capture: None,
            dual_backends: DualBackends::Native,
            name_match: NameMatch::Exact,
            virtual_server: None,
            interceptors: vec![],
        }],
        auth: None,
        listen_tls: None,
        tracing: None,
        admin_token: None,
        client_timeouts: ClientTimeouts::default(),
        bridge: Default::default(),
        tasks: Default::default(),
        cache: Default::default(),
        audit: None,
        interceptors: vec![],
    };
    assert_eq!(config, expected);
}

#[test]
fn every_problem_is_listed_with_its_key_path() {
    let yaml = r#"
listen: not-an-address
colour: blue
pools:
  a: { backends: [127.0.0.1:1, "nope"], balance: fastest, extra: 1 }
  b: { backends: [] }
routes:
  - path: mcp
    pool: missing
    rules:
      - match: { method: "tools/[", nam: x }
        pool: also-missing
  - pool: a
"#;
    let errors = parse(yaml).unwrap_err();
    let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
    for expected in [
        "colour",
        "listen",
        "pools.a.extra",
        "pools.a.backends[1]",
        "pools.a.balance",
        "pools.b.backends",
        "routes[0].path",
        "routes[0].pool",
        "routes[0].rules[0].match.nam",
        "routes[0].rules[0].match.method",
        "routes[0].rules[0].pool",
        "routes[1]",
    ] {
        assert!(
            paths.contains(&expected),
            "missing {expected} in {errors:#?}"
        );
    }
    assert_eq!(errors.len(), 12, "{errors:#?}");
}

#[test]
fn yaml_syntax_errors_are_reported_not_panicked() {
    let errors = parse("pools: [unclosed").unwrap_err();
    assert_eq!(errors[0].path, "(file)");
}

#[test]
fn session_not_found_rules_are_validated() {
    let yaml = "pools: { p: { backends: [127.0.0.1:1], session-not-found: [ { code: 5 }, { status: 404, colour: x } ] } }\nroutes: [ { path: /mcp, pool: p, mode: stateful } ]\n";
    let errors = parse(yaml).unwrap_err();
    let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(
        paths,
        vec![
            "pools.p.session-not-found[0].status",
            "pools.p.session-not-found[1].colour"
        ]
    );
}

#[test]
fn a_pool_era_is_detected_by_default_declared_by_name_and_checked() {
    let yaml = |era: &str| {
        format!("pools: {{ p: {{ backends: [127.0.0.1:1]{era} }} }}\nroutes: [ {{ path: /mcp, pool: p }} ]\n")
    };
    assert_eq!(parse(&yaml("")).unwrap().pools[0].era, EraSetting::Detect);
    assert_eq!(
        parse(&yaml(", era: modern")).unwrap().pools[0].era,
        EraSetting::Fixed(mcp_wire::BackendEra::Modern)
    );
    let errors = parse(&yaml(", era: newest")).unwrap_err();
    assert_eq!(errors[0].path, "pools.p.era");
    assert!(errors[0].message.contains("detect, legacy, modern, dual"));
}

#[test]
fn a_pool_host_must_be_a_header_value() {
    let yaml = |host: &str| {
        format!("pools: {{ p: {{ backends: [127.0.0.1:1], host: {host} }} }}\nroutes: [ {{ path: /mcp, pool: p }} ]\n")
    };
    let config = parse(&yaml("\"mcp.internal:8080\"")).unwrap();
    assert_eq!(config.pools[0].host.as_deref(), Some("mcp.internal:8080"));
    let errors = parse(&yaml("\"a\\u0001b\"")).unwrap_err();
    assert_eq!(errors[0].path, "pools.p.host");
    assert!(errors[0].message.contains("Host header"));
}

#[test]
fn the_redis_store_is_configured_and_checked() {
    let config = load(&repo_file("replicas.yaml")).unwrap();
    assert_eq!(
        config.sessions.store,
        StoreConfig::Redis(crate::config::RedisConfig {
            urls: vec!["redis://127.0.0.1:6379/0".into()],
            cluster: false,
            sentinel: None,
            key_prefix: "mcpgw:".into(),
        })
    );
    assert!(
        config.sessions.hold_streams,
        "on by default with a shared store too"
    );
    let errors = parse(
        "sessions: { store: redis, redis: { urls: [\"http://x\"], key-prefix: \"\", colour: 1 } }\npools: { p: { backends: [127.0.0.1:1] } }\nroutes: [ { path: /mcp, pool: p } ]\n",
    )
    .unwrap_err();
    let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
    for path in [
        "sessions.redis.urls[0]",
        "sessions.redis.key-prefix",
        "sessions.redis.colour",
    ] {
        assert!(paths.contains(&path), "{path} missing from {paths:?}");
    }
    let errors = parse(
        "sessions: { store: etcd }\npools: { p: { backends: [127.0.0.1:1] } }\nroutes: [ { path: /mcp, pool: p } ]\n",
    )
    .unwrap_err();
    assert!(
        errors.iter().any(|e| e.path == "sessions.store"),
        "{errors:?}"
    );
}

#[test]
fn an_authz_rule_with_a_bad_glob_is_refused_not_dropped() {
    // A glob that did not compile used to leave the rule matching every name.
    let yaml = r#"
auth: { resource: "https://gw.example/mcp", api-keys: { file: keys.txt } }
pools: { a: { backends: [127.0.0.1:1] } }
routes:
  - path: /mcp
    pool: a
    authz:
      - { match: { method: tools/call, name: "admin_[" }, require: { scope: admin } }
"#;
    let errors = parse(yaml).unwrap_err();
    let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
    assert!(
        paths.contains(&"routes[0].authz[0].match.name"),
        "{errors:#?}"
    );
}

#[test]
fn max_connections_is_read_and_zero_is_refused() {
    let base = "pools:\n  p: { backends: [127.0.0.1:1] }\nroutes:\n  - { path: /mcp, pool: p }\n";
    let config = parse(&format!("limits:\n  max-connections: 100\n{base}")).unwrap();
    assert_eq!(config.limits.max_connections, Some(100));
    assert_eq!(parse(base).unwrap().limits.max_connections, None);
    let errors = parse(&format!("limits:\n  max-connections: 0\n{base}")).unwrap_err();
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert_eq!(errors[0].path, "limits.max-connections");
}

#[test]
fn max_buffered_bytes_defaults_to_64_mib_and_below_max_bytes_is_refused() {
    let base = "pools:\n  p: { backends: [127.0.0.1:1] }\nroutes:\n  - { path: /mcp, pool: p }\n";
    let resume = |r: &str| format!("sessions:\n  resume: {{ {r} }}\n{base}");
    assert_eq!(
        parse(base).unwrap().sessions.resume.max_buffered_bytes,
        64 << 20
    );
    let config = parse(&resume("max-buffered-bytes: 4096, max-bytes: 4096")).unwrap();
    assert_eq!(config.sessions.resume.max_buffered_bytes, 4096);
    let errors = parse(&resume("max-buffered-bytes: 4095, max-bytes: 4096")).unwrap_err();
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert_eq!(errors[0].path, "sessions.resume.max-buffered-bytes");
}

#[test]
fn a_key_set_url_with_userinfo_is_refused_and_one_with_a_query_and_a_port_is_not() {
    let yaml = |url: &str| {
        format!(
            "auth:\n  resource: https://gw.example/mcp\n  jwt:\n    issuer: https://idp.example\n    audiences: [https://gw.example/mcp]\n    jwks: {{ url: \"{url}\" }}\npools: {{ p: {{ backends: [127.0.0.1:9000] }} }}\nroutes: [ {{ path: /mcp, pool: p }} ]\n"
        )
    };
    let errors = parse(&yaml("https://bob:pw@idp.example/keys")).unwrap_err();
    let at: Vec<_> = errors
        .iter()
        .filter(|e| e.path == "auth.jwt.jwks.url")
        .collect();
    assert_eq!(at.len(), 1, "{errors:#?}");
    assert!(at[0].message.contains("userinfo"), "{errors:#?}");
    assert!(!at[0].message.contains("pw@"), "{errors:#?}");
    parse(&yaml("https://idp.example:8443/keys?tenant=a")).unwrap();
}
