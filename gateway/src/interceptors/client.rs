//! One interceptor server's endpoint: a JSON-RPC request to it and its answer, over the
//! gateway's upstream client (pingora's pooled connections, `upstream/client.rs`), with the
//! server's credentials (`upstream/credentials.rs`, as a pool's).
//!
//! Both eras: a request goes first as a 2026-07-28 one (`MCP-Protocol-Version`, `Mcp-Method`,
//! the `_meta` the era requires); a server that refuses it as a legacy server does (HTTP 4xx
//! without an answer, or -32022) is spoken to as a 2025-11-25 server from then on: one
//! `initialize` (single-flighted), `notifications/initialized`, and its `Mcp-Session-Id` on
//! every request, opened again when the server forgets it (404).

use crate::config::InterceptorServerConfig;
use crate::upstream::client::UpstreamClient;
use crate::upstream::credentials::Credentials;
use bytes::Bytes;
use pingora::http::RequestHeader;
use pingora::upstreams::peer::HttpPeer;
use serde_json::{json, Map, Value};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::time::Duration;

/// The 2026-07-28 revision, asked first.
const MODERN: &str = "2026-07-28";
/// The legacy revision a server that refuses it is initialized with.
const LEGACY: &str = "2025-11-25";

/// Why a request to an interceptor server failed.
#[derive(Debug, Clone, PartialEq)]
pub enum Failure {
    /// No answer within the timeout.
    Timeout,
    /// Not reached, or the connection broke (`detail` for logs).
    Unreachable(String),
    /// An answer that is not a JSON-RPC answer to the request.
    Garbage(String),
    /// A JSON-RPC error.
    Error {
        /// Its code.
        code: i64,
        /// Its message.
        message: String,
    },
}

impl Failure {
    /// The reason, as `data.reason` and the metric's `result` read it.
    pub fn reason(&self) -> &'static str {
        match self {
            Failure::Timeout => "timeout",
            Failure::Unreachable(_) => "unreachable",
            Failure::Garbage(_) => "garbage",
            Failure::Error { .. } => "error",
        }
    }

    /// What a client is told: never the server's address or a connection's error (logged
    /// instead, with [`Failure::detail`]).
    pub fn public_detail(&self) -> String {
        match self {
            Failure::Timeout => "no answer in time".to_owned(),
            Failure::Unreachable(_) => "its server could not be reached".to_owned(),
            Failure::Garbage(_) => "its answer could not be read as the draft's result".to_owned(),
            Failure::Error { code, message } => {
                format!("its server answered error {code}: {message}")
            }
        }
    }

    /// For the log: never a credential.
    pub fn detail(&self) -> String {
        match self {
            Failure::Timeout => "no answer in time".to_owned(),
            Failure::Unreachable(d) | Failure::Garbage(d) => d.clone(),
            Failure::Error { code, message } => format!("error {code}: {message}"),
        }
    }
}

/// Where the URL points.
#[derive(Debug)]
struct Target {
    tls: bool,
    connect: String,
    authority: String,
    sni: String,
    path: String,
}

fn target(url: &str) -> Option<Target> {
    let u = url::Url::parse(url).ok()?;
    let tls = u.scheme() == "https";
    let host = u.host_str()?;
    let port = u.port_or_known_default()?;
    Some(Target {
        tls,
        connect: format!("{host}:{port}"),
        authority: match u.port() {
            Some(p) => format!("{host}:{p}"),
            None => host.to_owned(),
        },
        sni: host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned(),
        path: match u.query() {
            Some(q) => format!("{}?{q}", u.path()),
            None => u.path().to_owned(),
        },
    })
}

/// Which era the server speaks, once known.
const ERA_UNKNOWN: u8 = 0;
const ERA_MODERN: u8 = 1;
const ERA_LEGACY: u8 = 2;

/// One interceptor server's endpoint.
pub struct Endpoint {
    name: String,
    target: Option<Target>,
    timeout: Duration,
    max_answer: usize,
    credentials: Credentials,
    era: AtomicU8,
    /// A legacy server's session id; the lock single-flights its `initialize`.
    session: tokio::sync::Mutex<Option<String>>,
    ids: AtomicU64,
}

/// What one HTTP exchange answered.
struct Reply {
    status: u16,
    message: Option<Value>,
    session: Option<String>,
}

