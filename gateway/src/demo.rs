//! `mcp-gateway demo`: the gateway in front of in-process demo MCP servers on 127.0.0.1, so a
//! newcomer sees it work with one command. The demo servers speak the 2026-07-28 (stateless)
//! dialect with three tools: `whoami` (which server answered), `report_sales` (routed to its
//! own pool by a rule) and `echo`.

use crate::config::Config;
use async_trait::async_trait;
use bytes::BytesMut;
use http::Response;
use pingora::apps::http_app::ServeHttp;
use pingora::protocols::http::ServerSession;
use pingora::services::listening::Service;
use serde_json::{json, Value};

/// The demo's config: gateway on `port`, servers on `port+1..=port+3`.
pub fn config_yaml(port: u16) -> String {
    format!(
        r#"listen: 127.0.0.1:{port}
admin: 127.0.0.1:{admin}
threads: 2
pools:
  modern: {{ backends: [127.0.0.1:{a}, 127.0.0.1:{b}], balance: round-robin }}
  heavy:  {{ backends: [127.0.0.1:{c}] }}
routes:
  - path: /mcp
    mode: stateless
    pool: modern
    rules:
      - match: {{ method: tools/call, name: "report_*" }}
        pool: heavy
"#,
        admin = port + 10,
        a = port + 1,
        b = port + 2,
        c = port + 3,
    )
}

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
        let builder = Response::builder().header("server", format!("demo-mcp/{}", self.name));
        match reply {
            None => builder
                .status(202)
                .header("content-length", 0)
                .body(Vec::new()),
            Some(v) => {
                let bytes = serde_json::to_vec(&v).expect("JSON");
                builder
                    .status(200)
                    .header("content-type", "application/json")
                    .header("content-length", bytes.len())
                    .body(bytes)
            }
        }
        .expect("valid response")
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

/// What to try, printed at start.
pub fn banner(config: &Config) -> String {
    let gw = config.listen;
    let admin = config.admin.map(|a| a.to_string()).unwrap_or_default();
    let curl = |method: &str, name: Option<&str>, params: &str| {
        let name_header = name
            .map(|n| format!(" -H 'Mcp-Name: {n}'"))
            .unwrap_or_default();
        format!(
            "curl -s http://{gw}/mcp -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \\\n     -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: {method}'{name_header} \\\n     -d '{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"{method}\",\"params\":{params}}}'"
        )
    };
    let meta = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
    format!(
        "mcp-gateway demo: gateway on http://{gw}/mcp, admin on http://{admin}\n\
         pools: modern = demo-a + demo-b (round robin), heavy = demo-c (report_* calls)\n\n\
         Try (run whoami twice: the answer alternates between demo-a and demo-b):\n\n\
         {}\n\n{}\n\n\
         A header that disagrees with the body is refused by the gateway (400, JSON-RPC -32020):\n\n{}\n\n\
         Metrics: curl -s http://{admin}/metrics | grep mcpgw_\n\
         With the real Python SDK (after scripts/setup-peers):\n\
         .venv-mcp2/bin/python tests/peers/client_v2.py --url http://{gw}/mcp call whoami '{{}}'\n",
        curl("tools/call", Some("whoami"), &format!(r#"{{"name":"whoami",{meta}}}"#)),
        curl("tools/call", Some("report_sales"), &format!(r#"{{"name":"report_sales",{meta}}}"#)),
        curl("tools/call", Some("echo"), &format!(r#"{{"name":"whoami",{meta}}}"#)),
    )
}
