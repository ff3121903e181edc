//! A small HTTP/1.1 client for load generation: one request at a time per connection, bodies
//! by `Content-Length`, chunked, or up to the close (SSE answers end when their stream ends).
//! Connections are either reused from an idle pool or opened per request (`Connection: close`).

use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::time::Instant;

/// Longest response head or chunk-size line accepted.
const MAX_LINE: usize = 64 * 1024;
/// Largest response body accepted.
const MAX_BODY: usize = 16 * 1024 * 1024;

/// A response, reduced to what an MCP client looks at.
#[derive(Debug, Clone)]
pub struct Response {
    /// HTTP status.
    pub status: u16,
    /// `Mcp-Session-Id`, if any.
    pub session_id: Option<String>,
    /// `Content-Type`, if any.
    pub content_type: Option<String>,
    /// The whole body.
    pub body: Vec<u8>,
    /// When the answer was complete for a client: the end of the body, or for an SSE stream
    /// the event carrying the JSON-RPC response (an SDK returns then; the stream may end later).
    pub answered: Instant,
}

/// Why an exchange failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HttpError {
    /// The connection could not be opened (refused, unreachable).
    Connect,
    /// The connection broke, or the answer was not HTTP.
    Broken,
    /// No complete answer within the timeout.
    Timeout,
}

/// A request, serialized once.
#[derive(Debug, Clone)]
pub struct Request {
    bytes: Vec<u8>,
}

impl Request {
    /// `method path` with headers and a body; `Host`, `Content-Length` and, for `close`,
    /// `Connection: close` are added.
    pub fn new(
        method: &str,
        path: &str,
        host: &str,
        headers: &[(&str, &str)],
        body: &[u8],
        close: bool,
    ) -> Request {
        let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\n");
        for (k, v) in headers {
            head.push_str(k);
            head.push_str(": ");
            head.push_str(v);
            head.push_str("\r\n");
        }
        if method != "GET" {
            head.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        if close {
            head.push_str("Connection: close\r\n");
        }
        head.push_str("\r\n");
        let mut bytes = head.into_bytes();
        bytes.extend_from_slice(body);
        Request { bytes }
    }
}

struct Conn {
    io: BufReader<TcpStream>,
}

impl Conn {
    async fn open(addr: SocketAddr) -> Result<Conn, HttpError> {
        let stream = TcpStream::connect(addr)
            .await
            .map_err(|_| HttpError::Connect)?;
        let _ = stream.set_nodelay(true);
        Ok(Conn {
            io: BufReader::new(stream),
        })
    }

    /// Sends the request and reads the answer; also says whether the connection can be reused.
    /// `Err(None)` means the connection was found closed before any answer byte.
    async fn exchange(&mut self, req: &Request) -> Result<(Response, bool), Option<HttpError>> {
        self.io
            .get_mut()
            .write_all(&req.bytes)
            .await
            .map_err(|_| None)?;
        let mut line = Vec::new();
        let n = read_line(&mut self.io, &mut line).await.map_err(|_| None)?;
        if n == 0 {
            return Err(None);
        }
        let status = std::str::from_utf8(&line)
            .ok()
            .and_then(|l| l.split_whitespace().nth(1)?.parse::<u16>().ok())
            .ok_or(Some(HttpError::Broken))?;
        let (mut length, mut chunked, mut keep) = (None, false, true);
        let (mut session_id, mut content_type) = (None, None);
        loop {
            line.clear();
            if read_line(&mut self.io, &mut line).await.map_err(Some)? == 0 {
                return Err(Some(HttpError::Broken));
            }
            let text = String::from_utf8_lossy(&line);
            let text = text.trim_end();
            if text.is_empty() {
                break;
            }
            let Some((name, value)) = text.split_once(':') else {
                return Err(Some(HttpError::Broken));
            };
            let value = value.trim();
            match name.trim().to_ascii_lowercase().as_str() {
                "content-length" => length = value.parse::<usize>().ok(),
                "transfer-encoding" => chunked = value.eq_ignore_ascii_case("chunked"),
                "connection" => keep = !value.eq_ignore_ascii_case("close"),
                "mcp-session-id" => session_id = Some(value.to_owned()),
                "content-type" => content_type = Some(value.to_owned()),
                _ => {}
            }
        }
        let mut body = Vec::new();
        let sse = content_type
            .as_deref()
            .is_some_and(|c| c.starts_with("text/event-stream"));
        let mut answered = None;
        if chunked {
            self.read_chunked(&mut body, sse, &mut answered).await?;
        } else if let Some(len) = length {
            if len > MAX_BODY {
                return Err(Some(HttpError::Broken));
            }
            body.resize(len, 0);
            self.io
                .read_exact(&mut body)
                .await
                .map_err(|_| Some(HttpError::Broken))?;
        } else if !(status == 204 || status == 304 || (100..200).contains(&status)) {
            (&mut self.io)
                .take(MAX_BODY as u64)
                .read_to_end(&mut body)
                .await
                .map_err(|_| Some(HttpError::Broken))?;
            keep = false;
        }
        let response = Response {
            status,
            session_id,
            content_type,
            body,
            answered: answered.unwrap_or_else(Instant::now),
        };
        Ok((response, keep))
    }