impl Endpoint {
    /// The endpoint of `cfg`.
    pub fn new(cfg: &InterceptorServerConfig) -> Endpoint {
        Endpoint {
            name: cfg.name.clone(),
            target: target(&cfg.url),
            timeout: cfg.timeout,
            max_answer: cfg.max_payload_bytes.saturating_add(64 << 10),
            credentials: Credentials::load(&format!("interceptors.{}", cfg.name), &cfg.auth),
            era: AtomicU8::new(ERA_UNKNOWN),
            session: tokio::sync::Mutex::new(None),
            ids: AtomicU64::new(1),
        }
    }

    /// The credentials it sends (their files read again on a list refresh).
    pub fn credentials(&self) -> &Credentials {
        &self.credentials
    }

    /// Calls `method` with `params` under the server's timeout; the result.
    pub async fn call(
        &self,
        http: &UpstreamClient,
        tokens: &pingora_prometheus::prometheus::IntCounterVec,
        method: &str,
        params: Map<String, Value>,
    ) -> Result<Value, Failure> {
        let work = async {
            if let Some(token) = self.credentials.token() {
                token
                    .ready(tokens)
                    .await
                    .map_err(|f| Failure::Unreachable(format!("its token: {}", f.reason)))?;
            }
            self.call_in_era(http, method, params).await
        };
        tokio::time::timeout(self.timeout, work)
            .await
            .unwrap_or(Err(Failure::Timeout))
    }

    async fn call_in_era(
        &self,
        http: &UpstreamClient,
        method: &str,
        params: Map<String, Value>,
    ) -> Result<Value, Failure> {
        if self.era.load(Ordering::Relaxed) != ERA_LEGACY {
            let reply = self
                .send(http, method, modern(params.clone()), Era::Modern)
                .await?;
            let legacy_refusal = !(200..300).contains(&reply.status) && reply.message.is_none()
                || error_code(&reply.message) == Some(-32022);
            if !(legacy_refusal && self.era.load(Ordering::Relaxed) == ERA_UNKNOWN) {
                let result = outcome(reply.message);
                if result.is_ok() {
                    self.era.store(ERA_MODERN, Ordering::Relaxed);
                }
                return result;
            }
        }
        let first = self.legacy_call(http, method, &params).await;
        if first.is_ok() {
            self.era.store(ERA_LEGACY, Ordering::Relaxed);
        }
        first
    }

    /// A call in a legacy session: opened first when there is none, opened again once when
    /// the server no longer knows it.
    async fn legacy_call(
        &self,
        http: &UpstreamClient,
        method: &str,
        params: &Map<String, Value>,
    ) -> Result<Value, Failure> {
        for _ in 0..2 {
            let session = self.legacy_session(http).await?;
            let reply = self
                .send(
                    http,
                    method,
                    Value::Object(params.clone()),
                    Era::Legacy(&session),
                )
                .await?;
            if reply.status == 404 {
                let mut held = self.session.lock().await;
                if held.as_deref() == Some(session.as_str()) {
                    *held = None;
                }
                continue;
            }
            return outcome(reply.message);
        }
        Err(Failure::Garbage(
            "its session was forgotten twice".to_owned(),
        ))
    }

    /// The legacy session, opened (`initialize`, `notifications/initialized`) when there is
    /// none; one `initialize` at a time.
    async fn legacy_session(&self, http: &UpstreamClient) -> Result<String, Failure> {
        let mut held = self.session.lock().await;
        if let Some(id) = held.as_ref() {
            return Ok(id.clone());
        }
        let init = json!({
            "protocolVersion": LEGACY,
            "capabilities": {},
            "clientInfo": {"name": "mcp-gateway", "version": env!("CARGO_PKG_VERSION")},
        });
        let reply = self.send(http, "initialize", init, Era::Initialize).await?;
        let session = reply.session.clone();
        outcome(reply.message)?;
        let id = session.ok_or_else(|| Failure::Garbage("initialize gave no session id".into()))?;
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        self.post(http, note, Era::Legacy(&id), "notifications/initialized")
            .await?;
        *held = Some(id.clone());
        Ok(id)
    }

    async fn send(
        &self,
        http: &UpstreamClient,
        method: &str,
        params: Value,
        era: Era<'_>,
    ) -> Result<Reply, Failure> {
        let id = self.ids.fetch_add(1, Ordering::Relaxed);
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let reply = self.post(http, body, era, method).await?;
        if let Some(m) = &reply.message {
            if m.get("id") != Some(&json!(id)) && m.get("id") != Some(&Value::Null) {
                return Err(Failure::Garbage("an answer to another request".into()));
            }
        }
        Ok(reply)
    }

