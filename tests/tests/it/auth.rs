//! The gateway as an OAuth 2.1 resource server, against Rust mock backends: the token-fault
//! table (each row a test with its documented answer), the metadata document, no token
//! passthrough and identity headers, per-client limits by principal, API keys, and
//! authorization rules deciding on the name the backend will execute. Sessions bound to their
//! principal: `auth_principals.rs`. A JWKS URL that never answers costs a token at most
//! `fetch-timeout-s` (503 -32025).

use jsonwebtoken::Algorithm;
use mcp_gateway_tests::auth::sha256_hex;
use mcp_gateway_tests::auth::{
    auth_yaml, claims, es256_token, fixture, now, sign, token, RESOURCE,
};
use mcp_gateway_tests::{Gateway, MockServer, Request, Response};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

const METADATA: &str = "https://gw.example.com/.well-known/oauth-protected-resource/mcp";

fn stateless(mock: &MockServer, route_extra: &str) -> String {
    format!(
        "{}pools:\n  p: {{ backends: [{}], identity-headers: {{ subject: x-mcp-subject, principal: x-mcp-principal, claims: {{ scope: x-mcp-scopes }} }} }}\n\
         routes:\n  - path: /mcp\n    pool: p\n{route_extra}",
        auth_yaml(RESOURCE),
        mock.addr
    )
}

async fn setup() -> (MockServer, Gateway) {
    let mock = MockServer::start("m").await;
    let gw = Gateway::start(&stateless(&mock, "")).await;
    (mock, gw)
}

fn call_with(token: &str) -> Request {
    Request::tools_call("/mcp", 7, "echo").header("Authorization", &format!("Bearer {token}"))
}

/// Asserts the documented 401: -32023 with the request's id, `data.reason`, and the metadata
/// URL in `WWW-Authenticate`; the backend saw nothing.
fn assert_refused(resp: &Response, reason: &str, mock: &MockServer) {
    assert_eq!(
        resp.status(),
        401,
        "{}",
        String::from_utf8_lossy(&resp.body)
    );
    let v = resp.json();
    assert_eq!(v["id"], 7);
    assert_eq!(v["error"]["code"], -32023);
    assert_eq!(v["error"]["data"]["kind"], "unauthorized");
    assert_eq!(v["error"]["data"]["reason"], reason);
    let challenge = resp
        .head
        .header("www-authenticate")
        .expect("WWW-Authenticate");
    assert!(
        challenge.starts_with(&format!("Bearer resource_metadata=\"{METADATA}\"")),
        "{challenge}"
    );
    if reason != "missing" {
        assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
    }
    assert_eq!(mock.count(), 0, "the backend saw a refused request");
}

macro_rules! fault_row {
    ($name:ident, $token:expr, $reason:expr) => {
        #[tokio::test]
        async fn $name() {
            let (mock, gw) = setup().await;
            let token: Option<String> = $token;
            let req = match &token {
                Some(t) => call_with(t),
                None => Request::tools_call("/mcp", 7, "echo"),
            };
            assert_refused(&req.send(gw.addr).await, $reason, &mock);
        }
    };
}

