//! A prefix route (`path-prefix: /servers/tools/` → `upstream-path: /mcp/`) sends each tail to
//! its own server behind one address: `/servers/tools/jira` and `/servers/tools/github` are two
//! tenants, and so are two queries of one tail, or two values of a header the server selects
//! its toolset by (`cache.vary-headers`). The cache never answers one with the other's
//! result, in memory or, with `cache.store: redis`, through Redis on another replica; nor do
//! two replicas whose configs shape answers differently.

use super::request_at;
use mcp_gateway_tests::redis::RedisServer;
use mcp_gateway_tests::wire::{read_body, read_head};
use mcp_gateway_tests::Gateway;
use serde_json::json;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

/// Tenants behind one address: `tools/list` names one tool after the path (and query) the
/// request reached it with, its `X-Toolset` header and its `X-Api-Key` (when it has one),
/// of `scope` for a minute; `resources/read` says the same in its text. It counts the lists and reads
/// it answered.
pub(super) struct Tenants {
    addr: SocketAddr,
    pub(super) asked: Arc<AtomicUsize>,
}

impl Tenants {
    /// Where it listens.
    pub(super) fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub(super) async fn start(scope: &'static str) -> Tenants {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let asked = Arc::new(AtomicUsize::new(0));
        let counted = asked.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let counted = counted.clone();
                tokio::spawn(async move {
                    let (r, mut w) = stream.into_split();
                    let mut r = BufReader::new(r);
                    while let Ok(Some(head)) = read_head(&mut r, true).await {
                        let Ok(body) = read_body(&mut r, &head, true).await else {
                            return;
                        };
                        let msg: serde_json::Value =
                            serde_json::from_slice(&body).unwrap_or_default();
                        if matches!(
                            msg["method"].as_str(),
                            Some("tools/list" | "resources/read")
                        ) {
                            counted.fetch_add(1, Ordering::Relaxed);
                        }
                        let mut tenant =
                            format!("{}|{}", head.path, head.header("x-toolset").unwrap_or("-"));
                        if let Some(key) = head.header("x-api-key") {
                            tenant = format!("{tenant}|{key}");
                        }
                        let result = match msg["method"].as_str() {
                            Some("resources/read") => {
                                json!({"contents": [{"uri": msg["params"]["uri"], "text": tenant}]})
                            }
                            _ => {
                                json!({"tools": [{"name": tenant, "inputSchema": {"type": "object"}}]})
                            }
                        };
                        let mut result = result;
                        result["ttlMs"] = json!(60_000);
                        result["cacheScope"] = json!(scope);
                        let answer = json!({"jsonrpc": "2.0", "id": msg["id"], "result": result})
                            .to_string();
                        let out = format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{answer}",
                            answer.len()
                        );
                        if w.write_all(out.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        Tenants { addr, asked }
    }
}

fn config(tenants: &Tenants, store: &str) -> String {
    format!(
        "{store}cache: {{ vary-headers: [x-toolset]{} }}\npools:\n  p: {{ backends: [{}] }}\nroutes:\n  - {{ path-prefix: /servers/tools/, upstream-path: /mcp/, pool: p }}\n",
        if store.is_empty() { "" } else { ", store: redis" },
        tenants.addr
    )
}

/// What the tenant at `path` (with `toolset`, if any) was answered for `method`: the name the
/// server gave (its tool's, or its resource's text) and how the cache answered.
async fn asked(gw: &Gateway, path: &str, toolset: Option<&str>, method: &str) -> (String, String) {
    asked_with(gw, &[], (path, toolset, method)).await
}

/// [`asked`], with the `extra` headers.
pub(super) async fn asked_with(
    gw: &Gateway,
    extra: &[(&str, &str)],
    (path, toolset, method): (&str, Option<&str>, &str),
) -> (String, String) {
    let params = match method {
        "resources/read" => json!({"uri": "note://both-have-it"}),
        _ => json!({}),
    };
    let mut r = request_at(path, "1", method, params, None);
    for (name, value) in extra {
        r = r.header(name, value);
    }
    if let Some(t) = toolset {
        r = r.header("X-Toolset", t);
    }
    let answer = r.send(gw.addr).await;
    assert_eq!(answer.status(), 200, "{}", answer.text());
    let v = answer.json();
    let name = match method {
        "resources/read" => v["result"]["contents"][0]["text"].clone(),
        _ => v["result"]["tools"][0]["name"].clone(),
    };
    let how = answer.head.header("mcp-gateway-cache").unwrap_or("");
    (name.as_str().unwrap_or("").to_owned(), how.to_owned())
}

/// Each tenant, asked twice (on `one`, then on `two`), gets its own result: a miss first, then
/// a hit of its own.
async fn each_tenant_gets_its_own(one: &Gateway, two: &Gateway, tenants: &Tenants) {
    let cases = [
        ("/servers/tools/github", None, "/mcp/github|-"),
        ("/servers/tools/jira", None, "/mcp/jira|-"),
        ("/servers/tools/jira?org=b", None, "/mcp/jira?org=b|-"),
        ("/servers/tools/jira", Some("admin"), "/mcp/jira|admin"),
    ];
    for method in ["tools/list", "resources/read"] {
        for (path, toolset, own) in cases {
            for (gw, how) in [(one, "miss"), (two, "hit")] {
                let (name, answered) = asked(gw, path, toolset, method).await;
                assert_eq!(name, own, "{method} on {path} {toolset:?}");
                assert_eq!(answered, how, "{method} on {path} {toolset:?}");
            }
        }
    }
    assert_eq!(
        tenants.asked.load(Ordering::Relaxed),
        8,
        "one request per tenant and method"
    );
}

#[tokio::test]
async fn a_prefix_routes_tails_queries_and_vary_headers_never_share_a_result_in_memory() {
    let tenants = Tenants::start("public").await;
    let gw = Gateway::start(&config(&tenants, "")).await;
    each_tenant_gets_its_own(&gw, &gw, &tenants).await;
}

#[tokio::test]
async fn a_prefix_routes_tails_queries_and_vary_headers_never_share_a_result_through_redis() {
    let redis = RedisServer::start().await;
    let tenants = Tenants::start("public").await;
    let sessions = format!(
        "sessions:\n  store: redis\n  redis: {{ urls: [\"{}\"], key-prefix: \"prefixes:\" }}\n{}",
        redis.url(),
        super::signed()
    );
    let one = Gateway::start(&config(&tenants, &sessions)).await;
    let two = Gateway::start(&config(&tenants, &sessions)).await;
    // each tenant's second answer comes from Redis, on the other replica
    each_tenant_gets_its_own(&one, &two, &tenants).await;
}

/// Two replicas on one Redis whose configs differ only in what shapes the answer but not the
/// path (the pool's `host`, the Host header the backend selects its tenant by, as after a
/// reload on one of them): neither serves the other's result; the same config shares it.
#[tokio::test]
async fn replicas_whose_configs_shape_answers_differently_never_share_a_result() {
    let redis = RedisServer::start().await;
    let tenants = Tenants::start("public").await;
    let yaml = |host: &str| {
        format!(
            "sessions:\n  store: redis\n  redis: {{ urls: [\"{}\"], key-prefix: \"shapes:\" }}\ncache: {{ store: redis }}\n{}\
             pools:\n  p: {{ backends: [{}], host: {host} }}\nroutes:\n  - {{ path: /mcp, pool: p }}\n",
            redis.url(),
            super::signed(),
            tenants.addr
        )
    };
    let one = Gateway::start(&yaml("a.example")).await;
    let two = Gateway::start(&yaml("b.example")).await;
    let same = Gateway::start(&yaml("a.example")).await;
    for (gw, how) in [(&one, "miss"), (&two, "miss"), (&same, "hit")] {
        let (_, answered) = asked(gw, "/mcp", None, "tools/list").await;
        assert_eq!(answered, how);
    }
    assert_eq!(tenants.asked.load(Ordering::Relaxed), 2);
}
