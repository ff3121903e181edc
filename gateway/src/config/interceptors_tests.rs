//! The `interceptors` section and `routes[].interceptors`, parsed from whole configs: the
//! defaults, and each bad input with its answer.

use crate::config::parse;
use std::time::Duration;

fn config(interceptors: &str, chain: &str) -> String {
    format!(
        "interceptors: {interceptors}\npools: {{ p: {{ backends: [\"127.0.0.1:9\"] }} }}\n\
         routes: [ {{ path: /mcp, pool: p, interceptors: {chain} }} ]\n"
    )
}

/// The problems of a config, as `path: message`.
fn problems(interceptors: &str, chain: &str) -> Vec<String> {
    match parse(&config(interceptors, chain)) {
        Ok(_) => Vec::new(),
        Err(errors) => (errors.into_iter())
            .map(|e| format!("{}: {}", e.path, e.message))
            .collect(),
    }
}

#[test]
fn a_server_gets_its_defaults_and_a_route_its_chain_by_index() {
    let yaml = config(
        "{ b: { url: \"http://127.0.0.1:9401/mcp\" }, a: { url: \"https://guard.example/mcp\", timeout-ms: 300, config: { deny: { strict: true } } } }",
        "[b, a]",
    );
    let c = parse(&yaml).unwrap();
    let names: Vec<&str> = c.interceptors.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(c.routes[0].interceptors, [1, 0]);
    let b = &c.interceptors[1];
    assert_eq!(b.timeout, Duration::from_millis(2000));
    assert_eq!(b.max_payload_bytes, 1 << 20);
    assert_eq!(b.max_listed, 32);
    assert_eq!(b.list_ttl, Duration::from_secs(60));
    assert!(b.auth.is_empty());
    assert_eq!(c.interceptors[0].timeout, Duration::from_millis(300));
    assert_eq!(c.interceptors[0].config["deny"]["strict"], true);
}

#[test]
fn each_bad_interceptor_setting_is_named_with_its_reason() {
    let ok = "{ url: \"http://127.0.0.1:9/mcp\" }";
    let rows: Vec<(String, &str, &str)> = vec![
        ("{ g: {} }".into(), "[]", "interceptors.g.url: required"),
        ("{ g: { url: \"ftp://h/x\" } }".into(), "[]", "interceptors.g.url: not an http(s) URL"),
        ("{ g: { url: \"http://u:pw@h/x\" } }".into(), "[]", "interceptors.g.url: must not carry userinfo"),
        ("{ g: { url: \"not a url\" } }".into(), "[]", "interceptors.g.url: not an URL"),
        ("{ g: { url: \"http://h/x\", timeout-ms: 0 } }".into(), "[]", "interceptors.g.timeout-ms: must be at least 1"),
        ("{ g: { url: \"http://h/x\", max-payload-bytes: 0 } }".into(), "[]", "interceptors.g.max-payload-bytes: must be at least 1"),
        ("{ g: { url: \"http://h/x\", config: { deny: 3 } } }".into(), "[]", "interceptors.g.config.deny: must be a mapping"),
        ("{ g: { url: \"http://h/x\", colour: blue } }".into(), "[]", "interceptors.g.colour: unknown key"),
        (
            "{ g: { url: \"http://h/x\", upstream-auth: { token-exchange: { token-url: \"http://i/t\", client-id: gw, client-secret: { env: S } } } } }".into(),
            "[]",
            "interceptors.g.upstream-auth.token-exchange: an interceptor server is asked by the gateway on its own behalf",
        ),
        (format!("{{ g: {ok} }}"), "[guard]", "routes[0].interceptors[0]: `guard` is no interceptor server (configured under `interceptors`: g)"),
        (format!("{{ g: {ok} }}"), "[g, g]", "routes[0].interceptors[1]: `g` is named twice"),
    ];
    for (interceptors, chain, expected) in rows {
        let found = problems(&interceptors, chain);
        assert!(
            found.iter().any(|p| p.starts_with(expected)),
            "{interceptors} {chain}: expected `{expected}`, got {found:#?}"
        );
    }
}

#[test]
fn an_interceptor_servers_credentials_are_a_pools_upstream_auth() {
    let yaml = config(
        "{ g: { url: \"http://h/x\", upstream-auth: { headers: { authorization: { env: GUARD_TOKEN, prefix: \"Bearer \" } } } } }",
        "[g]",
    );
    let c = parse(&yaml).unwrap();
    let header = &c.interceptors[0].auth.headers[0];
    assert_eq!(header.name, "authorization");
    assert_eq!(header.prefix, "Bearer ");
}