fault_row!(a_request_without_a_token_is_401_missing, None, "missing");
fault_row!(
    a_malformed_token_is_401_malformed,
    Some("eyJhbGciOiJSUzI1NiJ9.garbage.sig".into()),
    "malformed"
);
fault_row!(
    a_token_with_a_bad_signature_is_401_bad_signature,
    Some(sign(
        &claims("alice", "tools"),
        Algorithm::RS256,
        "rs-1",
        "other-rs256.pem"
    )),
    "bad-signature"
);
fault_row!(
    an_expired_token_is_401_expired,
    Some(sign(
        &json!({"iss": "https://idp.example.com", "aud": RESOURCE, "sub": "alice", "exp": now() - 300}),
        Algorithm::RS256,
        "rs-1",
        "rs256.pem"
    )),
    "expired"
);
fault_row!(
    a_token_not_yet_valid_is_401_not_yet_valid,
    Some({
        let mut c = claims("alice", "tools");
        c["nbf"] = json!(now() + 600);
        sign(&c, Algorithm::RS256, "rs-1", "rs256.pem")
    }),
    "not-yet-valid"
);
fault_row!(
    a_token_of_another_issuer_is_401_wrong_issuer,
    Some({
        let mut c = claims("alice", "tools");
        c["iss"] = json!("https://evil.example.com");
        sign(&c, Algorithm::RS256, "rs-1", "rs256.pem")
    }),
    "wrong-issuer"
);
fault_row!(
    a_token_for_another_resource_is_401_wrong_audience,
    Some({
        let mut c = claims("alice", "tools");
        c["aud"] = json!("https://other.example.com/mcp");
        sign(&c, Algorithm::RS256, "rs-1", "rs256.pem")
    }),
    "wrong-audience"
);
fault_row!(
    an_alg_none_token_is_401_algorithm_not_allowed,
    Some({
        use base64_shim::url_b64;
        format!(
            "{}.{}.",
            url_b64(&json!({"alg": "none", "kid": "rs-1"})),
            url_b64(&claims("alice", "tools"))
        )
    }),
    "algorithm-not-allowed"
);
fault_row!(
    an_hs256_token_keyed_with_the_public_key_is_401_algorithm_not_allowed,
    Some(sign(
        &claims("alice", "tools"),
        Algorithm::HS256,
        "rs-1",
        "rs256.pub.pem"
    )),
    "algorithm-not-allowed"
);
fault_row!(
    a_token_in_an_8_kib_header_is_401_malformed,
    Some({
        let mut c = claims("alice", "tools");
        c["padding"] = json!("x".repeat(9 * 1024));
        sign(&c, Algorithm::RS256, "rs-1", "rs256.pem")
    }),
    "malformed"
);

/// base64url without padding, for hand-made tokens.
mod base64_shim {
    pub fn url_b64(v: &serde_json::Value) -> String {
        const ALPHABET: &[u8; 64] =
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        let bytes = v.to_string().into_bytes();
        let mut out = String::new();
        for chunk in bytes.chunks(3) {
            let n = chunk.iter().fold(0u32, |acc, b| acc << 8 | u32::from(*b))
                << (8 * (3 - chunk.len()));
            for i in 0..=chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            }
        }
        out
    }
}

/// Serves the test JWKS over HTTP on loopback, counting fetches.
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
async fn an_unknown_kid_refetches_the_jwks_once_then_is_401_unknown_key() {
    let (url, fetches) = jwks_server().await;
    let mock = MockServer::start("m").await;
    let yaml = stateless(&mock, "").replace(
        &format!("file: {}", fixture("jwks.json").display()),
        &format!("url: \"{url}\""),
    );
    let gw = Gateway::start(&yaml).await;
    assert_eq!(
        call_with(&token("alice", "tools"))
            .send(gw.addr)
            .await
            .status(),
        200
    );
    assert_eq!(
        fetches.load(Ordering::SeqCst),
        1,
        "the first token loads the key set"
    );
    let unknown = sign(
        &claims("alice", "tools"),
        Algorithm::RS256,
        "rotated",
        "rs256.pem",
    );
    let before = mock.count();
    let resp = call_with(&unknown).send(gw.addr).await;
    assert_eq!(
        fetches.load(Ordering::SeqCst),
        2,
        "one refetch for the unknown kid"
    );
    assert_eq!(resp.status(), 401);
    assert_eq!(resp.json()["error"]["data"]["reason"], "unknown-key");
    for _ in 0..5 {
        assert_eq!(call_with(&unknown).send(gw.addr).await.status(), 401);
    }
    assert_eq!(
        fetches.load(Ordering::SeqCst),
        2,
        "no refetch within the minimum interval"
    );
    assert_eq!(mock.count(), before);
}

