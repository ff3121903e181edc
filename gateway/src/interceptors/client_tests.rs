//! An interceptor server's endpoint and list against a small HTTP server on 127.0.0.1 that
//! answers as each test says: the legacy era taken after a 2026-07-28 refusal, its session
//! opened once and again when forgotten, a failed list remembered instead of asked per
//! request, and `hooks` before and after a list is known.

use super::metrics::InterceptorMetrics;
use super::server::Server;
use super::{Chain, Interceptors, Phase};
use crate::config::InterceptorServerConfig;
use crate::upstream::client::UpstreamClient;
use serde_json::{json, Map, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

/// One request the server got: its headers (lowercase names) and its JSON body.
#[derive(Debug, Clone)]
struct Got {
    headers: Vec<(String, String)>,
    body: Value,
}

impl Got {
    fn header(&self, name: &str) -> Option<&str> {
        (self.headers.iter())
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

type Answer = (u16, Vec<(String, String)>, String);

/// Serves on a free port: each request is logged and answered by `answer`.
async fn serve(
    answer: impl Fn(&Got, usize) -> Answer + Send + Sync + 'static,
) -> (String, Arc<Mutex<Vec<Got>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let log: Arc<Mutex<Vec<Got>>> = Arc::default();
    let (answer, seen) = (Arc::new(answer), log.clone());
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (answer, seen) = (answer.clone(), seen.clone());
            tokio::spawn(async move {
                let mut stream = BufReader::new(stream);
                loop {
                    let mut headers = Vec::new();
                    let mut line = String::new();
                    if stream.read_line(&mut line).await.unwrap_or(0) == 0 {
                        return;
                    }
                    loop {
                        line.clear();
                        stream.read_line(&mut line).await.unwrap();
                        let l = line.trim_end();
                        if l.is_empty() {
                            break;
                        }
                        let (n, v) = l.split_once(':').unwrap();
                        headers.push((n.to_ascii_lowercase(), v.trim().to_owned()));
                    }
                    let len: usize = (headers.iter())
                        .find(|(n, _)| n == "content-length")
                        .map_or(0, |(_, v)| v.parse().unwrap());
                    let mut body = vec![0; len];
                    stream.read_exact(&mut body).await.unwrap();
                    let got = Got {
                        headers,
                        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
                    };
                    let n = {
                        let mut seen = seen.lock().unwrap();
                        seen.push(got.clone());
                        seen.len()
                    };
                    let (status, extra, text) = answer(&got, n);
                    let mut head = format!(
                        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n",
                        text.len()
                    );
                    for (n, v) in extra {
                        head.push_str(&format!("{n}: {v}\r\n"));
                    }
                    head.push_str("\r\n");
                    let out = stream.get_mut();
                    out.write_all(head.as_bytes()).await.unwrap();
                    out.write_all(text.as_bytes()).await.unwrap();
                }
            });
        }
    });
    (format!("http://{addr}/mcp"), log)
}

fn config(url: &str) -> InterceptorServerConfig {
    InterceptorServerConfig {
        name: "guard".into(),
        url: url.to_owned(),
        timeout: Duration::from_secs(2),
        auth: Default::default(),
        max_payload_bytes: 1 << 20,
        max_listed: 32,
        list_ttl: Duration::from_secs(60),
        config: Default::default(),
    }
}

fn result(got: &Got, result: Value) -> String {
    json!({"jsonrpc": "2.0", "id": got.body["id"], "result": result}).to_string()
}

const LISTED: &str = r#"{"interceptors": [{"name": "v", "type": "validation",
    "hooks": [{"events": ["tools/call"], "phase": "request"}]}]}"#;

