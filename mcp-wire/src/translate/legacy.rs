//! The reverse direction of the era bridge: a 2026-07-28 client's request sent to a legacy
//! (session) server inside a backend session the gateway keeps. Pure functions on JSON, no I/O:
//!
//! - [`ModernEnvelope::read`]: the request's `_meta` envelope (protocolVersion and
//!   clientCapabilities required, clientInfo and logLevel optional);
//! - [`initialize`]: the `initialize` params a backend session is opened with (the version
//!   mapped to a handshake-era one, the client's capabilities, its clientInfo or
//!   [`FALLBACK_CLIENT_INFO`]) and their digest, which keys the pooled session;
//! - [`legacy_request`]: the request as the legacy server gets it (the gateway's own id,
//!   reserved `_meta` keys removed, `progressToken` and trace keys kept);
//! - [`modern_result`] / [`discover_result`]: a legacy result as a 2026-07-28 client takes it
//!   (`resultType`, `_meta` serverInfo, cache hints on cacheable results), `server/discover`
//!   from the backend's `InitializeResult`;
//! - [`wants_log`]: whether a `notifications/message` reaches a client at its `_meta.logLevel`.

use super::META_SERVER_INFO;
use super::{params_mut, TranslateError, LEGACY_VERSIONS, MODERN_VERSION};
use super::{META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_LOG_LEVEL, META_PROTOCOL_VERSION};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

/// The prefix of the `_meta` keys the 2026-07-28 protocol reserves for itself; a legacy
/// server never gets them (every other key, `progressToken` and trace context included, goes
/// on).
pub const RESERVED_META_PREFIX: &str = "io.modelcontextprotocol/";

/// The `clientInfo` of a backend session when the request's `_meta` names none (the spec
/// says a client should send one; a legacy `initialize` requires one).
pub const FALLBACK_CLIENT_INFO: (&str, &str) = ("mcp-gateway-bridge", env!("CARGO_PKG_VERSION"));

/// The handshake-era version a backend session is opened with: the newest one. The legacy
/// server answers with the newest it speaks, which the session then uses.
pub const BACKEND_VERSION: &str = "2025-11-25";

/// Log levels, lowest first (RFC 5424 as MCP names them).
pub const LOG_LEVELS: &[&str] = &[
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

/// What a 2026-07-28 request's `_meta` says about its client.
#[derive(Debug, Clone, PartialEq)]
pub struct ModernEnvelope {
    /// `io.modelcontextprotocol/protocolVersion`.
    pub protocol_version: String,
    /// `io.modelcontextprotocol/clientCapabilities` (an object).
    pub capabilities: Value,
    /// `io.modelcontextprotocol/clientInfo`, when sent.
    pub client_info: Option<Value>,
    /// `io.modelcontextprotocol/logLevel`, when sent.
    pub log_level: Option<String>,
}

impl ModernEnvelope {
    /// Reads the envelope of a request (`params._meta`); a missing required key is the
    /// spec's -32602 (its name in the error).
    pub fn read(msg: &Value) -> Result<ModernEnvelope, TranslateError> {
        let meta = msg.get("params").and_then(|p| p.get("_meta"));
        let key = |k: &str| meta.and_then(|m| m.get(k));
        let missing = |k: &str| TranslateError::Malformed(format!("params._meta needs `{k}`"));
        let protocol_version = key(META_PROTOCOL_VERSION)
            .and_then(Value::as_str)
            .ok_or_else(|| missing(META_PROTOCOL_VERSION))?
            .to_owned();
        let capabilities = key(META_CLIENT_CAPABILITIES)
            .filter(|c| c.is_object())
            .cloned()
            .ok_or_else(|| missing(META_CLIENT_CAPABILITIES))?;
        Ok(ModernEnvelope {
            protocol_version,
            capabilities,
            client_info: key(META_CLIENT_INFO).filter(|i| i.is_object()).cloned(),
            log_level: key(META_LOG_LEVEL)
                .and_then(Value::as_str)
                .map(str::to_owned),
        })
    }

    /// Whether the client declared the capability at `path` (`["elicitation", "url"]`).
    pub fn declares(&self, path: &[&str]) -> bool {
        super::declares(&self.capabilities, path)
    }
}

/// The `initialize` a backend session for `env` is opened with.
#[derive(Debug, Clone, PartialEq)]
pub struct BackendInit {
    /// Its params, JSON text.
    pub params: String,
    /// SHA-256 of the params: two requests whose initialize would be the same share it.
    pub digest: [u8; 32],
}

impl BackendInit {
    /// The params of a backend session held for a listen stream: the same client without
    /// capabilities (nothing on that stream answers a server's request).
    pub fn without_capabilities(&self) -> String {
        let mut params: Value = serde_json::from_str(&self.params).unwrap_or_default();
        params["capabilities"] = Value::Object(Map::new());
        params.to_string()
    }
}

/// The `initialize` params for a backend session of `env`'s client: [`BACKEND_VERSION`], the
/// client's capabilities, its clientInfo (or [`FALLBACK_CLIENT_INFO`]).
pub fn initialize(env: &ModernEnvelope) -> BackendInit {
    let info = env.client_info.clone().unwrap_or_else(
        || json!({"name": FALLBACK_CLIENT_INFO.0, "version": FALLBACK_CLIENT_INFO.1}),
    );
    let params = json!({
        "protocolVersion": BACKEND_VERSION,
        "capabilities": env.capabilities,
        "clientInfo": info,
    })
    .to_string();
    let digest = Sha256::digest(params.as_bytes()).into();
    BackendInit { params, digest }
}

/// The version a backend's `InitializeResult` settled on, when it is a handshake-era one.
pub fn negotiated(init_result: &Value) -> Option<&'static str> {
    let v = init_result.get("protocolVersion")?.as_str()?;
    LEGACY_VERSIONS.iter().find(|l| **l == v).copied()
}

