//! A raw HTTP/1.1 client: tests send exactly the bytes they mean (duplicated headers,
//! malformed JSON, chunked bodies) and see exactly what came back, with arrival times.

use crate::wire::{read_body, read_chunk, read_head, Head};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// One request to send.
#[derive(Debug, Clone)]
pub struct Request {
    /// HTTP method.
    pub method: String,
    /// Path and query.
    pub path: String,
    /// Headers in order (duplicates allowed).
    pub headers: Vec<(String, String)>,
    /// Body bytes.
    pub body: Vec<u8>,
    /// Send the body chunked (no content-length) in pieces of this size.
    pub chunked: Option<usize>,
}

/// The MCP headers and `_meta` of a 2026-07-28 request, for building test bodies.
pub const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

impl Request {
    /// A POST with MCP's Accept and JSON content type.
    pub fn post(path: &str, body: impl Into<Vec<u8>>) -> Request {
        Request {
            method: "POST".into(),
            path: path.into(),
            headers: vec![
                ("Content-Type".into(), "application/json".into()),
                (
                    "Accept".into(),
                    "application/json, text/event-stream".into(),
                ),
            ],
            body: body.into(),
            chunked: None,
        }
    }

    /// A request without a body (GET, DELETE, admin POSTs).
    pub fn bare(method: &str, path: &str) -> Request {
        Request {
            method: method.into(),
            path: path.into(),
            headers: vec![],
            body: vec![],
            chunked: None,
        }
    }

    /// The server→client SSE stream of a legacy session.
    pub fn session_stream(sid: &str) -> Request {
        Request::bare("GET", "/mcp")
            .header("Mcp-Session-Id", sid)
            .header("Accept", "text/event-stream")
    }

    /// The DELETE ending a legacy session.
    pub fn session_delete(sid: &str) -> Request {
        Request::bare("DELETE", "/mcp").header("Mcp-Session-Id", sid)
    }

    /// A 2026-07-28 `tools/call` with matching headers.
    pub fn tools_call(path: &str, id: u64, tool: &str) -> Request {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{{}},{META}}}}}"#
        );
        Request::post(path, body)
            .header("MCP-Protocol-Version", "2026-07-28")
            .header("Mcp-Method", "tools/call")
            .header("Mcp-Name", tool)
    }

    /// Adds a header.
    pub fn header(mut self, name: &str, value: &str) -> Request {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sends the body chunked in pieces of `size`.
    pub fn chunked(mut self, size: usize) -> Request {
        self.chunked = Some(size);
        self
    }

    /// The request line and headers as sent (Host added when not given).
    pub fn head_bytes(&self, addr: SocketAddr) -> Vec<u8> {
        let mut out = format!("{} {} HTTP/1.1\r\n", self.method, self.path);
        // A Host given with `header` replaces the default one.
        if !self
            .headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("host"))
        {
            out.push_str(&format!("Host: {addr}\r\n"));
        }
        for (k, v) in &self.headers {
            out.push_str(&format!("{k}: {v}\r\n"));
        }
        match self.chunked {
            Some(_) => out.push_str("Transfer-Encoding: chunked\r\n"),
            None if !self.body.is_empty() || self.method == "POST" => {
                out.push_str(&format!("Content-Length: {}\r\n", self.body.len()))
            }
            None => {}
        }
        out.push_str("\r\n");
        out.into_bytes()
    }

    /// Writes the request to a stream.
    pub async fn write_to(&self, stream: &mut TcpStream, addr: SocketAddr) -> std::io::Result<()> {
        stream.write_all(&self.head_bytes(addr)).await?;
        match self.chunked {
            Some(size) => {
                for piece in self.body.chunks(size.max(1)) {
                    stream
                        .write_all(format!("{:x}\r\n", piece.len()).as_bytes())
                        .await?;
                    stream.write_all(piece).await?;
                    stream.write_all(b"\r\n").await?;
                }
                stream.write_all(b"0\r\n\r\n").await?;
            }
            None => stream.write_all(&self.body).await?,
        }
        stream.flush().await
    }

    /// Sends on a new connection and reads the whole response.
    pub async fn send(&self, addr: SocketAddr) -> Response {
        let mut conn = Connection::open(addr).await;
        conn.send(self).await
    }

    /// Sends on a new connection from the loopback address `from` (another client's peer
    /// address, e.g. 127.0.0.2) and reads the whole response.
    pub async fn send_from(&self, addr: SocketAddr, from: std::net::IpAddr) -> Response {
        let mut conn = Connection::open_from(addr, from).await;
        conn.send(self).await
    }

    /// Sends on a new connection and reads the response head; the body is left to read (a
    /// stream read as it comes).
    pub async fn send_for_head(&self, addr: SocketAddr) -> (Head, BufReader<TcpStream>) {
        let mut stream = TcpStream::connect(addr).await.expect("connect");
        self.write_to(&mut stream, addr)
            .await
            .expect("write request");
        let mut reader = BufReader::new(stream);
        let head = read_head(&mut reader, false)
            .await
            .expect("read head")
            .expect("a response");
        (head, reader)
    }

    /// Sends on a new connection, reads the response until its first whole SSE event, and
    /// closes the connection (a client that goes away mid-answer); returns what it read of
    /// the body.
    pub async fn read_first_event(&self, addr: SocketAddr) -> String {
        let (head, mut reader) = self.send_for_head(addr).await;
        assert!(head.chunked(), "a streamed answer: {head:?}");
        let mut body = String::new();
        while !body.contains("\n\n") {
            let chunk = read_chunk(&mut reader).await.expect("read chunk");
            body.push_str(&String::from_utf8_lossy(
                &chunk.expect("an event before the end"),
            ));
        }
        body
    }

    /// Sends on a new connection and returns the response head plus each body chunk with the
    /// time it arrived (for checking that streams are not buffered).
    pub async fn send_timed(&self, addr: SocketAddr) -> (Head, Vec<(Instant, Vec<u8>)>) {
        self.send_timed_counting(addr, &AtomicUsize::new(0)).await
    }

    /// [`Request::send_timed`], counting the body chunks in `received` as they arrive (for a
    /// test to wait until a stream is open end to end while the request is still going).
    pub async fn send_timed_counting(
        &self,
        addr: SocketAddr,
        received: &AtomicUsize,
    ) -> (Head, Vec<(Instant, Vec<u8>)>) {
        let (head, mut reader) = self.send_for_head(addr).await;
        let mut chunks = Vec::new();
        if head.chunked() {
            while let Some(chunk) = read_chunk(&mut reader).await.expect("read chunk") {
                chunks.push((Instant::now(), chunk));
                received.fetch_add(1, Ordering::SeqCst);
            }
        } else {
            let body = read_body(&mut reader, &head, false)
                .await
                .expect("read body");
            chunks.push((Instant::now(), body));
        }
        (head, chunks)
    }
}