#[tokio::test]
async fn valid_rs256_and_es256_tokens_reach_the_backend_without_the_clients_authorization() {
    let (mock, gw) = setup().await;
    mock.set_capture(true);
    for t in [
        token("alice", "tools read"),
        es256_token("alice", "tools read"),
    ] {
        let resp = call_with(&t)
            .header("X-Mcp-Subject", "spoofed-by-the-client")
            .send(gw.addr)
            .await;
        assert_eq!(
            resp.status(),
            200,
            "{}",
            String::from_utf8_lossy(&resp.body)
        );
    }
    let seen = mock.requests();
    assert_eq!(seen.len(), 2);
    for r in &seen {
        assert_eq!(
            r.head.header("authorization"),
            None,
            "the token went upstream"
        );
        assert_eq!(r.head.header("x-mcp-subject"), Some("alice"));
        assert_eq!(
            r.head.header("x-mcp-principal"),
            Some("https://idp.example.com|alice")
        );
        assert_eq!(r.head.header("x-mcp-scopes"), Some("tools,read"));
    }
}

#[tokio::test]
async fn the_metadata_document_is_served_at_the_well_known_path_and_its_path_suffixed_form() {
    let (_mock, gw) = setup().await;
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let resp = Request::bare("GET", path).send(gw.addr).await;
        assert_eq!(resp.status(), 200, "{path}");
        let doc: Value = resp.json();
        assert_eq!(doc["resource"], RESOURCE);
        assert_eq!(
            doc["authorization_servers"],
            json!(["https://idp.example.com"])
        );
        assert_eq!(doc["scopes_supported"], json!(["tools", "admin"]));
    }
}

#[tokio::test]
async fn a_route_with_auth_none_needs_no_token() {
    let mock = MockServer::start("m").await;
    let gw = Gateway::start(&stateless(&mock, "    auth: none\n")).await;
    let resp = Request::tools_call("/mcp", 1, "echo").send(gw.addr).await;
    assert_eq!(resp.status(), 200);
}

const ADMIN_RULE: &str =
    "    authz:\n      - { match: { method: tools/call, name: \"admin_*\" }, require: { scope: admin } }\n";

#[tokio::test]
async fn a_principal_without_the_scope_is_denied_the_call_with_403_insufficient_scope() {
    let mock = MockServer::start("m").await;
    let gw = Gateway::start(&stateless(&mock, ADMIN_RULE)).await;
    let denied = Request::tools_call("/mcp", 9, "admin_reset")
        .header(
            "Authorization",
            &format!("Bearer {}", token("alice", "tools")),
        )
        .send(gw.addr)
        .await;
    assert_eq!(denied.status(), 403);
    let v = denied.json();
    assert_eq!(v["id"], 9);
    assert_eq!(v["error"]["code"], -32024);
    assert_eq!(v["error"]["data"]["scope"], "admin");
    let challenge = denied.head.header("www-authenticate").unwrap();
    assert!(
        challenge.contains("error=\"insufficient_scope\", scope=\"admin\""),
        "{challenge}"
    );
    assert_eq!(mock.count(), 0);
    let allowed = Request::tools_call("/mcp", 10, "admin_reset")
        .header(
            "Authorization",
            &format!("Bearer {}", token("root", "tools admin")),
        )
        .send(gw.addr)
        .await;
    assert_eq!(allowed.status(), 200);
    assert_eq!(mock.count(), 1);
}

#[tokio::test]
async fn the_decision_reads_the_name_in_the_body_not_a_header_that_lies() {
    let mock = MockServer::start("m").await;
    let bearer = format!("Bearer {}", token("alice", "tools"));
    let body = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"admin_reset","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    let lying = || {
        Request::post("/mcp", body)
            .header("MCP-Protocol-Version", "2026-07-28")
            .header("Mcp-Method", "tools/call")
            .header("Mcp-Name", "echo")
            .header("Authorization", &bearer)
    };
    // check-headers on: the disagreement itself is refused.
    let gw = Gateway::start(&stateless(&mock, ADMIN_RULE)).await;
    assert_eq!(lying().send(gw.addr).await.json()["error"]["code"], -32020);
    drop(gw);
    // check-headers off: the body's name is the one decided on.
    let off = format!("{ADMIN_RULE}    check-headers: false\n");
    let gw = Gateway::start(&stateless(&mock, &off)).await;
    let resp = lying().send(gw.addr).await;
    assert_eq!(resp.status(), 403);
    assert_eq!(resp.json()["error"]["code"], -32024);
    assert_eq!(mock.count(), 0, "a denied call reached the backend");
}

