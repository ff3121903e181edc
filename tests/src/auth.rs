//! Test support for the gateway's `auth`: tokens signed with the committed test keys
//! (`tests/fixtures/auth/`), the `auth` config section that trusts them, and the real SDK
//! clients started with a bearer token (`MCPGW_BEARER`, read by the REPL clients).

use crate::harness::{node, python, workspace};
use crate::ReplClient;
use jsonwebtoken::{encode, Algorithm, EncodingKey, Header};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};
use tokio::process::Command;

/// The issuer the test tokens name.
pub const ISSUER: &str = "https://idp.example.com";
/// The resource (and audience) of the gateway in the auth tests.
pub const RESOURCE: &str = "https://gw.example.com/mcp";

/// A file of `tests/fixtures/auth/`.
pub fn fixture(name: &str) -> PathBuf {
    workspace().join("tests/fixtures/auth").join(name)
}

/// Seconds since the epoch.
pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Valid claims for `sub` with `scope` (space separated), expiring in 10 minutes.
pub fn claims(sub: &str, scope: &str) -> Value {
    json!({"iss": ISSUER, "aud": RESOURCE, "sub": sub, "exp": now() + 600, "scope": scope})
}

/// `claims` signed with `alg` under `kid` by the key in fixture `pem` (for HS256: the file's
/// bytes as the secret).
pub fn sign(claims: &Value, alg: Algorithm, kid: &str, pem: &str) -> String {
    let mut header = Header::new(alg);
    header.kid = Some(kid.into());
    let bytes = std::fs::read(fixture(pem)).expect("fixture key");
    let key = match alg {
        Algorithm::ES256 => EncodingKey::from_ec_pem(&bytes).expect("EC key"),
        Algorithm::HS256 => EncodingKey::from_secret(&bytes).expect("secret"),
        _ => EncodingKey::from_rsa_pem(&bytes).expect("RSA key"),
    };
    encode(&header, claims, &key).expect("sign")
}

/// A valid RS256 token of `sub` with `scope`.
pub fn token(sub: &str, scope: &str) -> String {
    sign(&claims(sub, scope), Algorithm::RS256, "rs-1", "rs256.pem")
}

/// A valid ES256 token of `sub` with `scope`.
pub fn es256_token(sub: &str, scope: &str) -> String {
    sign(&claims(sub, scope), Algorithm::ES256, "es-1", "es256.pem")
}

/// The `auth` section trusting the test keys (JWKS file), for `resource`.
pub fn auth_yaml(resource: &str) -> String {
    format!(
        "auth:\n  resource: {resource}\n  authorization-servers: [{ISSUER}]\n  scopes-supported: [tools, admin]\n  \
         jwt: {{ issuer: {ISSUER}, audiences: [{resource}], jwks: {{ file: {} }} }}\n",
        fixture("jwks.json").display()
    )
}

/// The Python REPL client (`venv`: mcp1 or mcp2) sending `Authorization: Bearer <token>`.
pub async fn repl_with_bearer(
    venv: &str,
    url: &str,
    mode: Option<&str>,
    token: &str,
) -> Result<ReplClient, Value> {
    let mut cmd = Command::new(python(venv));
    cmd.arg(workspace().join("tests/peers/repl_client.py"))
        .args(["--url", url])
        .env("MCPGW_BEARER", token);
    if let Some(m) = mode {
        cmd.args(["--mode", m]);
    }
    ReplClient::spawn(cmd).await
}

/// The TypeScript SDK REPL client sending `Authorization: Bearer <token>` (none when empty),
/// with `extra_ca` trusted (for https listeners).
pub async fn repl_ts_with_bearer(
    url: &str,
    token: &str,
    extra_ca: Option<&std::path::Path>,
) -> Result<ReplClient, Value> {
    let mut cmd = Command::new(node());
    cmd.arg(workspace().join("tests/peers/node/repl_client.mjs"))
        .args(["--url", url]);
    if !token.is_empty() {
        cmd.env("MCPGW_BEARER", token);
    }
    if let Some(ca) = extra_ca {
        cmd.env("NODE_EXTRA_CA_CERTS", ca);
    }
    ReplClient::spawn(cmd).await
}

/// Runs `tests/peers/oauth_discovery.py` (the 2.3.0 SDK's discovery helpers) against `url`.
pub async fn oauth_discovery(url: &str) -> Value {
    let out = Command::new(python("mcp2"))
        .arg(workspace().join("tests/peers/oauth_discovery.py"))
        .args(["--url", url])
        .kill_on_drop(true)
        .output()
        .await
        .expect("run oauth_discovery.py");
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(stdout.lines().last().unwrap_or("")).unwrap_or_else(|_| {
        panic!(
            "oauth_discovery.py printed no JSON; stdout: {stdout}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// SHA-256 in hex via the system's `sha256sum` (the tests crate carries no hash crate).
pub fn sha256_hex(data: &[u8]) -> String {
    use std::io::Write;
    let mut child = std::process::Command::new("sha256sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("sha256sum");
    child.stdin.take().unwrap().write_all(data).unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned()
}
