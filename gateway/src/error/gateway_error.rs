//! `GatewayError`: one error the gateway answers itself (its kind, message, details, retry
//! and status overrides), shown and built from an inspection error.

use super::kind::ErrorKind;
use mcp_wire::InspectError;
use serde_json::{Map, Value};

/// An error the gateway answers itself.
#[derive(Debug, Clone, PartialEq)]
pub struct GatewayError {
    /// Code, status and name.
    pub kind: ErrorKind,
    /// For a person.
    pub message: String,
    /// Machine-readable details; `kind` is always added.
    pub data: Map<String, Value>,
    /// When to retry, overriding the kind's default (`Retry-After`, `data.retryAfterMs`).
    pub retry_after: Option<std::time::Duration>,
    /// HTTP status overriding the kind's (-32021 is 200 for a legacy client of the bridge, 400
    /// for a 2026-07-28 one, as the spec says).
    pub status: Option<u16>,
}

impl GatewayError {
    /// An error with no details beyond its kind.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        GatewayError {
            kind,
            message: message.into(),
            data: Map::new(),
            retry_after: None,
            status: None,
        }
    }

    /// Adds one machine-readable detail.
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.data.insert(key.to_owned(), value.into());
        self
    }
}

impl std::fmt::Display for GatewayError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({}): {}",
            self.kind.as_str(),
            self.kind.code(),
            self.message
        )
    }
}

impl std::error::Error for GatewayError {}

impl From<InspectError> for GatewayError {
    fn from(e: InspectError) -> Self {
        match e {
            InspectError::Parse(detail) => GatewayError::parse_error(&detail),
            InspectError::Batch => {
                GatewayError::invalid_request("batches are not supported by MCP")
            }
            InspectError::NotAMessage(detail) => GatewayError::invalid_request(&detail),
        }
    }
}
