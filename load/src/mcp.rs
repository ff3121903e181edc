//! The two MCP dialects on the wire, and what an answer means to a careful client.

use crate::http::{Request, Response};
use serde_json::{json, Value};

/// Protocol version a legacy client asks for.
pub const LEGACY_VERSION: &str = "2025-11-25";
/// The session-less revision.
pub const STATELESS_VERSION: &str = "2026-07-28";

/// Which protocol era the client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Dialect {
    /// 2025-11-25: initialize, notifications/initialized, calls in a session, DELETE.
    Legacy,
    /// 2026-07-28: every request self-contained (`_meta` + `Mcp-Method`/`Mcp-Name` headers).
    Stateless,
    /// 2025-11-25 the toolhive vMCP way: a fresh session for every call (initialize,
    /// notifications/initialized, the call, DELETE), all of it measured as the call.
    #[value(name = "session-per-call")]
    #[serde(rename = "session-per-call")]
    SessionPerCall,
}

const ACCEPT: (&str, &str) = ("Accept", "application/json, text/event-stream");
const JSON: (&str, &str) = ("Content-Type", "application/json");

/// Builds the requests of one target.
pub struct Wire {
    /// The endpoint path.
    pub path: String,
    /// The `Host` header.
    pub host: String,
    /// `Connection: close` on every request.
    pub close: bool,
    /// The tool every call invokes.
    pub tool: String,
    /// `Authorization` value sent on every request.
    pub bearer: Option<String>,
}

impl Wire {
    /// A legacy `initialize`.
    pub fn initialize(&self, id: u64) -> Request {
        let body = json!({
            "jsonrpc": "2.0", "id": id, "method": "initialize",
            "params": {
                "protocolVersion": LEGACY_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "mcp-load", "version": env!("CARGO_PKG_VERSION")}
            }
        });
        self.post(&[], &body)
    }

    /// `notifications/initialized` in a session.
    pub fn initialized(&self, sid: &str) -> Request {
        let body = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        self.post(&session_headers(sid), &body)
    }

    /// A `tools/call` in the dialect (`sid` for legacy); in the stateless dialect, the tool
    /// `tasks/get:ID` makes it a `tasks/get` of task ID and the tool `tools/list` a `tools/list`.
    pub fn call(&self, dialect: Dialect, id: u64, sid: Option<&str>) -> Request {
        match dialect {
            Dialect::Legacy | Dialect::SessionPerCall => {
                let body = json!({
                    "jsonrpc": "2.0", "id": id, "method": "tools/call",
                    "params": {"name": self.tool, "arguments": {}}
                });
                self.post(&session_headers(sid.unwrap_or_default()), &body)
            }
            Dialect::Stateless if self.tool.starts_with("tasks/get:") => {
                let task_id = &self.tool["tasks/get:".len()..];
                let body = json!({
                    "jsonrpc": "2.0", "id": id, "method": "tasks/get",
                    "params": {
                        "taskId": task_id,
                        "_meta": {
                            "io.modelcontextprotocol/protocolVersion": STATELESS_VERSION,
                            "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
                            "io.modelcontextprotocol/clientInfo": {"name": "mcp-load", "version": env!("CARGO_PKG_VERSION")}
                        }
                    }
                });
                let headers = [
                    ("MCP-Protocol-Version", STATELESS_VERSION),
                    ("Mcp-Method", "tasks/get"),
                    ("Mcp-Name", task_id),
                ];
                self.post(&headers, &body)
            }
            Dialect::Stateless if self.tool == "tools/list" => {
                let body = json!({
                    "jsonrpc": "2.0", "id": id, "method": "tools/list",
                    "params": {
                        "_meta": stateless_meta()
                    }
                });
                let headers = [
                    ("MCP-Protocol-Version", STATELESS_VERSION),
                    ("Mcp-Method", "tools/list"),
                ];
                self.post(&headers, &body)
            }
            Dialect::Stateless => {
                let body = json!({
                    "jsonrpc": "2.0", "id": id, "method": "tools/call",
                    "params": {
                        "name": self.tool, "arguments": {},
                        "_meta": stateless_meta()
                    }
                });
                let headers = [
                    ("MCP-Protocol-Version", STATELESS_VERSION),
                    ("Mcp-Method", "tools/call"),
                    ("Mcp-Name", self.tool.as_str()),
                ];
                self.post(&headers, &body)
            }
        }
    }

    /// `DELETE` of a session.
    pub fn delete(&self, sid: &str) -> Request {
        Request::new(
            "DELETE",
            &self.path,
            &self.host,
            &session_headers(sid),
            b"",
            self.close,
        )
    }

    fn post(&self, extra: &[(&str, &str)], body: &Value) -> Request {
        let mut headers = vec![ACCEPT, JSON];
        headers.extend_from_slice(extra);
        if let Some(b) = &self.bearer {
            headers.push(("Authorization", b.as_str()));
        }
        let body = serde_json::to_vec(body).expect("JSON serializes");
        Request::new("POST", &self.path, &self.host, &headers, &body, self.close)
    }
}

