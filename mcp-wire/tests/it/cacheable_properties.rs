//! Property tests (proptest) for the cache's view of a result (`cacheable`): whatever the
//! result holds, where its `ttlMs` sits and however it is spaced, an answer served from the
//! cache differs from the one the server gave only in its id and its `ttlMs` (lowered by the
//! entry's age, never to 0), and every other byte of the result is the server's.
//!
//! `cargo test -p mcp-wire --test it cacheable_properties::` (64 cases per property, or
//! `PROPTEST_CASES`).

use crate::generate::{any_json, config};
use mcp_wire::cacheable::{served, stored, Scope};
use proptest::prelude::*;
use serde_json::{json, Value};

/// A result object's text: `members` (none named `ttlMs`), `ttlMs` at `at`, pretty or not.
fn result_text(members: &[(String, Value)], ttl: u64, at: usize, pretty: bool) -> String {
    let mut parts: Vec<String> = members
        .iter()
        .map(|(k, v)| format!("{}:{}", json!(k), v))
        .collect();
    parts.insert(at.min(parts.len()), format!("\"ttlMs\":{ttl}"));
    let sep = if pretty { ",\n  " } else { "," };
    format!("{{{}}}", parts.join(sep))
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn a_served_answer_differs_from_the_servers_only_in_its_id_and_ttl(
        members in prop::collection::vec(("[a-zA-Z_]{1,8}", any_json()), 0..6),
        ttl in 1u64..10_000_000,
        age in 0u64..20_000_000,
        at in 0usize..8,
        pretty in any::<bool>(),
        id in prop_oneof![any::<i64>().prop_map(|n| n.to_string()), "[a-z0-9]{0,10}".prop_map(|s| json!(s).to_string())],
    ) {
        let mut seen = std::collections::BTreeSet::new();
        let members: Vec<(String, Value)> = members
            .into_iter()
            .filter(|(k, _)| k != "ttlMs" && k != "resultType" && seen.insert(k.clone()))
            .collect();
        let result = result_text(&members, ttl, at, pretty);
        let response = format!(r#"{{"jsonrpc":"2.0","id":"server-side","result":{result}}}"#);
        let kept = stored(response.as_bytes()).unwrap();
        prop_assert_eq!(kept.ttl_ms, ttl);
        let out = served(&kept, &id, age);
        let out: Value = serde_json::from_slice(&out).unwrap();
        let id: Value = serde_json::from_str(&id).unwrap();
        prop_assert_eq!(&out["id"], &id);
        prop_assert_eq!(&out["jsonrpc"], "2.0");
        let mut expected: Value = serde_json::from_str(&result).unwrap();
        expected["ttlMs"] = json!(ttl.saturating_sub(age).max(1));
        prop_assert_eq!(&out["result"], &expected);
        // byte for byte: the served result is the stored one with the ttl's digits replaced
        let text = String::from_utf8(served(&kept, "0", age)).unwrap();
        let left = ttl.saturating_sub(age).max(1);
        let want = result.replacen(&format!("\"ttlMs\":{ttl}"), &format!("\"ttlMs\":{left}"), 1);
        prop_assert!(text.contains(&want), "{} in {}", want, text);
        let scope_public = kept.scope == Scope::Public;
        prop_assert!(!scope_public || result.contains("\"cacheScope\":\"public\""));
    }
}
