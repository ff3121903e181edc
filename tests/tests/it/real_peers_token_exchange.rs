//! Issue 35, token exchange (`pools.NAME.upstream-auth.token-exchange`, RFC 8693) against real
//! peers: the authorization server of `real_peers_client_credentials.rs` (authlib 1.9.10) with
//! an RFC 8693 grant registered on it (`tests/peers/sts_server.py`: the subject token checked
//! against the test IdP's key, `invalid_target` for an audience it does not serve, an actor
//! token becoming `act`), and backends that check the token they receive and tell its claims:
//! PyPI `mcp` 2.3.0 (2026-07-28) and FastMCP 1.30.0 (sessions).

use crate::real_peers_client_credentials::{claims, secrets_dir, Sts, SECRET_A};
use mcp_gateway_tests::auth::{auth_yaml, fixture, sha256_hex, token, RESOURCE};
use mcp_gateway_tests::{Gateway, PythonPeer, Request};
use std::path::Path;

const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}"#;

fn call(path: &str, id: u64, name: &str) -> Request {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{name}","arguments":{{}},{META}}}}}"#
    );
    Request::post(path, body)
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", name)
}

/// The gateway's `auth`: the test IdP's JWTs for RESOURCE, and the API key `k-one`.
fn auth_with_key(dir: &Path) -> String {
    let keys = dir.join("api-keys.txt");
    std::fs::write(&keys, format!("{} one tools\n", sha256_hex(b"k-one"))).unwrap();
    auth_yaml(RESOURCE).replace(
        "  jwt:",
        &format!("  api-keys: {{ file: {} }}\n  jwt:", keys.display()),
    )
}

/// `token-exchange` at `sts` for `audience`, the gateway's own token as the actor.
pub(crate) fn exchange(sts: &Sts, dir: &Path, audience: &str) -> String {
    format!(
        "upstream-auth: {{ token-exchange: {{ token-url: \"http://127.0.0.1:{}/token\", client-id: gw, client-secret: {{ file: {} }}, audience: {audience}, scope: tools, actor: client-credentials }} }}",
        sts.port(),
        dir.join("secret").display()
    )
}

/// The authorization server with its RFC 8693 grant: subject tokens of the test IdP
/// (`auth::token`), exchanged for the audience `user-mcp`.
pub(crate) async fn sts(dir: &Path) -> Sts {
    let subject_key = fixture("rs256.pub.pem").display().to_string();
    let extra = ["--subject-key", &subject_key, "--audiences", "user-mcp"];
    Sts::start_with(dir, 300, 0, &extra).await
}

/// Two callers with their own JWTs on a token-exchange pool: each call reaches the checking
/// backend with that caller's exchanged token (`sub` the caller, `aud` the pool's audience,
/// `act` the gateway), whatever `Authorization` it sent; a caller's second call hits the cache
/// (no new exchange), also through the reverse era bridge to a FastMCP 1.30.0 backend (each
/// caller's pooled backend session). An API-key caller is refused 403 -32040 (`api-key-caller`); an audience
/// the authorization server does not serve is 403 -32040 `invalid_target` (its own message not
/// passed on), and nothing reaches the backend for either.
#[tokio::test]
async fn each_caller_reaches_the_backend_with_its_own_exchanged_token() {
    let dir = secrets_dir("mcpgw-te-modern");
    let sts = sts(&dir).await;
    let key = sts.public_key();
    let backend = PythonPeer::start(
        "mcp2",
        "stateless_server.py",
        &[
            "--port",
            "0",
            "--name",
            "u",
            "--require-token",
            &key,
            "--audience",
            "user-mcp",
            "--scope",
            "tools",
        ],
    )
    .await;
    // a FastMCP 1.30.0 backend too, for 2026-07-28 calls through the reverse era bridge
    let legacy = PythonPeer::start(
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
            "user-mcp",
        ],
    )
    .await;
    let yaml = format!(
        "{}pools:\n  u: {{ era: modern, backends: [{b}], {} }}\n  w: {{ era: modern, backends: [{b}], {} }}\n  l: {{ era: legacy, backends: [{}], {} }}\n\
         routes:\n  - {{ path: /u, pool: u, mode: stateless, upstream-path: /mcp }}\n  - {{ path: /w, pool: w, mode: stateless, upstream-path: /mcp }}\n  - {{ path: /l, pool: l, mode: stateless, upstream-path: /mcp }}\n",
        auth_with_key(&dir),
        exchange(&sts, &dir, "user-mcp"),
        exchange(&sts, &dir, "wrong-mcp"),
        legacy.addr(),
        exchange(&sts, &dir, "user-mcp"),
        b = backend.addr(),
    );
    let log = dir.join("gateway.log");
    let gw = Gateway::start_logging_to(&yaml, &[("RUST_LOG", "debug")], &log).await;
    let (alice, bob) = (token("alice", "tools"), token("bob", "tools"));
    let as_caller = |t: &str, id: u64| {
        call("/u", id, "token_claims").header("Authorization", &format!("Bearer {t}"))
    };
    let a = claims(&as_caller(&alice, 1).send(gw.addr).await);
    assert_eq!(a["sub"], "alice", "{a}");
    assert_eq!(a["aud"], "user-mcp", "{a}");
    assert_eq!(a["act"]["sub"], "gw", "delegation: {a}");
    let b = claims(&as_caller(&bob, 2).send(gw.addr).await);
    assert_eq!(b["sub"], "bob", "{b}");
    let again = claims(&as_caller(&alice, 3).send(gw.addr).await);
    assert_eq!(again["sub"], "alice");
    let stats = sts.stats().await;
    let subjects: Vec<&str> = stats["exchanges"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["sub"].as_str())
        .collect();
    assert_eq!(
        subjects,
        ["alice", "bob"],
        "one exchange per caller: {stats}"
    );
    // through the reverse bridge: the pooled backend session of each caller is opened, and
    // used, with that caller's exchanged token (the pool's own cache: one exchange each)
    for (t, sub, id) in [(&alice, "alice", 6), (&bob, "bob", 7), (&alice, "alice", 8)] {
        let bridged = call("/l", id, "token_claims")
            .header("Authorization", &format!("Bearer {t}"))
            .send(gw.addr)
            .await;
        assert_eq!(claims(&bridged)["sub"], sub, "{}", bridged.text());
    }
    assert_eq!(sts.stats().await["exchanges"].as_array().unwrap().len(), 4);
    let hits = "mcpgw_upstream_tokens_total{event=\"hit\",pool=\"u\"}";
    assert!(gw.metric(hits).await >= 1.0);

    let guard = |addr: String| async move {
        Request::bare("GET", "/guard/stats")
            .send(addr.parse().unwrap())
            .await
            .json()
    };
    let before = guard(backend.addr()).await;
    let keyed = call("/u", 4, "whoami")
        .header("X-Api-Key", "k-one")
        .send(gw.addr)
        .await;
    assert_eq!(keyed.status(), 403, "{}", keyed.text());
    let v = keyed.json();
    assert_eq!(v["id"], 4, "{v}");
    assert_eq!(v["error"]["code"], -32040, "{v}");
    assert_eq!(v["error"]["data"]["reason"], "api-key-caller", "{v}");
    let wrong = call("/w", 5, "whoami")
        .header("Authorization", &format!("Bearer {alice}"))
        .send(gw.addr)
        .await;
    assert_eq!(wrong.status(), 403, "{}", wrong.text());
    let v = wrong.json();
    assert_eq!(v["error"]["code"], -32040, "{v}");
    assert_eq!(v["error"]["data"]["reason"], "invalid_target", "{v}");
    assert!(
        !v.to_string().contains("no tokens for"),
        "the server's own message: {v}"
    );
    assert_eq!(
        before,
        guard(backend.addr()).await,
        "nothing reached the backend"
    );

    drop(gw);
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(!logged.contains(SECRET_A), "the client secret in the log");
    assert!(!logged.contains("eyJ"), "a token in the log");
    let _ = std::fs::remove_dir_all(dir);
}

