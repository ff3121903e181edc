//! Raw HTTP/1.1 client connections for the connection curves: many sockets, each sending one
//! request and then held open (idle, or reading nothing from a held GET stream). Sources
//! spread over 127.0.0.1–127.0.0.8 so 50,000 connections to one port fit in the ephemeral
//! port range (about 28,000 per source address); only the gateway listens, on 127.0.0.1.

use super::fake::{find, header};
use std::net::{Ipv4Addr, SocketAddr};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

/// Opens a connection to `target` from loopback source `127.0.0.(1 + k % 8)`.
pub async fn connect(target: SocketAddr, k: usize) -> std::io::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    let source = Ipv4Addr::new(127, 0, 0, 1 + (k % 8) as u8);
    socket.bind(SocketAddr::from((source, 0)))?;
    let stream = socket.connect(target).await?;
    stream.set_nodelay(true)?;
    Ok(stream)
}

/// A 2026-07-28 `tools/call` of `whoami` (`pad` bytes of argument), as bytes.
pub fn stateless_call(host: &str, id: u64, pad: usize) -> Vec<u8> {
    let body = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"whoami\",\"arguments\":{{\"q\":\"{}\"}},\"_meta\":{{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{{}},\"io.modelcontextprotocol/clientInfo\":{{\"name\":\"mcp-load\",\"version\":\"scale\"}}}}}}}}",
        "x".repeat(pad)
    );
    post(
        host,
        &[
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "whoami"),
        ],
        &body,
    )
}

/// A legacy `tools/call` of `whoami` in session `sid` (`pad` bytes of argument).
pub fn session_call(host: &str, sid: &str, id: u64, pad: usize) -> Vec<u8> {
    let body = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"whoami\",\"arguments\":{{\"q\":\"{}\"}}}}}}",
        "x".repeat(pad)
    );
    post(
        host,
        &[
            ("MCP-Protocol-Version", "2025-11-25"),
            ("Mcp-Session-Id", sid),
        ],
        &body,
    )
}

/// A 2026-07-28 `tools/list`, with a bearer token.
pub fn stateless_list(host: &str, id: u64, bearer: &str) -> Vec<u8> {
    let body = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/list\",\"params\":{{\"_meta\":{{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{{}},\"io.modelcontextprotocol/clientInfo\":{{\"name\":\"mcp-load\",\"version\":\"scale\"}}}}}}}}"
    );
    let auth = format!("Bearer {bearer}");
    post(
        host,
        &[
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/list"),
            ("Authorization", auth.as_str()),
        ],
        &body,
    )
}

/// A 2026-07-28 `subscriptions/listen` for tool list changes (its answer is an event stream
/// held open).
pub fn stateless_listen(host: &str, id: u64) -> Vec<u8> {
    let body = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"subscriptions/listen\",\"params\":{{\"notifications\":{{\"toolsListChanged\":true}},\"_meta\":{{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{{}},\"io.modelcontextprotocol/clientInfo\":{{\"name\":\"mcp-load\",\"version\":\"clients\"}}}}}}}}"
    );
    post(
        host,
        &[
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "subscriptions/listen"),
        ],
        &body,
    )
}

/// Sends `req` and reads the answer's head, then the body until its first whole event (a
/// `data:` line and the blank line after it), leaving the stream open; the status.
pub async fn first_event(stream: &mut TcpStream, req: &[u8]) -> std::io::Result<u16> {
    stream.write_all(req).await?;
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = vec![0u8; 16 * 1024];
    let mut status = None;
    loop {
        if status.is_none() {
            if let Some(end) = find(&buf, b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&buf[..end]).to_string();
                let code = head
                    .split_whitespace()
                    .nth(1)
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(0);
                if code != 200 {
                    return Ok(code);
                }
                status = Some(code);
                buf.drain(..end + 4);
            }
        }
        if status.is_some() {
            if let Some(at) = find(&buf, b"data:") {
                let rest = &buf[at..];
                if find(rest, b"\n\n").is_some() || find(rest, b"\r\n\r\n").is_some() {
                    return Ok(200);
                }
            }
        }
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// A legacy session's standalone GET stream.
pub fn session_get(host: &str, sid: &str) -> Vec<u8> {
    format!(
        "GET /mcp HTTP/1.1\r\nHost: {host}\r\nAccept: text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\nMcp-Session-Id: {sid}\r\n\r\n"
    )
    .into_bytes()
}

fn post(host: &str, headers: &[(&str, &str)], body: &str) -> Vec<u8> {
    let mut out = format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("\r\n");
    out.push_str(body);
    out.into_bytes()
}

/// An answer's status and body length.
pub struct Answer {
    /// HTTP status.
    pub status: u16,
    /// Body bytes read.
    pub body_len: usize,
    /// Whether the body is a JSON-RPC result.
    pub result: bool,
}

/// Sends `req` and reads the answer's head; with `body`, also its `Content-Length` body (or a
/// chunked one, to its end), keeping only its length and the first bytes.
pub async fn exchange(stream: &mut TcpStream, req: &[u8], body: bool) -> std::io::Result<Answer> {
    stream.write_all(req).await?;
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = vec![0u8; 64 * 1024];
    let end = loop {
        if let Some(at) = find(&buf, b"\r\n\r\n") {
            break at + 4;
        }
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    if !body {
        return Ok(Answer {
            status,
            body_len: 0,
            result: false,
        });
    }
    let mut first: Vec<u8> = buf[end..].to_vec();
    let mut got = first.len();
    if let Some(len) = header(&head, "content-length").and_then(|v| v.parse::<usize>().ok()) {
        while got < len {
            let n = stream.read(&mut chunk).await?;
            if n == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            if first.len() < 256 {
                first.extend_from_slice(&chunk[..n.min(256)]);
            }
            got += n;
        }
    } else {
        // chunked (or an event stream) to the terminating chunk
        let mut tail: Vec<u8> = first.clone();
        while !tail.ends_with(b"0\r\n\r\n") {
            let n = stream.read(&mut chunk).await?;
            if n == 0 {
                break;
            }
            if first.len() < 256 {
                first.extend_from_slice(&chunk[..n.min(256)]);
            }
            got += n;
            tail.extend_from_slice(&chunk[..n]);
            let keep = tail.len().saturating_sub(8);
            tail.drain(..keep);
        }
    }
    let result = find(&first, b"\"result\"").is_some();
    Ok(Answer {
        status,
        body_len: got,
        result,
    })
}
