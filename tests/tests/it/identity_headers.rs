//! Hostile clients, round 3 (issue 26), against the Rust mocks: capture never records a secret
//! a body carried (batches, serde's error text, elicitation answers, completion values); a
//! JWKS URL that never answers costs a token at most `fetch-timeout-s` (503 -32025).

use mcp_gateway_tests::harness::unique_temp_path;
use mcp_gateway_tests::{assert_eventually, open_session, Gateway, MockServer, Request};
use std::time::{Duration, Instant};

async fn post_in(gw: &Gateway, sid: Option<&str>, body: &str) -> mcp_gateway_tests::Response {
    let mut req = Request::post("/mcp", body.to_owned());
    if let Some(sid) = sid {
        req = req
            .header("Mcp-Session-Id", sid)
            .header("MCP-Protocol-Version", "2025-11-25");
    }
    req.send(gw.addr).await
}

#[tokio::test]
async fn capture_redacts_batches_serde_errors_elicitation_answers_and_completions_by_default() {
    let backend = MockServer::legacy("b", 0, "2025-11-25").await;
    let file = unique_temp_path("mcpgw-capture3").with_extension("jsonl");
    let gw = Gateway::start(&format!(
        "pools: {{ p: {{ backends: [{}] }} }}\nroutes: [ {{ path: /mcp, pool: p, mode: auto, capture: {{ file: {} }} }} ]\n",
        backend.addr,
        file.display()
    ))
    .await;
    let batch = r#"[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"login","arguments":{"pw":"hunter2-batch"}}}]"#;
    let resp = post_in(&gw, None, batch).await;
    assert_eq!(resp.status(), 400, "{}", resp.text());
    assert_eq!(resp.json()["error"]["code"], -32600);
    let typed = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":"hunter2-params"}"#;
    let resp = post_in(&gw, None, typed).await;
    assert_eq!(resp.status(), 400, "{}", resp.text());
    assert_eq!(resp.json()["error"]["code"], -32600);
    assert!(
        !resp.text().contains("hunter2"),
        "the answer quotes the body: {}",
        resp.text()
    );
    let sid = open_session(gw.addr).await;
    let elicited = r#"{"jsonrpc":"2.0","id":"srv-1","result":{"action":"accept","content":{"pin":"hunter2-elicit"}}}"#;
    post_in(&gw, Some(&sid), elicited).await;
    let complete = r#"{"jsonrpc":"2.0","id":3,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"city","value":"hunter2-complete"},"context":{"arguments":{"country":"hunter2-context"}}}}"#;
    post_in(&gw, Some(&sid), complete).await;
    let lines = || std::fs::read_to_string(&file).unwrap_or_default();
    assert_eventually!(
        Duration::from_secs(10),
        lines().contains("completion/complete") && lines().lines().count() >= 5,
        "every request is recorded in {}",
        file.display()
    );
    let text = lines();
    assert!(!text.contains("hunter2"), "a secret in the capture: {text}");
    assert!(text.contains("[redacted]"), "{text}");
}

#[tokio::test]
async fn a_jwks_url_that_never_answers_is_a_503_after_the_fetch_timeout() {
    use mcp_gateway_tests::auth::{token, ISSUER, RESOURCE};
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

#[tokio::test]
async fn a_closed_sessionless_get_frees_its_stream_slot_and_upstream_connection_at_once() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    // A backend that answers every GET with an SSE stream on which it never writes, and counts
    // the connections the gateway closes.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let closed = Arc::new(AtomicUsize::new(0));
    let counter = closed.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let counter = counter.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let _ = s.read(&mut buf).await;
                let _ = s
                    .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
                    .await;
                while let Ok(n) = s.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                }
                counter.fetch_add(1, Ordering::SeqCst);
            });
        }
    });
    let gw = Gateway::start(&format!(
        "limits: {{ max-streams: 2 }}\npools: {{ p: {{ backends: [{addr}] }} }}\nroutes: [ {{ path: /mcp, pool: p, mode: auto }} ]\n"
    ))
    .await;
    let get = format!(
        "GET /mcp HTTP/1.1\r\nHost: {}\r\nAccept: text/event-stream\r\n\r\n",
        gw.addr
    );
    for i in 0..4 {
        let mut s = tokio::net::TcpStream::connect(gw.addr).await.unwrap();
        s.write_all(get.as_bytes()).await.unwrap();
        let mut buf = vec![0u8; 4096];
        let n = tokio::time::timeout(Duration::from_secs(3), s.read(&mut buf))
            .await
            .unwrap_or_else(|_| panic!("GET {i}: no answer head"))
            .unwrap();
        let head = String::from_utf8_lossy(&buf[..n]);
        assert!(
            head.starts_with("HTTP/1.1 200"),
            "GET {i}: a slot was still held: {head}"
        );
        drop(s);
        let want = i + 1;
        assert_eventually!(
            Duration::from_secs(3),
            closed.load(Ordering::SeqCst) >= want,
            "GET {i}: the upstream stream of a client that left is closed"
        );
    }
}
