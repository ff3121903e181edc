//! What bounds the keys and the time of kept results: `cache.max-ttl-ms` lowers a longer
//! `ttlMs` (2^64-1 included), and the client is served the lowered one; a request with a param
//! its method does not define, or a protocol version the gateway does not know, would be a key
//! of its own each time, so it is never kept.

use super::{config, request, Backend};
use mcp_gateway_tests::Gateway;
use serde_json::json;
use std::time::Duration;

const FOREVER: &str = r#"{"tools":[{"name":"a","inputSchema":{"type":"object"}}],"ttlMs":18446744073709551615,"cacheScope":"public"}"#;

#[tokio::test]
async fn a_ttl_past_the_ceiling_is_kept_and_served_lowered_to_it() {
    let backend = Backend::start(&[("tools/list", FOREVER)], Duration::ZERO).await;
    let ceiling = "cache: { max-ttl-ms: 60000 }\n";
    let gw = Gateway::start(&format!("{ceiling}{}", config(&backend, ""))).await;
    for (id, how) in [("1", "miss"), ("2", "hit")] {
        let r = request(id, "tools/list", json!({}), None)
            .send(gw.addr)
            .await;
        assert_eq!(
            r.head.header("mcp-gateway-cache"),
            Some(how),
            "{}",
            r.text()
        );
        let v = r.json();
        let ttl = v["result"]["ttlMs"].as_u64().unwrap();
        assert!((1..=60_000).contains(&ttl), "served lowered: {v}");
        assert_eq!(v["id"], id.parse::<u64>().unwrap());
        assert_eq!(v["result"]["tools"][0]["name"], "a");
    }
    assert_eq!(backend.count("tools/list"), 1);
}

#[tokio::test]
async fn a_param_the_method_does_not_define_or_a_made_up_version_is_never_kept() {
    let backend = Backend::start(&[("tools/list", super::PUBLIC)], Duration::ZERO).await;
    let gw = Gateway::start(&config(&backend, "")).await;
    for n in 0..3 {
        let junk = json!({ "junk": n });
        let r = request("1", "tools/list", junk, None).send(gw.addr).await;
        assert_eq!(r.status(), 200, "{}", r.text());
        assert_ne!(r.head.header("mcp-gateway-cache"), Some("miss"));
    }
    assert_eq!(
        backend.count("tools/list"),
        3,
        "every junk request went upstream"
    );
    let mut made_up = json!({});
    made_up["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2099-01-01"});
    let body = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{made_up}}}"#);
    for _ in 0..2 {
        let r = mcp_gateway_tests::Request::post("/mcp", body.clone())
            .header("MCP-Protocol-Version", "2099-01-01")
            .header("Mcp-Method", "tools/list")
            .send(gw.addr)
            .await;
        assert_eq!(r.status(), 200, "{}", r.text());
        assert_ne!(r.head.header("mcp-gateway-cache"), Some("miss"));
    }
    assert_eq!(
        backend.count("tools/list"),
        5,
        "a made-up version went upstream"
    );
    // the same list without junk is kept
    for how in ["miss", "hit"] {
        let r = request("1", "tools/list", json!({}), None)
            .send(gw.addr)
            .await;
        assert_eq!(r.head.header("mcp-gateway-cache"), Some(how));
    }
}