/// The request as the legacy server gets it: `id` replaced by the gateway's (requests of many
/// clients share one backend session, and their ids may collide), the reserved `_meta` keys
/// removed (an emptied `_meta` too).
pub fn legacy_request(msg: &Value, id: &str) -> Result<Vec<u8>, TranslateError> {
    let Value::Object(msg) = msg else {
        return Err(TranslateError::Malformed("not a JSON-RPC object".into()));
    };
    let mut msg = msg.clone();
    if msg.contains_key("id") {
        msg.insert("id".into(), Value::String(id.to_owned()));
    }
    let params = params_mut(&mut msg)?;
    if let Some(Value::Object(meta)) = params.get_mut("_meta") {
        meta.retain(|k, _| !k.starts_with(RESERVED_META_PREFIX));
        if meta.is_empty() {
            params.remove("_meta");
        }
    }
    if params.is_empty() {
        msg.remove("params");
    }
    serde_json::to_vec(&Value::Object(msg)).map_err(|e| TranslateError::Malformed(e.to_string()))
}

/// The cache hints put on a cacheable bridged result that carries none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CacheHints {
    /// `ttlMs`. Default 0.
    pub ttl_ms: u64,
    /// `cacheScope: "public"` (else `"private"`, the default).
    pub public: bool,
}

/// A legacy server's result as a 2026-07-28 client takes it: `resultType: "complete"`,
/// `_meta` `serverInfo` (the backend's, from its `InitializeResult`), and on a cacheable
/// `method` `ttlMs` and `cacheScope` from `hints` unless the result has them.
pub fn modern_result(
    result: Value,
    method: &str,
    server_info: Option<&Value>,
    hints: CacheHints,
) -> Value {
    let mut m = match result {
        Value::Object(m) => m,
        other => return other,
    };
    m.insert("resultType".into(), "complete".into());
    if let Some(info) = server_info {
        let meta = m
            .entry("_meta")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(meta) = meta {
            meta.entry(META_SERVER_INFO).or_insert_with(|| info.clone());
        }
    }
    if crate::cacheable::is_cacheable(method) {
        m.entry("ttlMs").or_insert(json!(hints.ttl_ms));
        let scope = if hints.public { "public" } else { "private" };
        m.entry("cacheScope").or_insert(json!(scope));
    }
    Value::Object(m)
}

/// The `server/discover` result for a legacy backend, from its `InitializeResult`:
/// `supportedVersions` the one the gateway serves its clients, the server's capabilities and
/// instructions, its serverInfo in `_meta`, private and not to be cached.
pub fn discover_result(init_result: &Value) -> Value {
    let mut out = Map::new();
    out.insert("supportedVersions".into(), json!([MODERN_VERSION]));
    out.insert(
        "capabilities".into(),
        init_result
            .get("capabilities")
            .filter(|c| c.is_object())
            .cloned()
            .unwrap_or_else(|| json!({})),
    );
    if let Some(Value::String(i)) = init_result.get("instructions") {
        out.insert("instructions".into(), i.clone().into());
    }
    let result = Value::Object(out);
    modern_result(
        result,
        "server/discover",
        init_result.get("serverInfo"),
        CacheHints::default(),
    )
}

/// Whether a `notifications/message` at `level` reaches a client whose request asked for
/// `wanted` (`_meta.logLevel`): never without one (2026-07-28 sends log messages only to
/// requests that opt in), else at or above it.
pub fn wants_log(wanted: Option<&str>, level: Option<&str>) -> bool {
    let rank = |l: &str| LOG_LEVELS.iter().position(|x| *x == l);
    match (wanted.and_then(rank), level.and_then(rank)) {
        (Some(w), Some(l)) => l >= w,
        (Some(_), None) => true,
        (None, _) => false,
    }
}

/// The `logging/setLevel` request that sets a backend session's level.
pub fn set_level(level: &str, id: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "logging/setLevel", "params": {"level": level}})
        .to_string()
}