#[tokio::test]
async fn a_server_that_refuses_the_modern_era_is_asked_in_a_legacy_session() {
    let (url, log) = serve(|got, _| {
        let method = got.body["method"].as_str().unwrap_or("");
        match (
            got.header("mcp-protocol-version"),
            got.header("mcp-session-id"),
            method,
        ) {
            // a legacy server: no session id on a non-initialize request
            (Some("2026-07-28"), _, _) => (400, vec![], "Bad Request: Missing session ID".into()),
            (None, None, "initialize") => {
                let init = result(
                    got,
                    json!({"protocolVersion": "2025-11-25", "capabilities": {}}),
                );
                (200, vec![("mcp-session-id".into(), "s1".into())], init)
            }
            (_, Some("s1"), "notifications/initialized") => (202, vec![], String::new()),
            (_, Some("s1"), "interceptors/list") => (
                200,
                vec![],
                result(got, serde_json::from_str(LISTED).unwrap()),
            ),
            _ => (404, vec![], "unknown session".into()),
        }
    })
    .await;
    let server = Arc::new(Server::new(&config(&url)));
    let (http, metrics) = (
        Arc::new(UpstreamClient::default()),
        InterceptorMetrics::unregistered(),
    );
    let listing = server.listing(&http, &metrics).await.unwrap();
    assert_eq!(listing.items[0].name, "v");
    // once legacy, a call goes in the session straight away
    let again = server
        .endpoint
        .call(&http, &metrics.tokens, "interceptors/list", Map::new())
        .await;
    assert!(again.is_ok(), "{again:?}");
    let methods: Vec<String> = (log.lock().unwrap().iter())
        .map(|g| g.body["method"].as_str().unwrap_or("").to_owned())
        .collect();
    assert_eq!(
        methods,
        [
            "interceptors/list",
            "initialize",
            "notifications/initialized",
            "interceptors/list",
            "interceptors/list"
        ]
    );
    let last = log.lock().unwrap().last().cloned().unwrap();
    assert_eq!(last.header("mcp-protocol-version"), Some("2025-11-25"));
}

#[tokio::test]
async fn a_modern_request_carries_the_eras_headers_and_meta() {
    let (url, log) = serve(|got, _| {
        (
            200,
            vec![],
            result(got, serde_json::from_str(LISTED).unwrap()),
        )
    })
    .await;
    let server = Arc::new(Server::new(&config(&url)));
    let (http, metrics) = (
        Arc::new(UpstreamClient::default()),
        InterceptorMetrics::unregistered(),
    );
    server.listing(&http, &metrics).await.unwrap();
    let got = log.lock().unwrap()[0].clone();
    assert_eq!(got.header("mcp-protocol-version"), Some("2026-07-28"));
    assert_eq!(got.header("mcp-method"), Some("interceptors/list"));
    let meta = &got.body["params"]["_meta"];
    assert_eq!(
        meta["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    assert!(
        meta["io.modelcontextprotocol/clientCapabilities"].is_object(),
        "{got:?}"
    );
}

#[tokio::test]
async fn a_failed_list_is_remembered_for_a_second_instead_of_asked_per_request() {
    let (url, log) = serve(|got, _| (200, vec![], result(got, json!({"nothing": true})))).await;
    let server = Arc::new(Server::new(&config(&url)));
    let (http, metrics) = (
        Arc::new(UpstreamClient::default()),
        InterceptorMetrics::unregistered(),
    );
    for _ in 0..5 {
        assert!(server.listing(&http, &metrics).await.is_err());
    }
    assert_eq!(log.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn hooks_is_true_until_a_list_is_known_then_follows_it() {
    let (url, _log) = serve(|got, _| {
        (
            200,
            vec![],
            result(got, serde_json::from_str(LISTED).unwrap()),
        )
    })
    .await;
    let mut config = crate::config::parse(
        "pools: { p: { backends: [\"127.0.0.1:9\"] } }\nroutes: [ { path: /mcp, pool: p } ]\n",
    )
    .unwrap();
    config.interceptors = vec![self::config(&url)];
    let interceptors = Interceptors::new(&config);
    let chain = Chain { servers: vec![0] };
    assert!(interceptors.hooks(&chain, "prompts/get", Phase::Request));
    let payload = json!({"name": "p"});
    let verdict = interceptors
        .run(
            &chain,
            "prompts/get",
            Phase::Request,
            &payload,
            &Default::default(),
        )
        .await;
    assert_eq!(verdict, Ok(super::Verdict::Pass));
    assert!(!interceptors.hooks(&chain, "prompts/get", Phase::Request));
    assert!(interceptors.hooks(&chain, "tools/call", Phase::Request));
    assert!(!interceptors.hooks(&chain, "tools/call", Phase::Response));
}