/// A keep-alive connection for several requests.
pub struct Connection {
    addr: SocketAddr,
    reader: BufReader<TcpStream>,
}

impl Connection {
    /// Connects to `addr`.
    pub async fn open(addr: SocketAddr) -> Connection {
        let stream = TcpStream::connect(addr).await.expect("connect to gateway");
        Connection {
            addr,
            reader: BufReader::new(stream),
        }
    }

    /// Connects to `addr` from the loopback address `from`.
    pub async fn open_from(addr: SocketAddr, from: std::net::IpAddr) -> Connection {
        let socket = tokio::net::TcpSocket::new_v4().expect("a socket");
        socket
            .bind(SocketAddr::new(from, 0))
            .expect("bind the client's address");
        let stream = socket.connect(addr).await.expect("connect to gateway");
        Connection {
            addr,
            reader: BufReader::new(stream),
        }
    }

    /// Sends one request and reads its response.
    pub async fn send(&mut self, req: &Request) -> Response {
        req.write_to(self.reader.get_mut(), self.addr)
            .await
            .expect("write request");
        let head = read_head(&mut self.reader, false)
            .await
            .expect("read response head")
            .expect("connection closed before a response");
        let body = read_body(&mut self.reader, &head, false)
            .await
            .expect("read body");
        Response { head, body }
    }
}

/// A whole response.
#[derive(Debug)]
pub struct Response {
    /// Status and headers.
    pub head: Head,
    /// Body bytes (de-chunked).
    pub body: Vec<u8>,
}

impl Response {
    /// HTTP status.
    pub fn status(&self) -> u16 {
        self.head.status
    }

    /// The body as JSON (SSE bodies: the last `data:` line).
    pub fn json(&self) -> serde_json::Value {
        let text = String::from_utf8_lossy(&self.body);
        let json_text = if self
            .head
            .header("content-type")
            .is_some_and(|c| c.starts_with("text/event-stream"))
        {
            text.lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(str::trim)
                .rfind(|d| !d.is_empty())
                .unwrap_or("")
                .to_owned()
        } else {
            text.into_owned()
        };
        serde_json::from_str(&json_text).unwrap_or_else(|e| {
            panic!(
                "not JSON ({e}): status {} body {json_text:?}",
                self.status()
            )
        })
    }

    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The text of the first content item of a tools/call result.
    pub fn tool_text(&self) -> String {
        let v = self.json();
        v["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("not a tool result: {v}"))
            .to_owned()
    }
}
