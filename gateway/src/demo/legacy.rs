//! The demo's legacy pod: a 2025-11-25 MCP server keeping sessions in its own memory, like the
//! servers the gateway fronts. Runs as its own process (`mcp-gateway demo-pod`) so the demo
//! can kill it; it exits by itself when the demo that started it is gone.

use async_trait::async_trait;
use bytes::BytesMut;
use dashmap::DashMap;
use http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use http::{HeaderValue, Response, StatusCode};
use pingora::apps::http_app::{HttpServer, ServeHttp};
use pingora::protocols::http::ServerSession;
use pingora::server::Server;
use pingora::services::listening::Service;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, Ordering};

struct LegacyPod {
    name: String,
    sessions: DashMap<String, u64>,
    minted: AtomicU64,
}

fn reply(status: StatusCode, body: Option<Value>, session: Option<&str>) -> Response<Vec<u8>> {
    let Ok(session) = session.map(HeaderValue::from_str).transpose() else {
        return rpc_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            -32603,
            "the pod's name makes session ids that are not header values",
        );
    };
    // a `Value` prints as serde_json writes it, and printing it cannot fail
    let bytes = body.map(|b| b.to_string().into_bytes()).unwrap_or_default();
    let length = HeaderValue::from(bytes.len());
    let mut r = Response::new(bytes);
    *r.status_mut() = status;
    let headers = r.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(CONTENT_LENGTH, length);
    if let Some(session) = session {
        headers.insert("mcp-session-id", session);
    }
    r
}

fn rpc_error(status: StatusCode, code: i64, message: &str) -> Response<Vec<u8>> {
    reply(
        status,
        Some(
            json!({"jsonrpc": "2.0", "id": "server-error", "error": {"code": code, "message": message}}),
        ),
        None,
    )
}

#[async_trait]
impl ServeHttp for LegacyPod {
    async fn response(&self, session: &mut ServerSession) -> Response<Vec<u8>> {
        let mut body = BytesMut::new();
        while let Ok(Some(chunk)) = session.read_request_body().await {
            body.extend_from_slice(&chunk);
        }
        let sid = session
            .req_header()
            .headers
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let method = session.req_header().method.clone();
        let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let id = request.get("id").cloned().unwrap_or(Value::Null);
        let rpc = request.get("method").and_then(Value::as_str).unwrap_or("");
        if method == http::Method::DELETE {
            return match sid.and_then(|s| self.sessions.remove(&s)) {
                Some(_) => reply(StatusCode::OK, None, None),
                None => rpc_error(StatusCode::NOT_FOUND, -32600, "Session not found"),
            };
        }
        if method != http::Method::POST {
            return rpc_error(StatusCode::METHOD_NOT_ALLOWED, -32600, "Method not allowed");
        }
        let Some(sid) = sid else {
            if rpc != "initialize" {
                return rpc_error(
                    StatusCode::BAD_REQUEST,
                    -32600,
                    "Bad Request: Missing session ID",
                );
            }
            let n = self.minted.fetch_add(1, Ordering::Relaxed) + 1;
            let new_id = format!("{}-{n:04}", self.name);
            self.sessions.insert(new_id.clone(), 0);
            let result = json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                "serverInfo": {"name": self.name, "version": "demo"}});
            return reply(
                StatusCode::OK,
                Some(json!({"jsonrpc": "2.0", "id": id, "result": result})),
                Some(&new_id),
            );
        };
        let Some(mut calls) = self.sessions.get_mut(&sid) else {
            return rpc_error(StatusCode::NOT_FOUND, -32600, "Session not found");
        };
        if request.get("id").is_none() {
            return reply(StatusCode::ACCEPTED, None, None);
        }
        *calls += 1;
        let result = match rpc {
            "tools/list" => json!({"tools": [
                {"name": "whoami", "description": "Which pod answered, and this session's call count there", "inputSchema": {"type": "object"}}]}),
            "tools/call" => {
                let text = format!("{} (call {} of backend session {sid})", self.name, *calls);
                json!({"content": [{"type": "text", "text": text}], "isError": false})
            }
            "ping" => json!({}),
            other => {
                let error =
                    json!({"code": -32601, "message": format!("Method not found: {other}")});
                return reply(
                    StatusCode::OK,
                    Some(json!({"jsonrpc": "2.0", "id": id, "error": error})),
                    None,
                );
            }
        };
        reply(
            StatusCode::OK,
            Some(json!({"jsonrpc": "2.0", "id": id, "result": result})),
            None,
        )
    }
}

/// Runs one legacy pod on 127.0.0.1:`port`; never returns.
pub fn run_pod(port: u16, name: &str) -> ! {
    let parent = std::os::unix::process::parent_id();
    std::thread::spawn(move || loop {
        // The demo that started this pod is gone: so is the pod.
        if std::os::unix::process::parent_id() != parent {
            std::process::exit(0);
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    });
    let mut server = super::exit::or_exit(Server::new(None), "the pod's server");
    server.bootstrap();
    let pod = LegacyPod {
        name: name.to_owned(),
        sessions: DashMap::new(),
        minted: AtomicU64::new(0),
    };
    let mut service = Service::new(format!("demo pod {name}"), HttpServer::new_app(pod));
    service.add_tcp(&format!("127.0.0.1:{port}"));
    service.threads = Some(1);
    server.add_service(service);
    server.run_forever()
}
