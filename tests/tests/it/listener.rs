//! The listener's guards and route/backend mismatches, against Rust mocks: DNS-rebinding
//! protection (`allowed-hosts`, `allowed-origins`) and a legacy backend behind a stateless route.

use mcp_gateway_tests::{eventually, Gateway, MockServer, Request};
use std::time::Duration;

const INIT: &str = r#"{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

fn config(backend: &MockServer, mode: &str, listener: &str) -> String {
    format!(
        "{listener}pools:\n  p: {{ backends: [{}] }}\nroutes:\n  - path: /mcp\n    mode: {mode}\n    pool: p\n",
        backend.addr
    )
}

#[tokio::test]
async fn foreign_hosts_and_origins_are_refused_before_reaching_a_backend() {
    let a = MockServer::legacy("a", 0, "2025-11-25").await;
    let guard = "allowed-hosts: [\"127.0.0.1:*\", \"localhost:*\"]\nallowed-origins: [\"http://localhost:*\"]\n";
    let gw = Gateway::start(&config(&a, "stateful", guard)).await;

    let evil_host = Request::post("/mcp", INIT)
        .header("Host", "evil.example.com")
        .send(gw.addr)
        .await;
    assert_eq!(evil_host.status(), 421);
    let body = evil_host.json();
    assert_eq!(body["id"], 7, "the answer carries the request's id");
    assert_eq!(body["error"]["code"], -32009);
    assert_eq!(body["error"]["data"]["host"], "evil.example.com");

    let evil_origin = Request::post("/mcp", INIT)
        .header("Origin", "http://evil.example.com")
        .send(gw.addr)
        .await;
    assert_eq!(evil_origin.status(), 403);
    assert_eq!(evil_origin.json()["error"]["code"], -32008);
    assert_eq!(a.sessions().initializes(), 0, "nothing reached the backend");

    for (host, origin) in [
        ("localhost:8080", Some("http://localhost:5173")),
        ("127.0.0.1", None),
    ] {
        let mut req = Request::post("/mcp", INIT).header("Host", host);
        if let Some(o) = origin {
            req = req.header("Origin", o);
        }
        let ok = req.send(gw.addr).await;
        assert_eq!(ok.status(), 200, "{host}: {:?}", ok.json());
        assert!(ok.head.header("mcp-session-id").is_some());
    }
}

#[tokio::test]
async fn a_legacy_backend_behind_a_stateless_route_gets_a_json_rpc_error_and_its_session_closed() {
    let a = MockServer::legacy("a", 0, "2025-11-25").await;
    let gw = Gateway::start(&config(&a, "stateless", "")).await;
    // Both stateless paths: pingora's pipeline (no body inspection) and the gateway-driven one
    // (a deadline makes the gateway forward the request itself).
    for (i, deadline) in [false, true].into_iter().enumerate() {
        let gw_deadline;
        let addr = if deadline {
            gw_deadline = Gateway::start(
                &config(&a, "stateless", "")
                    .replace("pool: p\n", "pool: p\n    limits: { timeout-ms: 5000 }\n"),
            )
            .await;
            gw_deadline.addr
        } else {
            gw.addr
        };
        let resp = Request::post("/mcp", INIT).send(addr).await;
        assert_eq!(resp.status(), 200);
        assert_eq!(
            resp.head.header("mcp-session-id"),
            None,
            "no backend id leaks"
        );
        let body = resp.json();
        assert_eq!(body["id"], 7);
        assert_eq!(body["error"]["code"], -32007, "{body}");
        assert_eq!(body["error"]["data"]["kind"], "session-required");
        assert_eq!(body["error"]["data"]["routeMode"], "stateless");
        eventually(
            "backend session closed again",
            Duration::from_secs(5),
            || a.sessions().live() == 0,
        )
        .await;
        assert_eq!(a.sessions().initializes(), i + 1);
    }
}
