//! Cacheable results of the 2026-07-28 revision (schema `CacheableResult`, SEP-2549):
//! `server/discover`, `tools/list`, `prompts/list`, `resources/list`,
//! `resources/templates/list` and `resources/read` answer with `ttlMs` (how long the result
//! stays fresh, like HTTP's `max-age`) and `cacheScope` (`"public"`: any intermediary may serve
//! it across authorization contexts; `"private"`: only within the same one).
//!
//! [`stored`] reads an answer as a cache keeps it: the `result`'s own bytes, exactly as the
//! server wrote them, with the place of its `ttlMs` number; [`served`] writes it back for
//! another request: the client's id, the same result bytes, `ttlMs` lowered by the entry's age.
//! Nothing else changes, so the client's own cache reads what the server said.

use serde_json::value::RawValue;

/// The methods whose results are cacheable: they carry `ttlMs` and `cacheScope`.
pub const METHODS: [&str; 6] = [
    "server/discover",
    "tools/list",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
];

/// Whether `method`'s result is a cacheable one.
pub fn is_cacheable(method: &str) -> bool {
    METHODS.contains(&method)
}

/// Who a cached result may be served to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Any caller of the route (`"public"`).
    Public,
    /// Callers of the same authorization context only (`"private"`, and a result that says
    /// neither: the TypeScript SDK's default).
    Private,
}

/// A result as a cache keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    /// The `result` value's bytes, as the server wrote them.
    pub result: Vec<u8>,
    /// Where the `ttlMs` number is in `result`.
    pub ttl_at: std::ops::Range<usize>,
    /// The server's `ttlMs` (> 0).
    pub ttl_ms: u64,
    /// Its `cacheScope`.
    pub scope: Scope,
}

/// Why an answer is not kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotStored {
    /// Not a JSON-RPC response with a `result` object (an error, a notification, not JSON).
    NoResult,
    /// `resultType` is not `"complete"` (`input_required`, or one this gateway does not know).
    Incomplete,
    /// `ttlMs` is missing, 0, or not a whole number of milliseconds.
    NoTtl,
}

impl NotStored {
    /// A metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            NotStored::NoResult => "no-result",
            NotStored::Incomplete => "incomplete",
            NotStored::NoTtl => "no-ttl",
        }
    }
}

/// Reads a whole JSON-RPC response (one message) as a cache keeps it.
pub fn stored(response: &[u8]) -> Result<Stored, NotStored> {
    let text = std::str::from_utf8(response).map_err(|_| NotStored::NoResult)?;
    let result = crate::rewrite::member(text, "result").ok_or(NotStored::NoResult)?;
    let result = result.get();
    if !result.starts_with('{') || crate::rewrite::member(text, "error").is_some() {
        return Err(NotStored::NoResult);
    }
    let complete = match crate::rewrite::member(result, "resultType") {
        None => true,
        Some(t) => t.get() == "\"complete\"",
    };
    if !complete {
        return Err(NotStored::Incomplete);
    }
    let ttl = crate::rewrite::member(result, "ttlMs").ok_or(NotStored::NoTtl)?;
    let ttl_ms = ttl.get().parse::<u64>().map_err(|_| NotStored::NoTtl)?;
    if ttl_ms == 0 {
        return Err(NotStored::NoTtl);
    }
    let scope = match crate::rewrite::member(result, "cacheScope").map(RawValue::get) {
        Some("\"public\"") => Scope::Public,
        _ => Scope::Private,
    };
    // the member borrows `result`: its place is the distance between their starts
    let start = ttl.get().as_ptr() as usize - result.as_ptr() as usize;
    Ok(Stored {
        result: result.as_bytes().to_vec(),
        ttl_at: start..start + ttl.get().len(),
        ttl_ms,
        scope,
    })
}

/// The response to the request `id` (its JSON text) from `stored`, `age_ms` after the gateway
/// received it: `ttlMs` lowered by the age (never below 1 while the entry is served: a fresh
/// entry has time left), every other byte of the result as the server wrote it.
pub fn served(stored: &Stored, id: &str, age_ms: u64) -> Vec<u8> {
    let left = stored.ttl_ms.saturating_sub(age_ms).max(1).to_string();
    let result = &stored.result;
    let mut out = Vec::with_capacity(result.len() + id.len() + 40);
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    out.extend_from_slice(id.as_bytes());
    out.extend_from_slice(b",\"result\":");
    out.extend_from_slice(&result[..stored.ttl_at.start]);
    out.extend_from_slice(left.as_bytes());
    out.extend_from_slice(&result[stored.ttl_at.end..]);
    out.push(b'}');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(result: &str) -> Vec<u8> {
        format!(r#"{{"jsonrpc":"2.0","id":7,"result":{result}}}"#).into_bytes()
    }

    #[test]
    fn a_complete_result_with_a_ttl_is_kept_as_written_and_served_with_the_ttl_lowered() {
        let result = r#"{ "tools":[{"name":"a"}], "ttlMs" : 60000,"cacheScope":"public","_meta":{"k":1.50}}"#;
        let stored = stored(&answer(result)).unwrap();
        assert_eq!(stored.scope, Scope::Public);
        assert_eq!(stored.ttl_ms, 60000);
        assert_eq!(stored.result, result.as_bytes());
        let out = served(&stored, "\"abc\"", 1500);
        let expected = r#"{"jsonrpc":"2.0","id":"abc","result":{ "tools":[{"name":"a"}], "ttlMs" : 58500,"cacheScope":"public","_meta":{"k":1.50}}}"#;
        assert_eq!(String::from_utf8(out).unwrap(), expected);
        // past its time it is never served as 0 (that says "do not cache")
        let late = served(&stored, "1", 90_000);
        assert!(String::from_utf8(late).unwrap().contains("\"ttlMs\" : 1,"));
    }

    #[test]
    fn errors_incomplete_results_and_results_without_a_ttl_are_not_kept() {
        let not = |body: &[u8]| stored(body).err();
        let error = br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"x"}}"#;
        assert_eq!(not(error), Some(NotStored::NoResult));
        assert_eq!(not(b"not json"), Some(NotStored::NoResult));
        let input = answer(r#"{"resultType":"input_required","inputRequests":{},"ttlMs":5}"#);
        assert_eq!(not(&input), Some(NotStored::Incomplete));
        assert_eq!(
            not(&answer(r#"{"tools":[],"ttlMs":0}"#)),
            Some(NotStored::NoTtl)
        );
        assert_eq!(not(&answer(r#"{"tools":[]}"#)), Some(NotStored::NoTtl));
        assert_eq!(
            not(&answer(r#"{"tools":[],"ttlMs":1.5}"#)),
            Some(NotStored::NoTtl)
        );
        assert_eq!(
            not(&answer(r#"{"tools":[],"ttlMs":-3}"#)),
            Some(NotStored::NoTtl)
        );
        // the key twice is refused, not guessed at
        let twice = answer(r#"{"tools":[],"ttlMs":5,"ttlMs":6}"#);
        assert_eq!(not(&twice), Some(NotStored::NoTtl));
    }

    #[test]
    fn a_result_without_a_scope_is_private_and_an_old_server_without_result_type_is_complete() {
        let kept = stored(&answer(r#"{"tools":[],"ttlMs":5}"#)).unwrap();
        assert_eq!(kept.scope, Scope::Private);
        let other = stored(&answer(r#"{"tools":[],"ttlMs":5,"cacheScope":"shared"}"#)).unwrap();
        assert_eq!(other.scope, Scope::Private);
    }
}
