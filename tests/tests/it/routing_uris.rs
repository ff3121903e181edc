//! Issue 26: routing rules read the resource URI the backend will execute, as authorization
//! rules do (one set of forms, `auth::resource_uri`). A rule sending `admin://*` reads to the
//! admin pool takes `ADMIN://secret`, `" admin://secret"` and `"\tadmin://secret"` too (the
//! spellings pydantic's `AnyUrl` and `new URL` turn into `admin://secret`), from the headers
//! (`check-headers` on: they say what the body says) and from the body (`check-headers` off).

use mcp_gateway_tests::client::META;
use mcp_gateway_tests::{Gateway, MockServer, Request};
use serde_json::json;

fn yaml(public: &MockServer, admin: &MockServer) -> String {
    let rules = "    rules:\n      - { match: { method: \"resources/*\", name: \"admin://*\" }, pool: admin }\n";
    format!(
        "pools:\n  public: {{ backends: [{}] }}\n  admin: {{ backends: [{}] }}\nroutes:\n  - path: /mcp\n    mode: stateless\n    pool: public\n{rules}  - path: /body\n    mode: stateless\n    pool: public\n    check-headers: false\n{rules}",
        public.addr, admin.addr
    )
}

fn read(path: &str, id: u64, uri: &str) -> Request {
    let meta: serde_json::Value = serde_json::from_str(&format!("{{{META}}}")).unwrap();
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "resources/read",
        "params": {"uri": uri, "_meta": meta["_meta"]}});
    Request::post(path, body.to_string())
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "resources/read")
        // what an HTTP stack sends: a header value has no surrounding whitespace or tabs
        .header("Mcp-Name", uri.trim())
}

#[tokio::test]
async fn resource_uris_in_any_spelling_route_like_the_uri_the_backend_reads() {
    let public = MockServer::start("public").await;
    let admin = MockServer::start("admin").await;
    let gw = Gateway::start(&yaml(&public, &admin)).await;
    let mut id = 0;
    let mut served_by = |path: &'static str, uri: &'static str| {
        id += 1;
        let req = read(path, id, uri);
        let addr = gw.addr;
        async move {
            let resp = req.send(addr).await;
            assert_eq!(resp.status(), 200, "{path} {uri:?}: {}", resp.text());
            resp.tool_text()
        }
    };
    // headers and body agree: the fast path routes by the header
    for uri in [
        "admin://secret",
        "ADMIN://secret",
        "aDmIn://users/42",
        "admin://users/%34%32",
    ] {
        assert_eq!(served_by("/mcp", uri).await, "admin", "/mcp {uri:?}");
    }
    assert_eq!(served_by("/mcp", "public://info").await, "public");
    // check-headers off: the body's URI decides
    for uri in [
        "admin://secret",
        "ADMIN://secret",
        " admin://secret",
        "\tadmin://secret",
    ] {
        assert_eq!(served_by("/body", uri).await, "admin", "/body {uri:?}");
    }
    assert_eq!(served_by("/body", " public://info").await, "public");
    assert_eq!(admin.count_method("resources/read"), 8);
    assert_eq!(public.count_method("resources/read"), 2);
}
