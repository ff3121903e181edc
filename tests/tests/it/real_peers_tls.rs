//! TLS on both sides of the gateway, with the committed test CA (`tests/fixtures/tls/`): the
//! TypeScript SDK client over https to the listener (`listen-tls`), a 2.3.0 Python server behind
//! TLS reached with the pool's CA and SNI (`pools.*.tls`), and a backend whose certificate does
//! not chain to the pool's CA (or to the system roots) refused. Needs `scripts/setup-peers`.

use mcp_gateway_tests::auth::repl_ts_with_bearer;
use mcp_gateway_tests::harness::workspace;
use mcp_gateway_tests::{Gateway, PythonPeer, Request};
use serde_json::json;
use std::path::PathBuf;

fn tls(name: &str) -> PathBuf {
    workspace().join("tests/fixtures/tls").join(name)
}

/// A 2.3.0 stateless server serving https with the test server certificate.
async fn tls_backend(name: &str) -> PythonPeer {
    let (cert, key) = (tls("server.crt"), tls("server.key"));
    PythonPeer::start(
        "mcp2",
        "stateless_server.py",
        &[
            "--port",
            "0",
            "--name",
            name,
            "--tls-cert",
            &cert.to_string_lossy(),
            "--tls-key",
            &key.to_string_lossy(),
        ],
    )
    .await
}

#[tokio::test]
async fn a_real_client_reaches_the_gateway_over_https() {
    let pod = PythonPeer::sessions_v2("py-sessions").await;
    let gw = Gateway::start(&format!(
        "listen-tls: {{ cert: {}, key: {} }}\npools:\n  p: {{ backends: [{}] }}\nroutes:\n  - {{ path: /mcp, pool: p, mode: stateful }}\n",
        tls("server.crt").display(),
        tls("server.key").display(),
        pod.addr()
    ))
    .await;
    let url = format!("https://localhost:{}/mcp", gw.addr.port());
    let mut client = repl_ts_with_bearer(&url, "", Some(&tls("ca.crt")))
        .await
        .unwrap_or_else(|hello| panic!("{hello}"));
    assert_eq!(client.call_text("whoami", json!({})).await, "py-sessions");
    assert!(client.close().await);
}

#[tokio::test]
async fn a_backend_behind_tls_is_reached_with_the_pools_ca_and_sni() {
    let pod = tls_backend("py-tls").await;
    let gw = Gateway::start(&format!(
        "pools:\n  p: {{ backends: [{}], tls: {{ ca: {}, sni: backend.internal }} }}\nroutes:\n  - {{ path: /mcp, pool: p }}\n",
        pod.addr(),
        tls("ca.crt").display(),
    ))
    .await;
    let resp = Request::tools_call("/mcp", 1, "whoami").send(gw.addr).await;
    assert_eq!(
        resp.status(),
        200,
        "{}",
        String::from_utf8_lossy(&resp.body)
    );
    assert_eq!(resp.tool_text(), "py-tls");
}

#[tokio::test]
async fn a_backend_certificate_from_another_ca_is_refused() {
    let pod = tls_backend("py-tls").await;
    for tls_section in [
        format!(
            "{{ ca: {}, sni: backend.internal }}",
            tls("wrong-ca.crt").display()
        ),
        // No CA given: the system roots, which do not know the test CA.
        "{ sni: backend.internal }".to_owned(),
    ] {
        let gw = Gateway::start(&format!(
            "pools:\n  p: {{ backends: [{}], retries: 0, tls: {tls_section} }}\nroutes:\n  - {{ path: /mcp, pool: p }}\n",
            pod.addr(),
        ))
        .await;
        let resp = Request::tools_call("/mcp", 1, "whoami").send(gw.addr).await;
        assert_eq!(
            resp.status(),
            503,
            "{tls_section}: {}",
            String::from_utf8_lossy(&resp.body)
        );
        assert_eq!(resp.json()["error"]["code"], -32011, "{tls_section}");
    }
}

/// The serial number of the certificate the listener at `port` serves, and whether it verifies
/// against the test CA (Node's TLS client).
async fn served_certificate(port: u16) -> serde_json::Value {
    let script = r#"
const tls = require("tls"), fs = require("fs");
const [port, ca] = process.argv.slice(1);
const s = tls.connect({ host: "127.0.0.1", port: Number(port), servername: "localhost", ca: fs.readFileSync(ca) }, () => {
  console.log(JSON.stringify({ serial: s.getPeerCertificate().serialNumber, authorized: s.authorized }));
  s.end();
});
s.on("error", (e) => console.log(JSON.stringify({ error: String(e) })));
"#;
    let out = tokio::process::Command::new(mcp_gateway_tests::harness::node())
        .args([
            "-e",
            script,
            &port.to_string(),
            &tls("ca.crt").to_string_lossy(),
        ])
        .output()
        .await
        .expect("node");
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("node printed: {}", String::from_utf8_lossy(&out.stdout)))
}

#[tokio::test]
async fn a_renewed_listener_certificate_is_served_without_a_restart() {
    let dir = mcp_gateway_tests::harness::unique_temp_path("mcpgw-tls");
    std::fs::create_dir_all(&dir).unwrap();
    let (cert, key) = (dir.join("gw.crt"), dir.join("gw.key"));
    std::fs::copy(tls("server.crt"), &cert).unwrap();
    std::fs::copy(tls("server.key"), &key).unwrap();
    let pod = PythonPeer::stateless_v2("py").await;
    let gw = Gateway::start(&format!(
        "listen-tls: {{ cert: {}, key: {} }}\npools:\n  p: {{ backends: [{}] }}\nroutes:\n  - {{ path: /mcp, pool: p }}\n",
        cert.display(),
        key.display(),
        pod.addr()
    ))
    .await;
    let first = served_certificate(gw.addr.port()).await;
    assert_eq!(first["authorized"], true, "{first}");
    // Renewal: the key first, then the certificate (as cert-manager and certbot write them).
    std::fs::copy(tls("server2.key"), &key).unwrap();
    std::fs::copy(tls("server2.crt"), &cert).unwrap();
    let port = gw.addr.port();
    let before = first["serial"].clone();
    mcp_gateway_tests::eventually_async(
        "the renewed certificate",
        std::time::Duration::from_secs(10),
        || {
            let before = before.clone();
            async move {
                let now = served_certificate(port).await;
                now["authorized"] == true && now["serial"] != before
            }
        },
    )
    .await;
    std::fs::remove_dir_all(&dir).ok();
}
