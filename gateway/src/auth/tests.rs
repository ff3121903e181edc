//! The token-fault table, row by row, against `Auth::authenticate` with the committed test keys
//! (`tests/fixtures/auth/`), plus API keys. The same rows go through the gateway in
//! `tests/tests/it/auth.rs`.

use super::*;
use crate::config::{ApiKeysConfig, AuthConfig, JwksSource, JwtConfig};
use base64::Engine as _;
use jsonwebtoken::{encode, Algorithm, EncodingKey, Header};
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const ISS: &str = "https://idp.example.com";
const AUD: &str = "https://gw.example.com/mcp";

fn fixture(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/auth")
        .join(name)
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn claims() -> serde_json::Value {
    json!({"iss": ISS, "aud": AUD, "sub": "alice", "exp": now() + 600, "scope": "tools"})
}

fn sign(claims: &serde_json::Value, alg: Algorithm, kid: &str, pem: &str) -> String {
    let mut header = Header::new(alg);
    header.kid = Some(kid.into());
    let bytes = std::fs::read(fixture(pem)).unwrap();
    let key = match alg {
        Algorithm::ES256 => EncodingKey::from_ec_pem(&bytes).unwrap(),
        Algorithm::HS256 => EncodingKey::from_secret(&bytes).unwrap(),
        _ => EncodingKey::from_rsa_pem(&bytes).unwrap(),
    };
    encode(&header, claims, &key).unwrap()
}

fn rs256(claims: &serde_json::Value) -> String {
    sign(claims, Algorithm::RS256, "rs-1", "rs256.pem")
}

fn config(jwks: JwksSource) -> AuthConfig {
    AuthConfig {
        resource: AUD.into(),
        authorization_servers: vec![ISS.into()],
        scopes_supported: vec![],
        jwt: Some(JwtConfig {
            issuer: ISS.into(),
            audiences: vec![AUD.into()],
            jwks,
            leeway: Duration::from_secs(30),
            refresh_min_interval: Duration::from_secs(60),
            fetch_timeout: crate::config::DEFAULT_JWKS_FETCH_TIMEOUT,
        }),
        api_keys: None,
    }
}

fn auth() -> Auth {
    Auth::new(&config(JwksSource::File(fixture("jwks.json"))))
}

fn bearer(token: &str) -> http::HeaderMap {
    let mut h = http::HeaderMap::new();
    h.insert(
        http::header::AUTHORIZATION,
        format!("Bearer {token}").parse().unwrap(),
    );
    h
}

/// The 401's `data.reason`, or a panic if the token was accepted.
async fn refused(auth: &Auth, headers: &http::HeaderMap) -> String {
    let err = auth.authenticate(headers).await.expect_err("refused");
    assert_eq!(err.kind, crate::error::ErrorKind::Unauthorized, "{err}");
    err.data["reason"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_valid_rs256_token_names_its_principal_and_scopes() {
    let p = auth()
        .authenticate(&bearer(&rs256(&claims())))
        .await
        .unwrap();
    assert_eq!(&*p.id, "https://idp.example.com|alice");
    assert!(p.has_scope("tools"));
}

#[tokio::test]
async fn a_valid_es256_token_names_its_principal() {
    let token = sign(&claims(), Algorithm::ES256, "es-1", "es256.pem");
    let p = auth().authenticate(&bearer(&token)).await.unwrap();
    assert_eq!(p.subject, "alice");
}

#[tokio::test]
async fn no_token_is_refused_as_missing() {
    assert_eq!(refused(&auth(), &http::HeaderMap::new()).await, "missing");
}

#[tokio::test]
async fn a_malformed_token_is_refused_as_malformed() {
    assert_eq!(refused(&auth(), &bearer("abc.def.ghi")).await, "malformed");
    assert_eq!(refused(&auth(), &bearer("not-a-jwt")).await, "malformed");
    let mut basic = http::HeaderMap::new();
    basic.insert(
        http::header::AUTHORIZATION,
        "Basic Zm9vOmJhcg==".parse().unwrap(),
    );
    assert_eq!(refused(&auth(), &basic).await, "malformed");
}

#[tokio::test]
async fn a_token_signed_by_another_key_is_refused_as_bad_signature() {
    let token = sign(&claims(), Algorithm::RS256, "rs-1", "other-rs256.pem");
    assert_eq!(refused(&auth(), &bearer(&token)).await, "bad-signature");
}

#[tokio::test]
async fn an_expired_token_is_refused_past_the_leeway_only() {
    let mut c = claims();
    c["exp"] = json!(now() - 10);
    assert!(auth().authenticate(&bearer(&rs256(&c))).await.is_ok());
    c["exp"] = json!(now() - 120);
    assert_eq!(refused(&auth(), &bearer(&rs256(&c))).await, "expired");
}

#[tokio::test]
async fn a_token_not_yet_valid_is_refused() {
    let mut c = claims();
    c["nbf"] = json!(now() + 300);
    assert_eq!(refused(&auth(), &bearer(&rs256(&c))).await, "not-yet-valid");
}

#[tokio::test]
async fn a_token_of_another_issuer_is_refused() {
    let mut c = claims();
    c["iss"] = json!("https://evil.example.com");
    assert_eq!(refused(&auth(), &bearer(&rs256(&c))).await, "wrong-issuer");
}

#[tokio::test]
async fn a_token_meant_for_another_resource_is_refused() {
    let mut c = claims();
    c["aud"] = json!("https://other.example.com/mcp");
    assert_eq!(
        refused(&auth(), &bearer(&rs256(&c))).await,
        "wrong-audience"
    );
}

#[tokio::test]
async fn an_unsigned_alg_none_token_is_refused() {
    let b64 = |v: serde_json::Value| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
    };
    let token = format!(
        "{}.{}.",
        b64(json!({"alg": "none", "kid": "rs-1"})),
        b64(claims())
    );
    assert_eq!(
        refused(&auth(), &bearer(&token)).await,
        "algorithm-not-allowed"
    );
}

#[tokio::test]
async fn an_hs256_token_keyed_with_the_public_key_is_refused() {
    let token = sign(&claims(), Algorithm::HS256, "rs-1", "rs256.pub.pem");
    assert_eq!(
        refused(&auth(), &bearer(&token)).await,
        "algorithm-not-allowed"
    );
}

#[tokio::test]
async fn an_es256_header_on_the_rsa_key_is_refused() {
    let token = sign(&claims(), Algorithm::ES256, "rs-1", "es256.pem");
    assert_eq!(
        refused(&auth(), &bearer(&token)).await,
        "algorithm-not-allowed"
    );
}

#[tokio::test]
async fn a_token_over_8_kib_is_refused_unread() {
    let mut c = claims();
    c["padding"] = json!("x".repeat(9 * 1024));
    assert_eq!(refused(&auth(), &bearer(&rs256(&c))).await, "malformed");
}

/// Serves the JWKS fixture over HTTP on loopback, counting the fetches.
async fn jwks_server() -> (String, Arc<AtomicUsize>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/jwks.json", listener.local_addr().unwrap());
    let count = Arc::new(AtomicUsize::new(0));
    let served = count.clone();
    let body = std::fs::read(fixture("jwks.json")).unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            served.fetch_add(1, Ordering::SeqCst);
            let mut buf = vec![0u8; 4096];
            let _ = s.read(&mut buf).await;
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = s.write_all(head.as_bytes()).await;
            let _ = s.write_all(&body).await;
        }
    });
    (url, count)
}

