//! Multi round-trip requests for a legacy client: an `input_required` result becomes one real
//! server→client request per `inputRequests` entry (a legacy client answers those on its
//! session), the capability each needs is checked against the client's `initialize` first,
//! and the client's responses become the retry's `inputResponses`, with `requestState` echoed
//! exactly as the server sent it.

use super::{ClientInit, TranslateError};
use serde_json::{json, Map, Value};

/// An `input_required` result.
#[derive(Debug, Clone, PartialEq)]
pub struct InputRequired {
    /// What the server asks, in key order.
    pub requests: Vec<InputRequest>,
    /// `requestState`, to echo on the retry exactly as sent.
    pub request_state: Option<String>,
}

/// One entry of `inputRequests`.
#[derive(Debug, Clone, PartialEq)]
pub struct InputRequest {
    /// The server's key for it (the key of the answer in `inputResponses`).
    pub key: String,
    /// `elicitation/create`, `sampling/createMessage` or `roots/list`.
    pub method: String,
    /// Its params (an object).
    pub params: Value,
}

/// Reads an `input_required` result: at least one of `inputRequests` and `requestState`,
/// every request with a method and object params.
pub fn input_required(result: &Value) -> Result<InputRequired, TranslateError> {
    let bad = |d: &str| TranslateError::Malformed(format!("input_required result: {d}"));
    let request_state = match result.get("requestState") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(bad("requestState is not a string")),
    };
    let mut requests = Vec::new();
    match result.get("inputRequests") {
        None | Some(Value::Null) => {}
        Some(Value::Object(entries)) => {
            for (key, entry) in entries {
                let method = entry
                    .get("method")
                    .and_then(Value::as_str)
                    .ok_or_else(|| bad(&format!("inputRequests.{key} has no method")))?;
                let params = match entry.get("params") {
                    None | Some(Value::Null) => Value::Object(Map::new()),
                    Some(p @ Value::Object(_)) => p.clone(),
                    Some(_) => return Err(bad(&format!("inputRequests.{key}.params"))),
                };
                requests.push(InputRequest {
                    key: key.clone(),
                    method: method.to_owned(),
                    params,
                });
            }
        }
        Some(_) => return Err(bad("inputRequests is not an object")),
    }
    if requests.is_empty() && request_state.is_none() {
        return Err(bad("neither inputRequests nor requestState"));
    }
    Ok(InputRequired {
        requests,
        request_state,
    })
}

/// The client capability an input request needs, as the path into `capabilities` and the
/// `requiredCapabilities` object a -32021 names; `Err` for a method no legacy client serves.
pub fn required_capability(
    req: &InputRequest,
) -> Result<(Vec<&'static str>, Value), TranslateError> {
    let has = |k: &str| req.params.get(k).is_some_and(|v| !v.is_null());
    Ok(match req.method.as_str() {
        "elicitation/create" => {
            if req.params.get("mode").and_then(Value::as_str) == Some("url") {
                (
                    vec!["elicitation", "url"],
                    json!({"elicitation": {"url": {}}}),
                )
            } else {
                (vec!["elicitation"], json!({"elicitation": {}}))
            }
        }
        "sampling/createMessage" if has("tools") || has("toolChoice") => (
            vec!["sampling", "tools"],
            json!({"sampling": {"tools": {}}}),
        ),
        "sampling/createMessage" => (vec!["sampling"], json!({"sampling": {}})),
        "roots/list" => (vec!["roots"], json!({"roots": {}})),
        other => {
            return Err(TranslateError::Malformed(format!(
                "input request `{other}` is not one a client answers"
            )))
        }
    })
}

/// The first request of `input` whose capability the client did not declare: its method and
/// the `requiredCapabilities` to name. A malformed request is an error.
pub fn missing_capability(
    init: &ClientInit,
    input: &InputRequired,
) -> Result<Option<(String, Value)>, TranslateError> {
    for req in &input.requests {
        let (path, required) = required_capability(req)?;
        if !init.declares(&path) {
            return Ok(Some((req.method.clone(), required)));
        }
    }
    Ok(None)
}

/// The server→client JSON-RPC request a legacy client gets for `req`, with the gateway's `id`.
/// A URL-mode elicitation gets the `elicitationId` 2025-11-25 requires (2026-07-28 has none):
/// `elicitation_id`.
pub fn server_request(req: &InputRequest, id: &str, elicitation_id: &str) -> Value {
    let mut params = req.params.clone();
    if req.method == "elicitation/create"
        && params.get("mode").and_then(Value::as_str) == Some("url")
        && params.get("elicitationId").is_none()
    {
        if let Some(p) = params.as_object_mut() {
            p.insert("elicitationId".into(), elicitation_id.into());
        }
    }
    json!({"jsonrpc": "2.0", "id": id, "method": req.method, "params": params})
}

/// What a client's JSON-RPC response to a server→client request says.
#[derive(Debug, Clone, PartialEq)]
pub enum ClientAnswer {
    /// A result: the bare value for `inputResponses`.
    Result(Value),
    /// A JSON-RPC error (the client refused or failed): its error object.
    Error(Value),
}

/// Reads a client's response message (`{"jsonrpc", "id", "result" | "error"}`): its id and
/// answer; `None` when it is not a response.
pub fn client_answer(msg: &Value) -> Option<(Value, ClientAnswer)> {
    let id = msg.get("id")?.clone();
    if msg.get("method").is_some() {
        return None;
    }
    if let Some(r) = msg.get("result") {
        return Some((id, ClientAnswer::Result(r.clone())));
    }
    msg.get("error")
        .map(|e| (id, ClientAnswer::Error(e.clone())))
}
