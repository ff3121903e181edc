//! A modern-only (2026-07-28) mock MCP server, strict like the TypeScript SDK's
//! `createMcpHandler({legacy: 'reject'})`: `initialize` → 400 -32022; every request must carry
//! the `_meta` envelope (-32602 otherwise) and `Mcp-Method` / `Mcp-Name` agreeing with the body
//! (-32020); GET/DELETE → 405. Unlike the SDK it never checks the client's capabilities itself,
//! so a gateway that asks the client anyway is caught.
//!
//! | request | answer |
//! |---|---|
//! | `server/discover` | versions, capabilities (tools, resources, prompts, logging), instructions, serverInfo NAME |
//! | `tools/list` | whoami, progress, log, ask, roots, endless, echo_meta |
//! | `whoami` | NAME |
//! | `progress {steps}` | SSE: `steps` progress notifications on the request's token, then `done` |
//! | `log` | SSE: notifications/message at the levels at or above `_meta` logLevel (none without it) |
//! | `ask {rounds=2}` | `input_required` elicitation rounds, requestState `r<k>|<answers>`; then `answers:a1,a2` |
//! | `roots` | `input_required` roots/list (the capability is not checked); then `roots:<uris>` |
//! | `endless` | `input_required` forever |
//! | `echo_meta` | the request's `_meta` and MCP headers as JSON text |
//! | `fail`, `fail_sse` (not listed) | a result with `isError: true`, as JSON, or as SSE after a progress notification |
//! | `resources/read {uri}` | text `read <uri>` |
//! | `prompts/get {name}` | one user message `prompt <name>` |
//!
//! A mock whose name starts with `slow` answers `tools/list` after 1.5 s (a member whose list
//! is still on its way while something else happens).
//!
//! A mock started with [`ModernMock::per_caller`] is a server whose tools depend on who calls
//! (as behind token exchange): the caller is the `sub` of the request's bearer token (its
//! payload read, not verified: a test's backend trusts the gateway); `tools/list` lists only
//! that caller's tools (none for a caller it was not given, or no token), and calling one of
//! them answers `NAME:TOOL:SUB`. Any other tool is answered as above (a tool the caller may
//! not see: `Unknown tool`).

use crate::wire::{read_body, read_head, Head};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// A running modern-only mock.
pub struct ModernMock {
    /// Where it listens.
    pub addr: SocketAddr,
    bodies: Arc<Mutex<Vec<Value>>>,
    stop: tokio::sync::watch::Sender<bool>,
    /// Connections accepted and not yet closed, plus one while the listener is open.
    open: Arc<std::sync::atomic::AtomicUsize>,
}

/// The tools of each caller (by `sub`), for a mock that lists per caller.
type PerCaller = Arc<HashMap<String, Vec<String>>>;

impl ModernMock {
    /// Starts one on a free port, answering as `name`.
    pub async fn start(name: &str) -> ModernMock {
        Self::spawn(name, None).await
    }

    /// Starts one whose tools depend on the caller (the bearer token's `sub`): `tools` gives
    /// each caller's (see the module's header).
    pub async fn per_caller(name: &str, tools: &[(&str, &[&str])]) -> ModernMock {
        let tools = tools
            .iter()
            .map(|(sub, t)| (sub.to_string(), t.iter().map(|t| t.to_string()).collect()))
            .collect();
        Self::spawn(name, Some(Arc::new(tools))).await
    }

