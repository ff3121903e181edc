//! How a gateway error is written, the one writer of every path: the JSON-RPC error body (the
//! request's id verbatim, `data` with `kind` and `retryAfterMs`), the HTTP status and headers
//! around it (`proxy/respond.rs` writes them to a pingora session), the whole HTTP/1.1 answer
//! for a connection answered before pingora reads it (`listener/`), and the last SSE event of
//! an answer the client already reads (relayed answers, both era bridges).

use super::GatewayError;
use bytes::Bytes;
use mcp_wire::RequestId;
use serde_json::{json, Value};

impl GatewayError {
    /// `Retry-After` in whole seconds (rounded up) and milliseconds, if this error has one.
    fn retry(&self) -> Option<(u64, u64)> {
        let wait = self.retry_after.or_else(|| {
            self.kind
                .retry_after_secs()
                .map(|s| std::time::Duration::from_secs(s.into()))
        })?;
        let ms = wait.as_millis().max(1) as u64;
        Some((ms.div_ceil(1000).max(1), ms))
    }

    /// The JSON-RPC error response body answering the request with this id.
    pub fn body(&self, id: &RequestId) -> Bytes {
        let mut data = self.data.clone();
        data.insert("kind".into(), self.kind.as_str().into());
        if let Some((_, ms)) = self.retry() {
            data.insert("retryAfterMs".into(), ms.into());
        }
        // The id is written verbatim (a 23-digit id must not become a float).
        #[derive(serde::Serialize)]
        struct Envelope<'a> {
            jsonrpc: &'static str,
            id: &'a serde_json::value::RawValue,
            error: Value,
        }
        let body = Envelope {
            jsonrpc: "2.0",
            id: id.raw(),
            error: json!({ "code": self.kind.code(), "message": self.message, "data": data }),
        };
        match serde_json::to_vec(&body) {
            Ok(bytes) => Bytes::from(bytes),
            // Values built from JSON always serialize; were one not to, the client still gets
            // a JSON-RPC error rather than a panic.
            Err(_) => Bytes::from_static(
                br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32019,"message":"Internal gateway error","data":{"kind":"internal"}}}"#,
            ),
        }
    }

    /// The answer to a backend's own request `id` (as the backend sent it) that the gateway
    /// refuses: code and message only (a backend's SDK reads nothing more).
    pub fn to_backend(&self, id: &Value) -> String {
        mcp_wire::messages::error_to_backend(id, self.kind.code(), &self.message)
    }

    /// The error as the last event of an SSE answer the client already reads.
    pub fn event(&self, id: &RequestId) -> Bytes {
        mcp_wire::sse::event(&self.body(id))
    }

    /// The whole HTTP/1.1 answer with `connection: close`, for a connection answered before
    /// pingora reads it (the listener's refusals): [`GatewayError::to_http`] on the wire.
    pub fn to_raw_http(&self, id: &RequestId) -> Vec<u8> {
        let (status, headers, body) = self.to_http(id);
        let reason = http::StatusCode::from_u16(status)
            .ok()
            .and_then(|s| s.canonical_reason())
            .unwrap_or("Error");
        let mut out = format!("HTTP/1.1 {status} {reason}\r\n");
        for (k, v) in headers {
            out.push_str(&format!("{k}: {v}\r\n"));
        }
        out.push_str("connection: close\r\n\r\n");
        let mut bytes = out.into_bytes();
        bytes.extend_from_slice(&body);
        bytes
    }

    /// HTTP status, headers and body of the answer. Headers are (name, value) pairs.
    pub fn to_http(&self, id: &RequestId) -> (u16, Vec<(&'static str, String)>, Bytes) {
        let body = self.body(id);
        let mut headers = vec![
            ("content-type", "application/json".to_owned()),
            ("content-length", body.len().to_string()),
            ("cache-control", "no-store".to_owned()),
        ];
        if let Some((secs, _)) = self.retry() {
            headers.push(("retry-after", secs.to_string()));
        }
        if let Some(challenge) = self.www_authenticate() {
            headers.push(("www-authenticate", challenge));
        }
        if let Some(allow) = self.data.get("allow").and_then(Value::as_str) {
            if self.kind == super::ErrorKind::MethodNotAllowed {
                headers.push(("allow", allow.to_owned()));
            }
        }
        (
            self.status.unwrap_or(self.kind.http_status()),
            headers,
            body,
        )
    }
}

impl GatewayError {
    /// The `WWW-Authenticate` challenge of a 401/403 (RFC 6750, RFC 9728 §5.1), from `data`.
    fn www_authenticate(&self) -> Option<String> {
        let metadata = self.data.get("resourceMetadata")?.as_str()?;
        let quoted = |v: &str| v.replace(['"', '\\'], "");
        let mut out = format!("Bearer resource_metadata=\"{}\"", quoted(metadata));
        for key in ["error", "scope"] {
            if let Some(v) = self.data.get(key).and_then(Value::as_str) {
                out.push_str(&format!(", {key}=\"{}\"", quoted(v)));
            }
        }
        Some(out)
    }
}
