//! A synthetic MCP backend in this process for the curves the mock cannot draw: `tools/list`
//! of N tools, `tools/call` answers of N bytes, any number of listening ports (a pool of
//! 10,000 backends). HTTP/1.1 with keep-alive and `Content-Length` bodies only; a 2026-07-28
//! server, or with `legacy` a 2025-11-25 one keeping (unchecked) sessions, each `initialize`
//! given its own id.
//!
//! Held streams: a GET (a legacy session's standalone stream) is answered with an event
//! stream's head and then never written to; a 2026-07-28 `subscriptions/listen` with a chunked
//! event stream carrying one event (the acknowledgement of its filter), then held open without
//! a keep-alive, until the client goes.

use serde::Deserialize;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

/// What the fake answers.
pub struct Shape {
    /// 2025-11-25 with sessions (else 2026-07-28 stateless).
    pub legacy: bool,
    /// Tools in `tools/list` (`tool_0`, `admin_1`, ... every other one `admin_`).
    pub tools: usize,
    /// Bytes of text in each `tools/call` answer.
    pub answer_bytes: usize,
}

/// Running fake backends; dropped, they stop.
pub struct Fake {
    /// Their addresses, one per port.
    pub addrs: Vec<SocketAddr>,
    _tasks: JoinSet<()>,
}

struct Prepared {
    legacy: bool,
    /// `tools/list` result (the `"result":` value).
    list: Vec<u8>,
    /// `tools/call` result.
    call: Vec<u8>,
    /// Sessions handed out (legacy).
    sessions: AtomicU64,
}

