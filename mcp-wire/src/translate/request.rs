//! A legacy client's message in a bridged session: what the gateway does with it
//! ([`disposition`]) and, for the requests that go on, the 2026-07-28 request they become
//! ([`modern_request`]): the same message with `params._meta` carrying the envelope built from
//! the stored `initialize` and the session's log level, and the headers a 2026-07-28 server
//! checks against the body.

use super::MODERN_VERSION;
use super::{params_mut, ClientInit, TranslateError};
use super::{META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_LOG_LEVEL, META_PROTOCOL_VERSION};
use crate::headers::{encode_value, MCP_METHOD, MCP_NAME, MCP_PROTOCOL_VERSION};
use serde_json::{Map, Value};

/// What the gateway does with a legacy message in a bridged session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Disposition {
    /// Sent on as a 2026-07-28 request, balanced over the modern backends.
    Forward,
    /// `ping`: answered `{}` by the gateway.
    Ping,
    /// `logging/setLevel`: kept as the session's level (sent as `_meta` logLevel), `{}`.
    SetLevel,
    /// `notifications/cancelled`: the named call in flight is abandoned (its upstream
    /// stream closed, as cancellation is on 2026-07-28); 202.
    Cancelled,
    /// Another notification (`initialized`, `roots/list_changed`, ...): nothing to send to a
    /// stateless backend; 202.
    Acknowledged,
    /// A second `initialize` in a live session: refused (-32600).
    Reinitialize,
    /// `resources/subscribe` (`true`) or `resources/unsubscribe`: kept as the session's
    /// subscriptions, heard on a `subscriptions/listen` stream the gateway holds while the
    /// client's GET stream is open (`super::listen`); `{}`.
    Subscribe(bool),
    /// No faithful translation: refused with -32033 (`not-bridged`).
    Refused,
}

/// The disposition of a message with `method` (`is_request`: it has an id).
pub fn disposition(method: &str, is_request: bool) -> Disposition {
    if !is_request {
        return match method {
            "notifications/cancelled" => Disposition::Cancelled,
            _ => Disposition::Acknowledged,
        };
    }
    match method {
        "ping" => Disposition::Ping,
        "logging/setLevel" => Disposition::SetLevel,
        "initialize" => Disposition::Reinitialize,
        // Tasks are an extension in 2026-07-28 (not core).
        m if m.starts_with("tasks/") => Disposition::Refused,
        "resources/subscribe" => Disposition::Subscribe(true),
        "resources/unsubscribe" => Disposition::Subscribe(false),
        _ => Disposition::Forward,
    }
}

/// The level of a `logging/setLevel` request's params (`{"level": "debug"}`).
pub fn set_level(params: &Value) -> Option<&str> {
    params.get("level")?.as_str()
}

/// The session-level envelope of every bridged request.
#[derive(Debug, Clone, Copy)]
pub struct Envelope<'a> {
    /// The client's stored `initialize`.
    pub init: &'a ClientInit,
    /// The level of the session's last `logging/setLevel`, if any.
    pub log_level: Option<&'a str>,
}

/// A retry of an `input_required` call: a new id, the client's answers, the server's state.
#[derive(Debug, Clone, PartialEq)]
pub struct Retry {
    /// The retry's JSON-RPC id.
    pub id: Value,
    /// `inputResponses`: the client's bare results, by the server's keys.
    pub input_responses: Map<String, Value>,
    /// `requestState` exactly as the server sent it.
    pub request_state: Option<String>,
}

/// A 2026-07-28 request ready to send.
#[derive(Debug, Clone, PartialEq)]
pub struct ModernRequest {
    /// The JSON body.
    pub body: Vec<u8>,
    /// Its method.
    pub method: String,
    /// Headers to set upstream (name, value), values already in their wire form.
    pub headers: Vec<(&'static str, String)>,
}

/// The `params` key `Mcp-Name` mirrors for `method`, if any.
pub fn name_key(method: &str) -> Option<&'static str> {
    match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        _ => None,
    }
}

