//! Whose a `private` result is on a route without `auth`: the gateway cannot know what the
//! backend tells its users apart by (`Authorization`, `X-Api-Key`, a cookie, a front proxy's
//! identity header), so such a route keeps a private result only in a context the operator's
//! `cache.context-headers` make. Two users who share an `Authorization` (a static token of the
//! front) but not their API key never get each other's result.

use super::prefix_routes::{asked_with, Tenants};
use mcp_gateway_tests::Gateway;
use std::sync::atomic::Ordering;

fn config(tenants: &Tenants, cache: &str) -> String {
    format!(
        "{cache}pools:\n  p: {{ backends: [{}] }}\nroutes:\n  - {{ path: /mcp, pool: p }}\n",
        tenants.addr()
    )
}

/// `user`'s list, with the shared `Authorization` and its own `X-Api-Key`: the name the
/// server gave it and how the cache answered.
async fn list(gw: &Gateway, user: &str) -> (String, String) {
    let headers = [("Authorization", "Bearer shared"), ("X-Api-Key", user)];
    asked_with(gw, &headers, ("/mcp", None, "tools/list")).await
}

#[tokio::test]
async fn without_context_headers_a_route_without_auth_keeps_no_private_result() {
    let tenants = Tenants::start("private").await;
    let gw = Gateway::start(&config(&tenants, "")).await;
    for user in ["alice", "bob", "alice", "bob"] {
        let (name, how) = list(&gw, user).await;
        assert_eq!(name, format!("/mcp|-|{user}"), "{user} gets their own");
        assert_eq!(how, "bypass", "{user}");
    }
    assert_eq!(tenants.asked.load(Ordering::Relaxed), 4);
}

#[tokio::test]
async fn the_context_headers_make_each_users_context() {
    let tenants = Tenants::start("private").await;
    let cache = "cache: { context-headers: [x-api-key] }\n";
    let gw = Gateway::start(&config(&tenants, cache)).await;
    let expected = [
        ("alice", "miss"),
        ("bob", "miss"),
        ("alice", "hit"),
        ("bob", "hit"),
    ];
    for (user, how) in expected {
        let (name, answered) = list(&gw, user).await;
        assert_eq!(name, format!("/mcp|-|{user}"), "{user} gets their own");
        assert_eq!(answered, how, "{user}");
    }
    assert_eq!(tenants.asked.load(Ordering::Relaxed), 2);
}