/// A legacy session of a caller on two FastMCP 1.30.0 pods that check tokens: its backend
/// session is opened with the caller's exchanged token; SIGKILL of the pod holding it, and the
/// next call is answered from the other pod, re-initialized there with the same caller's token.
#[tokio::test]
async fn a_session_reinitialized_after_a_kill_keeps_its_callers_exchanged_token() {
    let dir = secrets_dir("mcpgw-te-legacy");
    let sts = sts(&dir).await;
    let key = sts.public_key();
    let pod = |name: &'static str| {
        let key = key.clone();
        async move {
            PythonPeer::start(
                "mcp1",
                "legacy_server.py",
                &[
                    "--port",
                    "0",
                    "--name",
                    name,
                    "--require-token",
                    &key,
                    "--audience",
                    "user-mcp",
                ],
            )
            .await
        }
    };
    let mut pods = [pod("p1").await, pod("p2").await];
    let yaml = format!(
        "{}pools:\n  l: {{ era: legacy, backends: [{}, {}], {} }}\nroutes:\n  - {{ path: /mcp, pool: l, mode: stateful, upstream-path: /mcp }}\n",
        auth_yaml(RESOURCE),
        pods[0].addr(),
        pods[1].addr(),
        exchange(&sts, &dir, "user-mcp"),
    );
    let gw = Gateway::start(&yaml).await;
    let carol = token("carol", "tools");
    let bearer = format!("Bearer {carol}");
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let opened = Request::post("/mcp", init)
        .header("Authorization", &bearer)
        .send(gw.addr)
        .await;
    assert_eq!(opened.status(), 200, "{}", opened.text());
    let sid = opened.head.header("mcp-session-id").unwrap().to_owned();
    let in_session = |id: u64, tool: &str| {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{{}}}}}}"#
        );
        Request::post("/mcp", body)
            .header("Mcp-Session-Id", &sid)
            .header("MCP-Protocol-Version", "2025-11-25")
            .header("Authorization", &bearer)
    };
    let first = claims(&in_session(1, "token_claims").send(gw.addr).await);
    assert_eq!(first["sub"], "carol", "{first}");
    let holder = in_session(2, "whoami").send(gw.addr).await.tool_text();
    let index = if holder == "p1" { 0 } else { 1 };
    pods[index].kill().await;
    let after = in_session(3, "token_claims").send(gw.addr).await;
    assert_eq!(claims(&after)["sub"], "carol", "{}", after.text());
    let moved = in_session(4, "whoami").send(gw.addr).await.tool_text();
    assert_ne!(moved, holder, "answered from the other pod");
    let _ = std::fs::remove_dir_all(dir);
}
