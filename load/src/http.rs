//! The load generator's HTTP/1.1 client, on hyper's connection-level client
//! (`hyper::client::conn::http1`): one request at a time per connection, connections either
//! reused from an idle pool or opened per request (`Connection: close`). hyper reads bodies by
//! `Content-Length`, chunked or up to the close; for an SSE answer the client notes when the
//! event carrying the JSON-RPC response arrived (an SDK returns then; the stream may end later).
//!
//! Not hyper-util's pooling `Client`: the benchmark must choose new versus reused connections
//! per run and see each body frame as it arrives, which the connection-level API gives directly.

use bytes::{Bytes, BytesMut};
use http::header::{HeaderName, HeaderValue, CONNECTION, CONTENT_LENGTH, CONTENT_TYPE, HOST};
use http::{HeaderMap, Method};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::time::Instant;

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

/// A request, built once and sent as many times as needed (the body is shared, not copied).
#[derive(Debug, Clone)]
pub struct Request {
    method: Method,
    path: String,
    headers: HeaderMap,
    body: Bytes,
}

impl Request {
    /// `method path` with headers and a body; `Host`, `Content-Length` (except on a GET) and,
    /// for `close`, `Connection: close` are added.
    pub fn new(
        method: &str,
        path: &str,
        host: &str,
        headers: &[(&str, &str)],
        body: &[u8],
        close: bool,
    ) -> Request {
        let method = Method::from_bytes(method.as_bytes()).expect("a valid method");
        let mut map = HeaderMap::new();
        map.insert(HOST, value(host));
        for (k, v) in headers {
            let name = HeaderName::from_bytes(k.as_bytes()).expect("a valid header name");
            map.append(name, value(v));
        }
        if method != Method::GET {
            map.insert(CONTENT_LENGTH, HeaderValue::from(body.len()));
        }
        if close {
            map.insert(CONNECTION, HeaderValue::from_static("close"));
        }
        Request {
            method,
            path: path.to_owned(),
            headers: map,
            body: Bytes::copy_from_slice(body),
        }
    }

    fn to_hyper(&self) -> http::Request<Full<Bytes>> {
        let mut req = http::Request::new(Full::new(self.body.clone()));
        *req.method_mut() = self.method.clone();
        *req.uri_mut() = self.path.parse().expect("a valid path");
        *req.headers_mut() = self.headers.clone();
        req
    }
}

fn value(v: &str) -> HeaderValue {
    HeaderValue::from_str(v).expect("a valid header value")
}

/// One HTTP/1.1 connection: hyper's request handle; its connection task runs on the runtime
/// and ends when the handle is dropped or the peer closes.
struct Conn {
    sender: SendRequest<Full<Bytes>>,
}

/// How an exchange on a connection went wrong.
enum Failure {
    /// The request never reached the server, or the server closed the kept-alive connection
    /// before any answer: a fresh connection may try again.
    Stale,
    /// The exchange itself failed.
    Error(HttpError),
}