#[tokio::test]
async fn an_unknown_kid_fetches_the_key_set_once_then_is_refused() {
    let (url, fetches) = jwks_server().await;
    let auth = Auth::new(&config(JwksSource::Url(url)));
    // The first token fetches the set (nothing is loaded from an URL before).
    assert!(auth.authenticate(&bearer(&rs256(&claims()))).await.is_ok());
    assert_eq!(fetches.load(Ordering::SeqCst), 1);
    let unknown = sign(&claims(), Algorithm::RS256, "rotated-away", "rs256.pem");
    assert_eq!(refused(&auth, &bearer(&unknown)).await, "unknown-key");
    assert_eq!(
        fetches.load(Ordering::SeqCst),
        2,
        "one refetch for the unknown kid"
    );
    // Within the minimum interval, more unknown kids fetch nothing.
    for _ in 0..5 {
        assert_eq!(refused(&auth, &bearer(&unknown)).await, "unknown-key");
    }
    assert_eq!(fetches.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn an_unreachable_key_set_is_a_503_not_a_401() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let auth = Auth::new(&config(JwksSource::Url(format!(
        "http://127.0.0.1:{port}/jwks"
    ))));
    let err = auth
        .authenticate(&bearer(&rs256(&claims())))
        .await
        .unwrap_err();
    assert_eq!(err.kind, crate::error::ErrorKind::AuthUnavailable);
}

#[tokio::test]
async fn api_keys_from_the_hash_file_authenticate_by_bearer_or_header() {
    use sha2::{Digest, Sha256};
    let file = std::env::temp_dir().join(format!("mcpgw-auth-keys-{}", std::process::id()));
    let hash: String = Sha256::digest(b"k-123")
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    std::fs::write(&file, format!("{hash} ci-bot tools\n")).unwrap();
    let mut cfg = config(JwksSource::File(fixture("jwks.json")));
    cfg.api_keys = Some(ApiKeysConfig {
        file: file.clone(),
        header: "x-api-key".into(),
    });
    let auth = Auth::new(&cfg);
    let p = auth.authenticate(&bearer("k-123")).await.unwrap();
    assert_eq!(&*p.id, "key:ci-bot");
    let mut h = http::HeaderMap::new();
    h.insert("x-api-key", "k-123".parse().unwrap());
    assert_eq!(&*auth.authenticate(&h).await.unwrap().id, "key:ci-bot");
    assert_eq!(refused(&auth, &bearer("k-999")).await, "unknown-api-key");
    // A JWT still goes to the JWT check.
    assert!(auth.authenticate(&bearer(&rs256(&claims()))).await.is_ok());
    std::fs::remove_file(&file).ok();
}
