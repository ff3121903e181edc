//! Issue 35, client credentials (`pools.NAME.upstream-auth.client-credentials`, RFC 6749 §4.4)
//! against real peers: an authorization server on authlib 1.9.10 (`tests/peers/sts_server.py`,
//! RFC 9068 JWT access tokens), and backends that check the token they receive (signature,
//! `aud`, `scope`; 401 otherwise: `peer_serve.py --require-token`) and tell its claims
//! (`token_claims`): PyPI `mcp` 2.3.0 (2026-07-28, stateless) and FastMCP 1.30.0 (sessions).

use mcp_gateway_tests::auth::sha256_hex;
use mcp_gateway_tests::harness::unique_temp_path;
use mcp_gateway_tests::{open_session, Gateway, PythonPeer, Request};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}"#;
pub(crate) const SECRET_A: &str = "cc-secret-9f2d4b7a-a";
const SECRET_B: &str = "cc-secret-51c0e8d3-b";

/// The wall clock's whole seconds (the unit of a JWT's `iat`).
fn unix_seconds() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// A 2026-07-28 call of the tool `name` (no arguments).
fn call(path: &str, id: u64, name: &str) -> Request {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{name}","arguments":{{}},{META}}}}}"#
    );
    Request::post(path, body)
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", name)
}

/// The same in a legacy session.
fn call_in_session(sid: &str, id: u64, name: &str) -> Request {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{name}","arguments":{{}}}}}}"#
    );
    Request::post("/mcp", body)
        .header("Mcp-Session-Id", sid)
        .header("MCP-Protocol-Version", "2025-11-25")
}

/// The authorization server, its files, and what it was asked.
pub(crate) struct Sts {
    pub(crate) peer: PythonPeer,
    dir: PathBuf,
    expires_in: u64,
}

impl Sts {
    pub(crate) async fn start(dir: &Path, expires_in: u64, port: u16) -> Sts {
        Self::start_with(dir, expires_in, port, &[]).await
    }

    /// With more arguments (`--subject-key`, `--audiences` for token exchange).
    pub(crate) async fn start_with(dir: &Path, expires_in: u64, port: u16, extra: &[&str]) -> Sts {
        let arg = |f: &str| dir.join(f).display().to_string();
        let (public, secrets, private) = (arg("sts.pem"), arg("accepted"), arg("sts.key"));
        let (port, expires) = (port.to_string(), expires_in.to_string());
        let mut args = vec![
            "--port",
            &port,
            "--public-key-out",
            &public,
            "--secrets-file",
            &secrets,
            "--expires-in",
            &expires,
            "--private-key",
            &private,
        ];
        args.extend_from_slice(extra);
        Sts {
            peer: PythonPeer::start("sts", "sts_server.py", &args).await,
            dir: dir.to_owned(),
            expires_in,
        }
    }

    pub(crate) fn port(&self) -> u16 {
        self.peer
            .addr()
            .rsplit(':')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    }

    pub(crate) fn public_key(&self) -> String {
        self.dir.join("sts.pem").display().to_string()
    }

    pub(crate) async fn stats(&self) -> Value {
        Request::bare("GET", "/stats")
            .send(self.peer.addr().parse().unwrap())
            .await
            .json()
    }
}

/// A directory with the secret files: the STS accepts `accepted`, the gateway sends `secret`.
pub(crate) fn secrets_dir(name: &str) -> PathBuf {
    let dir = unique_temp_path(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("accepted"), format!("{SECRET_A}\n")).unwrap();
    std::fs::write(dir.join("secret"), format!("{SECRET_A}\n")).unwrap();
    dir
}

/// `upstream-auth` asking `sts` for a token for `internal-mcp` with the scopes `mcp tools`.
fn upstream_auth(sts_port: u16, dir: &Path, method: &str) -> String {
    format!(
        "upstream-auth: {{ client-credentials: {{ token-url: \"http://127.0.0.1:{sts_port}/token\", client-id: gw, client-secret: {{ file: {} }}, scope: \"mcp tools\", audience: internal-mcp, auth-method: {method}, timeout-ms: 2000 }} }}",
        dir.join("secret").display()
    )
}