/// Translates a legacy request into a 2026-07-28 one: `_meta` gets protocolVersion,
/// clientCapabilities, clientInfo and logLevel (replacing any the client put there; its
/// other keys, `progressToken` first of all, stay); a retry also gets its new id,
/// `inputResponses` and `requestState`.
pub fn modern_request(
    msg: &Value,
    env: Envelope<'_>,
    retry: Option<&Retry>,
) -> Result<ModernRequest, TranslateError> {
    let mut msg = match msg {
        Value::Object(m) => m.clone(),
        _ => return Err(TranslateError::Malformed("not a JSON-RPC object".into())),
    };
    let method = match msg.get("method") {
        Some(Value::String(m)) => m.clone(),
        _ => return Err(TranslateError::Malformed("no method".into())),
    };
    if let Some(retry) = retry {
        msg.insert("id".into(), retry.id.clone());
    }
    let params = params_mut(&mut msg)?;
    if let Some(retry) = retry {
        params.insert(
            "inputResponses".into(),
            Value::Object(retry.input_responses.clone()),
        );
        match &retry.request_state {
            Some(state) => params.insert("requestState".into(), Value::String(state.clone())),
            None => params.remove("requestState"),
        };
    }
    let name = name_key(&method)
        .and_then(|k| params.get(k))
        .and_then(Value::as_str)
        .map(str::to_owned);
    stamp_envelope(params, env);
    let headers = modern_headers(&method, name);
    let body = serde_json::to_vec(&Value::Object(msg))
        .map_err(|e| TranslateError::Malformed(e.to_string()))?;
    Ok(ModernRequest {
        body,
        method,
        headers,
    })
}

/// Writes the envelope into `params._meta` (made an object when it is missing or is not
/// one): protocolVersion, clientCapabilities, clientInfo and logLevel, replacing any the
/// client put there; its other keys stay where they are.
fn stamp_envelope(params: &mut Map<String, Value>, env: Envelope<'_>) {
    let slot = params.entry("_meta").or_insert(Value::Null);
    let mut meta = match slot.take() {
        Value::Object(meta) => meta,
        _ => Map::new(),
    };
    meta.insert(META_PROTOCOL_VERSION.into(), MODERN_VERSION.into());
    meta.insert(
        META_CLIENT_CAPABILITIES.into(),
        env.init.capabilities.clone(),
    );
    match &env.init.client_info {
        Some(info) => meta.insert(META_CLIENT_INFO.into(), info.clone()),
        None => meta.remove(META_CLIENT_INFO),
    };
    match env.log_level {
        Some(level) => meta.insert(META_LOG_LEVEL.into(), level.into()),
        None => meta.remove(META_LOG_LEVEL),
    };
    *slot = Value::Object(meta);
}

/// The headers a 2026-07-28 server checks against the body of a `method` request (with
/// `Mcp-Name` when it names a tool, prompt or resource).
fn modern_headers(method: &str, name: Option<String>) -> Vec<(&'static str, String)> {
    let mut headers = vec![
        (MCP_PROTOCOL_VERSION, MODERN_VERSION.to_owned()),
        (MCP_METHOD, encode_value(method)),
    ];
    if let Some(name) = name {
        headers.push((MCP_NAME, encode_value(&name)));
    }
    headers
}

/// The `server/discover` request the gateway sends to learn what it answers `initialize`
/// with, on behalf of the client whose `initialize` it is.
pub fn discover(init: &ClientInit, id: u64) -> ModernRequest {
    const METHOD: &str = "server/discover";
    let mut params = Map::new();
    stamp_envelope(
        &mut params,
        Envelope {
            init,
            log_level: None,
        },
    );
    let mut msg = Map::new();
    msg.insert("jsonrpc".into(), "2.0".into());
    msg.insert("id".into(), id.into());
    msg.insert("method".into(), METHOD.into());
    msg.insert("params".into(), Value::Object(params));
    ModernRequest {
        // a `Value` prints as serde_json writes it, and printing it cannot fail
        body: Value::Object(msg).to_string().into_bytes(),
        method: METHOD.to_owned(),
        headers: modern_headers(METHOD, None),
    }
}