    async fn spawn(name: &str, per_caller: Option<PerCaller>) -> ModernMock {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let bodies: Arc<Mutex<Vec<Value>>> = Default::default();
        let (name, seen) = (Arc::<str>::from(name), bodies.clone());
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let open = Arc::new(std::sync::atomic::AtomicUsize::new(1));
        let counted = open.clone();
        tokio::spawn(async move {
            let mut stop_accepting = stopped.clone();
            loop {
                let accepted = tokio::select! {
                    a = listener.accept() => a,
                    _ = stop_accepting.changed() => break,
                };
                let Ok((stream, _)) = accepted else { continue };
                let _ = stream.set_nodelay(true);
                let (name, seen, mut stopped) = (name.clone(), seen.clone(), stopped.clone());
                let (counted, per_caller) = (counted.clone(), per_caller.clone());
                counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                tokio::spawn(async move {
                    // the connection is closed when `serve` is dropped, at the end of the select
                    tokio::select! {
                        _ = serve(stream, name, per_caller, seen) => {}
                        _ = stopped.changed() => {}
                    }
                    counted.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                });
            }
            drop(listener);
            counted.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        });
        ModernMock {
            addr,
            bodies,
            stop,
            open,
        }
    }

    /// Every request body received, parsed.
    pub fn requests(&self) -> Vec<Value> {
        self.bodies.lock().expect("lock").clone()
    }

    /// Stops listening and drops every open connection (like a killed process).
    pub fn kill(&self) {
        let _ = self.stop.send(true);
    }

    /// Kills the mock and waits until its listener and every connection it had are closed
    /// (see [`super::MockServer::die`] for what that does and does not say about the gateway).
    pub async fn die(&self) {
        self.kill();
        let open = &self.open;
        crate::eventually(
            "the modern mock closed its listener and connections",
            std::time::Duration::from_secs(5),
            || open.load(std::sync::atomic::Ordering::SeqCst) == 0,
        )
        .await;
    }
}

impl Drop for ModernMock {
    fn drop(&mut self) {
        self.kill();
    }
}

async fn serve(
    stream: TcpStream,
    name: Arc<str>,
    per_caller: Option<PerCaller>,
    seen: Arc<Mutex<Vec<Value>>>,
) {
    let mut reader = BufReader::new(stream);
    loop {
        let Ok(Some(head)) = read_head(&mut reader, true).await else {
            return;
        };
        let Ok(body) = read_body(&mut reader, &head, true).await else {
            return;
        };
        let stream = reader.get_mut();
        if head.method != "POST" {
            let b = br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Method not allowed."}}"#;
            if !write(stream, 405, &[("allow", "POST")], b).await {
                return;
            }
            continue;
        }
        let msg: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        seen.lock().expect("lock").push(msg.clone());
        if name.starts_with("slow") && msg["method"] == "tools/list" {
            tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
        }
        let (status, answer) = match answer(&name, per_caller.as_deref(), &head, &msg) {
            Answer::Json(status, v) => (status, v),
            Answer::Accepted => {
                if !write(stream, 202, &[], b"").await {
                    return;
                }
                continue;
            }
            Answer::Sse(events) => {
                if !sse(stream, &events).await {
                    return;
                }
                continue;
            }
        };
        let b = serde_json::to_vec(&answer).expect("json");
        if !write(stream, status, &[("content-type", "application/json")], &b).await {
            return;
        }
    }
}

enum Answer {
    Json(u16, Value),
    Sse(Vec<Value>),
    Accepted,
}

fn error(id: &Value, status: u16, code: i64, message: &str, data: Value) -> Answer {
    Answer::Json(
        status,
        json!({"jsonrpc": "2.0", "id": id,
        "error": {"code": code, "message": message, "data": data}}),
    )
}

fn decode(v: &str) -> String {
    use base64::Engine;
    match v
        .strip_prefix("=?base64?")
        .and_then(|r| r.strip_suffix("?="))
    {
        Some(b) => String::from_utf8(
            base64::engine::general_purpose::STANDARD
                .decode(b)
                .unwrap_or_default(),
        )
        .unwrap_or_default(),
        None => v.to_owned(),
    }
}

/// The `sub` of the request's bearer token (its payload read, not verified).
fn caller(head: &Head) -> Option<String> {
    use base64::Engine;
    let token = head.header("authorization")?.strip_prefix("Bearer ")?;
    let payload = token.split('.').nth(1)?;
    let claims = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    let claims: Value = serde_json::from_slice(&claims).ok()?;
    claims.get("sub")?.as_str().map(str::to_owned)
}

