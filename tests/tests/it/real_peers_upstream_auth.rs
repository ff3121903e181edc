//! Issue 35, static backend credentials (`pools.NAME.upstream-auth.headers`), against real
//! peers: PyPI `mcp` 2.3.0 (a 2026-07-28 stateless server) and FastMCP 1.30.0 (a legacy
//! session server), each telling the SHA-256 of the headers it receives (`header_digest(name)`:
//! digests, so no secret appears in an answer, or in a log of one). The gateway's
//! secrets reach both, a client can never choose those headers (in any spelling), a rotated
//! secret file takes effect without a restart, and
//! no secret shows in the logs (at debug level), the metrics or `validate`'s output.

use mcp_gateway_tests::auth::sha256_hex;
use mcp_gateway_tests::harness::{unique_temp_path, workspace_bin};
use mcp_gateway_tests::{eventually_async, open_session, Gateway, PythonPeer, Request};
use std::time::Duration;

const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}"#;

/// A 2026-07-28 call of `header(name)`.
fn header_call(path: &str, id: u64, name: &str) -> Request {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"header_digest","arguments":{{"name":"{name}"}},{META}}}}}"#
    );
    Request::post(path, body)
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", "header_digest")
}

/// The same in a legacy session.
fn header_in_session(sid: &str, id: u64, name: &str) -> Request {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"header_digest","arguments":{{"name":"{name}"}}}}}}"#
    );
    Request::post("/mcp", body)
        .header("Mcp-Session-Id", sid)
        .header("MCP-Protocol-Version", "2025-11-25")
}

/// What a backend tells of a header value it received.
fn digest(value: &str) -> String {
    sha256_hex(value.as_bytes())
}

/// What a client trying to choose the backend's credentials sends.
fn spoofed(req: Request) -> Request {
    req.header("Authorization", "Bearer attacker")
        .header("X-Api-Key", "attacker")
        .header("x_api_key", "attacker-underscore")
}

const TOKEN_1: &str = "tok-3b1f0c9e-one";
const TOKEN_2: &str = "tok-77aa41d2-two";
const API_KEY: &str = "key-5e0d8f1a-env";

#[tokio::test]
async fn backends_of_both_eras_get_the_gateways_secrets_never_the_clients_and_a_rotation_takes() {
    let modern = PythonPeer::stateless_v2("m").await;
    let legacy = PythonPeer::legacy_v1("l", 0).await;
    let dir = unique_temp_path("mcpgw-upstream-auth");
    std::fs::create_dir_all(&dir).unwrap();
    let token = dir.join("token");
    std::fs::write(&token, format!("{TOKEN_1}\n")).unwrap();
    let auth = format!(
        "upstream-auth: {{ headers: {{ authorization: {{ file: {}, prefix: \"Bearer \" }}, x-api-key: {{ env: HOSTED_KEY }} }} }}",
        token.display()
    );
    let yaml = format!(
        "pools:\n  m: {{ era: modern, backends: [{}], {auth} }}\n  l: {{ era: legacy, backends: [{}], {auth} }}\n\
         routes:\n  - {{ path: /s, pool: m, mode: stateless, upstream-path: /mcp }}\n  - {{ path: /mcp, pool: l, mode: stateful, upstream-path: /mcp }}\n",
        modern.addr(),
        legacy.addr()
    );
    let config = dir.join("gateway.yaml");
    std::fs::write(&config, &yaml).unwrap();
    let log = dir.join("gateway.log");
    let env = [("HOSTED_KEY", API_KEY), ("RUST_LOG", "debug")];
    let gw = Gateway::start_logging_to(&yaml, &env, &log).await;

    // the 2026-07-28 server: only the gateway's values, whatever the client sent
    let auth_seen = spoofed(header_call("/s", 1, "authorization"))
        .send(gw.addr)
        .await;
    assert_eq!(auth_seen.tool_text(), digest(&format!("Bearer {TOKEN_1}")));
    let key_seen = spoofed(header_call("/s", 2, "x-api-key"))
        .send(gw.addr)
        .await;
    assert_eq!(key_seen.tool_text(), digest(API_KEY));
    let underscore = spoofed(header_call("/s", 3, "x_api_key"))
        .send(gw.addr)
        .await;
    assert_eq!(
        underscore.tool_text(),
        "none",
        "the `_` spelling is dropped too"
    );

    // the legacy session server: in the session the gateway opened for the client
    let sid = open_session(gw.addr).await;
    let in_session = spoofed(header_in_session(&sid, 4, "authorization"))
        .send(gw.addr)
        .await;
    assert_eq!(in_session.tool_text(), digest(&format!("Bearer {TOKEN_1}")));
    let key_in_session = spoofed(header_in_session(&sid, 5, "x-api-key"))
        .send(gw.addr)
        .await;
    assert_eq!(key_in_session.tool_text(), digest(API_KEY));

    // the secret file rotated: the next requests carry the new value, no restart
    std::fs::write(&token, format!("{TOKEN_2}\n")).unwrap();
    eventually_async(
        "the rotated token is sent",
        Duration::from_secs(5),
        || async {
            header_call("/s", 6, "authorization")
                .send(gw.addr)
                .await
                .tool_text()
                == digest(&format!("Bearer {TOKEN_2}"))
        },
    )
    .await;
    let rotated = header_in_session(&sid, 7, "authorization")
        .send(gw.addr)
        .await;
    assert_eq!(rotated.tool_text(), digest(&format!("Bearer {TOKEN_2}")));

    // no secret in the metrics, in the whole run's log (debug: request heads are logged), nor
    // in what `validate` prints
    let (_, metrics) = gw.admin_get("/metrics").await;
    drop(gw);
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(
        logged.contains("Sensitive"),
        "the debug log shows the heads sent upstream"
    );
    for secret in [TOKEN_1, TOKEN_2, API_KEY] {
        assert!(!logged.contains(secret), "a secret in the log");
        assert!(!metrics.contains(secret), "a secret in the metrics");
    }
    let validate = std::process::Command::new(workspace_bin("mcp-gateway"))
        .arg("validate")
        .arg(&config)
        .env("HOSTED_KEY", API_KEY)
        .output()
        .unwrap();
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&validate.stdout),
        String::from_utf8_lossy(&validate.stderr)
    );
    assert!(validate.status.success(), "{printed}");
    for secret in [TOKEN_1, TOKEN_2, API_KEY] {
        assert!(
            !printed.contains(secret),
            "validate printed a secret: {printed}"
        );
    }
    // an unreadable secret: `validate` warns naming the pool, the header and the source (the
    // secret may exist only where the gateway runs), and the gateway does not start
    let missing = std::process::Command::new(workspace_bin("mcp-gateway"))
        .arg("validate")
        .arg(&config)
        .env_remove("HOSTED_KEY")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&missing.stderr);
    assert!(missing.status.success(), "{said}");
    assert!(said.contains("warning:"), "{said}");
    assert!(
        said.contains("pools.l.upstream-auth.headers.x-api-key: environment variable HOSTED_KEY"),
        "{said}"
    );
    let start = tokio::process::Command::new(workspace_bin("mcp-gateway"))
        .arg("--config")
        .arg(&config)
        .env_remove("HOSTED_KEY")
        .kill_on_drop(true)
        .output();
    let start = tokio::time::timeout(Duration::from_secs(20), start)
        .await
        .expect("the gateway refused to start at once")
        .unwrap();
    assert!(!start.status.success(), "started without its secret");
    assert!(String::from_utf8_lossy(&start.stderr).contains("HOSTED_KEY"));
    let _ = std::fs::remove_dir_all(dir);
}
