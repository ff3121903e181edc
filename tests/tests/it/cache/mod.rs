//! Issue 50: the response cache of cacheable 2026-07-28 results, against a raw backend that
//! counts what reaches it and answers each method with a result the test gives (its `ttlMs`
//! and `cacheScope` as a server would set them). The rules: a `public` result is shared by
//! every caller, a `private` one only within one authorization context (a new token is a new
//! context, no credential no private cache); errors, `input_required`, `ttlMs: 0` and the
//! answers to multi round-trip retries are never kept; a kept result is served with the
//! client's id and `ttlMs` lowered by its age; concurrent misses make one upstream request; a
//! route with `cache: off` and a reload drop the cache's answers.

mod auto_route;
mod bounds;
mod changes;
mod changes_scoped;
mod contexts;
mod merged;
mod prefix_routes;
mod real_peers;
mod replicas;
mod shared_tier;
mod single_flight;

use mcp_gateway_tests::wire::{read_body, read_head};
use mcp_gateway_tests::{Gateway, Request};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

const META: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"}}"#;

/// What reached a backend: each request's method and `Authorization`.
type Seen = Arc<Mutex<Vec<(String, Option<String>)>>>;

/// A backend answering each method with a fixed result (one that starts with `SSE:`: the
/// event stream after it), counting the requests of each and noting each request's
/// `Authorization`; `delay` before every answer.
struct Backend {
    addr: SocketAddr,
    seen: Seen,
    /// Set by [`Backend::stop`]: connections it holds close at their next request.
    down: Arc<std::sync::atomic::AtomicBool>,
    accepting: tokio::task::JoinHandle<()>,
}