/// A PyPI `mcp` 2.3.0 server (`m`) that takes only tokens the STS whose public key is at `key`
/// signed for `audience` with the scope `mcp` (401 otherwise).
async fn checking_backend(key: &str, audience: &str) -> PythonPeer {
    let args = [
        "--port",
        "0",
        "--name",
        "m",
        "--require-token",
        key,
        "--audience",
        audience,
        "--scope",
        "mcp",
    ];
    PythonPeer::start("mcp2", "stateless_server.py", &args).await
}

pub(crate) fn claims(resp: &mcp_gateway_tests::Response) -> Value {
    serde_json::from_str(&resp.tool_text()).unwrap_or_else(|_| panic!("claims: {}", resp.text()))
}

/// A thousand concurrent first calls cause one token request; every call reaches the checking
/// 2026-07-28 backend with the gateway's token (never the client's own `Authorization`), whose
/// claims are the client's (`sub: gw`), audience and scopes; no secret or token in the log or
/// the metrics.
#[tokio::test]
async fn a_thousand_first_calls_cause_one_token_fetch_and_every_call_carries_the_token() {
    let dir = secrets_dir("mcpgw-cc-modern");
    let sts = Sts::start(&dir, 300, 0).await;
    let key = sts.public_key();
    let backend = checking_backend(&key, "internal-mcp").await;
    let yaml = format!(
        "pools:\n  m: {{ era: modern, backends: [{}], {} }}\nroutes:\n  - {{ path: /s, pool: m, mode: stateless, upstream-path: /mcp }}\n",
        backend.addr(),
        upstream_auth(sts.port(), &dir, "basic")
    );
    let log = dir.join("gateway.log");
    let gw = Gateway::start_logging_to(&yaml, &[("RUST_LOG", "debug")], &log).await;
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..1000u64 {
        let addr = gw.addr;
        calls.spawn(async move { call("/s", i, "whoami").send(addr).await });
    }
    let mut ok = 0;
    while let Some(answer) = calls.join_next().await {
        ok += usize::from(answer.is_ok_and(|r| r.status() == 200 && r.tool_text() == "m"));
    }
    assert_eq!(ok, 1000, "every first call answered by the backend");
    let stats = sts.stats().await;
    assert_eq!(
        stats["tokens"], 1,
        "one fetch for a thousand calls: {stats}"
    );
    assert_eq!(stats["audiences"][0], "internal-mcp", "{stats}");
    let fetched = "mcpgw_upstream_tokens_total{event=\"fetched\",pool=\"m\"}";
    assert_eq!(gw.metric(fetched).await, 1.0);
    let hits = "mcpgw_upstream_tokens_total{event=\"hit\",pool=\"m\"}";
    assert!(gw.metric(hits).await >= 999.0);

    // what the backend received: the gateway's token, whatever the client sent
    let seen = call("/s", 2000, "token_claims")
        .header("Authorization", "Bearer attacker")
        .send(gw.addr)
        .await;
    let c = claims(&seen);
    assert_eq!(c["sub"], "gw", "{c}");
    assert_eq!(c["aud"], "internal-mcp", "{c}");
    assert_eq!(c["scope"], "mcp tools", "{c}");

    let (_, metrics) = gw.admin_get("/metrics").await;
    assert!(
        !metrics.contains(SECRET_A) && !metrics.contains("eyJ"),
        "a secret in the metrics"
    );
    drop(gw);
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(!logged.contains(SECRET_A), "the client secret in the log");
    assert!(!logged.contains("eyJ"), "a token in the log");
    let _ = std::fs::remove_dir_all(dir);
}

