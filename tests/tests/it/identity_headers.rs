//! Identity headers are the gateway's alone (issue 26), against the Rust mocks: a client's own
//! `x-mcp-principal` and the like, in every spelling, never reach the backend, and the ones the
//! gateway writes from a token's claims are encoded unambiguously (a claim holding CR/LF or
//! another control character is refused, 401 -32023, before the backend sees it).

use mcp_gateway_tests::{Gateway, MockServer, Request};

#[tokio::test]
async fn identity_headers_are_the_gateways_alone_in_every_spelling_and_encoded_unambiguously() {
    use mcp_gateway_tests::auth::{auth_yaml, claims, sign, RESOURCE};
    let backend = MockServer::start("b").await;
    backend.set_capture(true);
    let gw = Gateway::start(&format!(
        "{}pools:\n  p: {{ backends: [{}], identity-headers: {{ principal: x-mcp-principal, subject: x-mcp-subject, claims: {{ groups: x-mcp-groups }} }} }}\n\
         routes:\n  - path: /mcp\n    pool: p\n    mode: stateless\n",
        auth_yaml(RESOURCE),
        backend.addr
    ))
    .await;
    let signed = |sub: &str, groups: serde_json::Value| {
        let mut c = claims(sub, "tools");
        c["groups"] = groups;
        sign(&c, jsonwebtoken::Algorithm::RS256, "rs-1", "rs256.pem")
    };
    let resp = Request::tools_call("/mcp", 1, "whoami")
        .header(
            "Authorization",
            &format!(
                "Bearer {}",
                signed("jösé", serde_json::json!(["a,b", "admin"]))
            ),
        )
        .header("x_mcp_principal", "spoofed")
        .header("X_Mcp_Subject", "spoofed")
        .header("X-MCP-GROUPS", "admin")
        .send(gw.addr)
        .await;
    assert_eq!(resp.status(), 200, "{}", resp.text());
    let seen = backend.requests();
    let head = &seen.last().expect("the backend got the call").head;
    let identity: Vec<(String, String)> = head
        .headers
        .iter()
        .filter(|(k, _)| {
            k.to_ascii_lowercase()
                .replace('_', "-")
                .starts_with("x-mcp-")
        })
        .cloned()
        .collect();
    assert_eq!(
        identity.len(),
        3,
        "one of each, none of the client's: {identity:?}"
    );
    assert_eq!(head.header("x-mcp-groups"), Some("a%2Cb,admin"));
    assert_eq!(head.header("x-mcp-subject"), Some("j%C3%B6s%C3%A9"));
    assert_eq!(
        head.header("x-mcp-principal"),
        Some("https://idp.example.com|j%C3%B6s%C3%A9")
    );
    let before = backend.count();
    for (sub, groups) in [
        ("alice\r\nx-admin: 1", serde_json::json!([])),
        ("alice", serde_json::json!(["ok", "evil\nx-admin: 1"])),
    ] {
        let resp = Request::tools_call("/mcp", 2, "whoami")
            .header("Authorization", &format!("Bearer {}", signed(sub, groups)))
            .send(gw.addr)
            .await;
        assert_eq!(resp.status(), 401, "{}", resp.text());
        let v = resp.json();
        assert_eq!(v["error"]["code"], -32023, "{v}");
        assert_eq!(v["error"]["data"]["reason"], "unrenderable-claim");
        assert_eq!(v["id"], 2);
    }
    assert_eq!(
        backend.count(),
        before,
        "a refused token reached the backend"
    );
}