impl Conn {
    async fn open(addr: SocketAddr) -> Result<Conn, HttpError> {
        let stream = TcpStream::connect(addr)
            .await
            .map_err(|_| HttpError::Connect)?;
        // Without it a request written in more than one segment waits for the peer's delayed
        // ACK (Nagle); hyper writes head and body with one vectored write, but be sure.
        stream.set_nodelay(true).map_err(|_| HttpError::Connect)?;
        let (sender, connection) = http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|_| HttpError::Broken)?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(Conn { sender })
    }

    /// Sends the request and reads the whole answer.
    async fn exchange(&mut self, req: &Request) -> Result<Response, Failure> {
        if self.sender.ready().await.is_err() {
            return Err(Failure::Stale);
        }
        let resp = match self.sender.try_send_request(req.to_hyper()).await {
            Ok(resp) => resp,
            // No answer head: the request was not sent, or the connection was closed or reset
            // under it (a server closing an idle kept-alive connection as it went out).
            Err(mut e) => {
                let unsent = e.take_message().is_some();
                let error = e.error();
                let closed = error.is_incomplete_message()
                    || std::error::Error::source(error)
                        .is_some_and(|cause| cause.is::<std::io::Error>());
                return Err(if unsent || closed {
                    Failure::Stale
                } else {
                    Failure::Error(HttpError::Broken)
                });
            }
        };
        let (head, mut incoming) = resp.into_parts();
        let text = |name: &str| {
            head.headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let content_type = text(CONTENT_TYPE.as_str());
        let session_id = text("mcp-session-id");
        let sse = content_type
            .as_deref()
            .is_some_and(|c| c.starts_with("text/event-stream"));
        let mut body = BytesMut::new();
        let mut answered = None;
        while let Some(frame) = incoming.frame().await {
            let frame = frame.map_err(|_| Failure::Error(HttpError::Broken))?;
            let Ok(data) = frame.into_data() else {
                continue; // trailers
            };
            if body.len() + data.len() > MAX_BODY {
                return Err(Failure::Error(HttpError::Broken));
            }
            body.extend_from_slice(&data);
            if sse && answered.is_none() && has_response_event(&body) {
                answered = Some(Instant::now());
            }
        }
        let response = Response {
            status: head.status.as_u16(),
            session_id,
            content_type,
            body: body.to_vec(),
            answered: answered.unwrap_or_else(Instant::now),
        };
        Ok(response)
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
        while let Some(mut conn) = self.pooled() {
            match conn.exchange(req).await {
                Ok(resp) => return Ok(self.done(conn, resp).await),
                Err(Failure::Error(e)) => return Err(e),
                // An idle connection the server had closed: the next one, or a fresh one.
                Err(Failure::Stale) => {}
            }
        }
        let mut conn = Conn::open(self.addr).await?;
        match conn.exchange(req).await {
            Ok(resp) => Ok(self.done(conn, resp).await),
            Err(Failure::Error(e)) => Err(e),
            Err(Failure::Stale) => Err(HttpError::Broken),
        }
    }

    /// An idle connection not known to be closed, if reusing.
    fn pooled(&self) -> Option<Conn> {
        if !self.reuse {
            return None;
        }
        let mut idle = self.idle.lock().expect("pool lock");
        while let Some(conn) = idle.pop() {
            if !conn.sender.is_closed() {
                return Some(conn);
            }
        }
        None
    }

    /// Keeps the connection for the next request when reusing and it can serve one: hyper
    /// closes it after a `Connection: close` (either side) or a body delimited by the close.
    async fn done(&self, mut conn: Conn, resp: Response) -> Response {
        if self.reuse && conn.sender.ready().await.is_ok() {
            self.idle.lock().expect("pool lock").push(conn);
        }
        resp
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

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

    /// A server answering each connection's requests with `answers` in turn (each written
    /// in the given pieces, `pause` apart), then closing it; returns its address.
    async fn server(answers: Vec<Vec<&'static str>>, pause: Duration) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let mut answers = answers.into_iter();
            while let Ok((mut s, _)) = listener.accept().await {
                let Some(answer) = answers.next() else { return };
                let mut buf = vec![0u8; 4096];
                let _ = s.read(&mut buf).await;
                for piece in answer {
                    s.write_all(piece.as_bytes()).await.unwrap();
                    tokio::time::sleep(pause).await;
                }
            }
        });
        addr
    }

    fn call() -> Request {
        Request::new("POST", "/mcp", "h", &[], b"{}", false)
    }

    #[tokio::test]
    async fn content_length_chunked_and_close_delimited_bodies_are_read() {
        let addr = server(
            vec![
                vec!["HTTP/1.1 200 OK\r\nContent-Length: 2\r\nMcp-Session-Id: s1\r\n\r\n{}"],
                vec!["HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n1\r\nc\r\n0\r\n\r\n"],
                vec!["HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil close"],
            ],
            Duration::ZERO,
        )
        .await;
        let client = Client::new(addr, false, Duration::from_secs(5));
        let r = client.send(&call()).await.unwrap();
        assert_eq!((r.status, r.body.as_slice()), (200, &b"{}"[..]));
        assert_eq!(r.session_id.as_deref(), Some("s1"));
        let r = client.send(&call()).await.unwrap();
        assert_eq!(r.body, b"abc");
        let r = client.send(&call()).await.unwrap();
        assert_eq!(r.body, b"until close");
    }

    #[tokio::test]
    async fn an_sse_answer_counts_when_its_response_event_arrives() {
        let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
        let data = "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n";
        let event: &'static str = format!("{:x}\r\n{data}\r\n", data.len()).leak();
        let addr = server(
            vec![vec![head, event, "0\r\n\r\n"]],
            Duration::from_millis(300),
        )
        .await;
        let client = Client::new(addr, false, Duration::from_secs(5));
        let sent = Instant::now();
        let r = client.send(&call()).await.unwrap();
        let ended = Instant::now();
        assert!(r.answered.duration_since(sent) < Duration::from_millis(500));
        assert!(ended.duration_since(r.answered) >= Duration::from_millis(250));
    }

    #[tokio::test]
    async fn a_closed_idle_connection_is_replaced() {
        let once = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        // Each connection answers one request, then the server closes it.
        let addr = server(vec![vec![once], vec![once]], Duration::ZERO).await;
        let client = Client::new(addr, true, Duration::from_secs(5));
        client.send(&call()).await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        let r = client.send(&call()).await.unwrap();
        assert_eq!(r.body, b"ok");
    }
}