fn answer(
    name: &str,
    per_caller: Option<&HashMap<String, Vec<String>>>,
    head: &Head,
    msg: &Value,
) -> Answer {
    let id = msg.get("id").cloned().unwrap_or(Value::Null);
    let method = msg.get("method").and_then(Value::as_str).unwrap_or("");
    let params = msg.get("params").cloned().unwrap_or(json!({}));
    let meta = params.get("_meta").cloned().unwrap_or(json!({}));
    let version = meta
        .get("io.modelcontextprotocol/protocolVersion")
        .and_then(Value::as_str);
    if version.is_none() && head.header("mcp-protocol-version").is_none() {
        // a legacy message: rejected as the TypeScript SDK's strict mode does
        if id.is_null() {
            return Answer::Accepted;
        }
        let requested = params
            .get("protocolVersion")
            .cloned()
            .unwrap_or(Value::Null);
        return error(
            &id,
            400,
            -32022,
            &format!("Unsupported protocol version: {requested}"),
            json!({"supported": ["2026-07-28"], "requested": requested}),
        );
    }
    if version != Some("2026-07-28")
        || meta
            .get("io.modelcontextprotocol/clientCapabilities")
            .is_none()
    {
        return error(
            &id,
            400,
            -32602,
            "Invalid params: missing _meta envelope",
            json!({}),
        );
    }
    if head.header("mcp-protocol-version") != Some("2026-07-28") {
        return error(
            &id,
            400,
            -32020,
            "MCP-Protocol-Version header mismatch",
            json!({}),
        );
    }
    if head.header("mcp-method").map(decode).as_deref() != Some(method) {
        return error(&id, 400, -32020, "Mcp-Method header mismatch", json!({}));
    }
    let named = match method {
        "tools/call" | "prompts/get" => params.get("name"),
        "resources/read" => params.get("uri"),
        _ => None,
    };
    if let Some(n) = named.and_then(Value::as_str) {
        if head.header("mcp-name").map(decode).as_deref() != Some(n) {
            return error(&id, 400, -32020, "Mcp-Name header mismatch", json!({}));
        }
    }
    if id.is_null() {
        return Answer::Accepted;
    }
    let server_info =
        json!({"io.modelcontextprotocol/serverInfo": {"name": name, "version": "mock"}});
    let ok = |mut result: Value| {
        result["resultType"] = "complete".into();
        result["_meta"] = server_info.clone();
        Answer::Json(200, json!({"jsonrpc": "2.0", "id": id, "result": result}))
    };
    let text = |t: &str| json!({"content": [{"type": "text", "text": t}], "isError": false});
    let input_required = |requests: Value, state: String| {
        Answer::Json(
            200,
            json!({"jsonrpc": "2.0", "id": id, "result": {
            "resultType": "input_required", "inputRequests": requests, "requestState": state}}),
        )
    };
    // a mock listing per caller: the caller's tools, and calls of them
    let sub = caller(head).unwrap_or_default();
    let theirs = per_caller.map(|p| p.get(&sub).map_or(&[][..], Vec::as_slice));
    if let Some(theirs) = theirs {
        let tool = params.get("name").and_then(Value::as_str);
        match (method, tool) {
            ("tools/list", _) => {
                let tools: Vec<Value> = theirs
                    .iter()
                    .map(|t| json!({"name": t, "inputSchema": {"type": "object"}}))
                    .collect();
                return ok(json!({"tools": tools, "ttlMs": 0, "cacheScope": "private"}));
            }
            ("tools/call", Some(t)) if theirs.iter().any(|own| own == t) => {
                return ok(text(&format!("{name}:{t}:{sub}")));
            }
            _ => {}
        }
    }
    match method {
        "server/discover" => ok(json!({"supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}, "resources": {}, "prompts": {}, "logging": {}},
            "instructions": format!("mock {name}"), "ttlMs": 0, "cacheScope": "private"})),
        "tools/list" => {
            let tools: Vec<Value> = [
                "whoami",
                "progress",
                "log",
                "ask",
                "roots",
                "endless",
                "echo_meta",
            ]
            .iter()
            .map(|t| json!({"name": t, "inputSchema": {"type": "object"}}))
            .collect();
            ok(json!({"tools": tools, "ttlMs": 0, "cacheScope": "private"}))
        }
        "resources/read" => {
            let uri = params.get("uri").and_then(Value::as_str).unwrap_or("");
            ok(
                json!({"contents": [{"uri": uri, "text": format!("read {uri}")}], "ttlMs": 0, "cacheScope": "private"}),
            )
        }
        "prompts/get" => {
            let n = params.get("name").and_then(Value::as_str).unwrap_or("");
            ok(
                json!({"messages": [{"role": "user", "content": {"type": "text", "text": format!("prompt {n}")}}]}),
            )
        }
        "tools/call" => {
            let tool = params.get("name").and_then(Value::as_str).unwrap_or("");
            let args = params.get("arguments").cloned().unwrap_or(json!({}));
            let state = params
                .get("requestState")
                .and_then(Value::as_str)
                .map(str::to_owned);
            let responses = params.get("inputResponses").cloned().unwrap_or(json!({}));
            match tool {
                "whoami" => ok(text(name)),
                // not listed: a tool result that is a tool error, as JSON and as SSE after a
                // progress notification (the gateway counts both as `tool-error`)
                "fail" => {
                    ok(json!({"content": [{"type": "text", "text": "failed"}], "isError": true}))
                }
                "fail_sse" => {
                    let Answer::Json(_, done) = ok(
                        json!({"content": [{"type": "text", "text": "failed"}], "isError": true}),
                    ) else {
                        unreachable!()
                    };
                    let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress",
                        "params": {"progressToken": 1, "progress": 1, "total": 1}});
                    Answer::Sse(vec![progress, done])
                }
                // not listed: an event stream that ends (well framed) before its response
                "sse_without_result" => {
                    let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress",
                        "params": {"progressToken": 1, "progress": 1, "total": 1}});
                    Answer::Sse(vec![progress])
                }
                "echo_meta" => {
                    let headers: serde_json::Map<String, Value> =
                        ["mcp-protocol-version", "mcp-method", "mcp-name"]
                            .iter()
                            .filter_map(|h| head.header(h).map(|v| (h.to_string(), Value::from(v))))
                            .collect();
                    ok(text(&json!({"meta": meta, "headers": headers}).to_string()))
                }
                "progress" => {
                    let steps = args.get("steps").and_then(Value::as_u64).unwrap_or(3);
                    let token = meta.get("progressToken").cloned();
                    let mut events: Vec<Value> = match token {
                        Some(t) => (1..=steps)
                            .map(|i| {
                                json!({"jsonrpc": "2.0", "method": "notifications/progress",
                            "params": {"progressToken": t, "progress": i, "total": steps}})
                            })
                            .collect(),
                        None => vec![],
                    };
                    let Answer::Json(_, done) = ok(text(&format!("done:{steps}"))) else {
                        unreachable!()
                    };
                    events.push(done);
                    Answer::Sse(events)
                }
                "log" => {
                    const LEVELS: [&str; 8] = [
                        "debug",
                        "info",
                        "notice",
                        "warning",
                        "error",
                        "critical",
                        "alert",
                        "emergency",
                    ];
                    let floor = meta
                        .get("io.modelcontextprotocol/logLevel")
                        .and_then(Value::as_str);
                    let mut events: Vec<Value> =
                        match floor.and_then(|f| LEVELS.iter().position(|l| *l == f)) {
                            Some(at) => ["debug", "info", "warning", "error"]
                                .iter()
                                .filter(|l| LEVELS.iter().position(|x| x == *l).unwrap_or(0) >= at)
                                .map(|l| {
                                    json!({"jsonrpc": "2.0", "method": "notifications/message",
                                "params": {"level": l, "data": format!("log at {l}")}})
                                })
                                .collect(),
                            None => vec![],
                        };
                    let Answer::Json(_, done) = ok(text("logged")) else {
                        unreachable!()
                    };
                    events.push(done);
                    Answer::Sse(events)
                }
                "ask" => {
                    let rounds = args.get("rounds").and_then(Value::as_u64).unwrap_or(2) as usize;
                    let mut answers: Vec<String> = Vec::new();
                    if let Some(s) = &state {
                        let (k, got) = s
                            .trim_start_matches('r')
                            .split_once('|')
                            .unwrap_or(("0", ""));
                        answers = got
                            .split(',')
                            .filter(|a| !a.is_empty())
                            .map(str::to_owned)
                            .collect();
                        let a = &responses[format!("q{k}")];
                        let given = a["content"]["answer"]
                            .as_str()
                            .map(str::to_owned)
                            .or_else(|| a["action"].as_str().map(str::to_owned))
                            .unwrap_or_else(|| "missing".into());
                        answers.push(given);
                    }
                    if answers.len() >= rounds {
                        return ok(text(&format!("answers:{}", answers.join(","))));
                    }
                    let k = answers.len() + 1;
                    input_required(
                        json!({format!("q{k}"): {"method": "elicitation/create", "params": {
                        "mode": "form", "message": format!("question {k}"),
                        "requestedSchema": {"type": "object", "properties": {"answer": {"type": "string"}}}}}}),
                        format!("r{k}|{}", answers.join(",")),
                    )
                }
                "roots" => match responses
                    .get("roots")
                    .and_then(|r| r.get("roots"))
                    .and_then(Value::as_array)
                {
                    Some(roots) => {
                        let uris: Vec<&str> =
                            roots.iter().filter_map(|r| r["uri"].as_str()).collect();
                        ok(text(&format!("roots:{}", uris.join(","))))
                    }
                    None => input_required(
                        json!({"roots": {"method": "roots/list", "params": {}}}),
                        "roots".into(),
                    ),
                },
                "endless" => {
                    let n = state
                        .as_deref()
                        .and_then(|s| s.strip_prefix("e"))
                        .and_then(|n| n.parse::<u64>().ok())
                        .unwrap_or(0)
                        + 1;
                    input_required(
                        json!({format!("e{n}"): {"method": "elicitation/create", "params": {
                        "message": format!("round {n}"), "requestedSchema": {"type": "object", "properties": {}}}}}),
                        format!("e{n}"),
                    )
                }
                _ => error(
                    &id,
                    200,
                    -32602,
                    &format!("Unknown tool: {tool}"),
                    json!({}),
                ),
            }
        }
        _ => error(
            &id,
            404,
            -32601,
            &format!("Method not found: {method}"),
            json!({}),
        ),
    }
}

async fn write(stream: &mut TcpStream, status: u16, headers: &[(&str, &str)], body: &[u8]) -> bool {
    let mut head = format!(
        "HTTP/1.1 {status} Mock\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await.is_ok() && stream.write_all(body).await.is_ok()
}

async fn sse(stream: &mut TcpStream, events: &[Value]) -> bool {
    let head =
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
    if stream.write_all(head.as_bytes()).await.is_err() {
        return false;
    }
    for e in events {
        let data = format!("event: message\r\ndata: {e}\r\n\r\n");
        let framed = format!("{:x}\r\n{data}\r\n", data.len());
        if stream.write_all(framed.as_bytes()).await.is_err() {
            return false;
        }
        // events written apart, as a server producing them over time does
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    stream.write_all(b"0\r\n\r\n").await.is_ok()
}