/// A legacy session on a FastMCP 1.30.0 backend that checks tokens, with 4-second tokens: the
/// session is opened and used with the token; the client secret rotated (a file), the next
/// fetch (a background refresh) uses the new one; the backend refusing the token in use (401)
/// makes the gateway fetch a new one and send the call again, which succeeds; with the
/// authorization server down, once the token expired, a call is answered 503 -32039 with
/// `Retry-After` and nothing reaches the backend; with it back, calls go on in the same session.
#[tokio::test]
async fn a_session_lives_through_rotation_a_refused_token_and_the_authorization_server_down() {
    let dir = secrets_dir("mcpgw-cc-legacy");
    let mut sts = Sts::start(&dir, 4, 0).await;
    let key = sts.public_key();
    let backend = PythonPeer::start(
        "mcp1",
        "legacy_server.py",
        &[
            "--port",
            "0",
            "--name",
            "l",
            "--require-token",
            &key,
            "--audience",
            "internal-mcp",
            "--scope",
            "tools",
        ],
    )
    .await;
    let yaml = format!(
        "pools:\n  l: {{ era: legacy, backends: [{}], {} }}\nroutes:\n  - {{ path: /mcp, pool: l, mode: stateful, upstream-path: /mcp }}\n",
        backend.addr(),
        upstream_auth(sts.port(), &dir, "post")
    );
    let log = dir.join("gateway.log");
    let gw = Gateway::start_logging_to(&yaml, &[("RUST_LOG", "debug")], &log).await;
    let sid = open_session(gw.addr).await;
    let first = call_in_session(&sid, 1, "token_claims").send(gw.addr).await;
    assert_eq!(claims(&first)["sub"], "gw", "{}", first.text());

    // rotation: the STS takes both, the gateway's file has the new one; the background refresh
    // (from 80% of the 4 s lifetime) is the next fetch
    std::fs::write(dir.join("accepted"), format!("{SECRET_A}\n{SECRET_B}\n")).unwrap();
    std::fs::write(dir.join("secret"), format!("{SECRET_B}\n")).unwrap();
    let b = sha256_hex(SECRET_B.as_bytes());
    mcp_gateway_tests::eventually_async(
        "a fetch with the new secret",
        Duration::from_secs(8),
        || async {
            sts.stats().await["secrets"]
                .as_array()
                .is_some_and(|s| s.last().and_then(Value::as_str) == Some(b.as_str()))
        },
    )
    .await;
    std::fs::write(dir.join("accepted"), format!("{SECRET_B}\n")).unwrap();

    // the backend refuses every token issued so far: the call is sent again with a new one
    let backend_addr: std::net::SocketAddr = backend.addr().parse().unwrap();
    // the guard compares whole seconds (`iat` < the cutoff's second): the cutoff must fall in
    // a second after every token issued so far
    let issued_by = unix_seconds();
    mcp_gateway_tests::eventually(
        "a second after every token issued so far",
        Duration::from_secs(2),
        || unix_seconds() > issued_by,
    )
    .await;
    let reject = Request::post("/guard/reject-older", "")
        .send(backend_addr)
        .await;
    assert_eq!(reject.status(), 200);
    let before = sts.stats().await["tokens"].as_u64().unwrap();
    let again = call_in_session(&sid, 2, "whoami").send(gw.addr).await;
    assert_eq!(again.tool_text(), "l", "{}", again.text());
    assert!(sts.stats().await["tokens"].as_u64().unwrap() > before);
    let invalidated = "mcpgw_upstream_tokens_total{event=\"invalidated\",pool=\"l\"}";
    assert_eq!(gw.metric(invalidated).await, 1.0);
    let guard: Value = Request::bare("GET", "/guard/stats")
        .send(backend_addr)
        .await
        .json();
    assert!(guard["refused"].as_u64().unwrap() >= 1, "{guard}");

    // the authorization server down: once the token expired, 503 -32039, at once; asked
    // until then (each call before reaches the backend with the token still in use, which may
    // refuse it for the last moments: its JWT's `exp` counts from a whole second)
    let port = sts.port();
    sts.peer.kill().await;
    let guard_stats = || async {
        Request::bare("GET", "/guard/stats")
            .send(backend_addr)
            .await
            .json()
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(sts.expires_in + 3);
    let (down, accepted_before, accepted_after) = loop {
        let before = guard_stats().await;
        let down = call_in_session(&sid, 3, "whoami").send(gw.addr).await;
        if down.status() == 503 {
            break (down, before, guard_stats().await);
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no 503 once the token expired: {}",
            down.text()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(down.head.header("retry-after").is_some(), "{:?}", down.head);
    let v = down.json();
    assert_eq!(v["id"], 3, "{v}");
    assert_eq!(v["error"]["code"], -32039, "{v}");
    assert_eq!(v["error"]["data"]["reason"], "unreachable", "{v}");
    assert_eq!(v["error"]["data"]["pool"], "l", "{v}");
    assert_eq!(
        accepted_before, accepted_after,
        "nothing reached the backend"
    );

    // back on its port (its key kept): the session goes on
    let _sts = Sts::start(&dir, 4, port).await;
    mcp_gateway_tests::eventually_async("calls go on", Duration::from_secs(5), || async {
        let v = call_in_session(&sid, 4, "whoami")
            .send(gw.addr)
            .await
            .json();
        v["result"]["content"][0]["text"] == "l"
    })
    .await;

    drop(gw);
    let logged = std::fs::read_to_string(&log).unwrap();
    for secret in [SECRET_A, SECRET_B, "eyJ"] {
        assert!(!logged.contains(secret), "a secret or a token in the log");
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// A 2026-07-28 backend (PyPI `mcp` 2.3.0) that refuses every token the authorization server
/// issues (it wants another audience): before issue 48 each of 30 calls made a new grant
/// (each 401 dropped the pool's token for everyone); now a 401 drops it at most once per
/// `REFETCH_GAP` (5 s), every call still gets the backend's own 401, and the rest are counted
/// `invalidation-held`.
#[tokio::test]
async fn a_backend_refusing_every_token_costs_one_new_grant_not_one_per_call() {
    let dir = secrets_dir("mcpgw-cc-401");
    let sts = Sts::start(&dir, 300, 0).await;
    let key = sts.public_key();
    let backend = checking_backend(&key, "another-audience").await;
    let yaml = format!(
        "pools:\n  m: {{ era: modern, backends: [{}], {} }}\nroutes:\n  - {{ path: /s, pool: m, mode: stateless, upstream-path: /mcp }}\n",
        backend.addr(),
        upstream_auth(sts.port(), &dir, "basic")
    );
    let gw = Gateway::start(&yaml).await;
    for id in 0..30 {
        let resp = call("/s", id, "whoami").send(gw.addr).await;
        assert_eq!(
            resp.status(),
            401,
            "the backend's own answer: {}",
            resp.text()
        );
    }
    let grants = sts.stats().await["tokens"].as_u64().unwrap();
    assert!(grants <= 2, "{grants} grants for 30 refused calls");
    let held = "mcpgw_upstream_tokens_total{event=\"invalidation-held\",pool=\"m\"}";
    assert!(gw.metric(held).await >= 28.0);
}

/// An authorization server on authlib 1.9.10 whose tokens live 1e-9 s (`--expires-in 1e-9`):
/// forty calls at once make one token request between them, not forty (each waiter fetched
/// again before), and none is sent with a token past its end: each is answered 503 -32039
/// `short-lived` with `Retry-After`; the floor past, the next call makes the next request.
#[tokio::test]
async fn tokens_of_a_nanosecond_cost_one_token_request_per_second_not_one_per_call() {
    let dir = secrets_dir("mcpgw-cc-nano");
    let sts = Sts::start_with(&dir, 300, 0, &["--expires-in", "1e-9"]).await;
    let backend = PythonPeer::start(
        "mcp2",
        "stateless_server.py",
        &["--port", "0", "--name", "m"],
    )
    .await;
    let yaml = format!(
        "pools:\n  m: {{ era: modern, backends: [{}], {} }}\nroutes:\n  - {{ path: /s, pool: m, mode: stateless, upstream-path: /mcp }}\n",
        backend.addr(),
        upstream_auth(sts.port(), &dir, "basic")
    );
    let gw = Gateway::start(&yaml).await;
    let start = std::time::Instant::now();
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..40u64 {
        let addr = gw.addr;
        calls.spawn(async move { (i, call("/s", i, "whoami").send(addr).await) });
    }
    while let Some(answer) = calls.join_next().await {
        let (id, resp) = answer.unwrap();
        assert_eq!(resp.status(), 503, "{}", resp.text());
        assert!(resp.head.header("retry-after").is_some(), "{:?}", resp.head);
        let v = resp.json();
        assert_eq!(v["id"], id, "{v}");
        assert_eq!(v["error"]["code"], -32039, "{v}");
        assert_eq!(v["error"]["data"]["reason"], "short-lived", "{v}");
    }
    let tokens = sts.stats().await["tokens"].as_u64().unwrap();
    let seconds = start.elapsed().as_secs();
    assert!(
        tokens >= 1 && tokens <= 1 + seconds,
        "{tokens} token requests in {seconds} s"
    );
    // past the floor, a call makes the next token request
    mcp_gateway_tests::eventually_async(
        "a second token request",
        Duration::from_secs(5),
        || async {
            let _ = call("/s", 100, "whoami").send(gw.addr).await;
            sts.stats().await["tokens"].as_u64().unwrap() > tokens
        },
    )
    .await;
    assert!(
        start.elapsed() >= Duration::from_secs(1),
        "fetched again within the floor"
    );
    let _ = std::fs::remove_dir_all(dir);
}