/// The `initialize` request of a backend session.
pub fn initialize_request(params: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":"mcpgw-pool-init","method":"initialize","params":{params}}}"#)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(meta: Value) -> Value {
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
               "params": {"name": "t", "arguments": {}, "_meta": meta}})
    }

    fn full_meta() -> Value {
        json!({
            META_PROTOCOL_VERSION: "2026-07-28",
            META_CLIENT_CAPABILITIES: {"sampling": {}},
            META_CLIENT_INFO: {"name": "c", "version": "1"},
            META_LOG_LEVEL: "info",
            "progressToken": 3,
            "traceparent": "00-abc-def-01",
        })
    }

    #[test]
    fn the_envelope_needs_version_and_capabilities() {
        let env = ModernEnvelope::read(&req(full_meta())).unwrap();
        assert_eq!(env.log_level.as_deref(), Some("info"));
        assert!(env.declares(&["sampling"]) && !env.declares(&["roots"]));
        let no_caps = json!({META_PROTOCOL_VERSION: "2026-07-28"});
        let e = ModernEnvelope::read(&req(no_caps)).unwrap_err();
        assert!(e.to_string().contains("clientCapabilities"), "{e}");
        assert!(ModernEnvelope::read(&json!({"method": "x"})).is_err());
    }

    #[test]
    fn the_initialize_carries_the_client_or_the_fallback_and_its_digest_tells_them_apart() {
        let env = ModernEnvelope::read(&req(full_meta())).unwrap();
        let a = initialize(&env);
        let p: Value = serde_json::from_str(&a.params).unwrap();
        assert_eq!(p["protocolVersion"], BACKEND_VERSION);
        assert_eq!(p["clientInfo"]["name"], "c");
        assert_eq!(p["capabilities"], json!({"sampling": {}}));
        let mut other = env.clone();
        other.client_info = None;
        let b = initialize(&other);
        let p: Value = serde_json::from_str(&b.params).unwrap();
        assert_eq!(p["clientInfo"]["name"], FALLBACK_CLIENT_INFO.0);
        assert_ne!(a.digest, b.digest);
        // the log level is a setting of the session, not of its initialize
        let mut level = env.clone();
        level.log_level = Some("debug".into());
        assert_eq!(initialize(&level).digest, a.digest);
    }

    #[test]
    fn a_legacy_request_has_the_gateways_id_and_no_reserved_meta() {
        let body = legacy_request(&req(full_meta()), "mcpgw-p-1").unwrap();
        let v: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["id"], "mcpgw-p-1");
        let meta = v["params"]["_meta"].as_object().unwrap();
        assert_eq!(
            meta.keys().collect::<Vec<_>>(),
            ["progressToken", "traceparent"]
        );
        let only_reserved = json!({META_PROTOCOL_VERSION: "2026-07-28"});
        let v: Value =
            serde_json::from_slice(&legacy_request(&req(only_reserved), "x").unwrap()).unwrap();
        assert!(v["params"].get("_meta").is_none(), "{v}");
        let bare = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
                          "params": {"_meta": {META_PROTOCOL_VERSION: "2026-07-28"}}});
        let v: Value = serde_json::from_slice(&legacy_request(&bare, "x").unwrap()).unwrap();
        assert!(v.get("params").is_none(), "{v}");
    }

    #[test]
    fn results_become_complete_with_server_info_and_cache_hints_where_cacheable() {
        let info = json!({"name": "s", "version": "1"});
        let none = CacheHints::default();
        let r = modern_result(json!({"tools": []}), "tools/list", Some(&info), none);
        assert_eq!(r["resultType"], "complete");
        assert_eq!(r["ttlMs"], 0);
        assert_eq!(r["cacheScope"], "private");
        assert_eq!(r["_meta"][META_SERVER_INFO], info);
        let r = modern_result(
            json!({"content": [], "_meta": {"k": 1}}),
            "tools/call",
            None,
            none,
        );
        assert!(r.get("ttlMs").is_none());
        assert_eq!(r["_meta"]["k"], 1);
        let public = CacheHints {
            ttl_ms: 30_000,
            public: true,
        };
        let r = modern_result(json!({"tools": []}), "tools/list", None, public);
        assert_eq!(
            (&r["ttlMs"], &r["cacheScope"]),
            (&json!(30_000), &json!("public"))
        );
        let own = json!({"contents": [], "ttlMs": 5, "cacheScope": "private"});
        let r = modern_result(own, "resources/read", None, public);
        assert_eq!(
            (&r["ttlMs"], &r["cacheScope"]),
            (&json!(5), &json!("private")),
            "the server's own hints stay"
        );
        let init = json!({"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                          "serverInfo": info, "instructions": "hi"});
        let d = discover_result(&init);
        assert_eq!(d["supportedVersions"], json!(["2026-07-28"]));
        assert_eq!(d["capabilities"], json!({"tools": {}}));
        assert_eq!(d["instructions"], "hi");
        assert_eq!(d["_meta"][META_SERVER_INFO]["name"], "s");
        assert_eq!(negotiated(&init), Some("2025-06-18"));
    }

    #[test]
    fn log_messages_reach_only_clients_that_asked_at_or_above_their_level() {
        assert!(!wants_log(None, Some("error")));
        assert!(wants_log(Some("info"), Some("info")));
        assert!(wants_log(Some("info"), Some("error")));
        assert!(!wants_log(Some("warning"), Some("info")));
    }
}
