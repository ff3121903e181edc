//! `pools.NAME.upstream-auth` validation.

use super::*;

fn parse(yaml: &str) -> (UpstreamAuth, Vec<String>) {
    let file: FileUpstreamAuth = serde_saphyr::from_str(yaml).unwrap();
    let mut p = Problems::default();
    let auth = validate(&mut p, "pools.p", &file);
    (auth, p.0.iter().map(|e| e.to_string()).collect())
}

#[test]
fn headers_from_files_and_env_with_a_prefix() {
    let (auth, problems) = parse(
        "headers: { Authorization: { file: /run/s/t, prefix: \"Bearer \" }, x-api-key: { env: KEY } }",
    );
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(
        auth.headers,
        vec![
            SecretHeader {
                name: "authorization".into(),
                source: SecretSource::File("/run/s/t".into()),
                prefix: "Bearer ".into()
            },
            SecretHeader {
                name: "x-api-key".into(),
                source: SecretSource::Env("KEY".into()),
                prefix: String::new()
            },
        ]
    );
}

#[test]
fn bad_entries_are_named() {
    let (auth, problems) = parse(
        "headers: { host: { env: A }, x-a: { env: A, file: /f }, x-b: {}, x-c: { env: A, extra: 1 } }\nclient-credentials: { token-url: x }\ntoken-exchange: {}",
    );
    let joined = problems.join("\n");
    assert!(
        joined.contains("pools.p.upstream-auth.headers.host"),
        "{joined}"
    );
    assert!(joined.contains("headers.x-a: give exactly one"), "{joined}");
    assert!(joined.contains("headers.x-b: give exactly one"), "{joined}");
    assert!(joined.contains("x-c"), "{joined}");
    assert!(
        joined.contains("client-credentials.token-url: not an http(s) URL"),
        "{joined}"
    );
    assert!(
        joined.contains("client-credentials.client-id: required"),
        "{joined}"
    );
    assert!(
        joined.contains("token-exchange: give `client-credentials` or `token-exchange`, not both"),
        "{joined}"
    );
    assert_eq!(auth.headers.len(), 1, "x-c is kept: {auth:?}");
}

#[test]
fn token_exchange_with_its_bounds() {
    let (auth, problems) = parse(
        "token-exchange: { token-url: \"http://127.0.0.1:9/token\", client-id: gw, client-secret: { env: S }, audience: user-mcp, scope: tools, api-key-callers: client-credentials, actor: client-credentials, cache-per-caller: 2 }",
    );
    assert!(problems.is_empty(), "{problems:?}");
    let te = auth.token_exchange.expect("set");
    assert_eq!(te.own.audience.as_deref(), Some("user-mcp"));
    assert_eq!(te.api_key_callers, ApiKeyCallers::ClientCredentials);
    assert!(te.actor);
    assert_eq!((te.per_caller, te.callers), (2, 10_000));
    let (_, problems) = parse(
        "token-exchange: { token-url: \"http://x/t\", client-id: gw, client-secret: { env: S }, api-key-callers: allow, actor: me, cache-callers: 0 }",
    );
    let joined = problems.join("\n");
    assert!(joined.contains("api-key-callers: `allow`"), "{joined}");
    assert!(joined.contains("actor: `me`"), "{joined}");
    assert!(
        joined.contains("cache-callers: must be at least 1"),
        "{joined}"
    );
}

#[test]
fn client_credentials_with_a_secret_file() {
    let (auth, problems) = parse(
        "client-credentials: { token-url: \"http://127.0.0.1:9/token\", client-id: gw, client-secret: { file: /run/s/gw }, scope: mcp, audience: internal, auth-method: post, timeout-ms: 800 }",
    );
    assert!(problems.is_empty(), "{problems:?}");
    let cc = auth.client_credentials.expect("set");
    assert_eq!(cc.client.token_url, "http://127.0.0.1:9/token");
    assert_eq!(
        cc.client.client_secret,
        SecretSource::File("/run/s/gw".into())
    );
    assert_eq!(cc.client.auth, ClientAuth::Post);
    assert_eq!(cc.client.timeout, std::time::Duration::from_millis(800));
    assert_eq!(
        (cc.scope.as_deref(), cc.audience.as_deref()),
        (Some("mcp"), Some("internal"))
    );
    assert_eq!(cc.resource, None);
    let (_, problems) = parse(
        "headers: { Authorization: { env: T } }\nclient-credentials: { token-url: \"https://idp/t\", client-id: gw, client-secret: { env: S, prefix: x } }",
    );
    let joined = problems.join("\n");
    assert!(
        joined.contains(
            "headers.Authorization: `client-credentials` and `token-exchange` set Authorization"
        ),
        "{joined}"
    );
    assert!(
        joined.contains("client-secret.prefix: a client secret takes no prefix"),
        "{joined}"
    );
}
