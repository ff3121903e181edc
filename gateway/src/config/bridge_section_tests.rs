//! The `bridge` section read as part of a whole config file (its structs and validation are
//! `config/bridge.rs` and `config/advertise.rs`).

use super::*;

fn bridge(yaml: &str) -> Result<BridgeConfig, Vec<ConfigError>> {
    let text = format!(
        "listen: 127.0.0.1:1\nadmin: 127.0.0.1:2\n{yaml}pools:\n  p: {{ backends: [127.0.0.1:9] }}\nroutes: [ {{ path: /mcp, pool: p }} ]\n"
    );
    parse(&text).map(|c| c.bridge)
}

#[test]
fn shares_have_safe_defaults_and_stay_below_a_whole_backend() {
    let d = bridge("").unwrap();
    assert_eq!(d.pooled.max_per_principal, 16);
    assert_eq!(d.pooled.share_per_backend(), 16);
    assert_eq!((d.parked.max, d.parked.max_per_principal), (512, 8));
    let c = bridge("bridge: { pooled-sessions: { max-per-backend: 4 }, parked: { max: 3, max-per-principal: 2 } }\n").unwrap();
    assert_eq!(c.pooled.share_per_backend(), 2, "half a backend at most");
    assert_eq!((c.parked.max, c.parked.max_per_principal), (3, 2));
    let one = bridge("bridge: { pooled-sessions: { max-per-backend: 1 } }\n").unwrap();
    assert_eq!(one.pooled.share_per_backend(), 1);
    let errors = bridge("bridge: { parked: { max-per-principal: 0, size: 1 } }\n").unwrap_err();
    let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
    assert!(
        paths.contains(&"bridge.parked.max-per-principal"),
        "{errors:?}"
    );
    assert!(paths.contains(&"bridge.parked.size"), "{errors:?}");
    let errors = bridge("bridge: { pooled-sessions: { max-per-principal: 0 } }\n").unwrap_err();
    assert!(
        errors
            .iter()
            .any(|e| e.path == "bridge.pooled-sessions.max-per-principal"),
        "{errors:?}"
    );
}

#[test]
fn cache_hints_are_private_with_no_ttl_unless_configured() {
    let d = bridge("").unwrap();
    assert_eq!((d.cache_ttl_ms, d.cache_public), (0, false));
    let c = bridge("bridge: { cache-hints: { scope: public, ttl-ms: 30000 } }\n").unwrap();
    assert_eq!((c.cache_ttl_ms, c.cache_public), (30_000, true));
    let p = bridge("bridge: { cache-hints: { scope: private } }\n").unwrap();
    assert!(!p.cache_public);
    let errors = bridge("bridge: { cache-hints: { scope: shared } }\n").unwrap_err();
    assert!(!errors.is_empty());
    let errors = bridge("bridge: { cache-hints: { ttl: 5 } }\n").unwrap_err();
    assert!(
        errors.iter().any(|e| e.path == "bridge.cache-hints.ttl"),
        "{errors:?}"
    );
}

#[test]
fn an_advertise_url_needs_the_shared_state_key() {
    let yaml = "listen: 127.0.0.1:1\nadmin: 127.0.0.1:2\nbridge: { advertise-url: \"http://10.0.0.7:8080\" }\n";
    let errors = parse(yaml).unwrap_err();
    assert!(
        errors
            .iter()
            .any(|e| e.path == "bridge.advertise-url"
                && e.message.contains("request-state-key-file")),
        "{errors:?}"
    );
}
