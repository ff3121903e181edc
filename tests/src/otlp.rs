//! An OTLP trace receiver for tests, on 127.0.0.1: `POST /v1/traces` (http/protobuf) or the
//! gRPC `TraceService/Export`; what arrives is decoded with the `opentelemetry-proto` types
//! and kept. The http receiver also takes `POST /v1/logs` in OTLP/HTTP JSON (the audit
//! trail's records) and keeps each log record. The gRPC side is a few lines over `h2` (one unary method: a length-prefixed
//! message in, an empty one and `grpc-status: 0` out), which spares the test crate tonic's
//! server stack.

use bytes::{Buf, Bytes, BytesMut};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A running receiver; stops with the test process.
pub struct OtlpReceiver {
    /// Where it listens.
    pub addr: SocketAddr,
    spans: Arc<Mutex<Vec<Span>>>,
    /// Export requests received.
    exports: Arc<Mutex<usize>>,
    /// OTLP/HTTP JSON log records received (`POST /v1/logs`).
    logs: Logs,
}

type Logs = Arc<Mutex<Vec<serde_json::Value>>>;

impl OtlpReceiver {
    /// An http/protobuf receiver (`POST /v1/traces`).
    pub async fn http() -> OtlpReceiver {
        Self::start(false).await
    }

    /// A gRPC receiver.
    pub async fn grpc() -> OtlpReceiver {
        Self::start(true).await
    }

    async fn start(grpc: bool) -> OtlpReceiver {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let spans = Arc::new(Mutex::new(Vec::new()));
        let exports = Arc::new(Mutex::new(0));
        let logs: Logs = Arc::default();
        let (s, e, l) = (spans.clone(), exports.clone(), logs.clone());
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (s, e, l) = (s.clone(), e.clone(), l.clone());
                tokio::spawn(async move {
                    if grpc {
                        let _ = serve_grpc(stream, s, e).await;
                    } else {
                        let _ = serve_http(stream, s, e, l).await;
                    }
                });
            }
        });
        OtlpReceiver {
            addr,
            spans,
            exports,
            logs,
        }
    }

    /// Every OTLP log record received so far (`POST /v1/logs`, JSON), as sent.
    pub fn logs(&self) -> Vec<serde_json::Value> {
        self.logs.lock().expect("lock").clone()
    }

    /// `http://addr`: the collector endpoint for the gateway's config.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<Span> {
        self.spans.lock().expect("lock").clone()
    }

    /// Export requests received so far.
    pub fn exports(&self) -> usize {
        *self.exports.lock().expect("lock")
    }
}

fn keep(body: &[u8], spans: &Mutex<Vec<Span>>, exports: &Mutex<usize>) -> bool {
    let Ok(request) = ExportTraceServiceRequest::decode(body) else {
        return false;
    };
    let mut kept = spans.lock().expect("lock");
    for resource in request.resource_spans {
        for scope in resource.scope_spans {
            kept.extend(scope.spans);
        }
    }
    *exports.lock().expect("lock") += 1;
    true
}

/// Keeps the log records of an OTLP/HTTP JSON logs export.
fn keep_logs(body: &[u8], logs: &Logs) -> bool {
    let Ok(request) = serde_json::from_slice::<serde_json::Value>(body) else {
        return false;
    };
    let records = request["resourceLogs"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|r| r["scopeLogs"].as_array().into_iter().flatten())
        .flat_map(|s| s["logRecords"].as_array().into_iter().flatten())
        .cloned();
    logs.lock().expect("lock").extend(records);
    true
}

async fn serve_http(
    mut stream: TcpStream,
    spans: Arc<Mutex<Vec<Span>>>,
    exports: Arc<Mutex<usize>>,
    logs: Logs,
) -> std::io::Result<()> {
    let mut buf = BytesMut::new();
    loop {
        // head
        let (head_len, path, content_length) = loop {
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut req = httparse::Request::new(&mut headers);
            if let Ok(httparse::Status::Complete(n)) = req.parse(&buf) {
                let len = req
                    .headers
                    .iter()
                    .find(|h| h.name.eq_ignore_ascii_case("content-length"))
                    .and_then(|h| std::str::from_utf8(h.value).ok()?.parse::<usize>().ok())
                    .unwrap_or(0);
                break (n, req.path.unwrap_or("").to_owned(), len);
            }
            if stream.read_buf(&mut buf).await? == 0 {
                return Ok(());
            }
        };
        buf.advance(head_len);
        while buf.len() < content_length {
            if stream.read_buf(&mut buf).await? == 0 {
                return Ok(());
            }
        }
        let body = buf.split_to(content_length);
        let ok = match path.as_str() {
            "/v1/traces" => keep(&body, &spans, &exports),
            "/v1/logs" => keep_logs(&body, &logs),
            _ => false,
        };
        let status = if ok { "200 OK" } else { "400 Bad Request" };
        let answer = format!(
            "HTTP/1.1 {status}\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n"
        );
        stream.write_all(answer.as_bytes()).await?;
    }
}

async fn serve_grpc(
    stream: TcpStream,
    spans: Arc<Mutex<Vec<Span>>>,
    exports: Arc<Mutex<usize>>,
) -> Result<(), h2::Error> {
    let mut conn = h2::server::handshake(stream).await?;
    while let Some(next) = conn.accept().await {
        let (request, mut respond) = next?;
        let (spans, exports) = (spans.clone(), exports.clone());
        tokio::spawn(async move {
            let path = request.uri().path().to_owned();
            let mut body = request.into_body();
            let mut data = BytesMut::new();
            while let Some(chunk) = body.data().await {
                let Ok(chunk) = chunk else { return };
                let _ = body.flow_control().release_capacity(chunk.len());
                data.extend_from_slice(&chunk);
            }
            // one gRPC message: compressed flag, 4-byte big-endian length, the message
            let ok = path.ends_with(".TraceService/Export")
                && data.len() >= 5
                && data[0] == 0
                && keep(&data[5..], &spans, &exports);
            let head = http::Response::builder()
                .status(200)
                .header("content-type", "application/grpc")
                .body(())
                .expect("response");
            let Ok(mut send) = respond.send_response(head, false) else {
                return;
            };
            let _ = send.send_data(Bytes::from_static(&[0, 0, 0, 0, 0]), false);
            let mut trailers = http::HeaderMap::new();
            let status = if ok { "0" } else { "3" };
            trailers.insert("grpc-status", http::HeaderValue::from_static(status));
            let _ = send.send_trailers(trailers);
        });
    }
    Ok(())
}

/// A span's attribute as a string (string, int, bool or double values).
pub fn attribute(span: &Span, key: &str) -> Option<String> {
    use opentelemetry_proto::tonic::common::v1::any_value::Value;
    let value = span
        .attributes
        .iter()
        .find(|kv| kv.key == key)?
        .value
        .as_ref()?;
    match value.value.as_ref()? {
        Value::StringValue(s) => Some(s.clone()),
        Value::IntValue(i) => Some(i.to_string()),
        Value::BoolValue(b) => Some(b.to_string()),
        Value::DoubleValue(d) => Some(d.to_string()),
        _ => None,
    }
}

/// Lower-case hex of an id.
pub fn hex(id: &[u8]) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}
