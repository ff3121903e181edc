//! One capture record: what a request was and how it ended, with bodies redacted by JSON
//! paths. Pure functions: the proxy hands in what it saw, this returns the JSON line.

use crate::config::CaptureConfig;
use mcp_wire::sse;
use serde_json::{json, Map, Value};
use std::time::{Duration, SystemTime};

/// What replaces a redacted value.
pub const REDACTED: &str = "[redacted]";

/// What the proxy saw of one request, handed to [`record`].
#[derive(Debug, Default)]
pub struct Seen<'a> {
    /// When the request head arrived.
    pub at: Option<SystemTime>,
    /// The route label (its configured path).
    pub route: &'a str,
    /// The session id the client sent, or the gateway gave it (initialize).
    pub session: Option<&'a str>,
    /// The HTTP method.
    pub http_method: &'a str,
    /// `Mcp-Method` / `Mcp-Name` headers, used when no body was recorded.
    pub method_header: Option<&'a str>,
    /// See `method_header`.
    pub name_header: Option<&'a str>,
    /// HTTP status written, if any.
    pub status: Option<u16>,
    /// The outcome label (as in metrics).
    pub outcome: &'a str,
    /// Time from the request head to the end.
    pub latency: Duration,
    /// Request body bytes read from the client.
    pub request_bytes: u64,
    /// Response body bytes sent to the client.
    pub response_bytes: u64,
    /// The backend that served, if any.
    pub backend: Option<&'a str>,
    /// The whole request body, when the gateway held it.
    pub request_body: Option<&'a [u8]>,
    /// The whole response body, when the gateway held it.
    pub response_body: Option<&'a [u8]>,
}

pub use crate::session_hash::hash_session;

/// RFC 3339 UTC time with milliseconds.
fn rfc3339(at: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(at).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Replaces the value at `path` (keys; `*` any key or element) by [`REDACTED`]. A string,
/// number or boolean found where the path goes on into an object or array is replaced too: a
/// client must not dodge the redaction by sending `"params": "<secret>"`.
pub fn redact(value: &mut Value, path: &[String]) {
    let Some((first, rest)) = path.split_first() else {
        *value = Value::String(REDACTED.into());
        return;
    };
    match value {
        Value::Object(map) if first == "*" => map.values_mut().for_each(|v| redact(v, rest)),
        Value::Object(map) => {
            if let Some(v) = map.get_mut(first) {
                redact(v, rest);
            }
        }
        Value::Array(items) if first == "*" => items.iter_mut().for_each(|v| redact(v, rest)),
        Value::Array(items) => {
            if let Some(v) = first.parse::<usize>().ok().and_then(|i| items.get_mut(i)) {
                redact(v, rest);
            }
        }
        Value::String(_) | Value::Number(_) | Value::Bool(_) => {
            *value = Value::String(REDACTED.into());
        }
        Value::Null => {}
    }
}

/// What is redacted whatever `redact` says: the sealed state of a multi round-trip call
/// (`requestState`, sent back in a retry's `params` and given in an `input_required`
/// `result`). It is a bearer credential (anyone holding it can resume the call, on a route
/// without auth anyone at all) and opaque, so a record never needs its bytes.
const ALWAYS_REDACTED: [[&str; 2]; 2] = [["params", "requestState"], ["result", "requestState"]];

/// Every message of `value` redacted: the value itself, or each message of a batch (`[...]`:
/// the paths are paths in one JSON-RPC message).
fn redacted(mut value: Value, config: &CaptureConfig) -> Value {
    let messages: Vec<&mut Value> = match &mut value {
        Value::Array(items) => items.iter_mut().collect(),
        one => vec![one],
    };
    for message in messages {
        for path in &config.redact {
            redact(message, path);
        }
        for [outer, key] in ALWAYS_REDACTED {
            if let Some(v) = message.get_mut(outer).and_then(|o| o.get_mut(key)) {
                *v = Value::String(REDACTED.into());
            }
        }
    }
    value
}

/// A body as recorded: JSON (redacted), the JSON messages of an event stream (redacted), or,
/// for anything the redaction cannot see into, its size only.
pub fn body_value(body: &[u8], config: &CaptureConfig) -> Value {
    if body.len() > config.max_body_bytes {
        return json!({ "omitted": "larger than max-body-bytes", "bytes": body.len() });
    }
    if let Ok(value) = serde_json::from_slice::<Value>(body) {
        return redacted(value, config);
    }
    let is_sse =
        std::str::from_utf8(body).is_ok() && sse::lines(body).any(|l| l.starts_with(b"data:"));
    if !is_sse {
        return json!({ "omitted": "not JSON", "bytes": body.len() });
    }
    let events: Vec<Value> = sse::messages(Some("text/event-stream"), body)
        .iter()
        .filter_map(|d| serde_json::from_slice::<Value>(d).ok())
        .map(|v| redacted(v, config))
        .collect();
    json!({ "events": events })
}

/// The record of one request, as one JSON object.
pub fn record(seen: &Seen<'_>, config: &CaptureConfig) -> Value {
    let mut r = Map::new();
    let at = seen.at.unwrap_or_else(SystemTime::now);
    r.insert("time".into(), rfc3339(at).into());
    r.insert("route".into(), seen.route.into());
    r.insert("session".into(), seen.session.map(hash_session).into());
    r.insert("http".into(), seen.http_method.into());
    let parsed = seen
        .request_body
        .and_then(|b| serde_json::from_slice::<Value>(b).ok());
    let field = |key: &str| parsed.as_ref().and_then(|v| v.get(key)).cloned();
    let params = field("params");
    let name = params
        .as_ref()
        .and_then(|p| p.get("name").or_else(|| p.get("uri")))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .or_else(|| seen.name_header.map(str::to_owned));
    let method = field("method")
        .and_then(|m| m.as_str().map(str::to_owned))
        .or_else(|| seen.method_header.map(str::to_owned));
    r.insert("method".into(), method.into());
    r.insert("name".into(), name.into());
    r.insert("id".into(), field("id").unwrap_or(Value::Null));
    r.insert("status".into(), seen.status.into());
    r.insert("outcome".into(), seen.outcome.into());
    let ms = (seen.latency.as_secs_f64() * 1000.0 * 1000.0).round() / 1000.0;
    r.insert("latency_ms".into(), ms.into());
    r.insert("request_bytes".into(), seen.request_bytes.into());
    r.insert("response_bytes".into(), seen.response_bytes.into());
    r.insert("backend".into(), seen.backend.into());
    if config.bodies {
        if let Some(body) = seen.request_body {
            r.insert("request".into(), body_value(body, config));
        }
        if let Some(body) = seen.response_body {
            r.insert("response".into(), body_value(body, config));
        }
    }
    Value::Object(r)
}
