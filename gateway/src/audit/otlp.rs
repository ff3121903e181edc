//! The OTLP sink: records batched and posted as OTLP/HTTP JSON log records
//! (`POST {collector}/v1/logs`, `application/json`) to the collector the traces use. The
//! opentelemetry crates the gateway links have no logs exporter; the JSON encoding of OTLP is
//! small and stable, so the writer thread posts it itself over a plain connection, with short
//! timeouts. A batch the collector does not take is dropped (counted, `reason="otlp"`).

use super::metrics::AuditMetrics;
use super::Record;
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant, UNIX_EPOCH};

/// Records posted at once.
const BATCH: usize = 256;
/// The connection's and each read's and write's timeout.
const TIMEOUT: Duration = Duration::from_secs(2);
/// After a failed post, batches are dropped (counted) for this long instead of posted: a
/// collector that is down or unreachable must not hold the writer (and the file) back.
const BACKOFF: Duration = Duration::from_secs(5);

/// The batch being gathered, and where it goes.
pub(super) struct Otlp {
    endpoint: String,
    batch: Vec<Value>,
    /// No post before this (the collector failed).
    quiet_until: Option<Instant>,
}

impl Otlp {
    /// Posts to `endpoint` (`http://host:port/…/v1/logs`).
    pub(super) fn new(endpoint: String) -> Otlp {
        Otlp {
            endpoint,
            batch: Vec::new(),
            quiet_until: None,
        }
    }

    /// Adds one record (its JSON line the log record's body); a full batch is posted.
    pub(super) fn push(&mut self, record: &Record, line: &str, metrics: &AuditMetrics) {
        let nanos = record
            .time()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let mut log = json!({
            "timeUnixNano": nanos.to_string(),
            "observedTimeUnixNano": nanos.to_string(),
            "severityNumber": 9,
            "severityText": "INFO",
            "eventName": format!("mcp_gateway.audit.{}", record.event()),
            "body": { "stringValue": line.trim_end() },
            "attributes": [
                { "key": "event", "value": { "stringValue": record.event() } }
            ],
        });
        if let Some(trace) = record.otel_trace() {
            log["traceId"] = trace.into();
        }
        self.batch.push(log);
        if self.batch.len() >= BATCH {
            self.flush(metrics);
        }
    }

    /// Posts what is gathered.
    pub(super) fn flush(&mut self, metrics: &AuditMetrics) {
        if self.batch.is_empty() {
            return;
        }
        let records = std::mem::take(&mut self.batch);
        let count = records.len();
        if self.quiet_until.is_some_and(|t| Instant::now() < t) {
            metrics
                .dropped
                .with_label_values(&["otlp"])
                .inc_by(count as u64);
            return;
        }
        let body = json!({
            "resourceLogs": [{
                "resource": { "attributes": [
                    { "key": "service.name", "value": { "stringValue": "mcp-gateway" } }
                ] },
                "scopeLogs": [{
                    "scope": { "name": "mcp_gateway.audit" },
                    "logRecords": records,
                }],
            }],
        });
        self.quiet_until = None;
        if let Err(e) = post(&self.endpoint, body.to_string().as_bytes()) {
            self.quiet_until = Some(Instant::now() + BACKOFF);
            tracing::warn!(endpoint = %self.endpoint, error = %e, records = count, "audit: the OTLP collector did not take the records");
            metrics
                .dropped
                .with_label_values(&["otlp"])
                .inc_by(count as u64);
        }
    }
}

/// One `POST` of `body` to `endpoint`, answered 2xx.
fn post(endpoint: &str, body: &[u8]) -> Result<(), String> {
    let uri: http::Uri = endpoint.parse().map_err(|e| format!("{e}"))?;
    let host = uri.host().ok_or("no host")?;
    let port = uri.port_u16().unwrap_or(80);
    let addr = (host, port)
        .to_socket_addrs()
        .map_err(|e| e.to_string())?
        .next()
        .ok_or("the host has no address")?;
    let mut conn = TcpStream::connect_timeout(&addr, TIMEOUT).map_err(|e| e.to_string())?;
    conn.set_read_timeout(Some(TIMEOUT))
        .map_err(|e| e.to_string())?;
    conn.set_write_timeout(Some(TIMEOUT))
        .map_err(|e| e.to_string())?;
    let path = uri.path_and_query().map_or("/v1/logs", |p| p.as_str());
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    conn.write_all(head.as_bytes()).map_err(|e| e.to_string())?;
    conn.write_all(body).map_err(|e| e.to_string())?;
    let mut status = [0u8; 12];
    conn.read_exact(&mut status).map_err(|e| e.to_string())?;
    match &status[9..10] {
        b"2" => Ok(()),
        _ => Err(format!(
            "answered {}",
            String::from_utf8_lossy(&status[9..12])
        )),
    }
}