    /// POSTs one message and reads the whole answer (up to `max-payload-bytes` + 64 KiB).
    async fn post(
        &self,
        http: &UpstreamClient,
        body: Value,
        era: Era<'_>,
        method: &str,
    ) -> Result<Reply, Failure> {
        let target = (self.target.as_ref())
            .ok_or_else(|| Failure::Unreachable("its URL cannot be used".into()))?;
        let addr = tokio::net::lookup_host(target.connect.as_str())
            .await
            .map_err(|e| Failure::Unreachable(format!("resolving {}: {e}", target.authority)))?
            .next()
            .ok_or_else(|| Failure::Unreachable(format!("{} has no address", target.authority)))?;
        let mut peer = Box::new(HttpPeer::new(addr, target.tls, target.sni.clone()));
        peer.options.connection_timeout = Some(self.timeout);
        peer.options.read_timeout = Some(self.timeout);
        peer.options.idle_timeout = Some(Duration::from_secs(60));
        let bytes = Bytes::from(serde_json::to_vec(&body).unwrap_or_default());
        let req = self
            .head(target, &bytes, era, method)
            .map_err(|e| Failure::Unreachable(format!("the request head: {e}")))?;
        let mut exchange = http
            .send(peer, &req, bytes, false)
            .await
            .map_err(|e| Failure::Unreachable(e.to_string()))?;
        let status = exchange.header().status.as_u16();
        let header = |n: &str| {
            (exchange.header().headers.get(n)).and_then(|v| v.to_str().ok().map(str::to_owned))
        };
        let content_type = header("content-type");
        let session = header("mcp-session-id");
        let answer = exchange
            .read_all(self.max_answer)
            .await
            .map_err(|e| Failure::Garbage(format!("its answer: {e}")))?;
        http.release(exchange);
        let message = mcp_wire::sse::response(content_type.as_deref(), &answer);
        Ok(Reply {
            status,
            message,
            session,
        })
    }

    fn head(
        &self,
        target: &Target,
        body: &Bytes,
        era: Era<'_>,
        method: &str,
    ) -> Result<RequestHeader, Box<pingora::Error>> {
        let mut req = RequestHeader::build("POST", target.path.as_bytes(), Some(8))?;
        req.insert_header("host", target.authority.as_str())?;
        req.insert_header("content-type", "application/json")?;
        req.insert_header("accept", "application/json, text/event-stream")?;
        req.insert_header("content-length", body.len())?;
        match era {
            Era::Modern => {
                req.insert_header("mcp-protocol-version", MODERN)?;
                req.insert_header("mcp-method", method)?;
            }
            Era::Initialize => {}
            Era::Legacy(session) => {
                req.insert_header("mcp-protocol-version", LEGACY)?;
                req.insert_header("mcp-session-id", session)?;
            }
        }
        self.credentials.apply(&mut req);
        Ok(req)
    }

    /// Its name (`interceptors.NAME`).
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// How a request is sent.
#[derive(Clone, Copy)]
enum Era<'a> {
    Modern,
    Initialize,
    Legacy(&'a str),
}

/// `params` with the `_meta` a 2026-07-28 request carries.
fn modern(mut params: Map<String, Value>) -> Value {
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "mcp-gateway", "version": env!("CARGO_PKG_VERSION")},
    });
    params.insert("_meta".to_owned(), meta);
    Value::Object(params)
}

fn error_code(message: &Option<Value>) -> Option<i64> {
    message.as_ref()?.get("error")?.get("code")?.as_i64()
}

/// The result of an answer, or its error.
fn outcome(message: Option<Value>) -> Result<Value, Failure> {
    let Some(Value::Object(mut m)) = message else {
        return Err(Failure::Garbage("no JSON-RPC answer".into()));
    };
    if let Some(result) = m.remove("result") {
        return Ok(result);
    }
    let error = m.get("error");
    let code = error.and_then(|e| e.get("code")).and_then(Value::as_i64);
    match code {
        Some(code) => Err(Failure::Error {
            code,
            message: (error.and_then(|e| e.get("message")).and_then(Value::as_str))
                .unwrap_or_default()
                .chars()
                .take(256)
                .collect(),
        }),
        None => Err(Failure::Garbage(
            "an answer with neither result nor error".into(),
        )),
    }
}
