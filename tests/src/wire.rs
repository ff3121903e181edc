//! HTTP/1.1 framing shared by the mock server and the raw client: reading a head and a body
//! (content-length or chunked) from a buffered stream.

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader};

/// A parsed message head: start line parts and headers (names lower-cased), in order.
#[derive(Debug, Clone, Default)]
pub struct Head {
    /// Request method or empty for responses.
    pub method: String,
    /// Request path or empty for responses.
    pub path: String,
    /// Response status or 0 for requests.
    pub status: u16,
    /// Headers in order, names lower-cased.
    pub headers: Vec<(String, String)>,
}

impl Head {
    /// First value of a header.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Whether the body is chunked.
    pub fn chunked(&self) -> bool {
        self.header("transfer-encoding")
            .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"))
    }

    /// Declared content length.
    pub fn content_length(&self) -> Option<usize> {
        self.header("content-length")
            .and_then(|v| v.trim().parse().ok())
    }
}

/// Reads one head; `None` at a clean end of stream.
pub async fn read_head<R: AsyncRead + Unpin>(
    r: &mut BufReader<R>,
    request: bool,
) -> std::io::Result<Option<Head>> {
    let mut raw = Vec::new();
    loop {
        let n = r.read_until(b'\n', &mut raw).await?;
        if n == 0 {
            return if raw.is_empty() {
                Ok(None)
            } else {
                Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "eof in head",
                ))
            };
        }
        if raw.ends_with(b"\r\n\r\n") || raw == b"\r\n" {
            break;
        }
    }
    let mut headers = [httparse::EMPTY_HEADER; 128];
    let mut head = Head::default();
    let bad =
        |e: httparse::Error| std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string());
    let parsed: Vec<(String, String)> = if request {
        let mut req = httparse::Request::new(&mut headers);
        req.parse(&raw).map_err(bad)?;
        head.method = req.method.unwrap_or_default().to_owned();
        head.path = req.path.unwrap_or_default().to_owned();
        req.headers.iter().map(pair).collect()
    } else {
        let mut resp = httparse::Response::new(&mut headers);
        resp.parse(&raw).map_err(bad)?;
        head.status = resp.code.unwrap_or_default();
        resp.headers.iter().map(pair).collect()
    };
    head.headers = parsed;
    Ok(Some(head))
}

fn pair(h: &httparse::Header<'_>) -> (String, String) {
    (
        h.name.to_ascii_lowercase(),
        String::from_utf8_lossy(h.value).into_owned(),
    )
}

/// Reads the next chunk of a chunked body (`None` after the last chunk).
pub async fn read_chunk<R: AsyncRead + Unpin>(
    r: &mut BufReader<R>,
) -> std::io::Result<Option<Vec<u8>>> {
    let mut line = String::new();
    r.read_line(&mut line).await?;
    let size =
        usize::from_str_radix(line.trim().split(';').next().unwrap_or(""), 16).map_err(|_| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("bad chunk size {line:?}"),
            )
        })?;
    if size == 0 {
        // trailers until the empty line
        loop {
            let mut t = String::new();
            if r.read_line(&mut t).await? == 0 || t == "\r\n" {
                return Ok(None);
            }
        }
    }
    let mut data = vec![0; size + 2];
    r.read_exact(&mut data).await?;
    data.truncate(size);
    Ok(Some(data))
}

/// Reads a whole body as the head describes it (requests without length have none).
pub async fn read_body<R: AsyncRead + Unpin>(
    r: &mut BufReader<R>,
    head: &Head,
    request: bool,
) -> std::io::Result<Vec<u8>> {
    if head.chunked() {
        let mut body = Vec::new();
        while let Some(chunk) = read_chunk(r).await? {
            body.extend_from_slice(&chunk);
        }
        return Ok(body);
    }
    match head.content_length() {
        Some(n) => {
            let mut body = vec![0; n];
            r.read_exact(&mut body).await?;
            Ok(body)
        }
        None if request || head.status == 204 || head.status == 304 => Ok(Vec::new()),
        None => {
            let mut body = Vec::new();
            r.read_to_end(&mut body).await?;
            Ok(body)
        }
    }
}

/// Reads one response head and body within `limit`; `None` when none came whole in time.
pub async fn response<R: AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
    limit: std::time::Duration,
) -> Option<(Head, Vec<u8>)> {
    tokio::time::timeout(limit, async {
        let head = read_head(reader, false).await.ok()??;
        let body = read_body(reader, &head, false).await.ok()?;
        Some((head, body))
    })
    .await
    .ok()?
}

/// A body parsed as JSON, or a panic that shows the body.
pub fn json(body: &[u8]) -> serde_json::Value {
    serde_json::from_slice(body)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(body)))
}

/// The events of an SSE body: each event's `id:` (if any) and its data lines joined by `\n`
/// (events may end in CRLF or LF).
pub fn sse_events(body: &str) -> Vec<(Option<String>, String)> {
    let body = body.replace("\r\n", "\n");
    body.split("\n\n")
        .filter(|e| !e.trim().is_empty())
        .map(|e| {
            let id = e
                .lines()
                .find_map(|l| l.strip_prefix("id: "))
                .map(str::to_owned);
            let data = e
                .lines()
                .filter_map(|l| l.strip_prefix("data: ").or(l.strip_prefix("data:")))
                .collect::<Vec<_>>()
                .join("\n");
            (id, data)
        })
        .collect()
}

/// Whether the peer closed the connection (EOF or reset) within `limit`; what it sends before
/// that is read and dropped.
pub async fn closed_within<R: AsyncRead + Unpin>(
    reader: &mut R,
    limit: std::time::Duration,
) -> bool {
    let mut buf = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        match tokio::time::timeout_at(deadline, reader.read(&mut buf)).await {
            Err(_) => return false,
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) => continue,
        }
    }
}