/// Starts `ports` listeners on 127.0.0.1 answering as `shape` says.
pub async fn start(ports: usize, shape: Shape) -> Fake {
    let tools: Vec<serde_json::Value> = (0..shape.tools)
        .map(|i| {
            let name = if i % 2 == 1 {
                format!("admin_{i}")
            } else {
                format!("tool_{i}")
            };
            serde_json::json!({"name": name, "description": "a tool of the scale benchmark",
                "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}}})
        })
        .collect();
    let mut list = serde_json::json!({"tools": tools});
    let mut call = serde_json::json!({"content": [{"type": "text",
        "text": "x".repeat(shape.answer_bytes)}], "isError": false});
    if !shape.legacy {
        for r in [&mut list, &mut call] {
            r["resultType"] = "complete".into();
        }
        list["ttlMs"] = 0.into();
        list["cacheScope"] = "private".into();
    }
    let prepared = Arc::new(Prepared {
        legacy: shape.legacy,
        list: serde_json::to_vec(&list).expect("json"),
        call: serde_json::to_vec(&call).expect("json"),
        sessions: AtomicU64::new(0),
    });
    let mut tasks = JoinSet::new();
    let mut addrs = Vec::new();
    for _ in 0..ports {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind a fake");
        addrs.push(listener.local_addr().expect("addr"));
        let prepared = prepared.clone();
        tasks.spawn(async move {
            loop {
                match listener.accept().await {
                    Ok((stream, _)) => {
                        let _ = stream.set_nodelay(true);
                        tokio::spawn(serve(stream, prepared.clone()));
                    }
                    // out of descriptors (10,000 health probes at once): the next one
                    Err(_) => tokio::time::sleep(std::time::Duration::from_millis(10)).await,
                }
            }
        });
    }
    Fake {
        addrs,
        _tasks: tasks,
    }
}

#[derive(Deserialize)]
struct Envelope {
    #[serde(default)]
    id: Option<serde_json::Value>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    #[allow(dead_code)]
    params: Option<serde::de::IgnoredAny>,
}

async fn serve(mut stream: TcpStream, p: Arc<Prepared>) {
    let mut buf: Vec<u8> = Vec::with_capacity(8192);
    loop {
        // the head
        let end = loop {
            if let Some(at) = find(&buf, b"\r\n\r\n") {
                break at + 4;
            }
            let mut chunk = [0u8; 8192];
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        };
        let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
        let length = header(&head, "content-length")
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or(0);
        let has_session = header(&head, "mcp-session-id").is_some();
        let is_get = head.starts_with("get ");
        while buf.len() < end + length {
            let mut chunk = vec![0u8; (end + length - buf.len()).min(1 << 20)];
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        let body = &buf[end..end + length];
        let answer = if is_get {
            // a standalone stream: held open, never written to
            Answer::Hold(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n\r\n".to_vec())
        } else {
            respond(&p, body, has_session)
        };
        buf.drain(..end + length);
        match answer {
            Answer::Whole(bytes) => {
                if stream.write_all(&bytes).await.is_err() {
                    return;
                }
            }
            Answer::Hold(bytes) => {
                if stream.write_all(&bytes).await.is_err() {
                    return;
                }
                // until the client (or the proxy) goes; nothing it sends is answered
                let mut sink = [0u8; 1024];
                while matches!(stream.read(&mut sink).await, Ok(n) if n > 0) {}
                return;
            }
        }
    }
}

/// What the fake writes for a request.
enum Answer {
    /// A whole answer; the connection stays open for the next request.
    Whole(Vec<u8>),
    /// The start of a stream, then held until the client goes.
    Hold(Vec<u8>),
}

fn respond(p: &Prepared, body: &[u8], has_session: bool) -> Answer {
    let Ok(env) = serde_json::from_slice::<Envelope>(body) else {
        return Answer::Whole(http(
            400,
            &[],
            br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#,
        ));
    };
    let method = env.method.unwrap_or_default();
    let Some(id) = env.id.filter(|id| !id.is_null()) else {
        return Answer::Whole(http(202, &[], b""));
    };
    let id = serde_json::to_string(&id).expect("json");
    if !p.legacy && method == "subscriptions/listen" {
        return Answer::Hold(listen_stream(&id));
    }
    Answer::Whole(answer(p, &method, &id, has_session))
}

/// The head of a `subscriptions/listen` answer and its first event, the acknowledgement (of no
/// notifications: the fake has none to send), as one chunk of a chunked event stream.
fn listen_stream(id: &str) -> Vec<u8> {
    let ack = format!(
        "{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/subscriptions/acknowledged\",\"params\":{{\"notifications\":{{}},\"_meta\":{{\"io.modelcontextprotocol/subscriptionId\":{id}}}}}}}"
    );
    let event = format!("event: message\r\ndata: {ack}\r\n\r\n");
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n\
         transfer-encoding: chunked\r\n\r\n{:x}\r\n{event}\r\n",
        event.len()
    )
    .into_bytes()
}

fn answer(p: &Prepared, method: &str, id: &str, has_session: bool) -> Vec<u8> {
    let result = |r: &[u8], extra: &[(&str, &str)]| {
        let mut out = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":").into_bytes();
        out.extend_from_slice(r);
        out.push(b'}');
        http(200, extra, &out)
    };
    if p.legacy {
        if method == "initialize" {
            let r = br#"{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"fake","version":"scale"}}"#;
            let sid = format!(
                "fake-session-{}",
                p.sessions.fetch_add(1, Ordering::Relaxed)
            );
            return result(r, &[("mcp-session-id", sid.as_str())]);
        }
        if !has_session {
            return http(400, &[], br#"{"jsonrpc":"2.0","id":"server-error","error":{"code":-32600,"message":"Bad Request: Missing session ID"}}"#);
        }
    } else if method == "server/discover" {
        let r = br#"{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"resultType":"complete","ttlMs":0,"cacheScope":"private","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"fake","version":"scale"}}}"#;
        return result(r, &[]);
    }
    match method {
        "tools/list" => result(&p.list, &[]),
        "tools/call" => result(&p.call, &[]),
        _ => result(b"{}", &[]),
    }
}

fn http(status: u16, extra: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let reason = match status {
        200 => "OK",
        202 => "Accepted",
        _ => "Bad Request",
    };
    let mut out = format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (k, v) in extra {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("\r\n");
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

/// The value of header `name` (lowercase) in a lowercased head.
pub fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.split("\r\n").find_map(|line| {
        let (k, v) = line.split_once(':')?;
        (k.trim() == name).then(|| v.trim())
    })
}

/// Where `needle` first occurs in `hay`.
pub fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}
