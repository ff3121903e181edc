//! Whether a mutator's payload is one the event may carry on: what the gateway decided on
//! (the name a call was authorized for, the URI, the protocol `_meta`) and what later steps
//! read (a result's `resultType`, its cache hints, a list's cursor) never change, and the
//! shape stays the event's. Pure.

use super::types::Phase;
use serde_json::Value;

/// Request `params` keys a mutation may not change: authorization and routing read them, and
/// the backend checks `_meta` against the request's headers.
const FIXED_PARAMS: [&str; 3] = ["name", "uri", "_meta"];

/// Result keys a mutation may not change: the client and the cache read them (a `cacheScope`
/// made `public` would share a caller's result), and a list's cursor is the backend's.
const FIXED_RESULT: [&str; 5] = ["resultType", "cacheScope", "ttlMs", "nextCursor", "_meta"];

/// The array a result of `event` must carry, if the gateway knows the event.
fn result_array(event: &str) -> Option<&'static str> {
    Some(match event {
        "tools/call" => "content",
        "tools/list" => "tools",
        "prompts/list" => "prompts",
        "prompts/get" => "messages",
        "resources/list" => "resources",
        "resources/templates/list" => "resourceTemplates",
        "resources/read" => "contents",
        _ => return None,
    })
}

/// `Ok` when `changed` may stand for `original` (the `params` of a request, the `result` of
/// an answer, of `event`); `Err` says why not, for a person.
pub fn mutation(
    event: &str,
    phase: Phase,
    original: &Value,
    changed: &Value,
) -> Result<(), String> {
    let new = changed.as_object().ok_or_else(|| {
        format!(
            "the changed payload of a {event} {} is not an object",
            phase.as_str()
        )
    })?;
    let old = original.as_object();
    let fixed: &[&str] = match phase {
        Phase::Request => &FIXED_PARAMS,
        Phase::Response => &FIXED_RESULT,
    };
    for key in fixed {
        if old.and_then(|o| o.get(*key)) != new.get(*key) {
            return Err(format!(
                "it changed `{key}`, which a {event} {} may not change",
                phase.as_str()
            ));
        }
    }
    match phase {
        Phase::Request => {
            if new.get("arguments").is_some_and(|a| !a.is_object()) {
                return Err("`arguments` is not an object".to_owned());
            }
        }
        Phase::Response => {
            if let Some(key) = result_array(event) {
                let had = old.is_some_and(|o| o.get(key).is_some());
                match new.get(key) {
                    Some(Value::Array(_)) => {}
                    None if !had => {}
                    _ => return Err(format!("a {event} result's `{key}` is not an array")),
                }
            }
            if new.get("isError").is_some_and(|e| !e.is_boolean()) {
                return Err("`isError` is not a boolean".to_owned());
            }
            if new.get("structuredContent").is_some_and(|s| !s.is_object()) {
                return Err("`structuredContent` is not an object".to_owned());
            }
        }
    }
    Ok(())
}

/// The payload a mutator returned, as the gateway reads it: the draft's examples wrap a
/// request as `{method, params}`; such a wrapping (with `method` the event) is taken off.
pub fn unwrapped(event: &str, phase: Phase, payload: Value) -> Value {
    if phase != Phase::Request {
        return payload;
    }
    match payload {
        Value::Object(mut o)
            if o.get("method").and_then(Value::as_str) == Some(event)
                && o.get("params").is_some_and(Value::is_object) =>
        {
            o.remove("params").unwrap_or(Value::Null)
        }
        other => other,
    }
}
