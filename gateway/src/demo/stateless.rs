//! The demo's 2026-07-28 (stateless) MCP server: `whoami`, `report_sales`, `echo`.

use async_trait::async_trait;
use bytes::BytesMut;
use http::header::{CONTENT_LENGTH, CONTENT_TYPE, SERVER};
use http::{HeaderValue, Response, StatusCode};
use pingora::apps::http_app::ServeHttp;
use pingora::protocols::http::ServerSession;
use pingora::services::listening::Service;
use serde_json::{json, Value};

/// A tiny 2026-07-28 MCP server answering from memory.
pub struct DemoServer {
    name: String,
}

impl DemoServer {
    fn answer(&self, request: &Value) -> Value {
        let id = request.get("id").cloned().unwrap_or(Value::Null);
        let method = request.get("method").and_then(Value::as_str).unwrap_or("");
        let server_info =
            json!({"io.modelcontextprotocol/serverInfo": {"name": self.name, "version": "demo"}});
        let result = match method {
            "server/discover" => json!({
                "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}},
                "resultType": "complete", "cacheScope": "public", "ttlMs": 60000, "_meta": server_info,
            }),
            "tools/list" => json!({
                "tools": [
                    {"name": "whoami", "description": "Which demo server answered", "inputSchema": {"type": "object"}},
                    {"name": "report_sales", "description": "A heavy report (routed to the heavy pool)", "inputSchema": {"type": "object"}},
                    {"name": "echo", "description": "Echoes `text`", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}},
                ],
                "resultType": "complete", "cacheScope": "public", "ttlMs": 60000, "_meta": server_info,
            }),
            "tools/call" => {
                let tool = request
                    .pointer("/params/name")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let text = match tool {
                    "whoami" => self.name.clone(),
                    "report_sales" => format!("{}: sales report ready", self.name),
                    "echo" => request
                        .pointer("/params/arguments/text")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned(),
                    other => {
                        return json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32602, "message": format!("Unknown tool: {other}")}})
                    }
                };
                json!({"content": [{"type": "text", "text": text}], "isError": false, "resultType": "complete", "_meta": server_info})
            }
            _ => {
                return json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": format!("Method not found: {method}")}})
            }
        };
        json!({"jsonrpc": "2.0", "id": id, "result": result})
    }
}

#[async_trait]
impl ServeHttp for DemoServer {
    async fn response(&self, session: &mut ServerSession) -> Response<Vec<u8>> {
        let mut body = BytesMut::new();
        while let Ok(Some(chunk)) = session.read_request_body().await {
            body.extend_from_slice(&chunk);
        }
        let reply = match serde_json::from_slice::<Value>(&body) {
            Ok(request) if request.get("id").is_none() => None,
            Ok(request) => Some(self.answer(&request)),
            Err(e) => Some(
                json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": format!("Parse error: {e}")}}),
            ),
        };
        let mut response = match reply {
            None => {
                let mut r = Response::new(Vec::new());
                *r.status_mut() = StatusCode::ACCEPTED;
                r.headers_mut().insert(CONTENT_LENGTH, HeaderValue::from(0));
                r
            }
            Some(v) => {
                // a `Value` prints as serde_json writes it, and printing it cannot fail
                let bytes = v.to_string().into_bytes();
                let length = HeaderValue::from(bytes.len());
                let mut r = Response::new(bytes);
                let headers = r.headers_mut();
                headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
                headers.insert(CONTENT_LENGTH, length);
                r
            }
        };
        // a name that is not a header value (not one of the demo's) goes without the header
        if let Ok(server) = HeaderValue::from_str(&format!("demo-mcp/{}", self.name)) {
            response.headers_mut().insert(SERVER, server);
        }
        response
    }
}

/// A listening service running one demo server.
pub fn demo_service(
    name: &str,
    port: u16,
) -> Service<pingora::apps::http_app::HttpServer<DemoServer>> {
    let mut service = Service::new(
        format!("demo {name}"),
        pingora::apps::http_app::HttpServer::new_app(DemoServer {
            name: name.to_owned(),
        }),
    );
    service.add_tcp(&format!("127.0.0.1:{port}"));
    service.threads = Some(1);
    service
}