#[tokio::test]
async fn api_keys_from_the_hash_file_authenticate_and_bind_the_key_name() {
    let mock = MockServer::start("m").await;
    mock.set_capture(true);
    let dir = mcp_gateway_tests::harness::unique_temp_path("mcpgw-keys");
    std::fs::create_dir_all(&dir).unwrap();
    let keys = dir.join("api-keys.txt");
    // sha256("k-ci-123")
    let digest = sha256_hex(b"k-ci-123");
    std::fs::write(&keys, format!("# CI\n{digest} ci-bot tools\n")).unwrap();
    let yaml = stateless(&mock, "").replace(
        "  jwt:",
        &format!("  api-keys: {{ file: {} }}\n  jwt:", keys.display()),
    );
    let gw = Gateway::start(&yaml).await;
    let by_header = Request::tools_call("/mcp", 1, "echo")
        .header("X-Api-Key", "k-ci-123")
        .send(gw.addr)
        .await;
    assert_eq!(by_header.status(), 200);
    let by_bearer = call_with("k-ci-123").send(gw.addr).await;
    assert_eq!(by_bearer.status(), 200);
    let wrong = call_with("k-wrong").send(gw.addr).await;
    assert_eq!(wrong.status(), 401);
    assert_eq!(wrong.json()["error"]["data"]["reason"], "unknown-api-key");
    for r in mock.requests() {
        assert_eq!(r.head.header("x-api-key"), None, "the key went upstream");
        assert_eq!(r.head.header("authorization"), None);
        assert_eq!(r.head.header("x-mcp-subject"), Some("ci-bot"));
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[tokio::test]
async fn per_client_limits_count_by_the_principal_not_the_address() {
    let mock = MockServer::start("m").await;
    let yaml = stateless(&mock, "").replace(
        "pools:",
        "limits: { rate: { per-second: 0.1, burst: 1 } }\npools:",
    );
    let gw = Gateway::start(&yaml).await;
    let (alice, bob) = (token("alice", "tools"), token("bob", "tools"));
    assert_eq!(call_with(&alice).send(gw.addr).await.status(), 200);
    // Same address, same principal: over the rate.
    assert_eq!(call_with(&alice).send(gw.addr).await.status(), 429);
    // Same address, another principal: a bucket of its own.
    assert_eq!(call_with(&bob).send(gw.addr).await.status(), 200);
}

#[tokio::test]
async fn a_jwks_url_that_never_answers_is_a_503_after_the_fetch_timeout() {
    use mcp_gateway_tests::auth::ISSUER;
    use std::time::{Duration, Instant};
    // Accepts, reads the request, never answers (the issue saw 95 s of this).
    let idp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let idp_addr = idp.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = idp.accept().await {
            held.push(s);
        }
    });
    let backend = MockServer::start("b").await;
    let gw = Gateway::start(&format!(
        "auth:\n  resource: {RESOURCE}\n  authorization-servers: [{ISSUER}]\n  \
         jwt: {{ issuer: {ISSUER}, audiences: [{RESOURCE}], jwks: {{ url: http://{idp_addr}/jwks }} }}\n\
         pools: {{ p: {{ backends: [{}] }} }}\nroutes: [ {{ path: /mcp, pool: p, mode: stateless, auth: required }} ]\n",
        backend.addr
    ))
    .await;
    let started = Instant::now();
    let call = Request::tools_call("/mcp", 1, "whoami").header(
        "Authorization",
        &format!("Bearer {}", token("alice", "tools")),
    );
    let resp = tokio::time::timeout(Duration::from_secs(15), call.send(gw.addr))
        .await
        .expect("an answer within 15 s (today's main gave none in 5 minutes)");
    let took = started.elapsed();
    assert_eq!(resp.status(), 503, "{}", resp.text());
    let v = resp.json();
    assert_eq!(v["error"]["code"], -32025, "{v}");
    assert_eq!(v["id"], 1);
    // the documented default, 5 s, and not much more
    assert!(
        took >= Duration::from_secs(4) && took < Duration::from_secs(8),
        "answered after {took:?}"
    );
    assert_eq!(backend.count(), 0);
}
