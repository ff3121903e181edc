//! Modern answers for a legacy client: the `InitializeResult` the gateway builds from a
//! backend's `server/discover` result, a modern result made legacy, and progress values kept
//! increasing when one call takes several rounds.
//!
//! What a result loses, checked against the real legacy SDKs: every result model of PyPI
//! `mcp` 1.30.0 derives from `Result` with `extra="allow"`, and every result schema of the
//! TypeScript SDK 1.32.2 is a `z.looseObject` except `EmptyResultSchema =
//! ResultSchema.strict()`, which the client uses for `ping`, `logging/setLevel` and
//! `resources/(un)subscribe`. So `resultType`, `ttlMs` and `cacheScope` are removed only from
//! results that carry nothing else (an empty result, which a strict schema rejects with them),
//! and kept everywhere else, as the backend sent them.

use super::rounds::InputRequired;
use super::{ClientInit, TranslateError, META_SERVER_INFO};
use serde_json::{json, Map, Value};

/// Keys a 2026-07-28 result has that no legacy result schema names.
pub const MODERN_ONLY_KEYS: &[&str] = &["resultType", "ttlMs", "cacheScope"];

/// The `InitializeResult` for a legacy client, from a backend's `server/discover` result:
/// its capabilities and instructions, `serverInfo` from `_meta`, and the version negotiated
/// with the client ([`ClientInit::negotiated`]).
pub fn initialize_result(discover: &Value, init: &ClientInit) -> Result<Value, TranslateError> {
    let Some(d) = discover.as_object() else {
        return Err(TranslateError::Malformed(
            "server/discover result is not an object".into(),
        ));
    };
    let capabilities = match d.get("capabilities") {
        Some(c @ Value::Object(_)) => c.clone(),
        _ => {
            return Err(TranslateError::Malformed(
                "server/discover result has no capabilities".into(),
            ))
        }
    };
    let server_info = d
        .get("_meta")
        .and_then(|m| m.get(META_SERVER_INFO))
        .filter(|i| i.is_object())
        .cloned()
        // serverInfo is required in a legacy InitializeResult; a server that gives none
        // still needs a name there.
        .unwrap_or_else(|| json!({"name": "mcp-gateway-bridge", "version": "0"}));
    let mut out = Map::new();
    out.insert("protocolVersion".into(), init.negotiated().into());
    out.insert("capabilities".into(), capabilities);
    out.insert("serverInfo".into(), server_info);
    if let Some(Value::String(i)) = d.get("instructions") {
        out.insert("instructions".into(), i.clone().into());
    }
    Ok(Value::Object(out))
}

/// `ttlMs` of a cacheable result (`server/discover`): how long it may be reused.
pub fn ttl_ms(result: &Value) -> Option<u64> {
    result.get("ttlMs")?.as_u64()
}

/// A modern answer's result, sorted.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// Done: the result as the legacy client gets it ([`legacy_result`]).
    Complete(Value),
    /// The server needs input first.
    InputRequired(InputRequired),
}

/// Sorts a modern result by `resultType` (absent = `complete`, as from a pre-2026 server).
pub fn answer(result: Value) -> Result<Answer, TranslateError> {
    match result.get("resultType").and_then(Value::as_str) {
        None | Some("complete") => Ok(Answer::Complete(legacy_result(result))),
        Some("input_required") => super::rounds::input_required(&result).map(Answer::InputRequired),
        Some(other) => Err(TranslateError::Malformed(format!(
            "unknown resultType `{other}`"
        ))),
    }
}

/// A complete modern result as a legacy client takes it: [`MODERN_ONLY_KEYS`] removed when
/// nothing but them and `_meta` is there (an empty result), kept otherwise (see the module
/// header for why).
pub fn legacy_result(result: Value) -> Value {
    let Value::Object(mut m) = result else {
        return result;
    };
    let empty = m
        .keys()
        .all(|k| k == "_meta" || MODERN_ONLY_KEYS.contains(&k.as_str()));
    if empty {
        for k in MODERN_ONLY_KEYS {
            m.remove(*k);
        }
    }
    Value::Object(m)
}

/// What a glance at one message of a modern answer tells, without building it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peek {
    /// A response (`result` or `error`).
    pub response: bool,
    /// A request (`method` and `id`).
    pub request: bool,
    /// A response a legacy client takes exactly as it is: an error, or a complete result
    /// that is not empty ([`legacy_result`] would not change it).
    pub verbatim: bool,
}

/// Peeks at a message's top level (and a result's keys); `None` when it is not a JSON object.
pub fn peek(raw: &[u8]) -> Option<Peek> {
    use serde_json::value::RawValue;
    use std::borrow::Cow;
    #[derive(serde::Deserialize)]
    struct Msg<'a> {
        #[serde(borrow, default)]
        method: Option<&'a RawValue>,
        #[serde(borrow, default)]
        id: Option<&'a RawValue>,
        #[serde(borrow, default)]
        result: Option<&'a RawValue>,
        #[serde(borrow, default)]
        error: Option<&'a RawValue>,
    }
    let m: Msg = serde_json::from_slice(raw).ok()?;
    let verbatim = match (m.result, m.error) {
        (None, Some(_)) => true,
        (Some(result), None) => {
            let keys: std::collections::BTreeMap<Cow<'_, str>, &RawValue> =
                serde_json::from_str(result.get()).ok()?;
            let complete = keys
                .get("resultType")
                .is_none_or(|t| t.get() == "\"complete\"");
            let empty = keys
                .keys()
                .all(|k| k == "_meta" || MODERN_ONLY_KEYS.contains(&k.as_ref()));
            complete && !empty
        }
        _ => false,
    };
    Some(Peek {
        response: m.result.is_some() || m.error.is_some(),
        request: m.method.is_some() && m.id.is_some(),
        verbatim,
    })
}

/// Keeps the progress a legacy client sees increasing across the rounds of one call: each
/// retry is a new request whose server starts counting again, so a later round's values are
/// shifted past the last one forwarded, and a value that would not increase is dropped.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProgressShift {
    base: f64,
    last: Option<f64>,
}

impl ProgressShift {
    /// A new round begins: its values count from the last one forwarded.
    pub fn next_round(&mut self) {
        self.base = self.last.unwrap_or(self.base);
    }

    /// The `notifications/progress` message to forward for `msg` (its `progress`, and
    /// `total` when set, shifted), or `None` when it would not increase. Other messages pass
    /// unchanged.
    pub fn shift(&mut self, mut msg: Value) -> Option<Value> {
        if msg.get("method").and_then(Value::as_str) != Some("notifications/progress") {
            return Some(msg);
        }
        let params = msg.get_mut("params")?.as_object_mut()?;
        let progress = params.get("progress")?.as_f64()? + self.base;
        if self.last.is_some_and(|last| progress <= last) {
            return None;
        }
        self.last = Some(progress);
        if self.base != 0.0 {
            params.insert("progress".into(), number(progress));
            if let Some(total) = params.get("total").and_then(Value::as_f64) {
                params.insert("total".into(), number(total + self.base));
            }
        }
        Some(msg)
    }
}

/// A JSON number, integral when it is one (legacy clients print it).
fn number(v: f64) -> Value {
    if v.fract() == 0.0 && v.abs() < 9.0e15 {
        json!(v as i64)
    } else {
        json!(v)
    }
}