impl Backend {
    async fn start(results: &[(&str, &str)], delay: Duration) -> Backend {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let results: Arc<HashMap<String, String>> = Arc::new(
            results
                .iter()
                .map(|(m, r)| (m.to_string(), r.to_string()))
                .collect(),
        );
        let seen: Seen = Default::default();
        let noted = seen.clone();
        let down = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let gone = down.clone();
        let accepting = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (results, noted, gone) = (results.clone(), noted.clone(), gone.clone());
                tokio::spawn(async move {
                    let (r, mut w) = stream.into_split();
                    let mut r = BufReader::new(r);
                    while let Ok(Some(head)) = read_head(&mut r, true).await {
                        let Ok(body) = read_body(&mut r, &head, true).await else {
                            return;
                        };
                        if gone.load(std::sync::atomic::Ordering::Relaxed) {
                            return;
                        }
                        let msg: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                        let method = msg["method"].as_str().unwrap_or("").to_owned();
                        let auth = head.header("authorization").map(str::to_owned);
                        noted.lock().unwrap().push((method.clone(), auth));
                        tokio::time::sleep(delay).await;
                        let result = results.get(&method).cloned().unwrap_or_else(|| {
                            r#"{"error":{"code":-32601,"message":"no"}}"#.to_owned()
                        });
                        let id = msg["id"].to_string();
                        if let Some(events) = result.strip_prefix("SSE:") {
                            let out = format!(
                                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n{events}",
                                events.len()
                            );
                            if w.write_all(out.as_bytes()).await.is_err() {
                                return;
                            }
                            continue;
                        }
                        let answer = if result.starts_with(r#"{"error""#) {
                            format!(r#"{{"jsonrpc":"2.0","id":{id},{}"#, &result[1..])
                        } else {
                            format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#)
                        };
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
        Backend {
            addr,
            seen,
            down,
            accepting,
        }
    }

    /// Stops it: no more connections (refused), and those it holds close.
    fn stop(&self) {
        self.down.store(true, std::sync::atomic::Ordering::Relaxed);
        self.accepting.abort();
    }

    /// How many requests of `method` reached it.
    fn count(&self, method: &str) -> usize {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|(m, _)| m == method)
            .count()
    }
}

/// `bridge.request-state-key-file`, one key for every replica of the tests: the shared tier's
/// entries are signed with it.
fn signed() -> String {
    static KEY: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    let path = KEY.get_or_init(|| {
        let path = mcp_gateway_tests::harness::unique_temp_path("mcpgw-cache-key");
        std::fs::write(&path, "cd".repeat(32)).unwrap();
        path
    });
    format!("bridge: {{ request-state-key-file: {} }}\n", path.display())
}

fn config(backend: &Backend, route_extra: &str) -> String {
    format!(
        "pools:\n  p: {{ backends: [{}] }}\nroutes:\n  - {{ path: /mcp, pool: p{route_extra} }}\n",
        backend.addr
    )
}

/// A 2026-07-28 request for `method` with `params`, from a caller with `token` (if any).
fn request(id: &str, method: &str, params: Value, token: Option<&str>) -> Request {
    request_at("/mcp", id, method, params, token)
}

/// [`request`] on the route at `path`.
fn request_at(
    path: &str,
    id: &str,
    method: &str,
    mut params: Value,
    token: Option<&str>,
) -> Request {
    params["_meta"] = serde_json::from_str(META).unwrap();
    let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#);
    let mut r = Request::post(path, body)
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", method);
    if let Some(name) = params["uri"].as_str().or(params["name"].as_str()) {
        r = r.header("Mcp-Name", name);
    }
    match token {
        Some(t) => r.header("Authorization", &format!("Bearer {t}")),
        None => r,
    }
}

const PUBLIC: &str = r#"{"tools":[{"name":"a","inputSchema":{"type":"object"}}],"ttlMs":60000,"cacheScope":"public"}"#;
const PRIVATE: &str = r#"{"prompts":[],"ttlMs":60000,"cacheScope":"private"}"#;

#[tokio::test]
async fn a_public_result_is_answered_at_the_gateway_with_the_clients_id_and_its_age_off_the_ttl() {
    let backend = Backend::start(&[("tools/list", PUBLIC)], Duration::ZERO).await;
    let gw = Gateway::start(&config(&backend, "")).await;
    let first = request("1", "tools/list", json!({}), None)
        .send(gw.addr)
        .await;
    assert_eq!(first.status(), 200, "{}", first.text());
    assert_eq!(first.head.header("mcp-gateway-cache"), Some("miss"));
    assert_eq!(first.json()["result"]["ttlMs"], 60000);
    tokio::time::sleep(Duration::from_millis(300)).await;
    // another caller, another id, the params in another order: the same result
    let second = request(r#""two""#, "tools/list", json!({}), Some("someone"))
        .send(gw.addr)
        .await;
    assert_eq!(second.head.header("mcp-gateway-cache"), Some("hit"));
    let answer = second.json();
    assert_eq!(answer["id"], "two");
    let ttl = answer["result"]["ttlMs"].as_u64().unwrap();
    assert!(
        (50_000..=59_700).contains(&ttl),
        "ttl lowered by the age: {ttl}"
    );
    assert_eq!(answer["result"]["tools"][0]["name"], "a");
    assert_eq!(backend.count("tools/list"), 1, "the backend was asked once");
    let hits = gw
        .metric("mcpgw_cache_total{method=\"tools/list\",result=\"hit\",route=\"/mcp\"}")
        .await;
    assert_eq!(hits, 1.0);
}

#[tokio::test]
async fn a_private_result_is_kept_per_token_and_never_for_a_caller_without_one() {
    let backend = Backend::start(&[("prompts/list", PRIVATE)], Duration::ZERO).await;
    // (a route without `auth`: the backend tells its users apart by `Authorization`)
    let contexts = "cache: { context-headers: [authorization] }\n";
    let gw = Gateway::start(&format!("{contexts}{}", config(&backend, ""))).await;
    let addr = gw.addr;
    let list = |id: u64, token: Option<&'static str>| async move {
        let r = request(&id.to_string(), "prompts/list", json!({}), token);
        r.send(addr).await
    };
    assert_eq!(
        list(1, Some("alice"))
            .await
            .head
            .header("mcp-gateway-cache"),
        Some("miss")
    );
    assert_eq!(
        list(2, Some("alice"))
            .await
            .head
            .header("mcp-gateway-cache"),
        Some("hit")
    );
    // bob's token is another context; alice's renewed token too
    assert_eq!(
        list(3, Some("bob")).await.head.header("mcp-gateway-cache"),
        Some("miss")
    );
    assert_eq!(
        list(4, Some("alice2"))
            .await
            .head
            .header("mcp-gateway-cache"),
        Some("miss")
    );
    // no credential: no private cache, every time upstream
    assert_eq!(
        list(5, None).await.head.header("mcp-gateway-cache"),
        Some("bypass")
    );
    assert_eq!(
        list(6, None).await.head.header("mcp-gateway-cache"),
        Some("bypass")
    );
    assert_eq!(backend.count("prompts/list"), 5);
    let seen = backend.seen.lock().unwrap().clone();
    let by = |t: &str| seen.iter().filter(|(_, a)| a.as_deref() == Some(t)).count();
    assert_eq!(
        by("Bearer alice"),
        1,
        "alice's second list came from her cache"
    );
}

#[tokio::test]
async fn errors_input_required_ttl_zero_and_retries_always_reach_the_backend() {
    let backend = Backend::start(
        &[
            ("resources/read", r#"{"resultType":"input_required","inputRequests":{"k":{"method":"roots/list"}},"ttlMs":60000,"cacheScope":"public"}"#),
            ("tools/list", r#"{"tools":[],"ttlMs":0,"cacheScope":"public"}"#),
            ("resources/templates/list", r#"{"resourceTemplates":[],"cacheScope":"public"}"#),
        ],
        Duration::ZERO,
    )
    .await;
    let gw = Gateway::start(&config(&backend, "")).await;
    for id in 1..=2 {
        let read = json!({"uri": "file:///a"});
        request(&id.to_string(), "resources/read", read, None)
            .send(gw.addr)
            .await;
        request(&id.to_string(), "tools/list", json!({}), None)
            .send(gw.addr)
            .await;
        request(&id.to_string(), "resources/templates/list", json!({}), None)
            .send(gw.addr)
            .await;
        // a method the backend refuses (an error) is never kept
        request(&id.to_string(), "prompts/list", json!({}), None)
            .send(gw.addr)
            .await;
    }
    assert_eq!(backend.count("resources/read"), 2, "input_required");
    assert_eq!(backend.count("tools/list"), 2, "ttlMs 0");
    assert_eq!(backend.count("resources/templates/list"), 2, "no ttlMs");
    assert_eq!(backend.count("prompts/list"), 2, "an error");
    // a retry of a multi round-trip request is answered for its round only
    let keep = Backend::start(
        &[(
            "resources/read",
            r#"{"contents":[],"ttlMs":60000,"cacheScope":"public"}"#,
        )],
        Duration::ZERO,
    )
    .await;
    let gw = Gateway::start(&config(&keep, "")).await;
    let retry = json!({"uri": "file:///a", "requestState": "s1", "inputResponses": {}});
    for id in 1..=2 {
        let r = request(&id.to_string(), "resources/read", retry.clone(), None)
            .send(gw.addr)
            .await;
        assert_eq!(r.status(), 200, "{}", r.text());
    }
    assert_eq!(keep.count("resources/read"), 2, "a retry");
}

#[tokio::test]
async fn two_hundred_concurrent_misses_make_one_upstream_request() {
    let backend = Backend::start(&[("tools/list", PUBLIC)], Duration::from_millis(400)).await;
    let gw = Gateway::start(&config(&backend, "")).await;
    let addr = gw.addr;
    let all = (0..200).map(|i| {
        tokio::spawn(async move {
            request(&i.to_string(), "tools/list", json!({}), None)
                .send(addr)
                .await
        })
    });
    let tasks: Vec<_> = all.collect();
    for (i, a) in tasks.into_iter().enumerate() {
        let a = a.await.unwrap();
        assert_eq!(a.status(), 200, "{}", a.text());
        assert_eq!(a.json()["id"], i as u64);
    }
    assert_eq!(backend.count("tools/list"), 1);
}

#[tokio::test]
async fn a_route_with_cache_off_and_a_reload_answer_from_the_backend() {
    let backend = Backend::start(&[("tools/list", PUBLIC)], Duration::ZERO).await;
    let gw = Gateway::start(&config(&backend, ", cache: off")).await;
    for id in 1..=2 {
        let r = request(&id.to_string(), "tools/list", json!({}), None)
            .send(gw.addr)
            .await;
        assert_eq!(
            r.head.header("mcp-gateway-cache"),
            None,
            "the cache stays out"
        );
    }
    assert_eq!(backend.count("tools/list"), 2);
    // on again by a reload, which starts with an empty cache
    let applied = gw
        .metric("mcpgw_config_reloads_total{result=\"applied\"}")
        .await;
    gw.rewrite_config(&config(&backend, ""));
    mcp_gateway_tests::assert_eventually!(
        Duration::from_secs(5),
        gw.metric("mcpgw_config_reloads_total{result=\"applied\"}")
            .await
            > applied,
        "the reload applied"
    );
    for (id, how) in [(3, "miss"), (4, "hit")] {
        let r = request(&id.to_string(), "tools/list", json!({}), None)
            .send(gw.addr)
            .await;
        assert_eq!(r.head.header("mcp-gateway-cache"), Some(how));
    }
    assert_eq!(backend.count("tools/list"), 3);
}

/// A request the cache saw says how in its trace span: `mcp_gateway.cache` is `miss` for the
/// first list, `hit` for the second.
#[tokio::test]
async fn the_request_span_says_how_the_cache_answered() {
    use mcp_gateway_tests::otlp::{attribute, hex, OtlpReceiver};
    let receiver = OtlpReceiver::http().await;
    let backend = Backend::start(&[("tools/list", PUBLIC)], Duration::ZERO).await;
    let yaml = format!(
        "tracing:\n  otlp: {{ endpoint: \"{}\", protocol: http/protobuf }}\n  sample-ratio: 1.0\n{}",
        receiver.endpoint(),
        config(&backend, "")
    );
    let gw = Gateway::start_with_env(&yaml, &[("OTEL_BSP_SCHEDULE_DELAY", "100")]).await;
    let traces = [
        "4bf92f3577b34da6a3ce929d0e0e4731",
        "4bf92f3577b34da6a3ce929d0e0e4732",
    ];
    for (id, trace) in traces.iter().enumerate() {
        let parent = format!("00-{trace}-00f067aa0ba902b7-01");
        let r = request(&id.to_string(), "tools/list", json!({}), None)
            .header("traceparent", &parent)
            .send(gw.addr)
            .await;
        assert_eq!(r.status(), 200, "{}", r.text());
    }
    let cache_of = |trace: &str| {
        let spans = receiver.spans();
        let span = spans
            .iter()
            .find(|s| hex(&s.trace_id) == trace && s.name == "tools/list")?;
        attribute(span, "mcp_gateway.cache")
    };
    mcp_gateway_tests::assert_eventually!(
        Duration::from_secs(15),
        cache_of(traces[1]).is_some(),
        "the spans arrive"
    );
    assert_eq!(cache_of(traces[0]).as_deref(), Some("miss"));
    assert_eq!(cache_of(traces[1]).as_deref(), Some("hit"));
}