fn session_headers(sid: &str) -> [(&str, &str); 2] {
    [
        ("Mcp-Session-Id", sid),
        ("MCP-Protocol-Version", LEGACY_VERSION),
    ]
}

/// What an answer to a request means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// A JSON-RPC result.
    Ok,
    /// The server does not know the session (404; 400 naming the session): re-initialize.
    SessionLost,
    /// A JSON-RPC error with this code (HTTP 2xx).
    RpcError(i64),
    /// Any other HTTP status (5xx makes a careful client re-initialize too).
    Http(u16),
}

/// Classifies an answer to a request that expects a JSON-RPC response.
pub fn verdict(resp: &Response) -> Verdict {
    let message = response_message(resp);
    let status = resp.status;
    let names_session = message.as_ref().is_some_and(|m| {
        m.pointer("/error/message")
            .and_then(Value::as_str)
            .is_some_and(|s| s.to_ascii_lowercase().contains("session"))
    });
    if status == 404 || (status == 400 && names_session) {
        return Verdict::SessionLost;
    }
    if !(200..300).contains(&status) {
        return Verdict::Http(status);
    }
    match message {
        Some(m) if m.get("result").is_some() => Verdict::Ok,
        Some(m) => Verdict::RpcError(
            m.pointer("/error/code")
                .and_then(Value::as_i64)
                .unwrap_or(0),
        ),
        None => Verdict::Http(status),
    }
}

/// The JSON-RPC response in a body: the JSON itself, or the SSE event carrying it (the last
/// `data:` that is a response, after any notifications).
pub fn response_message(resp: &Response) -> Option<Value> {
    let sse = resp
        .content_type
        .as_deref()
        .is_some_and(|c| c.starts_with("text/event-stream"));
    if !sse {
        return serde_json::from_slice(&resp.body).ok();
    }
    let text = String::from_utf8_lossy(&resp.body);
    text.lines()
        .rev()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|v| v.get("result").is_some() || v.get("error").is_some())
}

/// The `_meta` envelope of a 2026-07-28 request from the load tool.
fn stateless_meta() -> serde_json::Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": STATELESS_VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "mcp-load", "version": env!("CARGO_PKG_VERSION")}
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resp(status: u16, ct: &str, body: &str) -> Response {
        Response {
            status,
            session_id: None,
            content_type: Some(ct.into()),
            body: body.as_bytes().to_vec(),
            answered: tokio::time::Instant::now(),
        }
    }

    #[test]
    fn answers_are_classified_like_a_careful_client_would() {
        let ok = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#;
        assert_eq!(verdict(&resp(200, "application/json", ok)), Verdict::Ok);
        let sse = "event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\r\n\r\nevent: message\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\r\n\r\n";
        assert_eq!(verdict(&resp(200, "text/event-stream", sse)), Verdict::Ok);
        let lost = r#"{"jsonrpc":"2.0","id":"server-error","error":{"code":-32600,"message":"Session not found"}}"#;
        assert_eq!(
            verdict(&resp(404, "application/json", lost)),
            Verdict::SessionLost
        );
        let missing = r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Bad Request: No valid session ID provided"}}"#;
        assert_eq!(
            verdict(&resp(400, "application/json", missing)),
            Verdict::SessionLost
        );
        let unknown =
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32013,"message":"outcome unknown"}}"#;
        assert_eq!(
            verdict(&resp(200, "application/json", unknown)),
            Verdict::RpcError(-32013)
        );
        assert_eq!(
            verdict(&resp(502, "text/html", "<html>")),
            Verdict::Http(502)
        );
        assert_eq!(
            verdict(&resp(400, "application/json", "{}")),
            Verdict::Http(400)
        );
    }
}