    /// Reads a chunked body; for SSE, notes when an event with a JSON-RPC response arrived.
    async fn read_chunked(
        &mut self,
        body: &mut Vec<u8>,
        sse: bool,
        answered: &mut Option<Instant>,
    ) -> Result<(), Option<HttpError>> {
        let mut line = Vec::new();
        loop {
            line.clear();
            read_line(&mut self.io, &mut line).await.map_err(Some)?;
            let size = std::str::from_utf8(&line)
                .ok()
                .and_then(|l| usize::from_str_radix(l.trim().split(';').next()?, 16).ok())
                .ok_or(Some(HttpError::Broken))?;
            if size == 0 {
                // trailers, then the empty line
                loop {
                    line.clear();
                    if read_line(&mut self.io, &mut line).await.map_err(Some)? <= 2 {
                        return Ok(());
                    }
                }
            }
            if body.len() + size > MAX_BODY {
                return Err(Some(HttpError::Broken));
            }
            let start = body.len();
            body.resize(start + size + 2, 0);
            self.io
                .read_exact(&mut body[start..])
                .await
                .map_err(|_| Some(HttpError::Broken))?;
            body.truncate(start + size);
            if sse && answered.is_none() && has_response_event(body) {
                *answered = Some(Instant::now());
            }
        }
    }
}

/// Whether an SSE body holds a complete event that is a JSON-RPC response (not a notification).
fn has_response_event(body: &[u8]) -> bool {
    let text = String::from_utf8_lossy(body).replace("\r\n", "\n");
    let events: Vec<&str> = text.split("\n\n").collect();
    // The last piece is an incomplete event (or empty after the final blank line).
    events[..events.len() - 1].iter().any(|event| {
        event.lines().any(|l| {
            l.strip_prefix("data:").is_some_and(|d| {
                serde_json::from_str::<serde_json::Value>(d.trim())
                    .is_ok_and(|v| v.get("result").is_some() || v.get("error").is_some())
            })
        })
    })
}

/// Reads one line (with its `\n`), bounded; returns its length (0 at EOF).
async fn read_line(io: &mut BufReader<TcpStream>, line: &mut Vec<u8>) -> Result<usize, HttpError> {
    let n = (&mut *io)
        .take(MAX_LINE as u64)
        .read_until(b'\n', line)
        .await
        .map_err(|_| HttpError::Broken)?;
    if n == MAX_LINE && !line.ends_with(b"\n") {
        return Err(HttpError::Broken);
    }
    Ok(n)
}

/// A client for one target address.
pub struct Client {
    addr: SocketAddr,
    reuse: bool,
    timeout: Duration,
    idle: Mutex<Vec<Conn>>,
}

impl Client {
    /// `reuse`: keep connections open between requests (else one connection per request).
    pub fn new(addr: SocketAddr, reuse: bool, timeout: Duration) -> Client {
        Client {
            addr,
            reuse,
            timeout,
            idle: Mutex::new(Vec::new()),
        }
    }

    /// Sends one request and reads its whole answer, within the timeout.
    pub async fn send(&self, req: &Request) -> Result<Response, HttpError> {
        match tokio::time::timeout(self.timeout, self.send_inner(req)).await {
            Ok(result) => result,
            Err(_) => Err(HttpError::Timeout),
        }
    }

    async fn send_inner(&self, req: &Request) -> Result<Response, HttpError> {
        let pooled = if self.reuse {
            self.idle.lock().expect("pool lock").pop()
        } else {
            None
        };
        if let Some(mut conn) = pooled {
            match conn.exchange(req).await {
                Ok((resp, keep)) => return Ok(self.done(conn, resp, keep)),
                Err(Some(e)) => return Err(e),
                // An idle connection the server had closed: a fresh one below.
                Err(None) => {}
            }
        }
        let mut conn = Conn::open(self.addr).await?;
        match conn.exchange(req).await {
            Ok((resp, keep)) => Ok(self.done(conn, resp, keep)),
            Err(e) => Err(e.unwrap_or(HttpError::Broken)),
        }
    }

    fn done(&self, conn: Conn, resp: Response, keep: bool) -> Response {
        if self.reuse && keep {
            self.idle.lock().expect("pool lock").push(conn);
        }
        resp
    }
}

#[cfg(test)]
mod tests {
    use super::has_response_event;

    #[test]
    fn a_response_event_is_seen_once_complete() {
        let progress = "event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\r\n\r\n";
        let result = "event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\r\n\r\n";
        assert!(!has_response_event(progress.as_bytes()));
        assert!(has_response_event(format!("{progress}{result}").as_bytes()));
        let cut = &result[..result.len() - 4];
        assert!(
            !has_response_event(cut.as_bytes()),
            "not before the event ends"
        );
        assert!(has_response_event(b"data: {\"id\":1,\"error\":{}}\n\n"));
    }
}
