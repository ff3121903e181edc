//! The gateway's `auth` with the real SDKs: the TypeScript SDK 1.32.2 client and the Python
//! mcp 2.3.0 client call through the gateway with a bearer token signed in the test (stateless
//! and stateful routes), get 401 with the metadata URL without one, the 2.3.0 SDK's OAuth
//! discovery reads the metadata document, and `tools/list` is filtered by the route's rules.
//! Needs `scripts/setup-peers`.

use mcp_gateway_tests::auth::{
    auth_yaml, oauth_discovery, repl_ts_with_bearer, repl_with_bearer, token, RESOURCE,
};
use mcp_gateway_tests::{eventually_async, Gateway, PythonPeer, Request};
use serde_json::{json, Value};
use std::time::Duration;

const ADMIN_RULE: &str =
    "    authz:\n      - { match: { method: tools/call, name: \"admin_*\" }, require: { scope: admin } }\n";

/// A stateless route (`/mcp`, 2.3.0 stateless server) and a stateful one (`/legacy`, 2.3.0
/// server with sessions), both requiring a token, with the admin rule on both.
async fn setup() -> (PythonPeer, PythonPeer, Gateway) {
    let (stateless, sessions) = tokio::join!(
        PythonPeer::stateless_v2("py-stateless"),
        PythonPeer::sessions_v2("py-sessions")
    );
    let gw = Gateway::start(&format!(
        "{}pools:\n  modern: {{ backends: [{}] }}\n  legacy: {{ backends: [{}] }}\nroutes:\n\
         \x20 - path: /mcp\n    mode: stateless\n    pool: modern\n{ADMIN_RULE}\
         \x20 - path: /legacy\n    mode: stateful\n    pool: legacy\n    upstream-path: /mcp\n{ADMIN_RULE}",
        auth_yaml(RESOURCE),
        stateless.addr(),
        sessions.addr(),
    ))
    .await;
    (stateless, sessions, gw)
}

fn tools(answer: &Value) -> Vec<String> {
    answer["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t.as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn the_python_2_3_client_calls_stateless_and_stateful_routes_with_a_bearer_token() {
    let (_s, _l, gw) = setup().await;
    let bearer = token("alice", "tools");
    for (path, mode, server) in [
        ("/mcp", "auto", "py-stateless"),
        ("/legacy", "legacy", "py-sessions"),
    ] {
        let mut client = repl_with_bearer("mcp2", &gw.url(path), Some(mode), &bearer)
            .await
            .unwrap_or_else(|hello| panic!("{path}: {hello}"));
        assert_eq!(client.call_text("whoami", json!({})).await, server);
        assert!(client.close().await, "{path}: unclean close");
    }
}

#[tokio::test]
async fn the_typescript_client_calls_a_stateful_route_with_a_bearer_token_and_gets_401_without() {
    let (_s, _l, gw) = setup().await;
    let url = gw.url("/legacy");
    let mut client = repl_ts_with_bearer(&url, &token("alice", "tools"), None)
        .await
        .unwrap_or_else(|hello| panic!("{hello}"));
    assert_eq!(client.call_text("whoami", json!({})).await, "py-sessions");
    assert!(client.close().await);
    let Err(hello) = repl_ts_with_bearer(&url, "", None).await else {
        panic!("the TypeScript client connected without a token");
    };
    // The SDK surfaces the gateway's 401 body: the code and the metadata URL.
    let said = hello.to_string();
    assert!(
        said.contains("-32023") && said.contains("oauth-protected-resource"),
        "{said}"
    );
}

#[tokio::test]
async fn a_principal_without_admin_does_not_see_admin_tools_and_is_denied_the_call() {
    let (_s, _l, gw) = setup().await;
    for (path, mode) in [("/mcp", "auto"), ("/legacy", "legacy")] {
        let mut user = repl_with_bearer("mcp2", &gw.url(path), Some(mode), &token("bob", "tools"))
            .await
            .unwrap_or_else(|hello| panic!("{path}: {hello}"));
        let listed = tools(&user.cmd(json!({"op": "list"})).await);
        assert!(listed.contains(&"whoami".to_owned()), "{path}: {listed:?}");
        assert!(
            !listed.contains(&"admin_reset".to_owned()),
            "{path}: {listed:?}"
        );
        let denied = user
            .cmd(json!({"op": "call", "name": "admin_reset", "args": {}}))
            .await;
        assert_eq!(denied["ok"], false, "{path}: {denied}");
        assert_eq!(denied["code"], -32024, "{path}: {denied}");
        user.close().await;

        let mut admin = repl_with_bearer(
            "mcp2",
            &gw.url(path),
            Some(mode),
            &token("root", "tools admin"),
        )
        .await
        .unwrap_or_else(|hello| panic!("{path}: {hello}"));
        let listed = tools(&admin.cmd(json!({"op": "list"})).await);
        assert!(
            listed.contains(&"admin_reset".to_owned()),
            "{path}: {listed:?}"
        );
        assert!(admin
            .call_text("admin_reset", json!({}))
            .await
            .ends_with(":reset"));
        admin.close().await;
    }
}

#[tokio::test]
async fn without_a_token_the_python_sdk_discovery_reads_the_metadata_document() {
    let (s, l, gw) = setup().await;
    // The resource must be the URL the client uses: rewrite the config with the real port.
    let resource = gw.url("/mcp");
    gw.rewrite_config(&format!(
        "{}pools:\n  modern: {{ backends: [{}] }}\n  legacy: {{ backends: [{}] }}\nroutes:\n\
         \x20 - path: /mcp\n    mode: stateless\n    pool: modern\n",
        auth_yaml(&resource),
        s.addr(),
        l.addr(),
    ));
    let addr = gw.addr;
    let wanted = resource.clone();
    eventually_async("the reloaded metadata", Duration::from_secs(15), || {
        let wanted = wanted.clone();
        async move {
            let resp = Request::bare("GET", "/.well-known/oauth-protected-resource/mcp")
                .send(addr)
                .await;
            resp.status() == 200 && resp.json()["resource"] == wanted.as_str()
        }
    })
    .await;
    let found = oauth_discovery(&resource).await;
    assert_eq!(found["status"], 401, "{found}");
    let meta_url = format!("http://{addr}/.well-known/oauth-protected-resource/mcp");
    assert_eq!(
        found["www_authenticate"],
        format!("Bearer resource_metadata=\"{meta_url}\""),
    );
    assert_eq!(found["metadata_url"], meta_url.as_str(), "{found}");
    assert_eq!(found["resource"], resource.as_str());
    assert_eq!(
        found["authorization_servers"],
        json!(["https://idp.example.com"])
    );
    assert_eq!(found["resource_allowed"], true, "{found}");
}
