//! The translation of one era's messages into the other's, for a legacy (2025-11-25) client on
//! 2026-07-28 backends: pure functions on JSON-RPC messages, no I/O and no pingora types. The
//! behaviour of a bridged session (rounds, waiting for the client, picking backends) lives in
//! `crate::bridge`; this module only knows the wire shapes.
//!
//! - [`request`]: a legacy request → a 2026-07-28 request (`_meta` from the stored
//!   `initialize`, the session's log level, the `MCP-Protocol-Version` / `Mcp-Method` /
//!   `Mcp-Name` headers), what the gateway answers itself, what it refuses.
//! - [`result`]: `server/discover` → the `InitializeResult` the gateway answers; a modern
//!   result → the legacy result; progress values kept increasing across rounds.
//! - [`listen`]: the session's `resources/subscribe`s → one `subscriptions/listen` request;
//!   its stream's notifications → the legacy notifications of the client's GET stream.
//! - [`rounds`]: `input_required` → the server→client requests (one per `inputRequests`
//!   entry), the capability each needs, and the client's responses → the retry's
//!   `inputResponses` with `requestState` echoed exactly.

pub mod legacy;
pub mod listen;
pub mod mrtr;
pub mod request;
pub mod result;
pub mod rounds;

use serde_json::{Map, Value};

/// The protocol revision bridged requests are sent as.
pub const MODERN_VERSION: &str = "2026-07-28";
/// `_meta` key: the request's protocol version.
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key: the client's capabilities.
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key: the client's name and version.
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key: the lowest log level the client wants `notifications/message` for.
pub const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// Result `_meta` key: the server's name and version.
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// The handshake-era versions the gateway negotiates with a legacy client on a bridged session,
/// oldest first. A client asking for another one gets the newest (as a legacy server answers).
pub const LEGACY_VERSIONS: &[&str] = &["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// Why a message cannot be translated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TranslateError {
    /// Not JSON, or not the JSON shape the translation needs (`detail` says what).
    Malformed(String),
    /// A legacy method with no 2026-07-28 counterpart the gateway can serve.
    NotBridged(String),
}

impl std::fmt::Display for TranslateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TranslateError::Malformed(d) => write!(f, "malformed message: {d}"),
            TranslateError::NotBridged(m) => write!(f, "`{m}` has no 2026-07-28 translation"),
        }
    }
}

/// What the gateway keeps of a legacy client's `initialize`: all a 2026-07-28 request needs.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientInit {
    /// The version the client asked for.
    pub protocol_version: String,
    /// Its declared capabilities (an object).
    pub capabilities: Value,
    /// Its `clientInfo`, when it sent one.
    pub client_info: Option<Value>,
}

impl ClientInit {
    /// Reads the stored `initialize` params (verbatim JSON text).
    pub fn parse(init_params: &str) -> Result<ClientInit, TranslateError> {
        let v: Value = serde_json::from_str(init_params)
            .map_err(|e| TranslateError::Malformed(format!("initialize params: {e}")))?;
        let Value::Object(mut params) = v else {
            return Err(TranslateError::Malformed(
                "initialize params are not an object".into(),
            ));
        };
        let protocol_version = match params.remove("protocolVersion") {
            Some(Value::String(v)) => v,
            _ => {
                return Err(TranslateError::Malformed(
                    "initialize params have no protocolVersion".into(),
                ))
            }
        };
        let capabilities = match params.remove("capabilities") {
            Some(c @ Value::Object(_)) => c,
            _ => Value::Object(Map::new()),
        };
        Ok(ClientInit {
            protocol_version,
            capabilities,
            client_info: params.remove("clientInfo").filter(Value::is_object),
        })
    }

    /// The version the gateway answers the client's `initialize` with: the client's own when
    /// the gateway serves it, else the newest handshake-era version.
    pub fn negotiated(&self) -> &'static str {
        LEGACY_VERSIONS
            .iter()
            .find(|v| **v == self.protocol_version)
            .copied()
            .unwrap_or(LEGACY_VERSIONS[LEGACY_VERSIONS.len() - 1])
    }

    /// Whether the client declared the capability at `path` (`["elicitation", "url"]`, say).
    pub fn declares(&self, path: &[&str]) -> bool {
        declares(&self.capabilities, path)
    }
}

/// Whether `capabilities` declare the one at `path`: every step present (any value but
/// `null`).
pub fn declares(capabilities: &Value, path: &[&str]) -> bool {
    let mut at = capabilities;
    for key in path {
        match at.get(key) {
            Some(Value::Null) | None => return false,
            Some(next) => at = next,
        }
    }
    true
}

/// `params` of a message as an object, created when absent.
pub(crate) fn params_mut(
    msg: &mut Map<String, Value>,
) -> Result<&mut Map<String, Value>, TranslateError> {
    let params = msg
        .entry("params")
        .or_insert_with(|| Value::Object(Map::new()));
    if params.is_null() {
        *params = Value::Object(Map::new());
    }
    params
        .as_object_mut()
        .ok_or_else(|| TranslateError::Malformed("params is not an object".into()))
}

#[cfg(test)]
mod tests;
